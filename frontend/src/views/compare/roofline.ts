/** Roofline deltas of the Compare tab: for each op present in both runs, its FLOP rate and roofline
 * efficiency in each (the `roofline` route of each side, docs/ROOFLINE.md) and their change. The
 * two answers are joined here, in the view: on the server the Roofline and Compare tools stay apart
 * (no tool imports another), and each side's figures are exactly what its Roofline tab shows.
 *
 * Ops are matched by name (an XLA op's name with its program left out, since program ids change
 * between runs; a PyTorch op's name carries its input shapes, so only the same signature matches).
 * A name listed more than once on a side (one op in several XLA programs) is left out, and the
 * listing says how many. rate ratio = run FLOP rate ÷ base FLOP rate; efficiency change = run
 * efficiency − base efficiency, in percentage points. */

import type { RooflineAnswer, RooflineOpRow } from "../../api/answers.gen.ts";
import { formatFlopRate, formatPercent, NOT_OBSERVED } from "../../shared/units.ts";
import { formatRatio } from "./columns.ts";
import type { Cell, Column } from "./table.ts";

export interface RooflineDelta {
  name: string;
  /** The compute roof of the run's op ("bf16", "fp32", …), "" when not said. */
  roof: string;
  runTimeNs: number;
  baseRate?: number;
  runRate?: number;
  baseEfficiency?: number;
  runEfficiency?: number;
}

export interface RooflineDeltas {
  rows: RooflineDelta[];
  /** Names listed more than once on a side, left out. */
  ambiguous: number;
  /** Why there are no rows, when a side has no device roofline. */
  reason?: string;
}

function uniqueByName(ops: readonly RooflineOpRow[]): { byName: Map<string, RooflineOpRow>; repeated: Set<string> } {
  const byName = new Map<string, RooflineOpRow>();
  const repeated = new Set<string>();
  for (const op of ops) {
    if (byName.has(op.name)) repeated.add(op.name);
    byName.set(op.name, op);
  }
  return { byName, repeated };
}

/** The ops of both answers with their figures, the run's most time-consuming first. */
export function rooflineDeltas(run: RooflineAnswer, base: RooflineAnswer): RooflineDeltas {
  if (!run.observed || !base.observed) {
    const side = !run.observed ? run : base;
    return { rows: [], ambiguous: 0, reason: side.reason ?? "device activity not observed" };
  }
  const runs = uniqueByName(run.ops);
  const bases = uniqueByName(base.ops);
  const rows: RooflineDelta[] = [];
  let ambiguous = 0;
  for (const [name, op] of runs.byName) {
    const other = bases.byName.get(name);
    if (!other) continue;
    if (runs.repeated.has(name) || bases.repeated.has(name)) {
      ambiguous++;
      continue;
    }
    rows.push({
      name,
      roof: op.figures.roof ?? "",
      runTimeNs: op.total_time_ns,
      baseRate: other.figures.flop_rate,
      runRate: op.figures.flop_rate,
      baseEfficiency: other.figures.roofline_efficiency,
      runEfficiency: op.figures.roofline_efficiency,
    });
  }
  rows.sort((a, b) => b.runTimeNs - a.runTimeNs || a.name.localeCompare(b.name));
  return { rows, ambiguous };
}

/** The rate ratio (run ÷ base), undefined when a side has no rate or the base's is 0. */
export function rateRatio(row: RooflineDelta): number | undefined {
  return row.baseRate !== undefined && row.runRate !== undefined && row.baseRate > 0 ? row.runRate / row.baseRate : undefined;
}

/** The efficiency change in percentage points (run − base), undefined when a side has none. */
export function efficiencyChange(row: RooflineDelta): number | undefined {
  return row.baseEfficiency !== undefined && row.runEfficiency !== undefined ? (row.runEfficiency - row.baseEfficiency) * 100 : undefined;
}

// Tones: the tab's "better" colour (`cmp-less`, less time) for a higher rate or efficiency, its
// "worse" colour (`cmp-more`) for a lower one.
const NO_RATE = "no FLOPs observed for this op on this side (see its Roofline tab)";
const NO_EFFICIENCY = "no roofline efficiency on this side: its costs or the device's peak are not known, or a figure is above its roof";

function absent(reason: string): Cell {
  return { value: null, text: NOT_OBSERVED, title: reason };
}

function rate(value: number | undefined): Cell {
  return value === undefined ? absent(NO_RATE) : { value, text: formatFlopRate(value) };
}

function efficiency(value: number | undefined): Cell {
  return value === undefined ? absent(NO_EFFICIENCY) : { value: value * 100, text: formatPercent(value) };
}

/** "+12.3 pt", "−0.4 pt". */
export function signedPoints(points: number): string {
  const rounded = Number(Math.abs(points).toPrecision(3));
  return `${points > 0 ? "+" : points < 0 ? "−" : ""}${rounded} pt`;
}

export function rooflineColumns(): Column<RooflineDelta>[] {
  return [
    { id: "name", title: "Op", csvTitle: "Op", numeric: false, help: "The op, by name, present in both runs", cell: (r) => ({ value: r.name, text: r.name }) },
    {
      id: "roof",
      title: "Roof",
      csvTitle: "Roof",
      numeric: false,
      help: "The compute roof the run's op is measured against (its dtype and unit)",
      cell: (r) => (r.roof ? { value: r.roof, text: r.roof } : absent("the run's answer names no roof")),
    },
    { id: "base_rate", title: "Base FLOP rate", csvTitle: "Base FLOP rate (FLOP/s)", numeric: true, help: "FLOPs ÷ time in the base", cell: (r) => rate(r.baseRate) },
    { id: "run_rate", title: "Run FLOP rate", csvTitle: "Run FLOP rate (FLOP/s)", numeric: true, help: "FLOPs ÷ time in the run", cell: (r) => rate(r.runRate) },
    {
      id: "rate_ratio",
      title: "Rate ×",
      csvTitle: "Rate ratio (run / base)",
      numeric: true,
      help: "run FLOP rate ÷ base FLOP rate",
      cell: (r) => {
        const ratio = rateRatio(r);
        return ratio === undefined ? absent("a side has no FLOP rate, or the base's is 0") : { value: ratio, text: formatRatio(ratio), tone: ratio > 1 ? "cmp-less" : ratio < 1 ? "cmp-more" : undefined };
      },
    },
    { id: "base_eff", title: "Base efficiency", csvTitle: "Base efficiency (%)", numeric: true, help: "Roofline efficiency in the base: the highest share of a roof the op reaches", cell: (r) => efficiency(r.baseEfficiency) },
    { id: "run_eff", title: "Run efficiency", csvTitle: "Run efficiency (%)", numeric: true, help: "Roofline efficiency in the run", cell: (r) => efficiency(r.runEfficiency) },
    {
      id: "eff_change",
      title: "Δ efficiency",
      csvTitle: "Efficiency change (percentage points)",
      numeric: true,
      help: "run efficiency − base efficiency, in percentage points",
      cell: (r) => {
        const change = efficiencyChange(r);
        return change === undefined ? absent("a side has no roofline efficiency") : { value: change, text: signedPoints(change), tone: change > 0 ? "cmp-less" : change < 0 ? "cmp-more" : undefined };
      },
    },
  ];
}

/** What the table lists: "12 ops in both runs, the run's most time-consuming first · 2 names in several XLA programs left out". */
export function rooflineListing(deltas: RooflineDeltas): string {
  const many = deltas.rows.length === 1 ? "op" : "ops";
  const left = deltas.ambiguous ? ` · ${deltas.ambiguous} name${deltas.ambiguous === 1 ? "" : "s"} listed more than once on a side left out` : "";
  return `${deltas.rows.length} ${many} in both runs, the run's most time-consuming first${left}`;
}
