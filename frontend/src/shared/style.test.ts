// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { ensureStyle } from "./style.ts";

describe("ensureStyle", () => {
  it("adds a view's stylesheet once, however often the view opens", () => {
    ensureStyle("test-style", ".a { color: red }");
    ensureStyle("test-style", ".a { color: blue }");
    const styles = document.head.querySelectorAll("#test-style");
    expect(styles.length).toBe(1);
    expect(styles[0].textContent).toBe(".a { color: red }");
  });
});
