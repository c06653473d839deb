// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { makeTrace } from "../../../test/mock/trace.ts";
import { LABEL_WIDTH } from "./render.ts";
import { Timeline } from "./timeline.ts";
import { HoverTooltip } from "./tooltip.ts";

function setup() {
  const tl = new Timeline({ redraw: () => {}, relayout: () => {} });
  tl.width = LABEL_WIDTH + 1000;
  tl.height = 300;
  tl.open(makeTrace(2, 2).meta, []);
  const tip = new HoverTooltip(tl, () => new DOMRect(0, 0, 1200, 400));
  return { tl, tip };
}

describe("HoverTooltip", () => {
  it("tells the event under the pointer, next to it", () => {
    const { tip } = setup();
    const hit = { id: 3, name: "volta_sgemm", track: 2, depth: 0, startNs: 2_500_000, durNs: 12_345 };
    tip.hover(LABEL_WIDTH + 10, null, hit, 400, 120, 0);
    expect(tip.el.hidden).toBe(false);
    expect(tip.el.textContent).toBe("volta_sgemm12.35 µsGPU 0 / stream 7 · at 2.500000 ms");
    expect(tip.el.style.left).toBe("414px");
    expect(tip.el.style.top).toBe("136px");
  });

  it("hides when there is nothing to tell, and as soon as the view moves", () => {
    const { tl, tip } = setup();
    tip.hover(LABEL_WIDTH + 10, null, { id: 1, name: "k", track: 0, depth: 0, startNs: 0, durNs: 0 }, 10, 10, 0);
    expect(tip.el.textContent).toContain("instant");
    tip.hideIfMoved(0);
    expect(tip.el.hidden).toBe(false);
    tl.setRange({ start: 5, end: 500 });
    tip.hideIfMoved(0);
    expect(tip.el.hidden).toBe(true);
    tip.hover(LABEL_WIDTH + 10, null, null, 10, 10, 0);
    expect(tip.el.hidden).toBe(true);
  });
});
