/** The phase deltas of the Compare tab (the overview's phases, matched by name and order): each
 * phase's median time per steady step and share of the step on both sides, run − base and ÷ base. A
 * phase only one side has reads "not observed" on the other, never 0. */

import type { ComparePhaseDelta, ComparePhases } from "../../api/answers.gen.ts";
import { h } from "../../dom.ts";
import { formatDuration, formatPercent, NOT_OBSERVED } from "../../shared/units.ts";
import { signedDuration, signedPercent } from "./columns.ts";

function cell(value: number | undefined, format: (v: number) => string, reason: string, tone?: string): HTMLTableCellElement {
  if (value === undefined) return h("td", { class: "num cmp-absent", title: reason }, NOT_OBSERVED);
  return h("td", { class: `num ${tone ?? ""}`.trim() }, format(value));
}

function row(r: ComparePhaseDelta): HTMLElement {
  const onlyRun = "only the run's steps have this phase";
  const onlyBase = "only the base's steps have this phase";
  const missing = r.base_ns === undefined ? onlyRun : onlyBase;
  const tone = r.delta_ns === undefined ? undefined : r.delta_ns < 0 ? "cmp-less" : r.delta_ns > 0 ? "cmp-more" : undefined;
  return h(
    "tr",
    { "data-phase-name": r.name },
    h("th", { scope: "row", class: r.outside ? "cmp-hint" : undefined }, r.name),
    cell(r.base_ns, formatDuration, onlyRun),
    cell(r.base_share, formatPercent, onlyRun),
    cell(r.run_ns, formatDuration, onlyBase),
    cell(r.run_share, formatPercent, onlyBase),
    cell(r.delta_ns, signedDuration, missing, tone),
    r.delta_ns !== undefined && r.relative === undefined ? h("td", { class: "num", title: "the base spends no time here" }, "—") : cell(r.relative, signedPercent, missing),
  );
}

/** The phases section, or null when neither side's steps have phases. */
export function phasesSection(phases: ComparePhases | undefined): HTMLElement | null {
  if (!phases) return null;
  const head = h(
    "tr",
    {},
    h("th", {}, "Phase"),
    h("th", { class: "num" }, "Base (median / step)"),
    h("th", { class: "num" }, "Base share"),
    h("th", { class: "num" }, "Run (median / step)"),
    h("th", { class: "num" }, "Run share"),
    h("th", { class: "num" }, "Run − base"),
    h("th", { class: "num" }, "Relative"),
  );
  return h(
    "section",
    { class: "cmp-phases", "data-testid": "cmp-phases" },
    h("h2", {}, "Phases of the step"),
    h("p", { class: "cmp-hint", "data-testid": "cmp-phases-source" }, `Run: ${phases.run_source}. Base: ${phases.base_source}. Matched by name and order.`),
    h("div", { class: "cmp-table-scroll" }, h("table", { class: "cmp-table cmp-phases-table", "data-testid": "cmp-phases-table" }, h("thead", {}, head), h("tbody", {}, ...phases.rows.map(row)))),
  );
}
