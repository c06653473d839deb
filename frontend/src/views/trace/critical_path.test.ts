import { describe, expect, it, vi } from "vitest";
import type { CriticalPathEdge, CriticalPathHost, TraceCriticalPath } from "../../api/answers.gen.ts";
import { arrowsOf, CriticalPathOverlay, hostOf, readout, readouts, shapesOf } from "./critical_path.ts";

function edge(src: number, dst: number, kind: string, srcTrack = 1, dstTrack = 1): CriticalPathEdge {
  return { src, src_end: false, src_track: srcTrack, src_depth: 0, src_ns: src, dst, dst_end: true, dst_track: dstTrack, dst_depth: 0, dst_ns: dst, kind, weight_ns: 1 };
}

const host: CriticalPathHost = {
  host: "bert_small",
  step: 7,
  start_ns: 1000,
  end_ns: 2000,
  events: [{ id: 1, track: 1, depth: 0, start_ns: 1000, dur_ns: 100 }],
  edges: [edge(1, 1, "work"), edge(1, 2, "work"), edge(2, 3, "launch", 1, 5), edge(3, 4, "sync", 5, 1), edge(4, 5, "work", 5, 1)],
  total_ns: 800,
  by_cause_ns: { cpu: 600, launch: 50, compute: 150, communication: 0, kernel_gap: 0, idle: 200 },
};

describe("critical path overlay", () => {
  it("draws arrows only between different events, and host nesting only across tracks", () => {
    expect(arrowsOf(host).map((e) => e.kind)).toEqual(["launch", "sync", "work"]);
  });

  it("reads the step's time by cause, leaving out causes with no time", () => {
    expect(readout(host)).toBe("step 7 · critical path 800 ns of 1 µs: cpu 60% · launch 5% · compute 15% · idle 20%");
    expect(readout({ ...host, step: null })).toMatch(/^whole trace · /);
  });

  it("names each rank's waiting for another rank and data loading", () => {
    const rank: CriticalPathHost = {
      ...host,
      host: "rank0",
      by_cause_ns: { cpu: 100, communication: 100, rank_wait: 500, data_loading: 200, idle: 100 },
    };
    expect(readout(rank)).toBe(
      "step 7 · critical path 800 ns of 1 µs: cpu 10% · communication 10% · waiting for another rank 50% · data loading 20% · idle 10%",
    );
    expect(readouts([host])).toBe(readout(host));
    expect(readouts([rank, { ...rank, host: "rank1" }])).toBe(`rank0: ${readout(rank)} | rank1: ${readout(rank)}`);
  });

  it("draws the ranks' shared events and arrows once and counts the arrows between hosts", () => {
    const base = 2 ** 32;
    const straggler = edge(2 * base + 7, 2 * base + 9, "dependency", 40, 41);
    const rank0: CriticalPathHost = { ...host, host: "rank0", events: [{ id: 2 * base + 7, track: 40, depth: 0, start_ns: 0, dur_ns: 1 }], edges: [straggler, edge(2 * base + 9, 3, "rank", 41, 1)] };
    const rank1: CriticalPathHost = { ...host, host: "rank1", events: rank0.events, edges: [straggler, edge(2 * base + 9, base + 3, "rank", 41, 20)] };
    expect(hostOf(2 * base + 9)).toBe(2);
    const shapes = shapesOf([rank0, rank1]);
    expect(shapes.events).toHaveLength(1);
    expect(shapes.arrows.map((e) => e.kind)).toEqual(["dependency", "rank", "rank"]);
    expect(shapes.crossing).toBe(2);
  });

  it("asks for the step in view once, and again only when the view leaves it", async () => {
    const answer: TraceCriticalPath = { hosts: [host] };
    const load = vi.fn(async (_at: number, _signal: AbortSignal) => answer);
    const shown: (string | null)[] = [];
    const overlay = new CriticalPathOverlay({ load, redraw: () => {}, show: (t) => shown.push(t) });
    overlay.setEnabled(true, { start: 1200, end: 1600 });
    await Promise.resolve();
    await Promise.resolve();
    expect(load).toHaveBeenCalledTimes(1);
    expect(load.mock.calls[0][0]).toBe(1400);
    overlay.viewChanged({ start: 1100, end: 1900 });
    expect(load).toHaveBeenCalledTimes(1);
    overlay.viewChanged({ start: 5000, end: 6000 });
    expect(load).toHaveBeenCalledTimes(2);
    overlay.setEnabled(false, { start: 0, end: 1 });
    expect(shown.at(-1)).toBeNull();
    expect(shown).toContain(readout(host));
  });
});
