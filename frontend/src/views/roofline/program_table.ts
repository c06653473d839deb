/** The program table: the whole program ("Total"), its average complete step and each step, with the
 * same figures as the ops; the row of the step whose ops are listed is marked. */

import { h } from "../../dom.ts";
import { headerCell } from "../../shared/table.ts";
import type { RooflineProgramRow } from "./api.ts";
import { programColumns, type RooflineContext } from "./cells.ts";
import { cellElement } from "./table.ts";

export function programTable(rows: readonly RooflineProgramRow[], ctx: RooflineContext, step: number | null, select: (row: RooflineProgramRow) => void): HTMLTableElement {
  const columns = programColumns(ctx);
  const body = h("tbody");
  for (const row of rows) {
    const tr = h("tr", { class: "rf-row", "data-step": row.step, "data-testid": "rf-program-row" }, ...columns.map((c) => cellElement(c.cell(row), c.numeric)));
    if (step !== null && row.step === String(step)) tr.classList.add("rf-current");
    tr.addEventListener("click", () => select(row));
    body.append(tr);
  }
  return h("table", { class: "rf-table", "data-testid": "rf-program-table" }, h("thead", {}, h("tr", {}, ...columns.map((c) => headerCell(c)))), body);
}
