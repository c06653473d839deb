/** Table cells and headers of the roofline tables (cells.ts says what they hold). */

import { h } from "../../dom.ts";
import { type Cell, type Column, ESTIMATED } from "./cells.ts";

/** One cell: numbers right-aligned; estimated figures marked "≈" with the reason as tooltip; absent
 * figures greyed with the reason why as tooltip. */
export function cellElement(cell: Cell, numeric: boolean): HTMLTableCellElement {
  const cls = numeric ? "num" : "";
  if (cell.kind === "absent") {
    return h("td", { class: `${cls} rf-absent`, title: cell.reason, "data-absent": cell.text }, cell.text);
  }
  if (cell.kind === "text") return h("td", { class: cls || undefined, title: cell.title }, cell.text);
  const classes = [cls, cell.estimated ? "rf-est" : "", cell.anomaly ? "rf-anomaly" : ""].filter(Boolean).join(" ");
  const title = [cell.estimated ? ESTIMATED : "", cell.anomaly ?? ""].filter(Boolean).join("; ") || undefined;
  return h(
    "td",
    { class: classes, title, "data-estimated": cell.estimated ? "1" : undefined },
    cell.estimated ? h("span", { class: "rf-est-mark", "aria-label": ESTIMATED }, "≈ ") : null,
    cell.text,
  );
}

export interface SortState {
  column: string;
  descending: boolean;
}

/** A header cell; with `onSort` it is a button that sorts by the column (again: the other way). */
export function headerCell<R>(column: Column<R>, sort?: SortState, onSort?: (column: string) => void): HTMLTableCellElement {
  const cls = column.numeric ? "num" : undefined;
  if (!onSort) return h("th", { class: cls, title: column.help }, column.title);
  const active = sort?.column === column.id;
  const arrow = active ? (sort?.descending ? " ▼" : " ▲") : "";
  const button = h("button", { type: "button", class: "rf-sort", "data-sort": column.id }, column.title + arrow);
  button.addEventListener("click", () => onSort(column.id));
  return h(
    "th",
    { class: cls, title: column.help, "aria-sort": active ? (sort?.descending ? "descending" : "ascending") : undefined },
    button,
  );
}
