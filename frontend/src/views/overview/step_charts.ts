/** The step charts of one host: step time (a bar per step, warm-up steps in their own colour, the
 * steady median as a line, a legend stating the split rule and its verdict) and the breakdown (a
 * stacked bar per step, the categories in priority order from the bottom; a category the profile
 * cannot show is listed as "not observed" and never drawn as 0). Clicking a bar opens the step in the
 * Trace tab. The builders of the charts' data are plain functions, tested apart from the drawing. */

import type { ChartConfiguration, TooltipItem } from "chart.js";
import type { OverviewBreakdown, OverviewCategory, OverviewSplit, OverviewStep, OverviewStepStats } from "../../api/answers.gen.ts";
import { h } from "../../dom.ts";
import { formatDuration, formatPercent, NOT_OBSERVED } from "../../shared/units.ts";
import { formatRate } from "./cells.ts";
import { type ChartFrame, CUT_NOTE, chartFrame, cutAxisMax, cutBarLabels, GRID_COLOR, legendItem, shadeSlots } from "./chart_frame.ts";
import { chartInk } from "../../shared/chart_theme.ts";

export const STEADY_COLOR = "#1a73e8";
export const WARMUP_COLOR = "#f9ab00";
// The median line in the text colour of the theme: the chart asks chartInk(), the legend the CSS variable.
const MEDIAN_SWATCH = "var(--ps-chart-ink)";

/** Colours of the route's categories (docs/OVERVIEW.md); others take the palette in turn. */
const CATEGORY_COLORS: Record<string, string> = {
  device_compute: "#1a73e8",
  communication: "#9334e6",
  memcpy_h2d: "#e37400",
  memcpy_d2h: "#f29900",
  memcpy_d2d: "#fcc934",
  memset: "#b06000",
  compilation: "#d93025",
  runtime: "#12b5cb",
  input: "#188038",
  host_compute: "#78909c",
  idle: "#dadce0",
};
const PALETTE = ["#d01884", "#5f6368", "#81c995", "#f6aea9", "#a142f4", "#4ecde6"];

export function categoryColor(id: string, index: number): string {
  return CATEGORY_COLORS[id] ?? PALETTE[index % PALETTE.length];
}

export function isWarmup(step: OverviewStep): boolean {
  return step.phase === "warmup";
}

/** "step 3 (warm-up)". */
export function stepLabel(step: OverviewStep): string {
  return `step ${step.number}${isWarmup(step) ? " (warm-up)" : ""}`;
}

export interface StepBars {
  labels: string[];
  values: number[];
  colors: string[];
  /** Indices of the warm-up steps. */
  warmup: number[];
}

/** One bar per step, in step order: its wall time, coloured by phase. */
export function stepBars(rows: readonly OverviewStep[]): StepBars {
  return {
    labels: rows.map((r) => String(r.number)),
    values: rows.map((r) => r.wall_ns),
    colors: rows.map((r) => (isWarmup(r) ? WARMUP_COLOR : STEADY_COLOR)),
    warmup: rows.flatMap((r, i) => (isWarmup(r) ? [i] : [])),
  };
}

/** A step's line in the tooltip and the fallback list: "step 0 (warm-up): 2.05 ms · 15.6 examples/s". */
export function stepText(step: OverviewStep): string {
  const rate = step.examples_per_s === undefined ? "" : ` · ${`${formatRate(step.examples_per_s)} examples/s`}`;
  return `${stepLabel(step)}: ${formatDuration(step.wall_ns)}${rate}`;
}

export function stepTimeConfig(rows: readonly OverviewStep[], median: number | undefined, open: (step: OverviewStep) => void): ChartConfiguration<"bar", number[], string> {
  const bars = stepBars(rows);
  const max = cutAxisMax(bars.values, rows.map(isWarmup));
  return {
    type: "bar",
    data: { labels: bars.labels, datasets: [{ data: bars.values, backgroundColor: bars.colors, categoryPercentage: 1, barPercentage: 0.75, maxBarThickness: 90 }] },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      onClick: (_event, elements) => {
        const step = elements.length ? rows[elements[0].index] : undefined;
        if (step) open(step);
      },
      onHover: (event, elements) => {
        const target = event.native?.target as HTMLElement | undefined;
        if (target) target.style.cursor = elements.length ? "pointer" : "default";
      },
      scales: {
        x: { grid: { display: false }, ticks: { autoSkip: true, maxRotation: 0, autoSkipPadding: 8 }, title: { display: true, text: "step" } },
        y: { beginAtZero: true, max, grid: { color: GRID_COLOR }, ticks: { maxTicksLimit: 5, callback: (v) => formatDuration(Number(v)) }, title: { display: true, text: "wall time" } },
      },
      plugins: {
        tooltip: {
          displayColors: false,
          callbacks: { title: () => "", label: (item: TooltipItem<"bar">) => stepText(rows[item.dataIndex]), footer: () => "click: show in the Trace tab" },
        },
      },
    },
    plugins: [
      cutBarLabels<"bar">(bars.values, max, (i) => formatDuration(bars.values[i])),
      {
        id: "ovMedianLine",
        afterDatasetsDraw(chart) {
          if (median === undefined) return;
          const { ctx, chartArea, scales } = chart;
          const y = scales.y.getPixelForValue(median);
          ctx.save();
          ctx.strokeStyle = chartInk().ink;
          ctx.setLineDash([4, 3]);
          ctx.beginPath();
          ctx.moveTo(chartArea.left, y);
          ctx.lineTo(chartArea.right, y);
          ctx.stroke();
          ctx.restore();
        },
      },
    ],
  };
}

/** The step-time chart with its legend: the phases, the median, the split rule and its verdict. */
export function stepTimeChart(rows: readonly OverviewStep[], split: OverviewSplit | undefined, stats: OverviewStepStats | undefined, open: (step: OverviewStep) => void): { el: HTMLElement; frame: ChartFrame } {
  const fallback = h("ul", {}, ...rows.map((r) => h("li", { "data-step": r.number, "data-phase": r.phase }, stepText(r))));
  const frame = chartFrame("Step time per step", stepTimeConfig(rows, stats?.median_ns, open), fallback, "ov-step-chart");
  const warm = rows.filter(isWarmup).length;
  const legend = h(
    "ul",
    { class: "ov-legend", "data-testid": "ov-step-legend" },
    legendItem(STEADY_COLOR, `steady state (${rows.length - warm} step${rows.length - warm === 1 ? "" : "s"})`),
    legendItem(WARMUP_COLOR, `warm-up (${warm} step${warm === 1 ? "" : "s"})`),
    stats ? legendItem(MEDIAN_SWATCH, `median of the steady steps (${formatDuration(stats.median_ns)})`, undefined, "ov-swatch-line") : null,
  );
  const cut = cutAxisMax(rows.map((r) => r.wall_ns), rows.map(isWarmup)) === undefined ? null : h("p", { class: "ov-hint", "data-testid": "ov-cut-note" }, CUT_NOTE);
  const rule = split
    ? h(
        "div",
        { class: "ov-split", "data-testid": "ov-split" },
        h("div", {}, h("strong", {}, "Verdict: "), split.verdict),
        h("div", { class: "ov-hint" }, h("strong", {}, "Split rule: "), split.rule),
      )
    : null;
  return { el: h("figure", { class: "ov-figure" }, h("figcaption", {}, "Step time"), frame.el, legend, cut, rule), frame };
}

/** One bar of the breakdown chart: a step, or the whole capture when there are no steps. */
export interface BreakdownBar {
  label: string;
  warmup: boolean;
  wall_ns: number;
  parts: Record<string, number>;
}

export interface BreakdownSeries {
  id: string;
  label: string;
  color: string;
  /** ns per bar; null where the bar has no figure for the category (not drawn). */
  data: (number | null)[];
}

export interface BreakdownChartData {
  labels: string[];
  /** The observed categories, in priority order (the first is drawn at the bottom). */
  series: BreakdownSeries[];
  /** Categories the profile cannot show: listed, never drawn. */
  notObserved: OverviewCategory[];
  warmup: number[];
}

export function stepBreakdownBars(rows: readonly OverviewStep[]): BreakdownBar[] {
  return rows.map((r) => ({ label: String(r.number), warmup: isWarmup(r), wall_ns: r.wall_ns, parts: r.parts }));
}

export function captureBreakdownBar(b: OverviewBreakdown): BreakdownBar {
  return { label: b.label, warmup: false, wall_ns: b.wall_ns, parts: b.parts };
}

export function breakdownChartData(bars: readonly BreakdownBar[], categories: readonly OverviewCategory[]): BreakdownChartData {
  const ordered = [...categories].sort((a, b) => a.priority - b.priority);
  const series = ordered
    .filter((c) => c.observed)
    .map((c) => ({
      id: c.id,
      label: c.label,
      color: categoryColor(c.id, ordered.indexOf(c)),
      data: bars.map((b) => (typeof b.parts[c.id] === "number" && Number.isFinite(b.parts[c.id]) ? b.parts[c.id] : null)),
    }));
  return {
    labels: bars.map((b) => b.label),
    series,
    notObserved: ordered.filter((c) => !c.observed),
    warmup: bars.flatMap((b, i) => (b.warmup ? [i] : [])),
  };
}

/** "Input: 319 µs (15.4%)", or "Input: not observed" for a bar without the figure. */
export function partText(series: BreakdownSeries, bar: BreakdownBar, i: number): string {
  const ns = series.data[i];
  if (ns === null) return `${series.label}: ${NOT_OBSERVED}`;
  return `${series.label}: ${formatDuration(ns)} (${formatPercent(bar.wall_ns > 0 ? ns / bar.wall_ns : undefined)})`;
}

function barTitle(bar: BreakdownBar, isStep: boolean): string {
  const name = isStep ? `step ${bar.label}${bar.warmup ? " (warm-up)" : ""}` : bar.label;
  return `${name}: ${formatDuration(bar.wall_ns)}`;
}

export function breakdownConfig(data: BreakdownChartData, bars: readonly BreakdownBar[], isStep: boolean, open: (index: number) => void): ChartConfiguration<"bar", (number | null)[], string> {
  const walls = bars.map((b) => b.wall_ns);
  const max = cutAxisMax(walls, bars.map((b) => b.warmup));
  return {
    type: "bar",
    data: {
      labels: data.labels,
      datasets: data.series.map((s) => ({ label: s.label, data: s.data, backgroundColor: s.color, categoryPercentage: 1, barPercentage: 0.75, maxBarThickness: 90 })),
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      onClick: (_event, elements) => {
        if (elements.length) open(elements[0].index);
      },
      interaction: { mode: "index", intersect: false },
      scales: {
        x: {
          stacked: true,
          grid: { display: false },
          ticks: { autoSkip: true, maxRotation: 0, autoSkipPadding: 8, color: (c) => (data.warmup.includes(c.index) ? chartInk().warn : chartInk().text) },
          title: { display: isStep, text: "step" },
        },
        y: { stacked: true, beginAtZero: true, max, grid: { color: GRID_COLOR }, ticks: { maxTicksLimit: 5, callback: (v) => formatDuration(Number(v)) }, title: { display: true, text: "wall time" } },
      },
      plugins: {
        tooltip: {
          callbacks: {
            title: (items) => (items.length ? barTitle(bars[items[0].dataIndex], isStep) : ""),
            label: (item: TooltipItem<"bar">) => partText(data.series[item.datasetIndex], bars[item.dataIndex], item.dataIndex),
          },
        },
      },
    },
    plugins: [shadeSlots<"bar">(data.warmup, () => chartInk().warmBand), cutBarLabels<"bar">(walls, max, (i) => formatDuration(walls[i]))],
  };
}

/** The breakdown chart with its legend: observed categories with their colour (what counts as their
 * tooltip), then the ones not observed, with the reason. */
export function breakdownChart(bars: readonly BreakdownBar[], categories: readonly OverviewCategory[], isStep: boolean, open: (index: number) => void): { el: HTMLElement; frame: ChartFrame } {
  const data = breakdownChartData(bars, categories);
  const fallback = h(
    "ul",
    {},
    ...bars.map((bar, i) =>
      h("li", { "data-bar": bar.label, "data-phase": bar.warmup ? "warmup" : undefined }, `${barTitle(bar, isStep)}: ${data.series.map((s) => partText(s, bar, i)).join(", ")}`),
    ),
  );
  const frame = chartFrame(isStep ? "Breakdown of each step's wall time" : "Breakdown of the capture's wall time", breakdownConfig(data, bars, isStep, open), fallback, "ov-breakdown-chart");
  const described = new Map(categories.map((c) => [c.id, c]));
  const legend = h(
    "ul",
    { class: "ov-legend", "data-testid": "ov-breakdown-legend" },
    ...data.series.map((s) => legendItem(s.color, s.label, described.get(s.id)?.counts)),
    ...data.notObserved.map((c) =>
      h("li", { class: "ov-absent", title: c.reason ?? "not observed in this profile", "data-absent": "1", "data-category": c.id }, `${c.label}: ${NOT_OBSERVED}`),
    ),
  );
  const cut = cutAxisMax(bars.map((b) => b.wall_ns), bars.map((b) => b.warmup)) === undefined ? "" : ` ${CUT_NOTE}`;
  const warmupNote = data.warmup.length ? h("p", { class: "ov-hint" }, `Warm-up steps are shaded.${cut}`) : null;
  return { el: h("figure", { class: "ov-figure" }, h("figcaption", {}, "Where the time goes"), frame.el, legend, warmupNote), frame };
}
