import { describe, expect, it } from "vitest";
import { buildTile, encodeTile, makeTrace } from "../../../test/mock/trace.ts";
import { decodeTile, type Tile } from "../../api/tile.ts";
import { levelFor, tileWidthNs } from "./levels.ts";
import { counterAt, hitTest, planPieces, summaryAt } from "./scene.ts";

const trace = makeTrace(6, 12);
const params = trace.meta.tile;
const span = trace.meta.span_ns[1];
const tile = (level: number, index: number) => decodeTile(encodeTile(buildTile(trace, level, index)));
const hostOf = () => 0;

function source(tiles: Tile[]) {
  const m = new Map(tiles.map((t) => [`${t.level}:${t.index}`, t]));
  return { get: (l: number, i: number) => m.get(`${l}:${i}`) };
}

describe("planPieces", () => {
  it("draws a coarser held tile where the wanted one is missing (never blank)", () => {
    const root = tile(params.max_level, 0);
    const nsPerPx = span / 8 / 1000;
    const plan = planPieces(params, source([root]), span, span / 4, span / 4 + span / 8, nsPerPx);
    expect(plan.target.level).toBeLessThan(params.max_level);
    expect(plan.missing).toBe(plan.target.last - plan.target.first + 1);
    expect(plan.pieces).toHaveLength(1);
    expect(plan.pieces[0].tile).toBe(root);
  });

  it("uses the wanted tiles once held, each for its own window", () => {
    const nsPerPx = span / 4 / 1000;
    const level = levelFor(params, nsPerPx);
    const w = tileWidthNs(params, level);
    const held = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => tile(level, i));
    const plan = planPieces(params, source(held), span, w * 0.5, w * 2.5, nsPerPx);
    expect(plan.missing).toBe(0);
    expect(plan.pieces.map((p) => p.tile.index)).toEqual([0, 1, 2]);
    expect(plan.pieces[1].from).toBe(w);
    expect(plan.pieces[1].to).toBe(2 * w);
  });
});

describe("hitTest", () => {
  const root = tile(params.max_level, 0);
  const pieces = [{ tile: root, from: 0, to: tileWidthNs(params, params.max_level) }];

  it("finds the event under the pointer in its track and depth row", () => {
    const step = trace.events.find((e) => e.name === "ProfilerStep#2");
    if (!step) throw new Error("fixture has no step 2");
    const hit = hitTest(pieces, step.track, step.depth, step.start + step.dur / 2, 1, hostOf);
    expect(hit?.name).toBe("ProfilerStep#2");
    expect(hit?.id).toBe(step.id);
    expect(hit?.startNs).toBeCloseTo(step.start, -1);
    expect(hit?.durNs).toBeCloseTo(step.dur, -1);
  });

  it("misses between events and in other rows", () => {
    const step = trace.events.find((e) => e.name === "ProfilerStep#2");
    if (!step) throw new Error("fixture has no step 2");
    expect(hitTest(pieces, step.track, step.depth, step.start - 1500, 1, hostOf)).toBeNull();
    expect(hitTest(pieces, 1, 5, step.start + 10, 1, hostOf)).toBeNull();
  });

  it("forgives a few pixels around thin events", () => {
    const step = trace.events.find((e) => e.name === "ProfilerStep#2");
    if (!step) throw new Error("fixture has no step 2");
    expect(hitTest(pieces, step.track, step.depth, step.start - 50, 100, hostOf)?.id).toBe(step.id);
  });

  it("builds global ids from the track's host", () => {
    const step = trace.events.find((e) => e.name === "ProfilerStep#0");
    if (!step) throw new Error("fixture has no step 0");
    const hit = hitTest(pieces, step.track, step.depth, step.start + 1, 1, () => 3);
    expect(hit?.id).toBe(3 * 2 ** 32 + step.id);
  });
});

describe("summaryAt", () => {
  it("finds the density box of sub-pixel events under the pointer, with their count", () => {
    const root = tile(params.max_level, 0);
    const pieces = [{ tile: root, from: 0, to: tileWidthNs(params, params.max_level) }];
    const launch = trace.events.find((e) => e.name === "cudaLaunchKernel");
    if (!launch) throw new Error("fixture has no launch");
    const hit = summaryAt(pieces, launch.track, launch.depth, launch.start + 1);
    expect(hit).not.toBeNull();
    expect(hit?.count).toBeGreaterThanOrEqual(1);
    expect(hit?.busyNs).toBeGreaterThanOrEqual(launch.dur * 0.99);
    expect(summaryAt(pieces, 1, 3, launch.start)).toBeNull();
  });
});

describe("counterAt", () => {
  it("holds the last sample's value until the next one", () => {
    const root = tile(params.max_level, 0);
    const pieces = [{ tile: root, from: 0, to: tileWidthNs(params, params.max_level) }];
    const samples = trace.counters;
    const a = counterAt(pieces, 3, samples[0].time + 1);
    expect(a?.last).toBe(samples[0].value);
    const b = counterAt(pieces, 3, (samples[1].time + samples[2].time) / 2);
    expect(b?.last).toBe(samples[1].value);
    expect(counterAt(pieces, 3, -10)).toBeNull();
  });
});
