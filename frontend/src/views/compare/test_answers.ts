/** Compare answers for the view's unit tests, shaped like the route's (tools/compare/answers.py): the
 * demo's slow-input run against its prefetching twin, and a pair too short for an interval. */

import type { CompareAnswer, CompareOpDelta, CompareSide, RunsAnswer } from "../../api/answers.gen.ts";

function side(run: string, walls: number[], extra: Partial<CompareSide> = {}): CompareSide {
  const sorted = [...walls].sort((a, b) => a - b);
  const median = (sorted[Math.floor((sorted.length - 1) / 2)] + sorted[Math.ceil((sorted.length - 1) / 2)]) / 2;
  return {
    run,
    session: "worker0",
    host: "worker0",
    format: "chrome_trace",
    step_source_kind: "profiler_step",
    step_source: "ProfilerStep#N markers (PyTorch profiler)",
    split_verdict: `no leading step takes over 1.5× the median of the later ones or compiles: all ${walls.length} steps are steady`,
    steps: walls.map((wall_ns, i) => ({ number: i + 2, wall_ns, phase: "steady" as const })),
    stats: { count: walls.length, median_ns: median, min_ns: sorted[0], max_ns: sorted[sorted.length - 1], p10_ns: sorted[0] * 1.001, p90_ns: sorted[sorted.length - 1] * 0.999 },
    scope: `steady steps 2–${walls.length + 1}`,
    windows: walls.length,
    devices: [],
    device_reason: "device activity not observed: CPU-only capture (no GPU or TPU activity in the profile)",
    ...extra,
  };
}

function op(name: string, change: CompareOpDelta["change"], base: number, run: number, extra: Partial<CompareOpDelta> = {}): CompareOpDelta {
  const delta = run - base;
  return {
    name,
    kind: "host op",
    change,
    base_calls: base ? 6 : 0,
    run_calls: run ? 6 : 0,
    base_calls_per_step: base ? 1 : 0,
    run_calls_per_step: run ? 1 : 0,
    base_self_ns: base,
    run_self_ns: run,
    delta_self_ns: delta,
    ...(base && run ? { relative: delta / base } : {}),
    search: name,
    ...extra,
  };
}

const CPU_ONLY = "device activity not observed: CPU-only capture (no GPU or TPU activity in the profile)";

export function demoAnswer(): CompareAnswer {
  const rows = [
    op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "added", 0, 14_215_214),
    op("aten::mm", "faster", 2_517_641, 1_907_972),
    op("aten::addmm", "slower", 1_169_018, 1_409_308),
    op("batch_read", "removed", 3_100, 0),
    op("aten::relu", "same", 50_000, 50_500),
  ];
  return {
    run: side("pytorch_cpu_slow_input", [20_114_047, 22_991_028, 20_829_531, 18_834_462, 18_788_871, 19_977_371]),
    base: side("pytorch_cpu_prefetch_input", [6_250_289, 5_796_268, 6_498_297, 6_075_584, 5_803_702, 5_912_990]),
    shift: {
      estimator: "Hodges–Lehmann shift: the median of every (run step − base step) difference, with Moses' distribution-free interval from the Mann–Whitney count",
      run_steps: 6,
      base_steps: 6,
      median_difference_ns: 14_051_422,
      relative_median_difference: 2.344,
      shift_ns: 14_051_422,
      low_ns: 12_758_878,
      high_ns: 16_492_731,
      confidence_asked: 0.95,
      coverage: 0.9589,
      method: "exact",
      ratio: 3.2994,
      ratio_low: 3.0925,
      ratio_high: 3.5936,
      verdict: "the run's steady steps are longer by 14.1 ms (95% interval 12.8 ms to 16.5 ms); the run takes 3.3× the base's step time (3.09× to 3.59×)",
    },
    breakdown_scope: "run: median per step over its steady steps 2–7; base: median per step over its steady steps 2–7",
    categories: [
      { id: "device_compute", label: "Device compute", priority: 0, side: "device", reason: CPU_ONLY },
      { id: "input", label: "Input", priority: 8, side: "host", base_ns: 16_017, run_ns: 14_398_384, delta_ns: 14_382_367, relative: 897.9 },
      { id: "host_compute", label: "Host compute", priority: 9, side: "host", base_ns: 5_948_803, run_ns: 5_371_878, delta_ns: -576_925, relative: -0.097 },
      { id: "compilation", label: "Compilation", priority: 6, side: "host", base_ns: 0, run_ns: 0, delta_ns: 0 },
    ],
    same_within: 0.05,
    host_ops: { rows, total: rows.length, changes: { added: 1, removed: 1, faster: 1, slower: 1, same: 1 } },
    kernels: { rows: [], total: 0, changes: { added: 0, removed: 0, faster: 0, slower: 0, same: 0 }, reason: CPU_ONLY },
    hlo_ops: { rows: [], total: 0, changes: { added: 0, removed: 0, faster: 0, slower: 0, same: 0 }, reason: "neither profile has an XLA Ops line (XPlane device planes): no HLO ops" },
    cautions: [],
    advice: "Confirm the gain outside the profiler, with more steps: time a few hundred steps of each version without the profiler (it adds overhead and records a short window), alternate the two runs on the same machine, and compare their medians with their spread.",
  };
}

/** Three steps against three: no interval, and cautions on both sides. */
export function shortAnswer(): CompareAnswer {
  const answer = demoAnswer();
  answer.run = side("short_run", [10e6, 11e6, 12e6]);
  answer.base = side("short_base", [12e6, 13e6, 14e6], { devices: ["Tesla V100-DGXS-32GB"] });
  answer.run.stats = { count: 3, median_ns: 11e6, min_ns: 10e6, max_ns: 12e6, note: "3 steady steps: the window is too short to state a distribution" };
  answer.shift = { ...answer.shift!, run_steps: 3, base_steps: 3, shift_ns: -2e6, low_ns: undefined, high_ns: undefined, coverage: undefined, ratio_low: undefined, ratio_high: undefined, note: "3 run and 3 base steady steps are too few for a 95% interval", verdict: "the run's steps differ from the base's by -2 ms (Hodges–Lehmann), but 3 against 3 steady steps allow no 95% interval: profile more steps before reading anything into it" };
  answer.cautions = [
    { kind: "few_steps", subject: "run", text: "the run (short_run · worker0) has 3 steady steps, fewer than 5" },
    { kind: "device", subject: "both", text: "the devices differ: the run ran on no device (CPU only), the base on 1 × Tesla V100-DGXS-32GB" },
  ];
  return answer;
}

export function runsAnswer(): RunsAnswer {
  const host = (name: string, tools: string[]) => ({ name, files: [], tools });
  return {
    logdir: "/logs",
    errors: [],
    runs: [
      { name: "pytorch_cpu_slow_input", sessions: [{ name: "worker0", label: "worker0", hosts: [host("worker0", ["overview", "trace", "compare"])] }] },
      { name: "pytorch_cpu_prefetch_input", sessions: [{ name: "worker0", label: "worker0", hosts: [host("worker0", ["overview", "trace", "compare"])] }] },
      { name: "xla_logs_only", sessions: [{ name: "logs", label: "logs", hosts: [host("vm", ["overview", "xla"])] }] },
      {
        name: "two_sessions",
        sessions: [
          { name: "s1", label: "first", hosts: [host("rank-0", ["trace", "compare"]), host("rank-1", ["trace", "compare"])] },
          { name: "s2", label: "second", hosts: [host("worker0", ["trace", "compare"]), host("rank-1", ["trace", "compare"])] },
        ],
      },
    ],
  };
}
