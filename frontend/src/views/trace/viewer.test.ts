// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from "vitest";
import { MockApi } from "../../../test/mock/api.ts";
import { makeTrace } from "../../../test/mock/trace.ts";
import { ProfscopeClient } from "../../api/client.ts";
import type { MetaTrack, TraceMeta } from "../../api/types.ts";
import type { ViewContext } from "../view.ts";
import { initiallyCollapsed, TraceViewer } from "./viewer.ts";

function withThreads(meta: TraceMeta, n: number): TraceMeta {
  const extra: MetaTrack[] = Array.from({ length: n }, (_, i) => ({
    id: 100 + i,
    section: 0,
    name: `thread ${i}`,
    kind: "thread",
    sort_index: 10 + i,
    max_depth: 0,
    host: 0,
  }));
  return { ...meta, tracks: [...meta.tracks, ...extra] };
}

describe("initiallyCollapsed", () => {
  const meta = makeTrace(1, 1).meta;

  it("keeps a few host threads open", () => {
    expect(initiallyCollapsed(meta)).toEqual([]);
  });

  it("collapses a crowded host section when there is a device to see", () => {
    expect(initiallyCollapsed(withThreads(meta, 20))).toEqual([0]);
  });

  it("never collapses a CPU-only trace", () => {
    const cpuOnly = { ...withThreads(meta, 20), sections: meta.sections.filter((s) => s.kind === "cpu") };
    expect(initiallyCollapsed(cpuOnly)).toEqual([]);
  });
});

describe("TraceViewer", () => {
  const trace = makeTrace(3, 4);
  let viewer: TraceViewer | null = null;
  afterEach(() => {
    viewer?.destroy();
    viewer?.el.remove();
  });

  async function open(link: string, setParams: ViewContext["setParams"] = () => {}) {
    const api = new MockApi(trace);
    const ctx: ViewContext = {
      client: new ProfscopeClient("http://tb.local/data/plugin/profscope/", api.fetch),
      subject: { run: "resnet", session: "s", hosts: ["worker0"] },
      hosts: [],
      params: new URLSearchParams(link),
      setParams,
      navigate: () => {},
      signal: new AbortController().signal,
    };
    viewer = new TraceViewer(ctx);
    document.body.append(viewer.el);
    await viewer.start();
    await new Promise((r) => setTimeout(r, 0));
    const find = (id: string) => viewer?.el.querySelector(`[data-testid=${id}]`) as HTMLElement;
    const key = (k: string) => document.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true }));
    return { api, find, key };
  }

  it("builds the toolbar, timeline, readouts and details with their test ids", async () => {
    const { find } = await open("");
    for (const id of ["trace-canvas", "trace-axis", "measure", "trace-status", "flows-toggle", "search-input", "search-count", "search-prev", "search-next", "help-button", "help-overlay", "details-panel"]) {
      expect(find(id), id).not.toBeNull();
    }
    expect(["select", "pan", "zoom", "timing"].map((t) => find(`tool-${t}`).getAttribute("aria-checked"))).toEqual(["true", "false", "false", "false"]);
    expect(find("trace-canvas").dataset.tool).toBe("select");
  });

  it("selects the linked event and shows its details", async () => {
    const { api, find } = await open("sel=5");
    expect(api.requests.some((r) => r.includes("trace/event") && r.includes("id=5"))).toBe(true);
    expect(find("details-name").textContent).toBe(trace.events[5].name);
  });

  it("takes the tool and help keys until it is destroyed", async () => {
    const { find, key } = await open("");
    key("3");
    expect(find("tool-zoom").getAttribute("aria-checked")).toBe("true");
    expect(find("trace-canvas").dataset.tool).toBe("zoom");
    key("?");
    expect(find("help-overlay").hidden).toBe(false);
    key("Escape");
    expect(find("help-overlay").hidden).toBe(true);
    viewer?.destroy();
    key("1");
    expect(find("trace-canvas").dataset.tool).toBe("zoom");
  });

  it("says on the canvas while the link is due, and that it is written", async () => {
    const written: Record<string, string | undefined>[] = [];
    const { find } = await open("", (params) => written.push(params));
    await new Promise((r) => setTimeout(r, 300));
    const before = written.length;
    viewer?.["writeLink"](); // as each drawn frame does
    expect(find("trace-canvas").dataset.linkPending).toBe("1");
    expect(written.length).toBe(before);
    await until(() => find("trace-canvas").dataset.linkPending === "0");
    expect(written.length).toBe(before + 1);
    expect(written[before].start).toBeDefined();
  });

  /** Until `condition` holds (the viewer's requests and their answers are promises). */
  async function until(condition: () => boolean): Promise<void> {
    for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(condition()).toBe(true);
  }

  it("names the trace's version in tile URLs and moves to a new version when a tile's is gone", async () => {
    const versioned = makeTrace(3, 4);
    versioned.meta.version = "v1";
    const api = new MockApi(versioned);
    // The server's check: a tile of another version than the one it holds is a 409.
    const fetchLike = async (input: string, init?: RequestInit) => {
      const url = new URL(input);
      if (url.pathname.endsWith("trace/tile") && url.searchParams.get("v") !== versioned.meta.version) {
        return new Response("Conflict: version gone", { status: 409 });
      }
      return api.fetch(input, init);
    };
    const ctx: ViewContext = {
      client: new ProfscopeClient("http://tb.local/data/plugin/profscope/", fetchLike),
      subject: { run: "resnet", session: "s", hosts: ["worker0"] },
      hosts: [],
      params: new URLSearchParams(),
      setParams: () => {},
      navigate: () => {},
      signal: new AbortController().signal,
    };
    const shown = new TraceViewer(ctx);
    viewer = shown;
    document.body.append(shown.el);
    await shown.start();
    const root = { level: versioned.meta.tile.max_level, index: 0 };
    const tiles = () => api.requests.filter((r) => r.includes("trace/tile")).map((r) => new URL(r, "http://tb.local").searchParams.get("v"));
    const metas = () => api.requests.filter((r) => r.includes("trace/meta")).length;
    shown["cache"].want([root]);
    await until(() => shown["cache"].has(root.level, root.index));
    expect(tiles()).toEqual(["v1"]);

    versioned.meta.version = "v2"; // the entry was rebuilt
    shown["cache"].clear();
    shown["cache"].want([root]);
    await until(() => metas() === 2 && shown["timeline"].meta?.version === "v2");
    shown["cache"].want([root]);
    await until(() => shown["cache"].has(root.level, root.index));
    expect(tiles()).toEqual(["v1", "v2"]);
  });

  it("names all of one viewer's searches with one searcher id of its own", async () => {
    const { api } = await open("");
    const first = viewer as TraceViewer;
    await first["search"].searchFor("sgemm");
    await first["search"].searchFor("conv");
    const searchers = () => api.requests.filter((r) => r.includes("trace/search")).map((r) => new URL(r, "http://tb.local").searchParams.get("client"));
    expect(searchers()).toHaveLength(2);
    expect(searchers()[0]).toBeTruthy();
    expect(new Set(searchers()).size).toBe(1);
    expect(first["searcher"]).toBe(searchers()[0]);
    const second = new TraceViewer({ ...first["ctx"] });
    expect(second["searcher"]).not.toBe(first["searcher"]);
    second.destroy();
  });
});
