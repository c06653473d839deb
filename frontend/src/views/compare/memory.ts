/** Memory in the Compare tab: each allocator's peak on both sides (matched by device), run − base and
 * ÷ base, the highest reserved bytes likewise, and under the table the ops that hold the most at
 * each side's peak with the step and op where it is reached. A device one side lacks, and a figure
 * one side does not report, read "not observed", never 0; with no allocator events on either side
 * the section says why in one line. */

import type { CompareAnswer, CompareMemoryDevice, CompareMemoryOp } from "../../api/answers.gen.ts";
import { h } from "../../dom.ts";
import { formatBytes, formatCount, NOT_OBSERVED } from "../../shared/units.ts";
import { signedPercent } from "./columns.ts";

/** "+16 MiB", "−1 KiB", "0 B". */
export function signedBytes(bytes: number): string {
  return `${bytes > 0 ? "+" : bytes < 0 ? "−" : ""}${formatBytes(Math.abs(bytes))}`;
}

function cell(value: number | undefined, format: (v: number) => string, reason: string, tone?: string): HTMLTableCellElement {
  if (value === undefined) return h("td", { class: "num cmp-absent", title: reason }, NOT_OBSERVED);
  return h("td", { class: `num ${tone ?? ""}`.trim() }, format(value));
}

function toneOf(delta: number | undefined): string | undefined {
  if (delta === undefined || delta === 0) return undefined;
  return delta < 0 ? "cmp-less" : "cmp-more";
}

function row(d: CompareMemoryDevice): HTMLElement {
  const noBase = d.base_peak_bytes === undefined ? "the base has no allocator events for this device" : "the base reports no reserved bytes";
  const noRun = d.run_peak_bytes === undefined ? "the run has no allocator events for this device" : "the run reports no reserved bytes";
  const missing = d.base_peak_bytes === undefined ? noBase : noRun;
  return h(
    "tr",
    { "data-device": d.device },
    h("th", { scope: "row" }, d.device),
    cell(d.base_peak_bytes, formatBytes, noBase),
    cell(d.run_peak_bytes, formatBytes, noRun),
    cell(d.delta_bytes, signedBytes, missing, toneOf(d.delta_bytes)),
    cell(d.relative, signedPercent, missing),
    cell(d.base_reserved_bytes, formatBytes, noBase),
    cell(d.run_reserved_bytes, formatBytes, noRun),
    cell(d.reserved_delta_bytes, signedBytes, d.base_reserved_bytes === undefined ? noBase : noRun, toneOf(d.reserved_delta_bytes)),
  );
}

/** "at its peak (ProfilerStep#3, in aten::div)". */
export function peakWhere(step: string | undefined, op: string | undefined): string {
  return `at its peak (${step ?? "outside every step"}, ${op ? `in ${op}` : "in no host op"})`;
}

function opsList(side: "base" | "run", label: string, d: CompareMemoryDevice): HTMLElement {
  const peak = side === "base" ? d.base_peak_bytes : d.run_peak_bytes;
  const ops: CompareMemoryOp[] = (side === "base" ? d.base_ops : d.run_ops) ?? [];
  const head = h("p", { class: "cmp-memory-peak" }, `${label}: ${peak === undefined ? NOT_OBSERVED : `${formatBytes(peak)} ${peakWhere(side === "base" ? d.base_step : d.run_step, side === "base" ? d.base_op : d.run_op)}`}`);
  if (peak === undefined) return h("div", { class: "cmp-memory-side", "data-side": side }, head);
  const before = side === "base" ? d.base_before_capture_bytes : d.run_before_capture_bytes;
  const items = ops.map((o) => h("li", { "data-op": o.op }, h("span", { class: "cmp-memory-op" }, o.op), ` ${formatBytes(o.bytes)} in ${formatCount(o.count)} ${o.count === 1 ? "block" : "blocks"}`));
  if (before) items.push(h("li", { class: "cmp-hint" }, `${formatBytes(before)} allocated before the capture started`));
  return h("div", { class: "cmp-memory-side", "data-side": side }, head, items.length ? h("ol", {}, ...items) : h("p", { class: "cmp-hint" }, "no block of the capture is live at the peak"));
}

/** The memory section: the table, then per device the ops holding each peak. */
export function memorySection(answer: CompareAnswer): HTMLElement {
  const el = h("section", { class: "cmp-memory", "data-testid": "cmp-memory" }, h("h2", {}, "Memory: each allocator's peak"));
  const devices = answer.memory ?? [];
  if (!devices.length) {
    el.append(h("p", { class: "cmp-hint", "data-testid": "cmp-memory-absent" }, `${NOT_OBSERVED} — ${answer.memory_reason ?? "no allocator events on either side"}`));
    return el;
  }
  const head = h(
    "tr",
    {},
    h("th", {}, "Device"),
    h("th", { class: "num" }, "Base peak"),
    h("th", { class: "num" }, "Run peak"),
    h("th", { class: "num" }, "Run − base"),
    h("th", { class: "num" }, "Relative"),
    h("th", { class: "num" }, "Base reserved (highest)"),
    h("th", { class: "num" }, "Run reserved (highest)"),
    h("th", { class: "num" }, "Reserved run − base"),
  );
  el.append(
    h("div", { class: "cmp-table-scroll" }, h("table", { class: "cmp-table", "data-testid": "cmp-memory-table" }, h("thead", {}, head), h("tbody", {}, ...devices.map(row)))),
    h("h3", {}, "What holds each peak (blocks of the capture live at the peak, by op)"),
    ...devices.map((d) =>
      h("div", { class: "cmp-memory-device", "data-testid": "cmp-memory-ops", "data-device": d.device }, h("h4", {}, d.device), h("div", { class: "cmp-memory-sides" }, opsList("base", "Base", d), opsList("run", "Run", d))),
    ),
  );
  return el;
}
