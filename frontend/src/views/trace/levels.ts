/** Which tiles to ask for: the level whose pixels are no wider than a screen pixel, and the tile
 * indices covering the visible window (docs/ARCHITECTURE.md "Tiles"). */

import type { TileParams } from "../../api/types.ts";

/** Width in ns of one tile at `level`. */
export function tileWidthNs(params: TileParams, level: number): number {
  return params.base_ns * 2 ** level;
}

/** The coarsest level whose tile pixel is at most `nsPerPx`: every event one screen pixel wide is
 * then in the tile, and narrower ones are summarized at sub-pixel resolution. */
export function levelFor(params: TileParams, nsPerPx: number): number {
  if (!(nsPerPx > 0)) return 0;
  const z = Math.floor(Math.log2((nsPerPx * params.tile_px) / params.base_ns) + 1e-9);
  return Math.max(0, Math.min(params.max_level, z));
}

export interface TileRange {
  level: number;
  first: number;
  last: number;
}

/** Tile indices at `level` overlapping [startNs, endNs), clipped to the trace span. */
export function tilesCovering(
  params: TileParams,
  level: number,
  startNs: number,
  endNs: number,
  spanEndNs: number,
): TileRange {
  const w = tileWidthNs(params, level);
  const lastIndex = Math.max(0, Math.ceil(spanEndNs / w) - 1);
  const first = Math.max(0, Math.min(lastIndex, Math.floor(Math.max(0, startNs) / w)));
  const last = Math.max(first, Math.min(lastIndex, Math.ceil(endNs / w) - 1));
  return { level, first, last };
}

/** Index of the tile at `level + up` that contains tile (`level`, `index`). */
export function ancestorIndex(index: number, up: number): number {
  return Math.floor(index / 2 ** up);
}

export function tileKey(level: number, index: number): string {
  return `${level}:${index}`;
}
