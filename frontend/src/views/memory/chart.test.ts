import { describe, expect, it } from "vitest";
import { byteStep, memoryChartConfig, onPeak, peakText, seriesPoints, stepBoundaries, timeSpan } from "./chart.ts";
import { peakAnswer } from "./fixture.ts";

const device = () => peakAnswer().devices[0];

describe("memory chart", () => {
  it("draws the allocated bytes as a step line carried to the last event", () => {
    const d = device();
    const points = seriesPoints(d.allocated, d.end_ns + 1000);
    expect(points.length).toBe(d.allocated.bytes.length + 1);
    expect(points[points.length - 1]).toEqual({ x: d.end_ns + 1000, y: d.allocated.bytes[d.allocated.bytes.length - 1] });
    expect(Math.max(...points.map((p) => p.y))).toBe(d.peak.allocated_bytes);
  });

  it("marks each step's start and end", () => {
    const d = device();
    const lines = stepBoundaries(d);
    expect(lines.map((l) => l.label)).toEqual(["1", "", "2", "", "3", "", "4", "", "5", ""]);
    expect(lines[4].x).toBe(d.steps[2].start_ns);
    expect(lines[9].x).toBe(d.steps[4].end_ns);
    const adjacent = { ...d, steps: [{ ...d.steps[0], end_ns: d.steps[1].start_ns }, d.steps[1]] };
    expect(stepBoundaries(adjacent).map((l) => l.label)).toEqual(["1", "2", ""]);
  });

  it("leaves reserved out when the profile does not report it, and marks the peak", () => {
    const d = device();
    const config = memoryChartConfig(d, () => undefined);
    expect(config.data.datasets.map((s) => s.label)).toEqual(["allocated", "peak"]);
    expect(config.data.datasets[1].data).toEqual([{ x: d.peak.time_ns, y: 16815160 }]);
    expect(config.data.datasets[0]).toMatchObject({ showLine: true, stepped: "after" });
  });

  it("opens the peak on a click on its marker only", () => {
    let opened = 0;
    const config = memoryChartConfig(device(), () => opened++);
    const click = config.options?.onClick as unknown as (e: { x: number; y: number }, elements: unknown[], chart: unknown) => void;
    const chart = { getDatasetMeta: (i: number) => ({ data: i === 1 ? [{ x: 500, y: 40 }] : [] }) };
    click({ x: 540, y: 40 }, [], chart);
    expect(opened).toBe(0);
    click({ x: 505, y: 45 }, [], chart);
    expect(opened).toBe(1);
    expect(onPeak(0, 12, 0, 0)).toBe(true);
    expect(onPeak(0, 13, 0, 0)).toBe(false);
  });

  it("ticks bytes in powers of two and spans the events and steps only", () => {
    expect(byteStep(16815160)).toBe(4 * 1024 * 1024);
    expect(byteStep(71204)).toBe(16 * 1024);
    const d = device();
    expect(timeSpan(d)).toEqual({ min: d.steps[0].start_ns, max: d.steps[4].end_ns });
  });

  it("says where the peak is", () => {
    expect(peakText(device())).toBe("Peak 16 MiB allocated at 18.6 ms, in ProfilerStep#3, in aten::div");
  });
});
