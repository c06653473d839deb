import { describe, expect, it } from "vitest";
import { exactNamePattern, inPage, isEmptyQuery, literalQuery, pageOffset, parseQuery, stepIndex } from "./search.ts";

describe("search stepping", () => {
  it("starts at the first match going forward and at the last going back", () => {
    expect(stepIndex(-1, 1, 308_850)).toBe(0);
    expect(stepIndex(-1, -1, 308_850)).toBe(308_849);
  });

  it("wraps at both ends", () => {
    expect(stepIndex(308_849, 1, 308_850)).toBe(0);
    expect(stepIndex(0, -1, 308_850)).toBe(308_849);
    expect(stepIndex(5, 1, 308_850)).toBe(6);
  });

  it("has nowhere to go without matches", () => {
    expect(stepIndex(-1, 1, 0)).toBe(-1);
  });

  it("finds the page of a match past the first thousand", () => {
    expect(pageOffset(999, 1000)).toBe(0);
    expect(pageOffset(1000, 1000)).toBe(1000);
    expect(pageOffset(308_849, 1000)).toBe(308_000);
    expect(inPage(1000, 0, 1000)).toBe(false);
    expect(inPage(1000, 1000, 1000)).toBe(true);
    expect(inPage(308_849, 308_000, 850)).toBe(true);
  });
});

describe("search queries", () => {
  it("takes key:value words as argument filters and the rest as text", () => {
    expect(parseQuery("  gemm stream:7 grid:*1024* ", false)).toEqual({ text: "gemm", regex: false, arg: "stream:7 grid:*1024*" });
    expect(parseQuery("aten::mm", false)).toEqual({ text: "aten::mm", regex: false, arg: "" });
    expect(parseQuery('"nccl:all_reduce" device:0', true)).toEqual({ text: "nccl:all_reduce", regex: true, arg: "device:0" });
    expect(parseQuery("Memcpy HtoD", false).text).toBe("Memcpy HtoD");
    expect(isEmptyQuery(parseQuery("   ", false))).toBe(true);
    expect(literalQuery(" nccl:all_reduce ")).toEqual({ text: "nccl:all_reduce", regex: false, arg: "" });
  });

  it("escapes a name into an exact regular expression", () => {
    const pattern = exactNamePattern("void at::f<float>(a.b) [x]*");
    expect(new RegExp(pattern).test("void at::f<float>(a.b) [x]*")).toBe(true);
    expect(new RegExp(pattern).test("void at::f<float>(a.b) [x]*2")).toBe(false);
  });
});
