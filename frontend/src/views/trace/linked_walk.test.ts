// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { LinkedWalk, pickLinked, readFind, readLinkedIds } from "./linked_walk.ts";

describe("linked events", () => {
  it("reads the ids and the name a link names", () => {
    expect(readLinkedIds(new URLSearchParams("lk=4294967301,7,x"))).toEqual([4294967301, 7]);
    expect(readLinkedIds(new URLSearchParams())).toEqual([]);
    expect(readFind(new URLSearchParams("find=%20fusion.3%20"))).toBe("fusion.3");
    expect(readFind(new URLSearchParams("find="))).toBeNull();
  });

  it("picks an op's device executions over a host event of the same name", () => {
    const m = (id: number, name: string, track: number) => ({ id, name, start_ns: id, dur_ns: 1, track });
    const matches = [m(1, "fusion.3", 0), m(2, "fusion.3", 5), m(3, "fusion.31", 5)];
    expect(pickLinked(matches, "fusion.3", new Set([5]))).toEqual([2]);
    expect(pickLinked(matches, "fusion.3", new Set())).toEqual([1, 2]);
    expect(pickLinked(matches, "fusion", new Set([5]))).toEqual([1, 2, 3]);
  });

  it("walks k of N, wrapping around, starting at the selected one", async () => {
    const shown: [number, boolean][] = [];
    const walk = new LinkedWalk({ show: async (id, first) => void shown.push([id, first]) });
    await walk.start([10, 20, 30], 20);
    const count = () => walk.el.querySelector("[data-testid=linked-count]")?.textContent;
    expect(count()).toBe("2 of 3");
    await walk.step(1);
    await walk.step(1);
    expect(count()).toBe("1 of 3");
    await walk.step(-1);
    expect(shown).toEqual([[20, true], [30, false], [10, false], [30, false]]);
    expect(walk.el.hidden).toBe(false);
    walk.stop();
    expect(walk.el.hidden).toBe(true);
    expect(walk.linked).toEqual([]);
  });
});
