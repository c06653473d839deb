// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from "vitest";
import { makeTrace } from "../../../test/mock/trace.ts";
import { type KeyActions, KeyboardInput } from "./keyboard.ts";
import { LABEL_WIDTH } from "./render.ts";
import { Timeline } from "./timeline.ts";

const meta = makeTrace(4, 5).meta;
let keyboard: KeyboardInput | null = null;

afterEach(() => keyboard?.stop());

function setup(pointerX: number | null = null) {
  const tl = new Timeline({ redraw: () => {}, relayout: () => {} });
  tl.width = LABEL_WIDTH + 1000;
  tl.height = 300;
  tl.open(meta, []);
  tl.setRange({ start: 10_000, end: 20_000 });
  const calls: string[] = [];
  let helpOpen = false;
  const actions: KeyActions = {
    ready: () => true,
    redraw: () => calls.push("redraw"),
    setTool: (t) => calls.push(`tool ${t}`),
    toggleHelp: () => {
      helpOpen = !helpOpen;
      calls.push("help");
    },
    closeHelp: () => {
      const was = helpOpen;
      helpOpen = false;
      return was;
    },
    clearAll: () => calls.push("clear"),
    zoomToSelection: () => calls.push("fit"),
    markSelection: () => calls.push("mark"),
    wholeTrace: () => calls.push("whole"),
    focusSearch: () => calls.push("find"),
    searchStep: (dir) => calls.push(dir === 1 ? "next" : "prev"),
    zoomToActivity: () => calls.push("activity"),
    toggleTracks: () => calls.push("tracks"),
  };
  keyboard = new KeyboardInput(tl, () => pointerX, actions);
  const down = (key: string, init: KeyboardEventInit = {}, target: EventTarget = document) =>
    target.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true, ...init }));
  const up = (key: string, init: KeyboardEventInit = {}) => document.dispatchEvent(new KeyboardEvent("keyup", { key, ...init }));
  return { tl, calls, down, up, kb: keyboard };
}

describe("KeyboardInput", () => {
  it("zooms a step around the pointer on a tap of W, out on S", () => {
    const { tl, down, up } = setup(LABEL_WIDTH + 250);
    down("w");
    up("w");
    expect(tl.range.end - tl.range.start).toBeCloseTo(8000);
    expect(tl.range.start).toBeCloseTo(12_500 - 0.25 * 8000);
    down("s");
    up("s");
    expect(tl.range.end - tl.range.start).toBeCloseTo(10_000);
  });

  it("pans a step on A / D and on the arrows", () => {
    const { tl, down, up } = setup();
    down("d");
    up("d");
    expect(tl.range.start).toBeCloseTo(10_500);
    down("ArrowLeft", { code: "ArrowLeft" });
    up("ArrowLeft", { code: "ArrowLeft" });
    expect(tl.range.start).toBeCloseTo(10_000);
  });

  it("keeps moving while a key is held, faster the longer, and stops when it is up", () => {
    const { tl, down, up, kb } = setup();
    down("d");
    expect(kb.moving).toBe(true);
    const before = tl.range.start;
    expect(kb.animate(performance.now(), 100)).toBe(true);
    const slow = tl.range.start - before;
    kb.animate(performance.now() + 1500, 100);
    const fast = tl.range.start - before - slow;
    expect(slow).toBeGreaterThan(0);
    expect(fast).toBeGreaterThan(2 * slow);
    up("D");
    expect(kb.moving).toBe(false);
    expect(kb.animate(performance.now(), 100)).toBe(false);
  });

  it("maps the shortcut keys to their actions", () => {
    const { calls, down } = setup();
    for (const k of ["2", "#", "f", "M", "0", "/"]) down(k);
    expect(calls).toEqual(["tool pan", "tool zoom", "fit", "mark", "whole", "find"]);
  });

  it("zooms to activity on Z, opens the tracks on T and walks the search on Enter (not a button's)", () => {
    const { calls, down } = setup();
    for (const k of ["z", "T", "Enter"]) down(k);
    down("Enter", { shiftKey: true });
    down("Enter", {}, document.body.appendChild(document.createElement("button")));
    expect(calls).toEqual(["activity", "tracks", "next", "prev"]);
  });

  it("closes the help on Esc before it clears anything", () => {
    const { calls, down } = setup();
    down("?");
    down("Escape");
    expect(calls).toEqual(["help"]);
    down("Escape");
    expect(calls).toEqual(["help", "clear"]);
  });

  it("leaves keys typed in a text field or with a modifier alone", () => {
    const { tl, calls, down } = setup();
    const input = document.body.appendChild(document.createElement("input"));
    down("w", {}, input);
    down("1", { ctrlKey: true });
    expect(calls).toEqual([]);
    expect(tl.range).toEqual({ start: 10_000, end: 20_000 });
    input.remove();
  });
});
