/** What the timeline shows, shared by the viewer's parts: the trace's metadata, its rows (which
 * sections are collapsed, which tracks are shown in what order: tracks.ts), the visible time window, the size of the drawing area and the tiles of
 * the last frame. Free of the DOM, so the geometry behind clicks and scrolling is unit-tested. */

import type { TraceMeta } from "../../api/types.ts";
import { Layout, ROW_HEIGHT, SECTION_HEIGHT } from "./layout.ts";
import { LABEL_WIDTH } from "./render.ts";
import { type EventHit, hitTest, type Plan } from "./scene.ts";
import { emptyChoice, reveal, type TrackChoice } from "./tracks.ts";
import { clampRange, type Limits, limitsFor, Projection, type Range } from "./viewport.ts";

/** How much wider than a target a jump makes the window when it must zoom out to show it whole. */
const ZOOM_OUT_MARGIN = 1.25;

/** The window that shows [start, end] from `range`: `range` itself when the target is in view, else
 * the same width centred on it (a pan), widened only when the target is wider than the window. */
export function bringIntoView(range: Range, start: number, end: number): Range {
  const width = range.end - range.start;
  if (start >= range.start && end <= range.end) return range;
  const need = end - start;
  const w = need > width ? need * ZOOM_OUT_MARGIN : width;
  const mid = (start + end) / 2;
  return { start: mid - w / 2, end: mid + w / 2 };
}

export interface TimelineHooks {
  /** Something shown changed: draw a frame. */
  redraw(): void;
  /** The rows changed (a section collapsed or expanded): the scroll height follows. */
  relayout(layout: Layout): void;
}

export class Timeline {
  meta: TraceMeta | null = null;
  layout: Layout | null = null;
  limits: Limits = limitsFor(0, 1);
  /** The visible window in ns. Continuous motion (held keys, a pan drag) assigns it already clamped
   * and draws on the next frame; one-off moves go through `setRange`. */
  range: Range = { start: 0, end: 1 };
  readonly collapsed = new Set<number>();
  /** The track panel's choice: filter, hidden, pinned, depth limits. */
  choice: TrackChoice = emptyChoice();
  /** The tile pieces drawn by the last frame: what clicks and hovering hit. */
  plan: Plan | null = null;
  /** CSS pixels of the visible drawing area. */
  width = 0;
  height = 0;

  constructor(private readonly hooks: TimelineHooks) {}

  /** Shows a trace whole, with the sections `collapsed` folded. */
  open(meta: TraceMeta, collapsed: number[]): void {
    this.meta = meta;
    this.limits = limitsFor(meta.span_ns[0], meta.span_ns[1]);
    for (const id of collapsed) this.collapsed.add(id);
    this.relayout();
    this.range = this.wholeRange();
  }

  relayout(): void {
    if (!this.meta) return;
    this.layout = new Layout(this.meta, this.collapsed, this.choice);
    this.hooks.relayout(this.layout);
    this.hooks.redraw();
  }

  toggleSection(id: number): void {
    if (this.collapsed.has(id)) this.collapsed.delete(id);
    else this.collapsed.add(id);
    this.relayout();
  }

  setChoice(choice: TrackChoice): void {
    this.choice = choice;
    this.relayout();
  }

  /** Makes `track` drawn (the choice hid it) and unfolds the section holding it. */
  expandSectionOf(track: number): void {
    const meta = this.meta;
    const mt = meta?.tracks.find((t) => t.id === track);
    if (!meta || !mt) return;
    const shown = reveal(this.choice, mt, meta.sections.find((s) => s.id === mt.section));
    const t = this.layout?.tracks.get(track);
    if (shown === this.choice && !t?.section.collapsed) return;
    this.choice = shown;
    if (t?.section.collapsed) this.collapsed.delete(t.section.section.id);
    this.relayout();
    const now = this.layout?.tracks.get(track);
    if (now?.section.collapsed) this.toggleSection(now.section.section.id);
  }

  /** Pans to show [start, end] at the current zoom, zooming out only as far as it needs. */
  showSpan(start: number, end: number): void {
    this.setRange(bringIntoView(this.range, start, end));
  }

  /** The scroll position that brings row `depth` of `track` into view from `scrollTop`, a third of
   * the way down; null when it is in view already (or the track is unknown). */
  scrollTopToShow(track: number, depth: number, scrollTop: number): number | null {
    const box = this.layout?.tracks.get(track);
    if (!box) return null;
    const y = box.isCounter ? box.top : box.top + Math.min(depth, box.rows - 1) * ROW_HEIGHT;
    if (y < scrollTop + SECTION_HEIGHT || y + ROW_HEIGHT > scrollTop + this.height) return Math.max(0, y - this.height / 3);
    return null;
  }

  wholeRange(): Range {
    return { start: this.limits.spanStart, end: this.limits.spanEnd };
  }

  setRange(r: Range): void {
    this.range = clampRange(r, this.limits);
    this.hooks.redraw();
  }

  projection(): Projection {
    return new Projection(this.range, LABEL_WIDTH, Math.max(1, this.width - LABEL_WIDTH));
  }

  /** The instant zooms keep in place: under the mouse when it is over the timeline, else the middle. */
  anchorNs(mouseX: number | null): number {
    if (mouseX !== null && mouseX >= LABEL_WIDTH) return this.projection().ns(mouseX);
    return (this.range.start + this.range.end) / 2;
  }

  /** The event drawn at canvas x and content y (canvas y plus the scroll offset). */
  hitAt(x: number, contentY: number): EventHit | null {
    const layout = this.layout;
    if (!layout || !this.plan || x < LABEL_WIDTH) return null;
    const row = layout.rowAt(contentY);
    if (!row || row.kind !== "track" || row.track.isCounter) return null;
    const proj = this.projection();
    return hitTest(this.plan.pieces, row.track.track.id, row.depth, proj.ns(x), 3 * proj.nsPerPx, (t) => layout.hostOfTrack(t));
  }

  allTracks(): number[] {
    return this.meta ? this.meta.tracks.map((t) => t.id) : [];
  }

  /** "section / track", with the host first when several hosts share the timeline. */
  trackLabel(track: number): string {
    const t = this.layout?.tracks.get(track);
    if (!t) return `track ${track}`;
    const host = this.meta && this.meta.hosts.length > 1 && t.section.hostName ? `${t.section.hostName} · ` : "";
    return `${host}${t.home.name} / ${t.track.name}`;
  }
}
