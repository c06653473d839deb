/** The steps of one host: where the step markers come from (inferred steps labelled as such, the
 * other marker candidates to pick from, or that none were found, and how to name an annotation
 * instead), the step-time and breakdown charts, the steady-state figures and the
 * breakdown of the whole capture and of the steady steps by category. */

import type { OverviewBreakdown, OverviewCategory, OverviewHost, OverviewLink, OverviewSteps, OverviewStepStats } from "../../api/answers.gen.ts";
import { h } from "../../dom.ts";
import { formatDuration } from "../../shared/units.ts";
import { absent, card, type Cell, cellElement, count, duration, formatRate, measured, percent, text } from "./cells.ts";
import type { ChartFrame } from "./chart_frame.ts";
import { breakdownChart, captureBreakdownBar, stepBreakdownBars, stepTimeChart } from "./step_charts.ts";

export interface SectionEvents {
  openLink(link: OverviewLink): void;
  /** Reload with `step_name=` set to one of the other step marker candidates. */
  chooseStepName?(name: string): void;
}

/** Where the steps come from, in words: inferred steps are labelled as inferred, never as marked;
 * a select offers the other marker candidates (it reloads with `step_name=`); device work launched
 * before the first step is said to be counted apart. */
export function stepSource(steps: OverviewSteps, events: SectionEvents): HTMLElement {
  const el = h("div", { class: "ov-step-source" });
  if (steps.message) {
    el.append(h("div", { class: "ov-notice", role: "note", "data-testid": "ov-no-steps" }, steps.message));
  } else {
    const count = `${steps.rows.length} step${steps.rows.length === 1 ? "" : "s"}`;
    const inferred = steps.source_kind === "inferred";
    const line = h("p", { class: "ov-hint", "data-testid": "ov-step-source", "data-kind": steps.source_kind });
    if (inferred) line.append(h("strong", { "data-testid": "ov-step-inferred", title: "No step marker in the profile: the steps are inferred from what repeats" }, "Inferred steps: "));
    line.append(inferred ? `${steps.source}; ${count}.` : `Steps from ${steps.source}; ${count}.`);
    el.append(line);
  }
  if (steps.candidates?.length && events.chooseStepName) {
    const choose = events.chooseStepName;
    const select = h(
      "select",
      { "aria-label": "Other step markers", "data-testid": "ov-step-candidates" },
      h("option", { value: "" }, "other step markers…"),
      ...steps.candidates.map((name) => h("option", { value: name }, name)),
    );
    select.addEventListener("change", () => {
      if (select.value) choose(select.value);
    });
    el.append(h("label", { class: "ov-hint" }, "Use instead ", select));
  }
  if (steps.before_first_note) el.append(h("p", { class: "ov-hint", "data-testid": "ov-before-first" }, steps.before_first_note));
  return el;
}

/** Why examples/s is not there: no batch size was given, or there is no steady step to divide by. */
export function examplesReason(batchSize: number | undefined, stats: OverviewStepStats | undefined): string {
  if (batchSize === undefined) return "no batch size given: enter the examples per step in “Batch size” above";
  return stats ? "the route gave no examples/s" : "no steady steps to divide the batch size by";
}

/** The steady-state figures: median, p10/p90, min/max, count and examples/s. */
export function statsCards(stats: OverviewStepStats | undefined, noSteps: string, batchSize: number | undefined): HTMLElement {
  const why = (value: number | undefined, fallback: string): Cell => duration(value, stats ? fallback : noSteps);
  const shortWindow = stats?.note ?? "the route gave no percentile";
  return h(
    "div",
    { class: "ov-cards", "data-testid": "ov-stats" },
    card("Median step", why(stats?.median_ns, noSteps), stats ? "per steady step" : "", "median"),
    card("p10", why(stats?.p10_ns, shortWindow), "", "p10"),
    card("p90", why(stats?.p90_ns, shortWindow), "", "p90"),
    card("Min", why(stats?.min_ns, noSteps), "", "min"),
    card("Max", why(stats?.max_ns, noSteps), "", "max"),
    card("Steady steps", stats ? count(stats.count, noSteps) : absent(noSteps), "", "count"),
    card(
      "Examples/s",
      measured(stats?.examples_per_s, formatRate, stats ? examplesReason(batchSize, stats) : noSteps),
      batchSize === undefined ? "" : `batch size ${batchSize} ÷ median step`,
      "examples",
    ),
  );
}

/** A part of a breakdown: its time, or why there is none. */
function partCell(b: OverviewBreakdown | undefined, c: OverviewCategory, values: "parts" | "fractions" | "per_step_median", unavailable: string): Cell {
  if (!c.observed) return absent(c.reason ?? "not observed in this profile");
  if (!b) return absent(unavailable);
  const figures = b[values];
  const value = figures?.[c.id];
  const reason = values === "per_step_median" && !figures ? "a median per step needs several steps" : "this host's profile has no figure for this category";
  return values === "fractions" ? percent(value, reason) : duration(value, reason);
}

/** The breakdown by category (priority order) of the whole capture and of the steady steps. */
export function breakdownTable(host: OverviewHost, categories: readonly OverviewCategory[]): HTMLElement {
  const ordered = [...categories].sort((a, b) => a.priority - b.priority);
  const noSteady = host.steps.message ?? "no steady steps";
  const steadyLabel = host.steady?.label ?? "steady steps";
  const head = h(
    "tr",
    {},
    h("th", {}, "Category"),
    h("th", { class: "num", title: host.capture.label }, "Whole capture"),
    h("th", { class: "num" }, "%"),
    h("th", { class: "num", title: steadyLabel }, `Steady (${steadyLabel})`),
    h("th", { class: "num" }, "%"),
    h("th", { class: "num", title: "The median of the category's time over the steady steps (medians do not add up)" }, "Median per step"),
  );
  const rows = ordered.map((c) =>
    h(
      "tr",
      { "data-category": c.id, "data-observed": c.observed ? "1" : "0" },
      h("td", { title: c.counts }, c.label),
      cellElement(partCell(host.capture, c, "parts", ""), true),
      cellElement(partCell(host.capture, c, "fractions", ""), true),
      cellElement(partCell(host.steady, c, "parts", noSteady), true),
      cellElement(partCell(host.steady, c, "fractions", noSteady), true),
      cellElement(partCell(host.steady, c, "per_step_median", noSteady), true),
    ),
  );
  const wall = (b: OverviewBreakdown | undefined) => (b ? duration(b.wall_ns, "") : absent(noSteady));
  const total = h(
    "tr",
    { class: "ov-total" },
    h("td", {}, "Wall time"),
    cellElement(wall(host.capture), true),
    cellElement(text(""), true),
    cellElement(wall(host.steady), true),
    cellElement(text(""), true),
    cellElement(text(""), true),
  );
  return h("table", { class: "ov-table ov-compact", "data-testid": "ov-breakdown-table" }, h("thead", {}, head), h("tbody", {}, ...rows, total));
}

/** The steps part of a host's section; the returned frames are the charts to destroy with it. */
export function stepsSection(host: OverviewHost, categories: readonly OverviewCategory[], batchSize: number | undefined, events: SectionEvents): { el: HTMLElement; frames: ChartFrame[] } {
  const steps = host.steps;
  const frames: ChartFrame[] = [];
  const el = h("section", { class: "ov-steps", "data-testid": "ov-steps" });
  el.append(h("h3", {}, "Steps"));
  el.append(stepSource(steps, events));
  const noSteps = steps.message ?? "no steps found";
  el.append(h("h4", {}, `Steady state${host.steady ? ` (${host.steady.label})` : ""}`), statsCards(steps.stats, noSteps, batchSize));
  if (steps.stats?.note) el.append(h("p", { class: "ov-hint ov-stats-note", "data-testid": "ov-stats-note" }, steps.stats.note));
  const charts = h("div", { class: "ov-charts" });
  if (steps.rows.length) {
    const timeChart = stepTimeChart(steps.rows, steps.split, steps.stats, (step) => events.openLink(step.link));
    const parts = breakdownChart(stepBreakdownBars(steps.rows), categories, true, (i) => events.openLink(steps.rows[i].link));
    frames.push(timeChart.frame, parts.frame);
    charts.append(timeChart.el, parts.el);
  } else {
    const capture = host.capture;
    const parts = breakdownChart([captureBreakdownBar(capture)], categories, false, () => events.openLink({ start_ns: capture.start_ns, end_ns: capture.end_ns }));
    frames.push(parts.frame);
    charts.append(parts.el);
  }
  el.append(charts, h("h4", {}, "Breakdown by category"), h("div", { class: "ov-table-scroll ov-fit" }, breakdownTable(host, categories)));
  el.append(h("p", { class: "ov-hint" }, `The whole capture lasts ${formatDuration(host.capture.wall_ns)}. Where activities overlap, an instant counts for the first category listed.`));
  return { el, frames };
}
