// @vitest-environment happy-dom
import type { ChartConfiguration } from "chart.js";
import { afterEach, describe, expect, it } from "vitest";
import { chartInk } from "./chart_theme.ts";
import { themed } from "./charts.ts";

type Colour = () => string;

describe("themed", () => {
  afterEach(() => delete document.documentElement.dataset.theme);

  it("gives the scales' labels and lines the theme's colours at each draw, keeping the view's own", () => {
    const config: ChartConfiguration<"bar"> = {
      type: "bar",
      data: { datasets: [] },
      options: { scales: { x: { grid: { color: "#123456" } }, y: { title: { display: true, text: "bytes" } } } },
    };
    const scales = themed(config).options?.scales as Record<string, { ticks: { color: Colour }; title: { color: Colour; text: string }; grid: { color: string | Colour } }>;
    expect(scales.x.grid.color).toBe("#123456");
    expect(scales.y.title.text).toBe("bytes");
    expect(scales.y.ticks.color()).toBe(chartInk().text);
    document.documentElement.dataset.theme = "dark";
    expect(scales.y.ticks.color()).toBe(chartInk().text);
    expect(scales.y.title.color()).toBe("#b4b8bf");
    expect((scales.y.grid.color as Colour)()).toBe(chartInk().border);
  });
});
