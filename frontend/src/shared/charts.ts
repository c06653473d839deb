/** Charts of every view are drawn with the project's one charting library, Chart.js (bundled, MIT),
 * loaded the first time a view draws one: `import()` makes it a chunk of its own, so only views that
 * chart fetch it. What a chart shows is also written as text inside its canvas (fallback content),
 * which screen readers and the browser tests read. */

import type { Chart, ChartConfiguration, ChartType, DefaultDataPoint, Plugin } from "chart.js";

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

/** Draws `config` on `canvas` once the library is loaded. The canvas keeps its children as fallback
 * content; a canvas without a 2D context (a DOM without canvas support) keeps only those. */
export function drawChart<T extends ChartType, D = DefaultDataPoint<T>, L = unknown>(
  canvas: HTMLCanvasElement,
  config: ChartConfiguration<T, D, L>,
): DrawnChart<T, D, L> {
  let chart: Chart<T, D, L> | null = null;
  let destroyed = false;
  const ready = canvas.getContext("2d")
    ? loadCharts().then(({ Chart: ChartClass }) => {
        if (destroyed) return null;
        chart = new ChartClass<T, D, L>(canvas, { ...config, plugins: [...(config.plugins ?? []), markDrawn<T>()] });
        return chart;
      })
    : Promise.resolve(null);
  return {
    canvas,
    ready,
    destroy() {
      destroyed = true;
      chart?.destroy();
      chart = null;
    },
  };
}
