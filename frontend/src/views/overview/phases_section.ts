/** The phases of one host's steps (analysis/phases.py, docs/OVERVIEW.md "Phases"): who wrote them, a
 * stacked bar per step (each phase, then the time outside every phase, drawn with the breakdown
 * chart's helpers) and a table over the steady steps: median, p10–p90, share of the step, device busy
 * while the phase runs ("not observed" without a device) and the share of it spent in model ops. */

import type { OverviewHost, OverviewPhase, OverviewPhases } from "../../api/answers.gen.ts";
import { h } from "../../dom.ts";
import { formatDuration } from "../../shared/units.ts";
import { absent, type Cell, cellElement, duration, percent, text } from "./cells.ts";
import { type ChartFrame, chartFrame } from "./chart_frame.ts";
import type { SectionEvents } from "./steps_section.ts";
import { type BreakdownBar, type BreakdownChartData, breakdownConfig, partText } from "./step_charts.ts";

/** Phase colours in order (a phase's colour is its position); the time outside every phase is grey. */
const PHASE_COLORS = ["#1a73e8", "#e37400", "#188038", "#d01884", "#9334e6", "#12b5cb", "#b06000", "#5f6368"];
export const OUTSIDE_COLOR = "#dadce0";
const NO_MODEL_OP = "no model op runs in it";

export function phaseColor(phase: OverviewPhase, index: number): string {
  return phase.outside ? OUTSIDE_COLOR : PHASE_COLORS[index % PHASE_COLORS.length];
}

/** One bar per step (warm-up included), its parts keyed by the phase's position. */
export function phaseBars(phases: OverviewPhases, warmup: readonly boolean[]): BreakdownBar[] {
  return phases.per_step.map((row, i) => ({
    label: String(phases.step_numbers[i]),
    warmup: warmup[i] ?? false,
    wall_ns: row.reduce((a, b) => a + b, 0),
    parts: Object.fromEntries(row.map((ns, j) => [String(j), ns])),
  }));
}

export function phaseChartData(phases: OverviewPhases, bars: readonly BreakdownBar[]): BreakdownChartData {
  return {
    labels: bars.map((b) => b.label),
    series: phases.phases.map((p, j) => ({ id: String(j), label: p.name, color: phaseColor(p, j), data: bars.map((b) => b.parts[String(j)] ?? null) })),
    notObserved: [],
    warmup: bars.flatMap((b, i) => (b.warmup ? [i] : [])),
  };
}

function swatch(color: string): HTMLElement {
  const el = h("span", { class: "ov-swatch" });
  el.style.background = color;
  el.style.marginRight = "6px";
  return el;
}

/** "p10–p90" of a phase, or why there is none (too few steady steps). */
function spreadCell(phase: OverviewPhase): Cell {
  if (phase.p10_ns === undefined || phase.p90_ns === undefined) return absent("p10/p90 need at least 5 steady steps");
  return text(`${formatDuration(phase.p10_ns)} – ${formatDuration(phase.p90_ns)}`);
}

function modelOpsCell(phase: OverviewPhase): Cell {
  if (phase.outside) return text("");
  if (phase.model_ops_fraction === 0) return text(NO_MODEL_OP);
  return percent(phase.model_ops_fraction, "the route gave no model-op figure");
}

export function phasesTable(phases: OverviewPhases): HTMLElement {
  const noDevice = phases.device_reason ?? "the route gave no device figure";
  const head = h(
    "tr",
    {},
    h("th", {}, "Phase"),
    h("th", { class: "num" }, "Median per step"),
    h("th", { class: "num" }, "p10 – p90"),
    h("th", { class: "num", title: "The phase's time ÷ the steps' wall time, over the steady steps" }, "Share of the step"),
    h("th", { class: "num", title: "The share of the phase's time the device is busy" }, "Device busy while it runs"),
    h("th", { class: "num", title: "The share of the phase's time inside framework ops (aten::, XLA or TF ops)" }, "In model ops"),
  );
  const rows = phases.phases.map((p, j) =>
    h(
      "tr",
      { "data-phase-name": p.name, class: p.outside ? "ov-phase-outside" : undefined },
      h("td", {}, swatch(phaseColor(p, j)), p.name),
      cellElement(duration(p.median_ns, ""), true),
      cellElement(spreadCell(p), true),
      cellElement(percent(p.share, ""), true),
      cellElement(p.outside ? text("") : p.device_busy_fraction === undefined ? absent(noDevice) : percent(p.device_busy_fraction, noDevice), true),
      cellElement(modelOpsCell(p), true),
    ),
  );
  return h("table", { class: "ov-table ov-compact ov-phases-table", "data-testid": "ov-phases-table" }, h("thead", {}, head), h("tbody", {}, ...rows));
}

/** The phases part of a host's section (nothing without steps); the frames are the charts to destroy. */
export function phasesSection(host: OverviewHost, events: SectionEvents): { el: HTMLElement | null; frames: ChartFrame[] } {
  const phases = host.phases;
  if (!phases) return { el: null, frames: [] };
  const el = h("section", { class: "ov-phases", "data-testid": "ov-phases" }, h("h3", {}, "Phases"));
  if (!phases.phases.length) {
    el.append(h("p", { class: "ov-hint", "data-testid": "ov-phases-none" }, `No phases: ${phases.source}. Label the parts of a step (record_function, TraceAnnotation, tf.profiler Trace) to time them here.`));
    return { el, frames: [] };
  }
  el.append(h("p", { class: "ov-hint", "data-testid": "ov-phases-source" }, `Phases: ${phases.source}. Table over the ${phases.scope}.`));
  const rows = host.steps.rows;
  const bars = phaseBars(phases, rows.map((r) => r.phase === "warmup"));
  const data = phaseChartData(phases, bars);
  const fallback = h("ul", {}, ...bars.map((bar, i) => h("li", { "data-bar": bar.label }, `step ${bar.label}: ${data.series.map((s) => partText(s, bar, i)).join(", ")}`)));
  const frame = chartFrame("Phases of each step", breakdownConfig(data, bars, true, (i) => rows[i] && events.openLink(rows[i].link)), fallback, "ov-phases-chart");
  const figure = h("figure", { class: "ov-figure" }, h("figcaption", {}, "Phases of each step"), frame.el);
  el.append(h("div", { class: "ov-charts" }, figure), h("div", { class: "ov-table-scroll ov-fit" }, phasesTable(phases)));
  return { el, frames: [frame] };
}
