/** A sortable table of the Overview (host ops, device kernels, HLO ops): "showing N of M", a header
 * per column that sorts by it, a link from each row to its events in the Trace tab, and a CSV download
 * of exactly the rows and columns shown, in the order shown (shared/table.ts). The CSV header names
 * each column's unit, numbers are plain (no prefixes, no separators), absent figures keep their words
 * ("not observed"). */

import { h } from "../../dom.ts";
import { type Column, csvFileName as fileName, type SortState, SortableTable } from "../../shared/table.ts";
import { formatCount } from "../../shared/units.ts";
import { type Cell, cellElement } from "./cells.ts";

export { csvText, nextSort, sortRows } from "../../shared/table.ts";

/** "overview_<table>_<run>_<session>.csv", with only file-name-safe characters. */
export function csvFileName(table: string, run: string, session: string): string {
  return fileName("overview", table, run, session);
}

/** "showing 50 of 201 host ops (the 50 with the most total time)", or "12 host ops" when all are listed. */
export function listingText(shown: number, total: number, what: string): string {
  if (shown >= total) return `${formatCount(total)} ${what}`;
  return `showing ${formatCount(shown)} of ${formatCount(total)} ${what} (the ${formatCount(shown)} with the most total time)`;
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
  private readonly table: SortableTable<R, Cell>;

  constructor(private readonly options: DataTableOptions<R>) {
    const { testId } = options;
    this.table = new SortableTable<R, Cell>({ prefix: "ov", testId, csvTestId: `${testId}-csv`, sort: options.sort, row: (row, columns) => this.rowElement(row, columns) });
    this.el = this.table.section(options.title, options.controls);
  }

  /** Shows `rows` (the route's `total` groups in all) with `columns`; the sort stays when its column does. */
  setRows(columns: Column<R, Cell>[], rows: R[], total: number, fileName: string): void {
    const what = this.options.what;
    this.table.setRows(columns, rows, listingText(rows.length, total, what), fileName, `No ${what} in the scope.`);
  }

  /** The rows in the order shown (what the CSV holds). */
  get shownRows(): readonly R[] {
    return this.table.shownRows;
  }

  destroy(): void {
    this.table.destroy();
  }

  private rowElement(row: R, columns: readonly Column<R, Cell>[]): HTMLTableRowElement {
    const tr = h("tr", { "data-testid": `${this.options.testId}-row` });
    columns.forEach((column, i) => {
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
}
