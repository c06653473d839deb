/** What to draw for a window: for every tile of the right level, that tile if held, else the
 * nearest held coarser tile (restricted to the missing tile's time window), so the screen is never
 * blank while finer tiles load. Hit testing runs on the same pieces, so what is clicked is what is seen. */

import type { Tile } from "../../api/tile.ts";
import type { TileParams } from "../../api/types.ts";
import { ancestorIndex, levelFor, type TileRange, tilesCovering, tileWidthNs } from "./levels.ts";

/** A tile and the absolute time window [from, to) it is responsible for on screen. */
export interface Piece {
  tile: Tile;
  from: number;
  to: number;
}

export interface TileSource {
  get(level: number, index: number): Tile | undefined;
}

export interface Plan {
  /** The level the window calls for and its tiles. */
  target: TileRange;
  pieces: Piece[];
  /** Target tiles not held yet (drawn from a coarser level meanwhile, or missing). */
  missing: number;
}

/** Pieces covering [startNs, endNs) with the best tiles held. */
export function planPieces(
  params: TileParams,
  source: TileSource,
  spanEnd: number,
  startNs: number,
  endNs: number,
  nsPerPx: number,
): Plan {
  const level = levelFor(params, nsPerPx);
  const target = tilesCovering(params, level, startNs, endNs, spanEnd);
  const w = tileWidthNs(params, level);
  const pieces: Piece[] = [];
  let missing = 0;
  const push = (tile: Tile, from: number, to: number) => {
    const last = pieces[pieces.length - 1];
    if (last && last.tile === tile && last.to === from) last.to = to;
    else pieces.push({ tile, from, to });
  };
  for (let i = target.first; i <= target.last; i++) {
    const from = i * w;
    const to = from + w;
    const own = source.get(level, i);
    if (own) {
      push(own, from, to);
      continue;
    }
    missing++;
    let found = false;
    for (let up = 1; level + up <= params.max_level; up++) {
      const a = source.get(level + up, ancestorIndex(i, up));
      if (a) {
        push(a, from, to);
        found = true;
        break;
      }
    }
    if (!found && level > 0) {
      const left = source.get(level - 1, 2 * i);
      const right = source.get(level - 1, 2 * i + 1);
      if (left && right) {
        push(left, from, from + w / 2);
        push(right, from + w / 2, to);
      }
    }
  }
  return { target, pieces, missing };
}

/** An event found under the pointer. */
export interface EventHit {
  /** Global id: host index * 2^32 + index in that host's trace. */
  id: number;
  name: string;
  track: number;
  depth: number;
  startNs: number;
  durNs: number;
}

const rowIndexes = new WeakMap<Tile, Map<number, Int32Array>>();

/** Event indices of a tile grouped by (track, depth) row, each sorted by start: built once per tile. */
export function rowIndex(tile: Tile): Map<number, Int32Array> {
  let index = rowIndexes.get(tile);
  if (index) return index;
  const ev = tile.events;
  const groups = new Map<number, number[]>();
  for (let i = 0; i < ev.n; i++) {
    const key = ev.track[i] * 65536 + ev.depth[i];
    let g = groups.get(key);
    if (!g) groups.set(key, (g = []));
    g.push(i);
  }
  index = new Map();
  for (const [key, list] of groups) {
    const arr = Int32Array.from(list);
    arr.sort((a, b) => ev.start[a] - ev.start[b]);
    index.set(key, arr);
  }
  rowIndexes.set(tile, index);
  return index;
}

/** How many earlier events of a row to look at when searching backwards for one covering `t`;
 * rows hold properly nested events, so the covering one is almost always the first. */
const BACKTRACK = 32;

/** The event of row (track, depth) under instant `t` (ns), within `tolNs` for thin events. */
export function hitTest(
  pieces: Piece[],
  track: number,
  depth: number,
  t: number,
  tolNs: number,
  hostOf: (track: number) => number,
): EventHit | null {
  let best: EventHit | null = null;
  let bestDist = Infinity;
  for (const p of pieces) {
    if (t < p.from - tolNs || t >= p.to + tolNs) continue;
    const tile = p.tile;
    const rows = rowIndex(tile).get(track * 65536 + depth);
    if (!rows) continue;
    const ev = tile.events;
    const local = t - tile.startNs;
    let lo = 0;
    let hi = rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ev.start[rows[mid]] <= local + tolNs) lo = mid + 1;
      else hi = mid;
    }
    for (let k = lo - 1; k >= 0 && k >= lo - BACKTRACK; k--) {
      const i = rows[k];
      const s = ev.start[i];
      const e = s + ev.dur[i];
      const dist = local < s ? s - local : local > e ? local - e : 0;
      if (dist <= tolNs && dist < bestDist) {
        bestDist = dist;
        best = {
          id: hostOf(track) * 2 ** 32 + ev.id[i],
          name: tile.names[ev.name[i]],
          track,
          depth,
          startNs: tile.startNs + s,
          durNs: ev.dur[i],
        };
        if (dist === 0) break;
      }
    }
    if (bestDist === 0) break;
  }
  return best;
}

/** A summary box under the pointer: events too narrow to draw at this zoom, counted. */
export interface SummaryHit {
  count: number;
  busyNs: number;
  startNs: number;
  widthNs: number;
}

/** The summary box of row (track, depth) covering instant `t`, if any. */
export function summaryAt(pieces: Piece[], track: number, depth: number, t: number): SummaryHit | null {
  for (const p of pieces) {
    if (t < p.from || t >= p.to) continue;
    const sm = p.tile.summaries;
    const local = t - p.tile.startNs;
    for (let i = 0; i < sm.n; i++) {
      if (sm.track[i] !== track || sm.depth[i] !== depth) continue;
      const s = sm.start[i];
      if (local >= s && local < s + sm.width[i]) {
        return { count: sm.count[i], busyNs: sm.busy[i], startNs: p.tile.startNs + s, widthNs: sm.width[i] };
      }
    }
  }
  return null;
}

/** The counter sample box of `track` at instant `t`: the last one starting at or before it (a
 * counter holds its value until the next sample). */
export function counterAt(pieces: Piece[], track: number, t: number): { min: number; max: number; last: number; startNs: number } | null {
  let best: { min: number; max: number; last: number; startNs: number } | null = null;
  for (const p of pieces) {
    if (p.from > t) continue;
    const c = p.tile.counters;
    for (let i = 0; i < c.n; i++) {
      if (c.track[i] !== track) continue;
      const s = p.tile.startNs + c.start[i];
      if (s < p.from || s >= p.to || s > t) continue;
      if (!best || s >= best.startNs) best = { min: c.min[i], max: c.max[i], last: c.last[i], startNs: s };
    }
  }
  return best;
}
