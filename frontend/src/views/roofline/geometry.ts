/** What the roofline chart draws, computed without drawing anything: the roofs (one per memory level
 * with traffic and a known peak), their ridge points (compute peak ÷ bandwidth, where the slanted
 * memory roof meets the flat compute roof), the program and op points at (operational intensity of
 * one level, FLOP rate), and log-axis ranges in whole decades. A point whose intensity or rate is 0
 * or not observed has no place on a log axis: it is counted with the reason instead. Besides the
 * compute roof of most FLOPs (where the ridges are), one flat roof per other precision the ops run at
 * whose peak is known; each op point names its roof (colour). */

import type { RooflineOpRow, RooflineProgramRow } from "./api.ts";
import { levelLabel, type RooflineContext, rowRoofs } from "./cells.ts";

export interface XY {
  x: number;
  y: number;
}

export type PlotPoint = XY &
  ({ kind: "program"; key: string; label: string; row: RooflineProgramRow } | { kind: "op"; key: string; label: string; row: RooflineOpRow; roof: string });

/** A flat compute roof of one precision, FLOP/s, across the chart. */
export interface ComputeRoofLine {
  precision: string;
  peak: number;
  line: XY[];
}

export interface Roof {
  level: string;
  label: string;
  /** B/s. */
  bandwidth: number;
  /** FLOP/B where this roof meets the compute roof; null when the compute peak is unknown. */
  ridge: number | null;
  /** The slanted part, FLOP/s = bandwidth × intensity, from the left edge to the ridge (or the right edge). */
  line: XY[];
}

export interface RooflineModel {
  /** The memory level whose operational intensity is the x axis. */
  level: string;
  levelLabel: string;
  compute: number | null;
  /** The flat compute roof, from the first ridge (or the left edge) to the right edge. */
  computeLine: XY[];
  /** The compute roofs of the other precisions the ops run at (known peaks only), full width. */
  otherRoofs: ComputeRoofLine[];
  roofs: Roof[];
  program: PlotPoint[];
  ops: PlotPoint[];
  /** Why some rows have no point: "3 ops: no FLOPs (a log axis has no 0)". */
  notDrawn: string[];
  x: [number, number];
  y: [number, number];
}

export function ridgePoint(computePeak: number, bandwidth: number): number {
  return computePeak / bandwidth;
}

/** Memory levels that get a roof: traffic in some row and a known, positive bandwidth peak. */
export function roofLevels(ctx: RooflineContext): string[] {
  return ctx.levels.filter((level) => (ctx.device?.bandwidth[level]?.value ?? 0) > 0);
}

/** The smallest range of whole decades holding `values` (positive, finite), widened by a decade on
 * a side where a value sits within a factor 3 of the edge, so no point or ridge lies on the frame. */
export function decades(values: readonly number[]): [number, number] {
  const positive = values.filter((v) => v > 0 && Number.isFinite(v));
  if (!positive.length) return [0.01, 1000];
  const min = Math.min(...positive);
  const max = Math.max(...positive);
  let lo = 10 ** Math.floor(Math.log10(min));
  let hi = 10 ** Math.ceil(Math.log10(max));
  if (min / lo < 3) lo /= 10;
  if (hi / max < 3) hi *= 10;
  return [Number(lo.toPrecision(1)), Number(hi.toPrecision(1))];
}

type Why = "no FLOPs (a log axis has no 0)" | "FLOPs not observed" | string;

function place<R extends RooflineOpRow | RooflineProgramRow>(row: R, level: string, label: string, reasons: Map<Why, number>): XY | null {
  const y = row.figures.flop_rate;
  const x = row.figures.intensity[level];
  let why: Why | null = null;
  if (y === undefined) why = "FLOPs not observed";
  else if (y <= 0) why = "no FLOPs (a log axis has no 0)";
  else if (x === undefined) why = `no ${label} bytes observed`;
  else if (!(x > 0) || !Number.isFinite(x) || !Number.isFinite(y)) why = `no ${label} intensity`;
  if (why !== null) {
    reasons.set(why, (reasons.get(why) ?? 0) + 1);
    return null;
  }
  return { x: x as number, y: y as number };
}

function reasonsText(what: string, reasons: Map<Why, number>): string[] {
  return [...reasons].map(([why, n]) => `${n} ${what}${n === 1 ? "" : "s"}: ${why}`);
}

/** The model of the chart for the x axis of `level`, the answer's program rows and `ops` (the rows
 * the op table's filter lets through). */
export function rooflineModel(ctx: RooflineContext, level: string, program: readonly RooflineProgramRow[], ops: readonly RooflineOpRow[]): RooflineModel {
  const label = levelLabel(ctx, level);
  const programReasons = new Map<Why, number>();
  const opReasons = new Map<Why, number>();
  const programPoints: PlotPoint[] = [];
  for (const row of program) {
    const at = place(row, level, label, programReasons);
    if (at) programPoints.push({ ...at, kind: "program", key: `program:${row.step}`, label: row.step, row });
  }
  const opPoints: PlotPoint[] = [];
  for (const row of ops) {
    const at = place(row, level, label, opReasons);
    if (at) opPoints.push({ ...at, kind: "op", key: `op:${row.rank}`, label: row.name, row, roof: rowRoofs(row)[0] ?? "" });
  }
  const compute = ctx.computePeak;
  const bandwidths = roofLevels(ctx).map((l) => ({ level: l, label: levelLabel(ctx, l), bandwidth: ctx.device?.bandwidth[l]?.value as number }));
  const ridges = compute === null ? [] : bandwidths.map((b) => ridgePoint(compute, b.bandwidth));
  const points = [...programPoints, ...opPoints];
  const main = ctx.device?.roof_precision;
  const others = ctx.roofs.filter((r) => r.precision !== main && r.peak !== null) as { precision: string; peak: number }[];
  const x = decades([...points.map((p) => p.x), ...ridges]);
  const y = decades([...points.map((p) => p.y), ...others.map((r) => r.peak), ...(compute === null ? bandwidths.map((b) => b.bandwidth * x[1]) : [compute])]);
  const roofs: Roof[] = bandwidths.map((b) => {
    const ridge = compute === null ? null : ridgePoint(compute, b.bandwidth);
    const end = ridge === null ? x[1] : Math.min(ridge, x[1]);
    const line = end > x[0] ? [{ x: x[0], y: b.bandwidth * x[0] }, { x: end, y: b.bandwidth * end }] : [];
    return { ...b, ridge, line };
  });
  const firstRidge = ridges.length ? Math.max(x[0], Math.min(...ridges)) : x[0];
  return {
    level,
    levelLabel: label,
    compute,
    computeLine: compute === null ? [] : [{ x: firstRidge, y: compute }, { x: x[1], y: compute }],
    otherRoofs: others.map((r) => ({ ...r, line: [{ x: x[0], y: r.peak }, { x: x[1], y: r.peak }] })),
    roofs,
    program: programPoints,
    ops: opPoints,
    notDrawn: [...reasonsText("program row", programReasons), ...reasonsText("op", opReasons)],
    x,
    y,
  };
}
