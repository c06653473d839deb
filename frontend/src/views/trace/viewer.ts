/** The trace viewer: a streaming timeline drawn from server tiles, driven like chrome://tracing
 * (WASD, tools 1–4, click to select, drag to summarize or measure, search, flows, deep links). */

import { ApiError } from "../../api/client.ts";
import type { EventDetails, IngestProgress, SearchResponse, TraceMeta } from "../../api/types.ts";
import { clear, h, isAbort, messageOf } from "../../dom.ts";
import type { ViewContext } from "../view.ts";
import { DetailsPanel } from "./details.ts";
import { formatBytes, formatCount, formatDuration, formatNumber, formatTimestamp } from "./format.ts";
import { helpOverlay } from "./help.ts";
import { Layout, ROW_HEIGHT, SECTION_HEIGHT } from "./layout.ts";
import { levelFor, tilesCovering } from "./levels.ts";
import { drawAxis, drawFrame, type FlowArrow, LABEL_WIDTH, type SelectedBox } from "./render.ts";
import { counterAt, type EventHit, hitTest, type Plan, planPieces, summaryAt } from "./scene.ts";
import { type TileId, TileCache } from "./tilecache.ts";
import { clampRange, dragRange, fitRange, type Limits, limitsFor, panBy, Projection, type Range, zoomAround } from "./viewport.ts";
import { inPage, pageOffset, stepIndex } from "./search.ts";

type Tool = "select" | "pan" | "zoom" | "timing";

/** A flow of the selected event: `otherId` is its other end, whose depth row is found lazily. */
interface PinnedFlow extends FlowArrow {
  otherId: number;
  otherEnd: "src" | "dst";
  resolved: boolean;
}

const TOOLS: { id: Tool; key: string; shifted: string; title: string; help: string }[] = [
  { id: "select", key: "1", shifted: "!", title: "Select", help: "Click an event; drag to summarize a range" },
  { id: "pan", key: "2", shifted: "@", title: "Pan", help: "Drag to move the timeline" },
  { id: "zoom", key: "3", shifted: "#", title: "Zoom", help: "Drag across a time range to zoom to it" },
  { id: "timing", key: "4", shifted: "$", title: "Timing", help: "Drag to measure a time range" },
];

const AXIS_HEIGHT = 30;
const SEARCH_LIMIT = 1000;
const DRAG_THRESHOLD_PX = 4;
const MARK_COLOR = "#e8710a";
const RANGE_COLOR = "#1a73e8";

type Selection =
  | { kind: "none" }
  | { kind: "events"; events: SelectedBox[] }
  | { kind: "range"; start: number; end: number; tracks: number[] };

interface Drag {
  tool: Tool;
  /** Pressed on a section header: a click there (no drag) collapses or expands the section, a drag
   * still does what the tool does (a measurement may well start over a header). */
  onHeader: boolean;
  x0: number;
  y0: number;
  /** Content y (canvas y + scroll) at the start, for rubber bands that outlive a scroll. */
  cy0: number;
  x: number;
  y: number;
  moved: boolean;
  range0: Range;
  scroll0: number;
  additive: boolean;
}

/** Host sections with many threads start collapsed when the trace has accelerators, so the devices
 * are on screen at first sight (the header still shows the threads' activity; a click expands it). */
export function initiallyCollapsed(meta: TraceMeta, maxOpenThreads = 8): number[] {
  const hasDevice = meta.sections.some((s) => s.kind === "gpu" || s.kind === "tpu");
  if (!hasDevice) return [];
  const counts = new Map<number, number>();
  for (const t of meta.tracks) counts.set(t.section, (counts.get(t.section) ?? 0) + 1);
  return meta.sections.filter((s) => s.kind === "cpu" && (counts.get(s.id) ?? 0) > maxOpenThreads).map((s) => s.id);
}

function roundNs(ns: number): string {
  return String(Math.round(ns * 1000) / 1000);
}

export class TraceViewer {
  readonly el: HTMLElement;
  private readonly axis = h("canvas", { class: "tv-axis", "data-testid": "trace-axis" });
  private readonly canvas = h("canvas", { class: "tv-canvas", "data-testid": "trace-canvas" });
  private readonly spacer = h("div", { class: "tv-spacer" });
  private readonly scroller = h("div", { class: "tv-scroll" }, this.canvas, this.spacer);
  /** The latest measurement (Timing tool drag, or M on the selection) in words: the axis label is
   * drawn on a canvas, which neither a screen reader nor a copy-paste can read. */
  private readonly measureOut = h("div", {
    class: "tv-measure",
    "data-testid": "measure",
    title: "Measured with the Timing tool (4) or M; Esc clears",
    "aria-live": "polite",
    hidden: true,
  });
  private readonly body = h("div", { class: "tv-body" }, this.axis, this.scroller, this.measureOut);
  private readonly status = h("div", { class: "tv-status", "data-testid": "trace-status" });
  private readonly notices = h("div", { class: "tv-notices" });
  private readonly tooltip = h("div", { class: "tv-tooltip", hidden: true });
  private readonly toolButtons = new Map<Tool, HTMLButtonElement>();
  private readonly flowsToggle = h("input", { type: "checkbox", "data-testid": "flows-toggle" });
  private readonly searchInput = h("input", {
    type: "search",
    class: "tv-search",
    placeholder: "Find events…",
    "aria-label": "Find events",
    "data-testid": "search-input",
  });
  private readonly searchCount = h("span", { class: "tv-search-count", "data-testid": "search-count" });
  private measureShown = "";
  private readonly details: DetailsPanel;
  private readonly help: HTMLElement;

  private meta: TraceMeta | null = null;
  private layout: Layout | null = null;
  private limits: Limits = limitsFor(0, 1);
  private range: Range = { start: 0, end: 1 };
  private readonly collapsed = new Set<number>();
  private cache: TileCache;
  private tool: Tool = "select";
  private selection: Selection = { kind: "none" };
  /** Measured ranges; `stepNs` is how exact their ends are (a pixel for a drag, 1 ns for an event). */
  private marks: { start: number; end: number; stepNs: number }[] = [];
  private pinnedFlows: PinnedFlow[] = [];
  /** The view the hover tooltip was computed for: it hides as soon as the view moves under it. */
  private tooltipFor: { start: number; end: number; scroll: number } | null = null;
  private mouse: { x: number; y: number } | null = null;
  private drag: Drag | null = null;
  private readonly held = new Map<string, number>();
  private lastFrame = 0;
  private frameRequested = false;
  private plan: Plan | null = null;
  private fetchTimer: ReturnType<typeof setTimeout> | null = null;
  private fetchDeadline = 0;
  private linkTimer: ReturnType<typeof setTimeout> | null = null;
  private search: { query: string; resp: SearchResponse; index: number } | null = null;
  private searchAbort: AbortController | null = null;
  private detailsAbort: AbortController | null = null;
  private width = 0;
  private height = 0;
  private dpr = 1;
  private readonly resizeObserver: ResizeObserver;
  private readonly cleanups: (() => void)[] = [];
  private destroyed = false;

  constructor(private readonly ctx: ViewContext) {
    this.cache = new TileCache(
      (level, index, signal) => ctx.client.tile(ctx.subject, level, index, signal),
      () => this.requestDraw(),
      (id, error) => this.tileFailed(id, error),
    );
    this.details = new DetailsPanel({
      trackLabel: (t) => this.trackLabel(t),
      jumpTo: (id) => void this.jumpTo(id, { select: true, zoom: true }),
    });
    this.help = helpOverlay(() => this.toggleHelp(false));
    this.el = h(
      "div",
      { class: "tv", tabindex: "0", "data-testid": "trace-viewer" },
      this.toolbar(),
      this.notices,
      this.body,
      this.splitter(),
      this.details.el,
      this.tooltip,
      this.help,
    );
    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(this.scroller);
    this.bindInput();
  }

  // ---- setup ---------------------------------------------------------------------------------

  private toolbar(): HTMLElement {
    const tools = h("div", { class: "tv-tools", role: "radiogroup", "aria-label": "Mouse tool" });
    for (const t of TOOLS) {
      const b = h(
        "button",
        { type: "button", class: "tv-tool", "data-testid": `tool-${t.id}`, title: `${t.title} (${t.key} or ${t.shifted}): ${t.help}`, role: "radio" },
        h("kbd", {}, t.key),
        ` ${t.title}`,
      );
      b.addEventListener("click", () => this.setTool(t.id));
      tools.append(b);
      this.toolButtons.set(t.id, b);
    }
    this.flowsToggle.addEventListener("change", () => this.requestDraw());
    const flows = h("label", { class: "tv-toggle", title: "Draw flow arrows (launch → kernel, send → recv…) of visible events" }, this.flowsToggle, " Flows");
    const prev = h("button", { type: "button", class: "ps-button", title: "Previous match (Shift+Enter)", "data-testid": "search-prev" }, "◀");
    const next = h("button", { type: "button", class: "ps-button", title: "Next match (Enter)", "data-testid": "search-next" }, "▶");
    prev.addEventListener("click", () => void this.searchStep(-1));
    next.addEventListener("click", () => void this.searchStep(1));
    this.searchInput.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        void this.searchStep(e.shiftKey ? -1 : 1);
      } else if (e.key === "Escape") {
        // Back to the timeline keeping the query (a search field's default clears it), so Enter
        // later goes on from the current match; the field's × clears it.
        e.preventDefault();
        this.searchInput.blur();
        this.el.focus();
      }
      e.stopPropagation();
    });
    const reset = h("button", { type: "button", class: "ps-button", title: "Show the whole trace (0)" }, "Whole trace");
    reset.addEventListener("click", () => this.setRange({ start: this.limits.spanStart, end: this.limits.spanEnd }));
    const helpButton = h("button", { type: "button", class: "ps-button", title: "Keys and mouse (?)", "data-testid": "help-button" }, "?");
    helpButton.addEventListener("click", () => this.toggleHelp());
    this.setTool("select");
    return h(
      "div",
      { class: "tv-toolbar" },
      tools,
      flows,
      h("div", { class: "tv-searchbox" }, this.searchInput, this.searchCount, prev, next),
      reset,
      helpButton,
      h("span", { class: "ps-spacer" }),
      this.status,
    );
  }

  private splitter(): HTMLElement {
    const s = h("div", { class: "tv-splitter", title: "Drag to resize the details panel" });
    s.addEventListener("pointerdown", (e) => {
      const startY = e.clientY;
      const startH = this.details.el.getBoundingClientRect().height;
      s.setPointerCapture(e.pointerId);
      const move = (ev: PointerEvent) => {
        const hgt = Math.max(60, Math.min(window.innerHeight - 160, startH - (ev.clientY - startY)));
        this.details.el.style.height = `${hgt}px`;
      };
      const up = () => {
        s.removeEventListener("pointermove", move);
        s.removeEventListener("pointerup", up);
      };
      s.addEventListener("pointermove", move);
      s.addEventListener("pointerup", up);
    });
    return s;
  }

  /** Reads the trace metadata (polling while the server ingests) and opens the view. */
  async start(): Promise<void> {
    const { client, subject, signal } = this.ctx;
    const progress = h("div", { class: "tv-progress", "data-testid": "ingest-progress" });
    this.showOverlay(h("div", { class: "ps-loading" }, "Loading trace…", progress));
    try {
      const meta = await client.waitForTraceMeta(subject, (p) => this.showProgress(progress, p), signal);
      if (this.destroyed) return;
      this.open(meta);
    } catch (e) {
      if (isAbort(e) || this.destroyed) return;
      const retry = h("button", { type: "button", class: "ps-button" }, "Retry");
      retry.addEventListener("click", () => void this.start());
      this.showOverlay(
        h("div", { class: "ps-error", role: "alert", "data-testid": "trace-error" }, `Could not open the trace: ${messageOf(e)} `, retry),
      );
    }
  }

  private showOverlay(el: HTMLElement | null): void {
    this.body.querySelector(".tv-overlay")?.remove();
    if (el) this.body.append(h("div", { class: "tv-overlay" }, el));
  }

  private showProgress(box: HTMLElement, p: IngestProgress): void {
    clear(box);
    const frac = p.bytes_total > 0 ? p.bytes_done / p.bytes_total : 0;
    const bar = h("div", { class: "tv-progress-bar" });
    bar.style.width = `${(frac * 100).toFixed(1)}%`;
    box.append(
      h("div", { class: "tv-progress-track" }, bar),
      h(
        "div",
        {},
        (p.bytes_total > 0
          ? `Reading the profile: ${(frac * 100).toFixed(0)}% (${formatBytes(p.bytes_done)} of ${formatBytes(p.bytes_total)})`
          : "Reading the profile…") + (p.stage ? ` · ${p.stage}` : ""),
      ),
    );
  }

  private open(meta: TraceMeta): void {
    this.meta = meta;
    this.showOverlay(null);
    this.limits = limitsFor(meta.span_ns[0], meta.span_ns[1]);
    for (const id of initiallyCollapsed(meta)) this.collapsed.add(id);
    this.relayout();
    this.renderNotices(meta);
    if (meta.num_events === 0 && !meta.tracks.length) {
      this.showOverlay(h("div", { class: "ps-empty" }, "This trace holds no events."));
    }
    const root = { level: meta.tile.max_level, index: 0 };
    this.cache.pin(root.level, root.index);
    this.range = { start: this.limits.spanStart, end: this.limits.spanEnd };
    this.applyParams(this.ctx.params, true);
    this.resize();
    this.scheduleFetch(true);
  }

  private renderNotices(meta: TraceMeta): void {
    clear(this.notices);
    for (const w of meta.warnings ?? []) this.notices.append(h("div", { class: "ps-notice" }, w));
    for (const host of meta.hosts) {
      const skipped = Object.entries(host.skipped ?? {});
      const nSkipped = skipped.reduce((a, [, n]) => a + n, 0);
      if (!host.warnings?.length && !nSkipped) continue;
      const parts: string[] = [];
      if (nSkipped) parts.push(`skipped ${formatCount(nSkipped)} records (${skipped.map(([r, n]) => `${r}: ${formatCount(n)}`).join(", ")})`);
      if (host.warnings?.length) parts.push(`${host.warnings.length} warning${host.warnings.length > 1 ? "s" : ""}`);
      const more = h("details", {}, h("summary", {}, `${host.name}: ${parts.join("; ")}`), h("ul", {}, ...(host.warnings ?? []).map((w) => h("li", {}, w))));
      this.notices.append(h("div", { class: "ps-notice" }, more));
    }
  }

  private relayout(): void {
    if (!this.meta) return;
    this.layout = new Layout(this.meta, this.collapsed);
    this.spacer.style.height = `${Math.max(0, this.layout.totalHeight - this.height)}px`;
    this.requestDraw();
  }

  private resize(): void {
    const w = this.scroller.clientWidth;
    const hgt = this.scroller.clientHeight;
    if (!w || !hgt) return;
    this.dpr = window.devicePixelRatio || 1;
    this.width = w;
    this.height = hgt;
    for (const [c, ch] of [
      [this.canvas, hgt],
      [this.axis, AXIS_HEIGHT],
    ] as const) {
      c.style.width = `${w}px`;
      c.style.height = `${ch}px`;
      c.width = Math.round(w * this.dpr);
      c.height = Math.round(ch * this.dpr);
    }
    if (this.layout) this.spacer.style.height = `${Math.max(0, this.layout.totalHeight - hgt)}px`;
    this.requestDraw();
    this.scheduleFetch(true);
  }

  // ---- deep link -----------------------------------------------------------------------------

  /** Applies link keys: `start`/`end` (visible ns range), `sel` (event ids), `range`+`tracks`. */
  applyParams(p: URLSearchParams, initial = false): void {
    if (!this.meta) return;
    const start = Number(p.get("start"));
    const end = Number(p.get("end"));
    const hasRange = p.has("start") && p.has("end") && Number.isFinite(start) && Number.isFinite(end) && end > start;
    if (hasRange) this.range = clampRange({ start, end }, this.limits);
    const sel = (p.get("sel") ?? "").split(",").filter(Boolean).map(Number).filter(Number.isFinite);
    const rsel = (p.get("range") ?? "").split(",").map(Number);
    if (sel.length) {
      void this.selectByIds(sel, !hasRange);
    } else if (rsel.length === 2 && rsel.every(Number.isFinite) && rsel[1] > rsel[0]) {
      const tracks = (p.get("tracks") ?? "").split(",").filter(Boolean).map(Number);
      void this.selectRange(rsel[0], rsel[1], tracks.length ? tracks : this.allTracks());
    } else if (!initial) {
      this.clearSelection();
    }
    this.requestDraw();
    this.scheduleFetch(true);
  }

  private writeLink(): void {
    if (this.linkTimer) clearTimeout(this.linkTimer);
    this.linkTimer = setTimeout(() => {
      const s = this.selection;
      this.ctx.setParams({
        start: roundNs(this.range.start),
        end: roundNs(this.range.end),
        sel: s.kind === "events" && s.events.length ? s.events.map((e) => e.id).join(",") : undefined,
        range: s.kind === "range" ? `${roundNs(s.start)},${roundNs(s.end)}` : undefined,
        tracks: s.kind === "range" ? s.tracks.join(",") : undefined,
      });
    }, 200);
  }

  // ---- frames --------------------------------------------------------------------------------

  requestDraw(): void {
    if (this.frameRequested || this.destroyed) return;
    this.frameRequested = true;
    requestAnimationFrame((t) => this.frame(t));
  }

  private frame(now: number): void {
    this.frameRequested = false;
    if (this.destroyed || !this.layout || !this.meta || !this.width) return;
    const dt = this.lastFrame ? Math.min(now - this.lastFrame, 50) : 16;
    this.lastFrame = now;
    if (this.held.size) {
      this.animateKeys(now, dt);
      this.requestDraw();
    } else {
      this.lastFrame = 0;
    }
    const t0 = performance.now();
    const scrollY = this.scroller.scrollTop;
    const proj = this.projection();
    this.plan = planPieces(this.meta.tile, this.cache, this.meta.span_ns[1], this.range.start, this.range.end, proj.nsPerPx);
    this.resolvePinnedFlows();
    if (this.tooltipFor && (this.tooltipFor.start !== this.range.start || this.tooltipFor.end !== this.range.end || this.tooltipFor.scroll !== scrollY)) {
      this.tooltip.hidden = true;
      this.tooltipFor = null;
    }
    const ctx = this.canvas.getContext("2d") as CanvasRenderingContext2D;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    const marks = this.markList();
    const cursorX = this.mouse && !this.drag ? this.mouse.x : null;
    const stats = drawFrame({
      ctx,
      width: this.width,
      height: this.height,
      scrollY,
      proj,
      layout: this.layout,
      pieces: this.plan.pieces,
      spanEnd: this.meta.span_ns[1],
      multiHost: this.meta.hosts.length > 1,
      dpr: this.dpr,
      overlay: {
        selected: this.selection.kind === "events" ? this.selection.events : [],
        marks,
        band: this.bandRect(scrollY),
        cursorX,
        showFlows: this.flowsToggle.checked,
        pinnedFlows: this.pinnedFlows,
      },
    });
    if (!this.plan.pieces.length) {
      ctx.fillStyle = "#6b7280";
      ctx.fillText("Loading tiles…", LABEL_WIDTH + 12, Math.min(this.height / 2, this.layout.totalHeight / 2 + 12));
    }
    const actx = this.axis.getContext("2d") as CanvasRenderingContext2D;
    actx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    drawAxis(actx, this.width, AXIS_HEIGHT, proj, marks, cursorX);
    this.showMeasure();
    const ms = performance.now() - t0;
    const d = this.canvas.dataset;
    d.level = String(this.plan.target.level);
    d.boxes = String(stats.boxes);
    d.flows = String(stats.flows);
    d.drawMs = ms.toFixed(2);
    this.updateStatus(stats.boxes);
    this.scheduleFetch(false);
    this.writeLink();
  }

  private projection(): Projection {
    return new Projection(this.range, LABEL_WIDTH, Math.max(1, this.width - LABEL_WIDTH));
  }

  private markList(): { start: number; end: number; color: string }[] {
    const out = this.marks.map((m) => ({ start: m.start, end: m.end, color: MARK_COLOR }));
    if (this.selection.kind === "range") out.push({ start: this.selection.start, end: this.selection.end, color: RANGE_COLOR });
    const d = this.drag;
    if (d && d.moved && (d.tool === "zoom" || d.tool === "timing")) {
      out.push({ ...this.dragSpan(d, d.x), color: d.tool === "zoom" ? RANGE_COLOR : MARK_COLOR });
    }
    return out;
  }

  private dragSpan(d: Drag, x: number): Range {
    return dragRange(this.projection(), d.x0, x, LABEL_WIDTH, this.width);
  }

  /** The Timing tool's drag while it lasts, else the latest mark. */
  private showMeasure(): void {
    const d = this.drag;
    const live = d && d.moved && d.tool === "timing" ? { ...this.dragSpan(d, d.x), stepNs: this.projection().nsPerPx } : null;
    const m = live ?? this.marks[this.marks.length - 1] ?? null;
    // Ends with as many decimals as they are exact: a dragged end is only good to a pixel.
    const at = (ns: number) => (m ? formatTimestamp(ns, m.stepNs, ns) : "");
    const [dur, from, to] = m ? [formatDuration(m.end - m.start), at(m.start), at(m.end)] : [];
    const shown = m ? `${dur} ${from} ${to}` : "";
    if (shown === this.measureShown) return;
    this.measureShown = shown;
    clear(this.measureOut);
    this.measureOut.hidden = !m;
    if (!m) return;
    this.measureOut.append(
      h("span", { class: "tv-measure-arrow" }, "⟷ "),
      h("b", { "data-testid": "measure-duration" }, dur),
      " measured",
      h("br"),
      h("span", { class: "tv-measure-range" }, h("span", { "data-testid": "measure-from" }, from), " → ", h("span", { "data-testid": "measure-to" }, to)),
    );
  }

  private bandRect(scrollY: number): { x0: number; y0: number; x1: number; y1: number } | null {
    const d = this.drag;
    if (!d || !d.moved || d.tool !== "select") return null;
    return { x0: Math.max(LABEL_WIDTH, d.x0), y0: d.cy0 - scrollY, x1: Math.max(LABEL_WIDTH, d.x), y1: d.y };
  }

  private updateStatus(boxes: number): void {
    const s = this.cache.stats;
    const plan = this.plan;
    const loading = s.inFlight + s.queued;
    this.status.textContent =
      `${formatDuration(this.range.end - this.range.start)} visible · level ${plan?.target.level ?? "–"}` +
      ` · ${formatCount(boxes)} boxes · ${s.tiles} tiles (${formatBytes(s.bytes)})` +
      (loading ? ` · loading ${loading}` : "");
    this.status.dataset.loading = String(loading);
  }

  /** Asks the cache for the tiles of the current window: at once when the view is still, else at
   * most every 250 ms while it moves (the coarser tiles held are drawn meanwhile). */
  private scheduleFetch(now: boolean): void {
    if (!this.meta) return;
    const t = performance.now();
    if (now || !this.held.size) {
      if (this.fetchTimer) clearTimeout(this.fetchTimer);
      this.fetchTimer = setTimeout(() => this.fetchNow(), now ? 0 : 60);
      this.fetchDeadline = 0;
      return;
    }
    if (!this.fetchDeadline) this.fetchDeadline = t + 250;
    if (this.fetchTimer) clearTimeout(this.fetchTimer);
    this.fetchTimer = setTimeout(() => this.fetchNow(), Math.max(0, Math.min(80, this.fetchDeadline - t)));
  }

  private fetchNow(): void {
    this.fetchTimer = null;
    this.fetchDeadline = 0;
    const meta = this.meta;
    if (!meta || !this.width) return;
    const p = meta.tile;
    const proj = this.projection();
    const level = levelFor(p, proj.nsPerPx);
    const span = meta.span_ns[1];
    const target = tilesCovering(p, level, this.range.start, this.range.end, span);
    const mid = (target.first + target.last) / 2;
    const ids: TileId[] = [{ level: p.max_level, index: 0 }];
    const visible: TileId[] = [];
    for (let i = target.first; i <= target.last; i++) visible.push({ level, index: i });
    visible.sort((a, b) => Math.abs(a.index - mid) - Math.abs(b.index - mid));
    ids.push(...visible);
    // One tile of margin on each side so a small pan never shows coarse tiles.
    const all = tilesCovering(p, level, -Infinity, Infinity, span);
    if (target.first > all.first) ids.push({ level, index: target.first - 1 });
    if (target.last < all.last) ids.push({ level, index: target.last + 1 });
    this.cache.want(ids);
    this.updateStatus(Number(this.canvas.dataset.boxes ?? 0));
  }

  private tileFailed(id: TileId, error: Error): void {
    const msg = error instanceof ApiError ? error.message : `trace/tile level ${id.level} index ${id.index}: ${error.message}`;
    const existing = this.notices.querySelector("[data-tile-error]");
    const note = h("div", { class: "ps-error", role: "alert", "data-tile-error": "1" }, `Some tiles could not be loaded: ${msg}`);
    if (existing) existing.replaceWith(note);
    else this.notices.append(note);
  }

  // ---- navigation ----------------------------------------------------------------------------

  setRange(r: Range): void {
    this.range = clampRange(r, this.limits);
    this.requestDraw();
  }

  private anchorNs(): number {
    const proj = this.projection();
    if (this.mouse && this.mouse.x >= LABEL_WIDTH) return proj.ns(this.mouse.x);
    return (this.range.start + this.range.end) / 2;
  }

  /** Continuous WASD motion: speed grows the longer a key is held, like chrome://tracing. */
  private animateKeys(now: number, dt: number): void {
    for (const [key, since] of this.held) {
      const boost = 1 + Math.min((now - since) / 600, 2.5);
      const secs = dt / 1000;
      if (key === "w" || key === "s") {
        const perSecond = 3.5 * boost;
        const factor = Math.exp(Math.log(perSecond) * secs);
        this.range = zoomAround(this.range, this.anchorNs(), key === "w" ? factor : 1 / factor, this.limits);
      } else if (key === "a" || key === "d") {
        this.range = panBy(this.range, (key === "d" ? 1 : -1) * 0.6 * boost * secs, this.limits);
      }
    }
  }

  private zoomToSelection(): void {
    const span = this.selectionSpan() ?? (this.marks.length ? this.marks[this.marks.length - 1] : null);
    if (span) this.setRange(fitRange(span.start, span.end, this.limits));
  }

  private selectionSpan(): Range | null {
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

  private scrollToTrack(track: number, depth: number): void {
    const t = this.layout?.tracks.get(track);
    if (!t) return;
    if (t.section.collapsed) {
      this.collapsed.delete(t.section.section.id);
      this.relayout();
    }
    const box = this.layout?.tracks.get(track);
    if (!box) return;
    const y = box.isCounter ? box.top : box.top + depth * ROW_HEIGHT;
    const top = this.scroller.scrollTop;
    if (y < top + SECTION_HEIGHT || y + ROW_HEIGHT > top + this.height) {
      this.scroller.scrollTop = Math.max(0, y - this.height / 3);
    }
  }

  // ---- selection -----------------------------------------------------------------------------

  private allTracks(): number[] {
    return this.meta ? this.meta.tracks.map((t) => t.id) : [];
  }

  private trackLabel(track: number): string {
    const t = this.layout?.tracks.get(track);
    if (!t) return `track ${track}`;
    const host = this.meta && this.meta.hosts.length > 1 && t.section.hostName ? `${t.section.hostName} · ` : "";
    return `${host}${t.section.section.name} / ${t.track.name}`;
  }

  /** An instant on the session timeline to the nanosecond, in the unit of its magnitude. */
  private timeOf = (ns: number): string => formatTimestamp(ns, 1, ns);

  private clearSelection(): void {
    this.selection = { kind: "none" };
    this.pinnedFlows = [];
    this.detailsAbort?.abort();
    this.details.hint();
    this.requestDraw();
  }

  private boxOf(d: EventDetails): SelectedBox {
    return { id: d.id, track: d.track, depth: d.depth, startNs: d.start_ns, durNs: d.dur_ns };
  }

  /** Selects events by global id (deep link): fetches each so their boxes and details are known. */
  private async selectByIds(ids: number[], zoom: boolean): Promise<void> {
    if (ids.length === 1) {
      await this.jumpTo(ids[0], { select: true, zoom });
      return;
    }
    const abort = this.newDetailsAbort();
    try {
      const all = await Promise.all(ids.slice(0, 200).map((id) => this.ctx.client.event(this.ctx.subject, id, abort.signal)));
      this.selection = { kind: "events", events: all.map((d) => this.boxOf(d)) };
      if (zoom) this.zoomToSelection();
      await this.showSelectionSummary();
    } catch (e) {
      if (!isAbort(e)) this.details.error(messageOf(e));
    }
  }

  private newDetailsAbort(): AbortController {
    this.detailsAbort?.abort();
    this.detailsAbort = new AbortController();
    const outer = this.ctx.signal;
    outer.addEventListener("abort", () => this.detailsAbort?.abort(), { once: true });
    return this.detailsAbort;
  }

  /** Fetches an event's details, optionally zooms to it, selects it and fills the details panel. */
  async jumpTo(id: number, opts: { select: boolean; zoom: boolean }): Promise<void> {
    const abort = this.newDetailsAbort();
    this.details.loading(`Loading event ${id}…`);
    try {
      const d = await this.ctx.client.event(this.ctx.subject, id, abort.signal);
      if (abort.signal.aborted) return;
      if (opts.zoom) {
        const pad = Math.max(d.dur_ns, 1000);
        const inView = d.start_ns >= this.range.start && d.start_ns + d.dur_ns <= this.range.end;
        const w = this.range.end - this.range.start;
        if (!inView || w > 50 * pad || w < d.dur_ns) this.setRange(fitRange(d.start_ns, d.start_ns + d.dur_ns, this.limits, 1));
      }
      if (opts.select) {
        this.selection = { kind: "events", events: [this.boxOf(d)] };
        this.scrollToTrack(d.track, d.depth);
        this.showEventDetails(d);
      }
      this.requestDraw();
    } catch (e) {
      if (isAbort(e)) return;
      this.details.error(messageOf(e));
    }
  }

  private showEventDetails(d: EventDetails): void {
    this.details.showEvent(d, this.timeOf);
    const arrows: PinnedFlow[] = [];
    for (const f of d.flows_out ?? []) {
      arrows.push({ srcTrack: d.track, srcDepth: d.depth, srcNs: d.start_ns, dstTrack: f.track, dstDepth: 0, dstNs: f.start_ns, otherId: f.id, otherEnd: "dst", resolved: false });
    }
    for (const f of d.flows_in ?? []) {
      arrows.push({ srcTrack: f.track, srcDepth: 0, srcNs: f.start_ns, dstTrack: d.track, dstDepth: d.depth, dstNs: d.start_ns, otherId: f.id, otherEnd: "src", resolved: false });
    }
    this.pinnedFlows = arrows;
  }

  /** The linked ends of the selected event's flows come without their depth row: find it in the
   * tiles on screen as soon as one shows that event (row 0 until then). */
  private resolvePinnedFlows(): void {
    const pending = this.pinnedFlows.filter((f) => !f.resolved);
    if (!pending.length || !this.plan) return;
    for (const p of this.plan.pieces) {
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

  private async showSelectionSummary(): Promise<void> {
    const s = this.selection;
    if (s.kind !== "events") return;
    const abort = this.newDetailsAbort();
    this.details.loading(`Summarizing ${s.events.length} events…`);
    try {
      const resp = await this.ctx.client.summaryIds(this.ctx.subject, s.events.map((e) => e.id), abort.signal);
      if (abort.signal.aborted) return;
      const span = this.selectionSpan();
      this.details.showSummary(
        `${s.events.length} selected events`,
        span ? `spanning ${formatDuration(span.end - span.start)}` : "",
        resp,
      );
    } catch (e) {
      if (!isAbort(e)) this.details.error(messageOf(e));
    }
  }

  /** Selects a time range on tracks and shows their summary; `stepNs` is how exact the range's ends
   * are (a pixel when dragged), so its start is not shown with digits it does not have. */
  private async selectRange(start: number, end: number, tracks: number[], stepNs = 1): Promise<void> {
    this.selection = { kind: "range", start, end, tracks };
    this.pinnedFlows = [];
    this.requestDraw();
    const abort = this.newDetailsAbort();
    this.details.loading("Summarizing the range…");
    try {
      const resp = await this.ctx.client.summaryRange(this.ctx.subject, start, end, tracks, abort.signal);
      if (abort.signal.aborted) return;
      this.details.showSummary(
        "Range selection",
        `${formatDuration(end - start)} from ${formatTimestamp(start, stepNs, start)} on ${tracks.length} track${tracks.length === 1 ? "" : "s"}`,
        resp,
      );
    } catch (e) {
      if (!isAbort(e)) this.details.error(messageOf(e));
    }
  }

  private clickEvent(hit: EventHit | null, additive: boolean): void {
    if (!additive) {
      if (!hit) {
        this.clearSelection();
        return;
      }
      this.selection = { kind: "events", events: [{ id: hit.id, track: hit.track, depth: hit.depth, startNs: hit.startNs, durNs: hit.durNs }] };
      this.requestDraw();
      void this.jumpTo(hit.id, { select: true, zoom: false });
      return;
    }
    if (!hit) return;
    const current = this.selection.kind === "events" ? this.selection.events : [];
    const without = current.filter((e) => e.id !== hit.id);
    const events = without.length < current.length ? without : [...current, { id: hit.id, track: hit.track, depth: hit.depth, startNs: hit.startNs, durNs: hit.durNs }];
    this.selection = events.length ? { kind: "events", events } : { kind: "none" };
    this.pinnedFlows = [];
    this.requestDraw();
    if (events.length === 1) void this.jumpTo(events[0].id, { select: true, zoom: false });
    else if (events.length) void this.showSelectionSummary();
    else this.details.hint();
  }

  /** The event under canvas point (x, y). */
  hitAt(x: number, y: number): EventHit | null {
    if (!this.layout || !this.plan || x < LABEL_WIDTH) return null;
    const row = this.layout.rowAt(y + this.scroller.scrollTop);
    if (!row || row.kind !== "track" || row.track.isCounter) return null;
    const proj = this.projection();
    return hitTest(this.plan.pieces, row.track.track.id, row.depth, proj.ns(x), 3 * proj.nsPerPx, (t) =>
      (this.layout as Layout).hostOfTrack(t),
    );
  }

  // ---- search --------------------------------------------------------------------------------

  private async searchStep(dir: 1 | -1): Promise<void> {
    const query = this.searchInput.value.trim();
    if (!query) {
      this.searchAbort?.abort();
      this.search = null;
      this.searchCount.textContent = "";
      return;
    }
    if (!this.search || this.search.query !== query) {
      const resp = await this.searchPage(query, 0);
      if (!resp) return;
      this.search = { query, resp, index: -1 };
    }
    const search = this.search;
    const index = stepIndex(search.index, dir, search.resp.total);
    if (index < 0) {
      this.searchCount.textContent = "no matches";
      return;
    }
    if (!inPage(index, search.resp.offset, search.resp.matches.length)) {
      const resp = await this.searchPage(query, pageOffset(index, SEARCH_LIMIT));
      if (!resp || this.search !== search) return;
      search.resp = resp;
    }
    const match = search.resp.matches[index - search.resp.offset];
    if (!match) {
      // The trace changed under the search (a re-ingest): start over with the new matches.
      this.search = null;
      this.searchCount.textContent = "matches changed, press Enter again";
      return;
    }
    search.index = index;
    this.searchCount.textContent = `${formatCount(index + 1)} / ${formatCount(search.resp.total)}`;
    await this.jumpTo(match.id, { select: true, zoom: true });
  }

  /** One page of matches; null when it was superseded by a newer request or failed (the count says why). */
  private async searchPage(query: string, offset: number): Promise<SearchResponse | null> {
    this.searchAbort?.abort();
    const abort = (this.searchAbort = new AbortController());
    this.searchCount.textContent = "searching…";
    try {
      const resp = await this.ctx.client.search(this.ctx.subject, query, SEARCH_LIMIT, offset, abort.signal);
      return abort.signal.aborted ? null : resp;
    } catch (e) {
      if (!isAbort(e)) this.searchCount.textContent = messageOf(e);
      return null;
    }
  }

  // ---- input ---------------------------------------------------------------------------------

  setTool(tool: Tool): void {
    this.tool = tool;
    for (const [id, b] of this.toolButtons) {
      b.classList.toggle("active", id === tool);
      b.setAttribute("aria-checked", id === tool ? "true" : "false");
    }
    this.canvas.dataset.tool = tool;
  }

  private toggleHelp(show?: boolean): void {
    this.help.hidden = show === undefined ? !this.help.hidden : !show;
    if (this.help.hidden) this.el.focus();
  }

  /** Shown on screen: our tab is active and, inside TensorBoard, the plugin iframe is displayed. */
  private visible(): boolean {
    if (this.destroyed || !this.el.isConnected || this.el.closest("[hidden]")) return false;
    try {
      const frame = window.frameElement;
      if (frame && frame.getClientRects().length === 0) return false;
    } catch {
      // Cross-origin parent: our own document is all we can see.
    }
    return true;
  }

  private listen<K extends keyof DocumentEventMap>(target: Document | Window, type: K, fn: (e: DocumentEventMap[K]) => void, opts?: AddEventListenerOptions): void {
    target.addEventListener(type, fn as EventListener, opts);
    this.cleanups.push(() => target.removeEventListener(type, fn as EventListener, opts));
  }

  /** This frame's document and, inside TensorBoard, the top document: keys typed while the focus is
   * still on TensorBoard's page (before any click into the plugin) must reach the viewer too. */
  private keyDocuments(): Document[] {
    const docs = [document];
    try {
      const top = window.top;
      if (top && top !== window && top.document) docs.push(top.document);
    } catch {
      // Cross-origin top window: only our own frame's keys.
    }
    return docs;
  }

  private bindInput(): void {
    for (const doc of this.keyDocuments()) {
      this.listen(doc, "keydown", (e) => this.onKeyDown(e));
      this.listen(doc, "keyup", (e) => {
        this.held.delete(e.key.toLowerCase());
        if (e.code === "ArrowLeft") this.held.delete("a");
        if (e.code === "ArrowRight") this.held.delete("d");
      });
      if (doc.defaultView) this.listen(doc.defaultView, "blur", () => this.held.clear());
    }
    this.scroller.addEventListener("scroll", () => this.requestDraw(), { passive: true });
    this.scroller.addEventListener("wheel", (e) => this.onWheel(e), { passive: false });
    this.canvas.addEventListener("pointerdown", (e) => this.onPointerDown(e));
    this.canvas.addEventListener("pointermove", (e) => this.onPointerMove(e));
    this.canvas.addEventListener("pointerup", (e) => this.onPointerUp(e));
    this.canvas.addEventListener("pointerleave", () => {
      if (!this.drag) {
        this.mouse = null;
        this.tooltip.hidden = true;
        this.requestDraw();
      }
    });
    this.canvas.addEventListener("dblclick", (e) => {
      const p = this.canvasPoint(e);
      const hit = this.hitAt(p.x, p.y);
      if (hit) this.setRange(fitRange(hit.startNs, hit.startNs + hit.durNs, this.limits));
    });
  }

  private onKeyDown(e: KeyboardEvent): void {
    if (!this.visible() || !this.meta) return;
    const target = e.target as HTMLElement | null;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT" || target.isContentEditable)) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const key = e.key;
    const lower = key.toLowerCase();
    const nav = lower === "w" || lower === "s" || lower === "a" || lower === "d";
    const arrow = e.code === "ArrowLeft" ? "a" : e.code === "ArrowRight" ? "d" : null;
    if (nav || arrow) {
      e.preventDefault();
      const k = arrow ?? lower;
      if (!this.held.has(k)) {
        this.held.set(k, performance.now());
        // A tap moves a visible step even if the key is released before the next frame.
        if (k === "w" || k === "s") this.range = zoomAround(this.range, this.anchorNs(), k === "w" ? 1.25 : 0.8, this.limits);
        else this.range = panBy(this.range, k === "d" ? 0.05 : -0.05, this.limits);
        this.requestDraw();
      }
      return;
    }
    const tool = TOOLS.find((t) => key === t.key || key === t.shifted || e.code === `Digit${t.key}`);
    if (tool && key !== "?") {
      e.preventDefault();
      this.setTool(tool.id);
      return;
    }
    switch (key) {
      case "?":
        e.preventDefault();
        this.toggleHelp();
        return;
      case "Escape":
        if (!this.help.hidden) {
          this.toggleHelp(false);
          return;
        }
        this.drag = null;
        this.marks = [];
        this.clearSelection();
        return;
      case "f":
      case "F":
        e.preventDefault();
        this.zoomToSelection();
        return;
      case "m":
      case "M": {
        e.preventDefault();
        const span = this.selectionSpan();
        if (span) {
          this.marks = [...this.marks.slice(-7), { ...span, stepNs: 1 }];
          this.requestDraw();
        }
        return;
      }
      case "0":
        e.preventDefault();
        this.setRange({ start: this.limits.spanStart, end: this.limits.spanEnd });
        return;
      case "/":
        e.preventDefault();
        this.searchInput.focus();
        this.searchInput.select();
        return;
    }
  }

  private onWheel(e: WheelEvent): void {
    if (!this.meta) return;
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.height : 1;
    const dx = e.deltaX * unit;
    const dy = e.deltaY * unit;
    if (e.ctrlKey || e.metaKey || e.altKey) {
      e.preventDefault();
      const p = this.canvasPoint(e);
      const proj = this.projection();
      const anchor = p.x >= LABEL_WIDTH ? proj.ns(p.x) : (this.range.start + this.range.end) / 2;
      this.setRange(zoomAround(this.range, anchor, Math.exp(-dy * 0.0025), this.limits));
      return;
    }
    const horizontal = e.shiftKey ? dx || dy : Math.abs(dx) > Math.abs(dy) ? dx : 0;
    if (horizontal) {
      e.preventDefault();
      this.setRange(panBy(this.range, horizontal / Math.max(1, this.width - LABEL_WIDTH), this.limits));
    }
  }

  private canvasPoint(e: MouseEvent): { x: number; y: number } {
    const r = this.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  private onPointerDown(e: PointerEvent): void {
    if (!this.layout || (e.button !== 0 && e.button !== 1)) return;
    this.el.focus({ preventScroll: true });
    const p = this.canvasPoint(e);
    const row = this.layout.rowAt(p.y + this.scroller.scrollTop);
    const tool: Tool = e.button === 1 ? "pan" : this.tool;
    this.drag = {
      tool,
      onHeader: row?.kind === "section" && e.button === 0,
      x0: p.x,
      y0: p.y,
      cy0: p.y + this.scroller.scrollTop,
      x: p.x,
      y: p.y,
      moved: false,
      range0: { ...this.range },
      scroll0: this.scroller.scrollTop,
      additive: e.ctrlKey || e.metaKey,
    };
    this.canvas.setPointerCapture(e.pointerId);
    if (tool === "pan") this.canvas.classList.add("grabbing");
    e.preventDefault();
  }

  private onPointerMove(e: PointerEvent): void {
    const p = this.canvasPoint(e);
    this.mouse = p;
    const d = this.drag;
    if (d) {
      d.x = p.x;
      d.y = p.y;
      if (Math.abs(p.x - d.x0) > DRAG_THRESHOLD_PX || Math.abs(p.y - d.y0) > DRAG_THRESHOLD_PX) d.moved = true;
      if (d.moved && d.tool === "pan") {
        const nsPerPx = (d.range0.end - d.range0.start) / Math.max(1, this.width - LABEL_WIDTH);
        const shift = -(p.x - d.x0) * nsPerPx;
        this.range = clampRange({ start: d.range0.start + shift, end: d.range0.end + shift }, this.limits);
        this.scroller.scrollTop = d.scroll0 - (p.y - d.y0);
      }
      this.tooltip.hidden = true;
      this.requestDraw();
      return;
    }
    this.updateHover(p, e);
    this.requestDraw();
  }

  private updateHover(p: { x: number; y: number }, e: PointerEvent): void {
    const hit = this.hitAt(p.x, p.y);
    const row = this.layout?.rowAt(p.y + this.scroller.scrollTop);
    this.canvas.classList.toggle("over-event", !!hit);
    this.canvas.classList.toggle("over-header", row?.kind === "section");
    const overTrack = !hit && row?.kind === "track" && this.plan && p.x >= LABEL_WIDTH ? row.track : null;
    const t = this.projection().ns(p.x);
    const summary = overTrack && !overTrack.isCounter && this.plan ? summaryAt(this.plan.pieces, overTrack.track.id, row?.kind === "track" ? row.depth : 0, t) : null;
    const counter = overTrack?.isCounter && this.plan ? counterAt(this.plan.pieces, overTrack.track.id, t) : null;
    if (!hit && !summary && !counter) {
      this.tooltip.hidden = true;
      return;
    }
    clear(this.tooltip);
    if (hit) {
      this.tooltip.append(
        h("b", {}, hit.name),
        h("div", {}, hit.durNs === 0 ? "instant" : formatDuration(hit.durNs)),
        h("div", { class: "tv-hint" }, `${this.trackLabel(hit.track)} · at ${this.timeOf(hit.startNs)}`),
      );
    } else if (counter && overTrack) {
      const range = counter.min === counter.max ? "" : ` (${formatNumber(counter.min)} – ${formatNumber(counter.max)} within this pixel)`;
      this.tooltip.append(
        h("b", {}, overTrack.track.name),
        h("div", {}, `${formatNumber(counter.last)}${range}`),
        h("div", { class: "tv-hint" }, `sample at ${this.timeOf(counter.startNs)}`),
      );
    } else if (summary) {
      const busy = summary.widthNs > 0 ? Math.min(100, (100 * summary.busyNs) / summary.widthNs) : 100;
      this.tooltip.append(
        h("b", {}, `${formatCount(summary.count)} event${summary.count === 1 ? "" : "s"} narrower than a pixel`),
        h("div", {}, `busy ${formatDuration(summary.busyNs)} of ${formatDuration(summary.widthNs)} (${busy.toFixed(0)}%)`),
        h("div", { class: "tv-hint" }, "Zoom in (W) to see them one by one"),
      );
    }
    this.tooltip.hidden = false;
    this.tooltipFor = { start: this.range.start, end: this.range.end, scroll: this.scroller.scrollTop };
    const box = this.el.getBoundingClientRect();
    const x = Math.min(e.clientX - box.left + 14, box.width - 320);
    this.tooltip.style.left = `${Math.max(0, x)}px`;
    this.tooltip.style.top = `${e.clientY - box.top + 16}px`;
  }

  private onPointerUp(e: PointerEvent): void {
    const d = this.drag;
    this.drag = null;
    this.canvas.classList.remove("grabbing");
    if (!d || !this.layout) return;
    const p = this.canvasPoint(e);
    if (!d.moved) {
      const row = d.onHeader ? this.layout.rowAt(d.cy0) : null;
      if (row?.kind === "section") {
        const id = row.section.section.id;
        if (this.collapsed.has(id)) this.collapsed.delete(id);
        else this.collapsed.add(id);
        this.relayout();
      } else {
        this.clickEvent(this.hitAt(p.x, p.y), d.additive);
      }
      return;
    }
    const { start: a, end: b } = this.dragSpan(d, p.x);
    if (d.tool === "zoom" && b > a) this.setRange({ start: a, end: b });
    else if (d.tool === "timing" && b > a) {
      this.marks = [...this.marks.slice(-7), { start: a, end: b, stepNs: this.projection().nsPerPx }];
    } else if (d.tool === "select" && b > a) {
      const tracks = this.layout.tracksBetween(d.cy0, p.y + this.scroller.scrollTop);
      if (tracks.length) void this.selectRange(a, b, tracks, this.projection().nsPerPx);
    }
    this.requestDraw();
  }

  // ---- lifecycle -----------------------------------------------------------------------------

  show(): void {
    this.resize();
  }

  destroy(): void {
    this.destroyed = true;
    this.resizeObserver.disconnect();
    for (const c of this.cleanups) c();
    if (this.fetchTimer) clearTimeout(this.fetchTimer);
    if (this.linkTimer) clearTimeout(this.linkTimer);
    this.searchAbort?.abort();
    this.detailsAbort?.abort();
    this.cache.clear();
  }
}
