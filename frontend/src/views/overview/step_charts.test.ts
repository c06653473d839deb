// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { CUT_NOTE, cutAxisMax, niceCeil } from "./chart_frame.ts";
import {
  breakdownChart,
  breakdownChartData,
  breakdownConfig,
  captureBreakdownBar,
  categoryColor,
  STEADY_COLOR,
  stepBars,
  stepBreakdownBars,
  stepTimeChart,
  stepTimeConfig,
  WARMUP_COLOR,
} from "./step_charts.ts";
import { categories, CPU_ONLY, cpuAnswer, step } from "./test_answers.ts";

const host = cpuAnswer().per_host[0];
const rows = host.steps.rows;

describe("step-time chart", () => {
  it("colours warm-up steps apart from the steady ones, wherever they are", () => {
    const bars = stepBars(rows);
    expect(bars.labels).toEqual(["1", "2", "3"]);
    expect(bars.values).toEqual([9_000_000, 2_000_000, 2_200_000]);
    expect(bars.colors).toEqual([WARMUP_COLOR, STEADY_COLOR, STEADY_COLOR]);
    expect(bars.warmup).toEqual([0]);
    expect(WARMUP_COLOR).not.toBe(STEADY_COLOR);
    const config = stepTimeConfig(rows, 2_100_000, () => {});
    expect(config.data.datasets[0].backgroundColor).toEqual(bars.colors);
  });

  it("marks warm-up in the fallback text and states the split rule and verdict in the legend", () => {
    const { el, frame } = stepTimeChart(rows, host.steps.split, host.steps.stats, () => {});
    const items = Array.from(el.querySelectorAll("canvas li"));
    expect(items.map((li) => li.getAttribute("data-phase"))).toEqual(["warmup", "steady", "steady"]);
    expect(items[0].textContent).toBe("step 1 (warm-up): 9 ms");
    expect(items[1].textContent).toBe("step 2: 2 ms");
    const legend = el.querySelector("[data-testid=ov-step-legend]")?.textContent;
    expect(legend).toContain("steady state (2 steps)");
    expect(legend).toContain("warm-up (1 step)");
    expect(legend).toContain("median of the steady steps (2.1 ms)");
    const split = el.querySelector("[data-testid=ov-split]")?.textContent;
    expect(split).toContain("Verdict: step 1 takes 4.3× the median of the rest: warm-up");
    expect(split).toContain("Split rule: leading steps over 1.5× the median of the rest are warm-up");
    frame.destroy();
  });

  it("cuts the axis above a warm-up step that dwarfs the steady ones, and says so", () => {
    expect(cutAxisMax([9_000_000, 2_000_000, 2_200_000], [true, false, false])).toBe(4_000_000);
    expect(cutAxisMax([5_000_000, 2_000_000, 2_200_000], [true, false, false])).toBeUndefined();
    expect(cutAxisMax([9_000_000], [true])).toBeUndefined();
    expect([niceCeil(73.6e3), niceCeil(1e6), niceCeil(1.23), niceCeil(9.1)]).toEqual([80e3, 1e6, 1.5, 10]);
    expect(stepTimeConfig(rows, undefined, () => {}).options?.scales?.y?.max).toBe(4_000_000);
    const data = breakdownChartData(stepBreakdownBars(rows), categories(false));
    expect(breakdownConfig(data, stepBreakdownBars(rows), true, () => {}).options?.scales?.y?.max).toBe(4_000_000);
    const { el, frame } = stepTimeChart(rows, host.steps.split, host.steps.stats, () => {});
    expect(el.querySelector("[data-testid=ov-cut-note]")?.textContent).toBe(CUT_NOTE);
    frame.destroy();
    const even = [step(1, "warmup", 3_000_000, {}), step(2, "steady", 2_000_000, {})];
    expect(stepTimeConfig(even, undefined, () => {}).options?.scales?.y?.max).toBeUndefined();
  });

  it("opens a clicked step in the Trace tab", () => {
    const opened: number[] = [];
    const config = stepTimeConfig(rows, undefined, (s) => opened.push(s.number));
    const onClick = config.options?.onClick as unknown as (e: unknown, elements: { index: number }[]) => void;
    onClick({}, [{ index: 2 }]);
    onClick({}, []);
    expect(opened).toEqual([3]);
  });
});

describe("breakdown chart data", () => {
  it("stacks the observed categories in priority order and leaves the unobserved out", () => {
    const data = breakdownChartData(stepBreakdownBars(rows), categories(false));
    expect(data.series.map((s) => s.id)).toEqual(["input", "host_compute", "idle"]);
    expect(data.series[0].data).toEqual([1_000_000, 500_000, 600_000]);
    expect(data.notObserved.map((c) => c.id)).toEqual(["device_compute", "communication"]);
    expect(data.warmup).toEqual([0]);
    const withDevice = breakdownChartData(stepBreakdownBars(rows), categories(true));
    expect(withDevice.series.map((s) => s.id)).toEqual(["device_compute", "communication", "input", "host_compute", "idle"]);
  });

  it("leaves a part the step has no figure for undrawn (null), never 0", () => {
    const partial = [step(7, "steady", 1_000, { input: 200, idle: 800 })];
    const data = breakdownChartData(stepBreakdownBars(partial), categories(false));
    expect(data.series.find((s) => s.id === "host_compute")?.data).toEqual([null]);
    const config = breakdownConfig(data, stepBreakdownBars(partial), true, () => {});
    expect(config.data.datasets.map((d) => d.data)).toEqual([[200], [null], [800]]);
    expect(config.options?.scales?.x?.stacked).toBe(true);
    expect(config.options?.scales?.y?.stacked).toBe(true);
  });

  it("draws the whole capture as one bar when there are no steps", () => {
    const data = breakdownChartData([captureBreakdownBar(host.capture)], categories(false));
    expect(data.labels).toEqual(["whole capture"]);
    expect(data.series.map((s) => s.data[0])).toEqual([2_100_000, 9_900_000, 1_200_000]);
  });

  it("lists unobserved categories as 'not observed' with the reason in the legend", () => {
    const { el, frame } = breakdownChart(stepBreakdownBars(rows), categories(false), true, () => {});
    const absent = Array.from(el.querySelectorAll("[data-testid=ov-breakdown-legend] [data-absent]"));
    expect(absent.map((li) => li.textContent)).toEqual(["Device compute: not observed", "Collective communication: not observed"]);
    expect(absent.every((li) => li.getAttribute("title") === CPU_ONLY)).toBe(true);
    const warm = el.querySelector("canvas li[data-phase=warmup]")?.textContent;
    expect(warm).toBe("step 1 (warm-up): 9 ms: Input: 1 ms (11.1%), Host compute: 7 ms (77.8%), Idle / other: 1 ms (11.1%)");
    expect(el.textContent).not.toMatch(/Device compute: 0/);
    frame.destroy();
  });

  it("gives every known category its own colour", () => {
    const ids = ["device_compute", "communication", "memcpy_h2d", "memcpy_d2h", "memcpy_d2d", "memset", "compilation", "runtime", "input", "host_compute", "idle"];
    expect(new Set(ids.map((id, i) => categoryColor(id, i))).size).toBe(ids.length);
  });
});
