/** The parts of the Compare tab above the tables: the cautions (first, in words), the step-time
 * difference with its interval (never one number without its spread), both sides' step figures side
 * by side, and the method's closing advice. */

import type { CompareAnswer, CompareCaution, CompareShift, CompareSide } from "../../api/answers.gen.ts";
import { append, h } from "../../dom.ts";
import { formatCount, formatDuration, formatPercent } from "../../shared/units.ts";
import { formatRatio, signedDuration, signedPercent } from "./columns.ts";

/** "pytorch_cpu_slow_input · worker0" (the session too when the run has several). */
export function sideLabel(side: CompareSide): string {
  return `${side.run} · ${side.host}`;
}

export function cautionsSection(cautions: readonly CompareCaution[]): HTMLElement | null {
  if (!cautions.length) return null;
  return h(
    "section",
    { class: "cmp-cautions", "data-testid": "cmp-cautions", role: "note" },
    h("h2", {}, "Cautions"),
    h("ul", {}, ...cautions.map((c) => h("li", { "data-kind": c.kind, "data-subject": c.subject, "data-testid": "cmp-caution" }, c.text))),
  );
}

/** "−14.1 ms (95% interval −16.5 ms to −12.8 ms)", or the estimate and why there is no interval. */
export function shiftText(shift: CompareShift): string {
  if (shift.low_ns === undefined || shift.high_ns === undefined) return `${signedDuration(shift.shift_ns)} (no interval: too few steps)`;
  return `${signedDuration(shift.shift_ns)} (${formatPercent(shift.confidence_asked)} interval ${signedDuration(shift.low_ns)} to ${signedDuration(shift.high_ns)})`;
}

export function ratioText(shift: CompareShift): string | null {
  if (shift.ratio === undefined) return null;
  if (shift.ratio_low === undefined || shift.ratio_high === undefined) return `${formatRatio(shift.ratio)} (no interval: too few steps)`;
  return `${formatRatio(shift.ratio)} (${formatRatio(shift.ratio_low)} to ${formatRatio(shift.ratio_high)})`;
}

function figure(label: string, value: string, detail: string, testId: string): HTMLElement {
  return h("div", { class: "cmp-figure", "data-testid": testId }, h("div", { class: "cmp-figure-label" }, label), h("div", { class: "cmp-figure-value" }, value), detail ? h("div", { class: "cmp-figure-detail" }, detail) : null);
}

export function shiftSection(answer: CompareAnswer): HTMLElement {
  const el = h("section", { class: "cmp-shift", "data-testid": "cmp-shift" }, h("h2", {}, "Step time: run − base"));
  const shift = answer.shift;
  if (!shift) {
    el.append(h("p", { class: "cmp-notice", "data-testid": "cmp-shift-reason" }, answer.shift_reason ?? "no steady steps to compare"));
    return el;
  }
  const coverage = shift.coverage === undefined ? "" : `covers ${formatPercent(shift.coverage)} (${shift.method} distribution)`;
  const ratio = ratioText(shift);
  append(el, [
    h(
      "div",
      { class: "cmp-figures" },
      figure("Shift (Hodges–Lehmann)", shiftText(shift), coverage, "cmp-shift-value"),
      ratio ? figure("Run ÷ base", ratio, "the same estimator on log step times", "cmp-ratio-value") : null,
      figure("Difference of medians", `${signedDuration(shift.median_difference_ns)} (${signedPercent(shift.relative_median_difference)})`, `${formatCount(shift.run_steps)} run and ${formatCount(shift.base_steps)} base steady steps`, "cmp-median-difference"),
    ),
    h("p", { class: "cmp-verdict", "data-testid": "cmp-verdict" }, shift.verdict),
    shift.note ? h("p", { class: "cmp-hint", "data-testid": "cmp-shift-note" }, shift.note) : null,
    h("p", { class: "cmp-hint" }, `Estimator: ${shift.estimator}.`),
  ]);
  return el;
}

interface StatRow {
  label: string;
  value(side: CompareSide): string;
  /** The run − base difference, when it means something. */
  delta?(base: CompareSide, run: CompareSide): string;
  title?(side: CompareSide): string | undefined;
}

const TOO_FEW = "too few steps";

function devicesText(side: CompareSide): string {
  if (!side.devices.length) return "none (CPU only)";
  const counts = new Map<string, number>();
  for (const d of side.devices) counts.set(d, (counts.get(d) ?? 0) + 1);
  return [...counts].map(([d, n]) => `${n} × ${d}`).join(", ");
}

function statDuration(pick: (side: CompareSide) => number | undefined): Pick<StatRow, "value" | "delta" | "title"> {
  return {
    value: (s) => {
      const v = pick(s);
      return v === undefined ? (s.stats ? TOO_FEW : "no steps") : formatDuration(v);
    },
    delta: (b, r) => {
      const vb = pick(b);
      const vr = pick(r);
      return vb === undefined || vr === undefined ? "" : signedDuration(vr - vb);
    },
    title: (s) => s.stats?.note,
  };
}

const STAT_ROWS: StatRow[] = [
  { label: "Steps found", value: (s) => s.step_source, title: (s) => s.step_message },
  { label: "Warm-up split", value: (s) => s.split_verdict ?? "—" },
  { label: "Steady steps", value: (s) => formatCount(s.stats?.count ?? 0), delta: (b, r) => String((r.stats?.count ?? 0) - (b.stats?.count ?? 0)) },
  { label: "Median", ...statDuration((s) => s.stats?.median_ns) },
  { label: "p10", ...statDuration((s) => s.stats?.p10_ns) },
  { label: "p90", ...statDuration((s) => s.stats?.p90_ns) },
  { label: "Min", ...statDuration((s) => s.stats?.min_ns) },
  { label: "Max", ...statDuration((s) => s.stats?.max_ns) },
  { label: "Scope of the figures", value: (s) => s.scope },
  { label: "Devices", value: devicesText, title: (s) => s.device_reason },
  { label: "Format", value: (s) => s.format.replace(/_/g, " ") },
];

/** The two sides' step figures in columns Base | Run | Run − base. */
export function statsTable(base: CompareSide, run: CompareSide): HTMLElement {
  const head = h(
    "tr",
    {},
    h("th", {}, ""),
    h("th", {}, "Base", h("span", { class: "cmp-side-name" }, sideLabel(base))),
    h("th", {}, "Run", h("span", { class: "cmp-side-name" }, sideLabel(run))),
    h("th", { class: "num" }, "Run − base"),
  );
  const rows = STAT_ROWS.map((row) =>
    h(
      "tr",
      { "data-stat": row.label },
      h("th", { scope: "row" }, row.label),
      h("td", { title: row.title?.(base), "data-side": "base" }, row.value(base)),
      h("td", { title: row.title?.(run), "data-side": "run" }, row.value(run)),
      h("td", { class: "num", "data-side": "delta" }, row.delta?.(base, run) ?? ""),
    ),
  );
  return h("table", { class: "cmp-table cmp-stats", "data-testid": "cmp-stats" }, h("thead", {}, head), h("tbody", {}, ...rows));
}

export function adviceSection(advice: string): HTMLElement {
  return h("section", { class: "cmp-advice", "data-testid": "cmp-advice" }, h("h2", {}, "Before you conclude"), h("p", {}, advice));
}
