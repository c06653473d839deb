import { describe, expect, it } from "vitest";
import { buildTile, encodeTile, type MockTrace } from "../../../test/mock/trace.ts";
import { decodeTile } from "../../api/tile.ts";
import { colorIndex, colorOf } from "./colors.ts";
import { ROW_HEIGHT } from "./layout.ts";
import { BOX_HEIGHT, fillBands, paintPieces, pixel, type Raster, replicateRows, trackGroups } from "./raster.ts";

/** A one-track trace: boxes at known times, to check which pixels each one covers. */
function trace(events: { start: number; dur: number; depth?: number; name?: string }[]): MockTrace {
  return {
    events: events.map((e, id) => ({ id, track: 0, name: e.name ?? "k", category: "", start: e.start, dur: e.dur, depth: e.depth ?? 0, args: {} })),
    flows: [],
    counters: [],
    meta: {
      span_ns: [0, 1000],
      hosts: [{ name: "h", source: "h.json", format: "chrome_trace", offset_ns: 0, clock_origin_ns: null, num_events: events.length, num_flows: 0, num_counter_samples: 0, warnings: [], skipped: {} }],
      sections: [{ id: 0, name: "s", kind: "cpu", sort_index: 0, host: 0 }],
      tracks: [{ id: 0, section: 0, name: "t", kind: "thread", sort_index: 0, max_depth: 1, host: 0 }],
      num_events: events.length,
      num_flows: 0,
      warnings: [],
      tile: { base_ns: 1.024, tile_px: 1024, max_level: 10 },
    },
  };
}

function paint(t: MockTrace, dpr = 1, pxPerNs = 1, level = 10) {
  const tile = decodeTile(encodeTile(buildTile(t, level, 0)));
  const width = 200 * dpr;
  const height = 60 * dpr;
  const r: Raster = { u: new Uint32Array(width * height), width, height };
  fillBands(r, [{ y: 0, height: 60, color: "#ffffff" }], dpr);
  const geo = { tops: Float64Array.of(10), maxDepth: Int32Array.of(1), shade: Uint8Array.of(0), collapsed: Uint8Array.of(0) };
  const labels: { x: number; y: number; w: number; name: string; color: number }[] = [];
  const stats = { boxes: 0, summaries: 0 };
  const xm = { originX: 0, pxPerNs, left: 0, right: 200 };
  paintPieces(r, dpr, geo, [{ tile, from: 0, to: tile.widthNs }], xm, 28, labels, stats);
  replicateRows(r, dpr, geo);
  return { r, labels, stats, at: (x: number, y: number) => r.u[Math.floor(y * dpr) * width + Math.floor(x * dpr)] };
}

const white = pixel("#ffffff");
const kColor = pixel(colorOf(colorIndex("k")));

describe("raster", () => {
  it("fills a box over its time range and its row's box height only", () => {
    const { at, stats } = paint(trace([{ start: 20, dur: 50 }]));
    expect(stats.boxes).toBe(1);
    const top = 10 + 1;
    expect(at(25, top + 2)).toBe(kColor);
    expect(at(25, top + BOX_HEIGHT - 1)).toBe(kColor);
    expect(at(25, top + BOX_HEIGHT + 0.5)).toBe(white);
    expect(at(25, top - 0.5)).toBe(white);
    expect(at(19, top + 2)).toBe(white);
    expect(at(71, top + 2)).toBe(white);
  });

  it("puts nested events in the next row", () => {
    const { at } = paint(trace([{ start: 20, dur: 50 }, { start: 30, dur: 10, depth: 1, name: "k" }]));
    expect(at(35, 10 + ROW_HEIGHT + 3)).toBe(kColor);
    expect(at(60, 10 + ROW_HEIGHT + 3)).toBe(white);
  });

  it("keeps a one-pixel gap between adjacent boxes of the same name", () => {
    const { at } = paint(trace([{ start: 20, dur: 30 }, { start: 50, dur: 30 }]));
    expect(at(48, 14)).toBe(kColor);
    expect(at(49, 14)).toBe(white);
    expect(at(50, 14)).toBe(kColor);
  });

  it("draws instants as a visible tick", () => {
    const { at, stats } = paint(trace([{ start: 100, dur: 0 }]));
    expect(stats.boxes).toBe(1);
    expect(at(99, 14)).toBe(kColor);
    expect(at(100, 14)).toBe(kColor);
  });

  it("scales to device pixels", () => {
    const { at } = paint(trace([{ start: 20, dur: 50 }]), 2);
    expect(at(20.5, 12)).toBe(kColor);
    expect(at(69.5, 12)).toBe(white);
  });

  it("labels boxes wide enough to hold a name", () => {
    const { labels } = paint(trace([{ start: 10, dur: 100, name: "wide" }, { start: 120, dur: 10, name: "narrow" }]));
    expect(labels.map((l) => l.name)).toEqual(["wide"]);
    expect(labels[0].x).toBe(10);
    expect(labels[0].w).toBe(100);
  });

  it("draws sub-pixel events as a density summary, never as nothing", () => {
    // Level 16 (64 ns per tile pixel): the 50 ns events are narrower than a pixel and become summaries.
    const t = trace(Array.from({ length: 5 }, (_, i) => ({ start: 100 + i * 60, dur: 50 })));
    const tile = decodeTile(encodeTile(buildTile(t, 16, 0)));
    expect(tile.events.n).toBe(0);
    expect(tile.summaries.n).toBeGreaterThan(0);
    const { stats, at } = paint(t, 1, 0.1, 16);
    expect(stats.summaries).toBe(tile.summaries.n);
    expect(at(12, 14)).not.toBe(white);
  });
});

describe("trackGroups", () => {
  it("groups a tile's events by track, keeping their order", () => {
    const t = trace([{ start: 1, dur: 5 }, { start: 10, dur: 5 }]);
    t.events.push({ id: 2, track: 2, name: "x", category: "", start: 3, dur: 4, depth: 0, args: {} });
    t.meta.tracks.push({ id: 2, section: 0, name: "u", kind: "thread", sort_index: 1, max_depth: 0, host: 0 });
    const tile = decodeTile(encodeTile(buildTile(t, 10, 0)));
    const g = trackGroups(tile).events;
    const of = (track: number) => Array.from(g.order.slice(g.start[track], g.start[track + 1])).map((i) => tile.events.id[i]);
    expect(of(0)).toEqual([0, 1]);
    expect(of(1)).toEqual([]);
    expect(of(2)).toEqual([2]);
  });
});
