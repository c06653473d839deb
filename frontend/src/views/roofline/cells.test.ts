// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { RooflineOpRow } from "./api.ts";
import { absentReason, type Column, computePeak, coverageText, MODELLED, formatIntensity, opColumns, programColumns, rooflineContext, trafficLevels } from "./cells.ts";
import { formatPeak } from "./device.ts";
import { mixedPrecision, rooflineAnswer } from "./fixture.ts";
import { cellElement } from "./table.ts";

const answer = rooflineAnswer();
const ctx = rooflineContext(answer);
const columns = opColumns(ctx);
const op = (name: string) => answer.ops.find((o) => o.name === name) as RooflineOpRow;
const td = (id: string, name: string) => {
  const column = columns.find((c) => c.id === id) as Column<RooflineOpRow>;
  return cellElement(column.cell(op(name)), column.numeric);
};

describe("roofline cells", () => {
  it("writes rates in SI units, intensities in FLOP/B and fractions as percentages", () => {
    expect(td("flop_rate", "fusion.1").textContent).toBe("12.3 TFLOP/s");
    expect(td("bw:hbm", "fusion.1").textContent).toBe("1.52 TB/s");
    expect(td("oi:hbm", "fusion.1").textContent).toBe("0.125 FLOP/B");
    expect(td("efficiency", "fusion.1").textContent).toBe("76%");
    expect(td("bound", "fusion.1").textContent).toBe("HBM");
    expect(formatIntensity(560.4419)).toBe("560 FLOP/B");
    expect(formatIntensity(12_345)).toBe("12,300 FLOP/B");
    expect(formatPeak({ value: 9.18e14, unit: "FLOP/s", source: "" })).toBe("918 TFLOP/s");
    expect(formatPeak({ value: 1.637993152512e12, unit: "B/s", source: "" })).toBe("1.64 TB/s");
  });

  it("shows a measured 0 as 0, and a figure not observed as 'not observed' with the reason, never 0", () => {
    expect(td("flop_rate", "copy-done").textContent).toBe("0 FLOP/s");
    const absent = td("flop_rate", "custom-call");
    expect(absent.textContent).toBe("not observed");
    expect(absent.classList.contains("rf-absent")).toBe(true);
    expect(absent.title).toBe("no cost stats and no HloProto in this profile");
    for (const id of ["bw:hbm", "oi:hbm", "bound", "efficiency", "flop_peak", "bw_peak:hbm"]) {
      expect(td(id, "custom-call").textContent).toBe("not observed");
    }
    // a measured row without a level's bytes: the row's note says why
    expect(td("bw:hbm", "copy-start").title).toBe("the profile gives bytes_accessed without a memory-space breakdown");
  });

  it("marks figures computed from costs estimated from shapes", () => {
    const cell = td("flop_rate", "aten::mm");
    expect(cell.textContent).toBe("≈ 500 TFLOP/s");
    expect(cell.title).toBe("estimated from shapes");
    expect(cell.dataset.estimated).toBe("1");
    expect(td("occurrences", "aten::mm").dataset.estimated).toBeUndefined();
  });

  it("does not read a measurement above its roof as an efficiency", () => {
    const efficiency = td("efficiency", "aten::mm");
    expect(efficiency.textContent).toBe("above the roof");
    expect(efficiency.title).toBe("measured HBM bandwidth is 2.5× the roof");
    const share = td("bw_peak:hbm", "aten::mm");
    expect(share.textContent).toBe("≈ 250%");
    expect(share.classList.contains("rf-anomaly")).toBe(true);
  });

  it("says a peak is unknown rather than 0 % of it", () => {
    expect(trafficLevels(answer)).toEqual(["hbm", "vmem_read", "sram_read"]);
    const cell = td("bw_peak:sram_read", "fusion.1");
    expect(cell.textContent).toBe("peak unknown");
    expect(cell.title).toContain("SRAM read bandwidth peak is unknown");
    const noCompute = rooflineContext({ ...answer, device: { ...answer.device!, flops: {}, roof_precision: undefined } });
    expect(computePeak(noCompute.device)).toBeNull();
    const flopPeak = opColumns(noCompute).find((c) => c.id === "flop_peak") as Column<RooflineOpRow>;
    expect(flopPeak.cell(op("fusion.1"))).toMatchObject({ kind: "number" });
    expect(flopPeak.cell({ ...op("fusion.1"), figures: { ...op("fusion.1").figures, flop_utilization: undefined } })).toMatchObject({ text: "peak unknown" });
  });

  it("gives the program rows their own columns and names steps", () => {
    const program = programColumns(ctx);
    // wall time (the Overview's step window) beside device time (the rates' denominator)
    expect(program.map((c) => c.id).slice(0, 6)).toEqual(["step", "wall_time", "device_time", "time_per_device", "devices", "flops"]);
    const step = program[0] as Column<(typeof answer.program)[0]>;
    expect(step.cell({ ...answer.program[0]!, step: "3" })).toMatchObject({ text: "Step 3" });
    expect(step.cell(answer.program[0]!)).toMatchObject({ text: "Total" });
  });

  it("names the compute roof of each row, its peak, and a roof whose peak is not known", () => {
    const mixed = mixedPrecision();
    const mixedCtx = rooflineContext(mixed);
    expect(mixedCtx.roofs).toEqual([
      { precision: "bf16", peak: 1e15 },
      { precision: "fp32", peak: 6.7e13 },
      { precision: "int64_vector", peak: null },
    ]);
    const ops = opColumns(mixedCtx);
    const cell = (id: string, name: string) => {
      const column = ops.find((c) => c.id === id) as Column<RooflineOpRow>;
      return cellElement(column.cell(mixed.ops.find((o) => o.name === name) as RooflineOpRow), column.numeric);
    };
    expect(cell("roof", "fusion.1").textContent).toBe("fp32");
    expect(cell("roof", "fusion.1").title).toBe("fp32: 67 TFLOP/s");
    expect(cell("flop_peak", "fusion.1").textContent).toBe("18.4%");
    expect(cell("roof", "copy-done").textContent).toBe("int64_vector (int64_vector: peak not known)");
    const program = programColumns(mixedCtx).find((c) => c.id === "roof") as Column<(typeof mixed.program)[0]>;
    const total = program.cell(mixed.program[0]!);
    expect(total).toMatchObject({ text: "bf16 + fp32" });
    expect((total as { title?: string }).title).toContain("FLOPs per roof:\nbf16: 3 GFLOP\nfp32: 1 GFLOP");
  });

  it("says above the chart how much of the time has a cost, and how many ops were modelled", () => {
    expect(coverageText(answer)).toBe("Costs known for 80% of the program's device time in counted ops: the rest has no cost, so the figures are lower bounds.");
    const modelled = { ...answer, ops: answer.ops.map((o) => (o.name === "custom-call" ? { ...o, source: MODELLED } : o)) };
    expect(coverageText(modelled)).toContain("; 1 op modelled from shapes (profscope).");
    expect(absentReason(modelled.ops.find((o) => o.name === "custom-call")!, "FLOPs")).toBe("the profile records no FLOPs for this row");
  });
});
