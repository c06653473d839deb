/** Charts of the XLA view, drawn with the project's charting library (shared/charts.ts): per-step bars
 * and percentile plots. Every axis carries its unit; each bar or point has a tooltip with the exact
 * value, and the same text sits in the canvas as its fallback content. */

import type { ChartConfiguration, Plugin, TooltipItem } from "chart.js";
import type { XlaUnit } from "./api.ts";
import { h } from "../../dom.ts";
import { drawChart } from "../../shared/charts.ts";
import { formatValue } from "./format.ts";
import { chartInk, gridColor } from "../../shared/chart_theme.ts";

export const BAR_COLOR = "#8ab4f8";
export const HOT_COLOR = "#d93025";
const LINE_COLOR = "#1a73e8";
const GRID_COLOR = gridColor;

export interface BarChartOptions {
  title: string;
  xLabel: string;
  steps: number[];
  values: number[];
  unit: XlaUnit | null;
  /** What one bar counts, for the tooltip ("compilations"). */
  what: string;
  /** Steps drawn in the warning colour (e.g. compilations after warm-up). */
  highlight?: Set<number>;
  /** Steps before this one are shaded as warm-up. */
  warmupEnd?: number;
}

/** The tooltip of bar `i`: "step 2: 3 compilations", "step 2: 1.2 s". */
export function barLabel(o: BarChartOptions, i: number): string {
  const v = o.values[i] ?? 0;
  return `${o.xLabel} ${o.steps[i]}: ${formatValue(v, o.unit)} ${o.unit === "" ? o.what : ""}`.trim();
}

function isHot(o: BarChartOptions, i: number): boolean {
  return (o.highlight?.has(o.steps[i] as number) ?? false) && (o.values[i] ?? 0) > 0;
}

/** How many leading bars are warm-up steps (0 when none are shaded). */
export function warmupBars(o: BarChartOptions): number {
  if (o.warmupEnd === undefined) return 0;
  const k = o.steps.findIndex((s) => s >= (o.warmupEnd as number));
  return k < 0 ? o.steps.length : k;
}

/** Shades the slots of the first `bars` bars behind the bars. */
function warmupShade(bars: number): Plugin<"bar"> {
  return {
    id: "xlaWarmup",
    beforeDatasetsDraw(chart) {
      const { ctx, chartArea, scales } = chart;
      const n = chart.data.labels?.length ?? 0;
      if (!bars || !n) return;
      const x = scales.x;
      const width = (x.width / n) * bars;
      ctx.save();
      ctx.fillStyle = chartInk().band;
      ctx.fillRect(x.left, chartArea.top, width, chartArea.bottom - chartArea.top);
      ctx.restore();
    },
  };
}

/** The Chart.js configuration of a per-step bar chart: one bar per step, hot steps in red, warm-up
 * shaded, y ticks in the metric's unit, x labelled with step numbers (thinned when crowded). */
export function barChartConfig(o: BarChartOptions): ChartConfiguration<"bar", number[], string> {
  return {
    type: "bar",
    data: {
      labels: o.steps.map(String),
      datasets: [
        {
          data: o.values.map((v) => (Number.isFinite(v) ? v : 0)),
          backgroundColor: o.steps.map((_, i) => (isHot(o, i) ? HOT_COLOR : BAR_COLOR)),
          categoryPercentage: 1,
          barPercentage: 0.7,
        },
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      scales: {
        x: {
          grid: { display: false },
          ticks: { autoSkip: true, maxRotation: 0, autoSkipPadding: 8 },
          title: { display: true, text: o.xLabel },
        },
        y: {
          beginAtZero: true,
          grid: { color: GRID_COLOR },
          // counts get whole-number ticks
          ticks: { maxTicksLimit: 5, precision: o.unit === "" ? 0 : undefined, callback: (v) => formatValue(Number(v), o.unit) },
        },
      },
      plugins: {
        tooltip: {
          displayColors: false,
          callbacks: { title: () => "", label: (item: TooltipItem<"bar">) => barLabel(o, item.dataIndex) },
        },
      },
    },
    plugins: [warmupShade(warmupBars(o))],
  };
}

/** A bar per step, with a title above; the bars' tooltips are also the canvas's fallback list. */
export function barChart(o: BarChartOptions): HTMLElement {
  const bars = o.steps.map((step, i) =>
    h("li", { class: isHot(o, i) ? "xv-bar xv-bar-hot" : "xv-bar", "data-step": step }, barLabel(o, i)),
  );
  const warmup = warmupBars(o);
  const canvas = h(
    "canvas",
    { role: "img", "aria-label": o.title },
    h("ul", {}, ...bars),
    warmup ? h("p", { class: "xv-warmup" }, `warm-up: the first ${warmup} ${o.xLabel}s`) : null,
  );
  drawChart(canvas, barChartConfig(o));
  return h(
    "figure",
    { class: "xv-chart", "data-chart": o.title },
    h("figcaption", { class: "xv-chart-title" }, o.title),
    h("div", { class: "xv-chart-area" }, canvas),
  );
}

export interface PercentilePoint {
  p: number;
  value: number | null;
  text: string;
}

type Finite = PercentilePoint & { value: number };

function finitePoints(points: PercentilePoint[]): Finite[] {
  return points.filter((p): p is Finite => p.value !== null && Number.isFinite(p.value));
}

/** The tooltip of one percentile: "1%: 149 ms (printed 149ms817.608us)". */
export function percentileLabel(pt: Finite, unit: XlaUnit | null): string {
  return `${pt.p}%: ${formatValue(pt.value, unit)} (printed ${pt.text})`;
}

/** The Chart.js configuration of value by percentile (x: 0–100 %) as a step line; `small` is a
 * sparkline without axes, points or tooltips. */
export function percentileConfig(points: PercentilePoint[], unit: XlaUnit | null, small = false): ChartConfiguration<"scatter"> {
  const finite = finitePoints(points);
  return {
    type: "scatter",
    data: {
      datasets: [
        {
          data: finite.map((pt) => ({ x: pt.p, y: pt.value })),
          showLine: true,
          stepped: "after",
          borderColor: LINE_COLOR,
          backgroundColor: LINE_COLOR,
          borderWidth: 1.5,
          pointRadius: small ? 0 : 3,
          pointHoverRadius: small ? 0 : 5,
        },
      ],
    },
    options: {
      responsive: !small,
      maintainAspectRatio: false,
      events: small ? [] : undefined,
      layout: { padding: small ? 2 : 4 },
      scales: {
        x: {
          type: "linear",
          display: !small,
          min: 0,
          max: 100,
          grid: { color: GRID_COLOR },
          ticks: { stepSize: 25, callback: (v) => `${v}%` },
          title: { display: true, text: "percentile of recent samples" },
        },
        y: {
          display: !small,
          beginAtZero: true,
          grid: { color: GRID_COLOR },
          ticks: { maxTicksLimit: 5, callback: (v) => formatValue(Number(v), unit) },
        },
      },
      plugins: {
        tooltip: {
          enabled: !small,
          displayColors: false,
          callbacks: {
            title: () => "",
            label: (item: TooltipItem<"scatter">) => percentileLabel(finite[item.dataIndex] as Finite, unit),
          },
        },
      },
    },
  };
}

/** Value at each printed percentile as a step line; `small` draws a sparkline for a table cell. */
export function percentilePlot(points: PercentilePoint[], unit: XlaUnit | null, small = false): HTMLElement {
  const finite = finitePoints(points);
  const canvas = h(
    "canvas",
    { role: "img", "aria-label": "value by percentile", class: small ? "xv-spark" : undefined },
    h("ul", {}, ...finite.map((pt) => h("li", { class: "xv-dot" }, percentileLabel(pt, unit)))),
  );
  if (small) {
    canvas.width = 120;
    canvas.height = 28;
  }
  if (finite.length) drawChart(canvas, percentileConfig(points, unit, small));
  return small ? canvas : h("figure", { class: "xv-chart xv-pct" }, h("div", { class: "xv-chart-area" }, canvas));
}
