// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { absent, card, cellElement, csvNumber, duration, figureElement, percent } from "./cells.ts";
import { devicesSection } from "./devices.ts";
import { breakdownTable, examplesReason, statsCards } from "./steps_section.ts";
import { categories, CPU_ONLY, cpuAnswer, gpuAnswer } from "./test_answers.ts";

describe("not observed", () => {
  it("reads 'not observed' with the reason as tooltip, never 0", () => {
    for (const cell of [duration(undefined, "why"), percent(Number.NaN, "why"), absent("why")]) {
      const el = figureElement(cell);
      expect(el.textContent).toBe("not observed");
      expect(el.getAttribute("title")).toBe("why");
      expect(el.dataset.absent).toBe("1");
      const td = cellElement(cell, true);
      expect(td.textContent).toBe("not observed");
      expect(td.className).toBe("num ov-absent");
    }
    expect(figureElement(duration(0, "why")).textContent).toBe("0 ns");
    expect(card("Busy", absent("no GPU"), "", "busy").querySelector("[title='no GPU']")?.textContent).toBe("not observed");
  });

  it("writes CSV numbers plainly, without binary rounding noise", () => {
    expect(csvNumber(0.0238 * 100)).toBe("2.38");
    expect(csvNumber(1_200_000)).toBe("1200000");
    expect(percent(0.5, "").kind === "number" && percent(0.5, "")).toMatchObject({ csv: "50", text: "50%" });
  });

  it("shows p10/p90 of a short window as not observed, with the window note", () => {
    const stats = cpuAnswer().per_host[0].steps.stats;
    const el = statsCards(stats, "no steps", undefined);
    const p10 = el.querySelector("[data-testid=ov-card-p10] [data-absent]");
    expect(p10?.textContent).toBe("not observed");
    expect(p10?.getAttribute("title")).toBe(stats?.note);
    expect(el.querySelector("[data-testid=ov-card-median]")?.textContent).toContain("2.1 ms");
    const examples = el.querySelector("[data-testid=ov-card-examples] [data-absent]");
    expect(examples?.getAttribute("title")).toBe(examplesReason(undefined, stats));
    const withBatch = statsCards({ ...(stats as NonNullable<typeof stats>), examples_per_s: 15_238.1 }, "no steps", 32);
    expect(withBatch.querySelector("[data-testid=ov-card-examples]")?.textContent).toBe("Examples/s15,200batch size 32 ÷ median step");
  });

  it("shows every figure as not observed when there are no steps", () => {
    const el = statsCards(undefined, "no step markers: name an annotation", undefined);
    const absentFigures = Array.from(el.querySelectorAll("[data-absent]"));
    expect(absentFigures.length).toBe(7);
    expect(absentFigures.every((e) => e.getAttribute("title") === "no step markers: name an annotation")).toBe(true);
  });

  it("lists the categories a CPU-only capture cannot show as not observed in the breakdown table", () => {
    const table = breakdownTable(cpuAnswer().per_host[0], categories(false));
    const rows = Array.from(table.querySelectorAll("tbody tr[data-category]"));
    expect(rows.map((r) => r.getAttribute("data-category"))).toEqual(["device_compute", "communication", "input", "host_compute", "idle"]);
    const device = rows[0];
    expect(Array.from(device.querySelectorAll("td.num")).map((td) => td.textContent)).toEqual(Array(5).fill("not observed"));
    expect(device.querySelector("td.num")?.getAttribute("title")).toBe(CPU_ONLY);
    expect(Array.from(rows[2].querySelectorAll("td.num")).map((td) => td.textContent)).toEqual(["2.1 ms", "15.9%", "1.1 ms", "26.2%", "550 µs"]);
  });

  it("shows the device figures of a CPU-only capture as not observed, with the reason", () => {
    const { el, frames } = devicesSection(cpuAnswer().per_host[0]);
    expect(frames).toEqual([]);
    const figures = Array.from(el.querySelectorAll(".ov-card-value"));
    expect(figures.length).toBe(7);
    expect(figures.every((f) => f.textContent === "not observed" && f.querySelector("[title]")?.getAttribute("title") === CPU_ONLY)).toBe(true);
    expect(el.querySelector("[data-testid=ov-device-reason]")?.textContent).toBe(CPU_ONLY);
    expect(el.textContent).not.toMatch(/\b0(\.0+)? ?(%|ns)\b/);
  });

  it("shows busy, idle and the idle split of each stream when the device was observed", () => {
    const { el, frames } = devicesSection(gpuAnswer().per_host[0]);
    expect(frames.length).toBe(1);
    const stream = el.querySelector("[data-testid=ov-stream-row]");
    expect(Array.from(stream?.querySelectorAll("td") ?? []).map((td) => td.textContent)).toEqual(["stream 7", "40", "450 ms", "75%", "", "120 ms", "30 ms", "0 ns", "39"]);
    expect(el.querySelector("[data-testid=ov-card-launch-median]")?.textContent).toContain("1.7 µs");
    expect(el.querySelector("[data-testid=ov-card-overlap]")?.textContent).toContain("25%");
    for (const f of frames) f.destroy();
  });
});
