/** The XLA view's first page: summary cards, findings with evidence / code locations / fix, and the
 * per-step charts that make recompilation and host round trips visible. */

import type { XlaFinding, XlaReport, XlaSeries, XlaSummary } from "./api.ts";
import { type Child, h } from "../../dom.ts";
import { formatBytes, formatCount, formatDuration, NOT_OBSERVED } from "../../shared/units.ts";
import { barChart } from "./charts.ts";

const TRANSFER_FROM = ["TransferFromDeviceTime", "TransferFromServerTime"];

function card(label: string, value: string, detail: string, testid: string): HTMLElement {
  return h(
    "div",
    { class: "xv-card", "data-testid": `card-${testid}` },
    h("div", { class: "xv-card-label" }, label),
    h("div", { class: value === NOT_OBSERVED ? "xv-card-value xv-absent" : "xv-card-value" }, value),
    h("div", { class: "xv-card-detail" }, detail),
  );
}

function transferDetail(t: XlaSummary["to_device"]): string {
  if (t.transfers === null) return "";
  return `${formatCount(t.transfers)} transfers, ${formatBytes(t.bytes)}`;
}

export function summaryCards(summary: XlaSummary | null): HTMLElement {
  if (!summary) {
    return h("p", { class: "xv-hint" }, "No metrics report among these logs, so no summary numbers: see the Sources tab.");
  }
  const s = summary;
  const compiles =
    s.uncached_compiles === null && s.cached_compiles === null
      ? NOT_OBSERVED
      : `${formatCount(s.uncached_compiles ?? 0)} compiled`;
  const fallbackOps = s.cpu_fallback_ops.map((o) => `${o.name} ×${formatCount(o.value)}`).join(", ");
  return h(
    "div",
    { class: "xv-cards" },
    card("Compilations", compiles, s.cached_compiles === null ? "cache hits not observed" : `${formatCount(s.cached_compiles)} served from the cache`, "compilations"),
    card("Compile time", formatDuration(s.compile_time_ns), s.compilations === null ? "" : `in ${formatCount(s.compilations)} compilations`, "compile-time"),
    card("Execute time", formatDuration(s.execute_time_ns), s.executions === null ? "" : `in ${formatCount(s.executions)} executions`, "execute-time"),
    card("Host → device", formatDuration(s.to_device.time_ns), transferDetail(s.to_device), "to-device"),
    card("Device → host", formatDuration(s.from_device.time_ns), transferDetail(s.from_device), "from-device"),
    card("CPU fallbacks", s.cpu_fallback_calls === null ? NOT_OBSERVED : `${formatCount(s.cpu_fallback_calls)} calls`, fallbackOps || "no aten:: counter", "cpu-fallback"),
    card("Steps", s.steps === null ? NOT_OBSERVED : formatCount(s.steps), "MarkStep counter", "steps"),
  );
}

export interface FindingActions {
  openDiff(a: number, b: number): void;
}

function findingCard(f: XlaFinding, actions: FindingActions): HTMLElement {
  const evidence = h("dl", { class: "xv-evidence" });
  for (const e of f.evidence) evidence.append(h("dt", {}, e.label), h("dd", {}, e.value));
  const locations: Child = f.locations?.length
    ? h(
        "div",
        { class: "xv-locations" },
        h("h4", {}, "Code locations"),
        h(
          "ul",
          {},
          ...f.locations.map((l) =>
            h(
              "li",
              { "data-testid": "location" },
              h("code", { class: "xv-loc" }, l.label),
              ` ×${l.count} — ${l.role}`,
              l.file_as_logged ? h("span", { class: "xv-hint" }, ` (logged as ${l.file_as_logged})`) : null,
            ),
          ),
        ),
      )
    : null;
  const diffs: Child = f.diffs?.length
    ? h(
        "div",
        { class: "xv-diffs" },
        h("h4", {}, "Graphs that differ"),
        h(
          "ul",
          {},
          ...f.diffs.map((d) => {
            const link = h("button", { class: "xv-link", type: "button", "data-testid": "open-diff" }, `compare graph #${d.a} with #${d.b}`);
            link.addEventListener("click", () => actions.openDiff(d.a, d.b));
            return h("li", {}, link, ` — ${d.summary}`);
          }),
        ),
      )
    : null;
  return h(
    "section",
    { class: `xv-finding sev-${f.severity}`, "data-testid": `finding-${f.id}` },
    h("header", {}, h("span", { class: `xv-sev sev-${f.severity}` }, f.severity), h("h3", {}, f.title)),
    h("p", { class: "xv-summary" }, f.summary),
    f.evidence.length ? h("h4", {}, "Evidence") : null,
    f.evidence.length ? evidence : null,
    locations,
    diffs,
    h("div", { class: "xv-fix" }, h("strong", {}, "Try: "), f.fix),
    h("p", { class: "xv-hint" }, `From: ${f.sources.join(", ") || "—"}`),
  );
}

/** What the checks could not look at, so "no finding" is never mistaken for "all clear". */
function missingInputs(report: XlaReport): string[] {
  const out: string[] = [];
  if (!report.series) {
    out.push(
      "No per-step series: set XLA_METRICS_FILE, or call profscope.xla.log_metrics(run_dir, step) each step, to count compilations and transfers per step.",
    );
  }
  if (!report.debug) out.push("No PT_XLA_DEBUG log: compilation causes and the Python lines that forced executions are not available.");
  if (!report.graphs) out.push("No graph log (XLA_SAVE_TENSORS_FILE): graphs cannot be compared, so dynamic shapes and growing graphs are not checked.");
  return out;
}

export function findingsList(report: XlaReport, actions: FindingActions): HTMLElement {
  const missing = missingInputs(report);
  return h(
    "div",
    { class: "xv-findings", "data-testid": "findings" },
    h("h2", {}, `Findings (${report.findings.length})`),
    report.findings.length
      ? null
      : h("p", { class: "xv-ok" }, "None of the checks fired: no recompilation after warm-up, CPU fallback, frequent device→host transfer, long compilation, dynamic shape or growing graph was found in these logs."),
    ...report.findings.map((f) => findingCard(f, actions)),
    missing.length ? h("ul", { class: "xv-missing" }, ...missing.map((m) => h("li", {}, m))) : null,
  );
}

function seriesMetric(series: XlaSeries, names: string[]): { name: string; samples: number[]; acc: number[] } | null {
  for (const name of names) {
    const m = series.metrics[name];
    if (m) return { name, samples: m.delta_samples, acc: m.delta_accumulator };
  }
  return null;
}

/** Charts of what happened in each step (differences between consecutive cumulative reports). */
export function stepCharts(report: XlaReport): HTMLElement | null {
  const series = report.series;
  if (!series || series.steps.length < 2) return null;
  const x = series.x_label;
  const steps = series.steps;
  const warmupEnd = x === "step" && steps.length > report.warmup_steps ? steps[report.warmup_steps] : undefined;
  const charts: HTMLElement[] = [];
  const compile = seriesMetric(series, ["CompileTime"]);
  if (compile) {
    const hot = new Set(steps.filter((s, i) => warmupEnd !== undefined && s >= warmupEnd && (compile.samples[i] ?? 0) > 0));
    charts.push(barChart({ title: `Compilations per ${x}`, xLabel: x, steps, values: compile.samples, unit: "", what: "compilations", highlight: hot, warmupEnd }));
    charts.push(barChart({ title: `Compile time per ${x}`, xLabel: x, steps, values: compile.acc, unit: "ns", what: "", warmupEnd }));
  }
  const execute = seriesMetric(series, ["ExecuteTime"]);
  if (execute) charts.push(barChart({ title: `Execute time per ${x}`, xLabel: x, steps, values: execute.acc, unit: "ns", what: "" }));
  const fromDevice = seriesMetric(series, TRANSFER_FROM);
  if (fromDevice) {
    charts.push(barChart({ title: `Device → host transfers per ${x}`, xLabel: x, steps, values: fromDevice.samples, unit: "", what: "transfers", highlight: new Set(steps) }));
  }
  const aten = Object.entries(series.counters).filter(([name]) => name.startsWith("aten::"));
  if (aten.length) {
    const values = steps.map((_, i) => aten.reduce((sum, [, c]) => sum + (c.deltas[i] ?? 0), 0));
    charts.push(barChart({ title: `CPU fallback calls per ${x} (${aten.map(([n]) => n).join(", ")})`, xLabel: x, steps, values, unit: "", what: "calls", highlight: new Set(steps) }));
  }
  const size = series.metrics["TensorsGraphSize"];
  if (size) {
    const values = steps.map((_, i) => ((size.delta_samples[i] ?? 0) > 0 ? (size.delta_accumulator[i] ?? 0) / (size.delta_samples[i] ?? 1) : 0));
    charts.push(barChart({ title: `Mean graph size per ${x} (IR nodes)`, xLabel: x, steps, values, unit: "", what: "nodes" }));
  }
  if (!charts.length) return null;
  return h(
    "div",
    { class: "xv-steps", "data-testid": "step-charts" },
    h("h2", {}, `Per ${x}`),
    h(
      "p",
      { class: "xv-hint" },
      `From ${series.source}: differences between consecutive reports.` +
        (warmupEnd !== undefined ? ` Shaded: the ${report.warmup_steps} warm-up steps; red: compilations after warm-up.` : "") +
        (series.resets.length ? ` Metrics were cleared at ${x} ${series.resets.join(", ")}.` : ""),
    ),
    h("div", { class: "xv-chart-grid" }, ...charts),
  );
}

/** What the PT_XLA_DEBUG log says in aggregate: why the runtime compiled and executed, and the
 * runtime's own `pt-xla-profiler` verdicts. */
export function debugDigest(report: XlaReport): HTMLElement | null {
  const debug = report.debug;
  if (!debug) return null;
  const kinds: Record<string, string> = { compilation: "compilations", execution: "executions", unexpected_execution: "unexpected executions" };
  return h(
    "div",
    { class: "xv-debug", "data-testid": "debug-digest" },
    h("h2", {}, "PT_XLA_DEBUG log"),
    h(
      "table",
      { class: "xv-table" },
      h("thead", {}, h("tr", {}, h("th", { class: "num" }, "Count"), h("th", {}, "Of"), h("th", {}, "Cause"))),
      h(
        "tbody",
        {},
        ...debug.causes.map((c) => h("tr", {}, h("td", { class: "num" }, formatCount(c.count)), h("td", {}, kinds[c.kind] ?? c.kind), h("td", {}, c.cause))),
      ),
    ),
    debug.messages.length
      ? h(
          "div",
          {},
          h("h4", {}, "pt-xla-profiler"),
          h(
            "ul",
            { class: "xv-frames" },
            ...debug.messages.map((m) => h("li", {}, m.text, m.count > 1 ? h("span", { class: "xv-hint" }, ` (×${m.count}, lines ${m.first_line}–${m.last_line})`) : null)),
          ),
        )
      : null,
  );
}
