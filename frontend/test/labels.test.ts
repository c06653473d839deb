import { describe, expect, it } from "vitest";
import type { RunsRun } from "../src/api/types.ts";
import { runLabel } from "../src/shell/labels.ts";

const file = (format: string, error?: string) => ({ path: `f.${format}`, format, size: 1, ...(error ? { error } : {}) });

describe("runLabel", () => {
  it("names the formats of every session once, in order of appearance", () => {
    const run: RunsRun = {
      name: "exp1",
      sessions: [
        { name: "2026_01_01", hosts: [{ name: "vm", files: [file("xplane")], tools: ["trace"] }] },
        {
          name: "xla",
          hosts: [
            { name: "train", files: [file("xla_metrics"), file("xla_debug"), file("xla_graphs")], tools: ["xla"] },
          ],
        },
      ],
    };
    expect(runLabel(run)).toBe("exp1 — XPlane, XLA logs · 2 sessions");
  });

  it("counts unreadable files instead of naming their format", () => {
    const run: RunsRun = {
      name: "broken",
      sessions: [
        {
          name: "s",
          hosts: [{ name: "w", files: [file("chrome_trace"), file("xplane", "truncated"), file("xplane", "empty")], tools: [] }],
        },
      ],
    };
    expect(runLabel(run)).toBe("broken — Chrome trace · 2 unreadable files");
  });

  it("is the bare name when nothing in the run could be read", () => {
    const run: RunsRun = {
      name: "bad",
      sessions: [{ name: "s", hosts: [{ name: "w", files: [file("xplane", "not a protobuf")], tools: [] }] }],
    };
    expect(runLabel(run)).toBe("bad · 1 unreadable file");
  });
});
