/** The curves of one allocator: allocated and reserved bytes over the session's time as step lines
 * (a value holds until the next event), the step boundaries as dashed lines labelled with the step,
 * and the peak as a red triangle that opens the Trace tab around it when clicked. The configuration is
 * a plain function of the answer (tested without a canvas); the canvas holds the same as text. */

import type { ChartConfiguration, Plugin, Scale, TooltipItem } from "chart.js";
import { h } from "../../dom.ts";
import { drawChart, type DrawnChart } from "../../shared/charts.ts";
import { formatBytes, formatDuration, NOT_OBSERVED } from "../../shared/units.ts";
import type { MemoryDevice, MemorySeries } from "./api.ts";
import { gridColor } from "../../shared/chart_theme.ts";

export const ALLOCATED_COLOR = "#1a73e8";
export const RESERVED_COLOR = "#9aa0a6";
export const PEAK_COLOR = "#d93025";
const STEP_COLOR = "#80868b";
/** How near the peak's triangle (canvas pixels) a click or hover counts as on it. */
export const PEAK_HIT_PX = 12;
/** The y axis's width (pixels), the same on every chart of a device so their time axes line up. */
export const Y_AXIS_PX = 72;
/** The padding of the program's heap chart and allocation timeline: fixed (not Chart.js's room for
 * the largest point, which only the heap chart has) so their plot areas line up. */
export const PROGRAM_CHART_LAYOUT = { autoPadding: false, padding: { top: 10, right: 12, bottom: 0, left: 0 } };
/** Sets a y axis to `Y_AXIS_PX` wide (its `afterFit`), so the charts stacked in one view line up on x. */
export function fixedAxisWidth(axis: Scale): void {
  axis.width = Y_AXIS_PX;
}

/** The x axis over the session's time `span`: the allocator's curves' and its fragmentation's. */
export function sessionTimeAxis(span: { min: number; max: number }) {
  return {
    type: "linear" as const,
    min: span.min,
    max: span.max,
    grid: { color: gridColor },
    ticks: { maxTicksLimit: 8, callback: (v: number | string) => formatDuration(Number(v)) },
    title: { display: true, text: "time from the session start" },
  };
}

/** The x axis over a program's `events` heap-simulator events: its heap chart's and allocation timeline's. */
export function heapEventsAxis(events: number) {
  return {
    type: "linear" as const,
    min: 0,
    max: Math.max(1, events),
    grid: { color: gridColor },
    ticks: { maxTicksLimit: 8, precision: 0 },
    title: { display: true, text: "heap-simulator events (program order)" },
  };
}

/** Space a step label needs before the next one is written (pixels). */
const STEP_LABEL_PX = 44;

export interface Point {
  x: number;
  y: number;
}

/** The series as chart points, the last value carried to `endNs` (no event after the last one: the
 * total holds to the end of the capture). */
export function seriesPoints(series: MemorySeries, endNs: number): Point[] {
  const points = series.time_ns.map((x, i) => ({ x, y: series.bytes[i] }));
  const last = points[points.length - 1];
  if (last && endNs > last.x) points.push({ x: endNs, y: last.y });
  return points;
}

/** Where the step lines go: each step's start (labelled with its number) and its end, once where a
 * step ends as the next starts. */
export function stepBoundaries(device: MemoryDevice): { x: number; label: string }[] {
  const lines: { x: number; label: string }[] = [];
  device.steps.forEach((s, i) => {
    lines.push({ x: s.start_ns, label: String(s.number) });
    if (device.steps[i + 1]?.start_ns !== s.end_ns) lines.push({ x: s.end_ns, label: "" });
  });
  return lines;
}

/** "Peak 16 MiB allocated at 18.6 ms, in ProfilerStep#3, in aten::div". */
export function peakText(device: MemoryDevice): string {
  const { peak } = device;
  const where = [peak.step ? `in ${peak.step}` : "outside any step", peak.op ? `in ${peak.op}` : "outside any host op"];
  return `Peak ${formatBytes(peak.allocated_bytes)} allocated at ${formatDuration(peak.time_ns)}, ${where.join(", ")}`;
}

/** Draws the step boundaries under the curves, the step number at the top of each. */
function stepLines(device: MemoryDevice): Plugin<"scatter"> {
  const lines = stepBoundaries(device);
  return {
    id: "memStepLines",
    beforeDatasetsDraw(chart) {
      const { ctx, chartArea, scales } = chart;
      ctx.save();
      ctx.strokeStyle = STEP_COLOR;
      ctx.fillStyle = STEP_COLOR;
      ctx.setLineDash([3, 3]);
      ctx.font = "10px system-ui, sans-serif";
      ctx.textBaseline = "top";
      let labelEnd = -Infinity;
      for (const line of lines) {
        const x = scales.x.getPixelForValue(line.x);
        if (x < chartArea.left - 0.5 || x > chartArea.right + 0.5) continue;
        ctx.beginPath();
        ctx.moveTo(x, chartArea.top);
        ctx.lineTo(x, chartArea.bottom);
        ctx.stroke();
        if (line.label && x >= labelEnd) {
          ctx.fillText(`step ${line.label}`, x + 3, chartArea.top + 2);
          labelEnd = x + STEP_LABEL_PX;
        }
      }
      ctx.restore();
    },
  };
}

/** Writes where the peak was drawn on `marker` (`data-x`, `data-y`: canvas pixels) for the DOM. */
function peakPosition(marker: HTMLElement): Plugin<"scatter"> {
  return {
    id: "memPeakPosition",
    afterRender(chart) {
      const meta = chart.getDatasetMeta(chart.data.datasets.length - 1);
      const point = meta.data[0];
      if (!point) return;
      marker.dataset.x = String(Math.round(point.x));
      marker.dataset.y = String(Math.round(point.y));
    },
  };
}

/** Whether a pointer at (x, y) is on the peak's triangle drawn at (peakX, peakY). */
export function onPeak(x: number, y: number, peakX: number, peakY: number): boolean {
  return Math.hypot(x - peakX, y - peakY) <= PEAK_HIT_PX;
}

/** The axis step of `maxBytes`: a power of two giving 3 to 6 ticks (4 MiB, not 4.77 MiB). */
export function byteStep(maxBytes: number): number {
  if (!(maxBytes > 0)) return 1;
  return 2 ** Math.ceil(Math.log2(maxBytes / 5));
}

/** The time the x axis spans: the events and the steps, nothing after. */
export function timeSpan(device: MemoryDevice): { min: number; max: number } {
  const first = device.steps[0];
  const last = device.steps[device.steps.length - 1];
  return { min: Math.min(device.start_ns, first?.start_ns ?? Infinity), max: Math.max(device.end_ns, last?.end_ns ?? -Infinity) };
}

export function memoryChartConfig(device: MemoryDevice, openPeak: () => void, marker?: HTMLElement): ChartConfiguration<"scatter", Point[]> {
  const span = timeSpan(device);
  const datasets: ChartConfiguration<"scatter", Point[]>["data"]["datasets"] = [];
  const step = { showLine: true, stepped: "after" as const, pointRadius: 0, pointHitRadius: 0, borderWidth: 1.5 };
  if (device.reserved) datasets.push({ label: "reserved", data: seriesPoints(device.reserved, span.max), borderColor: RESERVED_COLOR, backgroundColor: RESERVED_COLOR, ...step });
  datasets.push({ label: "allocated", data: seriesPoints(device.allocated, span.max), borderColor: ALLOCATED_COLOR, backgroundColor: ALLOCATED_COLOR, ...step });
  datasets.push({
    label: "peak",
    data: [{ x: device.peak.time_ns, y: device.peak.allocated_bytes }],
    pointStyle: "triangle",
    pointRadius: 8,
    pointHoverRadius: 10,
    pointHitRadius: 12,
    borderColor: PEAK_COLOR,
    backgroundColor: PEAK_COLOR,
  });
  const peakIndex = datasets.length - 1;
  const top = Math.max(device.peak.allocated_bytes, device.peak.reserved_bytes ?? 0, ...(device.reserved?.bytes ?? []));
  const atPeak = (event: { x: number | null; y: number | null }, chart: { getDatasetMeta(i: number): { data: { x: number; y: number }[] } }) => {
    const point = chart.getDatasetMeta(peakIndex).data[0];
    return !!point && event.x !== null && event.y !== null && onPeak(event.x, event.y, point.x, point.y);
  };
  return {
    type: "scatter",
    data: { datasets },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: "nearest", intersect: false, axis: "x" },
      onClick: (event, _elements, chart) => {
        if (atPeak(event, chart)) openPeak();
      },
      onHover: (event, _elements, chart) => {
        const target = event.native?.target as HTMLElement | undefined;
        if (target) target.style.cursor = atPeak(event, chart) ? "pointer" : "default";
      },
      scales: {
        x: sessionTimeAxis(span),
        y: {
          beginAtZero: true,
          grid: { color: gridColor },
          ticks: { stepSize: byteStep(top), callback: (v) => formatBytes(Number(v)) },
          title: { display: true, text: "bytes" },
          afterFit: fixedAxisWidth,
        },
      },
      plugins: {
        tooltip: {
          displayColors: false,
          callbacks: {
            title: (items: TooltipItem<"scatter">[]) => (items[0] ? formatDuration(items[0].parsed.x ?? 0) : ""),
            label: (item: TooltipItem<"scatter">) =>
              item.datasetIndex === peakIndex ? `${peakText(device)} (click: show in the Trace tab)` : `${item.dataset.label}: ${formatBytes(item.parsed.y ?? 0)}`,
          },
        },
      },
    },
    plugins: [stepLines(device), ...(marker ? [peakPosition(marker)] : [])],
  };
}

/** The chart of one device in its frame, its figures as the canvas's text. */
export function memoryChart(device: MemoryDevice, openPeak: () => void): { el: HTMLElement; chart: DrawnChart<"scatter", Point[], unknown> } {
  const marker = h("span", { "data-testid": "mem-peak-point" }, peakText(device));
  const reserved = device.reserved ? `reserved: ${device.reserved.bytes.length} of ${device.reserved.events} points` : `reserved: ${NOT_OBSERVED}`;
  const fallback = h(
    "ul",
    {},
    h("li", {}, marker),
    h("li", {}, `allocated: ${device.allocated.bytes.length} of ${device.allocated.events} points`),
    h("li", {}, reserved),
    h("li", {}, `steps: ${device.steps.map((s) => s.name).join(", ") || "none observed"}`),
  );
  const canvas = h("canvas", { role: "img", "aria-label": `Memory of ${device.label} over time`, "data-testid": "mem-chart-canvas" }, fallback);
  const chart = drawChart(canvas, memoryChartConfig(device, openPeak, marker));
  return { el: h("div", { class: "mem-chart-area", "data-testid": "mem-chart" }, canvas), chart };
}
