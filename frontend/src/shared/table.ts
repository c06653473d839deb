/** The sortable table of the Overview, Compare and Roofline tabs, with a CSV download of exactly the
 * rows and columns it shows, in the order shown. A cell is a number (shown as `text`, sorted by
 * `value`, written to the CSV as `csv`: plain, in the unit the column's `csvTitle` names), a text, or
 * a figure that is not there: it keeps its words ("not observed") on screen and in the CSV, never 0,
 * and sorts last whichever the direction. Text a spreadsheet would run as a formula gets a leading
 * apostrophe in the CSV (op names come from the profile). Each tab draws its own rows and cells
 * (`SortableTableOptions.row`) and names the table's classes by its prefix (`ov-table`, `cmp-sort`,
 * `rf-csv`), so its stylesheet and its tests keep theirs. */

import { clear, h } from "../dom.ts";
import css from "./table.css";

export interface NumberCell {
  kind: "number";
  value: number;
  text: string;
  /** The number as the CSV writes it. */
  csv: string;
  title?: string;
}

export interface TextCell {
  kind: "text";
  text: string;
  title?: string;
  /** What the cell sorts by when not its text (e.g. the text in lower case). */
  sortText?: string;
}

/** A figure the data cannot give: `text` says so ("not observed"), `reason` why. */
export interface AbsentCell {
  kind: "absent";
  text: string;
  reason: string;
}

export type Cell = NumberCell | TextCell | AbsentCell;

export interface Column<R, C = Cell> {
  id: string;
  title: string;
  /** The CSV header: the title with the unit the column's numbers are written in. */
  csvTitle: string;
  numeric: boolean;
  /** What the column means, as the header's tooltip. */
  help?: string;
  /** The direction a first click sorts in; by default numbers largest first, text A to Z. */
  firstDescending?: boolean;
  cell(row: R): C;
}

/** What the header needs of a column. */
export type ColumnHead = Pick<Column<unknown>, "id" | "title" | "numeric" | "help" | "firstDescending">;

export interface SortState {
  column: string;
  descending: boolean;
}

/** What a cell sorts by: its number or its text; null (absent) sorts last either way. */
export function sortKey(cell: Cell): number | string | null {
  if (cell.kind === "absent") return null;
  return cell.kind === "number" ? cell.value : (cell.sortText ?? cell.text);
}

/** `rows` sorted by `column` (stable; rows whose cell is absent go last whichever the direction). */
export function sortRows<R>(rows: readonly R[], column: Column<R, Cell>, descending: boolean): R[] {
  const keyed = rows.map((row, i) => ({ row, i, key: sortKey(column.cell(row)) }));
  keyed.sort((a, b) => {
    if (a.key === null || b.key === null) return a.key === b.key ? a.i - b.i : a.key === null ? 1 : -1;
    const order = typeof a.key === "number" && typeof b.key === "number" ? a.key - b.key : String(a.key).localeCompare(String(b.key));
    return (descending ? -order : order) || a.i - b.i;
  });
  return keyed.map((k) => k.row);
}

/** The next sort after a click on `column`: the same column the other way, a new one from its
 * natural end (`firstDescending`). */
export function nextSort(current: SortState, column: ColumnHead): SortState {
  if (current.column === column.id) return { column: column.id, descending: !current.descending };
  return { column: column.id, descending: column.firstDescending ?? column.numeric };
}

/** A number as the CSV writes it: plain, to 12 significant digits (no binary rounding noise such as
 * 2.3800000000000003). */
export function csvNumber(x: number): string {
  return String(Number(x.toPrecision(12)));
}

/** A CSV field (RFC 4180): quoted when it holds a comma, quote or line break, or starts or ends with
 * white space. Text starting with =, +, -, @, tab or CR gets a leading apostrophe. */
function csvField(value: string, isText: boolean): string {
  const safe = isText && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) || safe !== safe.trim() ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** The rows as CSV, one line per row (CRLF), the header first. */
export function csvText<R>(columns: readonly Column<R, Cell>[], rows: readonly R[]): string {
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

/** "<part>_<part>….csv", each part kept to file-name-safe characters ("run" when none is left). */
export function csvFileName(...parts: string[]): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^_+|_+$/g, "") || "run";
  return `${parts.map(safe).join("_")}.csv`;
}

/** The table's own rules (section, header line, sort buttons, CSV link) for the tab of `prefix`:
 * table.css writes them for the prefix "tbl". */
export function tableStyle(prefix: string): string {
  return css.replace(/\.tbl-/g, `.${prefix}-`);
}

/** A header cell; with `sorting` it holds a button that sorts by the column (again: the other way). */
export function headerCell(column: ColumnHead, sorting?: { prefix: string; sort: SortState; onSort(column: string): void }): HTMLTableCellElement {
  const cls = column.numeric ? "num" : undefined;
  if (!sorting) return h("th", { class: cls, title: column.help }, column.title);
  const { sort } = sorting;
  const active = sort.column === column.id;
  const arrow = active ? (sort.descending ? " ▼" : " ▲") : "";
  const button = h("button", { type: "button", class: `${sorting.prefix}-sort`, "data-sort": column.id }, column.title + arrow);
  button.addEventListener("click", () => sorting.onSort(column.id));
  return h("th", { class: cls, title: column.help, "aria-sort": active ? (sort.descending ? "descending" : "ascending") : undefined }, button);
}

export interface SortableTableOptions<R, C extends Cell> {
  /** The tab's class prefix: the table is `<prefix>-table`, its sort buttons `<prefix>-sort`, … */
  prefix: string;
  /** The table's data-testid is `<testId>-table`, its empty row's `<testId>-empty`. */
  testId: string;
  csvTestId: string;
  /** The sort at first, and again when its column is gone. */
  sort: SortState;
  /** A row's element: its cells in the order of `columns`. */
  row(row: R, columns: readonly Column<R, C>[]): HTMLTableRowElement;
  /** Called after each drawing of the rows (new rows or a new sort). */
  rendered?(): void;
}

/** The rows of a table, sortable by a click on a header, and the CSV link of what it shows. The tab
 * places `listing`, `csvLink` and `scroller` (or takes `section`'s layout). */
export class SortableTable<R, C extends Cell = Cell> {
  /** What the rows are ("showing 50 of 201 host ops …"). */
  readonly listing: HTMLSpanElement;
  readonly csvLink: HTMLAnchorElement;
  /** The scrolling box the table is drawn in. */
  readonly scroller: HTMLDivElement;
  private columns: Column<R, C>[] = [];
  private rows: R[] = [];
  private shown: R[] = [];
  private sort: SortState;
  private empty: string | null = null;
  private csvUrl: string | null = null;
  private fileName = "";

  constructor(private readonly options: SortableTableOptions<R, C>) {
    this.sort = options.sort;
    this.listing = h("span", { class: `${options.prefix}-hint`, "data-testid": `${options.prefix}-listing` });
    this.csvLink = h("a", { class: `ps-button ${options.prefix}-csv`, "data-testid": options.csvTestId }, "Download CSV");
    this.scroller = h("div", { class: `${options.prefix}-table-scroll` });
  }

  /** The section `title` heads: `controls`, the listing and the CSV link on one line, the table below. */
  section(title: string, controls: readonly HTMLElement[] = []): HTMLElement {
    const p = this.options.prefix;
    return h(
      "section",
      { class: `${p}-table-section`, "data-testid": this.options.testId },
      h("div", { class: `${p}-table-head` }, h("h3", {}, title), ...controls, this.listing, h("span", { class: `${p}-spacer` }), this.csvLink),
      this.scroller,
    );
  }

  /** Shows `rows` with `columns`, `listing` saying what they are, `empty` the row shown when there is
   * none (null: none); the sort stays when its column does. */
  setRows(columns: Column<R, C>[], rows: R[], listing: string, fileName: string, empty: string | null): void {
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

  private setSort(id: string): void {
    const column = this.columns.find((c) => c.id === id);
    if (!column) return;
    this.sort = nextSort(this.sort, column);
    this.render();
  }

  private render(): void {
    const { prefix, testId } = this.options;
    const column = this.columns.find((c) => c.id === this.sort.column);
    this.shown = column ? sortRows(this.rows, column, this.sort.descending) : [...this.rows];
    const sorting = { prefix, sort: this.sort, onSort: (id: string) => this.setSort(id) };
    const head = h("tr", {}, ...this.columns.map((c) => headerCell(c, sorting)));
    const rows = this.shown.map((row) => this.options.row(row, this.columns));
    if (!rows.length && this.empty !== null) {
      rows.push(h("tr", {}, h("td", { class: `${prefix}-hint`, colspan: this.columns.length, "data-testid": `${testId}-empty` }, this.empty)));
    }
    clear(this.scroller);
    this.scroller.append(h("table", { class: `${prefix}-table`, "data-testid": `${testId}-table` }, h("thead", {}, head), h("tbody", {}, ...rows)));
    this.updateCsv();
    this.options.rendered?.();
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
