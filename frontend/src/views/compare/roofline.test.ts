import { describe, expect, it } from "vitest";
import type { RooflineAnswer } from "../../api/answers.gen.ts";
import { rooflineAnswer } from "../roofline/fixture.ts";
import { efficiencyChange, rateRatio, rooflineColumns, rooflineDeltas, rooflineListing, signedPoints } from "./roofline.ts";

/** The roofline fixture as the base; the run: fusion.1 at twice its FLOP rate and 0.76 → 0.9
 * efficiency, copy-done gone, a new op, and custom-call listed twice (two XLA programs). */
function runAnswer(): RooflineAnswer {
  const base = rooflineAnswer();
  const [fusion, , mm, custom, copyStart] = base.ops;
  return {
    ...base,
    ops: [
      { ...fusion, total_time_ns: 3e6, figures: { ...fusion.figures, flop_rate: 2.46e13, roofline_efficiency: 0.9 } },
      mm,
      custom,
      { ...custom, program: "7" },
      copyStart,
      { ...fusion, name: "fusion.new" },
    ],
  };
}

describe("roofline deltas", () => {
  it("joins the ops of both runs by name, the run's slowest first", () => {
    const deltas = rooflineDeltas(runAnswer(), rooflineAnswer());
    expect(deltas.rows.map((r) => r.name)).toEqual(["fusion.1", "aten::mm", "copy-start"]);
    expect(deltas.ambiguous).toBe(1); // custom-call, in two programs of the run
    const fusion = deltas.rows[0];
    expect(rateRatio(fusion)).toBeCloseTo(2, 12);
    expect(efficiencyChange(fusion)).toBeCloseTo(14, 10); // 90 % − 76 %, in points
    expect(fusion.roof).toBe("peak");
    expect(rooflineListing(deltas)).toBe("3 ops in both runs, the run's most time-consuming first · 1 name listed more than once on a side left out");
  });

  it("leaves a figure a side cannot give absent, never 0", () => {
    const deltas = rooflineDeltas(runAnswer(), rooflineAnswer());
    const mm = deltas.rows.find((r) => r.name === "aten::mm");
    expect(mm?.runEfficiency).toBeUndefined(); // above its roof: the anomaly leaves it out
    expect(efficiencyChange(mm!)).toBeUndefined();
    const cells = rooflineColumns().map((c) => c.cell(mm!));
    const change = cells[rooflineColumns().findIndex((c) => c.id === "eff_change")];
    expect(change.value).toBeNull();
    const copyStart = deltas.rows.find((r) => r.name === "copy-start")!;
    expect(rateRatio(copyStart)).toBeUndefined(); // the base's rate is 0
  });

  it("says why when a side has no device roofline", () => {
    const cpu = rooflineAnswer({ observed: false, reason: "no device roofline: device activity not observed", ops: [] });
    expect(rooflineDeltas(runAnswer(), cpu)).toEqual({ rows: [], ambiguous: 0, reason: "no device roofline: device activity not observed" });
  });

  it("writes signed percentage points", () => {
    expect([signedPoints(14), signedPoints(-0.4), signedPoints(0)]).toEqual(["+14 pt", "−0.4 pt", "0 pt"]);
  });
});
