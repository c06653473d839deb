/** One chart of the Overview: a canvas drawn with the project's charting library (shared/charts.ts),
 * holding what it shows as text (its fallback content, which screen readers and the browser tests
 * read), in a box of fixed height that the chart fills. */

import type { ChartConfiguration, ChartType, DefaultDataPoint, Plugin } from "chart.js";
import { h } from "../../dom.ts";
import { drawChart } from "../../shared/charts.ts";
import { chartInk, gridColor } from "../../shared/chart_theme.ts";

export const GRID_COLOR = gridColor;

export interface ChartFrame {
  el: HTMLElement;
  destroy(): void;
}

export function chartFrame<T extends ChartType, D = DefaultDataPoint<T>, L = unknown>(
  label: string,
  config: ChartConfiguration<T, D, L>,
  fallback: HTMLElement,
  testId: string,
  heightPx = 220,
): ChartFrame {
  const canvas = h("canvas", { role: "img", "aria-label": label, "data-testid": `${testId}-canvas` }, fallback);
  const area = h("div", { class: "ov-chart-area" }, canvas);
  area.style.height = `${heightPx}px`;
  const drawn = drawChart(canvas, config);
  return { el: h("div", { class: "ov-chart", "data-testid": testId }, area), destroy: () => drawn.destroy() };
}

/** Shades the slots of the bars at `indices` (e.g. the warm-up steps) behind the bars. */
export function shadeSlots<T extends ChartType>(indices: readonly number[], color: () => string): Plugin<T> {
  return {
    id: "ovShadeSlots",
    beforeDatasetsDraw(chart) {
      const n = chart.data.labels?.length ?? 0;
      const x = chart.scales.x;
      if (!indices.length || !n || !x) return;
      const slot = x.width / n;
      const { ctx, chartArea } = chart;
      ctx.save();
      ctx.fillStyle = color();
      for (const i of indices) ctx.fillRect(x.left + slot * i, chartArea.top, slot, chartArea.bottom - chartArea.top);
      ctx.restore();
    },
  };
}

/** Bars taller than `CUT_WHEN` × the slowest steady step (a warm-up step that compiles can take 100×
 * as long) would flatten every steady bar: the axis then stops near `CUT_AT` × that step, and the bars
 * above are cut, their time written at the top. */
const CUT_WHEN = 3;
const CUT_AT = 1.5;

const NICE_STEPS = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10];

/** The smallest round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × a power of ten) ≥ `x` > 0, so
 * the axis's top tick reads "80 µs", not "73.6 µs". */
export function niceCeil(x: number): number {
  const decade = 10 ** Math.floor(Math.log10(x));
  const step = NICE_STEPS.find((s) => s * decade >= x * (1 - 1e-12)) ?? 10;
  return Number((step * decade).toPrecision(12));
}

/** The y-axis maximum for bars of `walls` (ns), `warmup[i]` telling the warm-up ones; undefined: no cut. */
export function cutAxisMax(walls: readonly number[], warmup: readonly boolean[]): number | undefined {
  const steady = walls.filter((_, i) => !warmup[i]);
  if (!steady.length) return undefined;
  const slowest = Math.max(...steady);
  return slowest > 0 && Math.max(...walls) > CUT_WHEN * slowest ? niceCeil(CUT_AT * slowest) : undefined;
}

/** What a cut axis means, for the legend. */
export const CUT_NOTE = `Bars over ${CUT_WHEN}× the slowest steady step are cut at about ${CUT_AT}× it; their time is written on them.`;

/** Writes `label(i)` at the top of each bar taller than `max` (the bars the axis cuts). */
export function cutBarLabels<T extends ChartType>(walls: readonly number[], max: number | undefined, label: (i: number) => string): Plugin<T> {
  return {
    id: "ovCutBars",
    afterDatasetsDraw(chart) {
      const x = chart.scales.x;
      if (max === undefined || !x) return;
      const { ctx, chartArea } = chart;
      ctx.save();
      ctx.font = "600 11px system-ui, sans-serif";
      ctx.textAlign = "center";
      ctx.textBaseline = "top";
      walls.forEach((wall, i) => {
        if (wall <= max) return;
        const text = `▲ ${label(i)}`;
        const cx = x.getPixelForValue(i);
        const width = ctx.measureText(text).width + 6;
        ctx.fillStyle = chartInk().labelBg;
        ctx.fillRect(cx - width / 2, chartArea.top + 2, width, 15);
        ctx.fillStyle = chartInk().ink;
        ctx.fillText(text, cx, chartArea.top + 4);
      });
      ctx.restore();
    },
  };
}

/** A swatch and its text, for the HTML legends beside the charts. */
export function legendItem(color: string, label: string, title?: string, extraClass = ""): HTMLElement {
  const swatch = h("span", { class: `ov-swatch ${extraClass}`.trim() });
  swatch.style.background = color;
  return h("li", { title }, swatch, label);
}
