/** How the trace writes time: axis ticks with a 1-2-5 step chosen so labels sit at least
 * `minSpacingPx` apart, in a unit that follows the zoom (s, ms, µs, ns), labelled as offsets from an
 * origin at the view's start (as Perfetto does: "+20 µs" reads at any depth into a long trace, where
 * "131.32002 ms" would not), the origin and the time under the pointer written in full; the
 * instants printed on the timeline, formatted alike; and the precision of its durations. */

import { timeUnit } from "../../shared/units.ts";

/** Durations in the trace carry 4 significant digits, one more than the shared default: events and
 * measurements on one timeline are compared against each other, often to within a per mille. */
export const DURATION_DIGITS = 4;

export interface Tick {
  ns: number;
  label: string;
}

export interface Ticks {
  stepNs: number;
  /** The time the labels count from: the last multiple of the step at or before the view's start. */
  originNs: number;
  ticks: Tick[];
}

/** A point in time relative to the trace start, with enough decimals to tell apart ticks `stepNs`
 * apart. The unit follows the larger of the step and `magnitudeNs` (the axis' far end), so deep in a
 * long trace ticks read "131.32 ms" rather than "131320 µs"; it stops at seconds, a timeline position
 * with decimals of minutes would not read. */
export function formatTimestamp(ns: number, stepNs: number, magnitudeNs = 0): string {
  const { symbol, scale } = timeUnit(Math.max(Math.abs(stepNs) * 10, Math.abs(magnitudeNs), 1e-3), "s");
  const stepInUnit = stepNs / scale;
  const decimals = Math.max(0, Math.min(9, Math.ceil(-Math.log10(stepInUnit) - 1e-9)));
  return `${(ns / scale).toFixed(decimals)} ${symbol}`;
}

/** An instant on the session timeline to the nanosecond, in the unit of its magnitude. */
export function formatInstant(ns: number): string {
  return formatTimestamp(ns, 1, ns);
}

/** Smallest 1·10^k, 2·10^k or 5·10^k that is ≥ `x`. */
export function niceStep(x: number): number {
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 5, 10]) if (m * p >= x * (1 - 1e-12)) return m * p;
  return 10 * p;
}

export function computeTicks(startNs: number, endNs: number, widthPx: number, minSpacingPx = 90): Ticks {
  const range = endNs - startNs;
  if (!(range > 0) || !(widthPx > 0)) return { stepNs: 1, originNs: startNs, ticks: [] };
  const stepNs = niceStep((range / widthPx) * minSpacingPx);
  const originNs = Math.floor(startNs / stepNs) * stepNs;
  const first = Math.ceil(startNs / stepNs);
  const ticks: Tick[] = [];
  for (let i = first; i * stepNs <= endNs && ticks.length < 1000; i++) {
    const ns = i * stepNs;
    ticks.push({ ns, label: `+${formatTimestamp(ns - originNs, stepNs, endNs - originNs)}` });
  }
  return { stepNs, originNs, ticks };
}

/** The axis' origin in full, shown where the labels begin. */
export function originText(t: Ticks): string {
  return `${formatTimestamp(t.originNs, t.stepNs, t.originNs)} +`;
}

/** The axis' tooltip at time `ns`: the absolute time (from the trace's start) and its offset from
 * the origin, each to `nsPerPx` (a pixel's worth). */
export function axisHoverText(ns: number, t: Ticks, nsPerPx: number): string {
  const step = niceStep(Math.max(nsPerPx, 1e-3));
  return `${formatTimestamp(ns, step, ns)} from the trace start (+${formatTimestamp(ns - t.originNs, step, ns - t.originNs)} from ${formatTimestamp(t.originNs, t.stepNs, t.originNs)})`;
}
