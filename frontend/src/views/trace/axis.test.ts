import { describe, expect, it } from "vitest";
import { formatDuration } from "../../shared/units.ts";
import { axisHoverText, computeTicks, DURATION_DIGITS, formatTimestamp, niceStep, originText } from "./axis.ts";

describe("time axis", () => {
  it("uses 1-2-5 steps", () => {
    expect(niceStep(0.7)).toBe(1);
    expect(niceStep(1.5)).toBe(2);
    expect(niceStep(3)).toBe(5);
    expect(niceStep(7)).toBe(10);
    expect(niceStep(0.0003)).toBeCloseTo(0.0005);
  });

  it("adapts the unit to the zoom", () => {
    expect(computeTicks(0, 5e9, 1000).ticks[1].label).toMatch(/ s$/);
    expect(computeTicks(0, 5e6, 1000).ticks[1].label).toMatch(/ ms$/);
    expect(computeTicks(0, 5e3, 1000).ticks[1].label).toMatch(/ µs$/);
    expect(computeTicks(0, 50, 1000).ticks[1].label).toMatch(/ ns$/);
  });

  it("labels ticks as offsets from an origin at the view's start, written in full", () => {
    const t = computeTicks(131.29e6, 131.5e6, 1100);
    expect(t.originNs).toBe(131.28e6);
    expect(t.ticks.map((x) => x.label).slice(0, 3)).toEqual(["+20 µs", "+40 µs", "+60 µs"]);
    expect(originText(t)).toBe("131.28 ms +");
    const deep = computeTicks(1.5e9, 1.5e9 + 50, 1000);
    const labels = deep.ticks.map((x) => x.label);
    expect(labels[0]).toBe("+0 ns");
    expect(originText(deep)).toBe("1.500000000 s +");
    expect(new Set(labels).size).toBe(labels.length);
  });

  it("says the absolute time under the pointer", () => {
    const t = computeTicks(131.29e6, 131.5e6, 1100);
    expect(axisHoverText(131.3e6, t, 200)).toBe("131.3000 ms from the trace start (+20.0 µs from 131.28 ms)");
  });

  it("keeps labels apart and distinct", () => {
    const t = computeTicks(1.234e6, 1.236e6, 800);
    const labels = t.ticks.map((x) => x.label);
    expect(new Set(labels).size).toBe(labels.length);
    expect(t.stepNs / (2e3 / 800)).toBeGreaterThanOrEqual(90);
  });

  it("formats durations with their unit", () => {
    expect(formatDuration(1234, DURATION_DIGITS)).toBe("1.234 µs");
    expect(formatDuration(12_345_678, DURATION_DIGITS)).toBe("12.35 ms");
    expect(formatDuration(850, DURATION_DIGITS)).toBe("850 ns");
    expect(formatDuration(2.5e9, DURATION_DIGITS)).toBe("2.5 s");
    expect(formatDuration(0.5, DURATION_DIGITS)).toBe("0.5 ns");
    expect(formatDuration(NaN, DURATION_DIGITS)).toBe("not observed");
    expect(formatTimestamp(1.5e6, 1e5)).toBe("1.5 ms");
  });
});
