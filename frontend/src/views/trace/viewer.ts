/** The trace viewer: a streaming timeline drawn from server tiles, driven like chrome://tracing
 * (WASD, tools 1–4, click to select, drag to summarize or measure, search, flows, deep links).
 *
 * This class is the wiring: it builds the DOM, owns the lifecycle and draws each frame from the
 * state of its parts: `Timeline` (trace, rows, window), `KeyboardInput` and `MouseInput`, the
 * `SelectionManager` (selection, marks, flows, details), the `SearchPanel`, the `Toolbar`, and the
 * `TileScheduler` and `FrameLoop` that decide when tiles are asked for and frames drawn. */

import { ApiError, isStaleTile, newSearcherId } from "../../api/client.ts";
import type { TraceCriticalPath } from "../../api/answers.gen.ts";
import type { IngestProgress, TraceMeta } from "../../api/types.ts";
import { h, isAbort, messageOf } from "../../dom.ts";
import type { ViewContext } from "../view.ts";
import { axisHoverText, computeTicks } from "./axis.ts";
import { canvasColors } from "./colors.ts";
import { CriticalPathOverlay } from "./critical_path.ts";
import { linkParams, readLink } from "./deep_link.ts";
import { detailsSplitter } from "./details.ts";
import { ExportDialog } from "./export_dialog.ts";
import { FrameLoop } from "./frame_loop.ts";
import { helpOverlay } from "./help.ts";
import { isOnScreen, KeyboardInput } from "./keyboard.ts";
import type { Layout } from "./layout.ts";
import { LinkedWalk, pickLinked, readFind, readLinkedIds } from "./linked_walk.ts";
import { errorOverlay, loadingOverlay } from "./loading.ts";
import { MeasureReadout } from "./measure.ts";
import { MouseInput } from "./mouse.ts";
import { Notices } from "./notices.ts";
import { PendingWatch } from "./pending.ts";
import { drawAxis, drawFrame, LABEL_WIDTH } from "./render.ts";
import { planPieces } from "./scene.ts";
import { SEARCH_LIMIT, SearchPanel } from "./search_panel.ts";
import { SelectionManager } from "./selection.ts";
import { TileScheduler } from "./tile_scheduler.ts";
import { TileCache, type TileId } from "./tilecache.ts";
import { Timeline } from "./timeline.ts";
import { Toolbar } from "./toolbar.ts";
import { activityTracks, busySpan, choiceParams, readChoice, readFolded } from "./tracks.ts";
import { TracksPanel } from "./tracks_panel.ts";
import type { Tool } from "./tools.ts";
import { HoverTooltip } from "./tooltip.ts";
import { clampRange, fitRange, type Range } from "./viewport.ts";

const AXIS_HEIGHT = 30;
/** The deep link follows the view this long after it stops changing. */
const LINK_DELAY_MS = 200;
/** A link that names no window opens on its first event this many times its duration wide (at least
 * MIN_CONTEXT_NS), when the window held is far wider: the event must be seen, not a speck. */
const CONTEXT_FACTOR = 20;
const MIN_CONTEXT_NS = 10_000;

/** Host sections with many threads start collapsed when the trace has accelerators, so the devices
 * are on screen at first sight (the header still shows the threads' activity; a click expands it). */
export function initiallyCollapsed(meta: TraceMeta, maxOpenThreads = 8): number[] {
  const hasDevice = meta.sections.some((s) => s.kind === "gpu" || s.kind === "tpu");
  if (!hasDevice) return [];
  const counts = new Map<number, number>();
  for (const t of meta.tracks) counts.set(t.section, (counts.get(t.section) ?? 0) + 1);
  return meta.sections.filter((s) => s.kind === "cpu" && (counts.get(s.id) ?? 0) > maxOpenThreads).map((s) => s.id);
}

export class TraceViewer {
  readonly el: HTMLElement;
  private readonly axis = h("canvas", { class: "tv-axis", "data-testid": "trace-axis" });
  private readonly canvas = h("canvas", { class: "tv-canvas", "data-testid": "trace-canvas" });
  private readonly spacer = h("div", { class: "tv-spacer" });
  private readonly scroller = h("div", { class: "tv-scroll" }, this.canvas, this.spacer);
  private readonly measure = new MeasureReadout();
  private readonly body = h("div", { class: "tv-body" }, this.axis, this.scroller, this.measure.el);
  private readonly notices = new Notices();
  private readonly help: HTMLElement;
  private readonly timeline: Timeline;
  private readonly frames: FrameLoop;
  private readonly cache: TileCache;
  private readonly tiles: TileScheduler;
  private readonly selection: SelectionManager;
  private readonly tooltip: HoverTooltip;
  private readonly search: SearchPanel;
  private readonly toolbar: Toolbar;
  private readonly exportDialog: ExportDialog;
  private readonly mouse: MouseInput;
  private readonly keyboard: KeyboardInput;
  private readonly pending: PendingWatch;
  private readonly criticalPath: CriticalPathOverlay;
  private readonly tracksPanel: TracksPanel;
  private readonly linked: LinkedWalk;
  private dpr = 1;
  private linkTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly resizeObserver: ResizeObserver;
  private readonly themeObserver: MutationObserver;
  private destroyed = false;
  /** Names this viewer's searches to the server, which cancels the earlier one of a newer search. */
  private readonly searcher = newSearcherId();
  /** Whether trace/meta is being read again after a tile named a gone version. */
  private refreshing = false;
  /** Whether the link applied last named the window to show. */
  private linkNamedRange = false;

  constructor(private readonly ctx: ViewContext) {
    const redraw = () => this.frames.request();
    this.timeline = new Timeline({
      redraw,
      relayout: (layout) => {
        this.spacer.style.height = `${Math.max(0, layout.totalHeight - this.timeline.height)}px`;
        // The first tracks top-down, for the browser tests.
        this.canvas.dataset.trackOrder = layout.sections.flatMap((s) => s.tracks.slice(0, 20).map((t) => t.track.id)).slice(0, 20).join(",");
      },
    });
    this.frames = new FrameLoop({
      ready: () => !this.destroyed && !!this.timeline.layout && !!this.timeline.meta && !!this.timeline.width,
      animate: (now, dt) => this.keyboard.animate(now, dt),
      draw: () => this.draw(),
    });
    this.cache = new TileCache(
      (level, index, signal) => ctx.client.tile(ctx.subject, level, index, signal, this.timeline.meta?.version),
      redraw,
      (id, error) => (isStaleTile(error) ? void this.refreshMeta(id, error) : this.notices.tileFailed(id, error)),
    );
    this.tiles = new TileScheduler(this.timeline, this.cache, () => this.keyboard.moving, () => this.updateStatus(Number(this.canvas.dataset.boxes ?? 0)));
    this.selection = new SelectionManager(ctx, this.timeline, { redraw, revealTrack: (track, depth) => this.revealTrack(track, depth) });
    this.tooltip = new HoverTooltip(this.timeline, () => this.el.getBoundingClientRect());
    this.search = new SearchPanel({
      search: (query, limit, offset, signal) => ctx.client.search(ctx.subject, query.text, limit, offset, signal, this.searcher, query),
      trackLabel: (t) => this.timeline.trackLabel(t),
      jumpTo: (id) => this.selection.jumpTo(id, { select: true, zoom: true }),
      leave: () => this.el.focus(),
    });
    this.body.append(this.search.results.el);
    this.criticalPath = new CriticalPathOverlay({
      load: (atNs, signal) => ctx.client.getJson<TraceCriticalPath>("trace/critical_path", ctx.subject, { at: atNs }, signal),
      redraw,
      show: (text) => this.toolbar.showCriticalPath(text),
    });
    this.tracksPanel = new TracksPanel({
      meta: () => this.timeline.meta,
      choice: () => this.timeline.choice,
      setChoice: (choice) => this.timeline.setChoice(choice),
      folded: () => this.timeline.collapsed,
      toggleSection: (id) => this.timeline.toggleSection(id),
    });
    this.linked = new LinkedWalk({
      show: async (id, first) => {
        await this.selection.jumpTo(id, { select: true, zoom: true });
        const span = this.selection.span();
        if (first && span && !this.linkNamedRange) this.zoomToContext(span);
      },
    });
    const activity = h("button", { type: "button", class: "ps-button", title: "Zoom to where the device (or the selection's section) is busy (Z)", "data-testid": "zoom-activity" }, "Activity");
    activity.addEventListener("click", () => this.zoomToActivity());
    this.toolbar = new Toolbar(
      {
        setTool: (tool) => this.setTool(tool),
        flowsChanged: redraw,
        criticalPathChanged: (on) => this.criticalPath.setEnabled(on, this.timeline.range),
        wholeTrace: () => this.timeline.setRange(this.timeline.wholeRange()),
        toggleHelp: () => this.toggleHelp(),
        exportTrace: () => this.exportDialog.open(),
      },
      h("div", { style: "display: contents" }, this.tracksPanel.el, activity, this.search.el, this.linked.el),
    );
    this.mouse = new MouseInput(this.timeline, this.canvas, this.scroller, this.tooltip, {
      focus: () => this.el.focus({ preventScroll: true }),
      redraw,
      click: (hit, additive) => this.selection.click(hit, additive),
      addMark: (mark) => this.selection.addMark(mark),
      selectRange: (start, end, tracks, stepNs) => void this.selection.selectRange(start, end, tracks, stepNs),
    });
    this.keyboard = new KeyboardInput(this.timeline, () => this.mouse.pointerX, {
      ready: () => !this.destroyed && isOnScreen(this.el) && !!this.timeline.meta,
      redraw,
      setTool: (tool) => this.setTool(tool),
      toggleHelp: () => this.toggleHelp(),
      closeHelp: () => {
        if (this.help.hidden) return false;
        this.toggleHelp(false);
        return true;
      },
      clearAll: () => {
        this.mouse.cancelDrag();
        this.selection.clearAll();
      },
      zoomToSelection: () => this.selection.zoomToSelection(),
      markSelection: () => this.selection.markSelection(),
      wholeTrace: () => this.timeline.setRange(this.timeline.wholeRange()),
      focusSearch: () => this.search.focus(),
      searchStep: (dir) => void this.search.step(dir),
      zoomToActivity: () => this.zoomToActivity(),
      toggleTracks: () => this.tracksPanel.toggle(),
    });
    this.pending = new PendingWatch({
      poll: (signal) => ctx.client.traceMeta(ctx.subject, signal),
      progress: (hosts) => this.notices.showPending(hosts),
      arrived: (meta) => this.reopen(meta),
    });
    this.help = helpOverlay(() => this.toggleHelp(false));
    this.exportDialog = new ExportDialog({
      client: ctx.client,
      subject: ctx.subject,
      visibleRange: () => (this.timeline.meta ? { ...this.timeline.range } : null),
    });
    this.setTool("select");
    this.el = h(
      "div",
      { class: "tv", tabindex: "0", "data-testid": "trace-viewer" },
      this.toolbar.el,
      this.notices.el,
      this.body,
      detailsSplitter(this.selection.details.el),
      this.selection.details.el,
      this.tooltip.el,
      this.help,
      this.exportDialog.el,
    );
    // The axis' tooltip: the time under the pointer in full (its labels are offsets).
    this.axis.addEventListener("mousemove", (e) => {
      if (!this.timeline.meta) return;
      const proj = this.timeline.projection();
      const ticks = computeTicks(proj.range.start, proj.range.end, this.timeline.width - LABEL_WIDTH);
      this.axis.title = e.offsetX >= LABEL_WIDTH ? axisHoverText(proj.ns(e.offsetX), ticks, proj.nsPerPx) : "Tick labels count from this time, from the trace's start";
    });
    // The canvases' colours follow the page's theme (theme.ts sets data-theme).
    this.themeObserver = new MutationObserver(() => this.frames.request());
    this.themeObserver.observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(this.scroller);
  }

  /** Reads the trace metadata (polling while the server ingests) and opens the view. */
  async start(): Promise<void> {
    const { client, subject, signal } = this.ctx;
    const loading = loadingOverlay();
    this.showOverlay(loading.el);
    try {
      const meta = await client.waitForTraceMeta(subject, (p) => loading.progress(p), signal);
      if (this.destroyed) return;
      this.open(meta);
    } catch (e) {
      if (isAbort(e) || this.destroyed) return;
      this.showOverlay(errorOverlay(messageOf(e), () => void this.start()));
    }
  }

  /** Applies the deep link's keys (deep_link.ts); `initial` keeps an empty selection as it is. */
  applyParams(p: URLSearchParams, initial = false): void {
    if (!this.timeline.meta) return;
    const link = readLink(p);
    if (link.range) this.timeline.range = clampRange(link.range, this.timeline.limits);
    this.applyTrackKeys(p);
    this.linkNamedRange = !!link.range;
    const linked = readLinkedIds(p);
    const find = readFind(p);
    const r = link.rangeSelection;
    const newQuery = link.query !== null && link.query !== this.search.query;
    if (linked.length) void this.linked.start(linked, link.eventIds[0]);
    else if (find) void this.findLinked(find);
    else if (link.eventIds.length) void this.selection.selectByIds(link.eventIds, !link.range);
    else if (r) void this.selection.selectRange(r.start, r.end, r.tracks ?? this.timeline.allTracks());
    else if (newQuery && link.query) void this.search.searchFor(link.query);
    else if (!initial) this.selection.clear();
    if (!linked.length && !find) this.linked.stop();
    if (newQuery && link.query && (link.eventIds.length || r || linked.length)) this.search.fill(link.query);
    this.frames.request();
    this.tiles.schedule(true);
  }

  show(): void {
    this.resize();
  }

  /** The track keys of a link (tracks.ts), when it names any: the choice and the folded sections. */
  private applyTrackKeys(p: URLSearchParams): void {
    const folded = readFolded(p);
    if (!folded) return;
    this.timeline.collapsed.clear();
    for (const id of folded) this.timeline.collapsed.add(id);
    this.timeline.setChoice(readChoice(p));
    this.tracksPanel.refresh();
  }

  /** A `find` link: the events named so, the device's first (linked_walk.ts), walked "k of N". */
  private async findLinked(name: string): Promise<void> {
    const meta = this.timeline.meta;
    if (!meta) return;
    try {
      const found = await this.ctx.client.search(this.ctx.subject, name, SEARCH_LIMIT, 0, this.ctx.signal);
      const ids = pickLinked(found.matches, name, activityTracks(meta, null));
      this.search.fill(name);
      if (ids.length) await this.linked.start(ids);
      else this.selection.details.error(`No event of the trace is named “${name}”.`);
    } catch (e) {
      if (!isAbort(e)) this.selection.details.error(messageOf(e));
    }
  }

  /** Zooms in on `span` when the window is far wider than it (linked_walk's first step). */
  private zoomToContext(span: Range): void {
    const width = Math.max((span.end - span.start) * CONTEXT_FACTOR, MIN_CONTEXT_NS);
    const r = this.timeline.range;
    if (r.end - r.start <= 2 * width) return;
    const mid = (span.start + span.end) / 2;
    this.timeline.setRange({ start: mid - width / 2, end: mid + width / 2 });
  }

  /** Z: the window where the selection's section, else the device, is busy (from the whole-trace tile). */
  private zoomToActivity(): void {
    const meta = this.timeline.meta;
    const tile = meta && this.cache.get(meta.tile.max_level, 0);
    if (!meta || !tile) return;
    const [first] = this.selection.selectedBoxes();
    const section = first ? (meta.tracks.find((t) => t.id === first.track)?.section ?? null) : null;
    const span = busySpan(tile, activityTracks(meta, section));
    if (span) this.timeline.setRange(fitRange(span.start, span.end, this.timeline.limits, 0.02));
  }

  destroy(): void {
    this.destroyed = true;
    this.frames.stop();
    this.resizeObserver.disconnect();
    this.themeObserver.disconnect();
    this.keyboard.stop();
    this.tiles.stop();
    if (this.linkTimer) clearTimeout(this.linkTimer);
    this.search.stop();
    this.selection.stop();
    this.pending.stop();
    this.cache.clear();
  }

  private showOverlay(el: HTMLElement | null): void {
    this.body.querySelector(".tv-overlay")?.remove();
    if (el) this.body.append(h("div", { class: "tv-overlay" }, el));
  }

  private open(meta: TraceMeta): void {
    this.showOverlay(null);
    this.timeline.open(meta, initiallyCollapsed(meta));
    this.notices.showTrace(meta);
    if (meta.num_events === 0 && !meta.tracks.length) {
      this.showOverlay(h("div", { class: "ps-empty" }, "This trace holds no events."));
    }
    this.cache.pin(meta.tile.max_level, 0);
    this.applyParams(this.ctx.params, true);
    this.resize();
    this.tiles.schedule(true);
    this.pending.watch(meta);
  }

  /** Opens metadata of another version (a pending host arrived, or a host's cache entry was
   * rebuilt): host indices, tracks and event ids may have changed, so tiles, the selection, folded
   * sections and the search walk start afresh; the visible range stays. */
  private reopen(meta: TraceMeta): void {
    if (this.destroyed) return;
    const range = this.timeline.range;
    this.selection.clearAll();
    this.search.fill(this.search.query);
    this.cache.clear();
    this.timeline.collapsed.clear();
    this.open(meta);
    this.timeline.range = clampRange(range, this.timeline.limits);
    this.frames.request();
    this.tiles.schedule(true);
  }

  /** A tile named a version of the trace the server no longer has (its cache entry was rebuilt, or
   * is being: 202): trace/meta is read again, showing the progress while the server reads the
   * trace, and the view reopens on the new version. With the version unchanged, the tiles are asked
   * again after a 202, and any other failure is shown. */
  private async refreshMeta(id: TileId, error: Error): Promise<void> {
    if (this.refreshing || this.destroyed) return;
    this.refreshing = true;
    const { client, subject, signal } = this.ctx;
    const before = this.timeline.meta?.version;
    const loading = loadingOverlay();
    let shown = false;
    const progress = (p: IngestProgress) => {
      if (!shown) this.showOverlay(loading.el);
      shown = true;
      loading.progress(p);
    };
    try {
      const meta = await client.waitForTraceMeta(subject, progress, signal);
      if (this.destroyed) return;
      if (meta.version !== before) return this.reopen(meta);
      if (shown) this.showOverlay(null);
      if (!(error instanceof ApiError && error.status === 202)) return this.notices.tileFailed(id, error);
      this.cache.retryFailed();
      this.tiles.schedule(true);
    } catch (e) {
      if (!isAbort(e) && !this.destroyed) this.showOverlay(errorOverlay(messageOf(e), () => void this.refreshMeta(id, error)));
    } finally {
      this.refreshing = false;
    }
  }

  private resize(): void {
    const w = this.scroller.clientWidth;
    const hgt = this.scroller.clientHeight;
    if (!w || !hgt) return;
    this.dpr = window.devicePixelRatio || 1;
    this.timeline.width = w;
    this.timeline.height = hgt;
    for (const [c, ch] of [
      [this.canvas, hgt],
      [this.axis, AXIS_HEIGHT],
    ] as const) {
      c.style.width = `${w}px`;
      c.style.height = `${ch}px`;
      c.width = Math.round(w * this.dpr);
      c.height = Math.round(ch * this.dpr);
    }
    const layout = this.timeline.layout;
    if (layout) this.spacer.style.height = `${Math.max(0, layout.totalHeight - hgt)}px`;
    this.frames.request();
    this.tiles.schedule(true);
  }

  private setTool(tool: Tool): void {
    this.mouse.tool = tool;
    this.toolbar.showTool(tool);
    this.canvas.dataset.tool = tool;
  }

  private toggleHelp(show?: boolean): void {
    this.help.hidden = show === undefined ? !this.help.hidden : !show;
    if (this.help.hidden) this.el.focus();
  }

  private revealTrack(track: number, depth: number): void {
    this.timeline.expandSectionOf(track);
    this.tracksPanel.refresh();
    const top = this.timeline.scrollTopToShow(track, depth, this.scroller.scrollTop);
    if (top !== null) this.scroller.scrollTop = top;
  }

  /** One frame: the tiles to draw, the timeline and its overlays, the axis, the readouts. */
  private draw(): void {
    const tl = this.timeline;
    // FrameLoop draws only once both are there (ready()).
    const meta = tl.meta as TraceMeta;
    const layout = tl.layout as Layout;
    const t0 = performance.now();
    const scrollY = this.scroller.scrollTop;
    const proj = tl.projection();
    const plan = planPieces(meta.tile, this.cache, meta.span_ns[1], tl.range.start, tl.range.end, proj.nsPerPx);
    tl.plan = plan;
    this.selection.resolveFlows(plan.pieces);
    this.tooltip.hideIfMoved(scrollY);
    const ctx = this.canvas.getContext("2d") as CanvasRenderingContext2D;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    const dragged = this.mouse.draggedRange();
    const marks = dragged ? [...this.selection.coloredRanges(), dragged] : this.selection.coloredRanges();
    const cursorX = this.mouse.cursorX();
    const stats = drawFrame({
      ctx,
      width: tl.width,
      height: tl.height,
      scrollY,
      proj,
      layout,
      pieces: plan.pieces,
      spanEnd: meta.span_ns[1],
      multiHost: meta.hosts.length > 1,
      dpr: this.dpr,
      overlay: {
        selected: this.selection.selectedBoxes(),
        marks,
        band: this.mouse.band(scrollY),
        cursorX,
        showFlows: this.toolbar.showFlows,
        pinnedFlows: this.selection.pinnedFlows,
      },
    });
    this.criticalPath.viewChanged(tl.range);
    const critical = this.criticalPath.draw(ctx, proj, layout, scrollY, LABEL_WIDTH, tl.width);
    if (!plan.pieces.length) {
      ctx.fillStyle = canvasColors().mutedText;
      ctx.fillText("Loading tiles…", LABEL_WIDTH + 12, Math.min(tl.height / 2, layout.totalHeight / 2 + 12));
    }
    const actx = this.axis.getContext("2d") as CanvasRenderingContext2D;
    actx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    drawAxis(actx, tl.width, AXIS_HEIGHT, proj, marks, cursorX);
    this.measure.show(this.mouse.liveMeasure() ?? this.selection.lastMark());
    const ms = performance.now() - t0;
    const d = this.canvas.dataset;
    d.level = String(plan.target.level);
    d.boxes = String(stats.boxes);
    d.flows = String(stats.flows);
    d.criticalEvents = String(critical.events);
    d.criticalArrows = String(critical.arrows);
    d.drawMs = ms.toFixed(2);
    this.updateStatus(stats.boxes);
    this.tiles.schedule(false);
    this.writeLink();
  }

  private updateStatus(boxes: number): void {
    const tl = this.timeline;
    this.toolbar.showStatus({ visibleNs: tl.range.end - tl.range.start, level: tl.plan?.target.level ?? null, boxes, tiles: this.cache.stats });
  }

  /** Writes the link LINK_DELAY_MS after the last frame; the canvas says while one is due
   * (`data-link-pending`), so whoever reads the link (a test, an extension) knows it is final. */
  private writeLink(): void {
    if (this.linkTimer) clearTimeout(this.linkTimer);
    const tl = this.timeline;
    const lk = this.linked.linked.length ? this.linked.linked.join(",") : undefined;
    this.canvas.dataset.linkPending = "1";
    this.linkTimer = setTimeout(() => {
      this.ctx.setParams({ ...linkParams(tl.range, this.selection.selection, this.search.query), ...choiceParams(tl.choice, tl.collapsed), lk, find: undefined });
      this.canvas.dataset.linkPending = "0";
    }, LINK_DELAY_MS);
  }
}
