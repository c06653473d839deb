/** The hover tooltip: the event under the mouse, a counter's value, or how many events narrower than
 * a pixel a track holds there. It hides as soon as the view moves under it. */

import { clear, h } from "../../dom.ts";
import { formatCount, formatDuration } from "../../shared/units.ts";
import { DURATION_DIGITS, formatInstant } from "./axis.ts";
import type { RowHit } from "./layout.ts";
import { LABEL_WIDTH } from "./render.ts";
import { counterAt, type EventHit, summaryAt } from "./scene.ts";
import type { Timeline } from "./timeline.ts";

/** Where the tooltip keeps away from the right edge, about its width. */
const TOOLTIP_ROOM_PX = 320;

export class HoverTooltip {
  readonly el = h("div", { class: "tv-tooltip", hidden: true });
  /** The view the tooltip was computed for. */
  private shownFor: { start: number; end: number; scroll: number } | null = null;

  /** `box`: the rectangle the tooltip is positioned in (the viewer's). */
  constructor(
    private readonly timeline: Timeline,
    private readonly box: () => DOMRect,
  ) {}

  hide(): void {
    this.el.hidden = true;
  }

  /** Called each frame: hides the tooltip if the window or the scroll moved since it was shown. */
  hideIfMoved(scrollY: number): void {
    const f = this.shownFor;
    const range = this.timeline.range;
    if (f && (f.start !== range.start || f.end !== range.end || f.scroll !== scrollY)) {
      this.el.hidden = true;
      this.shownFor = null;
    }
  }

  /** Shows what is at canvas x over `row` (`hit`: the event there, if any), next to the pointer at
   * client (`clientX`, `clientY`); hides when there is nothing to tell. */
  hover(x: number, row: RowHit | null | undefined, hit: EventHit | null, clientX: number, clientY: number, scrollY: number): void {
    const plan = this.timeline.plan;
    const overTrack = !hit && row?.kind === "track" && plan && x >= LABEL_WIDTH ? row.track : null;
    const t = this.timeline.projection().ns(x);
    const summary = overTrack && !overTrack.isCounter && plan ? summaryAt(plan.pieces, overTrack.track.id, row?.kind === "track" ? row.depth : 0, t) : null;
    const counter = overTrack?.isCounter && plan ? counterAt(plan.pieces, overTrack.track.id, t) : null;
    if (!hit && !summary && !counter) {
      this.el.hidden = true;
      return;
    }
    clear(this.el);
    if (hit) {
      this.el.append(
        h("b", {}, hit.name),
        h("div", {}, hit.durNs === 0 ? "instant" : formatDuration(hit.durNs, DURATION_DIGITS)),
        h("div", { class: "tv-hint" }, `${this.timeline.trackLabel(hit.track)} · at ${formatInstant(hit.startNs)}`),
      );
    } else if (counter && overTrack) {
      const range = counter.min === counter.max ? "" : ` (${formatCount(counter.min)} – ${formatCount(counter.max)} within this pixel)`;
      this.el.append(
        h("b", {}, overTrack.track.name),
        h("div", {}, `${formatCount(counter.last)}${range}`),
        h("div", { class: "tv-hint" }, `sample at ${formatInstant(counter.startNs)}`),
      );
    } else if (summary) {
      const busy = summary.widthNs > 0 ? Math.min(100, (100 * summary.busyNs) / summary.widthNs) : 100;
      this.el.append(
        h("b", {}, `${formatCount(summary.count)} event${summary.count === 1 ? "" : "s"} narrower than a pixel`),
        h("div", {}, `busy ${formatDuration(summary.busyNs, DURATION_DIGITS)} of ${formatDuration(summary.widthNs, DURATION_DIGITS)} (${busy.toFixed(0)}%)`),
        h("div", { class: "tv-hint" }, "Zoom in (W) to see them one by one"),
      );
    }
    this.el.hidden = false;
    const range = this.timeline.range;
    this.shownFor = { start: range.start, end: range.end, scroll: scrollY };
    const box = this.box();
    const left = Math.min(clientX - box.left + 14, box.width - TOOLTIP_ROOM_PX);
    this.el.style.left = `${Math.max(0, left)}px`;
    this.el.style.top = `${clientY - box.top + 16}px`;
  }
}
