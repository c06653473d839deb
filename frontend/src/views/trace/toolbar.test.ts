// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { h } from "../../dom.ts";
import { statusText, Toolbar } from "./toolbar.ts";
import { type Tool, toolForKey } from "./tools.ts";

const stats = { tiles: 12, bytes: 3.5 * 1024 ** 2, inFlight: 2, queued: 1, requested: 15, cancelled: 0, evicted: 0, failed: 0 };

describe("toolbar", () => {
  it("writes the status line with the tile memory in binary units", () => {
    expect(statusText({ visibleNs: 12_345_678, level: 3, boxes: 12_345, tiles: stats })).toEqual({
      text: "12.35 ms visible · level 3 · 12,345 boxes · 12 tiles (3.5 MiB) · loading 3",
      loading: 3,
    });
    expect(statusText({ visibleNs: 1e9, level: null, boxes: 0, tiles: { ...stats, inFlight: 0, queued: 0 } }).text).toBe(
      "1 s visible · level – · 0 boxes · 12 tiles (3.5 MiB)",
    );
  });

  it("picks tools by digit, shifted digit or digit key, never by ?", () => {
    expect(toolForKey("3", "Digit3")).toBe("zoom");
    expect(toolForKey("$", "Digit4")).toBe("timing");
    expect(toolForKey("&", "Digit1")).toBe("select");
    expect(toolForKey("?", "Digit2")).toBeNull();
    expect(toolForKey("w", "KeyW")).toBeNull();
  });

  it("shows the tool picked and hands its buttons to the viewer", () => {
    const picked: Tool[] = [];
    const calls: string[] = [];
    const bar = new Toolbar(
      { setTool: (t) => picked.push(t), flowsChanged: () => calls.push("flows"), wholeTrace: () => calls.push("whole"), toggleHelp: () => calls.push("help") },
      h("div", { "data-testid": "search-slot" }),
    );
    bar.showTool("pan");
    const button = (id: string) => bar.el.querySelector(`[data-testid=${id}]`) as HTMLElement;
    expect(button("tool-pan").getAttribute("aria-checked")).toBe("true");
    expect(button("tool-select").classList.contains("active")).toBe(false);
    button("tool-timing").click();
    button("help-button").click();
    expect(picked).toEqual(["timing"]);
    expect(calls).toEqual(["help"]);
    expect(bar.el.querySelector("[data-testid=search-slot]")).not.toBeNull();
    bar.showStatus({ visibleNs: 1e6, level: 0, boxes: 1, tiles: stats });
    expect(button("trace-status").dataset.loading).toBe("3");
  });
});
