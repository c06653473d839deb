import { describe, expect, it } from "vitest";
import type { MetaTrack, TraceMeta } from "../src/api/types.ts";
import { initiallyCollapsed } from "../src/views/trace/viewer.ts";
import { makeTrace } from "./mock/trace.ts";

function withThreads(meta: TraceMeta, n: number): TraceMeta {
  const extra: MetaTrack[] = Array.from({ length: n }, (_, i) => ({
    id: 100 + i,
    section: 0,
    name: `thread ${i}`,
    kind: "thread",
    sort_index: 10 + i,
    max_depth: 0,
    host: 0,
  }));
  return { ...meta, tracks: [...meta.tracks, ...extra] };
}

describe("initiallyCollapsed", () => {
  const meta = makeTrace(1, 1).meta;

  it("keeps a few host threads open", () => {
    expect(initiallyCollapsed(meta)).toEqual([]);
  });

  it("collapses a crowded host section when there is a device to see", () => {
    expect(initiallyCollapsed(withThreads(meta, 20))).toEqual([0]);
  });

  it("never collapses a CPU-only trace", () => {
    const cpuOnly = { ...withThreads(meta, 20), sections: meta.sections.filter((s) => s.kind === "cpu") };
    expect(initiallyCollapsed(cpuOnly)).toEqual([]);
  });
});
