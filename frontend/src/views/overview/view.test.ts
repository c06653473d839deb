// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { OverviewAnswer, TraceSearch } from "../../api/answers.gen.ts";
import { ProfscopeClient } from "../../api/client.ts";
import type { ViewContext } from "../view.ts";
import { optionParams, readOptions, routeParams } from "./api.ts";
import { evidenceMatches, evidenceParams, rangeParams } from "./links.ts";
import { cpuAnswer, gpuAnswer } from "./test_answers.ts";
import { OverviewView } from "./view.ts";

const BASE = "http://tb.local/data/plugin/profscope/";

interface Harness {
  view: OverviewView;
  requests: URL[];
  navigations: [string, Record<string, string>][];
  params: Record<string, string | undefined>[];
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

/** The view over a fetch that answers trace/meta (`ingesting` 202s first, as while the server reads
 * the profile), overview with `answer` and trace/search with `search`. */
function harness(answer: (url: URL) => OverviewAnswer, search: TraceSearch | null = null, link = "", ingesting = 0): Harness {
  const requests: URL[] = [];
  let metaPolls = 0;
  const client = new ProfscopeClient(BASE, async (input) => {
    const url = new URL(input);
    requests.push(url);
    if (url.pathname.endsWith("/trace/meta")) return metaPolls++ < ingesting ? json({ bytes_done: 1, bytes_total: 2, stage: "events" }, 202) : json({});
    if (url.pathname.endsWith("/overview")) return json(answer(url));
    if (url.pathname.endsWith("/trace/search") && search) return json(search);
    return json({ message: "not found" }, 404);
  });
  const navigations: Harness["navigations"] = [];
  const params: Harness["params"] = [];
  const ctx: ViewContext = {
    client,
    subject: { run: "job", session: "s1", hosts: ["worker0"] },
    hosts: [],
    params: new URLSearchParams(link),
    setParams: (p) => params.push(p),
    navigate: (tool, p) => navigations.push([tool, p]),
    signal: new AbortController().signal,
  };
  return { view: new OverviewView(ctx), requests, navigations, params };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

const overviewRequests = (h: Harness) => h.requests.filter((u) => u.pathname.endsWith("/overview"));

describe("deep-link options", () => {
  it("reads, writes and sends step_name, batch_size and group_by; defaults leave them out", () => {
    const options = readOptions(new URLSearchParams("step_name=%20train_step%20&batch_size=32&group_by=shapes"));
    expect(options).toEqual({ stepName: "train_step", batchSize: 32, groupBy: "shapes" });
    expect(optionParams(options)).toEqual({ step_name: "train_step", batch_size: "32", group_by: "shapes" });
    expect(routeParams(options)).toEqual({ step_name: "train_step", batch_size: 32, group_by: "shapes" });
    const defaults = readOptions(new URLSearchParams("batch_size=0&group_by=bogus"));
    expect(defaults).toEqual({ stepName: "", batchSize: null, groupBy: "name" });
    expect(optionParams(defaults)).toEqual({ step_name: undefined, batch_size: undefined, group_by: undefined });
    expect(routeParams(defaults)).toEqual({});
  });
});

describe("links into the Trace tab", () => {
  it("opens a time range as it is, and a search text's exact matches in the link's range and host", () => {
    expect(rangeParams({ start_ns: 10, end_ns: 20, search: "x" })).toEqual({ start: "10", end: "20" });
    expect(rangeParams({ search: "x" })).toBeNull();
    const matches = [
      { id: 7, name: "aten::add_", start_ns: 100, dur_ns: 10, track: 1 },
      { id: 9, name: "aten::add", start_ns: 5_000, dur_ns: 2_000, track: 1 },
      { id: 2 ** 32 + 3, name: "aten::add", start_ns: 5_500, dur_ns: 100, track: 8 },
      { id: 11, name: "aten::add", start_ns: 90_000, dur_ns: 10, track: 1 },
    ];
    const ids = (link: Parameters<typeof evidenceMatches>[0], host: number | null = null) => evidenceMatches(link, matches, host).map((m) => m.id);
    expect(ids({ search: "aten::add" })).toEqual([9, 2 ** 32 + 3, 11]);
    expect(ids({ search: "aten::add", start_ns: 0, end_ns: 10_000 }, 0)).toEqual([9]);
    expect(ids({ search: "aten::" })).toEqual([7, 9, 2 ** 32 + 3, 11]);
    expect(evidenceParams({ search: "aten::add" }, evidenceMatches({ search: "aten::add" }, matches, 0))).toEqual({ start: "3000", end: "9000", lk: "9,11", q: "aten::add" });
    expect(evidenceParams({ search: "x", start_ns: 0, end_ns: 50 }, [])).toBeNull();
    expect(evidenceParams({ search: "aten::add_", start_ns: 0, end_ns: 500 }, [matches[0]])).toEqual({ start: "0", end: "500", lk: "7", q: "aten::add_" });
  });
});

describe("OverviewView", () => {
  it("shows the findings first, with their evidence, and follows a finding's link to its evidence events", async () => {
    const batchRead = (id: number, start_ns: number) => ({ id, name: "batch_read", start_ns, dur_ns: 5_000, track: 3 });
    const search: TraceSearch = { query: "batch_read", total: 2, offset: 0, truncated: false, matches: [batchRead(42, 21_000_000), batchRead(43, 40_000_000)] };
    const h = harness(() => cpuAnswer(), search, "", 1);
    const started = h.view.start();
    await until(() => h.view.el.querySelector("[data-testid=ingest-progress]")?.textContent === "Reading the profile: 50% (1 B of 2 B) · events");
    await started;
    const el = h.view.el;
    const sections = Array.from(el.querySelectorAll(".ov-body > section, .ov-body > details")).map((s) => s.getAttribute("data-testid"));
    expect(sections).toEqual(["ov-findings", "ov-host", "ov-tables"]);
    const finding = el.querySelector("[data-testid=ov-finding-input_bound]");
    const cells = Array.from(finding?.querySelectorAll("td") ?? []);
    expect(cells[0].textContent).toContain("The step waits for input");
    expect(cells[0].querySelector("[data-testid=ov-evidence]")?.textContent).toBe("input share of wall time: 26.2 %");
    expect(cells[0].textContent).toContain("Rule: input ≥ 10% of the wall time of the steady steps");
    expect(cells[1].textContent).toBe("The input pipeline runs on the training thread.");
    expect(cells[2].textContent).toBe("Time the input alone and compare.");
    finding?.querySelector<HTMLButtonElement>("[data-testid=ov-finding-link]")?.click();
    await until(() => h.navigations.length > 0);
    // Only the evidence inside the finding's time range, selected one by one.
    expect(h.navigations).toEqual([["trace", { start: "20000000", end: "32200000", lk: "42", q: "batch_read" }]]);
  });

  it("marks warm-up, and shows a CPU-only capture's device figures and kernels as not observed", async () => {
    const h = harness(() => cpuAnswer());
    await h.view.start();
    const el = h.view.el;
    expect(el.querySelector("[data-testid=ov-step-chart] li[data-phase=warmup]")?.textContent).toBe("step 1 (warm-up): 9 ms");
    expect(el.querySelector("[data-testid=ov-split]")?.textContent).toContain("warm-up");
    const device = el.querySelector("[data-testid=ov-card-device-busy] [data-absent]");
    expect(device?.textContent).toBe("not observed");
    expect(device?.getAttribute("title")).toContain("CPU-only capture");
    const kernels = el.querySelector("[data-testid=ov-kernels-absent]");
    expect(kernels?.textContent).toBe("not observed");
    expect(kernels?.getAttribute("title")).toContain("CPU-only capture");
    expect(el.querySelector("[data-testid=ov-hlo-ops]")).toBeNull();
    expect(el.querySelector("[data-testid=ov-stats-note]")?.textContent).toContain("too short");
  });

  it("finds a table row's events by search and opens the first exact match, selected", async () => {
    const search: TraceSearch = { query: "batch_read", total: 2, offset: 0, truncated: false, matches: [{ id: 42, name: "batch_read", start_ns: 20_000, dur_ns: 5_000, track: 3 }] };
    const h = harness(() => cpuAnswer(), search);
    await h.view.start();
    const row = Array.from(h.view.el.querySelectorAll("[data-testid=ov-host-ops-row]")).find((r) => r.textContent?.startsWith("batch_read"));
    row?.querySelector<HTMLButtonElement>("[data-testid=ov-open-trace]")?.click();
    await until(() => h.navigations.length > 0);
    expect(h.navigations[0]).toEqual(["trace", { start: "15000", end: "30000", lk: "42", q: "batch_read" }]);
    expect(h.requests.find((u) => u.pathname.endsWith("/trace/search"))?.searchParams.get("q")).toBe("batch_read");
  });

  it("says when a search finds no event", async () => {
    const h = harness(() => cpuAnswer(), { query: "x", total: 0, offset: 0, truncated: false, matches: [] });
    await h.view.start();
    h.view.el.querySelector<HTMLButtonElement>("[data-testid=ov-host-ops-row] [data-testid=ov-open-trace]")?.click();
    const status = h.view.el.querySelector("[data-testid=ov-status]");
    await until(() => (status?.textContent ?? "").startsWith("No event"));
    expect(h.navigations).toEqual([]);
  });

  it("keeps step_name, batch_size and group_by in the deep link and refetches with them", async () => {
    const h = harness((url) => ({ ...cpuAnswer(), step_name: url.searchParams.get("step_name") ?? undefined }), null, "batch_size=8");
    await h.view.start();
    expect(overviewRequests(h)[0].searchParams.get("batch_size")).toBe("8");
    const el = h.view.el;
    const stepName = el.querySelector<HTMLInputElement>("[data-testid=ov-step-name]") as HTMLInputElement;
    expect(el.querySelector<HTMLInputElement>("[data-testid=ov-batch-size]")?.value).toBe("8");
    stepName.value = "train";
    stepName.dispatchEvent(new Event("change"));
    await until(() => overviewRequests(h).length === 2);
    expect(h.params.at(-1)).toEqual({ step_name: "train", batch_size: "8", group_by: undefined });
    expect(overviewRequests(h)[1].searchParams.get("step_name")).toBe("train");
    const group = el.querySelector<HTMLSelectElement>("[data-testid=ov-group-by]") as HTMLSelectElement;
    group.value = "shapes";
    group.dispatchEvent(new Event("change"));
    await until(() => overviewRequests(h).length === 3);
    expect(overviewRequests(h)[2].searchParams.get("group_by")).toBe("shapes");
    const batch = el.querySelector<HTMLInputElement>("[data-testid=ov-batch-size]") as HTMLInputElement;
    batch.value = "2.5";
    batch.dispatchEvent(new Event("change"));
    expect(batch.getAttribute("aria-invalid")).toBe("true");
    expect(overviewRequests(h).length).toBe(3);
    h.view.applyParams(new URLSearchParams("step_name=train&group_by=shapes&batch_size=64"));
    await until(() => overviewRequests(h).length === 4);
    expect(batch.value).toBe("64");
    h.view.destroy();
  });

  it("asks for an annotation when the profile has no step markers", async () => {
    const message = "no step markers: name an annotation (step_name=…) that wraps each step";
    const answer = cpuAnswer();
    const host = answer.per_host[0];
    answer.per_host = [{ ...host, steps: { source_kind: "none", source: "none", message, rows: [] }, steady: undefined }];
    const h = harness(() => answer);
    await h.view.start();
    const el = h.view.el;
    expect(el.querySelector("[data-testid=ov-no-steps]")?.textContent).toBe(message);
    expect(el.querySelector("[data-testid=ov-step-name]")?.classList.contains("ov-attention")).toBe(true);
    expect(el.querySelector("[data-testid=ov-step-chart]")).toBeNull();
    expect(el.querySelector("[data-testid=ov-breakdown-chart] li")?.textContent).toContain("whole capture");
    expect(el.querySelector("[data-testid=ov-card-median] [data-absent]")?.getAttribute("title")).toBe(message);
  });

  it("shows the findings of a host with logs only (no trace), without links and without trace sections", async () => {
    const answer: OverviewAnswer = { ...cpuAnswer(), per_host: [], warnings: ["no trace file for these hosts"] };
    answer.findings = [{ ...answer.findings[0], kind: "recompile", link: { search: "Compile", host: "worker0" } }];
    const requests: string[] = [];
    const client = new ProfscopeClient(BASE, async (input) => {
      const url = new URL(input);
      requests.push(url.pathname);
      if (url.pathname.endsWith("/trace/meta")) return json({ message: "host 'xla' has no trace file" }, 404);
      return json(answer);
    });
    const view = new OverviewView({ client, subject: { run: "job", session: "xla", hosts: ["worker0"] }, hosts: [], params: new URLSearchParams(), setParams: () => {}, navigate: () => {}, signal: new AbortController().signal });
    await view.start();
    expect(requests.some((p) => p.endsWith("/overview"))).toBe(true);
    // told by /runs that the hosts have no trace, the view does not even ask for one
    const logsOnly = { name: "xla", files: [], tools: ["xla", "overview"] };
    requests.length = 0;
    const told = new OverviewView({ client, subject: { run: "job", session: "xla", hosts: ["xla"] }, hosts: [logsOnly], params: new URLSearchParams(), setParams: () => {}, navigate: () => {}, signal: new AbortController().signal });
    await told.start();
    expect(requests.map((p) => p.split("/").at(-1))).toEqual(["overview"]);
    expect(view.el.querySelector("[data-testid=ov-error]")).toBeNull();
    expect(view.el.querySelector("[data-testid=ov-finding-recompile]")).not.toBeNull();
    expect(view.el.querySelector("[data-testid=ov-finding-link]")).toBeNull();
    expect(view.el.querySelector("[data-testid=ov-warnings]")?.textContent).toBe("no trace file for these hosts");
    expect(view.el.querySelector("[data-testid=ov-host], [data-testid=ov-tables]")).toBeNull();
  });

  it("compares ranks when several hosts are selected", async () => {
    const h = harness(() => gpuAnswer());
    await h.view.start();
    const el = h.view.el;
    const ranks = Array.from(el.querySelectorAll("[data-testid=ov-ranks-table] tbody tr")).map((r) => Array.from(r.querySelectorAll("td")).map((td) => td.textContent));
    expect(ranks).toEqual([
      ["rank-0", "1", "600 ms", "600 ms", "75%", "25%"],
      ["rank-1", "1", "630 ms", "630 ms", "75%", "25%"],
    ]);
    expect(el.querySelector("[data-testid=ov-straggler-line]")?.textContent).toContain("rank-1 is the rank the others wait for");
    el.querySelector<HTMLButtonElement>("[data-testid=ov-rank-heatmap] [data-testid=ov-open-trace]")?.click();
    expect(h.navigations).toEqual([["trace", { start: "50000000", end: "680000000" }]]);
    expect(el.querySelectorAll("details[data-testid=ov-host]").length).toBe(2);
    expect(el.querySelector("[data-testid=ov-no-findings]")).not.toBeNull();
    const shapes = el.querySelector("[data-testid=ov-host-ops-table] thead")?.textContent;
    expect(shapes).toContain("Input shapes");
    expect(el.querySelector("[data-testid=ov-kernels] [data-testid=ov-listing]")?.textContent).toBe("2 kernels");
  });
});
