import { describe, expect, it } from "vitest";
import { clampRange, dragRange, fitRange, limitsFor, panBy, Projection, zoomAround } from "./viewport.ts";

const lim = limitsFor(0, 1e9);

describe("viewport", () => {
  it("zooms around the anchor: the instant under the mouse stays under the mouse", () => {
    const r = { start: 1e8, end: 3e8 };
    const anchor = 1.5e8;
    const before = new Projection(r, 200, 1000).x(anchor);
    const z = zoomAround(r, anchor, 2, lim);
    expect(z.end - z.start).toBeCloseTo(1e8);
    expect(new Projection(z, 200, 1000).x(anchor)).toBeCloseTo(before, 6);
  });

  it("zoom in then out by the same factor restores the window", () => {
    const r = { start: 2e8, end: 6e8 };
    const back = zoomAround(zoomAround(r, 3e8, 4, lim), 3e8, 1 / 4, lim);
    expect(back.start).toBeCloseTo(r.start, 3);
    expect(back.end).toBeCloseTo(r.end, 3);
  });

  it("never zooms narrower than the minimum range nor wider than the span plus margins", () => {
    const tiny = zoomAround({ start: 0, end: 100 }, 50, 1e6, lim);
    expect(tiny.end - tiny.start).toBeCloseTo(lim.minRange);
    const wide = zoomAround({ start: 0, end: 1e9 }, 5e8, 1e-6, lim);
    expect(wide.end - wide.start).toBeCloseTo(1.2e9);
  });

  it("pans by a fraction of the window and stops at the overscroll edge", () => {
    const r = { start: 4e8, end: 5e8 };
    expect(panBy(r, 0.5, lim)).toEqual({ start: 4.5e8, end: 5.5e8 });
    const far = panBy(r, 100, lim);
    expect(far.end).toBeCloseTo(1.1e9);
    expect(far.end - far.start).toBeCloseTo(1e8);
  });

  it("clamps nonsense to something drawable", () => {
    const c = clampRange({ start: NaN, end: NaN }, lim);
    expect(Number.isFinite(c.start) && Number.isFinite(c.end) && c.end > c.start).toBe(true);
  });

  it("fits a selection with margins on both sides", () => {
    const f = fitRange(1e8, 2e8, lim);
    expect(f.start).toBeLessThan(1e8);
    expect(f.end).toBeGreaterThan(2e8);
    expect((f.start + f.end) / 2).toBeCloseTo(1.5e8);
  });

  it("projects and unprojects", () => {
    const p = new Projection({ start: 1000, end: 2000 }, 100, 500);
    expect(p.x(1000)).toBe(100);
    expect(p.x(2000)).toBe(600);
    expect(p.ns(350)).toBe(1500);
    expect(p.nsPerPx).toBe(2);
  });

  it("measures a drag as the time under its two ends, in either direction", () => {
    // 1 µs per px: 1000 px of timeline right of a 260 px label column.
    const p = new Projection({ start: 5e6, end: 6e6 }, 260, 1000);
    expect(dragRange(p, 400, 650, 260, 1260)).toEqual({ start: 5e6 + 140e3, end: 5e6 + 390e3 });
    expect(dragRange(p, 650, 400, 260, 1260)).toEqual({ start: 5e6 + 140e3, end: 5e6 + 390e3 });
  });

  it("holds a drag's ends to the visible timeline (over the labels, past the right edge)", () => {
    const p = new Projection({ start: 0, end: 1e6 }, 260, 1000);
    expect(dragRange(p, 100, 500, 260, 1260)).toEqual({ start: 0, end: 240e3 });
    expect(dragRange(p, 1000, 1900, 260, 1260)).toEqual({ start: 740e3, end: 1e6 });
  });
});
