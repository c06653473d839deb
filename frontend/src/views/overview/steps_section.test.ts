// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { OverviewSteps } from "../../api/answers.gen.ts";
import { stepSource } from "./steps_section.ts";
import { cpuAnswer } from "./test_answers.ts";

const marked = (): OverviewSteps => cpuAnswer().per_host[0].steps;
const noLink = { openLink: () => undefined };

describe("where the steps come from", () => {
  it("says the markers for marked steps, with no inferred label", () => {
    const el = stepSource(marked(), noLink);
    const line = el.querySelector("[data-testid=ov-step-source]");
    expect(line?.textContent).toMatch(/^Steps from /);
    expect(line?.getAttribute("data-kind")).toBe(marked().source_kind);
    expect(el.querySelector("[data-testid=ov-step-inferred]")).toBeNull();
  });

  it("labels inferred steps as inferred, never as marked", () => {
    const source = "inferred from 10 jitted calls of `PjitFunction(update)` (no step markers)";
    const el = stepSource({ ...marked(), source_kind: "inferred", source }, noLink);
    const line = el.querySelector("[data-testid=ov-step-source]");
    expect(el.querySelector("[data-testid=ov-step-inferred]")?.textContent).toBe("Inferred steps: ");
    expect(line?.textContent).toContain(source);
    expect(line?.textContent).not.toContain("Steps from");
  });

  it("offers the other marker candidates and reloads with the one chosen", () => {
    const chosen: string[] = [];
    const el = stepSource({ ...marked(), candidates: ["outer_loop", "Profiled batch"] }, { ...noLink, chooseStepName: (name) => chosen.push(name) });
    const select = el.querySelector("[data-testid=ov-step-candidates]") as HTMLSelectElement;
    expect(Array.from(select.options).map((o) => o.value)).toEqual(["", "outer_loop", "Profiled batch"]);
    select.value = "Profiled batch";
    select.dispatchEvent(new Event("change"));
    expect(chosen).toEqual(["Profiled batch"]);
    expect(stepSource(marked(), { ...noLink, chooseStepName: () => undefined }).querySelector("[data-testid=ov-step-candidates]")).toBeNull();
  });

  it("says when device work launched before the first step is counted apart", () => {
    const note = "2 device events launched before the first step run into it for 1.2 ms";
    const el = stepSource({ ...marked(), before_first: 2, before_first_ns: 1_200_000, before_first_note: note }, noLink);
    expect(el.querySelector("[data-testid=ov-before-first]")?.textContent).toBe(note);
  });
});
