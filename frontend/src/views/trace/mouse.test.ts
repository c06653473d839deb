// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { makeTrace } from "../../../test/mock/trace.ts";
import { MARK_COLOR, type Mark, RANGE_COLOR } from "./measure.ts";
import { MouseInput } from "./mouse.ts";
import { LABEL_WIDTH } from "./render.ts";
import { Timeline } from "./timeline.ts";
import { HoverTooltip } from "./tooltip.ts";

const meta = makeTrace(4, 5).meta;

/** A timeline 1000 px wide at 10 ns per px over [10 µs, 20 µs]; the canvas sits at the client origin. */
function setup() {
  const tl = new Timeline({ redraw: () => {}, relayout: () => {} });
  tl.width = LABEL_WIDTH + 1000;
  tl.height = 300;
  tl.open(meta, []);
  tl.setRange({ start: 10_000, end: 20_000 });
  const canvas = document.createElement("canvas");
  canvas.setPointerCapture = () => {};
  const scroller = document.createElement("div");
  const tooltip = new HoverTooltip(tl, () => new DOMRect(0, 0, 1200, 400));
  const log = { marks: [] as Mark[], ranges: [] as [number, number, number[], number][], clicks: 0, focused: 0 };
  const mouse = new MouseInput(tl, canvas, scroller, tooltip, {
    focus: () => log.focused++,
    redraw: () => {},
    click: () => log.clicks++,
    addMark: (m) => log.marks.push(m),
    selectRange: (start, end, tracks, stepNs) => log.ranges.push([start, end, tracks, stepNs]),
  });
  const pointer = (type: string, x: number, y: number, init: PointerEventInit = {}) =>
    canvas.dispatchEvent(new PointerEvent(type, { clientX: x, clientY: y, button: 0, pointerId: 1, bubbles: true, cancelable: true, ...init }));
  const drag = (x0: number, y0: number, x1: number, y1: number, init: PointerEventInit = {}) => {
    pointer("pointerdown", x0, y0, init);
    pointer("pointermove", x1, y1, init);
  };
  return { tl, mouse, canvas, scroller, log, pointer, drag };
}

const X = (ns: number) => LABEL_WIDTH + (ns - 10_000) / 10;

describe("MouseInput", () => {
  it("measures a Timing drag, live while dragged and as a mark when released", () => {
    const { mouse, log, pointer, drag } = setup();
    mouse.tool = "timing";
    drag(X(12_000), 50, X(15_000), 60);
    expect(mouse.liveMeasure()).toEqual({ start: 12_000, end: 15_000, stepNs: 10 });
    expect(mouse.draggedRange()).toEqual({ start: 12_000, end: 15_000, color: MARK_COLOR });
    expect(mouse.cursorX()).toBeNull();
    pointer("pointerup", X(15_000), 60);
    expect(log.marks).toEqual([{ start: 12_000, end: 15_000, stepNs: 10 }]);
    expect(mouse.liveMeasure()).toBeNull();
    expect(log.focused).toBe(1);
  });

  it("zooms to a Zoom drag, its range drawn meanwhile", () => {
    const { tl, mouse, pointer, drag } = setup();
    mouse.tool = "zoom";
    drag(X(16_000), 50, X(11_000), 50);
    expect(mouse.draggedRange()?.color).toBe(RANGE_COLOR);
    pointer("pointerup", X(11_000), 50);
    expect(tl.range).toEqual({ start: 11_000, end: 16_000 });
  });

  it("summarizes the tracks under a Select drag, with its rubber band drawn meanwhile", () => {
    const { mouse, log, pointer, drag } = setup();
    drag(X(12_000), 30, X(13_000), 140);
    expect(mouse.band(0)).toEqual({ x0: X(12_000), y0: 30, x1: X(13_000), y1: 140 });
    pointer("pointerup", X(13_000), 140);
    expect(log.ranges).toEqual([[12_000, 13_000, [0, 1, 2], 10]]);
  });

  it("pans with a middle drag whatever the tool, and scrolls along", () => {
    const { tl, mouse, scroller, pointer, drag } = setup();
    mouse.tool = "zoom";
    scroller.scrollTop = 0;
    drag(X(15_000), 100, X(14_000), 100, { button: 1 });
    expect(tl.range).toEqual({ start: 11_000, end: 21_000 });
    pointer("pointerup", X(14_000), 100, { button: 1 });
    expect(mouse.draggedRange()).toBeNull();
  });

  it("folds a section on a click on its header, and hands other clicks on", () => {
    const { tl, log, pointer } = setup();
    pointer("pointerdown", X(12_000), 5);
    pointer("pointerup", X(12_000), 5);
    expect(tl.collapsed.has(0)).toBe(true);
    pointer("pointerdown", X(12_000), 150);
    pointer("pointerup", X(12_001), 151);
    expect(log.clicks).toBe(1);
  });

  it("zooms with Ctrl + wheel around the pointer and pans with Shift + wheel", () => {
    const { tl, scroller } = setup();
    // happy-dom's WheelEvent leaves out the MouseEvent fields (modifiers, position): set them.
    const wheel = (init: WheelEventInit) => {
      const e = new WheelEvent("wheel", { cancelable: true, ...init });
      for (const k of ["shiftKey", "ctrlKey", "clientX", "clientY"] as const) Object.defineProperty(e, k, { value: init[k] ?? (k.endsWith("Key") ? false : 0) });
      scroller.dispatchEvent(e);
    };
    wheel({ deltaY: 100, shiftKey: true });
    expect(tl.range).toEqual({ start: 11_000, end: 21_000 });
    const px = LABEL_WIDTH + 600;
    const under = tl.projection().ns(px);
    wheel({ deltaY: -100, ctrlKey: true, clientX: px });
    expect(tl.range.end - tl.range.start).toBeCloseTo(10_000 / Math.exp(0.25));
    expect(tl.projection().ns(px)).toBeCloseTo(under);
  });
});
