/** Metrics and counters tables (every block of the report, in its unit) and the list of sources. */

import type { XlaMetric, XlaReport, XlaValue } from "./api.ts";
import { clear, h } from "../../dom.ts";
import { formatCount, NOT_OBSERVED } from "../../shared/units.ts";
import { percentilePlot } from "./charts.ts";
import { formatExact, formatRate, formatValue } from "./format.ts";

const UNIT_NAMES: Record<string, string> = { ns: "time", B: "bytes", "": "number" };

/** A value cell: 4 significant digits in the table, every printed digit in `exact` mode. */
function valueCell(v: XlaValue | null, unit: XlaMetric["unit"], mode: "table" | "exact" | "rate" = "table"): HTMLElement {
  if (!v) return h("td", { class: "num xv-absent" }, NOT_OBSERVED);
  const text =
    v.value === null
      ? `${v.text} (no samples)`
      : mode === "rate"
        ? formatRate(v.value, unit)
        : mode === "exact"
          ? formatExact(v.value, unit, v.resolution)
          : formatValue(v.value, unit, 4);
  const exact = formatExact(v.value, unit, v.resolution);
  const title = v.corrected
    ? `printed ${v.text}: the runtime rounds the larger units up but subtracts only their floor; the value is ${exact}`
    : `printed ${v.text}`;
  return h("td", { class: "num", title }, text, v.corrected ? h("span", { class: "xv-corrected" }, " †") : null);
}

function percentileAt(m: XlaMetric, p: number): XlaValue | null {
  return m.percentiles.find((x) => x.p === p) ?? null;
}

function metricDetail(m: XlaMetric): HTMLElement {
  const rows = m.percentiles.map((p) =>
    h(
      "tr",
      {},
      h("th", {}, `${p.p}%`),
      valueCell(p, m.unit, "exact"),
      h("td", { class: "xv-hint" }, `printed ${p.text}`),
    ),
  );
  return h(
    "div",
    { class: "xv-metric-detail" },
    h(
      "div",
      {},
      m.description ? h("p", {}, m.description) : null,
      h(
        "p",
        { class: "xv-hint" },
        "TotalSamples and Accumulator cover the whole run; percentiles, ValueRate and Rate only the runtime's most recent samples (1024 by default, XLA_METRICS_SAMPLES).",
      ),
      m.legacy_counter_field ? h("p", { class: "xv-hint" }, "This report prints the accumulator as `Counter:` (PyTorch/XLA before late 2019).") : null,
      h(
        "table",
        { class: "xv-kv" },
        h("tr", {}, h("th", {}, "Accumulator"), valueCell(m.accumulator, m.unit, "exact"), h("td", { class: "xv-hint" }, m.accumulator ? `printed ${m.accumulator.text}` : "")),
        m.mean ? h("tr", {}, h("th", {}, "Mean"), valueCell(m.mean, m.unit, "exact")) : null,
        m.stddev ? h("tr", {}, h("th", {}, "StdDev"), valueCell(m.stddev, m.unit, "exact")) : null,
        h("tr", {}, h("th", {}, "ValueRate"), valueCell(m.value_rate, m.unit, "rate")),
        h("tr", {}, h("th", {}, "Rate (samples)"), valueCell(m.rate, "", "rate")),
        ...rows,
      ),
    ),
    m.percentiles.length ? percentilePlot(m.percentiles, m.unit) : h("p", { class: "xv-hint" }, "No percentiles printed."),
  );
}

export function metricsTable(report: XlaReport): HTMLElement {
  if (!report.metrics.length) return h("p", { class: "xv-hint" }, "No metrics report among these logs.");
  const body = h("tbody");
  for (const m of report.metrics) {
    const p50 = percentileAt(m, 50);
    const last = m.percentiles[m.percentiles.length - 1] ?? null;
    const row = h(
      "tr",
      { class: "xv-row", "data-testid": `metric-${m.name}`, tabindex: 0, title: "Click for every percentile and its plot" },
      h("td", {}, m.name),
      h("td", {}, m.unit === null ? "—" : UNIT_NAMES[m.unit] ?? m.unit),
      h("td", { class: "num" }, formatCount(m.total_samples)),
      valueCell(m.accumulator, m.unit),
      valueCell(p50, m.unit),
      valueCell(last, m.unit),
      h("td", { class: "xv-spark-cell" }, m.percentiles.length ? percentilePlot(m.percentiles, m.unit, true) : ""),
    );
    const detailRow = h("tr", { class: "xv-detail-row", hidden: true }, h("td", { colspan: 7 }));
    const toggle = () => {
      const cell = detailRow.firstElementChild as HTMLElement;
      if (detailRow.hidden) {
        clear(cell);
        cell.append(metricDetail(m));
      }
      detailRow.hidden = !detailRow.hidden;
      row.classList.toggle("open", !detailRow.hidden);
    };
    row.addEventListener("click", toggle);
    row.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        toggle();
      }
    });
    body.append(row, detailRow);
  }
  const lastLabel = report.metrics.find((m) => m.percentiles.length)?.percentiles.at(-1)?.p ?? 99;
  return h(
    "div",
    {},
    h(
      "p",
      { class: "xv-hint" },
      report.snapshot
        ? `The report at ${report.snapshot.path}, lines ${report.snapshot.first_line}–${report.snapshot.last_line}` +
            (report.snapshot.step !== null ? ` (step ${report.snapshot.step})` : "") +
            ". † marks times printed with a rounded-up part, shown corrected."
        : "",
    ),
    h(
      "table",
      { class: "xv-table", "data-testid": "metrics-table" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", {}, "Metric"),
          h("th", {}, "Unit"),
          h("th", { class: "num" }, "TotalSamples"),
          h("th", { class: "num" }, "Accumulator"),
          h("th", { class: "num" }, "p50"),
          h("th", { class: "num" }, `p${lastLabel}`),
          h("th", {}, "Percentiles"),
        ),
      ),
      body,
    ),
  );
}

export function countersTable(report: XlaReport): HTMLElement {
  if (!report.counters.length) return h("p", { class: "xv-hint" }, "No counters among these logs.");
  const filter = h("input", { class: "xv-filter", type: "search", placeholder: "Filter counters", "aria-label": "Filter counters" });
  const body = h("tbody");
  const rows = report.counters.map((c) => {
    const row = h(
      "tr",
      { class: c.category === "cpu_fallback" ? "xv-fallback" : "", "data-testid": `counter-${c.name}` },
      h("td", {}, c.name),
      h("td", { class: "num" }, formatCount(c.value)),
      h("td", {}, c.category === "cpu_fallback" ? "CPU fallback" : c.category === "op" ? "op traced" : "runtime"),
      h("td", { class: "xv-hint" }, c.description ?? ""),
    );
    body.append(row);
    return { row, name: c.name.toLowerCase() };
  });
  filter.addEventListener("input", () => {
    const q = filter.value.trim().toLowerCase();
    for (const r of rows) r.row.hidden = q !== "" && !r.name.includes(q);
  });
  return h(
    "div",
    {},
    filter,
    h(
      "table",
      { class: "xv-table", "data-testid": "counters-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "Counter"), h("th", { class: "num" }, "Value"), h("th", {}, "Kind"), h("th", {}, ""))),
      body,
    ),
  );
}

export function sourcesList(report: Pick<XlaReport, "sources" | "errors" | "ordinal" | "ordinals">): HTMLElement {
  const described = (s: XlaReport["sources"][number]): string => {
    const parts = [];
    if (s.reports !== undefined) parts.push(`${s.reports} reports` + (s.steps ? ` (${s.steps} with step=N)` : ""));
    if (s.analyses !== undefined) parts.push(`${s.analyses} analyses, ${s.messages ?? NOT_OBSERVED} pt-xla-profiler lines`);
    if (s.graphs !== undefined) parts.push(`${s.graphs} graphs`);
    return parts.join(", ");
  };
  const skipped = (s: XlaReport["sources"][number]): string =>
    Object.entries(s.skipped)
      .map(([why, n]) => `${n} × ${why}`)
      .join("; ") || "nothing";
  return h(
    "div",
    { "data-testid": "sources" },
    h(
      "table",
      { class: "xv-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "File"), h("th", {}, "Kind"), h("th", {}, "Ordinal"), h("th", {}, "Read"), h("th", {}, "Skipped"))),
      h(
        "tbody",
        {},
        ...report.sources.map((s) =>
          h(
            "tr",
            {},
            h("td", {}, h("code", {}, s.path)),
            h("td", {}, s.format),
            h("td", {}, s.ordinal === null ? "—" : String(s.ordinal)),
            h("td", {}, described(s)),
            h("td", {}, skipped(s), ...s.warnings.map((w) => h("div", { class: "xv-hint" }, w))),
          ),
        ),
      ),
    ),
    report.errors.length
      ? h("div", { class: "ps-error" }, h("strong", {}, "Unreadable files: "), ...report.errors.map((e) => h("div", {}, `${e.path}: ${e.error}`)))
      : null,
  );
}
