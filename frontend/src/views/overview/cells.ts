/** What one figure of the Overview shows: a measured number (with its text and the plain number the
 * CSV writes), a text, or a figure the profile cannot give, which reads "not observed" with the reason
 * as tooltip and is never drawn or written as 0. */

import { h } from "../../dom.ts";
import { type Cell, csvNumber } from "../../shared/table.ts";
import { formatCount, formatDuration, formatPercent, NOT_OBSERVED } from "../../shared/units.ts";

export { type Cell, csvNumber };

function finite(value: number | null | undefined): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/** "not observed", with why. */
export function absent(reason: string): Cell {
  return { kind: "absent", text: NOT_OBSERVED, reason };
}

export function text(value: string, title?: string): Cell {
  return { kind: "text", text: value, title };
}

/** A measured figure: `format` for the screen, `csv` (default: the value itself) for the CSV; a value
 * that is not there reads "not observed" with `reason`. */
export function measured(value: number | null | undefined, format: (v: number) => string, reason: string, csv: (v: number) => number = (v) => v): Cell {
  if (!finite(value)) return absent(reason);
  return { kind: "number", value, text: format(value), csv: csvNumber(csv(value)) };
}

/** A duration in ns (the CSV writes ns). */
export function duration(ns: number | null | undefined, reason: string): Cell {
  return measured(ns, (v) => formatDuration(v), reason);
}

/** A fraction 0..1 shown as a percentage (the CSV writes percent). */
export function percent(fraction: number | null | undefined, reason: string): Cell {
  return measured(fraction, (v) => formatPercent(v), reason, (v) => v * 100);
}

export function count(n: number | null | undefined, reason: string): Cell {
  return measured(n, (v) => formatCount(v), reason);
}

/** A rate to 3 significant digits with thousands separators: "15,200", "18.2" (the unit is the caller's). */
export function formatRate(perSecond: number): string {
  return perSecond.toLocaleString("en-US", { maximumSignificantDigits: 3 });
}

/** A figure as an inline element: absent figures greyed, with the reason as tooltip. */
export function figureElement(cell: Cell, testId?: string): HTMLElement {
  if (cell.kind === "absent") {
    return h("span", { class: "ov-absent", title: cell.reason, "data-absent": "1", "data-testid": testId }, cell.text);
  }
  return h("span", { title: cell.title, "data-testid": testId }, cell.text);
}

/** A table cell: numbers right-aligned; absent figures greyed, with the reason as tooltip. */
export function cellElement(cell: Cell, numeric: boolean): HTMLTableCellElement {
  const cls = numeric ? "num" : "";
  if (cell.kind === "absent") {
    return h("td", { class: `${cls} ov-absent`.trim(), title: cell.reason, "data-absent": "1" }, cell.text);
  }
  return h("td", { class: cls || undefined, title: cell.title }, cell.text);
}

/** A labelled figure (a "card"): the label, the figure and an optional detail line below. */
export function card(label: string, cell: Cell, detail: string, testId: string): HTMLElement {
  return h(
    "div",
    { class: "ov-card", "data-testid": `ov-card-${testId}` },
    h("div", { class: "ov-card-label" }, label),
    h("div", { class: "ov-card-value" }, figureElement(cell)),
    detail ? h("div", { class: "ov-card-detail" }, detail) : null,
  );
}
