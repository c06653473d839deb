/** Drawing of the timeline, one pass per frame: backgrounds and boxes rasterized in a framebuffer
 * (raster.ts) and put on the canvas at once, then with the canvas API the names inside boxes wide
 * enough, counters, selection, flows, marks, the track labels and the cursor. A pure function of the
 * state it is given. */

import { formatDuration } from "../../shared/units.ts";
import { computeTicks, DURATION_DIGITS, formatTimestamp, originText } from "./axis.ts";
import { canvasColors, textColorOn } from "./colors.ts";
import { type Layout, PINNED_SECTION, ROW_HEIGHT, SECTION_HEIGHT, TRACK_PAD } from "./layout.ts";
import {
  type Band,
  BOX_HEIGHT,
  fillBands,
  type Label,
  paintPieces,
  type Raster,
  replicateRows,
  type RowGeometry,
} from "./raster.ts";
import type { ColoredRange } from "./measure.ts";
import type { Piece } from "./scene.ts";
import type { Projection } from "./viewport.ts";

export const LABEL_WIDTH = 260;
const FONT = "11px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
const BOLD_FONT = "600 11px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
const MIN_LABEL_PX = 28;
const MAX_FLOWS = 3000;

export interface SelectedBox {
  id: number;
  track: number;
  depth: number;
  startNs: number;
  durNs: number;
}

export interface FlowArrow {
  srcTrack: number;
  srcDepth: number;
  srcNs: number;
  dstTrack: number;
  dstDepth: number;
  dstNs: number;
}

export interface Overlay {
  selected: SelectedBox[];
  /** Highlighted time range (selection range on its tracks, `m` mark, timing measurement). */
  marks: ColoredRange[];
  /** Rubber band being dragged, in canvas pixels. */
  band: { x0: number; y0: number; x1: number; y1: number } | null;
  /** Vertical cursor line, canvas x. */
  cursorX: number | null;
  showFlows: boolean;
  /** Flows always drawn (those of the selected event), in bold. */
  pinnedFlows: FlowArrow[];
}

export interface FrameInput {
  ctx: CanvasRenderingContext2D;
  width: number;
  height: number;
  scrollY: number;
  proj: Projection;
  layout: Layout;
  pieces: Piece[];
  overlay: Overlay;
  /** The trace's span end: nothing is drawn after it. */
  spanEnd: number;
  /** Hosts merged on this timeline (section headers then name their host). */
  multiHost: boolean;
  /** Device pixels per CSS pixel (the context is already scaled by it). */
  dpr: number;
}

export interface FrameStats {
  boxes: number;
  summaries: number;
  labels: number;
  flows: number;
}

const textWidths = new Map<string, number>();

function textWidth(ctx: CanvasRenderingContext2D, s: string): number {
  let w = textWidths.get(s);
  if (w === undefined) {
    w = ctx.measureText(s).width;
    if (textWidths.size > 20000) textWidths.clear();
    textWidths.set(s, w);
  }
  return w;
}

/** `s` cut with an ellipsis to fit `maxPx`, or "" when not even one character fits. */
export function fitText(ctx: CanvasRenderingContext2D, s: string, maxPx: number): string {
  const full = textWidth(ctx, s);
  if (full <= maxPx) return s;
  // Estimate from the average character width, then shorten until it really fits (proportional fonts).
  let n = Math.floor((maxPx / full) * s.length);
  while (n >= 1 && textWidth(ctx, `${s.slice(0, n)}…`) > maxPx) n--;
  return n >= 1 ? `${s.slice(0, n)}…` : "";
}

/** Where each track's box rows are on the canvas this frame. */
function rowGeometry(layout: Layout, scrollY: number): RowGeometry {
  let maxId = 0;
  for (const id of layout.tracks.keys()) maxId = Math.max(maxId, id);
  const tops = new Float64Array(maxId + 1).fill(NaN);
  const maxDepth = new Int32Array(maxId + 1);
  const shade = new Uint8Array(maxId + 1);
  const collapsed = new Uint8Array(maxId + 1);
  let k = 0;
  for (const s of layout.sections) {
    for (const t of s.tracks) {
      const id = t.track.id;
      shade[id] = k++ % 2;
      if (t.isCounter) continue;
      if (s.collapsed) {
        // A collapsed section still shows when its tracks are busy: their top-level events, overlaid
        // in the header row.
        collapsed[id] = 1;
        tops[id] = s.top + (SECTION_HEIGHT - ROW_HEIGHT) / 2 - scrollY;
      } else {
        maxDepth[id] = t.rows - 1;
        tops[id] = t.top - scrollY;
      }
    }
  }
  return { tops, maxDepth, shade, collapsed };
}

/** Background bands (section headers, tracks, separators) visible on a canvas `height` tall. */
function backgroundBands(layout: Layout, scrollY: number, height: number): Band[] {
  const c = canvasColors();
  const bands: Band[] = [{ y: 0, height, color: c.rows[0] }];
  let k = 0;
  for (const s of layout.sections) {
    const top = s.top - scrollY;
    if (s.bottom - scrollY < 0 || top > height) {
      k += s.tracks.length;
      continue;
    }
    bands.push({ y: top, height: SECTION_HEIGHT, color: c.sectionBg }, { y: top + SECTION_HEIGHT - 1, height: 1, color: c.sectionLine });
    for (const t of s.tracks) {
      const shade = c.rows[k++ % 2];
      if (s.collapsed) continue;
      const y = (t.isCounter ? t.top : t.top - TRACK_PAD) - scrollY;
      if (y > height || y + t.height < 0) continue;
      bands.push({ y, height: t.height, color: shade }, { y: y + t.height - 1, height: 1, color: c.rowLine });
    }
  }
  return bands;
}

let raster: { image: ImageData; raster: Raster } | null = null;

/** The reusable framebuffer for the timeline area, resized with the canvas. */
function frameRaster(ctx: CanvasRenderingContext2D, width: number, height: number): { image: ImageData; raster: Raster } {
  if (!raster || raster.image.width !== width || raster.image.height !== height) {
    const image = ctx.createImageData(width, height);
    raster = { image, raster: { u: new Uint32Array(image.data.buffer), width, height } };
  }
  return raster;
}

export function drawFrame(f: FrameInput): FrameStats {
  const { ctx, width, height, scrollY, layout, dpr } = f;
  const stats: FrameStats = { boxes: 0, summaries: 0, labels: 0, flows: 0 };
  const left = LABEL_WIDTH;
  ctx.font = FONT;
  ctx.textBaseline = "middle";

  const geo = rowGeometry(layout, scrollY);
  const bands = backgroundBands(layout, scrollY, height);
  const devLeft = Math.round(left * dpr);
  const devW = Math.max(1, Math.round(width * dpr) - devLeft);
  const devH = Math.max(1, Math.round(height * dpr));
  const fb = frameRaster(ctx, devW, devH);
  fillBands(fb.raster, bands, dpr);
  const labels: Label[] = [];
  const xm = { originX: f.proj.x0 - f.proj.range.start * f.proj.pxPerNs, pxPerNs: f.proj.pxPerNs, left, right: width };
  paintPieces(fb.raster, dpr, geo, f.pieces, xm, MIN_LABEL_PX, labels, stats);
  replicateRows(fb.raster, dpr, geo);
  ctx.putImageData(fb.image, devLeft, 0);

  ctx.save();
  ctx.beginPath();
  ctx.rect(left, 0, width - left, height);
  ctx.clip();
  drawGrid(f);
  drawBoxLabels(ctx, labels, stats);
  drawCounters(f);
  drawSpanEdges(f);
  drawSelection(f, geo);
  if (f.overlay.showFlows || f.overlay.pinnedFlows.length) drawFlows(f, stats);
  drawMarks(f);
  ctx.restore();

  drawLabels(f, bands);
  const { band, cursorX } = f.overlay;
  if (band) {
    ctx.fillStyle = "rgba(66, 133, 244, 0.12)";
    ctx.strokeStyle = "rgba(66, 133, 244, 0.9)";
    ctx.lineWidth = 1;
    const x = Math.min(band.x0, band.x1);
    const y = Math.min(band.y0, band.y1);
    ctx.fillRect(x, y, Math.abs(band.x1 - band.x0), Math.abs(band.y1 - band.y0));
    ctx.strokeRect(x + 0.5, y + 0.5, Math.abs(band.x1 - band.x0), Math.abs(band.y1 - band.y0));
  }
  if (cursorX !== null && cursorX >= left) {
    ctx.strokeStyle = canvasColors().cursorLine;
    ctx.beginPath();
    ctx.moveTo(Math.round(cursorX) + 0.5, 0);
    ctx.lineTo(Math.round(cursorX) + 0.5, height);
    ctx.stroke();
  }
  return stats;
}

/** Names inside the boxes wide enough to hold some of them. */
function drawBoxLabels(ctx: CanvasRenderingContext2D, labels: Label[], stats: FrameStats): void {
  for (const l of labels) {
    const text = fitText(ctx, l.name, l.w - 6);
    if (!text) continue;
    ctx.fillStyle = textColorOn(l.color);
    ctx.fillText(text, l.x + 3, l.y + BOX_HEIGHT / 2 + 0.5);
    stats.labels++;
  }
}

function drawGrid(f: FrameInput): void {
  const { ctx, width, height, proj } = f;
  const ticks = computeTicks(proj.range.start, proj.range.end, width - LABEL_WIDTH);
  ctx.fillStyle = canvasColors().grid;
  for (const t of ticks.ticks) {
    const x = Math.round(proj.x(t.ns));
    if (x >= LABEL_WIDTH) ctx.fillRect(x, 0, 1, height);
  }
}

function drawSpanEdges(f: FrameInput): void {
  const { ctx, height, proj, width } = f;
  ctx.fillStyle = canvasColors().outsideSpan;
  const x0 = proj.x(0);
  if (x0 > LABEL_WIDTH) ctx.fillRect(LABEL_WIDTH, 0, x0 - LABEL_WIDTH, height);
  const x1 = proj.x(f.spanEnd);
  if (x1 < width) ctx.fillRect(x1, 0, width - x1, height);
}

function drawCounters(f: FrameInput): void {
  const { ctx, proj, scrollY, layout, height } = f;
  const colors = canvasColors();
  const pxPerNs = proj.pxPerNs;
  const originX = proj.x0 - proj.range.start * pxPerNs;
  for (const [id, t] of layout.tracks) {
    if (!t.isCounter || t.section.collapsed) continue;
    const top = t.top - scrollY;
    if (top > height || top + t.height < 0) continue;
    const xs: number[] = [];
    const ws: number[] = [];
    const maxes: number[] = [];
    const lasts: number[] = [];
    for (const p of f.pieces) {
      const c = p.tile.counters;
      for (let i = 0; i < c.n; i++) {
        if (c.track[i] !== id) continue;
        const s = p.tile.startNs + c.start[i];
        if (s < p.from || s >= p.to) continue;
        xs.push(originX + s * pxPerNs);
        ws.push(Math.max(1, c.width[i] * pxPerNs));
        maxes.push(c.max[i]);
        lasts.push(c.last[i]);
      }
    }
    if (!xs.length) continue;
    let hi = 0;
    let lo = 0;
    for (let i = 0; i < xs.length; i++) {
      if (maxes[i] > hi) hi = maxes[i];
      if (lasts[i] < lo) lo = lasts[i];
    }
    const range = hi - lo || 1;
    const base = top + t.height - 3;
    const scale = (t.height - 8) / range;
    const yOf = (v: number) => base - (v - lo) * scale;
    const zero = yOf(0 > lo ? 0 : lo);
    const end = Math.min(originX + f.spanEnd * pxPerNs, f.width);
    ctx.beginPath();
    ctx.moveTo(xs[0], zero);
    for (let i = 0; i < xs.length; i++) {
      ctx.lineTo(xs[i], yOf(maxes[i]));
      ctx.lineTo(xs[i] + ws[i], yOf(maxes[i]));
      ctx.lineTo(xs[i] + ws[i], yOf(lasts[i]));
      ctx.lineTo(i + 1 < xs.length ? xs[i + 1] : Math.max(end, xs[i] + ws[i]), yOf(lasts[i]));
    }
    ctx.lineTo(Math.max(end, xs[xs.length - 1] + ws[ws.length - 1]), zero);
    ctx.closePath();
    ctx.fillStyle = colors.counterFill;
    ctx.fill();
    ctx.strokeStyle = colors.counterLine;
    ctx.lineWidth = 1;
    ctx.stroke();
    ctx.fillStyle = colors.counterText;
    ctx.fillText(`max ${formatValue(hi)}`, LABEL_WIDTH + 4, top + 8);
  }
}

function formatValue(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) return `${(v / 1e9).toFixed(2)} G`;
  if (a >= 1e6) return `${(v / 1e6).toFixed(2)} M`;
  if (a >= 1e4) return `${(v / 1e3).toFixed(1)} k`;
  return Number.isInteger(v) ? String(v) : v.toPrecision(4);
}

function drawSelection(f: FrameInput, geo: RowGeometry): void {
  const { ctx, proj, width } = f;
  const colors = canvasColors();
  for (const s of f.overlay.selected) {
    const top = s.track < geo.tops.length && !geo.collapsed[s.track] ? geo.tops[s.track] : NaN;
    if (top !== top) continue;
    const y = top + s.depth * ROW_HEIGHT + 1;
    let x0 = proj.x(s.startNs);
    let x1 = proj.x(s.startNs + s.durNs);
    if (x1 - x0 < 3) {
      const mid = (x0 + x1) / 2;
      x0 = mid - 1.5;
      x1 = mid + 1.5;
    }
    if (x1 < LABEL_WIDTH || x0 > width) continue;
    x0 = Math.max(x0, LABEL_WIDTH - 2);
    x1 = Math.min(x1, width + 2);
    ctx.lineWidth = 2;
    ctx.strokeStyle = colors.selectionOuter;
    ctx.strokeRect(x0 - 1, y - 1, x1 - x0 + 2, BOX_HEIGHT + 2);
    ctx.lineWidth = 1;
    ctx.strokeStyle = colors.selectionInner;
    ctx.strokeRect(x0 + 0.5, y + 0.5, x1 - x0 - 1, BOX_HEIGHT - 1);
  }
}

function drawArrow(ctx: CanvasRenderingContext2D, x0: number, y0: number, x1: number, y1: number): void {
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  const dx = Math.max(20, Math.abs(x1 - x0) / 2);
  ctx.bezierCurveTo(x0 + dx, y0, x1 - dx, y1, x1, y1);
  ctx.stroke();
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x1 - 7, y1 - 4);
  ctx.lineTo(x1 - 7, y1 + 4);
  ctx.closePath();
  ctx.fill();
}

function drawFlows(f: FrameInput, stats: FrameStats): void {
  const { ctx, proj, layout, scrollY, width } = f;
  const seen = new Set<string>();
  ctx.lineWidth = 1;
  const colors = canvasColors();
  ctx.strokeStyle = colors.flow;
  ctx.fillStyle = colors.flowHead;
  if (f.overlay.showFlows) {
    outer: for (const p of f.pieces) {
      const fl = p.tile.flows;
      const base = p.tile.startNs;
      for (let i = 0; i < fl.n; i++) {
        const key = `${fl.srcTrack[i]}:${fl.srcId[i]}>${fl.dstTrack[i]}:${fl.dstId[i]}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const xs = proj.x(base + fl.srcTime[i]);
        const xd = proj.x(base + fl.dstTime[i]);
        if ((xs < LABEL_WIDTH && xd < LABEL_WIDTH) || (xs > width && xd > width)) continue;
        const ys = layout.yOf(fl.srcTrack[i], fl.srcDepth[i]);
        const yd = layout.yOf(fl.dstTrack[i], fl.dstDepth[i]);
        if (ys === null || yd === null) continue;
        drawArrow(ctx, xs, ys - scrollY, xd, yd - scrollY);
        if (++stats.flows >= MAX_FLOWS) break outer;
      }
    }
  }
  ctx.lineWidth = 2;
  ctx.strokeStyle = colors.pinnedFlow;
  ctx.fillStyle = colors.pinnedFlow;
  for (const a of f.overlay.pinnedFlows) {
    const ys = layout.yOf(a.srcTrack, a.srcDepth);
    const yd = layout.yOf(a.dstTrack, a.dstDepth);
    if (ys === null || yd === null) continue;
    drawArrow(ctx, proj.x(a.srcNs), ys - scrollY, proj.x(a.dstNs), yd - scrollY);
    stats.flows++;
  }
}

function drawMarks(f: FrameInput): void {
  const { ctx, proj, height } = f;
  for (const m of f.overlay.marks) {
    const x0 = proj.x(m.start);
    const x1 = proj.x(m.end);
    ctx.fillStyle = m.color;
    for (const [y, h] of m.tracks ? trackSpans(f.layout, m.tracks, f.scrollY) : [[0, height]]) {
      ctx.globalAlpha = 0.12;
      ctx.fillRect(x0, y, Math.max(1, x1 - x0), h);
      ctx.globalAlpha = 0.9;
      ctx.fillRect(Math.round(x0), y, 1, h);
      ctx.fillRect(Math.round(x1), y, 1, h);
    }
    ctx.globalAlpha = 1;
  }
}

/** [y, height] on screen of the rows of `tracks` (a folded section's header for its tracks),
 * neighbours merged into one span. */
function trackSpans(layout: Layout, tracks: number[], scrollY: number): [number, number][] {
  const spans: [number, number][] = [];
  for (const id of tracks) {
    const t = layout.tracks.get(id);
    if (!t) continue;
    const top = t.section.collapsed ? t.section.top : t.isCounter ? t.top : t.top - TRACK_PAD;
    const height = t.section.collapsed ? SECTION_HEIGHT : t.height;
    spans.push([top - scrollY, height]);
  }
  spans.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const [y, h] of spans) {
    const last = merged[merged.length - 1];
    if (last && y <= last[0] + last[1] + 1) last[1] = Math.max(last[1], y + h - last[0]);
    else merged.push([y, h]);
  }
  return merged;
}

const KIND_TAGS: Record<string, string> = {
  thread: "thread",
  stream: "stream",
  line: "line",
  derived: "derived",
  async: "async",
  counter: "counter",
};

function drawLabels(f: FrameInput, bands: Band[]): void {
  const { ctx, height, scrollY, layout } = f;
  const colors = canvasColors();
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, 0, LABEL_WIDTH, height);
  ctx.clip();
  for (const b of bands) {
    ctx.fillStyle = b.color;
    ctx.fillRect(0, b.y, LABEL_WIDTH, b.height);
  }
  for (const s of layout.sections) {
    const y = s.top - scrollY;
    if (s.bottom - scrollY < 0 || y > height) continue;
    ctx.fillStyle = colors.sectionText;
    ctx.font = BOLD_FONT;
    const arrow = s.collapsed ? "▸" : "▾";
    const host = f.multiHost && s.hostName ? `${s.hostName} · ` : "";
    const title = `${arrow} ${host}${s.section.name}`;
    ctx.fillText(fitText(ctx, title, LABEL_WIDTH - 60), 6, y + SECTION_HEIGHT / 2);
    ctx.font = FONT;
    ctx.fillStyle = colors.mutedText;
    const tag = `${s.section.kind.toUpperCase()} · ${s.tracks.length}`;
    ctx.fillText(tag, LABEL_WIDTH - 8 - textWidth(ctx, tag), y + SECTION_HEIGHT / 2);
    if (s.collapsed) continue;
    for (const t of s.tracks) {
      const top = (t.isCounter ? t.top : t.top - TRACK_PAD) - scrollY;
      if (top > height || top + t.height < 0) continue;
      // Sticky: the label stays in view while a deep track scrolls past the top.
      const first = Math.min(t.height, ROW_HEIGHT + 2 * TRACK_PAD) / 2;
      const mid = Math.max(top + first, Math.min(first, top + t.height - first));
      const limited = t.rows <= t.track.max_depth ? ` · ${t.rows}/${t.track.max_depth + 1} rows` : "";
      const tag = (KIND_TAGS[t.track.kind] ?? t.track.kind) + limited;
      const tagW = textWidth(ctx, tag);
      const name = s.section.id === PINNED_SECTION ? `${t.track.name} · ${t.home.name}` : t.track.name;
      ctx.fillStyle = colors.trackText;
      ctx.fillText(fitText(ctx, name, LABEL_WIDTH - 34 - tagW), 18, mid);
      ctx.fillStyle = colors.mutedText;
      ctx.fillText(tag, LABEL_WIDTH - 8 - tagW, mid);
    }
  }
  ctx.fillStyle = colors.border;
  ctx.fillRect(LABEL_WIDTH - 1, 0, 1, height);
  ctx.restore();
}

/** The time axis above the tracks: ticks in an adaptive unit as offsets from the origin written at
 * their left (axis.ts), the cursor's time in full and marked ranges. */
export function drawAxis(
  ctx: CanvasRenderingContext2D,
  width: number,
  height: number,
  proj: Projection,
  marks: { start: number; end: number; color: string }[],
  cursorX: number | null,
): void {
  const colors = canvasColors();
  ctx.clearRect(0, 0, width, height);
  ctx.fillStyle = colors.axisBg;
  ctx.fillRect(0, 0, width, height);
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  const ticks = computeTicks(proj.range.start, proj.range.end, width - LABEL_WIDTH);
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_WIDTH, 0, width - LABEL_WIDTH, height);
  ctx.clip();
  ctx.fillStyle = colors.axisText;
  for (const t of ticks.ticks) {
    const x = Math.round(proj.x(t.ns));
    ctx.fillRect(x, height - 8, 1, 8);
    ctx.fillText(t.label, x + 3, height / 2 - 2);
  }
  for (const m of marks) {
    const x0 = proj.x(m.start);
    const x1 = proj.x(m.end);
    ctx.fillStyle = m.color;
    ctx.globalAlpha = 0.25;
    ctx.fillRect(x0, 0, Math.max(1, x1 - x0), height);
    ctx.globalAlpha = 1;
    const label = formatDuration(m.end - m.start, DURATION_DIGITS);
    const w = textWidth(ctx, label) + 8;
    const cx = Math.min(Math.max((x0 + x1) / 2, LABEL_WIDTH + w / 2), width - w / 2);
    ctx.fillStyle = colors.badgeBg;
    ctx.fillRect(cx - w / 2, height - 15, w, 13);
    ctx.strokeStyle = m.color;
    ctx.strokeRect(cx - w / 2 + 0.5, height - 14.5, w - 1, 12);
    ctx.fillStyle = colors.badgeText;
    ctx.fillText(label, cx - w / 2 + 4, height - 8.5);
  }
  if (cursorX !== null && cursorX >= LABEL_WIDTH) {
    const label = formatTimestamp(proj.ns(cursorX), proj.nsPerPx, Math.max(Math.abs(proj.range.start), Math.abs(proj.range.end)));
    const w = textWidth(ctx, label) + 8;
    const x = Math.min(cursorX + 4, width - w);
    ctx.fillStyle = colors.trackText;
    ctx.fillRect(x, 2, w, 13);
    ctx.fillStyle = colors.rows[0];
    ctx.fillText(label, x + 4, 8.5);
  }
  ctx.restore();
  ctx.fillStyle = colors.mutedText;
  // The labels count from this time (from the trace's start), written in full at their left.
  const origin = originText(ticks);
  ctx.fillText(origin, LABEL_WIDTH - 8 - textWidth(ctx, origin), height / 2);
  ctx.fillStyle = colors.border;
  ctx.fillRect(0, height - 1, width, 1);
  ctx.fillRect(LABEL_WIDTH - 1, 0, 1, height);
}
