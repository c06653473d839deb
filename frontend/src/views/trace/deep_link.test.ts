import { describe, expect, it } from "vitest";
import { linkParams, readLink } from "./deep_link.ts";

describe("deep link", () => {
  it("reads the window and the selected events", () => {
    expect(readLink(new URLSearchParams("start=100&end=2500.5&sel=7,4294967303"))).toEqual({
      range: { start: 100, end: 2500.5 },
      eventIds: [7, 4294967303],
      rangeSelection: null,
      query: null,
    });
  });

  it("reads and writes a search query (how other tabs link to an op's events)", () => {
    expect(readLink(new URLSearchParams("q=%20fusion.3%20")).query).toBe("fusion.3");
    expect(readLink(new URLSearchParams("q=")).query).toBeNull();
    expect(linkParams({ start: 0, end: 10 }, { kind: "none" }, " all-reduce ").q).toBe("all-reduce");
    expect(linkParams({ start: 0, end: 10 }, { kind: "none" }).q).toBeUndefined();
  });

  it("ignores a window that is not one", () => {
    for (const q of ["start=5&end=5", "start=9&end=1", "start=x&end=10", "end=10"]) {
      expect(readLink(new URLSearchParams(q)).range).toBeNull();
    }
  });

  it("reads a range selection, on every track when none is named", () => {
    expect(readLink(new URLSearchParams("range=10,20&tracks=1,3")).rangeSelection).toEqual({ start: 10, end: 20, tracks: [1, 3] });
    expect(readLink(new URLSearchParams("range=10,20")).rangeSelection).toEqual({ start: 10, end: 20, tracks: null });
    expect(readLink(new URLSearchParams("range=20,10")).rangeSelection).toBeNull();
  });

  it("writes what it reads, ns to 3 decimals, without the keys of another kind of selection", () => {
    const range = { start: 1.23456, end: 99.9999 };
    expect(linkParams(range, { kind: "none" })).toEqual({ q: undefined, start: "1.235", end: "100", sel: undefined, range: undefined, tracks: undefined });
    const events = [{ id: 7, track: 0, depth: 0, startNs: 0, durNs: 1 }, { id: 9, track: 0, depth: 1, startNs: 0, durNs: 1 }];
    expect(linkParams(range, { kind: "events", events }).sel).toBe("7,9");
    const r = linkParams(range, { kind: "range", start: 10.00049, end: 20, tracks: [1, 2] });
    expect([r.sel, r.range, r.tracks]).toEqual([undefined, "10,20", "1,2"]);
    const back = readLink(new URLSearchParams(Object.entries(r).filter((e): e is [string, string] => e[1] !== undefined)));
    expect(back.rangeSelection).toEqual({ start: 10, end: 20, tracks: [1, 2] });
  });
});
