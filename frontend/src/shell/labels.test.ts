import { describe, expect, it } from "vitest";
import type { RunsFile, RunsRun } from "../api/types.ts";
import { formatLabel, runLabel, sessionLabel } from "./labels.ts";

/** A `/runs` file entry as the backend sends it: the format id and its label for people. */
const file = (format: string, format_label: string, error?: string): RunsFile => ({
  name: `f.${format}`,
  path: `f.${format}`,
  format,
  format_label,
  size: 1,
  mtime: null,
  ...(error ? { error } : {}),
});

describe("runLabel", () => {
  it("names the formats of every session once, in order of appearance", () => {
    const run: RunsRun = {
      name: "exp1",
      sessions: [
        { name: "2026_01_01", label: "2026_01_01", hosts: [{ name: "vm", files: [file("xplane", "XPlane")], tools: ["trace"] }] },
        {
          name: "xla",
          label: "xla",
          hosts: [
            {
              name: "train",
              files: [file("xla_metrics", "XLA logs"), file("xla_debug", "XLA logs"), file("xla_graphs", "XLA logs")],
              tools: ["xla"],
            },
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
          label: "s",
          hosts: [
            {
              name: "w",
              files: [file("chrome_trace", "Chrome trace"), file("xplane", "XPlane", "truncated"), file("xplane", "XPlane", "empty")],
              tools: [],
            },
          ],
        },
      ],
    };
    expect(runLabel(run)).toBe("broken — Chrome trace · 2 unreadable files");
  });

  it("is the bare name when nothing in the run could be read", () => {
    const run: RunsRun = {
      name: "bad",
      sessions: [{ name: "s", label: "s", hosts: [{ name: "w", files: [file("xplane", "XPlane", "not a protobuf")], tools: [] }] }],
    };
    expect(runLabel(run)).toBe("bad · 1 unreadable file");
  });

  it("shows whatever label the server gives a format, with no table of its own", () => {
    const run: RunsRun = {
      name: "new",
      sessions: [{ name: "s", label: "s", hosts: [{ name: "w", files: [file("xplane", "TPU XPlane"), file("perfetto", "Perfetto")], tools: [] }] }],
    };
    expect(runLabel(run)).toBe("new — TPU XPlane, Perfetto");
  });

  it("falls back to the raw format id when the server sends no label", () => {
    const bare: RunsFile = { name: "a.xplane.pb", path: "a.xplane.pb", format: "xplane", format_label: null, size: 1, mtime: null };
    expect(formatLabel(bare)).toBe("xplane");
    const run: RunsRun = { name: "old", sessions: [{ name: "s", label: "s", hosts: [{ name: "w", files: [bare], tools: [] }] }] };
    expect(runLabel(run)).toBe("old — xplane");
  });
});

describe("sessionLabel", () => {
  it("is the server's display label, or the name when there is none", () => {
    expect(sessionLabel({ name: "1795998778000000000", label: "2026-11-30 00:32:58", hosts: [] })).toBe("2026-11-30 00:32:58");
    expect(sessionLabel({ name: "2024_01_01_00_00_00", label: "2024_01_01_00_00_00", hosts: [] })).toBe("2024_01_01_00_00_00");
  });
});
