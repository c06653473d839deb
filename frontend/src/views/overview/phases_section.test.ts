// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { OverviewHost, OverviewPhases } from "../../api/answers.gen.ts";
import { OUTSIDE_COLOR, phaseBars, phaseChartData, phasesSection } from "./phases_section.ts";
import { CPU_ONLY, cpuAnswer } from "./test_answers.ts";

/** The cpu answer's three steps, labelled as torch writes non-ASCII names: `unknown`, `unknown (2)`. */
function phases(): OverviewPhases {
  return {
    source: "your labels directly under 'ProfilerStep#N'",
    scope: "steady steps 2–3",
    step_numbers: [1, 2, 3],
    per_step: [
      [8_000_000, 900_000, 100_000],
      [1_600_000, 300_000, 100_000],
      [1_800_000, 350_000, 50_000],
    ],
    device_reason: CPU_ONLY,
    phases: [
      { name: "unknown", median_ns: 1_700_000, share: 0.81, model_ops_fraction: 0, outside: false },
      { name: "unknown (2)", median_ns: 325_000, p10_ns: 305_000, p90_ns: 345_000, share: 0.155, model_ops_fraction: 0.9, outside: false },
      { name: "(outside your phases)", median_ns: 75_000, share: 0.036, outside: true },
    ],
  };
}

function host(with_phases: OverviewPhases | undefined): OverviewHost {
  return { ...cpuAnswer().per_host[0], phases: with_phases };
}

describe("phases section", () => {
  it("draws a stacked bar per step, warm-up included, the outside time in grey", () => {
    const bars = phaseBars(phases(), [true, false, false]);
    expect(bars.map((b) => b.label)).toEqual(["1", "2", "3"]);
    expect(bars[1].wall_ns).toBe(2_000_000);
    expect(bars[0].warmup).toBe(true);
    const data = phaseChartData(phases(), bars);
    expect(data.series.map((s) => s.label)).toEqual(["unknown", "unknown (2)", "(outside your phases)"]);
    expect(data.series[2].color).toBe(OUTSIDE_COLOR);
    expect(data.series[0].data).toEqual([8_000_000, 1_600_000, 1_800_000]);
    expect(data.warmup).toEqual([0]);
  });

  it("tables each phase with its spread, share, device busy not observed and model ops", () => {
    const { el, frames } = phasesSection(host(phases()), { openLink: () => {} });
    expect(el?.querySelector("[data-testid=ov-phases-source]")?.textContent).toContain("your labels directly under 'ProfilerStep#N'");
    const rows = Array.from(el?.querySelectorAll("[data-testid=ov-phases-table] tbody tr") ?? []);
    expect(rows.map((r) => r.getAttribute("data-phase-name"))).toEqual(["unknown", "unknown (2)", "(outside your phases)"]);
    const cells = (i: number) => Array.from(rows[i].querySelectorAll("td")).map((td) => td.textContent);
    expect(cells(0)).toEqual(["unknown", "1.7 ms", "not observed", "81%", "not observed", "no model op runs in it"]);
    expect(cells(1).slice(1)).toEqual(["325 µs", "305 µs – 345 µs", "15.5%", "not observed", "90%"]);
    expect(rows[0].querySelectorAll("td")[4].getAttribute("title")).toBe(CPU_ONLY);
    expect(cells(2).slice(4)).toEqual(["", ""]);
    expect(el?.querySelectorAll("canvas li").length).toBe(3);
    for (const f of frames) f.destroy();
  });

  it("says why there are no phases, and shows nothing without steps", () => {
    const none = { ...phases(), phases: [], per_step: [], source: "no labels directly under 'train'" };
    const { el } = phasesSection(host(none), { openLink: () => {} });
    expect(el?.querySelector("[data-testid=ov-phases-none]")?.textContent).toContain("No phases: no labels directly under 'train'");
    expect(phasesSection(host(undefined), { openLink: () => {} }).el).toBeNull();
  });
});
