/** Numbers of the XLA view with their units; an absent measurement reads "not observed", never 0. */

import type { XlaUnit } from "../../api/xla.ts";

export const NOT_OBSERVED = "not observed";

function trim(x: number, digits = 3): string {
  return Number(x.toPrecision(digits)).toString();
}

/** A duration given in nanoseconds: "512 ns", "3.21 µs", "1.5 ms", "2.01 s", "3.4 min", "1.2 h". */
export function formatNs(ns: number | null | undefined): string {
  if (ns === null || ns === undefined || !Number.isFinite(ns)) return NOT_OBSERVED;
  const a = Math.abs(ns);
  if (a >= 3600e9) return `${trim(ns / 3600e9)} h`;
  if (a >= 60e9) return `${trim(ns / 60e9)} min`;
  if (a >= 1e9) return `${trim(ns / 1e9)} s`;
  if (a >= 1e6) return `${trim(ns / 1e6)} ms`;
  if (a >= 1e3) return `${trim(ns / 1e3)} µs`;
  return `${trim(ns)} ns`;
}

/** A size in bytes, binary prefixes as the runtime uses them: "52 B", "9.57 KiB". */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return NOT_OBSERVED;
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let value = bytes;
  let i = 0;
  while (Math.abs(value) >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  return i === 0 ? `${trim(value, 4)} B` : `${trim(value)} ${units[i]}`;
}

/** A count: integers with thousands separators, other numbers to 4 significant digits. */
export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return NOT_OBSERVED;
  return Number.isInteger(n) ? n.toLocaleString("en-US") : trim(n, 4);
}

/** A value in a metric's unit. */
export function formatValue(value: number | null | undefined, unit: XlaUnit | null): string {
  if (unit === "ns") return formatNs(value);
  if (unit === "B") return formatBytes(value);
  return formatCount(value);
}

/** A rate per second in a metric's unit ("1.2 ms/s", "2.07 KiB/s", "7.1/s"). */
export function formatRate(value: number | null | undefined, unit: XlaUnit | null): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return NOT_OBSERVED;
  return unit === "" || unit === null ? `${formatCount(value)}/s` : `${formatValue(value, unit)}/s`;
}

/** Short form of a graph hash for lists. */
export function shortHash(key: string): string {
  return key.startsWith("sha1:") ? key : key.slice(0, 12);
}
