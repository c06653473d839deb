import { describe, expect, it } from "vitest";
import { csvText } from "../../shared/table.ts";
import { peakAnswer } from "./fixture.ts";
import { allocationColumns, described, liveColumns, NOT_FREED, STEP_COLUMNS, timeCell } from "./tables.ts";

describe("memory tables", () => {
  it("says not observed for a block the capture never frees, never 0", () => {
    expect(timeCell(undefined, NOT_FREED)).toEqual({ kind: "absent", text: "not observed", reason: NOT_FREED });
    const never = peakAnswer().devices[0].never_freed[0];
    const free = allocationColumns(true).find((c) => c.id === "free");
    expect(free?.cell(never)).toMatchObject({ kind: "absent", text: "not observed" });
    expect(allocationColumns(false).map((c) => c.id)).toEqual(["size", "alloc", "op", "shape", "step", "addr"]);
  });

  it("shows dtype and region only for allocators whose events name them (TensorFlow's)", () => {
    const device = peakAnswer().devices[0];
    expect(described(device.allocations) || described(device.live_at_peak)).toBe(false);
    expect(liveColumns(false).map((c) => c.id)).toEqual(["op", "shape", "bytes", "count"]);
    const tf = { ...device.allocations[0], alloc_op: "replica_4/GatherV2/Cast", shape: "[30522,1024]", dtype: "half", region: "output" };
    expect(described([tf])).toBe(true);
    const columns = allocationColumns(false, true);
    expect(columns.map((c) => c.id)).toEqual(["size", "alloc", "op", "shape", "dtype", "region", "step", "addr"]);
    expect(columns.find((c) => c.id === "dtype")?.cell(tf)).toMatchObject({ kind: "text", text: "half" });
    expect(columns.find((c) => c.id === "region")?.cell(device.allocations[0])).toMatchObject({ kind: "absent", text: "not observed" });
    expect(liveColumns(true).map((c) => c.id)).toEqual(["op", "shape", "dtype", "bytes", "count"]);
  });

  it("writes the step table's CSV in bytes", () => {
    const steps = peakAnswer().devices[0].steps;
    const lines = csvText(STEP_COLUMNS, steps.slice(2, 3)).trim().split("\r\n");
    expect(lines[0]).toBe("Step,At start (bytes),Peak (bytes),At end (bytes),Growth (bytes),Allocations (count),Never freed (bytes)");
    expect(lines[1]).toBe("ProfilerStep#3,54816,16815160,54816,0,21,0");
  });
});
