/** The op table: the answer's top ops, filtered by category, bound resource and name, sortable by any
 * column, with a CSV download of exactly the rows and columns it shows. */

import { clear, h } from "../../dom.ts";
import { formatCount } from "../../shared/units.ts";
import type { RooflineAnswer, RooflineOpRow } from "./api.ts";
import { type Column, levelLabel, opColumns, type RooflineContext, sortKey } from "./cells.ts";
import { cellElement, headerCell, type SortState } from "./table.ts";

/** What the op table lists: "" matches any category / bound; `bound` NOT_BOUND matches rows whose
 * bound resource was not observed; `name` is a case-insensitive part of the op's name. */
export interface OpFilter {
  category: string;
  bound: string;
  name: string;
}

export const ANY = "";
export const NOT_BOUND = "-";

export function filterOps(ops: readonly RooflineOpRow[], filter: OpFilter): RooflineOpRow[] {
  const name = filter.name.trim().toLowerCase();
  return ops.filter(
    (op) =>
      (filter.category === ANY || op.category === filter.category) &&
      (filter.bound === ANY || (op.figures.bound_by ?? NOT_BOUND) === filter.bound) &&
      (!name || op.name.toLowerCase().includes(name)),
  );
}

/** `rows` sorted by `column` (stable; rows whose cell is absent go last whichever the direction). */
export function sortRows<R>(rows: readonly R[], column: Column<R>, descending: boolean): R[] {
  const keyed = rows.map((row, i) => ({ row, i, key: sortKey(column.cell(row)) }));
  keyed.sort((a, b) => {
    if (a.key === null || b.key === null) return a.key === b.key ? a.i - b.i : a.key === null ? 1 : -1;
    const order = typeof a.key === "number" && typeof b.key === "number" ? a.key - b.key : String(a.key).localeCompare(String(b.key));
    return (descending ? -order : order) || a.i - b.i;
  });
  return keyed.map((k) => k.row);
}

/** A CSV field (RFC 4180): quoted when it holds a comma, quote or line break. Text that a spreadsheet
 * would run as a formula (=, +, -, @ first) gets a leading apostrophe: op names come from the profile. */
function csvField(value: string, isText: boolean): string {
  const safe = isText && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) || safe !== safe.trim() ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** The table as CSV: the header names each column's unit, numbers are plain (no prefixes, no
 * separators), absent figures keep their words ("not observed"). */
export function csvText<R>(columns: readonly Column<R>[], rows: readonly R[]): string {
  const lines = [columns.map((c) => csvField(c.csvTitle, true)).join(",")];
  for (const row of rows) {
    lines.push(
      columns
        .map((c) => {
          const cell = c.cell(row);
          return cell.kind === "number" ? csvField(cell.csv, false) : csvField(cell.text, true);
        })
        .join(","),
    );
  }
  return `${lines.join("\r\n")}\r\n`;
}

/** "roofline_ops_<run>_<session>[_step3].csv", with only file-name-safe characters. */
export function csvFileName(run: string, session: string, step: number | null): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^_+|_+$/g, "") || "run";
  return `roofline_ops_${safe(run)}_${safe(session)}${step === null ? "" : `_step${step}`}.csv`;
}

/** "showing 12 of 1,532 ops; the 1,000 with the most self time are listed; 988 hidden by the filter". */
export function listingText(shown: number, listed: number, total: number): string {
  const parts = [shown < total ? `showing ${formatCount(shown)} of ${formatCount(total)} ops` : `${formatCount(total)} ops`];
  if (listed < total) parts.push(`the ${formatCount(listed)} with the most self time are listed`);
  if (shown < listed) parts.push(`${formatCount(listed - shown)} hidden by the filter`);
  return parts.join("; ");
}

export interface OpTableEvents {
  select(rank: number): void;
  openTrace(op: RooflineOpRow): void;
  /** The rows the filter lets through changed (the chart draws the same ops). */
  filtered(rows: RooflineOpRow[]): void;
}

export class OpTable {
  readonly el = h("section", { class: "rf-ops", "data-testid": "rf-ops" });
  private readonly categorySelect = h("select", { "aria-label": "Category", "data-testid": "rf-filter-category" });
  private readonly boundSelect = h("select", { "aria-label": "Bound by", "data-testid": "rf-filter-bound" });
  private readonly nameInput = h("input", { type: "search", placeholder: "Filter by name…", "aria-label": "Op name", class: "rf-filter-name", "data-testid": "rf-filter-name" });
  private readonly listing = h("span", { class: "rf-hint", "data-testid": "rf-listing" });
  private readonly csvLink = h("a", { class: "ps-button rf-csv", "data-testid": "rf-csv" }, "Download CSV");
  private readonly scroller = h("div", { class: "rf-table-scroll" });
  private filter: OpFilter = { category: ANY, bound: ANY, name: "" };
  private sort: SortState = { column: "rank", descending: false };
  private answer: RooflineAnswer | null = null;
  private ctx: RooflineContext | null = null;
  private columns: Column<RooflineOpRow>[] = [];
  private shown: RooflineOpRow[] = [];
  private selected: number | null = null;
  private csvUrl: string | null = null;
  private fileName = "roofline_ops.csv";

  constructor(private readonly events: OpTableEvents) {
    this.categorySelect.addEventListener("change", () => this.setFilter({ category: this.categorySelect.value }));
    this.boundSelect.addEventListener("change", () => this.setFilter({ bound: this.boundSelect.value }));
    this.nameInput.addEventListener("input", () => this.setFilter({ name: this.nameInput.value }));
    this.el.append(
      h("h2", {}, "Ops"),
      h(
        "div",
        { class: "rf-filters" },
        h("label", {}, "Category ", this.categorySelect),
        h("label", {}, "Bound by ", this.boundSelect),
        this.nameInput,
        this.listing,
        h("span", { class: "rf-spacer" }),
        this.csvLink,
      ),
      this.scroller,
    );
  }

  /** Shows the ops of `answer`; the filter and sort stay (a category no longer listed matches none). */
  setAnswer(answer: RooflineAnswer, ctx: RooflineContext, fileName: string): void {
    this.answer = answer;
    this.ctx = ctx;
    this.fileName = fileName;
    this.columns = opColumns(ctx);
    if (!this.columns.some((c) => c.id === this.sort.column)) this.sort = { column: "rank", descending: false };
    this.fillFilters();
    this.render();
  }

  get rows(): readonly RooflineOpRow[] {
    return this.shown;
  }

  /** Highlights the op of rank `rank` (null: none); `scroll` brings its row into view. */
  highlight(rank: number | null, scroll = false): void {
    this.selected = rank;
    for (const tr of Array.from(this.scroller.querySelectorAll<HTMLElement>("tr.rf-selected"))) tr.classList.remove("rf-selected");
    if (rank === null) return;
    const row = this.scroller.querySelector<HTMLElement>(`tr[data-rank="${rank}"]`);
    if (!row) return;
    row.classList.add("rf-selected");
    if (scroll) row.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  destroy(): void {
    if (this.csvUrl) URL.revokeObjectURL(this.csvUrl);
    this.csvUrl = null;
  }

  private setFilter(change: Partial<OpFilter>): void {
    this.filter = { ...this.filter, ...change };
    this.render();
  }

  private setSort(column: string): void {
    const col = this.columns.find((c) => c.id === column);
    if (!col) return;
    this.sort = this.sort.column === column ? { column, descending: !this.sort.descending } : { column, descending: col.numeric && column !== "rank" };
    this.render();
  }

  private fillFilters(): void {
    const answer = this.answer as RooflineAnswer;
    const ctx = this.ctx as RooflineContext;
    const counts = new Map<string, number>();
    for (const op of answer.ops) counts.set(op.category, (counts.get(op.category) ?? 0) + 1);
    const option = (value: string, label: string, selected: string) => h("option", { value, selected: value === selected }, label);
    clear(this.categorySelect);
    this.categorySelect.append(
      option(ANY, "all", this.filter.category),
      ...[...counts].sort(([a], [b]) => a.localeCompare(b)).map(([c, n]) => option(c, `${c} (${n})`, this.filter.category)),
    );
    const bounds = new Set(answer.ops.map((op) => op.figures.bound_by ?? NOT_BOUND));
    const boundOrder = ["compute", ...Object.keys(ctx.device?.levels ?? {}), ...[...bounds].sort()];
    clear(this.boundSelect);
    this.boundSelect.append(
      option(ANY, "any", this.filter.bound),
      ...[...new Set(boundOrder)]
        .filter((b) => bounds.has(b) && b !== NOT_BOUND)
        .map((b) => option(b, b === "compute" ? "Compute" : levelLabel(ctx, b), this.filter.bound)),
    );
    if (bounds.has(NOT_BOUND)) this.boundSelect.append(option(NOT_BOUND, "not observed", this.filter.bound));
  }

  private render(): void {
    const answer = this.answer;
    if (!answer) return;
    const column = this.columns.find((c) => c.id === this.sort.column) as Column<RooflineOpRow>;
    const filtered = filterOps(answer.ops, this.filter);
    this.shown = sortRows(filtered, column, this.sort.descending);
    this.listing.textContent = listingText(this.shown.length, answer.ops.length, answer.ops_total);
    const head = h("tr", {}, ...this.columns.map((c) => headerCell(c, this.sort, (id) => this.setSort(id))));
    const body = h("tbody", {}, ...this.shown.map((op) => this.rowElement(op)));
    clear(this.scroller);
    this.scroller.append(h("table", { class: "rf-table", "data-testid": "rf-op-table" }, h("thead", {}, head), body));
    this.updateCsv();
    this.highlight(this.selected);
    this.events.filtered(filtered);
  }

  private rowElement(op: RooflineOpRow): HTMLTableRowElement {
    const tr = h("tr", { class: "rf-row", "data-rank": op.rank, "data-testid": "rf-op-row" });
    for (const column of this.columns) {
      const td = cellElement(column.cell(op), column.numeric);
      if (column.id === "name") {
        td.replaceChildren(h("span", { class: "rf-name", title: td.title || undefined }, op.name));
        td.removeAttribute("title");
        const link = h("button", { type: "button", class: "rf-link", "data-testid": "rf-open-trace", title: `Find "${op.search}" in the Trace tab` }, "events");
        link.addEventListener("click", (e) => {
          e.stopPropagation();
          this.events.openTrace(op);
        });
        td.append(" ", link);
        if (op.program) td.append(" ", this.graphLink(op));
      }
      tr.append(td);
    }
    tr.addEventListener("click", () => this.events.select(op.rank));
    return tr;
  }

  /** An XLA op's events open with its HLO graph in the trace's details panel (views/trace/hlo_graph.ts). */
  private graphLink(op: RooflineOpRow): HTMLButtonElement {
    const link = h("button", { type: "button", class: "rf-link", "data-testid": "rf-open-graph", title: `Find "${op.search}" in the Trace tab, with its HLO graph` }, "graph");
    link.addEventListener("click", (e) => {
      e.stopPropagation();
      this.events.openTrace(op);
    });
    return link;
  }

  private updateCsv(): void {
    if (this.csvUrl) URL.revokeObjectURL(this.csvUrl);
    this.csvUrl = null;
    this.csvLink.setAttribute("download", this.fileName);
    if (typeof URL.createObjectURL !== "function") return;
    this.csvUrl = URL.createObjectURL(new Blob([csvText(this.columns, this.shown)], { type: "text/csv;charset=utf-8" }));
    this.csvLink.setAttribute("href", this.csvUrl);
  }
}
