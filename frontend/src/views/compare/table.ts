/** A sortable table of the Compare tab with a CSV download of exactly the rows and columns shown, in
 * the order shown. The CSV header names each column's unit; numbers are written plain (ns, percent,
 * calls), a figure a side cannot give keeps its words, and text a spreadsheet would run as a formula
 * gets a leading apostrophe (op names come from the profile). */

import { clear, h } from "../../dom.ts";

/** One cell: a number (shown as `text`, sorted and written to the CSV as `value`), a text, or a
 * figure that is not there (`value` null: `text` says so, `title` why). */
export interface Cell {
  value: number | string | null;
  text: string;
  title?: string;
  /** A class for the cell (e.g. the change's colour). */
  tone?: string;
}

export interface Column<R> {
  id: string;
  title: string;
  /** The CSV header: the title with the unit of the column's numbers. */
  csvTitle: string;
  numeric: boolean;
  help?: string;
  cell(row: R): Cell;
}

export interface SortState {
  column: string;
  descending: boolean;
}

/** `rows` sorted by `column` (stable; absent cells last whichever the direction). */
export function sortRows<R>(rows: readonly R[], column: Column<R>, descending: boolean): R[] {
  const keyed = rows.map((row, i) => ({ row, i, key: column.cell(row).value }));
  keyed.sort((a, b) => {
    if (a.key === null || b.key === null) return a.key === b.key ? a.i - b.i : a.key === null ? 1 : -1;
    const order = typeof a.key === "number" && typeof b.key === "number" ? a.key - b.key : String(a.key).localeCompare(String(b.key));
    return (descending ? -order : order) || a.i - b.i;
  });
  return keyed.map((k) => k.row);
}

/** The next sort after a click on `column`: the same one reversed, or a new one from its natural
 * end (numbers largest first, text A to Z). */
export function nextSort<R>(current: SortState, column: Column<R>): SortState {
  if (current.column === column.id) return { column: column.id, descending: !current.descending };
  return { column: column.id, descending: column.numeric };
}

function csvField(value: string, isText: boolean): string {
  const safe = isText && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) || safe !== safe.trim() ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** A number as the CSV writes it: plain, to 12 significant digits. */
export function csvNumber(x: number): string {
  return String(Number(x.toPrecision(12)));
}

/** The rows as CSV (RFC 4180, CRLF), the header first. */
export function csvText<R>(columns: readonly Column<R>[], rows: readonly R[]): string {
  const lines = [columns.map((c) => csvField(c.csvTitle, true)).join(",")];
  for (const row of rows) {
    lines.push(
      columns
        .map((c) => {
          const cell = c.cell(row);
          return typeof cell.value === "number" ? csvNumber(cell.value) : csvField(cell.value ?? cell.text, true);
        })
        .join(","),
    );
  }
  return `${lines.join("\r\n")}\r\n`;
}

/** "compare_<table>_<run>_vs_<base>.csv", with only file-name-safe characters. */
export function csvFileName(table: string, run: string, base: string): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^_+|_+$/g, "") || "run";
  return `compare_${safe(table)}_${safe(run)}_vs_${safe(base)}.csv`;
}

export interface TableOptions {
  title: string;
  testId: string;
  sort: SortState;
  /** Controls in the table's header line (e.g. a filter). */
  controls?: HTMLElement[];
}

export class SortableTable<R> {
  readonly el: HTMLElement;
  private readonly listing = h("span", { class: "cmp-hint", "data-testid": "cmp-listing" });
  private readonly csvLink: HTMLAnchorElement;
  private readonly body = h("div", { class: "cmp-table-scroll" });
  private columns: Column<R>[] = [];
  private rows: R[] = [];
  private shown: R[] = [];
  private sort: SortState;
  private csvUrl: string | null = null;
  private fileName = "compare.csv";
  private empty = "Nothing to show.";

  constructor(private readonly options: TableOptions) {
    this.sort = options.sort;
    this.csvLink = h("a", { class: "ps-button cmp-csv", "data-testid": `${options.testId}-csv` }, "Download CSV");
    this.el = h(
      "section",
      { class: "cmp-table-section", "data-testid": options.testId },
      h("div", { class: "cmp-table-head" }, h("h3", {}, options.title), ...(options.controls ?? []), this.listing, h("span", { class: "cmp-spacer" }), this.csvLink),
      this.body,
    );
  }

  /** Shows `rows` with `columns`, `listing` saying what they are; the sort stays when its column does. */
  setRows(columns: Column<R>[], rows: R[], listing: string, fileName: string, empty: string): void {
    this.columns = columns;
    this.rows = rows;
    this.fileName = fileName;
    this.empty = empty;
    if (!columns.some((c) => c.id === this.sort.column)) this.sort = this.options.sort;
    this.listing.textContent = listing;
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

  private render(): void {
    const column = this.columns.find((c) => c.id === this.sort.column);
    this.shown = column ? sortRows(this.rows, column, this.sort.descending) : [...this.rows];
    const head = h("tr", {}, ...this.columns.map((c) => this.headerCell(c)));
    const empty = h("tr", {}, h("td", { class: "cmp-hint", colspan: this.columns.length, "data-testid": `${this.options.testId}-empty` }, this.empty));
    const body = h("tbody", {}, ...(this.shown.length ? this.shown.map((row) => this.rowElement(row)) : [empty]));
    clear(this.body);
    this.body.append(h("table", { class: "cmp-table", "data-testid": `${this.options.testId}-table` }, h("thead", {}, head), body));
    this.updateCsv();
  }

  private headerCell(column: Column<R>): HTMLTableCellElement {
    const active = this.sort.column === column.id;
    const arrow = active ? (this.sort.descending ? " ▼" : " ▲") : "";
    const button = h("button", { type: "button", class: "cmp-sort", "data-sort": column.id }, column.title + arrow);
    button.addEventListener("click", () => {
      this.sort = nextSort(this.sort, column);
      this.render();
    });
    return h("th", { class: column.numeric ? "num" : undefined, title: column.help, "aria-sort": active ? (this.sort.descending ? "descending" : "ascending") : undefined }, button);
  }

  private rowElement(row: R): HTMLTableRowElement {
    const tr = h("tr", { "data-testid": `${this.options.testId}-row` });
    for (const column of this.columns) {
      const cell = column.cell(row);
      const classes = [column.numeric ? "num" : "", cell.value === null ? "cmp-absent" : "", cell.tone ?? ""].filter(Boolean).join(" ");
      tr.append(h("td", { class: classes || undefined, title: cell.title, "data-column": column.id }, cell.text));
    }
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
