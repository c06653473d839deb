/** What the Compare tab writes: signed differences (run − base: "−14.1 ms" is the run being faster),
 * ratios, and the columns of its tables (op deltas and breakdown deltas). The CSV writes times in
 * ns and relative figures in percent. */

import type { CompareCategory, CompareOpDelta } from "../../api/answers.gen.ts";
import { formatCount, formatDuration, formatPercent, NOT_OBSERVED } from "../../shared/units.ts";
import type { Cell, Column } from "./table.ts";

/** "+14.1 ms", "−3.2 µs", "0 ns". */
export function signedDuration(ns: number): string {
  return `${ns > 0 ? "+" : ns < 0 ? "−" : ""}${formatDuration(Math.abs(ns))}`;
}

/** "+23.4%", "−9.7%". */
export function signedPercent(fraction: number): string {
  return `${fraction > 0 ? "+" : fraction < 0 ? "−" : ""}${formatPercent(Math.abs(fraction))}`;
}

/** "3.3×". */
export function formatRatio(ratio: number): string {
  return `${Number(ratio.toPrecision(3))}×`;
}

function absent(text: string, reason: string): Cell {
  return { value: null, text, title: reason };
}

function duration(ns: number | undefined, reason: string): Cell {
  return ns === undefined ? absent(NOT_OBSERVED, reason) : { value: ns, text: formatDuration(ns) };
}

function signed(ns: number | undefined, reason: string): Cell {
  return ns === undefined ? absent(NOT_OBSERVED, reason) : { value: ns, text: signedDuration(ns), tone: ns < 0 ? "cmp-less" : ns > 0 ? "cmp-more" : undefined };
}

function relative(fraction: number | undefined, text: string, reason: string): Cell {
  return fraction === undefined ? absent(text, reason) : { value: fraction * 100, text: signedPercent(fraction) };
}

export type OpTableId = "host_ops" | "kernels" | "hlo_ops";

const NAME_TITLE: Record<OpTableId, string> = { host_ops: "Host op", kernels: "Kernel", hlo_ops: "HLO op" };

/** The op-delta columns; kernels and HLO ops also show their kind / category. */
export function opColumns(table: OpTableId, sameWithin: number): Column<CompareOpDelta>[] {
  const onlyOne = "only one run has this op: no relative change";
  const perStep = (side: string) => `per ${side} steady step (its whole capture when it has no steps)`;
  const calls = (id: string, title: string, side: "base" | "run"): Column<CompareOpDelta> => ({
    id,
    title,
    csvTitle: `${title} (calls)`,
    numeric: true,
    help: `Calls ${perStep(side)}`,
    cell: (r) => {
      const value = side === "base" ? r.base_calls_per_step : r.run_calls_per_step;
      const total = side === "base" ? r.base_calls : r.run_calls;
      return { value, text: formatCount(value), title: `${formatCount(total)} calls in the ${side}'s scope` };
    },
  });
  const kind: Column<CompareOpDelta> = {
    id: "kind",
    title: table === "hlo_ops" ? "Category" : "Kind",
    csvTitle: table === "hlo_ops" ? "Category" : "Kind",
    numeric: false,
    cell: (r) => ({ value: r.kind, text: r.kind }),
  };
  return [
    { id: "name", title: NAME_TITLE[table], csvTitle: NAME_TITLE[table], numeric: false, cell: (r) => ({ value: r.name, text: r.name, title: r.name }) },
    {
      id: "change",
      title: "Change",
      csvTitle: "Change",
      numeric: false,
      help: `added / removed: only the run / the base has it; faster / slower: self time per step changed by at least ${formatPercent(sameWithin)} of the base's`,
      cell: (r) => ({ value: r.change, text: r.change, tone: `cmp-change cmp-${r.change}` }),
    },
    ...(table === "host_ops" ? [] : [kind]),
    { id: "base_self", title: "Base self / step", csvTitle: "Base self per step (ns)", numeric: true, help: `Self time ${perStep("base")}`, cell: (r) => duration(r.base_self_ns, "") },
    { id: "run_self", title: "Run self / step", csvTitle: "Run self per step (ns)", numeric: true, help: `Self time ${perStep("run")}`, cell: (r) => duration(r.run_self_ns, "") },
    { id: "delta", title: "Run − base", csvTitle: "Run - base self per step (ns)", numeric: true, help: "Self time per step, run − base (negative: faster in the run)", cell: (r) => signed(r.delta_self_ns, "") },
    { id: "relative", title: "Relative", csvTitle: "Relative (%)", numeric: true, help: "(run − base) ÷ base", cell: (r) => relative(r.relative, "—", onlyOne) },
    calls("base_calls", "Base calls / step", "base"),
    calls("run_calls", "Run calls / step", "run"),
  ];
}

/** The breakdown-delta columns: a category's median part per step on each side and the difference. */
export function categoryColumns(): Column<CompareCategory>[] {
  const reason = (c: CompareCategory) => c.reason ?? "not observed";
  return [
    { id: "label", title: "Category", csvTitle: "Category", numeric: false, cell: (c) => ({ value: c.label, text: c.label }) },
    { id: "base", title: "Base (median / step)", csvTitle: "Base median per step (ns)", numeric: true, cell: (c) => duration(c.base_ns, reason(c)) },
    { id: "run", title: "Run (median / step)", csvTitle: "Run median per step (ns)", numeric: true, cell: (c) => duration(c.run_ns, reason(c)) },
    { id: "delta", title: "Run − base", csvTitle: "Run - base (ns)", numeric: true, cell: (c) => signed(c.delta_ns, reason(c)) },
    {
      id: "relative",
      title: "Relative",
      csvTitle: "Relative (%)",
      numeric: true,
      cell: (c) => (c.delta_ns === undefined ? absent(NOT_OBSERVED, reason(c)) : relative(c.relative, "—", "the base spends no time here: no relative change")),
    },
  ];
}
