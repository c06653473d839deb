/** The visible time window and the pure math of zooming and panning it. Kept free of the DOM so the
 * navigation behaviour is unit-tested. */

export interface Range {
  start: number;
  end: number;
}

export interface Limits {
  /** Trace span [0, end] in ns. */
  spanStart: number;
  spanEnd: number;
  /** Narrowest window a user can zoom to, ns. */
  minRange: number;
}

/** How far beyond the trace the window may go, as a fraction of the span (room to see the edges). */
const OVERSCROLL = 0.1;

export function limitsFor(spanStart: number, spanEnd: number): Limits {
  return { spanStart, spanEnd: Math.max(spanEnd, spanStart + 1), minRange: 1 };
}

/** Clamp a window to the limits, keeping its width when it only has to move. */
export function clampRange(r: Range, lim: Limits): Range {
  const span = lim.spanEnd - lim.spanStart;
  const lo = lim.spanStart - span * OVERSCROLL;
  const hi = lim.spanEnd + span * OVERSCROLL;
  let width = Math.min(Math.max(r.end - r.start, lim.minRange), hi - lo);
  if (!Number.isFinite(width)) width = span;
  let start = r.start;
  if (!Number.isFinite(start)) start = lim.spanStart;
  start = Math.min(Math.max(start, lo), hi - width);
  return { start, end: start + width };
}

/** Zoom by `factor` (> 1 zooms in) keeping the instant `anchor` under the same pixel. */
export function zoomAround(r: Range, anchor: number, factor: number, lim: Limits): Range {
  const width = r.end - r.start;
  const newWidth = Math.min(Math.max(width / factor, lim.minRange), (lim.spanEnd - lim.spanStart) * (1 + 2 * OVERSCROLL));
  const frac = width > 0 ? (anchor - r.start) / width : 0.5;
  const start = anchor - frac * newWidth;
  return clampRange({ start, end: start + newWidth }, lim);
}

/** Pan by a fraction of the window width (positive moves later in time). */
export function panBy(r: Range, fraction: number, lim: Limits): Range {
  const d = (r.end - r.start) * fraction;
  return clampRange({ start: r.start + d, end: r.end + d }, lim);
}

/** The window showing [start, end] with a margin on both sides, used by "zoom to selection". */
export function fitRange(start: number, end: number, lim: Limits, margin = 0.1): Range {
  const width = Math.max(end - start, lim.minRange * 10);
  const pad = width * margin;
  const mid = (start + end) / 2;
  return clampRange({ start: mid - width / 2 - pad, end: mid + width / 2 + pad }, lim);
}

/** The time range under a horizontal drag from `x0` to `x1` (CSS px, either order), the ends held to
 * the timeline area [`left`, `right`]: a drag that runs over the track labels or past the canvas edge
 * measures up to the edge of what is visible, not beyond it. */
export function dragRange(proj: Projection, x0: number, x1: number, left: number, right: number): Range {
  const clamp = (x: number) => Math.min(Math.max(x, left), right);
  const a = proj.ns(clamp(Math.min(x0, x1)));
  const b = proj.ns(clamp(Math.max(x0, x1)));
  return { start: a, end: b };
}

/** Screen mapping of a window onto `widthPx` CSS pixels starting at `x0`. */
export class Projection {
  readonly pxPerNs: number;

  constructor(
    readonly range: Range,
    readonly x0: number,
    readonly widthPx: number,
  ) {
    this.pxPerNs = widthPx / Math.max(range.end - range.start, 1e-9);
  }

  x(ns: number): number {
    return this.x0 + (ns - this.range.start) * this.pxPerNs;
  }

  ns(x: number): number {
    return this.range.start + (x - this.x0) / this.pxPerNs;
  }

  get nsPerPx(): number {
    return 1 / this.pxPerNs;
  }
}
