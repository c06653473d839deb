/** Numbers of the XLA view with their units; an absent measurement reads "not observed", never 0. */

import type { XlaUnit } from "../../api/xla.ts";

export const NOT_OBSERVED = "not observed";

function trim(x: number, digits = 3): string {
  return Number(x.toPrecision(digits)).toString();
}

const TIME_UNITS: [string, number][] = [
  ["h", 3600e9],
  ["min", 60e9],
  ["s", 1e9],
  ["ms", 1e6],
  ["µs", 1e3],
  ["ns", 1],
];

/** A duration given in nanoseconds: "512 ns", "3.21 µs", "1.5 ms", "2.01 s", "3.4 min", "1.2 h". */
export function formatNs(ns: number | null | undefined, digits = 3): string {
  if (ns === null || ns === undefined || !Number.isFinite(ns)) return NOT_OBSERVED;
  const [unit, scale] = TIME_UNITS.find(([, s]) => Math.abs(ns) >= s) ?? ["ns", 1];
  return `${trim(ns / scale, digits)} ${unit}`;
}

/** A printed value at the precision it was printed with (`resolution`, in the value's unit), in the
 * largest unit that keeps it readable: 148817608 ns at 1 ns → "148.817608 ms". */
export function formatExact(value: number | null, unit: XlaUnit | null, resolution: number): string {
  if (value === null || !Number.isFinite(value)) return NOT_OBSERVED;
  if (unit !== "ns") return formatValue(value, unit, 6);
  const [name, scale] = TIME_UNITS.slice(2).find(([, s]) => Math.abs(value) >= s) ?? ["ns", 1];
  const decimals = Math.max(0, Math.min(9, Math.round(Math.log10(scale / Math.max(resolution, 1e-9)))));
  return `${(value / scale).toFixed(decimals)} ${name}`;
}

/** A size in bytes, binary prefixes as the runtime uses them: "52 B", "9.57 KiB". */
export function formatBytes(bytes: number | null | undefined, digits = 3): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return NOT_OBSERVED;
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let value = bytes;
  let i = 0;
  while (Math.abs(value) >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  return i === 0 ? `${trim(value, Math.max(4, digits))} B` : `${trim(value, digits)} ${units[i]}`;
}

/** A count: integers with thousands separators, other numbers to 4 significant digits. */
export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return NOT_OBSERVED;
  return Number.isInteger(n) ? n.toLocaleString("en-US") : trim(n, 4);
}

/** A value in a metric's unit, to `digits` significant digits. */
export function formatValue(value: number | null | undefined, unit: XlaUnit | null, digits = 3): string {
  if (unit === "ns") return formatNs(value, digits);
  if (unit === "B") return formatBytes(value, digits);
  return formatCount(value);
}

/** A rate per second of wall time in a metric's unit ("1.2 ms per s", "2.07 KiB per s", "7.1 per s"). */
export function formatRate(value: number | null | undefined, unit: XlaUnit | null): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return NOT_OBSERVED;
  return unit === "" || unit === null ? `${formatCount(value)} per s` : `${formatValue(value, unit)} per s`;
}

/** Short form of a graph hash for lists. */
export function shortHash(key: string): string {
  return key.startsWith("sha1:") ? key : key.slice(0, 12);
}
