// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { TENSORBOARD_DARK_CLASS, themeOf, watchTheme } from "./theme.ts";

/** A plugin iframe's window whose parent is TensorBoard (its body holding <tb-webapp>). */
function inTensorBoard(prefersDark: boolean) {
  const body = document.createElement("body");
  body.append(document.createElement("tb-webapp"));
  const media = { matches: prefersDark, addEventListener: () => {}, removeEventListener: () => {} };
  const win = { document, parent: { document: { body } }, matchMedia: () => media } as unknown as Window;
  return { win, body };
}

describe("theme", () => {
  it("follows TensorBoard's dark-mode class over the browser's preference", async () => {
    const { win, body } = inTensorBoard(true);
    expect(themeOf(win)).toBe("light");
    const seen: string[] = [];
    const stop = watchTheme(win, (t) => seen.push(t));
    expect(document.documentElement.dataset.theme).toBe("light");
    body.classList.add(TENSORBOARD_DARK_CLASS);
    await new Promise((r) => setTimeout(r, 0));
    expect(document.documentElement.dataset.theme).toBe("dark");
    expect(seen).toEqual(["light", "dark"]);
    stop();
  });

  it("follows prefers-color-scheme on its own", () => {
    const media = { matches: true };
    const win = { document, matchMedia: () => media } as unknown as Window;
    (win as unknown as { parent: Window }).parent = win;
    expect(themeOf(win)).toBe("dark");
    media.matches = false;
    expect(themeOf(win)).toBe("light");
  });
});
