import { describe, expect, it } from "vitest";
import { ancestorIndex, levelFor, tilesCovering, tileWidthNs } from "./levels.ts";

const params = { base_ns: 1.024, tile_px: 1024, max_level: 30 };

describe("tile level choice", () => {
  it("picks the coarsest level whose tile pixel is no wider than a screen pixel", () => {
    for (const nsPerPx of [0.001, 0.5, 1, 3, 1000, 123456, 1e7]) {
      const z = levelFor(params, nsPerPx);
      const tilePx = tileWidthNs(params, z) / params.tile_px;
      if (z > 0) expect(tilePx).toBeLessThanOrEqual(nsPerPx * (1 + 1e-9));
      if (z < params.max_level) expect((tilePx * 2)).toBeGreaterThan(nsPerPx);
    }
  });

  it("is level 0 at 1 ns per pixel (base 1024 ps, 1024 px per tile: 1 ps per tile pixel)", () => {
    expect(levelFor(params, 0.001)).toBe(0);
    expect(levelFor(params, 1)).toBe(9);
  });

  it("clamps to the whole-trace level", () => {
    expect(levelFor(params, 1e15)).toBe(30);
    expect(levelFor(params, 0)).toBe(0);
  });

  it("zooming in by 2x moves one level finer", () => {
    const a = levelFor(params, 5000);
    expect(levelFor(params, 2500)).toBe(a - 1);
  });
});

describe("tiles covering a window", () => {
  it("lists the tiles overlapping the window, clipped to the span", () => {
    const w = tileWidthNs(params, 10);
    expect(tilesCovering(params, 10, 0, 3 * w, 100 * w)).toEqual({ level: 10, first: 0, last: 2 });
    expect(tilesCovering(params, 10, 2.5 * w, 3.5 * w, 100 * w)).toEqual({ level: 10, first: 2, last: 3 });
    expect(tilesCovering(params, 10, -5 * w, 500 * w, 10 * w)).toEqual({ level: 10, first: 0, last: 9 });
  });

  it("ends before a tile that only touches the window's end", () => {
    const w = tileWidthNs(params, 4);
    expect(tilesCovering(params, 4, w, 2 * w, 10 * w)).toEqual({ level: 4, first: 1, last: 1 });
  });

  it("finds ancestors by halving the index per level", () => {
    expect(ancestorIndex(13, 1)).toBe(6);
    expect(ancestorIndex(13, 3)).toBe(1);
    expect(ancestorIndex(2 ** 40 + 5, 40)).toBe(1);
  });
});
