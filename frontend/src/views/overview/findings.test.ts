// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { OverviewFinding } from "../../api/answers.gen.ts";
import { costText, findingsSection } from "./findings.ts";

function finding(kind: OverviewFinding["kind"], cost?: { ns: number; share: number }): OverviewFinding {
  const out: OverviewFinding = {
    kind,
    host: "worker0",
    title: "The step waits in `unknown`",
    observation: "`unknown` takes 81 % of the wall time.",
    hypothesis: "`unknown` sets the step time.",
    next_check: "Profile with its result prepared in advance.",
    rule: "a phase's time without model ops ≥ 50% of the steady steps' wall time",
    evidence: [],
    link: { search: "unknown", host: "worker0" },
  };
  if (cost) {
    out.cost_ns = cost.ns;
    out.cost_share = cost.share;
  }
  return out;
}

const noEvents = { openLink: () => undefined };

describe("finding costs", () => {
  it("states the cost per step and its share", () => {
    expect(costText(finding("input_bound", { ns: 14_000_000, share: 0.81 }))).toBe("costs ≈ 14 ms per step (81 %)");
    expect(costText(finding("sync_stall", { ns: 1_234_567, share: 0.104 }))).toBe("costs ≈ 1.23 ms per step (10 %)");
  });

  it("shows no cost for a note", () => {
    expect(costText(finding("not_observed"))).toBe("");
    const el = findingsSection([finding("not_observed")], false, () => true, noEvents);
    expect(el.querySelector("[data-testid=ov-finding-cost]")).toBeNull();
  });

  it("shows each finding's cost under its title, in the answer's order", () => {
    const el = findingsSection([finding("host_wait", { ns: 15_000_000, share: 0.9 }), finding("repeated_copy", { ns: 200_000, share: 0.19 })], false, () => true, noEvents);
    const costs = [...el.querySelectorAll("[data-testid=ov-finding-cost]")].map((c) => c.textContent);
    expect(costs).toEqual(["costs ≈ 15 ms per step (90 %)", "costs ≈ 200 µs per step (19 %)"]);
    const rows = [...el.querySelectorAll("tbody tr")].map((r) => (r as HTMLElement).dataset.kind);
    expect(rows).toEqual(["host_wait", "repeated_copy"]);
  });
});
