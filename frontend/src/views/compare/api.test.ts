import { describe, expect, it } from "vitest";
import { baseCandidates, completeBase, optionParams, readOptions, routeParams, runSubject, sameOptions } from "./api.ts";
import { runsAnswer } from "./test_answers.ts";

describe("deep-link keys", () => {
  it("reads a base only when all three keys name it, and writes the keys back", () => {
    const options = readOptions(new URLSearchParams("base_run=b&base_session=s&base_host=h&step_name=%20train%20"));
    expect(options).toEqual({ base: { run: "b", session: "s", host: "h" }, stepName: "train", baseStepName: "" });
    expect(optionParams(options)).toEqual({ base_run: "b", base_session: "s", base_host: "h", step_name: "train", base_step_name: undefined });
    expect(routeParams(options.base!, options)).toEqual({ base_run: "b", base_session: "s", base_host: "h", step_name: "train" });
    const partial = readOptions(new URLSearchParams("base_run=b&base_host=h"));
    expect(partial.base).toBeNull();
    expect(optionParams(partial)).toEqual({ base_run: undefined, base_session: undefined, base_host: undefined, step_name: undefined, base_step_name: undefined });
  });

  it("compares options by value", () => {
    const a = readOptions(new URLSearchParams("base_run=b&base_session=s&base_host=h"));
    expect(sameOptions(a, readOptions(new URLSearchParams("base_host=h&base_session=s&base_run=b")))).toBe(true);
    expect(sameOptions(a, { ...a, baseStepName: "x" })).toBe(false);
    expect(sameOptions(a, { ...a, base: null })).toBe(false);
  });

  it("compares the first host of a merged subject", () => {
    expect(runSubject({ run: "r", session: "s", hosts: ["rank-0", "rank-1"] })).toEqual({ run: "r", session: "s", hosts: ["rank-0"] });
  });
});

describe("base candidates", () => {
  it("lists only hosts the compare tool applies to, and runs that have one", () => {
    const candidates = baseCandidates(runsAnswer());
    expect(candidates.map((r) => r.name)).toEqual(["pytorch_cpu_slow_input", "pytorch_cpu_prefetch_input", "two_sessions"]);
  });

  it("completes a picked run with its first session and the host named like the run's own", () => {
    const candidates = baseCandidates(runsAnswer());
    expect(completeBase(candidates, "two_sessions", null, "rank-1")).toEqual({ run: "two_sessions", session: "s1", host: "rank-1" });
    expect(completeBase(candidates, "two_sessions", "s2", "worker0")).toEqual({ run: "two_sessions", session: "s2", host: "worker0" });
    expect(completeBase(candidates, "two_sessions", "s1", "absent")).toEqual({ run: "two_sessions", session: "s1", host: "rank-0" });
    expect(completeBase(candidates, "nope", null, "x")).toBeNull();
  });
});
