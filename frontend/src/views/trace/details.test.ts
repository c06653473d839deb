// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { canvasColors } from "./colors.ts";
import { DETAILS_HEIGHT_KEY, detailsSplitter } from "./details.ts";

describe("the details panel's splitter", () => {
  it("restores the height the splitter last set", () => {
    localStorage.setItem(DETAILS_HEIGHT_KEY, "240");
    const panel = document.createElement("div");
    detailsSplitter(panel);
    expect(panel.style.height).toBe("240px");
    localStorage.setItem(DETAILS_HEIGHT_KEY, "junk");
    const other = document.createElement("div");
    detailsSplitter(other);
    expect(other.style.height).toBe("");
  });
});

describe("canvas colours", () => {
  it("follow the page's theme", () => {
    document.documentElement.dataset.theme = "dark";
    expect(canvasColors().rows[0]).toBe("#1e1f22");
    document.documentElement.dataset.theme = "light";
    expect(canvasColors().rows[0]).toBe("#ffffff");
  });
});
