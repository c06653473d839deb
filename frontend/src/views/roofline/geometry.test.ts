import { describe, expect, it } from "vitest";
import { rooflineContext } from "./cells.ts";
import { mixedPrecision, rooflineAnswer } from "./fixture.ts";
import { decades, ridgePoint, roofLevels, rooflineModel } from "./geometry.ts";

describe("roofline geometry", () => {
  const answer = rooflineAnswer();
  const ctx = rooflineContext(answer);

  it("puts the ridge point where the memory roof meets the compute roof: compute peak ÷ bandwidth", () => {
    expect(ridgePoint(1e15, 1e12)).toBe(1000);
    expect(ridgePoint(9.18e14, 1.637993152512e12)).toBeCloseTo(560.4419, 3);
    const model = rooflineModel(ctx, "hbm", answer.program, answer.ops);
    const hbm = model.roofs.find((r) => r.level === "hbm");
    expect(hbm?.ridge).toBe(1000);
    // the slanted part climbs at the bandwidth (y = bandwidth × x) up to the ridge, at the compute peak
    expect(hbm?.line[0]).toEqual({ x: model.x[0], y: 1e12 * model.x[0] });
    expect(hbm?.line[1]).toEqual({ x: 1000, y: 1e15 });
    // the flat compute roof starts at the first ridge and runs to the right edge
    expect(model.computeLine).toEqual([
      { x: 100, y: 1e15 },
      { x: model.x[1], y: 1e15 },
    ]);
  });

  it("draws roofs only for levels with traffic and a known peak", () => {
    // cmem_read has a peak but no bytes; sram_read has bytes but no peak
    expect(ctx.levels).toEqual(["hbm", "vmem_read", "sram_read"]);
    expect(roofLevels(ctx)).toEqual(["hbm", "vmem_read"]);
    const model = rooflineModel(ctx, "hbm", answer.program, answer.ops);
    expect(model.roofs.map((r) => [r.label, r.ridge])).toEqual([
      ["HBM", 1000],
      ["VMEM read", 100],
    ]);
  });

  it("places programs and ops at (intensity of the chosen level, FLOP rate), and counts what a log axis cannot show", () => {
    const model = rooflineModel(ctx, "hbm", answer.program, answer.ops);
    expect(model.program.map((p) => [p.key, p.x, p.y])).toEqual([["program:Total", 2, 1e12]]);
    expect(model.ops.map((p) => [p.key, p.x, p.y])).toEqual([
      ["op:1", 0.125, 1.23e13],
      ["op:3", 200, 5e14],
    ]);
    expect(model.notDrawn).toEqual(["2 ops: no FLOPs (a log axis has no 0)", "1 op: FLOPs not observed"]);
    const vmem = rooflineModel(ctx, "vmem_read", answer.program, answer.ops);
    expect(vmem.levelLabel).toBe("VMEM read");
    expect(vmem.ops.map((p) => p.x)).toEqual([10]);
    expect(vmem.notDrawn).toContain("1 program row: no VMEM read bytes observed");
  });

  it("spans whole decades with room around every point and ridge", () => {
    expect(decades([0.125, 1000])).toEqual([0.01, 10000]);
    expect(decades([5, 20])).toEqual([1, 100]);
    expect(decades([5, 50])).toEqual([1, 1000]);
    expect(decades([])).toEqual([0.01, 1000]);
    const model = rooflineModel(ctx, "hbm", answer.program, answer.ops);
    expect(model.x).toEqual([0.01, 10000]);
    expect(model.y).toEqual([1e11, 1e16]);
  });

  it("draws memory roofs to the right edge, without ridges, when the compute peak is unknown", () => {
    const device = { ...answer.device!, flops: {}, roof_precision: undefined };
    const unknown = rooflineContext({ ...answer, device });
    expect(unknown.computePeak).toBeNull();
    const model = rooflineModel(unknown, "hbm", answer.program, answer.ops);
    expect(model.computeLine).toEqual([]);
    const hbm = model.roofs[0];
    expect(hbm?.ridge).toBeNull();
    expect(hbm?.line[1]).toEqual({ x: model.x[1], y: 1e12 * model.x[1] });
  });

  it("draws a flat roof for each other precision the ops run at whose peak is known, and names each op's roof", () => {
    const mixed = mixedPrecision();
    const model = rooflineModel(rooflineContext(mixed), "hbm", mixed.program, mixed.ops);
    // bf16 is the compute roof (with the ridges); fp32 gets its own line; int64_vector has no peak
    expect(model.compute).toBe(1e15);
    expect(model.otherRoofs).toEqual([{ precision: "fp32", peak: 6.7e13, line: [{ x: model.x[0], y: 6.7e13 }, { x: model.x[1], y: 6.7e13 }] }]);
    // copy-done (int64_vector) has 0 FLOPs: no place on a log axis
    expect(model.ops.map((p) => [p.label, p.kind === "op" ? p.roof : null])).toEqual([
      ["fusion.1", "fp32"],
      ["aten::mm", "bf16"],
    ]);
  });
});
