// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { ProfscopeClient } from "../../api/client.ts";
import type { ViewContext } from "../view.ts";
import { optionParams, readOptions } from "./api.ts";
import type { RooflineAnswer } from "./api.ts";
import { formatAxisNumber, isDecade, tooltipLines } from "./chart.ts";
import { rooflineContext } from "./cells.ts";
import { mixedPrecision, rooflineAnswer } from "./fixture.ts";
import { rooflineModel } from "./geometry.ts";
import { RooflineView } from "./view.ts";

const BASE = "http://tb.local/data/plugin/profscope/";
const NOT_OBSERVED_REASON = "no device roofline: device activity not observed: vm has no TPU core or GPU with events";

interface Harness {
  view: RooflineView;
  urls: URL[];
  params: Record<string, string | undefined>[];
  navigated: [string, Record<string, string>][];
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

/** A view against a fake server: trace/meta answers 202 `ingesting` times, then the roofline route
 * answers `answer(params)`. */
function harness(answer: (q: URLSearchParams) => RooflineAnswer | Response, link = "", ingesting = 0): Harness {
  const urls: URL[] = [];
  let waits = ingesting;
  const fetchImpl = async (url: string) => {
    const u = new URL(url);
    urls.push(u);
    if (u.pathname.endsWith("trace/meta")) {
      if (waits-- > 0) return json({ state: "ingesting", bytes_done: 40, bytes_total: 100, stage: "events", files: [] }, 202);
      return json({});
    }
    const a = answer(u.searchParams);
    return a instanceof Response ? a : json(a);
  };
  const params: Record<string, string | undefined>[] = [];
  const navigated: [string, Record<string, string>][] = [];
  const ctx: ViewContext = {
    client: new ProfscopeClient(BASE, fetchImpl),
    subject: { run: "job", session: "s1", hosts: ["h"] },
    hosts: [],
    params: new URLSearchParams(link),
    setParams: (p) => params.push(p),
    navigate: (tool, p) => navigated.push([tool, p]),
    signal: new AbortController().signal,
  };
  const view = new RooflineView(ctx);
  document.body.replaceChildren(view.el);
  return { view, urls, params, navigated };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe("roofline deep link", () => {
  it("keeps the infeed toggle and the step in the link, defaults left out", () => {
    expect(readOptions(new URLSearchParams("infeed=0&step=3"))).toEqual({ includeInfeed: false, step: 3 });
    expect(readOptions(new URLSearchParams("step=x"))).toEqual({ includeInfeed: true, step: null });
    expect(optionParams({ includeInfeed: true, step: null })).toEqual({ infeed: undefined, step: undefined });
    expect(optionParams({ includeInfeed: false, step: 2 })).toEqual({ infeed: "0", step: "2" });
  });
});

describe("RooflineView", () => {
  it("shows why there is no roofline when device activity was not observed: no chart, no table, no zeros", async () => {
    const { view } = harness(() => ({ ...rooflineAnswer(), observed: false, reason: NOT_OBSERVED_REASON, device: undefined, program: [], ops: [], ops_total: 0, steps: [], warnings: [] }));
    await view.start();
    expect(view.el.querySelector("[data-testid=rf-not-observed]")?.textContent).toBe(NOT_OBSERVED_REASON);
    expect(view.el.querySelector("canvas")).toBeNull();
    expect(view.el.querySelector("table")).toBeNull();
    expect(view.el.textContent).not.toMatch(/\b0\b/);
  });

  it("shows the ingest progress while the trace is read, then the answer", async () => {
    const { view, urls } = harness(() => rooflineAnswer(), "", 1);
    const started = view.start();
    await settle();
    await settle();
    expect(view.el.querySelector("[data-testid=ingest-progress]")?.textContent).toContain("Reading the profile: 40%");
    await started;
    expect(urls.map((u) => u.pathname.split("/").pop())).toEqual(["meta", "meta", "roofline"]);
    expect(view.el.querySelector("[data-testid=ingest-progress]")).toBeNull();
    expect(view.el.querySelector("[data-testid=rf-ops]")).not.toBeNull();
  });

  it("lists the device's peaks with their sources, and says which are unknown", async () => {
    const { view } = harness(() => rooflineAnswer());
    await view.start();
    const device = view.el.querySelector("[data-testid=rf-device]") as HTMLElement;
    expect(device.querySelector("[data-testid=rf-peak-flops-peak]")?.textContent).toBe("Compute1 PFLOP/sthe compute rooffrom the profile");
    expect(device.querySelector("[data-testid=rf-peak-bw-vmem_read]")?.textContent).toBe("VMEM read bandwidth10 TB/sridge point 100 FLOP/Buser override");
    expect(device.querySelector("[data-testid=rf-peak-bw-cmem_read]")?.textContent).toContain("no traffic: no roof");
    expect(device.querySelector("[data-testid=rf-peak-bw-sram_read]")?.textContent).toContain("unknown");
    expect(device.querySelector("[data-testid=rf-peak-bw-sram_read]")?.textContent).toContain("no roof drawn");
    expect(view.el.querySelector("[data-testid=rf-warnings]")?.textContent).toBe("no step marker observed");
    expect(view.el.querySelector("[data-testid=rf-step-source]")?.textContent).toBe("Steps: the devices' Steps lines");
    expect(view.el.querySelector("[data-testid=rf-listing]")?.textContent).toBe("showing 5 of 12 ops; the 5 with the most self time are listed");
    // happy-dom has no 2D canvas: the chart's points are there as text
    const points = Array.from(view.el.querySelectorAll("[data-testid=rf-point]")).map((li) => li.getAttribute("data-key"));
    expect(points).toEqual(["program:Total", "op:1", "op:3"]);
    expect(view.el.querySelector("[data-testid=rf-not-drawn]")?.textContent).toBe("Not drawn: 2 ops: no FLOPs (a log axis has no 0); 1 op: FLOPs not observed.");
  });

  it("draws a roof per precision the ops run at, colours the ops by it, and says which peak is not known", async () => {
    const { view } = harness(() => mixedPrecision());
    await view.start();
    const legend = Array.from(view.el.querySelectorAll("[data-testid=rf-legend] li")).map((li) => li.textContent);
    expect(legend).toEqual([
      "Compute roof (bf16): 1 PFLOP/s",
      "fp32 compute roof: 67 TFLOP/s",
      "int64_vector: peak not known, no roof",
      "HBM roof: 1 TB/s · ridge point 1,000 FLOP/B",
      "VMEM read roof: 10 TB/s · ridge point 100 FLOP/B",
      "program rows (1)",
      "ops at the fp32 roof (1)",
      "ops at the bf16 roof (1)",
      "estimated from shapes",
    ]);
    const device = view.el.querySelector("[data-testid=rf-device]") as HTMLElement;
    expect(device.querySelector("[data-testid=rf-peak-flops-fp32]")?.textContent).toContain("a compute roof: ops run at it");
    expect(device.querySelector("[data-testid=rf-peak-flops-int64_vector]")?.textContent).toContain("not known");
  });

  it("refetches when infeed is toggled or a step picked, and keeps both in the link", async () => {
    const { view, urls, params } = harness((q) => rooflineAnswer({ include_infeed: q.get("infeed") === "1", step: q.has("step") ? Number(q.get("step")) : undefined }));
    await view.start();
    const infeed = view.el.querySelector("[data-testid=rf-infeed]") as HTMLInputElement;
    expect(infeed.checked).toBe(true);
    infeed.checked = false;
    infeed.dispatchEvent(new Event("change"));
    await settle();
    await settle();
    expect(params.at(-1)).toEqual({ infeed: "0", step: undefined });
    expect(urls.at(-1)?.searchParams.get("infeed")).toBe("0");
    const step = view.el.querySelector("[data-testid=rf-step]") as HTMLSelectElement;
    expect(Array.from(step.options).map((o) => o.textContent)).toEqual(["every step", "step 1", "step 2"]);
    step.value = "2";
    step.dispatchEvent(new Event("change"));
    await settle();
    await settle();
    expect(params.at(-1)).toEqual({ infeed: "0", step: "2" });
    expect([urls.at(-1)?.searchParams.get("infeed"), urls.at(-1)?.searchParams.get("step")]).toEqual(["0", "2"]);
    expect((view.el.querySelector("[data-testid=rf-infeed]") as HTMLInputElement).checked).toBe(false);
    // a link that changes under the view refetches too
    view.applyParams(new URLSearchParams("step=1"));
    await settle();
    await settle();
    expect([urls.at(-1)?.searchParams.get("infeed"), urls.at(-1)?.searchParams.get("step")]).toEqual(["1", "1"]);
  });

  it("offers every step again when the link names a step the trace does not have", async () => {
    const { view, params } = harness((q) => (q.has("step") ? new Response("Invalid argument: no step 9 (steps: 1, 2)", { status: 400 }) : rooflineAnswer()), "step=9");
    await view.start();
    const error = view.el.querySelector("[data-testid=rf-error]") as HTMLElement;
    expect(error.textContent).toContain("no step 9 (steps: 1, 2)");
    (error.querySelector("button") as HTMLButtonElement).click();
    await settle();
    await settle();
    expect(params.at(-1)).toEqual({ infeed: undefined, step: undefined });
    expect(view.el.querySelector("[data-testid=rf-ops]")).not.toBeNull();
  });

  it("opens exactly the events an op's time comes from when the answer names them", async () => {
    const answer = rooflineAnswer();
    const op = answer.ops.find((o) => o.rank === 3);
    if (op) op.event_ids = [4294967301, 7];
    const { view, navigated } = harness(() => answer);
    await view.start();
    (view.el.querySelector("tr[data-rank='3'] [data-testid=rf-open-trace]") as HTMLButtonElement).click();
    expect(navigated).toEqual([["trace", { lk: "4294967301,7" }]]);
  });

  it("opens an op's events in the Trace tab with its search text, and selects rows", async () => {
    const { view, navigated } = harness(() => rooflineAnswer());
    await view.start();
    (view.el.querySelector("tr[data-rank='3'] [data-testid=rf-open-trace]") as HTMLButtonElement).click();
    expect(navigated).toEqual([["trace", { find: "op3" }]]);
    (view.el.querySelector("tr[data-rank='3']") as HTMLElement).click();
    expect(view.el.querySelector("[data-testid=rf-op-table] tr.rf-selected")?.getAttribute("data-rank")).toBe("3");
    (view.el.querySelector("[data-testid=rf-pinned-trace]") as HTMLButtonElement).click();
    expect(navigated.at(-1)).toEqual(["trace", { find: "op3" }]);
    (view.el.querySelector("[data-testid=rf-program-row]") as HTMLElement).click();
    expect(view.el.querySelector("[data-testid=rf-program-table] tr.rf-selected")?.getAttribute("data-step")).toBe("Total");
    expect(view.el.querySelector("[data-testid=rf-op-table] tr.rf-selected")).toBeNull();
  });

  it("lists a PyTorch trace's steps as program rows and places each on the chart", async () => {
    const bare = rooflineAnswer();
    const total = bare.program[0]!;
    const row = (step: string, scale: number) => ({ ...total, step, device_time_ns: total.device_time_ns * scale, flops: (total.flops as number) * scale });
    const kineto = rooflineAnswer({
      steps: [5, 6],
      step_source: "ProfilerStep#N markers (PyTorch profiler)",
      program: [total, row("Average step (2 complete)", 0.5), row("5", 0.5), row("6", 0.5)],
      warnings: [],
    });
    const { view } = harness(() => kineto);
    await view.start();
    const rows = Array.from(view.el.querySelectorAll("[data-testid=rf-program-row]")).map((tr) => tr.querySelector("td")?.textContent);
    expect(rows).toEqual(["Total", "Average step (2 complete)", "Step 5", "Step 6"]);
    expect(view.el.querySelector("[data-testid=rf-step-source]")?.textContent).toBe("Steps: ProfilerStep#N markers (PyTorch profiler)");
    const points = Array.from(view.el.querySelectorAll("[data-testid=rf-point]")).map((li) => li.getAttribute("data-key"));
    expect(points.filter((k) => k?.startsWith("program:"))).toEqual(["program:Total", "program:Average step (2 complete)", "program:5", "program:6"]);
    const step = view.el.querySelector("[data-testid=rf-step]") as HTMLSelectElement;
    expect(Array.from(step.options).map((o) => o.textContent)).toEqual(["every step", "step 5", "step 6"]);
  });

  it("says there is nothing to draw instead of an empty chart when no figure was observed", async () => {
    const bare = rooflineAnswer();
    const none = {
      ...bare,
      program: bare.program.map((p) => ({ ...p, bytes_by_level: {}, flops: undefined, figures: { bandwidth: {}, intensity: {}, bandwidth_utilization: {} }, source: "no cost stats in this profile" })),
      ops: bare.ops.map((o) => ({ ...o, bytes_by_level: {}, figures: { bandwidth: {}, intensity: {}, bandwidth_utilization: {} }, source: "no cost stats in this profile" })),
    };
    const { view } = harness(() => none);
    await view.start();
    expect((view.el.querySelector("[data-testid=rf-chart]") as HTMLElement).hidden).toBe(true);
    expect(view.el.querySelector("[data-testid=rf-chart-empty]")?.textContent).toBe("Nothing to place on the roofline: no memory traffic observed (no cost stats in this profile).");
  });
});

describe("roofline axes", () => {
  it("label only whole decades, in plain numbers", () => {
    expect([1e-2, 0.1, 1, 1000, 1e15].every(isDecade)).toBe(true);
    expect([2, 0.3, 500, 0].some(isDecade)).toBe(false);
    expect([0.01, 1, 1000, 10000].map(formatAxisNumber)).toEqual(["0.01", "1", "1,000", "10,000"]);
  });
});

describe("roofline tooltips", () => {
  it("give a point's figures at the chart's level, and say when they are estimated", () => {
    const answer = rooflineAnswer();
    const ctx = rooflineContext(answer);
    const model = rooflineModel(ctx, "hbm", answer.program, answer.ops);
    const [fusion, mm] = model.ops;
    expect(tooltipLines(fusion!, ctx, "hbm")).toEqual([
      "fusion.1",
      "fusion · 10 occurrences",
      "FLOP rate: 12.3 TFLOP/s",
      "HBM bandwidth: 1.52 TB/s",
      "HBM intensity: 0.125 FLOP/B",
      "Bound by: HBM",
      "Roofline efficiency: 76%",
      "Compute roof: device peak",
      "Self time: 10% of the program's device time",
    ]);
    expect(tooltipLines(mm!, ctx, "hbm")).toContain("FLOPs and bytes estimated from shapes");
    expect(tooltipLines(model.program[0]!, ctx, "hbm")[0]).toBe("Program: Total");
  });
});
