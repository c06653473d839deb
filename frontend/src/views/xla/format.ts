/** Numbers only the XLA view shows: values in a metric's unit, values at the precision the runtime
 * printed them, rates, graph hashes. Plain durations, sizes and counts come from shared/units.ts. */

import type { XlaUnit } from "./api.ts";
import { formatBytes, formatCount, formatDuration, NOT_OBSERVED, timeUnit } from "../../shared/units.ts";

/** A printed value at the precision it was printed with (`resolution`, in the value's unit), in the
 * largest unit that keeps it readable: 148817608 ns at 1 ns → "148.817608 ms". */
export function formatExact(value: number | null, unit: XlaUnit | null, resolution: number): string {
  if (value === null || !Number.isFinite(value)) return NOT_OBSERVED;
  if (unit !== "ns") return formatValue(value, unit, 6);
  const { symbol, scale } = timeUnit(value, "s");
  const decimals = Math.max(0, Math.min(9, Math.round(Math.log10(scale / Math.max(resolution, 1e-9)))));
  return `${(value / scale).toFixed(decimals)} ${symbol}`;
}

/** A value in a metric's unit, to `digits` significant digits. */
export function formatValue(value: number | null | undefined, unit: XlaUnit | null, digits = 3): string {
  if (unit === "ns") return formatDuration(value, digits);
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
