import { describe, expect, it } from "vitest";
import type { Tile } from "../../api/tile.ts";
import { makeTrace } from "../../../test/mock/trace.ts";
import { Layout, PINNED_SECTION, ROW_HEIGHT, TRACK_PAD } from "./layout.ts";
import {
  activityTracks,
  applyPreset,
  busySpan,
  choiceParams,
  emptyChoice,
  readChoice,
  readFolded,
  reveal,
  setDepthLimit,
  toggleHidden,
  togglePin,
  trackKind,
} from "./tracks.ts";

// Host CPU: thread 100 (python) depth 3, thread 101 (dataloader); GPU 0: stream 7, a counter.
const meta = makeTrace(2, 3).meta;
const sectionOf = (id: number) => meta.sections.find((s) => s.id === meta.tracks[id].section);
// The same with thread 101 as an XPlane's line of Python frames.
const withPython = { ...meta, tracks: meta.tracks.map((t) => (t.id === 1 ? { ...t, name: "python3" } : t)) };
// The same as a Kineto trace recorded with_stack: thread 100's Python frames on a track of their own
// below it, and a thread of frames alone in the GPU's process (pid 0).
const kineto = {
  ...meta,
  tracks: [
    ...meta.tracks,
    { ...meta.tracks[0], id: 4, name: `${meta.tracks[0].name} · Python` },
    { ...meta.tracks[0], id: 5, section: meta.tracks[2].section, name: "thread 0 (python3) · Python" },
  ],
};
const order = (l: Layout) => l.sections.map((s) => [s.section.name, s.tracks.map((t) => t.track.id)]);

describe("track choice", () => {
  it("tells the kinds of tracks apart", () => {
    expect(meta.tracks.map((t) => trackKind(t, sectionOf(t.id)))).toEqual(["host", "host", "device", "device"]);
    expect(trackKind(withPython.tracks[1], sectionOf(1))).toBe("python");
    const kinetoSection = (id: number) => kineto.sections.find((s) => s.id === kineto.tracks[id].section);
    expect(kineto.tracks.map((t) => trackKind(t, kinetoSection(t.id)))).toEqual(["host", "host", "device", "device", "python", "python"]);
    const line = { ...meta.tracks[2], name: "XLA Ops", kind: "line" };
    expect(trackKind(line, sectionOf(2))).toBe("xla");
  });

  it("brings the device first in one preset, and hides the Python stacks in another", () => {
    const first = applyPreset(emptyChoice(), "device-first", meta);
    expect(first.pinned).toEqual([2, 3]);
    expect(order(new Layout(meta, new Set(), first))).toEqual([
      ["Pinned", [2, 3]],
      ["Host CPU", [0, 1]],
    ]);
    const noPython = applyPreset(first, "hide-python", meta);
    expect(order(new Layout(withPython, new Set(), noPython))[1]).toEqual(["Host CPU", [0]]);
    expect(applyPreset(noPython, "all", meta)).toEqual(emptyChoice());
    // A Kineto trace's Python tracks go, its op threads and streams stay; none of them is pinned.
    expect(applyPreset(emptyChoice(), "device-first", kineto).pinned).toEqual([2, 3]);
    expect(order(new Layout(kineto, new Set(), applyPreset(emptyChoice(), "hide-python", kineto)))).toEqual([
      ["Host CPU", [0, 1]],
      ["GPU 0", [2, 3]],
    ]);
  });

  it("filters by name, hides and pins single tracks, and leaves out the sections left empty", () => {
    const c = { ...emptyChoice(), filter: "stream" };
    expect(order(new Layout(meta, new Set(), c))).toEqual([["GPU 0", [2]]]);
    const hidden = toggleHidden(togglePin(emptyChoice(), 1), 1);
    expect(hidden.pinned).toEqual([]);
    expect(order(new Layout(meta, new Set(), hidden))[0]).toEqual(["Host CPU", [0]]);
    expect(toggleHidden(hidden, 1).hidden.size).toBe(0);
    const pinned = new Layout(meta, new Set([PINNED_SECTION]), togglePin(emptyChoice(), 1));
    expect(pinned.sections[0].collapsed).toBe(true);
    expect(pinned.tracks.get(1)?.home.name).toBe("Host CPU");
  });

  it("limits a track's depth: fewer rows, clicks and rows below it clamped to the last", () => {
    const full = new Layout(meta, new Set());
    const limited = new Layout(meta, new Set(), setDepthLimit(emptyChoice(), 0, 1));
    const t = limited.tracks.get(0);
    expect(t?.rows).toBe(1);
    expect(t?.height).toBe(ROW_HEIGHT + 2 * TRACK_PAD);
    expect(full.totalHeight - limited.totalHeight).toBe(2 * ROW_HEIGHT);
    expect(limited.rowAt((t?.top ?? 0) + 0.5 * ROW_HEIGHT)).toMatchObject({ kind: "track", depth: 0 });
    // Where depth 1 was, the next track begins.
    expect(limited.rowAt((t?.top ?? 0) + 1.5 * ROW_HEIGHT)).toMatchObject({ kind: "track", track: { track: { id: 1 } } });
    expect(limited.yOf(0, 2)).toBe((t?.top ?? 0) + ROW_HEIGHT / 2);
    expect(setDepthLimit(setDepthLimit(emptyChoice(), 0, 1), 0, null).depthLimit.size).toBe(0);
  });

  it("reveals a hidden track a jump lands on", () => {
    const c = { ...applyPreset(emptyChoice(), "hide-python", meta), filter: "thread" };
    const shown = reveal(c, withPython.tracks[1], sectionOf(1));
    expect(shown.hiddenKinds.has("python")).toBe(false);
    expect(shown.filter).toBe("");
    expect(reveal(shown, withPython.tracks[1], sectionOf(1))).toBe(shown);
  });

  it("round-trips through the deep link, folded sections included", () => {
    const c = setDepthLimit(toggleHidden(applyPreset({ ...emptyChoice(), filter: "gpu" }, "device-first", meta), 1), 0, 4);
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(choiceParams({ ...c, hiddenKinds: new Set(["python"]) }, [0]))) if (v !== undefined) p.set(k, v);
    expect(p.toString()).toBe("tc=0&tf=gpu&tk=python&th=1&tp=2%2C3&td=0%3A4");
    const back = readChoice(p);
    expect(back).toEqual({ ...c, hiddenKinds: new Set(["python"]) });
    expect(readFolded(p)).toEqual([0]);
    expect(choiceParams(emptyChoice(), []).tc).toBe("-");
    expect(readFolded(new URLSearchParams("tc=-"))).toEqual([]);
    expect(readFolded(new URLSearchParams())).toBeNull();
  });
});

describe("zoom to activity", () => {
  const tile = {
    startNs: 1000,
    events: { n: 3, track: new Uint32Array([0, 2, 2]), start: new Float32Array([0, 50, 300]), dur: new Float32Array([900, 10, 20]) },
    summaries: { n: 1, track: new Uint32Array([2]), start: new Float32Array([400]), width: new Float32Array([5]) },
  } as unknown as Tile;

  it("spans the device's events and summaries, or the selection's section's", () => {
    expect([...activityTracks(meta, null)]).toEqual([2]);
    expect([...activityTracks(kineto, null)]).toEqual([2]); // not the Python frames in GPU 0's process
    expect(busySpan(tile, activityTracks(meta, null))).toEqual({ start: 1050, end: 1405 });
    expect(busySpan(tile, activityTracks(meta, 0))).toEqual({ start: 1000, end: 1900 });
    expect(busySpan(tile, new Set([9]))).toBeNull();
  });
});
