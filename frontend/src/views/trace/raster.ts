/** Software rasterizer for the timeline's boxes. Canvas 2D path filling costs about a microsecond per
 * rectangle once rasterized (much more without a GPU), so 100 k boxes cannot hold 60 fps that way. Here
 * each box is written as one span into the first pixel line of its row, and every row's first line is
 * then copied down to the row's full height: the cost is one span per box plus a memcpy per line, and
 * the result goes to the canvas with one putImageData. Labels and overlays are drawn on top with the
 * canvas API. */

import type { Tile } from "../../api/tile.ts";
import { type CanvasColors, canvasColors, colorIndex, colorOf, PALETTE_SIZE } from "./colors.ts";
import { ROW_HEIGHT } from "./layout.ts";
import type { Piece } from "./scene.ts";

/** A device-pixel RGBA framebuffer (one u32 per pixel, in the platform's byte order). */
export interface Raster {
  u: Uint32Array;
  width: number;
  height: number;
}

export const BOX_HEIGHT = ROW_HEIGHT - 2;
export const DENSITY_BUCKETS = 6;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([0x01020304]).buffer)[0] === 4;

function parseHex(hex: string): [number, number, number] {
  return [parseInt(hex.slice(1, 3), 16), parseInt(hex.slice(3, 5), 16), parseInt(hex.slice(5, 7), 16)];
}

/** An opaque pixel value for `hex` (#rrggbb), optionally `alpha`-blended over `under`. */
export function pixel(hex: string, alpha = 1, under = "#ffffff"): number {
  const [r0, g0, b0] = parseHex(hex);
  const [r1, g1, b1] = parseHex(under);
  const r = Math.round(r0 * alpha + r1 * (1 - alpha));
  const g = Math.round(g0 * alpha + g1 * (1 - alpha));
  const b = Math.round(b0 * alpha + b1 * (1 - alpha));
  return LITTLE_ENDIAN ? ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0 : ((r << 24) | (g << 16) | (b << 8) | 255) >>> 0;
}

const EVENT_PIXELS = Array.from({ length: PALETTE_SIZE }, (_, i) => pixel(colorOf(i)));
/** Per theme's colours, per track background, the pixel of each density bucket. */
const densityPixels = new Map<CanvasColors, number[][]>();

function densityPixelsOf(c: CanvasColors): number[][] {
  let pixels = densityPixels.get(c);
  if (!pixels) {
    pixels = c.rows.map((bg) => Array.from({ length: DENSITY_BUCKETS }, (_, b) => pixel(c.density, 0.25 + (0.65 * (b + 1)) / DENSITY_BUCKETS, bg)));
    densityPixels.set(c, pixels);
  }
  return pixels;
}

/** A horizontal band of the background (section header, track, separator line), CSS px. */
export interface Band {
  y: number;
  height: number;
  color: string;
}

/** Where each track's rows are on screen, indexed by track id. */
export interface RowGeometry {
  /** CSS y of the top of depth row 0 (NaN: hidden, collapsed or a counter track). */
  tops: Float64Array;
  maxDepth: Int32Array;
  /** Background of the track (index into the theme's `rows`, colors.ts). */
  shade: Uint8Array;
  /** 1 when the track's section is collapsed: its top-level events are drawn in the section header. */
  collapsed: Uint8Array;
}

/** Horizontal mapping from ns to CSS x, and the x range a piece may paint. */
export interface XMap {
  originX: number;
  pxPerNs: number;
  left: number;
  right: number;
}

export interface Label {
  x: number;
  y: number;
  w: number;
  name: string;
  color: number;
}

export interface RasterStats {
  boxes: number;
  summaries: number;
}

const tileColors = new WeakMap<Tile, Uint8Array>();

/** Palette index of every name of a tile, computed once per tile. */
export function tileColorIndexes(tile: Tile): Uint8Array {
  let c = tileColors.get(tile);
  if (!c) {
    c = Uint8Array.from(tile.names, colorIndex);
    tileColors.set(tile, c);
  }
  return c;
}

export function fillBands(r: Raster, bands: Band[], dpr: number): void {
  for (const b of bands) {
    const y0 = Math.max(0, Math.round(b.y * dpr));
    const y1 = Math.min(r.height, Math.round((b.y + b.height) * dpr));
    if (y1 > y0) r.u.fill(pixel(b.color), y0 * r.width, y1 * r.width);
  }
}

/** The first visible device line of a box row whose top is at CSS `y`, or -1 when off screen. */
function templateLine(y: number, dpr: number, height: number): number {
  const y0 = Math.round(y * dpr);
  const y1 = Math.round((y + BOX_HEIGHT) * dpr);
  if (y1 <= 0 || y0 >= height) return -1;
  return y0 < 0 ? 0 : y0;
}

/** Indices of a tile's items grouped by track (counting sort, stable): `order[start[t]..start[t+1])`
 * are the items of track t. Lets a frame visit only the tracks on screen. */
export interface TrackGroups {
  order: Uint32Array;
  start: Uint32Array;
}

function groupByTrack(track: Uint32Array, n: number): TrackGroups {
  let max = 0;
  for (let i = 0; i < n; i++) if (track[i] > max) max = track[i];
  const start = new Uint32Array(max + 2);
  for (let i = 0; i < n; i++) start[track[i] + 1]++;
  for (let t = 1; t < start.length; t++) start[t] += start[t - 1];
  const fill = start.slice(0, max + 1);
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[fill[track[i]]++] = i;
  return { order, start };
}

const tileGroups = new WeakMap<Tile, { events: TrackGroups; summaries: TrackGroups }>();

export function trackGroups(tile: Tile): { events: TrackGroups; summaries: TrackGroups } {
  let g = tileGroups.get(tile);
  if (!g) {
    g = { events: groupByTrack(tile.events.track, tile.events.n), summaries: groupByTrack(tile.summaries.track, tile.summaries.n) };
    tileGroups.set(tile, g);
  }
  return g;
}

function span(u: Uint32Array, line: number, x0: number, x1: number, color: number): void {
  if (x1 - x0 > 16) u.fill(color, line + x0, line + x1);
  else for (let x = line + x0, end = line + x1; x < end; x++) u[x] = color;
}

/** Paints the summaries and events of `pieces` into their rows' template lines, collecting labels
 * for boxes at least `minLabelPx` wide; then `replicateRows` finishes the rows. */
export function paintPieces(
  r: Raster,
  dpr: number,
  geo: RowGeometry,
  pieces: Piece[],
  xm: XMap,
  minLabelPx: number,
  labels: Label[],
  stats: RasterStats,
): void {
  const { u, width: W, height: H } = r;
  const { tops, shade, maxDepth } = geo;
  const density = densityPixelsOf(canvasColors());
  const left = xm.left;
  const toDev = (x: number) => (x - left) * dpr;
  const labelled = new Set<number>();
  // Tracks with at least one row on screen.
  const visible: number[] = [];
  for (let tr = 0; tr < tops.length; tr++) {
    const top = tops[tr];
    if (top === top && top + (maxDepth[tr] + 1) * ROW_HEIGHT > 0 && top * dpr < H) visible.push(tr);
  }
  for (const p of pieces) {
    const tile = p.tile;
    const clipL = Math.max(xm.left, xm.originX + p.from * xm.pxPerNs);
    const clipR = Math.min(xm.right, xm.originX + p.to * xm.pxPerNs);
    if (clipR <= clipL) continue;
    const base = tile.startNs;
    const devL = Math.max(0, Math.round(toDev(clipL)));
    const devR = Math.min(W, Math.round(toDev(clipR)));
    const groups = trackGroups(tile);
    // Summaries first: events drawn after them win where both touch a pixel.
    const sm = tile.summaries;
    const sg = groups.summaries;
    for (const tr of visible) {
      if (tr + 1 >= sg.start.length) continue;
      const top = tops[tr];
      const colors = density[shade[tr]];
      for (let k = sg.start[tr], end = sg.start[tr + 1]; k < end; k++) {
        const i = sg.order[k];
        if (sm.depth[i] > maxDepth[tr]) continue;
        const line = templateLine(top + sm.depth[i] * ROW_HEIGHT + 1, dpr, H);
        if (line < 0) continue;
        const x0 = xm.originX + (base + sm.start[i]) * xm.pxPerNs;
        const w = sm.width[i];
        let a = Math.round(toDev(x0));
        let b = Math.round(toDev(x0 + w * xm.pxPerNs));
        if (a < devL) a = devL;
        if (b > devR) b = devR;
        if (b <= a) {
          if (a >= devR) continue;
          b = a + 1;
        }
        const busy = w > 0 ? Math.min(1, sm.busy[i] / w) : 1;
        span(u, line * W, a, b, colors[Math.min(DENSITY_BUCKETS - 1, Math.floor(busy * DENSITY_BUCKETS))]);
        stats.summaries++;
      }
    }
    const ev = tile.events;
    const eg = groups.events;
    const nameColors = tileColorIndexes(tile);
    for (const tr of visible) {
      if (tr + 1 >= eg.start.length) continue;
      const top = tops[tr];
      for (let k = eg.start[tr], end = eg.start[tr + 1]; k < end; k++) {
        const i = eg.order[k];
        if (ev.depth[i] > maxDepth[tr]) continue;
        const y = top + ev.depth[i] * ROW_HEIGHT + 1;
        const line = templateLine(y, dpr, H);
        if (line < 0) continue;
        const s = base + ev.start[i];
        const d = ev.dur[i];
        const xs = xm.originX + s * xm.pxPerNs;
        const xe = xs + d * xm.pxPerNs;
        let a: number;
        let b: number;
        if (d === 0) {
          // Instants: a 2 px tick so markers never vanish.
          if (xs < clipL || xs >= clipR) continue;
          a = Math.round(toDev(xs - 1));
          b = a + Math.max(2, Math.round(2 * dpr));
        } else {
          if (xe < clipL || xs >= clipR) continue;
          a = Math.round(toDev(xs));
          b = Math.round(toDev(xe));
          // A pixel of gap between neighbours wide enough to spare it, so runs of one name stay
          // countable; not where the box is cut at a piece edge (it continues in the next piece).
          if (b - a > 4 * dpr && xe <= clipR) b -= Math.round(dpr);
        }
        if (a < devL) a = devL;
        if (b > devR) b = devR;
        if (b <= a) {
          if (a >= devR) continue;
          b = a + 1;
        }
        const c = nameColors[ev.name[i]];
        span(u, line * W, a, b, EVENT_PIXELS[c]);
        stats.boxes++;
        // Collapsed sections overlay several tracks in one row: activity only, no names.
        if (!geo.collapsed[tr] && Math.min(xe, xm.right) - Math.max(xs, xm.left) >= minLabelPx) {
          const key = ev.id[i] * 65536 + tr;
          if (!labelled.has(key)) {
            labelled.add(key);
            const lx0 = Math.max(xs, xm.left);
            labels.push({ x: lx0, y, w: Math.min(xe, xm.right) - lx0, name: tile.names[ev.name[i]], color: c });
          }
        }
      }
    }
  }
}

/** Copies each visible row's template line down to the row's full box height. */
export function replicateRows(r: Raster, dpr: number, geo: RowGeometry): void {
  const { u, width: W, height: H } = r;
  for (let tr = 0; tr < geo.tops.length; tr++) {
    const top = geo.tops[tr];
    if (top !== top) continue;
    for (let d = 0; d <= geo.maxDepth[tr]; d++) {
      const y = top + d * ROW_HEIGHT + 1;
      const line = templateLine(y, dpr, H);
      if (line < 0) continue;
      const end = Math.min(H, Math.round((y + BOX_HEIGHT) * dpr));
      const src = line * W;
      for (let l = line + 1; l < end; l++) u.copyWithin(l * W, src, src + W);
    }
  }
}
