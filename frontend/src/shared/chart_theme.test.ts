// @vitest-environment happy-dom
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { chartInk, gridColor, onThemeChange } from "./chart_theme.ts";

const SRC = join(__dirname, "..");

function cssFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return cssFiles(path);
    return name.endsWith(".css") ? [path] : [];
  });
}

/** Literal greys (white and black included): channels within 24 of each other. Hues (accents, the
 * severity colours) read on both backgrounds; a grey is a background, line or text tone the dark
 * theme must change. */
function literalGreys(css: string): string[] {
  const hex = css.replace(/\/\*[\s\S]*?\*\//g, "").match(/#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?\b/g) ?? [];
  return hex.filter((h) => {
    const full = h.length === 4 ? [...h.slice(1)].map((c) => c + c).join("") : h.slice(1);
    const [r, g, b] = [0, 2, 4].map((i) => parseInt(full.slice(i, i + 2), 16));
    return Math.max(r, g, b) - Math.min(r, g, b) < 24;
  });
}

describe("chart colours follow the theme", () => {
  afterEach(() => delete document.documentElement.dataset.theme);

  it("gives the light or dark neutrals as data-theme says", () => {
    const light = chartInk();
    document.documentElement.dataset.theme = "dark";
    const dark = chartInk();
    expect(dark.grid).not.toBe(light.grid);
    expect(dark.ink).not.toBe(light.ink);
    expect(gridColor()).toBe(dark.grid);
  });

  it("tells its charts when the theme changes", async () => {
    let changes = 0;
    const stop = onThemeChange(() => changes++);
    document.documentElement.dataset.theme = "dark";
    await new Promise((r) => setTimeout(r, 0));
    stop();
    document.documentElement.dataset.theme = "light";
    await new Promise((r) => setTimeout(r, 0));
    expect(changes).toBe(1);
  });

  it("leaves no literal grey in a tab's stylesheet: they take styles.css' theme variables", () => {
    const files = cssFiles(SRC).filter((f) => !f.endsWith("styles.css"));
    expect(files.length).toBeGreaterThan(5);
    const greys = files.flatMap((f) => literalGreys(readFileSync(f, "utf8")).map((h) => `${f.slice(SRC.length + 1)}: ${h}`));
    // White text on a coloured badge or button stays white in both themes.
    expect(greys.filter((g) => !/: #fff$/i.test(g))).toEqual([]);
  });
});
