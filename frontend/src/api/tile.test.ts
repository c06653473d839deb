import { describe, expect, it } from "vitest";
import { buildTile, encodeTile, makeTrace } from "../../test/mock/trace.ts";
import { decodeTile, TileFormatError } from "./tile.ts";

describe("decodeTile", () => {
  const trace = makeTrace(3, 5);
  const z = trace.meta.tile.max_level;

  it("round-trips every column of the documented layout", () => {
    const built = buildTile(trace, z, 0);
    const tile = decodeTile(encodeTile(built));
    expect(tile.level).toBe(z);
    expect(tile.index).toBe(0);
    expect(tile.events.n).toBe(built.events.length);
    expect(tile.events.n).toBeGreaterThan(0);
    for (let i = 0; i < tile.events.n; i++) {
      const e = built.events[i];
      expect(tile.events.id[i]).toBe(e.id);
      expect(tile.events.track[i]).toBe(e.track);
      expect(tile.names[tile.events.name[i]]).toBe(trace.events[e.id].name);
      expect(tile.events.start[i]).toBeCloseTo(e.start, 0);
      expect(tile.events.dur[i]).toBeCloseTo(e.dur, 0);
      expect(tile.events.depth[i]).toBe(e.depth);
    }
    expect(tile.counters.n).toBe(built.counters.length);
    expect(Array.from(tile.counters.max)).toEqual(built.counters.map((c) => c.max));
    expect(tile.flows.n).toBe(built.flows.length);
    expect(Array.from(tile.flows.dstId)).toEqual(built.flows.map((f) => f.dst.id));
  });

  it("carries summaries for events narrower than a tile pixel", () => {
    const built = buildTile(trace, z, 0);
    const tile = decodeTile(encodeTile(built));
    expect(tile.summaries.n).toBe(built.summaries.length);
    const summarized = Array.from(tile.summaries.count).reduce((a, b) => a + b, 0);
    const inFull = tile.events.n;
    expect(summarized + inFull).toBe(trace.events.length);
  });

  it("rejects a buffer that is not a tile, naming the tile", () => {
    const bad = new Uint8Array(16);
    bad.set(new TextEncoder().encode("NOPE"));
    expect(() => decodeTile(bad.buffer, "tile 3/7")).toThrow(/tile 3\/7: bad magic/);
    expect(() => decodeTile(new ArrayBuffer(4))).toThrow(TileFormatError);
  });

  it("rejects a truncated tile with the field it stopped at", () => {
    const buf = encodeTile(buildTile(trace, z, 0));
    expect(() => decodeTile(buf.slice(0, buf.byteLength - 64), "t")).toThrow(/truncated at flows|truncated at counters/);
  });
});
