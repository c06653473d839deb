// One convention for every view: byte sizes in IEC binary units (B, KiB, MiB, GiB, TiB, PiB) and
// durations from ns in ns, µs, ms, s, min, h, both to 3 significant digits unless the caller asks
// for more; counts with thousands separators; rates (FLOP/s, B/s) and FLOP counts in decimal SI
// prefixes, as datasheets quote them (1.52 TB/s = 1.52e12 B/s); a value never measured reads
// "not observed", never 0.

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

/** Decimal SI prefixes, the largest first (rates and FLOP counts, as datasheets quote them). */
const SI_UNITS: readonly Unit[] = [
  { symbol: "E", scale: 1e18 },
  { symbol: "P", scale: 1e15 },
  { symbol: "T", scale: 1e12 },
  { symbol: "G", scale: 1e9 },
  { symbol: "M", scale: 1e6 },
  { symbol: "k", scale: 1e3 },
  { symbol: "", scale: 1 },
];

/** `value` of `unit` with a decimal SI prefix: formatSi(1.23e13, "FLOP/s") = "12.3 TFLOP/s". Values
 * under 1 keep no prefix ("0.5 FLOP/s"), so a slow rate never reads as milli-FLOPs. */
export function formatSi(value: number | null | undefined, unit: string, digits = 3): string {
  if (absent(value)) return NOT_OBSERVED;
  const shown = inUnits(value, SI_UNITS, digits);
  const [number, prefix] = shown.split(" ");
  return `${number} ${prefix}${unit}`;
}

/** A FLOP rate in FLOP/s: "12.3 TFLOP/s". */
export function formatFlopRate(flopsPerSecond: number | null | undefined, digits = 3): string {
  return formatSi(flopsPerSecond, "FLOP/s", digits);
}

/** A bandwidth in bytes per second, decimal as datasheets quote it: "1.52 TB/s" (1.52e12 B/s). */
export function formatByteRate(bytesPerSecond: number | null | undefined, digits = 3): string {
  return formatSi(bytesPerSecond, "B/s", digits);
}

/** A number of floating-point operations: "1.63 TFLOP". */
export function formatFlops(flops: number | null | undefined, digits = 3): string {
  return formatSi(flops, "FLOP", digits);
}

/** A fraction (0..1) as a percentage to 3 significant digits: 0.04348 → "4.35%"; tiny non-zero
 * fractions read "< 0.0001%" rather than an exponent. */
export function formatPercent(fraction: number | null | undefined, digits = 3): string {
  if (absent(fraction)) return NOT_OBSERVED;
  const percent = fraction * 100;
  if (percent !== 0 && Math.abs(percent) < 1e-4) return percent > 0 ? "< 0.0001%" : "> -0.0001%";
  return `${roundTo(percent, digits).toLocaleString("en-US", { maximumSignificantDigits: digits })}%`;
}
