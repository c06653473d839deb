/** Stable event colours: the same name gets the same colour in every tile, zoom level and session,
 * so a kernel is recognisable at a glance. */

const PALETTE = [
  "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
  "#9c755f", "#8cd17d", "#86bcb6", "#f1ce63", "#a0cbe8", "#ffbe7d", "#d4a6c8", "#499894",
  "#d37295", "#b6992d", "#79706e", "#fabfd2", "#6b9ac4", "#c9a35b", "#7fb685", "#c27a7e",
];

export const PALETTE_SIZE = PALETTE.length;

/** 32-bit FNV-1a: cheap, stable across browsers and sessions. */
export function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function colorIndex(name: string): number {
  return hashName(name) % PALETTE.length;
}

export function colorOf(index: number): string {
  return PALETTE[index];
}

/** Black or white, whichever reads better on palette colour `index`. */
export function textColorOn(index: number): string {
  const hex = PALETTE[index];
  const r = parseInt(hex.slice(1, 3), 16);
  const g = parseInt(hex.slice(3, 5), 16);
  const b = parseInt(hex.slice(5, 7), 16);
  return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? "#1b1b1b" : "#ffffff";
}

/** The colours the timeline's canvases draw with besides the events', one set per theme (the page's
 * `data-theme`, theme.ts): a canvas does not follow CSS, so it asks each frame. Hex colours are
 * #rrggbb (the framebuffer blends them, raster.ts). */
export interface CanvasColors {
  /** The two alternating track backgrounds. */
  rows: [string, string];
  rowLine: string;
  sectionBg: string;
  sectionLine: string;
  /** Summaries of dense stretches, blended over the track background. */
  density: string;
  grid: string;
  outsideSpan: string;
  sectionText: string;
  trackText: string;
  mutedText: string;
  border: string;
  axisBg: string;
  axisText: string;
  /** The cursor's time badge on the axis, and the duration badge of a marked range. */
  badgeBg: string;
  badgeText: string;
  cursorLine: string;
  selectionOuter: string;
  selectionInner: string;
  flow: string;
  flowHead: string;
  pinnedFlow: string;
  counterFill: string;
  counterLine: string;
  counterText: string;
}

const LIGHT_CANVAS: CanvasColors = {
  rows: ["#ffffff", "#f7f8fa"],
  rowLine: "#eceff3",
  sectionBg: "#e8ecf2",
  sectionLine: "#c9d1dc",
  density: "#46566e",
  grid: "rgba(0,0,0,0.06)",
  outsideSpan: "rgba(120,120,120,0.12)",
  sectionText: "#1f2937",
  trackText: "#111827",
  mutedText: "#6b7280",
  border: "#c9d1dc",
  axisBg: "#f3f5f8",
  axisText: "#374151",
  badgeBg: "#ffffff",
  badgeText: "#111827",
  cursorLine: "rgba(0,0,0,0.35)",
  selectionOuter: "#111111",
  selectionInner: "#ffffff",
  flow: "rgba(150, 60, 20, 0.75)",
  flowHead: "rgba(150, 60, 20, 0.9)",
  pinnedFlow: "rgba(200, 30, 30, 0.95)",
  counterFill: "rgba(46, 125, 50, 0.35)",
  counterLine: "rgba(27, 94, 32, 0.9)",
  counterText: "#1b5e20",
};

const DARK_CANVAS: CanvasColors = {
  rows: ["#1e1f22", "#232428"],
  rowLine: "#2c2e33",
  sectionBg: "#2b2d31",
  sectionLine: "#3d4047",
  density: "#9aa8bd",
  grid: "rgba(255,255,255,0.07)",
  outsideSpan: "rgba(0,0,0,0.35)",
  sectionText: "#e3e5e8",
  trackText: "#e8eaed",
  mutedText: "#9aa0a6",
  border: "#3d4047",
  axisBg: "#26282c",
  axisText: "#c4c7cc",
  badgeBg: "#303236",
  badgeText: "#e8eaed",
  cursorLine: "rgba(255,255,255,0.45)",
  selectionOuter: "#ffffff",
  selectionInner: "#111111",
  flow: "rgba(255, 167, 112, 0.8)",
  flowHead: "rgba(255, 167, 112, 0.95)",
  pinnedFlow: "rgba(255, 92, 92, 0.95)",
  counterFill: "rgba(129, 199, 132, 0.35)",
  counterLine: "rgba(165, 214, 167, 0.9)",
  counterText: "#a5d6a7",
};

/** The page's theme as theme.ts set it ("light" outside a page, in tests without a DOM). */
export function pageTheme(): "light" | "dark" {
  return typeof document !== "undefined" && document.documentElement.dataset.theme === "dark" ? "dark" : "light";
}

export function canvasColors(theme = pageTheme()): CanvasColors {
  return theme === "dark" ? DARK_CANVAS : LIGHT_CANVAS;
}
