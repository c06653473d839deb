/** Measured time ranges: the marks of the Timing tool and of M, their colours on the timeline, and
 * the readout of the latest in words (the axis label is drawn on a canvas, which neither a screen
 * reader nor a copy-paste can read). */

import { clear, h } from "../../dom.ts";
import { formatDuration } from "../../shared/units.ts";
import { DURATION_DIGITS, formatTimestamp } from "./axis.ts";

/** A measured range; `stepNs` is how exact its ends are (a pixel for a drag, 1 ns for an event). */
export interface Mark {
  start: number;
  end: number;
  stepNs: number;
}

/** A range highlighted on the timeline and the axis: on `tracks` only (a selected range), or on
 * every track (a measurement). */
export interface ColoredRange {
  start: number;
  end: number;
  color: string;
  tracks?: number[];
}

export const MARK_COLOR = "#e8710a";
export const RANGE_COLOR = "#1a73e8";

/** How many marks stay on the timeline; an older one goes when a new one comes. */
export const MAX_MARKS = 8;

export class MeasureReadout {
  readonly el = h("div", {
    class: "tv-measure",
    "data-testid": "measure",
    title: "Measured with the Timing tool (4) or M; Esc clears",
    "aria-live": "polite",
    hidden: true,
  });
  private shown = "";

  /** Shows `m` (the Timing drag while it lasts, else the latest mark), or hides when there is none. */
  show(m: Mark | null): void {
    // Ends with as many decimals as they are exact: a dragged end is only good to a pixel.
    const at = (ns: number) => (m ? formatTimestamp(ns, m.stepNs, ns) : "");
    const [dur, from, to] = m ? [formatDuration(m.end - m.start, DURATION_DIGITS), at(m.start), at(m.end)] : [];
    const shown = m ? `${dur} ${from} ${to}` : "";
    if (shown === this.shown) return;
    this.shown = shown;
    clear(this.el);
    this.el.hidden = !m;
    if (!m) return;
    this.el.append(
      h("span", { class: "tv-measure-arrow" }, "⟷ "),
      h("b", { "data-testid": "measure-duration" }, dur),
      " measured",
      h("br"),
      h("span", { class: "tv-measure-range" }, h("span", { "data-testid": "measure-from" }, from), " → ", h("span", { "data-testid": "measure-to" }, to)),
    );
  }
}
