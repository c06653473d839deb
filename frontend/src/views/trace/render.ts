/** Canvas 2D drawing of the timeline. One pass per frame: rectangles are gathered per colour and
 * filled as one path each (a few dozen fills for 100 k boxes), labels only where they fit, then
 * overlays (selection, flows, marks, cursor). Pure function of the state it is given. */

import type { Tile } from "../../api/tile.ts";
import { computeTicks } from "./axis.ts";
import { colorIndex, colorOf, PALETTE_SIZE, textColorOn } from "./colors.ts";
import { formatDuration } from "./format.ts";
import { type Layout, ROW_HEIGHT, SECTION_HEIGHT, TRACK_PAD } from "./layout.ts";
import type { Piece } from "./scene.ts";
import type { Projection } from "./viewport.ts";

export const LABEL_WIDTH = 260;
const FONT = "11px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
const BOLD_FONT = "600 11px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
const BOX_HEIGHT = ROW_HEIGHT - 2;
const MIN_LABEL_PX = 28;
const DENSITY_BUCKETS = 6;
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
  /** Highlighted time range (selection range, `m` mark, timing measurement). */
  marks: { start: number; end: number; color: string }[];
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
}

export interface FrameStats {
  boxes: number;
  summaries: number;
  labels: number;
  flows: number;
}

/** Reusable per-colour coordinate buffers, so a frame allocates nothing per event. */
class Buckets {
  xs: Float32Array[] = [];
  ys: Float32Array[] = [];
  ws: Float32Array[] = [];
  n: Int32Array;

  constructor(readonly count: number) {
    this.n = new Int32Array(count);
    for (let i = 0; i < count; i++) {
      this.xs.push(new Float32Array(256));
      this.ys.push(new Float32Array(256));
      this.ws.push(new Float32Array(256));
    }
  }

  reset(): void {
    this.n.fill(0);
  }

  push(b: number, x: number, y: number, w: number): void {
    let k = this.n[b];
    if (k === this.xs[b].length) {
      const grow = (a: Float32Array) => {
        const g = new Float32Array(a.length * 2);
        g.set(a);
        return g;
      };
      this.xs[b] = grow(this.xs[b]);
      this.ys[b] = grow(this.ys[b]);
      this.ws[b] = grow(this.ws[b]);
    }
    this.xs[b][k] = x;
    this.ys[b][k] = y;
    this.ws[b][k] = w;
    this.n[b] = ++k;
  }

  fill(ctx: CanvasRenderingContext2D, b: number, h: number): void {
    const n = this.n[b];
    if (!n) return;
    const xs = this.xs[b];
    const ys = this.ys[b];
    const ws = this.ws[b];
    ctx.beginPath();
    for (let i = 0; i < n; i++) ctx.rect(xs[i], ys[i], ws[i], h);
    ctx.fill();
  }
}

const eventBuckets = new Buckets(PALETTE_SIZE);
const densityBuckets = new Buckets(DENSITY_BUCKETS);
const tileColors = new WeakMap<Tile, Uint8Array>();

function colorsOf(tile: Tile): Uint8Array {
  let c = tileColors.get(tile);
  if (!c) {
    c = Uint8Array.from(tile.names, colorIndex);
    tileColors.set(tile, c);
  }
  return c;
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
  const perChar = full / s.length;
  const n = Math.floor(maxPx / perChar) - 1;
  return n >= 1 ? `${s.slice(0, n)}…` : "";
}

/** Top of each track's first row on the canvas (NaN when hidden), indexed by track id. */
function trackTops(layout: Layout, scrollY: number): Float64Array {
  let maxId = 0;
  for (const id of layout.tracks.keys()) maxId = Math.max(maxId, id);
  const tops = new Float64Array(maxId + 1).fill(NaN);
  for (const [id, t] of layout.tracks) if (!t.section.collapsed && !t.isCounter) tops[id] = t.top - scrollY;
  return tops;
}

export function drawFrame(f: FrameInput): FrameStats {
  const { ctx, width, height, scrollY, layout } = f;
  const stats: FrameStats = { boxes: 0, summaries: 0, labels: 0, flows: 0 };
  const left = LABEL_WIDTH;
  ctx.clearRect(0, 0, width, height);
  ctx.font = FONT;
  ctx.textBaseline = "middle";

  drawBackgrounds(f);
  drawGrid(f);

  ctx.save();
  ctx.beginPath();
  ctx.rect(left, 0, width - left, height);
  ctx.clip();
  const tops = trackTops(layout, scrollY);
  drawSummaries(f, tops, stats);
  drawEvents(f, tops, stats);
  drawCounters(f);
  drawSpanEdges(f);
  drawSelection(f, tops);
  if (f.overlay.showFlows || f.overlay.pinnedFlows.length) drawFlows(f, stats);
  drawMarks(f);
  ctx.restore();

  drawLabels(f);
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
    ctx.strokeStyle = "rgba(0,0,0,0.35)";
    ctx.beginPath();
    ctx.moveTo(Math.round(cursorX) + 0.5, 0);
    ctx.lineTo(Math.round(cursorX) + 0.5, height);
    ctx.stroke();
  }
  return stats;
}

function drawBackgrounds(f: FrameInput): void {
  const { ctx, width, height, scrollY, layout } = f;
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, width, height);
  let k = 0;
  for (const s of layout.sections) {
    if (s.bottom - scrollY < 0 || s.top - scrollY > height) {
      k += s.tracks.length;
      continue;
    }
    ctx.fillStyle = "#e8ecf2";
    ctx.fillRect(0, s.top - scrollY, width, SECTION_HEIGHT);
    ctx.fillStyle = "#c9d1dc";
    ctx.fillRect(0, s.top - scrollY + SECTION_HEIGHT - 1, width, 1);
    if (s.collapsed) continue;
    for (const t of s.tracks) {
      const top = (t.isCounter ? t.top : t.top - TRACK_PAD) - scrollY;
      ctx.fillStyle = k++ % 2 ? "#f7f8fa" : "#ffffff";
      ctx.fillRect(0, top, width, t.height);
      ctx.fillStyle = "#eceff3";
      ctx.fillRect(0, top + t.height - 1, width, 1);
    }
  }
}

function drawGrid(f: FrameInput): void {
  const { ctx, width, height, proj } = f;
  const ticks = computeTicks(proj.range.start, proj.range.end, width - LABEL_WIDTH);
  ctx.fillStyle = "rgba(0,0,0,0.06)";
  for (const t of ticks.ticks) {
    const x = Math.round(proj.x(t.ns));
    if (x >= LABEL_WIDTH) ctx.fillRect(x, 0, 1, height);
  }
}

function drawSpanEdges(f: FrameInput): void {
  const { ctx, height, proj, width } = f;
  ctx.fillStyle = "rgba(120,120,120,0.12)";
  const x0 = proj.x(0);
  if (x0 > LABEL_WIDTH) ctx.fillRect(LABEL_WIDTH, 0, x0 - LABEL_WIDTH, height);
  const x1 = proj.x(f.spanEnd);
  if (x1 < width) ctx.fillRect(x1, 0, width - x1, height);
}

function drawEvents(f: FrameInput, tops: Float64Array, stats: FrameStats): void {
  const { ctx, width, height, proj } = f;
  const left = LABEL_WIDTH;
  eventBuckets.reset();
  const labels: { x: number; y: number; w: number; name: string; c: number; id: number }[] = [];
  const labelled = new Set<number>();
  const pxPerNs = proj.pxPerNs;
  const originX = proj.x0 - proj.range.start * pxPerNs;
  for (const p of f.pieces) {
    const tile = p.tile;
    const ev = tile.events;
    const colors = colorsOf(tile);
    const base = tile.startNs;
    const clipL = Math.max(left, originX + p.from * pxPerNs);
    const clipR = Math.min(width, originX + p.to * pxPerNs);
    if (clipR <= clipL) continue;
    for (let i = 0; i < ev.n; i++) {
      const tr = ev.track[i];
      const top = tr < tops.length ? tops[tr] : NaN;
      if (top !== top) continue;
      const y = top + ev.depth[i] * ROW_HEIGHT;
      if (y > height || y + ROW_HEIGHT < 0) continue;
      const s = base + ev.start[i];
      const d = ev.dur[i];
      let x0 = originX + s * pxPerNs;
      let x1 = x0 + d * pxPerNs;
      if (d === 0) {
        // Instants: a 2 px tick so markers never vanish.
        x0 -= 1;
        x1 = x0 + 2;
        if (x0 + 1 < clipL || x0 + 1 >= clipR) continue;
      } else {
        if (x1 < clipL || x0 >= clipR) continue;
        if (x0 < clipL) x0 = clipL;
        // A pixel of gap between neighbours wide enough to spare it, so same-name runs stay countable
        // (not where the box is cut at a tile edge: it continues in the next tile).
        if (x1 > clipR) x1 = clipR;
        else if (x1 - x0 > 4) x1 -= 1;
        if (x1 - x0 < 1) x1 = x0 + 1;
      }
      const c = colors[ev.name[i]];
      eventBuckets.push(c, x0, y + 1, x1 - x0);
      stats.boxes++;
      if (x1 - x0 >= MIN_LABEL_PX) {
        const id = ev.id[i] * 65536 + tr;
        if (!labelled.has(id)) {
          labelled.add(id);
          const fx0 = Math.max(originX + s * pxPerNs, left);
          const fx1 = Math.min(originX + (s + d) * pxPerNs, width);
          labels.push({ x: fx0, y: y + 1, w: fx1 - fx0, name: tile.names[ev.name[i]], c, id });
        }
      }
    }
  }
  for (let c = 0; c < PALETTE_SIZE; c++) {
    ctx.fillStyle = colorOf(c);
    eventBuckets.fill(ctx, c, BOX_HEIGHT);
  }
  for (const l of labels) {
    const text = fitText(ctx, l.name, l.w - 6);
    if (!text) continue;
    ctx.fillStyle = textColorOn(l.c);
    ctx.fillText(text, l.x + 3, l.y + BOX_HEIGHT / 2 + 0.5);
    stats.labels++;
  }
}

function drawSummaries(f: FrameInput, tops: Float64Array, stats: FrameStats): void {
  const { ctx, height, proj, width } = f;
  densityBuckets.reset();
  const pxPerNs = proj.pxPerNs;
  const originX = proj.x0 - proj.range.start * pxPerNs;
  for (const p of f.pieces) {
    const sm = p.tile.summaries;
    if (!sm.n) continue;
    const base = p.tile.startNs;
    const clipL = Math.max(LABEL_WIDTH, originX + p.from * pxPerNs);
    const clipR = Math.min(width, originX + p.to * pxPerNs);
    for (let i = 0; i < sm.n; i++) {
      const tr = sm.track[i];
      const top = tr < tops.length ? tops[tr] : NaN;
      if (top !== top) continue;
      const y = top + sm.depth[i] * ROW_HEIGHT;
      if (y > height || y + ROW_HEIGHT < 0) continue;
      const w = sm.width[i];
      let x0 = originX + (base + sm.start[i]) * pxPerNs;
      let x1 = x0 + w * pxPerNs;
      if (x1 < clipL || x0 >= clipR) continue;
      if (x0 < clipL) x0 = clipL;
      if (x1 > clipR) x1 = clipR;
      if (x1 - x0 < 1) x1 = x0 + 1;
      const busy = w > 0 ? Math.min(1, sm.busy[i] / w) : 1;
      const b = Math.min(DENSITY_BUCKETS - 1, Math.floor(busy * DENSITY_BUCKETS));
      densityBuckets.push(b, x0, y + 1, x1 - x0);
      stats.summaries++;
    }
  }
  for (let b = 0; b < DENSITY_BUCKETS; b++) {
    ctx.fillStyle = `rgba(70, 86, 110, ${(0.25 + (0.65 * (b + 1)) / DENSITY_BUCKETS).toFixed(3)})`;
    densityBuckets.fill(ctx, b, BOX_HEIGHT);
  }
}

function drawCounters(f: FrameInput): void {
  const { ctx, proj, scrollY, layout, height } = f;
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
    ctx.fillStyle = "rgba(46, 125, 50, 0.35)";
    ctx.fill();
    ctx.strokeStyle = "rgba(27, 94, 32, 0.9)";
    ctx.lineWidth = 1;
    ctx.stroke();
    ctx.fillStyle = "#1b5e20";
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

function drawSelection(f: FrameInput, tops: Float64Array): void {
  const { ctx, proj, width } = f;
  for (const s of f.overlay.selected) {
    const top = s.track < tops.length ? tops[s.track] : NaN;
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
    ctx.strokeStyle = "#111";
    ctx.strokeRect(x0 - 1, y - 1, x1 - x0 + 2, BOX_HEIGHT + 2);
    ctx.lineWidth = 1;
    ctx.strokeStyle = "#fff";
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
  ctx.strokeStyle = "rgba(150, 60, 20, 0.75)";
  ctx.fillStyle = "rgba(150, 60, 20, 0.9)";
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
  ctx.strokeStyle = "rgba(200, 30, 30, 0.95)";
  ctx.fillStyle = "rgba(200, 30, 30, 0.95)";
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
    ctx.globalAlpha = 0.12;
    ctx.fillRect(x0, 0, Math.max(1, x1 - x0), height);
    ctx.globalAlpha = 0.9;
    ctx.fillRect(Math.round(x0), 0, 1, height);
    ctx.fillRect(Math.round(x1), 0, 1, height);
    ctx.globalAlpha = 1;
  }
}

const KIND_TAGS: Record<string, string> = {
  thread: "thread",
  stream: "stream",
  line: "line",
  derived: "derived",
  async: "async",
  counter: "counter",
};

function drawLabels(f: FrameInput): void {
  const { ctx, height, scrollY, layout } = f;
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, 0, LABEL_WIDTH, height);
  ctx.clip();
  let k = 0;
  for (const s of layout.sections) {
    const y = s.top - scrollY;
    if (s.bottom - scrollY < 0 || y > height) {
      k += s.tracks.length;
      continue;
    }
    ctx.fillStyle = "#e8ecf2";
    ctx.fillRect(0, y, LABEL_WIDTH, SECTION_HEIGHT - 1);
    ctx.fillStyle = "#1f2937";
    ctx.font = BOLD_FONT;
    const arrow = s.collapsed ? "▸" : "▾";
    const host = f.multiHost && s.hostName ? `${s.hostName} · ` : "";
    const title = `${arrow} ${host}${s.section.name}`;
    ctx.fillText(fitText(ctx, title, LABEL_WIDTH - 60), 6, y + SECTION_HEIGHT / 2);
    ctx.font = FONT;
    ctx.fillStyle = "#6b7280";
    const tag = `${s.section.kind.toUpperCase()} · ${s.tracks.length}`;
    ctx.fillText(tag, LABEL_WIDTH - 8 - textWidth(ctx, tag), y + SECTION_HEIGHT / 2);
    if (s.collapsed) continue;
    for (const t of s.tracks) {
      const top = (t.isCounter ? t.top : t.top - TRACK_PAD) - scrollY;
      const shade = k++ % 2 ? "#f7f8fa" : "#ffffff";
      if (top > height || top + t.height < 0) continue;
      ctx.fillStyle = shade;
      ctx.fillRect(0, top, LABEL_WIDTH, t.height - 1);
      const tag = KIND_TAGS[t.track.kind] ?? t.track.kind;
      const tagW = textWidth(ctx, tag);
      ctx.fillStyle = "#111827";
      ctx.fillText(fitText(ctx, t.track.name, LABEL_WIDTH - 34 - tagW), 18, top + Math.min(t.height, ROW_HEIGHT + 2 * TRACK_PAD) / 2);
      ctx.fillStyle = "#9ca3af";
      ctx.fillText(tag, LABEL_WIDTH - 8 - tagW, top + Math.min(t.height, ROW_HEIGHT + 2 * TRACK_PAD) / 2);
    }
  }
  ctx.fillStyle = "#c9d1dc";
  ctx.fillRect(LABEL_WIDTH - 1, 0, 1, height);
  ctx.restore();
}

/** The time axis above the tracks: ticks in an adaptive unit, the cursor time and marked ranges. */
export function drawAxis(
  ctx: CanvasRenderingContext2D,
  width: number,
  height: number,
  proj: Projection,
  marks: { start: number; end: number; color: string }[],
  cursorX: number | null,
): void {
  ctx.clearRect(0, 0, width, height);
  ctx.fillStyle = "#f3f5f8";
  ctx.fillRect(0, 0, width, height);
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  const ticks = computeTicks(proj.range.start, proj.range.end, width - LABEL_WIDTH);
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_WIDTH, 0, width - LABEL_WIDTH, height);
  ctx.clip();
  ctx.fillStyle = "#374151";
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
    const label = formatDuration(m.end - m.start);
    const w = textWidth(ctx, label) + 8;
    const cx = Math.min(Math.max((x0 + x1) / 2, LABEL_WIDTH + w / 2), width - w / 2);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(cx - w / 2, height - 15, w, 13);
    ctx.strokeStyle = m.color;
    ctx.strokeRect(cx - w / 2 + 0.5, height - 14.5, w - 1, 12);
    ctx.fillStyle = "#111827";
    ctx.fillText(label, cx - w / 2 + 4, height - 8.5);
  }
  if (cursorX !== null && cursorX >= LABEL_WIDTH) {
    const label = formatDuration(proj.ns(cursorX));
    const w = textWidth(ctx, label) + 8;
    const x = Math.min(cursorX + 4, width - w);
    ctx.fillStyle = "#1f2937";
    ctx.fillRect(x, 2, w, 13);
    ctx.fillStyle = "#ffffff";
    ctx.fillText(label, x + 4, 8.5);
  }
  ctx.restore();
  ctx.fillStyle = "#6b7280";
  ctx.fillText(`time from trace start`, 8, height / 2);
  ctx.fillStyle = "#c9d1dc";
  ctx.fillRect(0, height - 1, width, 1);
  ctx.fillRect(LABEL_WIDTH - 1, 0, 1, height);
}
