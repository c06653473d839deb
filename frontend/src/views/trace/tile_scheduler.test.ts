import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { makeTrace } from "../../../test/mock/trace.ts";
import { levelFor, tileWidthNs } from "./levels.ts";
import { LABEL_WIDTH } from "./render.ts";
import { TileScheduler, tilesToFetch } from "./tile_scheduler.ts";
import type { TileCache, TileId } from "./tilecache.ts";
import { Timeline } from "./timeline.ts";

const meta = makeTrace(20, 30).meta;
const params = meta.tile;
const span = meta.span_ns[1];

describe("tilesToFetch", () => {
  it("asks for the root, the visible tiles from the middle out, then a margin on each side", () => {
    const nsPerPx = tileWidthNs(params, 0) / params.tile_px;
    const level = levelFor(params, nsPerPx);
    const w = tileWidthNs(params, level);
    const ids = tilesToFetch(params, span, { start: 3 * w, end: 6 * w }, nsPerPx);
    expect(ids[0]).toEqual({ level: params.max_level, index: 0 });
    expect(ids.slice(1, 4)).toEqual([
      { level, index: 4 },
      { level, index: 3 },
      { level, index: 5 },
    ]);
    expect(ids.slice(4)).toEqual([
      { level, index: 2 },
      { level, index: 6 },
    ]);
  });

  it("adds no margin beyond the ends of the trace", () => {
    const ids = tilesToFetch(params, span, { start: 0, end: span }, span / 1000);
    const level = ids[ids.length - 1].level;
    const indices = ids.slice(1).map((t) => t.index);
    expect(Math.min(...indices)).toBe(0);
    expect(Math.max(...indices)).toBe(Math.ceil(span / tileWidthNs(params, level)) - 1);
  });
});

describe("TileScheduler", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function scheduler() {
    const wanted: TileId[][] = [];
    const cache = { want: (ids: TileId[]) => wanted.push(ids) } as unknown as TileCache;
    const tl = new Timeline({ redraw: () => {}, relayout: () => {} });
    tl.width = LABEL_WIDTH + 1000;
    tl.height = 400;
    tl.open(meta, []);
    const state = { moving: false, asked: 0 };
    const tiles = new TileScheduler(tl, cache, () => state.moving, () => state.asked++);
    return { tiles, wanted, state };
  }

  it("asks once a still view settles, however many changes came", () => {
    const { tiles, wanted, state } = scheduler();
    tiles.schedule(false);
    tiles.schedule(false);
    vi.advanceTimersByTime(59);
    expect(wanted).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(wanted).toHaveLength(1);
    expect(state.asked).toBe(1);
  });

  it("asks at once when told to", () => {
    const { tiles, wanted } = scheduler();
    tiles.schedule(true);
    vi.advanceTimersByTime(0);
    expect(wanted).toHaveLength(1);
  });

  it("asks every 250 ms while held keys move the view, and waits for a view that changes otherwise", () => {
    const frames = (moving: boolean) => {
      const { tiles, wanted, state } = scheduler();
      state.moving = moving;
      for (let t = 0; t < 512; t += 16) {
        tiles.schedule(false);
        vi.advanceTimersByTime(16);
      }
      return wanted.length;
    };
    expect(frames(true)).toBe(2);
    expect(frames(false)).toBe(0);
  });

  it("asks nothing once stopped", () => {
    const { tiles, wanted } = scheduler();
    tiles.schedule(false);
    tiles.stop();
    vi.advanceTimersByTime(1000);
    expect(wanted).toHaveLength(0);
  });
});
