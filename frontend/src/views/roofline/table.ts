/** Table cells of the roofline tables (cells.ts says what they hold; headers: shared/table.ts). */

import { h } from "../../dom.ts";
import { type Cell, ESTIMATED } from "./cells.ts";

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
