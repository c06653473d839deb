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
