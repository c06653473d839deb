// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { ComparePhases } from "../../api/answers.gen.ts";
import { phasesSection } from "./phases.ts";

const PHASES: ComparePhases = {
  run_source: "your labels directly under 'ProfilerStep#N'",
  base_source: "your labels and framework phases (DataLoader) directly under 'ProfilerStep#N'",
  rows: [
    { name: "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", outside: false, base_ns: 30_000_000, base_share: 0.71 },
    { name: "batch_read", outside: false, run_ns: 40_000, run_share: 0.003 },
    { name: "train", outside: false, base_ns: 12_000_000, run_ns: 11_000_000, base_share: 0.28, run_share: 0.99, delta_ns: -1_000_000, relative: -1 / 12 },
    { name: "(outside your phases)", outside: true, base_ns: 100_000, run_ns: 100_000, base_share: 0.003, run_share: 0.008, delta_ns: 0, relative: 0 },
  ],
};

describe("compare phases", () => {
  it("shows both sides per phase, the delta signed, a phase one side lacks as not observed", () => {
    const el = phasesSection(PHASES);
    const rows = Array.from(el?.querySelectorAll("tbody tr") ?? []);
    const cells = (i: number) => Array.from(rows[i].children).map((c) => c.textContent);
    expect(rows.map((r) => r.getAttribute("data-phase-name"))).toEqual(PHASES.rows.map((r) => r.name));
    expect(cells(2)).toEqual(["train", "12 ms", "28%", "11 ms", "99%", "−1 ms", "−8.33%"]);
    expect(cells(0).slice(1)).toEqual(["30 ms", "71%", "not observed", "not observed", "not observed", "not observed"]);
    expect(rows[0].children[3].getAttribute("title")).toBe("only the base's steps have this phase");
    expect(rows[1].children[1].getAttribute("title")).toBe("only the run's steps have this phase");
    expect(rows[2].children[5].className).toContain("cmp-less");
    expect(el?.querySelector("[data-testid=cmp-phases-source]")?.textContent).toContain("Matched by name and order");
  });

  it("is absent when neither side has phases", () => {
    expect(phasesSection(undefined)).toBeNull();
  });
});
