/** The mouse on the timeline, like chrome://tracing: a drag does what the current tool does (select
 * a range, pan, zoom to a range, measure), a click selects, a middle drag always pans, a double click
 * fits an event; the wheel scrolls tracks, pans sideways and zooms with Ctrl / ⌘ / Alt. */

import { type ColoredRange, MARK_COLOR, type Mark, RANGE_COLOR } from "./measure.ts";
import { LABEL_WIDTH } from "./render.ts";
import type { EventHit } from "./scene.ts";
import type { Timeline } from "./timeline.ts";
import type { Tool } from "./tools.ts";
import type { HoverTooltip } from "./tooltip.ts";
import { clampRange, dragRange, fitRange, panBy, type Range, zoomAround } from "./viewport.ts";

/** A press moves this far before it is a drag rather than a click. */
const DRAG_THRESHOLD_PX = 4;

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

export interface MouseActions {
  /** A press on the timeline takes the keyboard focus. */
  focus(): void;
  redraw(): void;
  click(hit: EventHit | null, additive: boolean): void;
  addMark(mark: Mark): void;
  selectRange(start: number, end: number, tracks: number[], stepNs: number): void;
}

export class MouseInput {
  tool: Tool = "select";
  private drag: Drag | null = null;
  /** The pointer over the canvas, canvas px. */
  private pointer: { x: number; y: number } | null = null;

  constructor(
    private readonly timeline: Timeline,
    private readonly canvas: HTMLCanvasElement,
    private readonly scroller: HTMLElement,
    private readonly tooltip: HoverTooltip,
    private readonly actions: MouseActions,
  ) {
    scroller.addEventListener("scroll", () => actions.redraw(), { passive: true });
    scroller.addEventListener("wheel", (e) => this.onWheel(e), { passive: false });
    canvas.addEventListener("pointerdown", (e) => this.onPointerDown(e));
    canvas.addEventListener("pointermove", (e) => this.onPointerMove(e));
    canvas.addEventListener("pointerup", (e) => this.onPointerUp(e));
    canvas.addEventListener("pointerleave", () => {
      if (!this.drag) {
        this.pointer = null;
        this.tooltip.hide();
        actions.redraw();
      }
    });
    canvas.addEventListener("dblclick", (e) => {
      const p = this.canvasPoint(e);
      const hit = this.hitAt(p);
      if (hit) timeline.setRange(fitRange(hit.startNs, hit.startNs + hit.durNs, timeline.limits));
    });
  }

  /** The pointer's canvas x, null when it is off the canvas. */
  get pointerX(): number | null {
    return this.pointer ? this.pointer.x : null;
  }

  /** Where the cursor line is drawn: at the pointer, but not during a drag. */
  cursorX(): number | null {
    return this.pointer && !this.drag ? this.pointer.x : null;
  }

  /** Esc: the drag under way does nothing when released. */
  cancelDrag(): void {
    this.drag = null;
  }

  /** The Select tool's rubber band in canvas px, while it is dragged. */
  band(scrollY: number): { x0: number; y0: number; x1: number; y1: number } | null {
    const d = this.drag;
    if (!d || !d.moved || d.tool !== "select") return null;
    return { x0: Math.max(LABEL_WIDTH, d.x0), y0: d.cy0 - scrollY, x1: Math.max(LABEL_WIDTH, d.x), y1: d.y };
  }

  /** The range a Zoom or Timing drag spans, while it is dragged. */
  draggedRange(): ColoredRange | null {
    const d = this.drag;
    if (!d || !d.moved || (d.tool !== "zoom" && d.tool !== "timing")) return null;
    return { ...this.dragSpan(d, d.x), color: d.tool === "zoom" ? RANGE_COLOR : MARK_COLOR };
  }

  /** The Timing drag as a measurement, while it lasts. */
  liveMeasure(): Mark | null {
    const d = this.drag;
    return d && d.moved && d.tool === "timing" ? { ...this.dragSpan(d, d.x), stepNs: this.timeline.projection().nsPerPx } : null;
  }

  private canvasPoint(e: MouseEvent): { x: number; y: number } {
    const r = this.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  private hitAt(p: { x: number; y: number }): EventHit | null {
    return this.timeline.hitAt(p.x, p.y + this.scroller.scrollTop);
  }

  private dragSpan(d: Drag, x: number): Range {
    return dragRange(this.timeline.projection(), d.x0, x, LABEL_WIDTH, this.timeline.width);
  }

  private onWheel(e: WheelEvent): void {
    const tl = this.timeline;
    if (!tl.meta) return;
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? tl.height : 1;
    const dx = e.deltaX * unit;
    const dy = e.deltaY * unit;
    if (e.ctrlKey || e.metaKey || e.altKey) {
      e.preventDefault();
      const p = this.canvasPoint(e);
      const anchor = p.x >= LABEL_WIDTH ? tl.projection().ns(p.x) : (tl.range.start + tl.range.end) / 2;
      tl.setRange(zoomAround(tl.range, anchor, Math.exp(-dy * 0.0025), tl.limits));
      return;
    }
    const horizontal = e.shiftKey ? dx || dy : Math.abs(dx) > Math.abs(dy) ? dx : 0;
    if (horizontal) {
      e.preventDefault();
      tl.setRange(panBy(tl.range, horizontal / Math.max(1, tl.width - LABEL_WIDTH), tl.limits));
    }
  }

  private onPointerDown(e: PointerEvent): void {
    const layout = this.timeline.layout;
    if (!layout || (e.button !== 0 && e.button !== 1)) return;
    this.actions.focus();
    const p = this.canvasPoint(e);
    const row = layout.rowAt(p.y + this.scroller.scrollTop);
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
      range0: { ...this.timeline.range },
      scroll0: this.scroller.scrollTop,
      additive: e.ctrlKey || e.metaKey,
    };
    this.canvas.setPointerCapture(e.pointerId);
    if (tool === "pan") this.canvas.classList.add("grabbing");
    e.preventDefault();
  }

  private onPointerMove(e: PointerEvent): void {
    const p = this.canvasPoint(e);
    this.pointer = p;
    const d = this.drag;
    if (d) {
      d.x = p.x;
      d.y = p.y;
      if (Math.abs(p.x - d.x0) > DRAG_THRESHOLD_PX || Math.abs(p.y - d.y0) > DRAG_THRESHOLD_PX) d.moved = true;
      if (d.moved && d.tool === "pan") {
        const tl = this.timeline;
        const nsPerPx = (d.range0.end - d.range0.start) / Math.max(1, tl.width - LABEL_WIDTH);
        const shift = -(p.x - d.x0) * nsPerPx;
        tl.range = clampRange({ start: d.range0.start + shift, end: d.range0.end + shift }, tl.limits);
        this.scroller.scrollTop = d.scroll0 - (p.y - d.y0);
      }
      this.tooltip.hide();
      this.actions.redraw();
      return;
    }
    this.updateHover(p, e);
    this.actions.redraw();
  }

  private updateHover(p: { x: number; y: number }, e: PointerEvent): void {
    const hit = this.hitAt(p);
    const row = this.timeline.layout?.rowAt(p.y + this.scroller.scrollTop);
    this.canvas.classList.toggle("over-event", !!hit);
    this.canvas.classList.toggle("over-header", row?.kind === "section");
    this.tooltip.hover(p.x, row, hit, e.clientX, e.clientY, this.scroller.scrollTop);
  }

  private onPointerUp(e: PointerEvent): void {
    const d = this.drag;
    this.drag = null;
    this.canvas.classList.remove("grabbing");
    const layout = this.timeline.layout;
    if (!d || !layout) return;
    const p = this.canvasPoint(e);
    if (!d.moved) {
      const row = d.onHeader ? layout.rowAt(d.cy0) : null;
      if (row?.kind === "section") this.timeline.toggleSection(row.section.section.id);
      else this.actions.click(this.hitAt(p), d.additive);
      return;
    }
    const { start: a, end: b } = this.dragSpan(d, p.x);
    const stepNs = this.timeline.projection().nsPerPx;
    if (d.tool === "zoom" && b > a) this.timeline.setRange({ start: a, end: b });
    else if (d.tool === "timing" && b > a) this.actions.addMark({ start: a, end: b, stepNs });
    else if (d.tool === "select" && b > a) {
      const tracks = layout.tracksBetween(d.cy0, p.y + this.scroller.scrollTop);
      if (tracks.length) this.actions.selectRange(a, b, tracks, stepNs);
    }
    this.actions.redraw();
  }
}
