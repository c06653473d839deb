/** What an XPlane allocator says of itself (TensorFlow's BFC allocator: `allocator_stats` of the
 * answer), as XProf's memory_profile shows it: its capacity, what was free and how fragmented the
 * free memory was at the peak, its highest fragmentation, its lifetime peak, and the fragmentation
 * over time as a step line (0–100 %) under the byte curves, on the same time axis. Kineto devices
 * have none of it: nothing is drawn for them. */

import type { ChartConfiguration, TooltipItem } from "chart.js";
import { h } from "../../dom.ts";
import { gridColor } from "../../shared/chart_theme.ts";
import { drawChart, type DrawnChart } from "../../shared/charts.ts";
import { formatBytes, formatDuration, formatPercent, NOT_OBSERVED } from "../../shared/units.ts";
import type { MemoryDevice } from "./api.ts";
import { fixedAxisWidth, type Point, sessionTimeAxis, timeSpan } from "./chart.ts";

export const FRAGMENTATION_COLOR = "#e37400";

export interface CardData {
  title: string;
  value: string;
  detail?: string;
  testId: string;
}

/** The allocator's own figures as cards; none for a device without them. */
export function allocatorCards(device: MemoryDevice): CardData[] {
  const stats = device.allocator_stats;
  if (!stats) return [];
  const { peak } = device;
  const share = stats.capacity_bytes ? ` (${formatPercent(peak.allocated_bytes / stats.capacity_bytes)} of it allocated at the peak)` : "";
  const cards: CardData[] = [
    {
      title: "Capacity",
      value: stats.capacity_bytes === undefined ? NOT_OBSERVED : formatBytes(stats.capacity_bytes),
      detail: `allocated + reserved + free at the peak${share}`,
      testId: "mem-capacity",
    },
    { title: "Free at peak", value: stats.free_at_peak_bytes === undefined ? NOT_OBSERVED : formatBytes(stats.free_at_peak_bytes), testId: "mem-free-at-peak" },
    {
      title: "Fragmentation at peak",
      value: formatPercent(stats.fragmentation_at_peak),
      detail: "1 − largest free chunk ÷ free bytes",
      testId: "mem-fragmentation-at-peak",
    },
    {
      title: "Highest fragmentation",
      value: formatPercent(stats.peak_fragmentation),
      detail: stats.peak_fragmentation_ns === undefined ? undefined : `at ${formatDuration(stats.peak_fragmentation_ns)}`,
      testId: "mem-peak-fragmentation",
    },
    {
      title: "Lifetime peak",
      value: stats.lifetime_peak_bytes === undefined ? NOT_OBSERVED : formatBytes(stats.lifetime_peak_bytes),
      detail: "the allocator's high-water mark since it was created (may be before the capture)",
      testId: "mem-lifetime-peak",
    },
  ];
  if (stats.peak_in_use_bytes !== peak.allocated_bytes) {
    cards.push({
      title: "Peak allocated + reserved",
      value: formatBytes(stats.peak_in_use_bytes),
      detail: `at ${formatDuration(stats.peak_in_use_ns)} (XProf's stack + heap)`,
      testId: "mem-peak-in-use",
    });
  }
  return cards;
}

/** The fragmentation series as chart points in percent, the last value carried to `endNs`. */
export function fragmentationPoints(device: MemoryDevice, endNs: number): Point[] {
  const curve = device.allocator_stats?.fragmentation;
  if (!curve) return [];
  const points = curve.time_ns.map((x, i) => ({ x, y: curve.fraction[i] * 100 }));
  const last = points[points.length - 1];
  if (last && endNs > last.x) points.push({ x: endNs, y: last.y });
  return points;
}

export function fragmentationChartConfig(device: MemoryDevice): ChartConfiguration<"scatter", Point[]> {
  const span = timeSpan(device);
  return {
    type: "scatter",
    data: {
      datasets: [
        {
          label: "fragmentation",
          data: fragmentationPoints(device, span.max),
          showLine: true,
          stepped: "after",
          pointRadius: 0,
          pointHitRadius: 0,
          borderWidth: 1.5,
          borderColor: FRAGMENTATION_COLOR,
          backgroundColor: FRAGMENTATION_COLOR,
        },
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: "nearest", intersect: false, axis: "x" },
      scales: {
        x: sessionTimeAxis(span),
        y: {
          min: 0,
          suggestedMax: 10,
          grid: { color: gridColor },
          ticks: { maxTicksLimit: 4, callback: (v) => `${Number(v)}%` },
          title: { display: true, text: "fragmentation" },
          afterFit: fixedAxisWidth,
        },
      },
      plugins: {
        tooltip: {
          displayColors: false,
          callbacks: {
            title: (items: TooltipItem<"scatter">[]) => (items[0] ? formatDuration(items[0].parsed.x ?? 0) : ""),
            label: (item: TooltipItem<"scatter">) => `fragmentation: ${formatPercent((item.parsed.y ?? 0) / 100)}`,
          },
        },
      },
    },
  };
}

/** The fragmentation chart of a device in its frame (its figures as the canvas's text); null when
 * the allocator reports no fragmentation. */
export function fragmentationChart(device: MemoryDevice): { el: HTMLElement; chart: DrawnChart<"scatter", Point[], unknown> } | null {
  const curve = device.allocator_stats?.fragmentation;
  if (!curve) return null;
  const fallback = h("p", {}, `fragmentation: ${curve.fraction.length} of ${curve.events} points, highest ${formatPercent(device.allocator_stats?.peak_fragmentation)}`);
  const canvas = h("canvas", { role: "img", "aria-label": `Fragmentation of ${device.label} over time`, "data-testid": "mem-fragmentation-canvas" }, fallback);
  const chart = drawChart(canvas, fragmentationChartConfig(device));
  return { el: h("div", { class: "mem-chart-area mem-fragmentation-area", "data-testid": "mem-fragmentation-chart" }, canvas), chart };
}
