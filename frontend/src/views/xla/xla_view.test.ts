// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { ProfscopeClient } from "../../api/client.ts";
import { XlaApi, type XlaReport } from "./api.ts";
import { formatBytes, formatCount, formatDuration } from "../../shared/units.ts";
import { BAR_COLOR, barChart, barChartConfig, HOT_COLOR, percentileConfig, percentilePlot, warmupBars } from "./charts.ts";
import { formatExact, formatRate } from "./format.ts";
import { sanitizeSvg } from "../../shared/graphviz.ts";
import { debugDigest, findingsList, stepCharts, summaryCards } from "./overview.ts";

const BASE = "http://tb.local/data/plugin/profscope/";
const subject = { run: "job", session: "xla", hosts: ["xla"] };

function report(overrides: Partial<XlaReport> = {}): XlaReport {
  const steps = [0, 1, 2, 3, 4, 5];
  return {
    ordinal: null,
    ordinals: [null],
    snapshot: { path: "job/xla_metrics_report.txt", step: null, first_line: 1, last_line: 173 },
    summary: {
      uncached_compiles: 9,
      cached_compiles: null,
      compilations: 9,
      compile_time_ns: 5_008_965_807,
      executions: 16,
      execute_time_ns: 33_321_060,
      to_device: { metric: "TransferToDeviceTime", transfers: 42, time_ns: 617_605, bytes: 9799.68 },
      from_device: { metric: null, transfers: null, time_ns: null, bytes: null },
      cpu_fallback_calls: 6,
      cpu_fallback_ops: [{ name: "aten::nonzero", value: 3 }],
      steps: null,
    },
    metrics: [],
    counters: [],
    series: {
      source: "job/xla_metrics_per_step.txt",
      x_label: "step",
      steps,
      resets: [],
      metrics: {
        CompileTime: {
          unit: "ns",
          samples: [1, 2, 4, 4, 5, 8],
          accumulator: [1, 2, 3, 3, 4, 5],
          delta_samples: [1, 1, 2, 0, 1, 3],
          delta_accumulator: [1e9, 1e9, 1e9, 0, 1e9, 1e9],
        },
      },
      counters: { "aten::nonzero": { values: [null, null, 1, 1, 1, 2], deltas: [0, 0, 1, 0, 0, 1] } },
    },
    warmup_steps: 3,
    debug: null,
    graphs: null,
    findings: [
      {
        id: "recompilation",
        severity: "high",
        title: "Recompiling after warm-up",
        summary: "4 compilations in the 3 steps after warm-up (1.33 per step).",
        evidence: [{ label: "Steps with compilations after warm-up", value: "4 (1), 5 (3)" }],
        locations: [
          {
            function: "<module>",
            file: "/src/train.py",
            line: 18,
            label: "<module> (/src/train.py:18)",
            count: 2,
            role: "a tensor size changed here",
            file_as_logged: "train.py",
          },
        ],
        steps: [4, 5],
        diffs: [{ a: 1, b: 4, summary: "same graph, 16 nodes changed shape", same_structure: true, origins: [] }],
        fix: "Pad the batch.",
        sources: ["job/xla_metrics_per_step.txt"],
      },
    ],
    sources: [],
    errors: [],
    ...overrides,
  };
}

describe("XLA formatting", () => {
  it("gives every number its unit and says not observed for absent ones", () => {
    expect(formatDuration(33_321_060)).toBe("33.3 ms");
    expect(formatDuration(5_008_965_807, 4)).toBe("5.009 s");
    expect(formatDuration(null)).toBe("not observed");
    expect(formatDuration(90e9)).toBe("1.5 min");
    expect(formatBytes(52)).toBe("52 B");
    expect(formatBytes(9799.68)).toBe("9.57 KiB");
    expect(formatCount(1234567)).toBe("1,234,567");
    expect(formatRate(7.09983, "")).toBe("7.1 per s");
    expect(formatRate(1.11e9, "ns")).toBe("1.11 s per s");
  });

  it("keeps every printed digit in exact mode", () => {
    expect(formatExact(148_817_608, "ns", 1)).toBe("148.817608 ms");
    expect(formatExact(5_008_965_807, "ns", 1)).toBe("5.008965807 s");
    expect(formatExact(70, "ns", 1)).toBe("70 ns");
    expect(formatExact(null, "B", 0.01)).toBe("not observed");
  });
});

describe("XLA charts", () => {
  const compilations = {
    title: "Compilations per step",
    xLabel: "step",
    steps: [0, 1, 2],
    values: [1, 0, 3],
    unit: "" as const,
    what: "compilations",
    highlight: new Set([2]),
    warmupEnd: 1,
  };

  it("draws one bar per step with the value in its tooltip, hot steps marked", () => {
    const config = barChartConfig(compilations);
    const [bars] = config.data.datasets;
    expect(config.data.labels).toEqual(["0", "1", "2"]);
    expect(bars?.data).toEqual([1, 0, 3]);
    expect(bars?.backgroundColor).toEqual([BAR_COLOR, BAR_COLOR, HOT_COLOR]);
    const label = config.options?.plugins?.tooltip?.callbacks?.label as (item: { dataIndex: number }) => string;
    expect(label({ dataIndex: 2 })).toBe("step 2: 3 compilations");
    expect(warmupBars(compilations)).toBe(1);
    expect(warmupBars({ ...compilations, warmupEnd: undefined })).toBe(0);
    // the canvas holds the same bars as text: what screen readers and the browser tests read
    const chart = barChart(compilations);
    const items = Array.from(chart.querySelectorAll("canvas li.xv-bar"));
    expect(items.length).toBe(3);
    expect(items[2]?.getAttribute("class")).toContain("xv-bar-hot");
    expect(items[2]?.textContent).toBe("step 2: 3 compilations");
    expect(chart.querySelector("canvas .xv-warmup")?.textContent).toBe("warm-up: the first 1 steps");
  });

  it("labels the y axis in the metric's unit", () => {
    const config = barChartConfig({ ...compilations, unit: "ns", values: [1e9, 0, 5e8] });
    const tick = config.options?.scales?.y?.ticks?.callback as (v: number) => string;
    expect(tick(1e9)).toBe("1 s");
    expect(tick(5e8)).toBe("500 ms");
  });

  it("plots percentiles in the metric's unit", () => {
    const points = [
      { p: 1, value: 148_817_608, text: "149ms817.608us" },
      { p: 99, value: 972_593_246, text: "973ms593.246us" },
    ];
    const config = percentileConfig(points, "ns");
    const tick = config.options?.scales?.y?.ticks?.callback as (v: number) => string;
    expect(tick(1e9)).toBe("1 s");
    expect(config.data.datasets[0]?.data).toEqual([
      { x: 1, y: 148_817_608 },
      { x: 99, y: 972_593_246 },
    ]);
    const label = config.options?.plugins?.tooltip?.callbacks?.label as (item: { dataIndex: number }) => string;
    expect(label({ dataIndex: 0 })).toBe("1%: 149 ms (printed 149ms817.608us)");
    const plot = percentilePlot(points, "ns");
    expect(Array.from(plot.querySelectorAll("canvas li.xv-dot")).map((li) => li.textContent)).toEqual([
      "1%: 149 ms (printed 149ms817.608us)",
      "99%: 973 ms (printed 973ms593.246us)",
    ]);
    // a sparkline has no axes, points nor tooltips
    const spark = percentileConfig(points, "ns", true);
    expect([spark.options?.scales?.x?.display, spark.options?.plugins?.tooltip?.enabled, spark.data.datasets[0]?.pointRadius]).toEqual([false, false, 0]);
  });
});

describe("XLA overview", () => {
  it("shows cards with units and not observed, findings with locations and diff links", () => {
    const cards = summaryCards(report().summary);
    expect(cards.querySelector("[data-testid=card-compile-time]")?.textContent).toContain("5.01 s");
    expect(cards.querySelector("[data-testid=card-from-device]")?.textContent).toContain("not observed");
    expect(cards.querySelector("[data-testid=card-compilations]")?.textContent).toContain("cache hits not observed");
    const opened: [number, number][] = [];
    const list = findingsList(report(), { openDiff: (a, b) => opened.push([a, b]) });
    const finding = list.querySelector("[data-testid=finding-recompilation]");
    expect(finding?.textContent).toContain("Recompiling after warm-up");
    expect(finding?.querySelector("[data-testid=location]")?.textContent).toBe(
      "<module> (/src/train.py:18) ×2 — a tensor size changed here (logged as train.py)",
    );
    (finding?.querySelector("[data-testid=open-diff]") as HTMLButtonElement).click();
    expect(opened).toEqual([[1, 4]]);
    // what the checks could not see is said, not silently skipped
    expect(list.textContent).toContain("No PT_XLA_DEBUG log");
    expect(list.textContent).toContain("No graph log");
  });

  it("sums up the debug log's causes and pt-xla-profiler lines", () => {
    expect(debugDigest(report())).toBeNull();
    const digest = debugDigest(
      report({
        debug: {
          compilations: [],
          executions: 16,
          unexpected_executions: 0,
          causes: [{ kind: "execution", cause: "user torch_xla.sync", count: 10 }],
          messages: [{ text: "CompileTime too frequent: 21 counts during 11 steps", kind: "too_frequent", count: 2, first_line: 3, last_line: 9 }],
        },
      }),
    );
    const rows = Array.from(digest?.querySelectorAll("tbody tr") ?? []).map((r) => r.textContent);
    expect(rows).toEqual(["10executionsuser torch_xla.sync"]);
    expect(digest?.textContent).toContain("CompileTime too frequent: 21 counts during 11 steps (×2, lines 3–9)");
  });

  it("says none of the checks fired when there are no findings", () => {
    const list = findingsList(report({ findings: [] }), { openDiff: () => undefined });
    expect(list.querySelector(".xv-ok")?.textContent).toContain("None of the checks fired");
  });

  it("charts per step, marking compilations after warm-up", () => {
    const charts = stepCharts(report());
    expect(charts).not.toBeNull();
    const compilations = charts?.querySelector("canvas[aria-label='Compilations per step']");
    const hot = Array.from(compilations?.querySelectorAll("li.xv-bar-hot") ?? []).map((r) => r.getAttribute("data-step"));
    expect(hot).toEqual(["4", "5"]);
    expect(charts?.textContent).toContain("CPU fallback calls per step (aten::nonzero)");
    expect(stepCharts(report({ series: null }))).toBeNull();
  });
});

describe("XlaApi", () => {
  it("asks the xla routes with the subject and optional ordinal, and reports server errors", async () => {
    const urls: string[] = [];
    const fetchImpl = async (url: string) => {
      urls.push(url);
      if (url.includes("xla/graph?")) return new Response("Invalid argument: graph index 99 out of range", { status: 400 });
      return new Response(JSON.stringify({ ok: true }), { status: 200, headers: { "Content-Type": "application/json" } });
    };
    const api = new XlaApi(new ProfscopeClient(BASE, fetchImpl));
    await api.report(subject, 1);
    await api.diff(subject, 2, 3);
    const first = new URL(urls[0] as string);
    expect(first.pathname).toBe("/data/plugin/profscope/xla/report");
    expect(first.searchParams.get("ordinal")).toBe("1");
    expect(first.searchParams.get("host")).toBe("xla");
    const second = new URL(urls[1] as string);
    expect([second.searchParams.get("a"), second.searchParams.get("b"), second.searchParams.has("ordinal")]).toEqual(["2", "3", false]);
    await expect(api.graph(subject, 99)).rejects.toThrow("xla/graph: Invalid argument: graph index 99 out of range (HTTP 400)");
  });
});

describe("Graphviz output", () => {
  it("drops links and event handlers from the rendered SVG", () => {
    const doc = new DOMParser().parseFromString(
      '<svg xmlns="http://www.w3.org/2000/svg" onload="x()"><a href="javascript:alert(1)"><text onclick="y()">n</text></a><script>z()</script></svg>',
      "image/svg+xml",
    );
    const root = doc.documentElement;
    sanitizeSvg(root);
    expect(root.outerHTML).not.toMatch(/onload|onclick|href|script/);
    expect(root.textContent).toBe("n");
  });
});
