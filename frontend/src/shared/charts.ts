/** Charts of every view are drawn with the project's one charting library, Chart.js (bundled, MIT),
 * loaded the first time a view draws one: `import()` makes it a chunk of its own, so only views that
 * chart fetch it. What a chart shows is also written as text inside its canvas (fallback content),
 * which screen readers and the browser tests read. */

import type { Chart, ChartConfiguration, ChartType, DefaultDataPoint, Plugin } from "chart.js";
import { chartInk, onThemeChange } from "./chart_theme.ts";

type ChartLibrary = typeof import("./chart_library.ts");

let library: Promise<ChartLibrary> | null = null;

/** Chart.js, registered and with profscope's defaults; loaded once. */
export function loadCharts(): Promise<ChartLibrary> {
  library ??= import("./chart_library.ts");
  return library;
}

export interface DrawnChart<T extends ChartType, D, L> {
  canvas: HTMLCanvasElement;
  /** The chart once the library is loaded; null where the canvas cannot draw (no 2D context). */
  ready: Promise<Chart<T, D, L> | null>;
  destroy(): void;
}

/** Marks the canvas `data-drawn` after its first frame, so tests (and users of the DOM) can tell a
 * drawn chart from one still waiting for the library or for a size. */
function markDrawn<T extends ChartType>(): Plugin<T> {
  return {
    id: "profscopeDrawn",
    afterRender(chart) {
      chart.canvas.dataset.drawn = "1";
    },
  };
}

type ScaleColours = { ticks?: { color?: unknown }; title?: { color?: unknown }; grid?: { color?: unknown }; border?: { color?: unknown } };

/** `config` with the colours of its scales' labels, titles, grid and axis lines that the view left
 * out taken from the page's theme, asked at each draw (the library's defaults are read once). */
export function themed<T extends ChartType, D, L>(config: ChartConfiguration<T, D, L>): ChartConfiguration<T, D, L> {
  const scales = (config.options as { scales?: Record<string, ScaleColours> } | undefined)?.scales ?? {};
  const text = () => chartInk().text;
  const line = () => chartInk().border;
  const withInk = Object.fromEntries(
    Object.entries(scales).map(([id, scale]) => [
      id,
      {
        ...scale,
        ticks: { ...scale.ticks, color: scale.ticks?.color ?? text },
        title: { ...scale.title, color: scale.title?.color ?? text },
        grid: { ...scale.grid, color: scale.grid?.color ?? line },
        border: { ...scale.border, color: scale.border?.color ?? line },
      },
    ]),
  );
  return { ...config, options: { ...config.options, scales: withInk } as ChartConfiguration<T, D, L>["options"] };
}

/** Draws `config` on `canvas` once the library is loaded, and again in the new colours when the
 * page's theme changes. The canvas keeps its children as fallback content; a canvas without a 2D
 * context (a DOM without canvas support) keeps only those. */
export function drawChart<T extends ChartType, D = DefaultDataPoint<T>, L = unknown>(
  canvas: HTMLCanvasElement,
  config: ChartConfiguration<T, D, L>,
): DrawnChart<T, D, L> {
  let chart: Chart<T, D, L> | null = null;
  let destroyed = false;
  let stopWatching = () => {};
  const ready = canvas.getContext("2d")
    ? loadCharts().then((library) => {
        if (destroyed) return null;
        chart = new library.Chart<T, D, L>(canvas, { ...themed(config), plugins: [...(config.plugins ?? []), markDrawn<T>()] });
        stopWatching = onThemeChange(() => chart?.update("none"));
        return chart;
      })
    : Promise.resolve(null);
  return {
    canvas,
    ready,
    destroy() {
      destroyed = true;
      stopWatching();
      chart?.destroy();
      chart = null;
    },
  };
}
