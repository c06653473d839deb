import { describe, expect, it } from "vitest";
import { allocatorCards, fragmentationChartConfig, fragmentationPoints } from "./allocator.ts";
import { allocatorAnswer } from "./allocator_fixture.ts";
import { timeSpan } from "./chart.ts";
import { peakAnswer } from "./fixture.ts";

const device = () => allocatorAnswer().devices[0];

describe("allocator figures", () => {
  it("shows capacity, free and fragmentation at the peak, the highest fragmentation and the lifetime peak", () => {
    const cards = allocatorCards(device());
    expect(cards.map((c) => [c.title, c.value])).toEqual([
      ["Capacity", "144 GiB"],
      ["Free at peak", "142 GiB"],
      ["Fragmentation at peak", "41.9%"],
      ["Highest fragmentation", "55.7%"],
      ["Lifetime peak", "1.61 GiB"],
    ]);
    expect(cards[0].detail).toBe("allocated + reserved + free at the peak (1.12% of it allocated at the peak)");
    expect(cards[3].detail).toBe("at 1.92 ms");
  });

  it("adds the peak of allocated + reserved only where it is not the allocated peak (a reserved stack)", () => {
    const d = device();
    const stats = d.allocator_stats;
    if (!stats) throw new Error("the fixture has allocator stats");
    d.allocator_stats = { ...stats, peak_in_use_bytes: stats.peak_in_use_bytes + 2 ** 30, peak_in_use_ns: 5e6 };
    const last = allocatorCards(d).at(-1);
    expect([last?.title, last?.value, last?.detail]).toEqual(["Peak allocated + reserved", "2.61 GiB", "at 5 ms (XProf's stack + heap)"]);
  });

  it("says not observed for a figure no event reports, and has none for a Kineto device", () => {
    const d = device();
    const stats = d.allocator_stats;
    if (!stats) throw new Error("the fixture has allocator stats");
    d.allocator_stats = { peak_in_use_bytes: stats.peak_in_use_bytes, peak_in_use_ns: stats.peak_in_use_ns };
    expect(allocatorCards(d).map((c) => c.value)).toEqual(["not observed", "not observed", "not observed", "not observed", "not observed"]);
    expect(allocatorCards(peakAnswer().devices[0])).toEqual([]);
    expect(fragmentationPoints(peakAnswer().devices[0], 0)).toEqual([]);
  });

  it("draws the fragmentation in percent as a step line carried to the end, on the memory chart's time axis", () => {
    const d = device();
    const curve = d.allocator_stats?.fragmentation;
    const points = fragmentationPoints(d, d.end_ns + 1000);
    expect(points.length).toBe((curve?.fraction.length ?? 0) + 1);
    expect(points[0].x).toBe(d.allocator_stats?.peak_fragmentation_ns);
    expect(points[0].y).toBeCloseTo(55.7062, 10);
    expect(points.at(-1)).toEqual({ x: d.end_ns + 1000, y: (curve?.fraction.at(-1) ?? 0) * 100 });
    expect(Math.max(...points.map((p) => p.y))).toBeCloseTo((d.allocator_stats?.peak_fragmentation ?? 0) * 100, 10);
    const config = fragmentationChartConfig(d);
    const span = timeSpan(d);
    expect(config.data.datasets[0].data).toEqual(fragmentationPoints(d, span.max));
    expect(config.data.datasets[0]).toMatchObject({ showLine: true, stepped: "after" });
    expect(config.options?.scales?.x).toMatchObject(span);
  });
});
