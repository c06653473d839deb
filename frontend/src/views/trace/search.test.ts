import { describe, expect, it } from "vitest";
import { inPage, pageOffset, stepIndex } from "./search.ts";

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
