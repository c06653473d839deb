/** The step-time strip chart: one row per side (base on top, run below), every step a point at its
 * wall time, spread a little up and down so equal times stay visible; over the steady steps a box
 * from p10 to p90, a bar at the median and whiskers from min to max (the figures of the stats table,
 * not quartiles). Warm-up steps are hollow and stay out of the box. A warm-up step over `CUT_WHEN` ×
 * the slowest steady step would squash the rest: the axis then stops at `CUT_AT` × it and says so.
 * The builders are plain functions, tested without a canvas. */

import type { ChartConfiguration, Plugin, TooltipItem } from "chart.js";
import type { CompareSide, CompareStep } from "../../api/answers.gen.ts";
import { h } from "../../dom.ts";
import { drawChart } from "../../shared/charts.ts";
import { formatDuration } from "../../shared/units.ts";
import { chartInk, gridColor } from "../../shared/chart_theme.ts";

export const BASE_COLOR = "#5f6368";
export const RUN_COLOR = "#1a73e8";
export const WARMUP_COLOR = "#e37400";
const GRID_COLOR = gridColor;
const CUT_WHEN = 3;
const CUT_AT = 1.5;
/** Half the height of a row's spread and box, in units of the row spacing. */
const SPREAD = 0.22;
const BOX_HALF = 0.3;

export type SideName = "base" | "run";
/** Rows from the bottom: the run at 0, the base at 1 (drawn above it). */
export const ROW: Record<SideName, number> = { run: 0, base: 1 };

export interface StripPoint {
  x: number;
  y: number;
  side: SideName;
  step: CompareStep;
}

export interface StripBox {
  side: SideName;
  row: number;
  median: number;
  min: number;
  max: number;
  /** Absent with fewer than 5 steady steps (no distribution to state). */
  p10?: number;
  p90?: number;
}

/** A deterministic spread in [-SPREAD, SPREAD] (golden-ratio sequence): neighbours never overlap. */
export function spread(i: number): number {
  return (((i * 0.6180339887) % 1) - 0.5) * 2 * SPREAD;
}

export function stripPoints(side: CompareSide, name: SideName): StripPoint[] {
  return side.steps.map((step, i) => ({ x: step.wall_ns, y: ROW[name] + spread(i), side: name, step }));
}

export function stripBox(side: CompareSide, name: SideName): StripBox | null {
  const s = side.stats;
  if (!s) return null;
  return { side: name, row: ROW[name], median: s.median_ns, min: s.min_ns, max: s.max_ns, p10: s.p10_ns, p90: s.p90_ns };
}

/** The x-axis maximum: undefined (automatic) unless a warm-up step would squash the steady ones. */
export function cutMax(points: readonly StripPoint[]): number | undefined {
  const steady = points.filter((p) => p.step.phase === "steady").map((p) => p.x);
  if (!steady.length) return undefined;
  const slowest = Math.max(...steady);
  return Math.max(...points.map((p) => p.x)) > CUT_WHEN * slowest ? CUT_AT * slowest : undefined;
}

export function cutNote(max: number): string {
  return `Warm-up steps over ${formatDuration(max)} are off the chart (over ${CUT_WHEN}× the slowest steady step).`;
}

export function pointText(p: StripPoint): string {
  return `${p.side} step ${p.step.number}: ${formatDuration(p.step.wall_ns)}${p.step.phase === "warmup" ? " (warm-up)" : ""}`;
}

/** Draws each box (p10–p90), its median bar and min–max whiskers behind the points. */
function boxPlugin(boxes: readonly StripBox[]): Plugin<"scatter"> {
  return {
    id: "cmpBoxes",
    beforeDatasetsDraw(chart) {
      const { ctx, scales } = chart;
      const x = scales.x;
      const y = scales.y;
      if (!x || !y) return;
      ctx.save();
      for (const box of boxes) {
        const color = box.side === "run" ? RUN_COLOR : BASE_COLOR;
        const mid = y.getPixelForValue(box.row);
        const top = y.getPixelForValue(box.row + BOX_HALF);
        const bottom = y.getPixelForValue(box.row - BOX_HALF);
        ctx.strokeStyle = color;
        ctx.lineWidth = 1.5;
        ctx.beginPath();
        ctx.moveTo(x.getPixelForValue(box.min), mid);
        ctx.lineTo(x.getPixelForValue(box.max), mid);
        for (const v of [box.min, box.max]) {
          ctx.moveTo(x.getPixelForValue(v), mid - (mid - top) / 2);
          ctx.lineTo(x.getPixelForValue(v), mid + (bottom - mid) / 2);
        }
        ctx.stroke();
        if (box.p10 !== undefined && box.p90 !== undefined) {
          const left = x.getPixelForValue(box.p10);
          const width = x.getPixelForValue(box.p90) - left;
          ctx.fillStyle = box.side === "run" ? "rgba(26, 115, 232, 0.12)" : "rgba(95, 99, 104, 0.12)";
          ctx.fillRect(left, top, width, bottom - top);
          ctx.strokeRect(left, top, width, bottom - top);
        }
        ctx.lineWidth = 3;
        ctx.beginPath();
        ctx.moveTo(x.getPixelForValue(box.median), top);
        ctx.lineTo(x.getPixelForValue(box.median), bottom);
        ctx.stroke();
      }
      ctx.restore();
    },
  };
}

export function stripConfig(base: CompareSide, run: CompareSide, labels: Record<SideName, string>): ChartConfiguration<"scatter", StripPoint[]> {
  const points = [...stripPoints(base, "base"), ...stripPoints(run, "run")];
  const boxes = [stripBox(base, "base"), stripBox(run, "run")].filter((b): b is StripBox => b !== null);
  const max = cutMax(points);
  const steady = (side: SideName) => points.filter((p) => p.side === side && p.step.phase === "steady");
  const warmup = points.filter((p) => p.step.phase === "warmup");
  return {
    type: "scatter",
    data: {
      datasets: [
        { label: "base", data: steady("base"), backgroundColor: BASE_COLOR, borderColor: BASE_COLOR, pointRadius: 4, pointHoverRadius: 6 },
        { label: "run", data: steady("run"), backgroundColor: RUN_COLOR, borderColor: RUN_COLOR, pointRadius: 4, pointHoverRadius: 6 },
        { label: "warm-up", data: warmup, backgroundColor: () => chartInk().surface, borderColor: WARMUP_COLOR, borderWidth: 1.5, pointRadius: 4, pointHoverRadius: 6 },
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      parsing: false,
      scales: {
        x: { type: "linear", beginAtZero: true, max, grid: { color: GRID_COLOR }, ticks: { maxTicksLimit: 8, callback: (v) => formatDuration(Number(v)) }, title: { display: true, text: "step wall time" } },
        y: {
          type: "linear",
          min: -0.6,
          max: 1.6,
          grid: { display: false },
          afterBuildTicks: (axis) => {
            axis.ticks = [{ value: ROW.run }, { value: ROW.base }];
          },
          ticks: { callback: (v) => (Number(v) === ROW.base ? labels.base : Number(v) === ROW.run ? labels.run : "") },
        },
      },
      plugins: {
        tooltip: { displayColors: false, callbacks: { title: () => "", label: (item: TooltipItem<"scatter">) => pointText(item.raw as StripPoint) } },
      },
    },
    plugins: [boxPlugin(boxes)],
  };
}

export interface StripChart {
  el: HTMLElement;
  destroy(): void;
}

/** The chart in its frame, with its figures as the canvas's fallback text and a legend. */
export function stripChart(base: CompareSide, run: CompareSide, labels: Record<SideName, string>): StripChart {
  const config = stripConfig(base, run, labels);
  const points = config.data.datasets.flatMap((d) => d.data);
  const fallback = h("ul", {}, ...points.map((p) => h("li", {}, pointText(p))));
  const canvas = h("canvas", { role: "img", "aria-label": "Step time of every step, base and run", "data-testid": "cmp-strip-canvas" }, fallback);
  const area = h("div", { class: "cmp-chart-area" }, canvas);
  const drawn = drawChart(canvas, config);
  const max = cutMax(points);
  const swatch = (color: string, hollow = false) => {
    const el = h("span", { class: `cmp-swatch${hollow ? " cmp-swatch-hollow" : ""}` });
    el.style.borderColor = color;
    if (!hollow) el.style.background = color;
    return el;
  };
  const legend = h(
    "ul",
    { class: "cmp-legend" },
    h("li", {}, swatch(BASE_COLOR), "base step"),
    h("li", {}, swatch(RUN_COLOR), "run step"),
    h("li", {}, swatch(WARMUP_COLOR, true), "warm-up step (left out of the figures)"),
    h("li", {}, "box: p10–p90 of the steady steps · bar: median · whiskers: min–max"),
  );
  return {
    el: h("div", { class: "cmp-chart", "data-testid": "cmp-strip" }, area, legend, max === undefined ? null : h("p", { class: "cmp-hint" }, cutNote(max))),
    destroy: () => drawn.destroy(),
  };
}
