/** The op table: the answer's top ops, filtered by category, bound resource and name, sortable by any
 * column, with a CSV download of exactly the rows and columns it shows (shared/table.ts). */

import { clear, h } from "../../dom.ts";
import { csvFileName as fileName, SortableTable } from "../../shared/table.ts";
import { formatCount } from "../../shared/units.ts";
import type { RooflineAnswer, RooflineOpRow } from "./api.ts";
import { type Cell, type Column, levelLabel, opColumns, type RooflineContext } from "./cells.ts";
import { cellElement } from "./table.ts";

export { csvText, sortRows } from "../../shared/table.ts";

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

/** "roofline_ops_<run>_<session>[_step3].csv", with only file-name-safe characters. */
export function csvFileName(run: string, session: string, step: number | null): string {
  return fileName("roofline_ops", run, session, ...(step === null ? [] : [`step${step}`]));
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
  private readonly table = new SortableTable<RooflineOpRow, Cell>({
    prefix: "rf",
    testId: "rf-op",
    csvTestId: "rf-csv",
    sort: { column: "rank", descending: false },
    row: (op, columns) => this.rowElement(op, columns),
    rendered: () => {
      this.highlight(this.selected);
      this.events.filtered(this.filtered);
    },
  });
  private filter: OpFilter = { category: ANY, bound: ANY, name: "" };
  private answer: RooflineAnswer | null = null;
  private ctx: RooflineContext | null = null;
  private columns: Column<RooflineOpRow>[] = [];
  /** The ops the filter lets through, in the answer's order. */
  private filtered: RooflineOpRow[] = [];
  private selected: number | null = null;
  private fileName = "";

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
        this.table.listing,
        h("span", { class: "rf-spacer" }),
        this.table.csvLink,
      ),
      this.table.scroller,
    );
  }

  /** Shows the ops of `answer`; the filter and sort stay (a category no longer listed matches none). */
  setAnswer(answer: RooflineAnswer, ctx: RooflineContext, fileName: string): void {
    this.answer = answer;
    this.ctx = ctx;
    this.fileName = fileName;
    this.columns = opColumns(ctx);
    this.fillFilters();
    this.render();
  }

  /** The ops shown, in the order shown. */
  get rows(): readonly RooflineOpRow[] {
    return this.table.shownRows;
  }

  /** Highlights the op of rank `rank` (null: none); `scroll` brings its row into view. */
  highlight(rank: number | null, scroll = false): void {
    this.selected = rank;
    const scroller = this.table.scroller;
    for (const tr of Array.from(scroller.querySelectorAll<HTMLElement>("tr.rf-selected"))) tr.classList.remove("rf-selected");
    if (rank === null) return;
    const row = scroller.querySelector<HTMLElement>(`tr[data-rank="${rank}"]`);
    if (!row) return;
    row.classList.add("rf-selected");
    if (scroll) row.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  destroy(): void {
    this.table.destroy();
  }

  private setFilter(change: Partial<OpFilter>): void {
    this.filter = { ...this.filter, ...change };
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

  /** Draws the ops the filter lets through, in the table's sort; `rendered` then highlights the
   * selected op and tells the chart. */
  private render(): void {
    const answer = this.answer;
    if (!answer) return;
    this.filtered = filterOps(answer.ops, this.filter);
    this.table.setRows(this.columns, this.filtered, listingText(this.filtered.length, answer.ops.length, answer.ops_total), this.fileName, null);
  }

  private rowElement(op: RooflineOpRow, columns: readonly Column<RooflineOpRow>[]): HTMLTableRowElement {
    const tr = h("tr", { class: "rf-row", "data-rank": op.rank, "data-testid": "rf-op-row" });
    for (const column of columns) {
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
}
