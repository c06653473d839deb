import { describe, expect, it } from "vitest";
import { makeTrace } from "../../../test/mock/trace.ts";
import type { Layout } from "./layout.ts";
import { LABEL_WIDTH } from "./render.ts";
import { bringIntoView, Timeline } from "./timeline.ts";

const meta = makeTrace(2, 3).meta;

function opened(collapsed: number[] = []) {
  const calls = { redraw: 0, layouts: [] as Layout[] };
  const tl = new Timeline({ redraw: () => calls.redraw++, relayout: (l) => calls.layouts.push(l) });
  tl.width = LABEL_WIDTH + 1000;
  tl.height = 100;
  tl.open(meta, collapsed);
  return { tl, calls };
}

describe("Timeline", () => {
  it("opens on the whole trace with the given sections folded", () => {
    const { tl, calls } = opened([0]);
    expect(tl.range).toEqual({ start: 0, end: meta.span_ns[1] });
    expect(tl.layout?.sections.find((s) => s.section.id === 0)?.collapsed).toBe(true);
    expect(calls.layouts).toHaveLength(1);
    expect(calls.redraw).toBe(1);
  });

  it("relays out when a section is toggled, the scroll height following", () => {
    const { tl, calls } = opened();
    const open = tl.layout?.totalHeight ?? 0;
    tl.toggleSection(0);
    expect(tl.collapsed.has(0)).toBe(true);
    expect(calls.layouts.at(-1)?.totalHeight).toBeLessThan(open);
    tl.toggleSection(0);
    expect(calls.layouts.at(-1)?.totalHeight).toBe(open);
  });

  it("clamps a window it is given and maps it onto the pixels right of the labels", () => {
    const { tl } = opened();
    tl.setRange({ start: 100, end: 100 });
    expect(tl.range.end - tl.range.start).toBe(tl.limits.minRange);
    tl.setRange({ start: 0, end: 1000 });
    const proj = tl.projection();
    expect(proj.x(0)).toBe(LABEL_WIDTH);
    expect(proj.nsPerPx).toBe(1);
  });

  it("zooms around the pointer over the timeline, else around the middle", () => {
    const { tl } = opened();
    tl.setRange({ start: 0, end: 1000 });
    expect(tl.anchorNs(LABEL_WIDTH + 250)).toBe(250);
    expect(tl.anchorNs(LABEL_WIDTH - 1)).toBe(500);
    expect(tl.anchorNs(null)).toBe(500);
  });

  it("unfolds a track's section and scrolls only when its row is off screen", () => {
    const { tl } = opened([1]);
    tl.expandSectionOf(2);
    expect(tl.collapsed.has(1)).toBe(false);
    expect(tl.layout?.tracks.get(2)?.section.collapsed).toBe(false);
    expect(tl.scrollTopToShow(0, 0, 0)).toBeNull();
    const top = tl.scrollTopToShow(3, 0, 0);
    expect(top).toBe(Math.max(0, (tl.layout?.tracks.get(3)?.top ?? 0) - tl.height / 3));
    expect(tl.scrollTopToShow(99, 0, 0)).toBeNull();
  });

  it("names tracks by section and track, and knows every track", () => {
    const { tl } = opened();
    expect(tl.trackLabel(2)).toBe("GPU 0 / stream 7");
    expect(tl.trackLabel(42)).toBe("track 42");
    expect(tl.allTracks()).toEqual([0, 1, 2, 3]);
  });

  it("hits nothing before a frame was planned or over the labels", () => {
    const { tl } = opened();
    expect(tl.hitAt(LABEL_WIDTH + 10, 30)).toBeNull();
  });
});

describe("bringIntoView", () => {
  it("keeps a window that shows the target, pans at the same zoom to one it does not, widens only for a wider target", () => {
    const r = { start: 1000, end: 2000 };
    expect(bringIntoView(r, 1200, 1300)).toBe(r);
    expect(bringIntoView(r, 5000, 5000)).toEqual({ start: 4500, end: 5500 });
    expect(bringIntoView(r, 5000, 7000)).toEqual({ start: 4750, end: 7250 });
  });

  it("unhides and unfolds the track a jump lands on", () => {
    const { tl } = opened([0]);
    tl.setChoice({ ...tl.choice, hidden: new Set([0]) });
    expect(tl.layout?.tracks.has(0)).toBe(false);
    tl.expandSectionOf(0);
    expect(tl.layout?.tracks.get(0)?.section.collapsed).toBe(false);
    expect(tl.choice.hidden.has(0)).toBe(false);
  });
});
