/** The per-name summary of a selection (several events, or a range on tracks) in the details panel:
 * sortable columns with each name's share of the selection's time span, rows that pick a name (its
 * occurrences are selected and walked through with ◀ ▶), names shortened with the full name on
 * hover, and the table copied as TSV or CSV. */

import type { SummaryResponse, SummaryRow } from "../../api/types.ts";
import { h } from "../../dom.ts";
import { formatCount, formatDuration } from "../../shared/units.ts";
import { DURATION_DIGITS } from "./axis.ts";
import { shortName } from "./names.ts";

export interface SummaryHost {
  /** Selects the occurrences of `name` in the selection (and goes to the first). */
  pickName(name: string): void;
  /** The next (1) or previous (-1) occurrence of the picked name. */
  stepPicked(dir: 1 | -1): void;
}

/** The name picked in the table: where the walk through its occurrences is. */
export interface Picked {
  name: string;
  /** Index of the occurrence shown, -1 before the first. */
  index: number;
  total: number;
  /** Occurrences beyond those the view fetched. */
  more: boolean;
}

type SortKey = keyof SummaryRow | "share";

interface Column {
  key: SortKey;
  title: string;
  hint?: string;
  kind: "name" | "count" | "time" | "share";
}

const COLUMNS: Column[] = [
  { key: "name", title: "Name", kind: "name" },
  { key: "count", title: "Count", kind: "count" },
  { key: "total_ns", title: "Total", kind: "time" },
  { key: "share", title: "% of range", kind: "share", hint: "Total time as a share of the selection's time span (over 100 % when events overlap, on several tracks or nested)" },
  { key: "self_ns", title: "Self", kind: "time" },
  { key: "avg_ns", title: "Average", kind: "time" },
  { key: "min_ns", title: "Min", kind: "time" },
  { key: "max_ns", title: "Max", kind: "time" },
];

/** Percent of `spanNs` that `totalNs` is, with one decimal (empty without a span). */
export function shareText(totalNs: number, spanNs: number): string {
  return spanNs > 0 ? `${((100 * totalNs) / spanNs).toFixed(1)} %` : "";
}

function valueOf(r: SummaryRow, key: SortKey): string | number {
  return key === "share" ? r.total_ns : r[key];
}

export function sortRows(rows: SummaryRow[], key: SortKey, desc: boolean): SummaryRow[] {
  return [...rows].sort((a, b) => {
    const x = valueOf(a, key);
    const y = valueOf(b, key);
    const c = typeof x === "string" ? x.localeCompare(y as string) : (x as number) - (y as number);
    return desc ? -c : c;
  });
}

/** The rows as text a spreadsheet reads: a header, then one line per name with times in ns. A CSV
 * field holding the separator, a quote or a line break is quoted; TSV has no quoting, so tabs and
 * line breaks inside a name become spaces. */
export function tableText(rows: SummaryRow[], spanNs: number, format: "tsv" | "csv"): string {
  const sep = format === "tsv" ? "\t" : ",";
  const field = (v: string | number) => {
    const s = String(v);
    if (format === "tsv") return s.replace(/[\t\r\n]/g, " ");
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  const header = ["name", "count", "total_ns", "percent_of_range", "self_ns", "avg_ns", "min_ns", "max_ns"];
  const lines = [header.join(sep)];
  for (const r of rows) {
    const share = spanNs > 0 ? ((100 * r.total_ns) / spanNs).toFixed(3) : "";
    lines.push([r.name, r.count, r.total_ns, share, r.self_ns, r.avg_ns, r.min_ns, r.max_ns].map(field).join(sep));
  }
  return `${lines.join("\n")}\n`;
}

async function copyText(text: string): Promise<void> {
  if (navigator.clipboard?.writeText) return navigator.clipboard.writeText(text);
  // Without the async clipboard (plain http outside localhost): a selected textarea and copy.
  const area = h("textarea", { style: "position: fixed; opacity: 0" });
  area.value = text;
  document.body.append(area);
  area.select();
  document.execCommand("copy");
  area.remove();
}

export class SummaryTable {
  private sortKey: SortKey = "total_ns";
  private sortDesc = true;

  constructor(private readonly host: SummaryHost) {}

  /** The table of `resp` over a selection spanning `spanNs`, with `picked` marked. */
  render(resp: SummaryResponse, spanNs: number, picked: Picked | null, rerender: () => void): HTMLElement {
    const rows = sortRows(resp.rows, this.sortKey, this.sortDesc);
    const head = h("tr", {});
    for (const col of COLUMNS) {
      const arrow = col.key === this.sortKey ? (this.sortDesc ? " ▾" : " ▴") : "";
      const th = h("th", { class: col.kind === "name" ? "" : "num", title: col.hint ?? "Sort", "data-sort": col.key }, col.title + arrow);
      th.addEventListener("click", () => {
        this.sortDesc = this.sortKey === col.key ? !this.sortDesc : col.key !== "name";
        this.sortKey = col.key;
        rerender();
      });
      head.append(th);
    }
    const body = h("tbody", {});
    for (const r of rows) {
      const tr = h("tr", { class: picked?.name === r.name ? "picked" : "", title: "Select these events", "data-name": r.name });
      for (const col of COLUMNS) tr.append(this.cell(r, col, spanNs));
      tr.addEventListener("click", () => this.host.pickName(r.name));
      body.append(tr);
    }
    const copy = (format: "tsv" | "csv") => {
      const b = h("button", { type: "button", class: "ps-button tv-copy", "data-testid": `summary-copy-${format}`, title: `Copy the table as ${format.toUpperCase()}` }, `Copy ${format.toUpperCase()}`);
      b.addEventListener("click", () => {
        copyText(tableText(rows, spanNs, format)).then(
          () => (b.textContent = "Copied"),
          () => (b.textContent = "Copy failed"),
        );
      });
      return b;
    };
    return h(
      "div",
      { class: "tv-summary-box" },
      h("div", { class: "tv-summary-tools" }, this.pickedNav(picked), h("span", { class: "ps-spacer" }), copy("tsv"), copy("csv")),
      h("table", { class: "tv-summary", "data-testid": "summary-table" }, h("thead", {}, head), body),
    );
  }

  private cell(r: SummaryRow, col: Column, spanNs: number): HTMLElement {
    if (col.kind === "name") return h("td", { class: "tv-name", title: r.name }, shortName(r.name));
    const v = col.key === "share" ? r.total_ns : (r[col.key as keyof SummaryRow] as number);
    const text = col.kind === "share" ? shareText(v, spanNs) : col.kind === "time" ? formatDuration(v, DURATION_DIGITS) : formatCount(v);
    return h("td", { class: "num" }, text);
  }

  /** "name: 3 / 12 ◀ ▶" for the picked name, else how to pick one. */
  private pickedNav(picked: Picked | null): HTMLElement {
    if (!picked) return h("span", { class: "tv-hint" }, "Click a row to select its events.");
    const prev = h("button", { type: "button", class: "ps-button", title: "Previous occurrence", "data-testid": "picked-prev" }, "◀");
    const next = h("button", { type: "button", class: "ps-button", title: "Next occurrence", "data-testid": "picked-next" }, "▶");
    prev.addEventListener("click", () => this.host.stepPicked(-1));
    next.addEventListener("click", () => this.host.stepPicked(1));
    const at = picked.index >= 0 ? `${formatCount(picked.index + 1)} / ` : "";
    const total = `${formatCount(picked.total)}${picked.more ? "+" : ""}`;
    return h(
      "span",
      { class: "tv-picked", "data-testid": "picked" },
      h("b", { class: "tv-name", title: picked.name }, shortName(picked.name)),
      ` ${at}${total} `,
      prev,
      next,
    );
  }
}
