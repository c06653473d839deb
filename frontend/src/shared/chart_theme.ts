/** The neutral colours of charts in the page's theme (theme.ts sets `data-theme` on the document
 * element). A canvas does not follow CSS, so charts take these as scriptable options (functions,
 * asked at each draw) and `drawChart` redraws its chart when the theme changes. HTML beside a chart
 * (legend swatches) uses the matching CSS variables instead. Series colours stay the same in both
 * themes: they are mid-tones, readable on white and on the dark background. */

export interface ChartInk {
  /** Tick labels and titles. */
  text: string;
  grid: string;
  /** Axis lines and the grid of scales that name no colour (Chart.js' `borderColor`). */
  border: string;
  /** Grid lines that mark a decade on a logarithmic axis. */
  gridMajor: string;
  /** Lines and labels drawn in the text colour (a median line, a compute roof). */
  ink: string;
  /** The chart's background: hollow markers are filled with it. */
  surface: string;
  /** Behind a label drawn over bars. */
  labelBg: string;
  /** A shaded band (warm-up steps). */
  band: string;
  /** A warm band (warm-up steps in a step chart). */
  warmBand: string;
  /** Text that calls for attention (the ticks of warm-up steps). */
  warn: string;
}

const LIGHT: ChartInk = {
  text: "#4b5563",
  grid: "#eef0f3",
  border: "rgba(0, 0, 0, 0.1)",
  gridMajor: "#d5d9de",
  ink: "#202124",
  surface: "#ffffff",
  labelBg: "rgba(255, 255, 255, 0.9)",
  band: "#f1f3f4",
  warmBand: "#fef7e0",
  warn: "#b06000",
};

const DARK: ChartInk = {
  text: "#b4b8bf",
  grid: "#303338",
  border: "rgba(255, 255, 255, 0.14)",
  gridMajor: "#4a4e55",
  ink: "#e8eaed",
  surface: "#1e1f22",
  labelBg: "rgba(30, 31, 34, 0.9)",
  band: "#2a2c30",
  warmBand: "#3a3322",
  warn: "#fdd663",
};

export function isDarkTheme(): boolean {
  return typeof document !== "undefined" && document.documentElement.dataset.theme === "dark";
}

export function chartInk(): ChartInk {
  return isDarkTheme() ? DARK : LIGHT;
}

/** Scriptable grid colour for a chart's scales. */
export const gridColor = (): string => chartInk().grid;

/** Calls `changed` whenever the page's theme changes; returns the function that stops watching. */
export function onThemeChange(changed: () => void): () => void {
  if (typeof MutationObserver === "undefined" || typeof document === "undefined") return () => {};
  const observer = new MutationObserver(changed);
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  return () => observer.disconnect();
}
