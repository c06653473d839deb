import { describe, expect, it } from "vitest";
import type { ProgramTimeline } from "./api.ts";
import { programAnswer } from "./fixture.ts";
import { boxAt, boxBottom, boxColor, boxLines, litBox, timelineChartConfig, timelineText } from "./timeline.ts";

const program = () => {
  const found = programAnswer().program;
  if (!found?.timeline) throw new Error("the fixture has a program with a timeline");
  return found;
};
const timeline = (): ProgramTimeline => program().timeline as ProgramTimeline;

describe("allocation timeline", () => {
  it("places each box at its band's base plus its offset, across its heap events", () => {
    const t = timeline();
    expect(t.buffer_id.map((_, i) => boxBottom(t, i))).toEqual([0, 2097152, 4194304, 4194304]);
    expect(boxAt(t, 2.5, 4194304 + 1)).toBe(2); // ynn_fusion.2, events 2–4
    expect(boxAt(t, 5.5, 4194304 + 1)).toBe(3); // compare_select_fusion reuses its bytes after the peak
    expect(boxAt(t, 3.5, 2097152 + 1)).toBe(-1); // broadcast_maximum_fusion is freed at event 3
    expect(boxAt(t, 0.5, 10)).toBe(0);
    expect(boxAt(t, 9, 10)).toBe(-1);
  });

  it("picks the smallest box where boxes overlap, as XProf does", () => {
    const t = { ...timeline(), start: [0, 0, 2, 5], end: [6, 8, 4, 7], offset_bytes: [0, 0, 4194304, 4194304] };
    expect(boxAt(t, 1, 100)).toBe(0);
  });

  it("names a box's buffer, shape, size, place and span", () => {
    const t = timeline();
    expect(boxLines(t, 2)).toEqual([
      "ynn_fusion.2",
      "f32[512,1024]{1,0} · f32",
      "2 MiB · temporary, allocation 18 at offset 4 MiB",
      "heap events 2–4 · live at the peak",
      "jit(train_step)/transpose(jvp())/dot_general",
    ]);
    const padded = { ...t, unpadded_bytes: [1, 1, 1048576, 1], op_name: ["", "", "", ""] };
    expect(boxLines(padded, 2)[2]).toBe("2 MiB (1 MiB without padding) · temporary, allocation 18 at offset 4 MiB");
    expect(boxLines(padded, 3)).toHaveLength(4);
  });

  it("says how many boxes it draws and what the bound left out", () => {
    expect(timelineText(timeline())).toBe("4 buffers of 1 temporary allocation over 8 heap events");
    const bounded = { ...timeline(), boxes: 2500, left_out_bytes: 3 * 1048576 };
    expect(timelineText(bounded)).toBe("2,500 buffers of 1 temporary allocation over 8 heap events: 4 drawn (the live table's and the largest), 2,496 left out (3 MiB)");
  });

  it("lights the hovered box over the selected one", () => {
    expect(litBox({ hovered: -1, selected: 2 })).toBe(2);
    expect(litBox({ hovered: 1, selected: 2 })).toBe(1);
    expect(litBox({ hovered: -1, selected: -1 })).toBe(-1);
    expect(boxColor(0)).not.toBe(boxColor(1));
  });

  it("spans the heap chart's events and the stacked allocations' bytes", () => {
    const config = timelineChartConfig(program(), timeline(), { hovered: -1, selected: -1 }, () => {}, () => {});
    expect(config.options?.scales?.x?.max).toBe(8);
    expect(config.options?.scales?.y?.max).toBe(6291456);
    expect(config.plugins?.map((p) => p.id)).toEqual(["memTimelineBoxes"]);
  });
});
