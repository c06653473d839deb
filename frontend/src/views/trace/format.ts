/** Human-readable times. Every number the viewer shows goes through here so units are consistent. */

const UNITS: [number, string][] = [
  [1e9, "s"],
  [1e6, "ms"],
  [1e3, "µs"],
  [1, "ns"],
];

/** Unit (scale in ns, symbol) that reads best for a magnitude, e.g. 2.5e6 ns → ms. */
export function unitFor(ns: number): [number, string] {
  const a = Math.abs(ns);
  for (const u of UNITS) if (a >= u[0]) return u;
  return [1, "ns"];
}

/** A duration with 3–4 significant digits in the unit that fits: "12.3 ms", "850 ns", "1.204 s". */
export function formatDuration(ns: number): string {
  if (!Number.isFinite(ns)) return "not observed";
  if (ns === 0) return "0 ns";
  const [scale, unit] = unitFor(ns);
  const v = ns / scale;
  const digits = Math.abs(v) >= 100 ? 1 : Math.abs(v) >= 10 ? 2 : 3;
  return `${trimZeros(v.toFixed(scale === 1 && Math.abs(v) >= 100 ? 0 : digits))} ${unit}`;
}

/** A point in time relative to the trace start, with enough decimals to tell apart ticks `stepNs`
 * apart. The unit follows the larger of the step and `magnitudeNs` (the axis' far end), so deep in a
 * long trace ticks read "131.32 ms" rather than "131320 µs". */
export function formatTimestamp(ns: number, stepNs: number, magnitudeNs = 0): string {
  const [scale, unit] = unitFor(Math.max(Math.abs(stepNs) * 10, Math.abs(magnitudeNs), 1e-3));
  const stepInUnit = stepNs / scale;
  const decimals = Math.max(0, Math.min(9, Math.ceil(-Math.log10(stepInUnit) - 1e-9)));
  return `${(ns / scale).toFixed(decimals)} ${unit}`;
}

function trimZeros(s: string): string {
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

/** Integer with thousands separators (counts). */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/** Byte sizes for progress ("12.5 MB"). */
export function formatBytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} kB`;
  return `${n} B`;
}

/** A counter value: exact for integers, 4 significant digits otherwise (units are in the track name). */
export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v)) return v.toLocaleString("en-US");
  return Number(v.toPrecision(4)).toLocaleString("en-US", { maximumFractionDigits: 6 });
}
