// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { buildTile, encodeTile, eventDetails, makeTrace, summarize } from "../../../test/mock/trace.ts";
import type { ProfscopeClient } from "../../api/client.ts";
import { decodeTile } from "../../api/tile.ts";
import type { ViewContext } from "../view.ts";
import { tileWidthNs } from "./levels.ts";
import { LABEL_WIDTH } from "./render.ts";
import type { EventHit } from "./scene.ts";
import { matchesInSelection, pinnedFlowsOf, resolvePinnedFlows, SelectionManager } from "./selection.ts";
import { Timeline } from "./timeline.ts";

const trace = makeTrace(3, 4);
const kernel = trace.events.find((e) => e.category === "kernel") ?? trace.events[0];
const launch = trace.events[trace.flows.find((f) => f.dst === kernel.id)?.src ?? 0];

const settle = () => new Promise((r) => setTimeout(r, 0));

function setup() {
  const requests: string[] = [];
  const client = {
    event: async (_s: unknown, id: number) => {
      requests.push(`event ${id}`);
      return eventDetails(trace, id);
    },
    summaryIds: async (_s: unknown, ids: number[]) => {
      requests.push(`summary ${ids.join(",")}`);
      return summarize(trace, ids.map((id) => trace.events[id]));
    },
    search: async (_s: unknown, pattern: string) => {
      requests.push(`search ${pattern}`);
      const named = trace.events.filter((e) => new RegExp(pattern).test(e.name));
      const matches = named.map((e) => ({ id: e.id, name: e.name, track: e.track, depth: e.depth, start_ns: e.start, dur_ns: e.dur }));
      return { query: pattern, total: matches.length, offset: 0, matches, truncated: false };
    },
    summaryRange: async (_s: unknown, start: number, end: number, tracks: number[]) => {
      requests.push(`range ${start}-${end} on ${tracks.join(",")}`);
      return summarize(trace, trace.events.filter((e) => tracks.includes(e.track) && e.start < end && e.start + e.dur > start));
    },
  } as unknown as ProfscopeClient;
  const ctx = { client, subject: { run: "r", session: "s", hosts: ["h"] }, signal: new AbortController().signal } as unknown as ViewContext;
  const tl = new Timeline({ redraw: () => {}, relayout: () => {} });
  tl.width = LABEL_WIDTH + 1000;
  tl.height = 300;
  tl.open(trace.meta, []);
  const revealed: number[][] = [];
  const sel = new SelectionManager(ctx, tl, { redraw: () => {}, revealTrack: (t, d) => revealed.push([t, d]) });
  return { sel, tl, requests, revealed };
}

function hitOf(id: number): EventHit {
  const e = trace.events[id];
  return { id, name: e.name, track: e.track, depth: e.depth, startNs: e.start, durNs: e.dur };
}

describe("selection flows", () => {
  it("pins the flows of the selected event, then finds the other end's row in the tiles drawn", () => {
    const flows = pinnedFlowsOf(eventDetails(trace, kernel.id));
    expect(flows).toHaveLength(1);
    expect(flows[0]).toMatchObject({ otherId: launch.id, otherEnd: "src", srcTrack: launch.track, srcDepth: 0, dstTrack: kernel.track, resolved: false });
    const w = tileWidthNs(trace.meta.tile, 0);
    const index = Math.floor(launch.start / w);
    const tile = decodeTile(encodeTile(buildTile(trace, 0, index)));
    resolvePinnedFlows(flows, [{ tile, from: index * w, to: (index + 1) * w }]);
    expect(flows[0]).toMatchObject({ srcDepth: launch.depth, resolved: true });
    expect(launch.depth).toBe(2);
  });
});

describe("SelectionManager", () => {
  it("selects a clicked event, shows its details and reveals its row", async () => {
    const { sel, requests, revealed } = setup();
    sel.click(hitOf(kernel.id), false);
    expect(sel.selectedBoxes().map((b) => b.id)).toEqual([kernel.id]);
    await settle();
    expect(requests).toEqual([`event ${kernel.id}`]);
    expect(revealed).toEqual([[kernel.track, kernel.depth]]);
    expect(sel.details.el.querySelector("[data-testid=details-name]")?.textContent).toBe(kernel.name);
    expect(sel.pinnedFlows).toHaveLength(1);
  });

  it("adds and removes events with Ctrl/⌘+click, summarizing several", async () => {
    const { sel, requests } = setup();
    sel.click(hitOf(kernel.id), false);
    sel.click(hitOf(launch.id), true);
    await settle();
    expect(sel.selectedBoxes().map((b) => b.id)).toEqual([kernel.id, launch.id]);
    expect(requests.at(-1)).toBe(`summary ${kernel.id},${launch.id}`);
    expect(sel.details.el.querySelector("[data-testid=summary-table]")).not.toBeNull();
    sel.click(hitOf(kernel.id), true);
    await settle();
    expect(sel.selectedBoxes().map((b) => b.id)).toEqual([launch.id]);
    expect(requests.at(-1)).toBe(`event ${launch.id}`);
    sel.click(null, false);
    expect(sel.selection).toEqual({ kind: "none" });
  });

  it("summarizes a range on tracks, its start only as exact as the drag", async () => {
    const { sel, requests } = setup();
    await sel.selectRange(1000, 3_001_000, [0, 1], 1000);
    expect(requests).toEqual(["range 1000-3001000 on 0,1"]);
    expect(sel.details.el.textContent).toContain("3 ms from 1 µs on 2 tracks");
    expect(sel.coloredRanges()).toEqual([{ start: 1000, end: 3_001_000, color: "#1a73e8", tracks: [0, 1] }]);
  });

  it("marks the selection's span, keeps the last 8 marks, and zooms to the selection", async () => {
    const { sel, tl } = setup();
    for (let i = 0; i < 10; i++) sel.addMark({ start: i, end: i + 1, stepNs: 1 });
    expect(sel.marks.map((m) => m.start)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    sel.click(hitOf(kernel.id), false);
    sel.markSelection();
    expect(sel.lastMark()).toEqual({ start: kernel.start, end: kernel.start + kernel.dur, stepNs: 1 });
    sel.zoomToSelection();
    expect(tl.range.start).toBeLessThan(kernel.start);
    expect(tl.range.end).toBeGreaterThan(kernel.start + kernel.dur);
    expect(tl.range.end - tl.range.start).toBeCloseTo(kernel.dur * 1.2);
    sel.clearAll();
    expect(sel.marks).toEqual([]);
    expect(sel.selection.kind).toBe("none");
  });

  it("selects linked events by id and zooms to them", async () => {
    const { sel, tl, requests } = setup();
    await sel.selectByIds([kernel.id, launch.id], true);
    expect(requests).toEqual([`event ${kernel.id}`, `event ${launch.id}`, `summary ${kernel.id},${launch.id}`]);
    expect(tl.range.start).toBeLessThan(Math.min(kernel.start, launch.start));
  });

  it("picks a summary row: selects that name's events in the range and walks through them", async () => {
    const { sel, tl, requests, revealed } = setup();
    const [lo, hi] = [0, trace.meta.span_ns[1]];
    await sel.selectRange(lo, hi, [kernel.track]);
    const expected = trace.events.filter((e) => e.name === kernel.name && e.track === kernel.track).map((e) => e.id);
    const row = sel.details.el.querySelector(`tr[data-name="${CSS.escape(kernel.name)}"]`) as HTMLElement;
    row.click();
    await settle();
    expect(requests.at(-1)).toMatch(/^search \^/);
    expect(sel.selectedBoxes().map((b) => b.id)).toEqual(expected);
    expect(sel.details.el.querySelector("[data-testid=picked]")?.textContent).toContain(`1 / ${expected.length}`);
    expect(sel.details.el.querySelector("tr.picked")?.getAttribute("data-name")).toBe(kernel.name);
    sel.stepPicked(1);
    const second = trace.events[expected[1 % expected.length]];
    expect(tl.range.start).toBeLessThanOrEqual(second.start);
    expect(tl.range.end).toBeGreaterThanOrEqual(second.start + second.dur);
    expect(revealed.at(-1)).toEqual([second.track, second.depth]);
    sel.clear();
    expect(sel.selectedBoxes()).toEqual([]);
  });
});

describe("matchesInSelection", () => {
  const m = (id: number, track: number, start: number, dur: number) => ({ id, name: "k", track, depth: 1, start_ns: start, dur_ns: dur });
  it("keeps matches on the range's tracks that overlap it, instants within it", () => {
    const got = matchesInSelection([m(1, 0, 0, 10), m(2, 0, 10, 5), m(3, 1, 12, 1), m(4, 0, 20, 0), m(5, 0, 21, 0)], { kind: "range", start: 10, end: 20, tracks: [0] });
    expect(got.map((b) => b.id)).toEqual([2, 4]);
  });
  it("keeps the selected events of a selection of events", () => {
    const events = [{ id: 2, track: 0, depth: 0, startNs: 0, durNs: 1 }];
    expect(matchesInSelection([m(1, 0, 0, 1), m(2, 0, 5, 1)], { kind: "events", events }).map((b) => b.depth)).toEqual([1]);
  });
});
