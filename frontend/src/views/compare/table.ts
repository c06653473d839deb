/** A sortable table of the Compare tab with a CSV download of exactly the rows and columns shown, in
 * the order shown (shared/table.ts). The CSV header names each column's unit; numbers are written
 * plain (ns, percent, calls), a figure a side cannot give keeps its words, and text a spreadsheet
 * would run as a formula gets a leading apostrophe (op names come from the profile). */

import { h } from "../../dom.ts";
import {
  type Column as TableColumn,
  csvFileName as fileName,
  csvNumber,
  type Cell as TableCell,
  csvText as tableCsv,
  type SortState,
  SortableTable,
  sortRows as tableSort,
} from "../../shared/table.ts";

export { nextSort, type SortState } from "../../shared/table.ts";

/** One cell: a number (shown as `text`, sorted and written to the CSV as `value`), a text (`value`:
 * what it sorts by), or a figure that is not there (`value` null: `text` says so, `title` why). */
export interface Cell {
  value: number | string | null;
  text: string;
  title?: string;
  /** A class for the cell (e.g. the change's colour). */
  tone?: string;
}

export type Column<R> = TableColumn<R, Cell>;

/** A cell as the shared table holds it, with its tone. */
type ToneCell = TableCell & { tone?: string };

function tableCell(cell: Cell): ToneCell {
  const { value, text, title, tone } = cell;
  if (value === null) return { kind: "absent", text, reason: title ?? "", tone };
  if (typeof value === "number") return { kind: "number", value, text, csv: csvNumber(value), title, tone };
  return { kind: "text", text, sortText: value, title, tone };
}

function tableColumn<R>(column: Column<R>): TableColumn<R, ToneCell> {
  return { ...column, cell: (row) => tableCell(column.cell(row)) };
}

/** `rows` sorted by `column` (stable; absent cells last whichever the direction). */
export function sortRows<R>(rows: readonly R[], column: Column<R>, descending: boolean): R[] {
  return tableSort(rows, tableColumn(column), descending);
}

/** The rows as CSV (RFC 4180, CRLF), the header first. */
export function csvText<R>(columns: readonly Column<R>[], rows: readonly R[]): string {
  return tableCsv(columns.map(tableColumn), rows);
}

/** "compare_<table>_<run>_vs_<base>.csv", with only file-name-safe characters. */
export function csvFileName(table: string, run: string, base: string): string {
  return fileName("compare", table, run, "vs", base);
}

export interface TableOptions {
  title: string;
  testId: string;
  sort: SortState;
  /** Controls in the table's header line (e.g. a filter). */
  controls?: HTMLElement[];
}

export class CompareTable<R> {
  readonly el: HTMLElement;
  private readonly table: SortableTable<R, ToneCell>;

  constructor(options: TableOptions) {
    const { testId } = options;
    this.table = new SortableTable<R, ToneCell>({ prefix: "cmp", testId, csvTestId: `${testId}-csv`, sort: options.sort, row: (row, columns) => rowElement(row, columns, testId) });
    this.el = this.table.section(options.title, options.controls);
  }

  /** Shows `rows` with `columns`, `listing` saying what they are; the sort stays when its column does. */
  setRows(columns: Column<R>[], rows: R[], listing: string, fileName: string, empty: string): void {
    this.table.setRows(columns.map(tableColumn), rows, listing, fileName, empty);
  }

  destroy(): void {
    this.table.destroy();
  }
}

function rowElement<R>(row: R, columns: readonly TableColumn<R, ToneCell>[], testId: string): HTMLTableRowElement {
  const tr = h("tr", { "data-testid": `${testId}-row` });
  for (const column of columns) {
    const cell = column.cell(row);
    const absent = cell.kind === "absent";
    const classes = [column.numeric ? "num" : "", absent ? "cmp-absent" : "", cell.tone ?? ""].filter(Boolean).join(" ");
    tr.append(h("td", { class: classes || undefined, title: absent ? cell.reason : cell.title, "data-column": column.id }, cell.text));
  }
  return tr;
}
