import { describe, expect, it } from "vitest";
import { hloColumns, kernelColumns } from "./op_columns.ts";

describe("op columns", () => {
  it("say what the kernel and HLO fractions are a share of: wall time, not device busy time", () => {
    for (const columns of [kernelColumns(), hloColumns()]) {
      const fraction = columns.find((c) => c.id === "fraction");
      expect(fraction?.title).toBe("Share of wall");
      expect(fraction?.csvTitle).toBe("Share of wall (%)");
      expect(fraction?.help).toContain("÷ the wall time of the tables' scope");
      expect(fraction?.help).toContain("not of device busy time");
      expect(columns.map((c) => c.title)).not.toContain("Device %");
    }
  });
});
