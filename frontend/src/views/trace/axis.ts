/** Time-axis ticks: a 1-2-5 step chosen so labels sit at least `minSpacingPx` apart, in a unit
 * that follows the zoom (s, ms, µs, ns). */

import { formatTimestamp } from "./format.ts";

export interface Tick {
  ns: number;
  label: string;
}

export interface Ticks {
  stepNs: number;
  ticks: Tick[];
}

/** Smallest 1·10^k, 2·10^k or 5·10^k that is ≥ `x`. */
export function niceStep(x: number): number {
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 5, 10]) if (m * p >= x * (1 - 1e-12)) return m * p;
  return 10 * p;
}

export function computeTicks(startNs: number, endNs: number, widthPx: number, minSpacingPx = 90): Ticks {
  const range = endNs - startNs;
  if (!(range > 0) || !(widthPx > 0)) return { stepNs: 1, ticks: [] };
  const stepNs = niceStep((range / widthPx) * minSpacingPx);
  const first = Math.ceil(startNs / stepNs);
  const magnitude = Math.max(Math.abs(startNs), Math.abs(endNs));
  const ticks: Tick[] = [];
  for (let i = first; i * stepNs <= endNs && ticks.length < 1000; i++) {
    const ns = i * stepNs;
    ticks.push({ ns, label: formatTimestamp(ns, stepNs, magnitude) });
  }
  return { stepNs, ticks };
}
