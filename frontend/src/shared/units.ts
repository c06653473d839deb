// One convention for every view: byte sizes in IEC binary units (B, KiB, MiB, GiB, TiB, PiB) and
// durations from ns in ns, µs, ms, s, min, h, both to 3 significant digits unless the caller asks
// for more; counts with thousands separators; a value never measured reads "not observed", never 0.

/** What a value that was never measured reads: "0" would claim a measurement. */
export const NOT_OBSERVED = "not observed";

export interface Unit {
  symbol: string;
  /** How many of the base unit (ns, bytes) one of this unit holds. */
  scale: number;
}

/** Time units, the largest first. */
const TIME_UNITS: readonly Unit[] = [
  { symbol: "h", scale: 3600e9 },
  { symbol: "min", scale: 60e9 },
  { symbol: "s", scale: 1e9 },
  { symbol: "ms", scale: 1e6 },
  { symbol: "µs", scale: 1e3 },
  { symbol: "ns", scale: 1 },
];
const SECONDS_AND_FINER = TIME_UNITS.slice(2);

const BYTE_UNITS: readonly Unit[] = [
  { symbol: "PiB", scale: 1024 ** 5 },
  { symbol: "TiB", scale: 1024 ** 4 },
  { symbol: "GiB", scale: 1024 ** 3 },
  { symbol: "MiB", scale: 1024 ** 2 },
  { symbol: "KiB", scale: 1024 },
];

function absent(x: number | null | undefined): x is null | undefined {
  return x === null || x === undefined || !Number.isFinite(x);
}

function roundTo(x: number, digits: number): number {
  return Number(x.toPrecision(digits));
}

function largestUnder(value: number, units: readonly Unit[]): number {
  const i = units.findIndex((u) => Math.abs(value) >= u.scale);
  return i < 0 ? units.length - 1 : i;
}

/** `value` in the largest of `units` (largest first) it reaches, to `digits` significant digits; a
 * rounding that reaches the next unit up uses that one ("1 ms", not "1000 µs"). */
function inUnits(value: number, units: readonly Unit[], digits: number): string {
  let i = largestUnder(value, units);
  let shown = roundTo(value / units[i].scale, digits);
  if (i > 0 && Math.abs(shown) * units[i].scale >= units[i - 1].scale) {
    i -= 1;
    shown = roundTo(value / units[i].scale, digits);
  }
  return `${shown} ${units[i].symbol}`;
}

/** The time unit a value of `ns` reads best in: the largest it reaches, ns below 1 ns. Values shown
 * with all their decimals (timestamps, printed values) stop at seconds, `upTo` "s". */
export function timeUnit(ns: number, upTo: "s" | "h" = "h"): Unit {
  const units = upTo === "s" ? SECONDS_AND_FINER : TIME_UNITS;
  return units[largestUnder(ns, units)];
}

/** A duration given in ns: "512 ns", "3.21 µs", "1.5 ms", "2.01 s", "1.5 min", "1.2 h". */
export function formatDuration(ns: number | null | undefined, digits = 3): string {
  if (absent(ns)) return NOT_OBSERVED;
  return inUnits(ns, TIME_UNITS, digits);
}

/** A size in bytes: "52 B", "1000 B", "9.57 KiB", "12.5 MiB" (bytes below 1 KiB to at least 4
 * digits, so a byte count under 1024 is exact). */
export function formatBytes(bytes: number | null | undefined, digits = 3): string {
  if (absent(bytes)) return NOT_OBSERVED;
  if (Math.abs(bytes) < 1024) return `${roundTo(bytes, Math.max(4, digits))} B`;
  return inUnits(bytes, BYTE_UNITS, digits);
}

/** A count with thousands separators ("1,234,567"); a value that is not a whole number (a counter
 * sample, an average) to 4 significant digits. */
export function formatCount(n: number | null | undefined): string {
  if (absent(n)) return NOT_OBSERVED;
  return Number.isInteger(n) ? n.toLocaleString("en-US") : n.toLocaleString("en-US", { maximumSignificantDigits: 4 });
}
