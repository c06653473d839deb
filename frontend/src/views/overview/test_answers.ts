/** `overview` answers for the unit tests, shaped like the route's (a CPU-only PyTorch capture with a
 * warm-up step, and a two-rank GPU one), small enough to read. Imported by the tests only. */

import type { OverviewAnswer, OverviewCategory, OverviewHost, OverviewStep } from "../../api/answers.gen.ts";

export const CPU_ONLY = "device activity not observed: CPU-only capture (no GPU or TPU activity in the profile)";

function category(id: string, label: string, priority: number, side: "device" | "host" | "none", observed: boolean): OverviewCategory {
  return { id, label, priority, side, counts: `what counts as ${label}`, observed, ...(observed ? {} : { reason: CPU_ONLY }) };
}

/** The route's categories, listed out of priority order on purpose (the view sorts them). */
export function categories(deviceObserved: boolean): OverviewCategory[] {
  return [
    category("input", "Input", 8, "host", true),
    category("device_compute", "Device compute", 0, "device", deviceObserved),
    category("communication", "Collective communication", 1, "device", deviceObserved),
    category("host_compute", "Host compute", 9, "host", true),
    category("idle", "Idle / other", 10, "none", true),
  ];
}

export function step(number: number, phase: "warmup" | "steady", wall: number, parts: Record<string, number>): OverviewStep {
  const start = number * 10_000_000;
  return { number, name: `ProfilerStep#${number}`, start_ns: start, end_ns: start + wall, wall_ns: wall, phase, parts, link: { start_ns: start, end_ns: start + wall, search: `ProfilerStep#${number}` } };
}

function cpuHost(): OverviewHost {
  const rows = [
    step(1, "warmup", 9_000_000, { input: 1_000_000, host_compute: 7_000_000, idle: 1_000_000 }),
    step(2, "steady", 2_000_000, { input: 500_000, host_compute: 1_400_000, idle: 100_000 }),
    step(3, "steady", 2_200_000, { input: 600_000, host_compute: 1_500_000, idle: 100_000 }),
  ];
  return {
    host: "worker0",
    format: "chrome_trace",
    steps: {
      source_kind: "profiler_step",
      source: "ProfilerStep#N markers (PyTorch profiler)",
      rows,
      split: { rule: "leading steps over 1.5× the median of the rest are warm-up", verdict: "step 1 takes 4.3× the median of the rest: warm-up", warmup: [1], steady: [2, 3] },
      stats: { count: 2, median_ns: 2_100_000, min_ns: 2_000_000, max_ns: 2_200_000, note: "2 steady steps: the window is too short to state a distribution" },
    },
    capture: { label: "whole capture", start_ns: 10_000_000, end_ns: 34_200_000, wall_ns: 13_200_000, steps: 3, parts: { input: 2_100_000, host_compute: 9_900_000, idle: 1_200_000 }, fractions: { input: 0.159, host_compute: 0.75, idle: 0.091 } },
    steady: { label: "steady steps 2–3", start_ns: 20_000_000, end_ns: 32_200_000, wall_ns: 4_200_000, steps: 2, parts: { input: 1_100_000, host_compute: 2_900_000, idle: 200_000 }, fractions: { input: 0.262, host_compute: 0.69, idle: 0.048 }, per_step_median: { input: 550_000, host_compute: 1_450_000, idle: 100_000 } },
    devices: { observed: false, reason: CPU_ONLY, scope: "steady steps 2–3", devices: [] },
  };
}

/** A CPU-only capture: one host, a warm-up step, an input-bound finding, host ops only. */
export function cpuAnswer(): OverviewAnswer {
  return {
    subject: "run 'job' session 's1'",
    hosts: ["worker0"],
    categories: categories(false),
    per_host: [cpuHost()],
    tables: {
      scope: "steady steps 2–3",
      group_by: "name",
      host_ops: [
        { name: "aten::conv2d", calls: 4, total_ns: 1_200_000, self_ns: 100_000, avg_ns: 300_000, min_ns: 250_000, max_ns: 350_000, total_fraction: 0.2857, self_fraction: 0.0238, search: "aten::conv2d" },
        { name: "batch_read", calls: 2, total_ns: 1_100_000, self_ns: 1_100_000, avg_ns: 550_000, min_ns: 500_000, max_ns: 600_000, total_fraction: 0.2619, self_fraction: 0.2619, search: "batch_read" },
        { name: "=cmd, \"quoted\"", calls: 1, total_ns: 5_000, self_ns: 5_000, avg_ns: 5_000, min_ns: 5_000, max_ns: 5_000, total_fraction: 0.0012, self_fraction: 0.0012, search: "=cmd" },
      ],
      host_ops_total: 75,
      kernels: [],
      kernels_total: 0,
      kernels_reason: CPU_ONLY,
      hlo_ops: [],
      hlo_ops_total: 0,
    },
    findings: [
      {
        kind: "input_bound",
        host: "worker0",
        title: "The step waits for input",
        observation: "Reading input (batch_read) takes 26 % of the wall time of the steady steps 2–3.",
        hypothesis: "The input pipeline runs on the training thread.",
        next_check: "Time the input alone and compare.",
        rule: "input ≥ 10% of the wall time of the steady steps",
        evidence: [{ label: "input share of wall time", value: 0.262, text: "26.2 %" }],
        link: { start_ns: 20_000_000, end_ns: 32_200_000, search: "batch_read", host: "worker0" },
      },
    ],
    warnings: [],
  };
}

function gpuHost(name: string, wall: number): OverviewHost {
  const rows = [step(5, "steady", wall, { device_compute: wall / 2, communication: wall / 4, input: 0, host_compute: wall / 8, idle: wall / 8 })];
  return {
    host: name,
    format: "chrome_trace",
    steps: { source_kind: "profiler_step", source: "ProfilerStep#N markers (PyTorch profiler)", rows, split: { rule: "rule", verdict: "one step: it is counted as steady", warmup: [], steady: [5] }, stats: { count: 1, median_ns: wall, min_ns: wall, max_ns: wall } },
    capture: { label: "whole capture", start_ns: 0, end_ns: wall, wall_ns: wall, steps: 1, parts: rows[0].parts, fractions: { device_compute: 0.5, communication: 0.25, input: 0, host_compute: 0.125, idle: 0.125 } },
    devices: {
      observed: true,
      scope: "steady steps 5",
      devices: [
        {
          name: "GPU 0",
          kind: "gpu",
          window_ns: wall,
          busy_ns: wall * 0.75,
          idle_ns: wall * 0.25,
          busy_fraction: 0.75,
          streams: [{ name: "stream 7", track: 2, events: 40, busy_ns: wall * 0.75, idle: { gaps: 39, host_wait_ns: wall * 0.2, kernel_wait_ns: wall * 0.05, other_ns: 0 } }],
        },
      ],
      launch_delay: { count: 40, median_ns: 1_700, p10_ns: 1_300, p90_ns: 1_900, min_ns: 900, max_ns: 2_100, histogram: [{ lo_ns: 900, hi_ns: 1_500, count: 10 }, { lo_ns: 1_500, hi_ns: 2_100, count: 30 }] },
    },
    overlap: { communication_ns: wall / 4, overlapped_ns: wall / 16, fraction: 0.25 },
  };
}

/** Two GPU ranks, the second slower. */
export function gpuAnswer(): OverviewAnswer {
  return {
    subject: "run 'ranks' session 'pytorch'",
    hosts: ["rank-0", "rank-1"],
    batch_size: 32,
    categories: categories(true),
    per_host: [gpuHost("rank-0", 600_000_000), gpuHost("rank-1", 630_000_000)],
    ranks: {
      hosts: ["rank-0", "rank-1"],
      records: "PyTorch collective ops (calls per rank: rank-0 2, rank-1 2)",
      steps: [{ step: 5, steady: true, collectives: 2, wait_ns: [30_000_000, 1_000_000], straggler: "rank-1", waited_for_ns: 30_000_000, doing: "load_batch", doing_source: "phase", start_ns: 50_000_000, end_ns: 680_000_000 }],
      collectives: [
        { index: 0, name: "c10d::allreduce_", kind: "all_reduce", group: "default", matched_by: "order 1 in group default", step: 5, ranks: 2, arrival_ns: [100_000_000, 130_000_000], wait_ns: [30_000_000, 0], last: "rank-1", transfer_ns: 2_000_000, bytes: 4_000_000, algbw: 2e9, busbw: 2e9, start_ns: 100_000_000, end_ns: 132_000_000 },
        { index: 1, name: "c10d::allreduce_", kind: "all_reduce", group: "default", matched_by: "order 2 in group default", step: 5, ranks: 2, arrival_ns: [400_000_000, 399_000_000], wait_ns: [0, 1_000_000], last: "rank-0", transfer_ns: 1_000_000, start_ns: 399_000_000, end_ns: 401_000_000 },
      ],
      collectives_total: 2,
    },
    tables: {
      scope: "steady steps 5 of each host",
      group_by: "shapes",
      host_ops: [{ name: "aten::mm", shapes: "[[8, 16], [16, 4]]", calls: 3, total_ns: 30_000, self_ns: 20_000, avg_ns: 10_000, min_ns: 9_000, max_ns: 11_000, total_fraction: 0.01, self_fraction: 0.005, search: "aten::mm" }],
      host_ops_total: 1,
      kernels: [
        { name: "ncclKernel_AllReduce", kind: "collective", calls: 20, total_ns: 300_000_000, avg_ns: 15_000_000, min_ns: 1_000_000, max_ns: 90_000_000, fraction: 0.25, framework_op: "nccl:all_reduce", framework_ops: 1, details: { grid: [16, 1, 1], block: [640, 1, 1], registers_per_thread: 96, shared_memory: 41_744, occupancy: 5 }, search: "ncclKernel_AllReduce" },
        { name: "gemm_kernel", kind: "kernel", calls: 50, total_ns: 500_000_000, avg_ns: 10_000_000, min_ns: 9_000_000, max_ns: 11_000_000, fraction: 0.41, framework_ops: 0, search: "gemm_kernel" },
      ],
      kernels_total: 2,
      hlo_ops: [],
      hlo_ops_total: 0,
    },
    findings: [],
    warnings: [],
  };
}
