/** A sortable table of the Overview (host ops, device kernels, HLO ops): "showing N of M", a header
 * per column that sorts by it, a link from each row to its events in the Trace tab, and a CSV download
 * of exactly the rows and columns shown, in the order shown. The CSV header names each column's unit,
 * numbers are plain (no prefixes, no separators), absent figures keep their words ("not observed"). */

import { clear, h } from "../../dom.ts";
import { formatCount } from "../../shared/units.ts";
import { type Cell, cellElement } from "./cells.ts";

export interface Column<R> {
  id: string;
  title: string;
  /** The CSV header: the title with the unit the column's numbers are written in. */
  csvTitle: string;
  numeric: boolean;
  /** What the column means, as the header's tooltip. */
  help?: string;
  cell(row: R): Cell;
}

export interface SortState {
  column: string;
  descending: boolean;
}

function sortKey(cell: Cell): number | string | null {
  if (cell.kind === "absent") return null;
  return cell.kind === "number" ? cell.value : cell.text;
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

/** A CSV field (RFC 4180): quoted when it holds a comma, quote or line break. Text a spreadsheet would
 * run as a formula (=, +, -, @ first) gets a leading apostrophe: op names come from the profile. */
function csvField(value: string, isText: boolean): string {
  const safe = isText && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) || safe !== safe.trim() ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** The rows as CSV, one line per row (CRLF), the header first. */
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

/** "overview_<table>_<run>_<session>.csv", with only file-name-safe characters. */
export function csvFileName(table: string, run: string, session: string): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^_+|_+$/g, "") || "run";
  return `overview_${safe(table)}_${safe(run)}_${safe(session)}.csv`;
}

/** "showing 50 of 201 host ops (the 50 with the most total time)", or "12 host ops" when all are listed. */
export function listingText(shown: number, total: number, what: string): string {
  if (shown >= total) return `${formatCount(total)} ${what}`;
  return `showing ${formatCount(shown)} of ${formatCount(total)} ${what} (the ${formatCount(shown)} with the most total time)`;
}

/** The next sort after a click on `column`: the same column the other way, a new one from its natural
 * end (numbers largest first, text A to Z). */
export function nextSort<R>(current: SortState, column: Column<R>): SortState {
  if (current.column === column.id) return { column: column.id, descending: !current.descending };
  return { column: column.id, descending: column.numeric };
}

export interface DataTableOptions<R> {
  title: string;
  /** Plural noun of a row ("host ops"), for "showing N of M". */
  what: string;
  testId: string;
  sort: SortState;
  /** Opens the row's events in the Trace tab (a link beside the first column's text). */
  openTrace(row: R): void;
  linkTitle(row: R): string;
  /** Controls shown in the table's header line (e.g. the group-by toggle). */
  controls?: HTMLElement[];
}

export class DataTable<R> {
  readonly el: HTMLElement;
  private readonly listing = h("span", { class: "ov-hint", "data-testid": "ov-listing" });
  private readonly csvLink: HTMLAnchorElement;
  private readonly body = h("div", { class: "ov-table-scroll" });
  private columns: Column<R>[] = [];
  private rows: R[] = [];
  private shown: R[] = [];
  private sort: SortState;
  private csvUrl: string | null = null;
  private fileName = "overview.csv";

  constructor(private readonly options: DataTableOptions<R>) {
    this.sort = options.sort;
    this.csvLink = h("a", { class: "ps-button ov-csv", "data-testid": `${options.testId}-csv` }, "Download CSV");
    this.el = h(
      "section",
      { class: "ov-table-section", "data-testid": options.testId },
      h("div", { class: "ov-table-head" }, h("h3", {}, options.title), ...(options.controls ?? []), this.listing, h("span", { class: "ov-spacer" }), this.csvLink),
      this.body,
    );
  }

  /** Shows `rows` (the route's `total` groups in all) with `columns`; the sort stays when its column does. */
  setRows(columns: Column<R>[], rows: R[], total: number, fileName: string): void {
    this.columns = columns;
    this.rows = rows;
    this.fileName = fileName;
    if (!columns.some((c) => c.id === this.sort.column)) this.sort = this.options.sort;
    this.listing.textContent = listingText(rows.length, total, this.options.what);
    this.render();
  }

  /** The rows in the order shown (what the CSV holds). */
  get shownRows(): readonly R[] {
    return this.shown;
  }

  destroy(): void {
    if (this.csvUrl) URL.revokeObjectURL(this.csvUrl);
    this.csvUrl = null;
  }

  private setSort(id: string): void {
    const column = this.columns.find((c) => c.id === id);
    if (!column) return;
    this.sort = nextSort(this.sort, column);
    this.render();
  }

  private render(): void {
    const column = this.columns.find((c) => c.id === this.sort.column);
    this.shown = column ? sortRows(this.rows, column, this.sort.descending) : [...this.rows];
    const head = h("tr", {}, ...this.columns.map((c) => this.headerCell(c)));
    const empty = h("tr", {}, h("td", { class: "ov-hint", colspan: this.columns.length, "data-testid": `${this.options.testId}-empty` }, `No ${this.options.what} in the scope.`));
    const body = h("tbody", {}, ...(this.shown.length ? this.shown.map((row) => this.rowElement(row)) : [empty]));
    clear(this.body);
    this.body.append(h("table", { class: "ov-table", "data-testid": `${this.options.testId}-table` }, h("thead", {}, head), body));
    this.updateCsv();
  }

  private headerCell(column: Column<R>): HTMLTableCellElement {
    const active = this.sort.column === column.id;
    const arrow = active ? (this.sort.descending ? " ▼" : " ▲") : "";
    const button = h("button", { type: "button", class: "ov-sort", "data-sort": column.id }, column.title + arrow);
    button.addEventListener("click", () => this.setSort(column.id));
    return h(
      "th",
      { class: column.numeric ? "num" : undefined, title: column.help, "aria-sort": active ? (this.sort.descending ? "descending" : "ascending") : undefined },
      button,
    );
  }

  private rowElement(row: R): HTMLTableRowElement {
    const tr = h("tr", { "data-testid": `${this.options.testId}-row` });
    this.columns.forEach((column, i) => {
      const cell = column.cell(row);
      const td = cellElement(cell, column.numeric);
      if (i === 0) {
        const name = h("span", { class: "ov-name", title: cell.kind === "absent" ? cell.reason : (cell.title ?? cell.text) }, cell.text);
        const link = h("button", { type: "button", class: "ov-link", "data-testid": "ov-open-trace", title: this.options.linkTitle(row) }, "events");
        link.addEventListener("click", () => this.options.openTrace(row));
        td.replaceChildren(name, " ", link);
      }
      tr.append(td);
    });
    return tr;
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
