import { describe, expect, it } from "vitest";
import { cutMax, ROW, spread, stripBox, stripConfig, stripPoints } from "./strip_chart.ts";
import { demoAnswer, shortAnswer } from "./test_answers.ts";

describe("strip chart data", () => {
  it("puts every step of each side on its row, spread within the row", () => {
    const { base, run } = demoAnswer();
    const points = stripPoints(run, "run");
    expect(points.map((p) => p.x)).toEqual(run.steps.map((s) => s.wall_ns));
    expect(points.every((p) => Math.abs(p.y - ROW.run) <= 0.22)).toBe(true);
    expect(new Set(points.map((p) => p.y.toFixed(3))).size).toBe(points.length);
    expect(stripPoints(base, "base").every((p) => Math.abs(p.y - ROW.base) <= 0.22)).toBe(true);
    for (let i = 0; i < 50; i++) expect(Math.abs(spread(i))).toBeLessThanOrEqual(0.22);
  });

  it("boxes the steady figures: p10–p90 when there are five steps, else only median and range", () => {
    const { run } = demoAnswer();
    expect(stripBox(run, "run")).toMatchObject({ row: ROW.run, median: run.stats!.median_ns, min: run.stats!.min_ns, max: run.stats!.max_ns, p10: run.stats!.p10_ns });
    const short = stripBox(shortAnswer().run, "run")!;
    expect(short.p10).toBeUndefined();
    expect(short.median).toBe(11e6);
  });

  it("keeps warm-up steps apart and cuts the axis when one would squash the steady steps", () => {
    const answer = demoAnswer();
    answer.run.steps[0] = { ...answer.run.steps[0], phase: "warmup", wall_ns: 400e6 };
    const config = stripConfig(answer.base, answer.run, { base: "base: b", run: "run: r" });
    const [base, run, warmup] = config.data.datasets;
    expect(base.data.length).toBe(6);
    expect(run.data.length).toBe(5);
    expect(warmup.data.map((p) => p.step.number)).toEqual([2]);
    const slowest = Math.max(...answer.run.steps.slice(1).map((s) => s.wall_ns));
    expect(cutMax([...base.data, ...run.data, ...warmup.data])).toBeCloseTo(1.5 * slowest);
    expect(cutMax(stripPoints(demoAnswer().run, "run"))).toBeUndefined();
    const y = config.options!.scales!.y as { ticks: { callback: (v: number) => string } };
    expect([y.ticks.callback(ROW.base), y.ticks.callback(ROW.run), y.ticks.callback(0.5)]).toEqual(["base: b", "run: r", ""]);
  });
});
