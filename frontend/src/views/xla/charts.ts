/** SVG charts of the XLA view, drawn by hand (no chart library): per-step bars and percentile plots.
 * Every axis carries its unit; each bar or point has a native tooltip with the exact value. */

import type { XlaUnit } from "../../api/xla.ts";
import { formatValue } from "./format.ts";

const NS = "http://www.w3.org/2000/svg";

type SvgAttrs = Record<string, string | number>;

export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: SvgAttrs = {},
  ...children: (SVGElement | string)[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(typeof c === "string" ? document.createTextNode(c) : c);
  return el;
}

/** Tick values 0..max at a 1/2/5×10^k step, for `count` ticks or a few more. */
export function niceTicks(max: number, count = 4): number[] {
  if (!(max > 0) || !Number.isFinite(max)) return [0];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let v = 0; v <= max * (1 + 1e-9) + step * 0.999; v += step) {
    ticks.push(Number(v.toPrecision(12)));
    if (v >= max) break;
  }
  return ticks;
}

export interface BarChartOptions {
  title: string;
  xLabel: string;
  steps: number[];
  values: number[];
  unit: XlaUnit | null;
  /** What one bar counts, for the tooltip ("compilations"). */
  what: string;
  /** Steps drawn in the warning colour (e.g. compilations after warm-up). */
  highlight?: Set<number>;
  /** Steps before this one are shaded as warm-up. */
  warmupEnd?: number;
}

const W = 560;
const H = 150;
const M = { left: 62, right: 8, top: 20, bottom: 30 };

/** A bar per step; the y axis labelled in the unit, x with step numbers (thinned when crowded). */
export function barChart(o: BarChartOptions): SVGSVGElement {
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "xv-chart", role: "img", "aria-label": o.title });
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const max = Math.max(0, ...o.values.filter(Number.isFinite));
  const ticks = niceTicks(max);
  const top = ticks[ticks.length - 1] || 1;
  const y = (v: number) => M.top + plotH - (v / top) * plotH;
  root.append(svg("text", { x: M.left, y: 13, class: "xv-chart-title" }, o.title));
  for (const t of ticks) {
    root.append(svg("line", { x1: M.left, x2: W - M.right, y1: y(t), y2: y(t), class: "xv-grid" }));
    root.append(svg("text", { x: M.left - 4, y: y(t) + 4, class: "xv-tick", "text-anchor": "end" }, formatValue(t, o.unit)));
  }
  const n = o.steps.length;
  const slot = n ? plotW / n : plotW;
  if (o.warmupEnd !== undefined) {
    const k = o.steps.findIndex((s) => s >= (o.warmupEnd as number));
    const width = (k < 0 ? n : k) * slot;
    if (width > 0) {
      root.append(svg("rect", { x: M.left, y: M.top, width, height: plotH, class: "xv-warmup" }, svg("title", {}, "warm-up")));
    }
  }
  const labelEvery = Math.max(1, Math.ceil(n / 20));
  o.steps.forEach((step, i) => {
    const v = o.values[i] ?? 0;
    const x = M.left + i * slot + slot * 0.15;
    const barH = Math.max(0, M.top + plotH - y(v));
    const cls = o.highlight?.has(step) && v > 0 ? "xv-bar xv-bar-hot" : "xv-bar";
    root.append(
      svg(
        "rect",
        { x, y: M.top + plotH - barH, width: Math.max(1, slot * 0.7), height: barH, class: cls, "data-step": step },
        svg("title", {}, `${o.xLabel} ${step}: ${formatValue(v, o.unit)} ${o.unit === "" ? o.what : ""}`.trim()),
      ),
    );
    if (i % labelEvery === 0) {
      root.append(
        svg("text", { x: M.left + i * slot + slot / 2, y: H - M.bottom + 13, class: "xv-tick", "text-anchor": "middle" }, String(step)),
      );
    }
  });
  root.append(svg("line", { x1: M.left, x2: W - M.right, y1: M.top + plotH, y2: M.top + plotH, class: "xv-axis" }));
  root.append(svg("text", { x: M.left + plotW / 2, y: H - 3, class: "xv-axis-label", "text-anchor": "middle" }, o.xLabel));
  return root;
}

export interface PercentilePoint {
  p: number;
  value: number | null;
  text: string;
}

/** Value at each printed percentile (x: 0–100 %), as a step line; `small` draws a sparkline. */
export function percentilePlot(points: PercentilePoint[], unit: XlaUnit | null, small = false): SVGSVGElement {
  const w = small ? 120 : 420;
  const h = small ? 28 : 170;
  const m = small ? { left: 2, right: 2, top: 3, bottom: 3 } : { left: 70, right: 12, top: 12, bottom: 32 };
  const root = svg("svg", {
    viewBox: `0 0 ${w} ${h}`,
    class: small ? "xv-spark" : "xv-chart xv-pct",
    role: "img",
    "aria-label": "value by percentile",
  });
  const finite = points.filter((p): p is PercentilePoint & { value: number } => p.value !== null && Number.isFinite(p.value));
  if (!finite.length) return root;
  const plotW = w - m.left - m.right;
  const plotH = h - m.top - m.bottom;
  const max = Math.max(...finite.map((p) => p.value));
  const ticks = niceTicks(max);
  const top = ticks[ticks.length - 1] || 1;
  const x = (p: number) => m.left + (p / 100) * plotW;
  const y = (v: number) => m.top + plotH - (v / top) * plotH;
  if (!small) {
    for (const t of ticks) {
      root.append(svg("line", { x1: m.left, x2: w - m.right, y1: y(t), y2: y(t), class: "xv-grid" }));
      root.append(svg("text", { x: m.left - 4, y: y(t) + 4, class: "xv-tick", "text-anchor": "end" }, formatValue(t, unit)));
    }
    for (const p of [0, 25, 50, 75, 100]) {
      root.append(svg("text", { x: x(p), y: h - m.bottom + 13, class: "xv-tick", "text-anchor": "middle" }, `${p}%`));
    }
    root.append(svg("text", { x: m.left + plotW / 2, y: h - 3, class: "xv-axis-label", "text-anchor": "middle" }, "percentile of recent samples"));
  }
  let d = "";
  finite.forEach((pt, i) => {
    d += `${i ? "L" : "M"}${x(pt.p).toFixed(1)},${y(pt.value).toFixed(1)}`;
    const next = finite[i + 1];
    if (next) d += `L${x(next.p).toFixed(1)},${y(pt.value).toFixed(1)}`;
  });
  root.append(svg("path", { d, class: "xv-line" }));
  if (!small) {
    for (const pt of finite) {
      root.append(
        svg("circle", { cx: x(pt.p), cy: y(pt.value), r: 3, class: "xv-dot" }, svg("title", {}, `${pt.p}%: ${formatValue(pt.value, unit)} (printed ${pt.text})`)),
      );
    }
  }
  return root;
}
