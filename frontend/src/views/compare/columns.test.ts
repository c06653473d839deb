import { describe, expect, it } from "vitest";
import { categoryColumns, formatRatio, opColumns, signedDuration, signedPercent } from "./columns.ts";
import { demoAnswer } from "./test_answers.ts";

describe("signed figures", () => {
  it("writes run − base with its sign: negative is the run being faster", () => {
    expect(signedDuration(14_051_422)).toBe("+14.1 ms");
    expect(signedDuration(-576_925)).toBe("−577 µs");
    expect(signedDuration(0)).toBe("0 ns");
    expect(signedPercent(-0.097)).toBe("−9.7%");
    expect(signedPercent(2.344)).toBe("+234%");
    expect(formatRatio(3.2994)).toBe("3.3×");
  });
});

describe("op-delta columns", () => {
  const answer = demoAnswer();
  const columns = opColumns("host_ops", answer.same_within);
  const cell = (id: string, name: string) => columns.find((c) => c.id === id)!.cell(answer.host_ops.rows.find((r) => r.name === name)!);

  it("shows self time per step on both sides, the difference and its relative size", () => {
    expect(columns.map((c) => c.id)).toEqual(["name", "change", "base_self", "run_self", "delta", "relative", "base_calls", "run_calls"]);
    expect(cell("delta", "aten::mm")).toMatchObject({ text: "−610 µs", tone: "cmp-less" });
    expect(cell("relative", "aten::mm").text).toBe("−24.2%");
    expect(cell("change", "aten::mm")).toMatchObject({ text: "faster", tone: "cmp-change cmp-faster" });
    expect(cell("base_calls", "aten::mm").title).toBe("6 calls in the base's scope");
  });

  it("gives an op only one run has no relative change, with the reason", () => {
    const added = cell("relative", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    expect(added).toMatchObject({ value: null, text: "—" });
    expect(added.title).toContain("only one run");
    expect(opColumns("kernels", 0.05).map((c) => c.id)).toContain("kind");
    expect(opColumns("hlo_ops", 0.05).find((c) => c.id === "kind")!.title).toBe("Category");
  });
});

describe("breakdown columns", () => {
  it("writes a category one side cannot show as not observed, with why, never 0", () => {
    const [device, input] = demoAnswer().categories;
    const columns = categoryColumns();
    const base = columns.find((c) => c.id === "base")!;
    expect(base.cell(device)).toMatchObject({ value: null, text: "not observed" });
    expect(base.cell(device).title).toContain("CPU-only");
    expect(columns.find((c) => c.id === "delta")!.cell(input).text).toBe("+14.4 ms");
    const zero = demoAnswer().categories[3];
    expect(columns.find((c) => c.id === "relative")!.cell(zero)).toMatchObject({ value: null, text: "—" });
  });
});
