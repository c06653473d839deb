import { describe, expect, it } from "vitest";
import { buildTile, encodeTile, makeTrace } from "../../../test/mock/trace.ts";
import { decodeTile, type Tile } from "../../api/tile.ts";
import { TileCache } from "./tilecache.ts";

const trace = makeTrace(4, 10);
const z = trace.meta.tile.max_level;

function deferredLoader() {
  const calls: { level: number; index: number; signal: AbortSignal; resolve: (t: Tile) => void }[] = [];
  const loader = (level: number, index: number, signal: AbortSignal) =>
    new Promise<Tile>((resolve, reject) => {
      calls.push({ level, index, signal, resolve });
      signal.addEventListener("abort", () => reject(signal.reason));
    });
  return { calls, loader };
}

const realTile = (level: number, index: number) => decodeTile(encodeTile(buildTile(trace, level, index)));

describe("TileCache", () => {
  it("requests what is wanted, in order, at most maxInFlight at a time", () => {
    const { calls, loader } = deferredLoader();
    const cache = new TileCache(loader, () => {}, () => {}, 1e9, 2);
    cache.want([0, 1, 2, 3].map((i) => ({ level: 5, index: i })));
    expect(calls.map((c) => c.index)).toEqual([0, 1]);
    expect(cache.stats.queued).toBe(2);
  });

  it("cancels in-flight and queued requests that are no longer wanted", () => {
    const { calls, loader } = deferredLoader();
    const cache = new TileCache(loader, () => {}, () => {}, 1e9, 2);
    cache.want([0, 1, 2].map((i) => ({ level: 5, index: i })));
    cache.want([{ level: 6, index: 0 }]);
    expect(calls[0].signal.aborted).toBe(true);
    expect(calls[1].signal.aborted).toBe(true);
    expect(calls.at(-1)).toMatchObject({ level: 6, index: 0 });
    expect(cache.stats.cancelled).toBe(3);
  });

  it("holds loaded tiles and starts queued ones as slots free up", async () => {
    const { calls, loader } = deferredLoader();
    const loaded: Tile[] = [];
    const cache = new TileCache(loader, (t) => loaded.push(t), () => {}, 1e9, 1);
    cache.want([{ level: z, index: 0 }, { level: z - 1, index: 0 }]);
    calls[0].resolve(realTile(z, 0));
    await Promise.resolve();
    await Promise.resolve();
    expect(loaded).toHaveLength(1);
    expect(cache.has(z, 0)).toBe(true);
    expect(calls).toHaveLength(2);
  });

  it("evicts least recently used tiles beyond the byte budget, never pinned or wanted ones", async () => {
    const one = 1000;
    const tiles = [0, 1, 2, 3].map((i) => ({ ...realTile(z - 2, i), byteLength: one }));
    const loader = (_level: number, index: number) => Promise.resolve(tiles[index]);
    const cache = new TileCache(loader, () => {}, () => {}, one * 2.5, 6);
    cache.pin(z - 2, 0);
    for (let i = 0; i < 4; i++) {
      cache.want([{ level: z - 2, index: i }]);
      await new Promise((r) => setTimeout(r, 0));
    }
    expect(cache.has(z - 2, 0)).toBe(true);
    expect(cache.has(z - 2, 3)).toBe(true);
    expect(cache.stats.evicted).toBeGreaterThan(0);
    expect(cache.has(z - 2, 1)).toBe(false);
    expect(cache.stats.bytes).toBeLessThanOrEqual(one * 2.5);
  });

  it("reports failures and does not retry at once", async () => {
    let n = 0;
    const errors: string[] = [];
    const cache = new TileCache(
      () => {
        n++;
        return Promise.reject(new Error("boom"));
      },
      () => {},
      (_id, e) => errors.push(e.message),
    );
    cache.want([{ level: 1, index: 1 }]);
    await new Promise((r) => setTimeout(r, 0));
    cache.want([{ level: 1, index: 1 }]);
    expect(errors).toEqual(["boom"]);
    expect(n).toBe(1);
  });
});
