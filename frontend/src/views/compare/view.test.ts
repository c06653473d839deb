// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { CompareAnswer } from "../../api/answers.gen.ts";
import { ProfscopeClient } from "../../api/client.ts";
import type { ViewContext } from "../view.ts";
import { rooflineAnswer } from "../roofline/fixture.ts";
import { demoAnswer, runsAnswer, shortAnswer } from "./test_answers.ts";
import { CompareView, filterRows, opListing } from "./view.ts";

const BASE = "http://tb.local/data/plugin/profscope/";
const RUN = "pytorch_cpu_slow_input";
const TWIN = "pytorch_cpu_prefetch_input";

interface Harness {
  view: CompareView;
  requests: URL[];
  params: Record<string, string | undefined>[];
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

/** The view over a fetch answering runs, trace/meta (`ingesting` 202s first), compare and, for the
 * runs `roofline` lists, the Roofline fixture (others: 404). */
function harness(answer: (url: URL) => CompareAnswer | Response, link = "", ingesting = 0, hosts = ["worker0"], roofline: string[] = []): Harness {
  const requests: URL[] = [];
  const polls = new Map<string, number>();
  const client = new ProfscopeClient(BASE, async (input) => {
    const url = new URL(input);
    requests.push(url);
    if (url.pathname.endsWith("/runs")) return json(runsAnswer());
    if (url.pathname.endsWith("/trace/meta")) {
      const key = url.searchParams.get("run") ?? "";
      const n = polls.get(key) ?? 0;
      polls.set(key, n + 1);
      return n < ingesting ? json({ bytes_done: 1, bytes_total: 2, stage: "events", files: [] }, 202) : json({});
    }
    if (url.pathname.endsWith("/compare")) {
      const body = answer(url);
      return body instanceof Response ? body : json(body);
    }
    if (url.pathname.endsWith("/roofline") && roofline.includes(url.searchParams.get("run") ?? "")) return json(rooflineAnswer());
    return json({ message: "not found" }, 404);
  });
  const params: Harness["params"] = [];
  const ctx: ViewContext = {
    client,
    subject: { run: RUN, session: "worker0", hosts },
    hosts: [],
    params: new URLSearchParams(link),
    setParams: (p) => params.push(p),
    navigate: () => undefined,
    signal: new AbortController().signal,
  };
  const view = new CompareView(ctx);
  document.body.replaceChildren(view.el);
  return { view, requests, params };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

const q = (h: Harness, selector: string) => h.view.el.querySelector(selector) as HTMLElement | null;
const texts = (h: Harness, selector: string) => [...h.view.el.querySelectorAll(selector)].map((e) => e.textContent ?? "");
const compares = (h: Harness) => h.requests.filter((u) => u.pathname.endsWith("/compare"));
const LINK = `base_run=${TWIN}&base_session=worker0&base_host=worker0`;

describe("picking the base", () => {
  it("asks for a base, offers the runs with a trace, and compares once one is picked", async () => {
    const h = harness(() => demoAnswer());
    void h.view.start();
    await until(() => q(h, "[data-testid=cmp-prompt]") !== null);
    const runSelect = q(h, "[data-testid=cmp-base-run]") as HTMLSelectElement;
    expect([...runSelect.options].filter((o) => !o.disabled).map((o) => o.value)).toEqual([RUN, TWIN, "two_sessions"]);
    expect(compares(h)).toEqual([]);
    runSelect.value = TWIN;
    runSelect.dispatchEvent(new Event("change"));
    expect(h.params.at(-1)).toMatchObject({ base_run: TWIN, base_session: "worker0", base_host: "worker0" });
    await until(() => q(h, "[data-testid=cmp-shift]") !== null);
    const url = compares(h)[0];
    expect(Object.fromEntries(url.searchParams)).toEqual({ run: RUN, session: "worker0", host: "worker0", base_run: TWIN, base_session: "worker0", base_host: "worker0" });
    expect((q(h, "[data-testid=cmp-base-host]") as HTMLSelectElement).value).toBe("worker0");
  });

  it("changes host and session within a picked run", async () => {
    const h = harness(() => demoAnswer(), "base_run=two_sessions&base_session=s1&base_host=rank-0");
    void h.view.start();
    await until(() => compares(h).length === 1);
    const session = q(h, "[data-testid=cmp-base-session]") as HTMLSelectElement;
    expect([...session.options].map((o) => o.textContent)).toEqual(["first", "second"]);
    session.value = "s2";
    session.dispatchEvent(new Event("change"));
    expect(h.params.at(-1)).toMatchObject({ base_run: "two_sessions", base_session: "s2", base_host: "worker0" });
    const host = q(h, "[data-testid=cmp-base-host]") as HTMLSelectElement;
    host.value = "rank-1";
    host.dispatchEvent(new Event("change"));
    expect(h.params.at(-1)).toMatchObject({ base_session: "s2", base_host: "rank-1" });
    await until(() => compares(h).length === 3);
  });
});

describe("the comparison", () => {
  it("waits for both profiles, then shows the difference with its spread, the steps and the advice", async () => {
    const h = harness(() => demoAnswer(), `${LINK}&step_name=train`, 2);
    void h.view.start();
    await until(() => q(h, "[data-testid=ingest-progress]") !== null);
    await until(() => q(h, "[data-testid=cmp-shift]") !== null);
    const metaRuns = h.requests.filter((u) => u.pathname.endsWith("/trace/meta")).map((u) => u.searchParams.get("run"));
    expect(new Set(metaRuns)).toEqual(new Set([RUN, TWIN]));
    expect(compares(h)[0].searchParams.get("step_name")).toBe("train");
    expect((q(h, "[data-testid=cmp-step-name]") as HTMLInputElement).value).toBe("train");
    expect(q(h, "[data-testid=cmp-shift-value]")!.textContent).toContain("+14.1 ms (95% interval +12.8 ms to +16.5 ms)");
    expect(q(h, "[data-testid=cmp-ratio-value]")!.textContent).toContain("3.3× (3.09× to 3.59×)");
    expect(q(h, "[data-testid=cmp-verdict]")!.textContent).toContain("longer by 14.1 ms");
    expect(q(h, "[data-testid=cmp-cautions]")).toBeNull();
    expect(texts(h, "[data-testid=cmp-stats] tr[data-stat=Median] td")).toEqual(["5.99 ms", "20 ms", "+14.1 ms"]);
    expect(q(h, "[data-testid=cmp-strip-canvas]")!.textContent).toContain("run step 3: 23 ms");
    expect(q(h, "[data-testid=cmp-advice]")!.textContent).toContain("Confirm the gain outside the profiler");
    expect(q(h, "[data-testid=cmp-kernels-absent]")!.getAttribute("title")).toContain("CPU-only");
    expect(q(h, "[data-testid=cmp-hlo_ops]")).toBeNull();
  });

  it("lists the ops that changed, filters them by change, sorts and downloads them", async () => {
    const h = harness(() => demoAnswer(), LINK);
    void h.view.start();
    await until(() => q(h, "[data-testid=cmp-host_ops-table]") !== null);
    const names = () => texts(h, "[data-testid=cmp-host_ops-row] td[data-column=name]");
    // the route's order: the largest difference first, whichever its sign
    expect(names()).toEqual(["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "aten::mm", "aten::addmm", "batch_read"]);
    expect(q(h, "[data-testid=cmp-host_ops] [data-testid=cmp-listing]")!.textContent).toBe("showing 4 of 5 host ops, the largest difference first · 1 added, 1 removed, 1 faster, 1 slower, 1 same");
    (q(h, "[data-testid=cmp-host_ops] [data-sort=delta]") as HTMLButtonElement).click();
    expect(names()).toEqual(["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "aten::addmm", "batch_read", "aten::mm"]);
    const filter = q(h, "[data-testid=cmp-host_ops] [data-testid=cmp-filter]") as HTMLSelectElement;
    filter.value = "removed";
    filter.dispatchEvent(new Event("change"));
    expect(names()).toEqual(["batch_read"]);
    filter.value = "all";
    filter.dispatchEvent(new Event("change"));
    (q(h, "[data-testid=cmp-host_ops] [data-sort=name]") as HTMLButtonElement).click();
    expect(names()[0]).toBe("aten::addmm");
    expect(q(h, "[data-testid=cmp-host_ops-csv]")!.getAttribute("download")).toBe(`compare_host_ops_${RUN}_vs_${TWIN}.csv`);
    // in priority order; a category neither side can show is named below the table, not listed as 0
    const labels = () => texts(h, "[data-testid=cmp-breakdown-row] td[data-column=label]");
    expect(labels()).toEqual(["Input", "Host compute", "Compilation"]);
    expect(q(h, "[data-testid=cmp-unseen]")!.textContent).toContain("Not observed on either side: Device compute — device activity not observed: CPU-only");
    (q(h, "[data-testid=cmp-breakdown] [data-sort=label]") as HTMLButtonElement).click();
    expect(labels()).toEqual(["Compilation", "Host compute", "Input"]);
  });

  it("states the cautions first and gives no interval where the steps allow none", async () => {
    const h = harness(() => shortAnswer(), LINK);
    void h.view.start();
    await until(() => q(h, "[data-testid=cmp-shift]") !== null);
    const first = h.view.el.querySelector(".cmp-body > section") as HTMLElement;
    expect(first.dataset.testid).toBe("cmp-cautions");
    expect([...h.view.el.querySelectorAll("[data-testid=cmp-caution]")].map((c) => (c as HTMLElement).dataset.kind)).toEqual(["few_steps", "device"]);
    expect(q(h, "[data-testid=cmp-shift-value]")!.textContent).toContain("−2 ms (no interval: too few steps)");
    expect(q(h, "[data-testid=cmp-shift-note]")!.textContent).toContain("too few");
    expect(texts(h, "[data-testid=cmp-stats] tr[data-stat=p10] td")).toEqual(["12 ms", "too few steps", ""]);
    expect(texts(h, "[data-testid=cmp-stats] tr[data-stat=Devices] td").slice(0, 2)).toEqual(["1 × Tesla V100-DGXS-32GB", "none (CPU only)"]);
  });

  it("says why there is no shift when a side has no steps", async () => {
    const answer = demoAnswer();
    delete answer.shift;
    answer.shift_reason = "no steady steps on the run: the step-time difference needs step markers on both sides";
    const h = harness(() => answer, LINK);
    void h.view.start();
    await until(() => q(h, "[data-testid=cmp-shift-reason]") !== null);
    expect(q(h, "[data-testid=cmp-shift-reason]")!.textContent).toContain("needs step markers");
  });

  it("shows the server's message when the comparison fails, and notes a merged subject", async () => {
    const failing = harness(() => new Response("base_host: compare takes one host per side", { status: 400 }), LINK);
    void failing.view.start();
    await until(() => q(failing, "[data-testid=cmp-error]") !== null);
    expect(q(failing, "[data-testid=cmp-error]")!.textContent).toContain("one host per side");
    const merged = harness(() => demoAnswer(), LINK, 0, ["worker0", "worker1"]);
    void merged.view.start();
    await until(() => q(merged, "[data-testid=cmp-one-host]") !== null);
    expect(compares(merged)[0].searchParams.get("host")).toBe("worker0");
  });

  it("follows the deep link when it changes under the open view", async () => {
    const h = harness(() => demoAnswer(), LINK);
    void h.view.start();
    await until(() => compares(h).length === 1);
    h.view.applyParams(new URLSearchParams(`${LINK}&base_step_name=iter`));
    await until(() => compares(h).length === 2);
    expect(compares(h)[1].searchParams.get("base_step_name")).toBe("iter");
    expect((q(h, "[data-testid=cmp-base-step-name]") as HTMLInputElement).value).toBe("iter");
    h.view.applyParams(new URLSearchParams(`${LINK}&base_step_name=iter`));
    expect(compares(h).length).toBe(2);
  });
});

describe("roofline deltas", () => {
  it("joins both runs' roofline answers under the op tables, or says why it cannot", async () => {
    const both = harness(() => demoAnswer(), LINK, 0, ["worker0"], [RUN, TWIN]);
    void both.view.start();
    await until(() => q(both, "[data-testid=cmp-roofline]") !== null);
    const rooflines = both.requests.filter((u) => u.pathname.endsWith("/roofline")).map((u) => u.searchParams.get("run"));
    expect(new Set(rooflines)).toEqual(new Set([RUN, TWIN]));
    // the fixture on both sides: its five ops, each once
    expect(texts(both, "[data-testid=cmp-roofline-row] [data-column=name]")).toHaveLength(5);
    expect(q(both, "[data-testid=cmp-roofline]")?.textContent).toContain("5 ops in both runs");
    const one = harness(() => demoAnswer(), LINK, 0, ["worker0"], [RUN]);
    void one.view.start();
    await until(() => q(one, "[data-testid=cmp-roofline-absent]") !== null);
    expect(q(one, "[data-testid=cmp-roofline-absent]")?.textContent).toMatch(/^Roofline deltas: not observed — the base's roofline: /);
  });
});

describe("op filters", () => {
  it("keeps what changed by default and counts every change in the listing", () => {
    const table = demoAnswer().host_ops;
    expect(filterRows(table.rows, "changed").map((r) => r.change)).toEqual(["added", "faster", "slower", "removed"]);
    expect(filterRows(table.rows, "same").map((r) => r.name)).toEqual(["aten::relu"]);
    expect(opListing({ ...table, total: 300 }, 4, "host ops")).toContain("of 300 host ops (the 5 largest differences are listed)");
  });
});
