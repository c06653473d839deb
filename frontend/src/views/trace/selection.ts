/** What is selected and what the details panel shows about it: clicked events (their details, or a
 * per-name summary of several), a dragged range on tracks (its summary), the flows of the selected
 * event drawn in bold, and the measured marks. Every request goes through one abort controller, so a
 * newer selection always wins over a slower answer to an older one. */

import { newSearcherId } from "../../api/client.ts";
import type { EventDetails, SearchMatch } from "../../api/types.ts";
import { isAbort, messageOf } from "../../dom.ts";
import { formatDuration } from "../../shared/units.ts";
import type { ViewContext } from "../view.ts";
import { DURATION_DIGITS, formatTimestamp } from "./axis.ts";
import { DetailsPanel } from "./details.ts";
import type { HloAnswer } from "./hlo_graph.ts";
import { type ColoredRange, MARK_COLOR, type Mark, MAX_MARKS, RANGE_COLOR } from "./measure.ts";
import type { FlowArrow, SelectedBox } from "./render.ts";
import { exactNamePattern } from "./search.ts";
import type { Picked } from "./summary_table.ts";
import type { EventHit, Piece } from "./scene.ts";
import type { Timeline } from "./timeline.ts";
import { fitRange, type Range } from "./viewport.ts";

export type Selection =
  | { kind: "none" }
  | { kind: "events"; events: SelectedBox[] }
  | { kind: "range"; start: number; end: number; tracks: number[] };

/** A flow of the selected event: `otherId` is its other end, whose depth row is found lazily. */
export interface PinnedFlow extends FlowArrow {
  otherId: number;
  otherEnd: "src" | "dst";
  resolved: boolean;
}

/** Deep links select at most this many events by id (each is fetched). */
const MAX_LINKED_EVENTS = 200;
/** Occurrences of a name picked in a summary that are fetched (the server's page limit). */
export const MAX_PICKED = 10_000;

/** The matches of a name search that lie in the selection: for a range, events on its tracks that
 * overlap it (instants within it); for selected events, those events. */
export function matchesInSelection(matches: SearchMatch[], s: Selection): SelectedBox[] {
  const boxes: SelectedBox[] = [];
  const ids = s.kind === "events" ? new Set(s.events.map((e) => e.id)) : null;
  const tracks = s.kind === "range" ? new Set(s.tracks) : null;
  for (const m of matches) {
    if (ids && !ids.has(m.id)) continue;
    if (s.kind === "range") {
      if (!tracks?.has(m.track)) continue;
      const inside = m.dur_ns > 0 ? m.start_ns < s.end && m.start_ns + m.dur_ns > s.start : m.start_ns >= s.start && m.start_ns <= s.end;
      if (!inside) continue;
    }
    boxes.push({ id: m.id, track: m.track, depth: m.depth ?? 0, startNs: m.start_ns, durNs: m.dur_ns });
  }
  return boxes;
}

/** The arrows of an event's flows out and in; the other ends' rows are not known yet (row 0). */
export function pinnedFlowsOf(d: EventDetails): PinnedFlow[] {
  const arrows: PinnedFlow[] = [];
  for (const f of d.flows_out ?? []) {
    arrows.push({ srcTrack: d.track, srcDepth: d.depth, srcNs: d.start_ns, dstTrack: f.track, dstDepth: 0, dstNs: f.start_ns, otherId: f.id, otherEnd: "dst", resolved: false });
  }
  for (const f of d.flows_in ?? []) {
    arrows.push({ srcTrack: f.track, srcDepth: 0, srcNs: f.start_ns, dstTrack: d.track, dstDepth: d.depth, dstNs: d.start_ns, otherId: f.id, otherEnd: "src", resolved: false });
  }
  return arrows;
}

/** Finds the depth row of each unresolved flow's other end in the tiles drawn, as soon as one of
 * them shows that event (tiles hold host-local ids, the low 32 bits of the global id). */
export function resolvePinnedFlows(flows: PinnedFlow[], pieces: Piece[]): void {
  const pending = flows.filter((f) => !f.resolved);
  if (!pending.length) return;
  for (const p of pieces) {
    const ev = p.tile.events;
    for (const f of pending) {
      const track = f.otherEnd === "dst" ? f.dstTrack : f.srcTrack;
      const local = f.otherId % 2 ** 32;
      for (let i = 0; i < ev.n && !f.resolved; i++) {
        if (ev.id[i] !== local || ev.track[i] !== track) continue;
        if (f.otherEnd === "dst") f.dstDepth = ev.depth[i];
        else f.srcDepth = ev.depth[i];
        f.resolved = true;
      }
    }
  }
}

function boxOf(d: EventDetails): SelectedBox {
  return { id: d.id, track: d.track, depth: d.depth, startNs: d.start_ns, durNs: d.dur_ns };
}

function boxOfHit(hit: EventHit): SelectedBox {
  return { id: hit.id, track: hit.track, depth: hit.depth, startNs: hit.startNs, durNs: hit.durNs };
}

export interface SelectionView {
  redraw(): void;
  /** Scroll (expanding its section if needed) so that row `depth` of `track` is on screen. */
  revealTrack(track: number, depth: number): void;
}

export class SelectionManager {
  selection: Selection = { kind: "none" };
  marks: Mark[] = [];
  pinnedFlows: PinnedFlow[] = [];
  readonly details: DetailsPanel;
  private detailsAbort: AbortController | null = null;
  /** The name picked in the summary: its occurrences in the selection, drawn selected. */
  private picked: { name: string; boxes: SelectedBox[]; index: number; more: boolean } | null = null;
  private pickAbort: AbortController | null = null;
  /** Picking searches under their own client id, so they do not cancel the search box's. */
  private readonly pickSearcher = newSearcherId();

  constructor(
    private readonly ctx: ViewContext,
    private readonly timeline: Timeline,
    private readonly view: SelectionView,
  ) {
    this.details = new DetailsPanel({
      trackLabel: (t) => timeline.trackLabel(t),
      jumpTo: (id) => void this.jumpTo(id, { select: true, zoom: true }),
      hlo: {
        load: (params, signal) => ctx.client.getJson<HloAnswer>("hlo", ctx.subject, params, signal),
        findEvents: (query) => ctx.navigate("trace", { find: query }),
      },
      mayHoldHlo: (host) => timeline.meta?.hosts[host]?.format === "xplane",
      panelGrew: () => this.revealSelectedSoon(),
      pickName: (name) => void this.pickName(name),
      stepPicked: (dir) => this.stepPicked(dir),
    });
  }

  selectedBoxes(): SelectedBox[] {
    if (this.picked) return this.picked.boxes;
    return this.selection.kind === "events" ? this.selection.events : [];
  }

  /** Selects the occurrences of `name` in the selection (a row of its summary) and goes to the first. */
  async pickName(name: string): Promise<void> {
    const selection = this.selection;
    if (selection.kind === "none") return;
    this.pickAbort?.abort();
    const abort = (this.pickAbort = new AbortController());
    try {
      const resp = await this.ctx.client.search(this.ctx.subject, exactNamePattern(name), MAX_PICKED, 0, abort.signal, this.pickSearcher, { regex: true });
      if (abort.signal.aborted || this.selection !== selection) return;
      this.picked = { name, boxes: matchesInSelection(resp.matches, selection), index: -1, more: resp.truncated };
      this.stepPicked(1);
    } catch (e) {
      if (!isAbort(e)) this.details.error(messageOf(e));
    }
  }

  /** Goes to the next (1) or previous (-1) occurrence of the picked name, keeping the zoom. */
  stepPicked(dir: 1 | -1): void {
    const p = this.picked;
    if (!p) return;
    if (p.boxes.length) {
      p.index = (p.index + dir + p.boxes.length) % p.boxes.length;
      const box = p.boxes[p.index];
      this.timeline.showSpan(box.startNs, box.startNs + box.durNs);
      this.view.revealTrack(box.track, box.depth);
    }
    this.details.showPicked(this.pickedState());
    this.view.redraw();
  }

  private pickedState(): Picked | null {
    const p = this.picked;
    return p ? { name: p.name, index: p.index, total: p.boxes.length, more: p.more } : null;
  }

  private unpick(): void {
    this.pickAbort?.abort();
    this.picked = null;
  }

  /** The time span of the selection: the range, or from the first event's start to the last end. */
  span(): Range | null {
    const s = this.selection;
    if (s.kind === "range") return { start: s.start, end: s.end };
    if (s.kind === "events" && s.events.length) {
      let a = Infinity;
      let b = -Infinity;
      for (const e of s.events) {
        a = Math.min(a, e.startNs);
        b = Math.max(b, e.startNs + e.durNs);
      }
      return { start: a, end: b };
    }
    return null;
  }

  /** Called each frame with the tiles drawn: the selected event's flows find their other ends' rows. */
  resolveFlows(pieces: Piece[]): void {
    resolvePinnedFlows(this.pinnedFlows, pieces);
  }

  lastMark(): Mark | null {
    return this.marks[this.marks.length - 1] ?? null;
  }

  addMark(mark: Mark): void {
    this.marks = [...this.marks.slice(-(MAX_MARKS - 1)), mark];
  }

  /** M: marks the selection's span, exact to the nanosecond. */
  markSelection(): void {
    const span = this.span();
    if (!span) return;
    this.addMark({ ...span, stepNs: 1 });
    this.view.redraw();
  }

  /** The marks and the selected range, as drawn on the timeline. */
  coloredRanges(): ColoredRange[] {
    const out: ColoredRange[] = this.marks.map((m) => ({ start: m.start, end: m.end, color: MARK_COLOR }));
    const s = this.selection;
    if (s.kind === "range") out.push({ start: s.start, end: s.end, color: RANGE_COLOR, tracks: s.tracks });
    return out;
  }

  /** F: fits the window to the selection, else to the latest mark. */
  zoomToSelection(): void {
    const span = this.span() ?? this.lastMark();
    if (span) this.timeline.setRange(fitRange(span.start, span.end, this.timeline.limits));
  }

  clear(): void {
    this.unpick();
    this.selection = { kind: "none" };
    this.pinnedFlows = [];
    this.detailsAbort?.abort();
    this.details.hint();
    this.view.redraw();
  }

  /** Esc: no marks, no selection. */
  clearAll(): void {
    this.marks = [];
    this.clear();
  }

  /** A click on `hit` (or on nothing): selects it alone, or with `additive` (Ctrl/⌘) adds it to the
   * selection or takes it out. */
  click(hit: EventHit | null, additive: boolean): void {
    if (!additive) {
      if (!hit) {
        this.clear();
        return;
      }
      this.unpick();
      this.selection = { kind: "events", events: [boxOfHit(hit)] };
      this.view.redraw();
      void this.jumpTo(hit.id, { select: true, zoom: false });
      return;
    }
    if (!hit) return;
    this.unpick();
    const current = this.selectedBoxes();
    const without = current.filter((e) => e.id !== hit.id);
    const events = without.length < current.length ? without : [...current, boxOfHit(hit)];
    this.selection = events.length ? { kind: "events", events } : { kind: "none" };
    this.pinnedFlows = [];
    this.view.redraw();
    if (events.length === 1) void this.jumpTo(events[0].id, { select: true, zoom: false });
    else if (events.length) void this.showSelectionSummary();
    else this.details.hint();
  }

  /** Fetches an event's details, optionally zooms to it, selects it and fills the details panel. */
  async jumpTo(id: number, opts: { select: boolean; zoom: boolean }): Promise<void> {
    const abort = this.newDetailsAbort();
    this.details.loading(`Loading event ${id}…`);
    try {
      const d = await this.ctx.client.event(this.ctx.subject, id, abort.signal);
      if (abort.signal.aborted) return;
      // Keeps the user's zoom: pans to the event, zooming out only when it is wider than the window.
      if (opts.zoom) this.timeline.showSpan(d.start_ns, d.start_ns + d.dur_ns);
      if (opts.select) {
        this.unpick();
        this.selection = { kind: "events", events: [boxOf(d)] };
        this.view.revealTrack(d.track, d.depth);
        this.details.showEvent(d);
        this.pinnedFlows = pinnedFlowsOf(d);
      }
      this.view.redraw();
    } catch (e) {
      if (isAbort(e)) return;
      this.details.error(messageOf(e));
    }
  }

  /** Selects events by global id (deep link): fetches each so their boxes and details are known. */
  async selectByIds(ids: number[], zoom: boolean): Promise<void> {
    if (ids.length === 1) {
      await this.jumpTo(ids[0], { select: true, zoom });
      return;
    }
    const abort = this.newDetailsAbort();
    try {
      const all = await Promise.all(ids.slice(0, MAX_LINKED_EVENTS).map((id) => this.ctx.client.event(this.ctx.subject, id, abort.signal)));
      this.unpick();
      this.selection = { kind: "events", events: all.map(boxOf) };
      if (zoom) this.zoomToSelection();
      await this.showSelectionSummary();
    } catch (e) {
      if (!isAbort(e)) this.details.error(messageOf(e));
    }
  }

  /** Selects a time range on tracks and shows their summary; `stepNs` is how exact the range's ends
   * are (a pixel when dragged), so its start is not shown with digits it does not have. */
  async selectRange(start: number, end: number, tracks: number[], stepNs = 1): Promise<void> {
    this.unpick();
    this.selection = { kind: "range", start, end, tracks };
    this.pinnedFlows = [];
    this.view.redraw();
    const abort = this.newDetailsAbort();
    this.details.loading("Summarizing the range…");
    try {
      const resp = await this.ctx.client.summaryRange(this.ctx.subject, start, end, tracks, abort.signal);
      if (abort.signal.aborted) return;
      this.details.showSummary(
        "Range selection",
        `${formatDuration(end - start, DURATION_DIGITS)} from ${formatTimestamp(start, stepNs, start)} on ${tracks.length} track${tracks.length === 1 ? "" : "s"}`,
        resp,
        end - start,
      );
    } catch (e) {
      if (!isAbort(e)) this.details.error(messageOf(e));
    }
  }

  stop(): void {
    this.unpick();
    this.detailsAbort?.abort();
    this.details.stop();
  }

  /** Keeps the one selected event on screen once the timeline has taken its new height (two frames:
   * the resize is observed after the next layout). */
  private revealSelectedSoon(): void {
    requestAnimationFrame(() =>
      requestAnimationFrame(() => {
        const [box, ...more] = this.selectedBoxes();
        if (box && !more.length) this.view.revealTrack(box.track, box.depth);
      }),
    );
  }

  private async showSelectionSummary(): Promise<void> {
    const s = this.selection;
    if (s.kind !== "events") return;
    const abort = this.newDetailsAbort();
    this.details.loading(`Summarizing ${s.events.length} events…`);
    try {
      const resp = await this.ctx.client.summaryIds(this.ctx.subject, s.events.map((e) => e.id), abort.signal);
      if (abort.signal.aborted) return;
      const span = this.span();
      this.details.showSummary(`${s.events.length} selected events`, span ? `spanning ${formatDuration(span.end - span.start, DURATION_DIGITS)}` : "", resp, span ? span.end - span.start : 0);
    } catch (e) {
      if (!isAbort(e)) this.details.error(messageOf(e));
    }
  }

  private newDetailsAbort(): AbortController {
    this.detailsAbort?.abort();
    this.detailsAbort = new AbortController();
    this.ctx.signal.addEventListener("abort", () => this.detailsAbort?.abort(), { once: true });
    return this.detailsAbort;
  }
}
