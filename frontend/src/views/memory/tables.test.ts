import { describe, expect, it } from "vitest";
import { csvText } from "../../shared/table.ts";
import { peakAnswer } from "./fixture.ts";
import { allocationColumns, NOT_FREED, STEP_COLUMNS, timeCell } from "./tables.ts";

describe("memory tables", () => {
  it("says not observed for a block the capture never frees, never 0", () => {
    expect(timeCell(undefined, NOT_FREED)).toEqual({ kind: "absent", text: "not observed", reason: NOT_FREED });
    const never = peakAnswer().devices[0].never_freed[0];
    const free = allocationColumns(true).find((c) => c.id === "free");
    expect(free?.cell(never)).toMatchObject({ kind: "absent", text: "not observed" });
    expect(allocationColumns(false).map((c) => c.id)).toEqual(["size", "alloc", "op", "shape", "step", "addr"]);
  });

  it("writes the step table's CSV in bytes", () => {
    const steps = peakAnswer().devices[0].steps;
    const lines = csvText(STEP_COLUMNS, steps.slice(2, 3)).trim().split("\r\n");
    expect(lines[0]).toBe("Step,At start (bytes),Peak (bytes),At end (bytes),Growth (bytes),Allocations (count),Never freed (bytes)");
    expect(lines[1]).toBe("ProfilerStep#3,54816,16815160,54816,0,21,0");
  });
});
