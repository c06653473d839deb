// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { HloOp } from "../../api/answers.gen.ts";
import type { EventDetails } from "../../api/types.ts";
import { DetailsPanel } from "./details.ts";
import { eventQuery, eventRequest, type HloAnswer, HloGraphSection, type HloParams, isXlaOp, nodeGroups, opRequest, sentence } from "./hlo_graph.ts";

const settle = () => new Promise((r) => setTimeout(r, 0));

/** What the server answers for a tiny program: p → add → fusion (the op) → tuple. */
function opAnswer(op: string, overrides: Partial<HloOp> = {}): HloOp {
  const names = ["p", "add.1", "fusion.2", "tuple.3"];
  const at = names.indexOf(op);
  const nodes = names
    .map((name, i) => ({ name, opcode: name.split(".")[0], shape: "f32[8]", distance: Math.abs(i - at), hidden: 0 }))
    .sort((a, b) => a.distance - b.distance);
  const edges = names.slice(1).map((user, i) => ({ operand: names[i], user, position: 0 }));
  const dot = [
    "digraph hlo {",
    ...nodes.map((n) => `  "${n.name}" [label="${n.name}\\n${n.opcode} ${n.shape}"${n.name === op ? ", penwidth=2" : ""}];`),
    ...edges.map((e) => `  "${e.operand}" -> "${e.user}";`),
    "}",
  ].join("\n");
  return {
    kind: "op",
    subject: "run 'r' session 's'",
    host_index: 0,
    program_id: "12190760917235803885",
    module: "jit_f",
    computation: "main",
    op,
    opcode: op.split(".")[0],
    text: `%${op} = f32[8]{0} ${op.split(".")[0]}()`,
    op_name: "jit(f)/add",
    source: "/w/model.py:42",
    callers: [],
    radius: 2,
    nodes,
    edges,
    capped: false,
    dot,
    ...overrides,
  };
}

function fakeHost(answers: (params: HloParams) => HloAnswer) {
  const requests: HloParams[] = [];
  const searches: string[] = [];
  return {
    requests,
    searches,
    host: {
      load: async (params: HloParams) => {
        requests.push(params);
        return answers(params);
      },
      findEvents: (q: string) => searches.push(q),
    },
  };
}

/** Waits until the section has drawn its graph (Graphviz's WASM loads on first use). */
async function drawn(section: HloGraphSection): Promise<void> {
  for (let i = 0; i < 400 && !section.el.querySelector("[data-testid=hlo-graph] svg"); i++) await new Promise((r) => setTimeout(r, 10));
  await settle();
}

function event(args: Record<string, unknown>): EventDetails {
  return { id: 7, name: "fusion.2", category: "", track: 0, section: 0, host: 0, start_ns: 0, dur_ns: 10, self_ns: 10, depth: 0, args, flows_out: [], flows_in: [] };
}

describe("which events get a Graph section", () => {
  it("knows an XLA op by its program_id and asks for it by the event's id", () => {
    expect(isXlaOp(event({ program_id: 15, hlo_op: "fusion.2" }))).toBe(true);
    expect(isXlaOp(event({ long_name: "%fusion.2 = f32[8]{0} fusion()" }))).toBe(false);
    expect(isXlaOp(event({}))).toBe(false);
    expect(eventRequest(7, 2)).toEqual({ event: 7, radius: 2 });
  });

  it("walks with the program id string the answer gives, not a rounded number", () => {
    const answer = opAnswer("fusion.2");
    expect(opRequest(answer, "add.1", 3)).toEqual({ program_id: "12190760917235803885", op: "add.1", host_index: 0, radius: 3 });
    expect(opRequest(answer, "add.1", 3, true)).toMatchObject({ full: 1 });
    expect(eventQuery(answer)).toBe("fusion.2");
    expect(sentence("the profile carries no HLO module")).toBe("The profile carries no HLO module.");
  });

  it("reads the instruction of each node from the title Graphviz gives it", () => {
    const svg = new DOMParser().parseFromString(
      '<svg xmlns="http://www.w3.org/2000/svg"><g class="node"><title>add.1</title></g><g class="edge"><title>add.1->fusion.2</title></g><g class="node"><title>fusion.2</title></g></svg>',
      "image/svg+xml",
    ).documentElement;
    expect([...nodeGroups(svg).keys()]).toEqual(["add.1", "fusion.2"]);
  });
});

describe("the Graph section", () => {
  it("draws the op's neighbourhood, walks to a clicked node and back, and finds the op's events", async () => {
    const { host, requests, searches } = fakeHost((p) => opAnswer(String(p.op ?? "fusion.2"), p.full ? { module_text: { text: "HloModule jit_f", shown: 4, total: 4, truncated: false } } : {}));
    let shown = 0;
    const section = new HloGraphSection(host, 7, { probe: false, shown: () => shown++ });
    expect(shown).toBe(1);
    await drawn(section);
    const el = section.el;
    expect(requests[0]).toEqual({ event: 7, radius: 2 });
    expect(el.querySelector("[data-testid=hlo-title]")?.textContent).toBe("%fusion.2 in jit_f · program 12190760917235803885");
    expect(el.querySelector("[data-testid=hlo-text]")?.textContent).toBe("%fusion.2 = f32[8]{0} fusion()");
    const ops = [...el.querySelectorAll("g.node")].map((g) => g.getAttribute("data-op"));
    expect(ops.sort()).toEqual(["add.1", "fusion.2", "p", "tuple.3"]);
    expect([...el.querySelectorAll("g.tv-hlo-current")].map((g) => g.getAttribute("data-op"))).toEqual(["fusion.2"]);
    expect((el.querySelector("[data-testid=hlo-back]") as HTMLButtonElement).disabled).toBe(true);

    (el.querySelector("g.node[data-op='add.1']") as SVGGElement).dispatchEvent(new MouseEvent("click", { bubbles: true }));
    await drawn(section);
    expect(requests[1]).toEqual({ program_id: "12190760917235803885", op: "add.1", host_index: 0, radius: 2 });
    expect(section.op?.op).toBe("add.1");
    expect(el.querySelector("[data-testid=hlo-text]")?.textContent).toBe("%add.1 = f32[8]{0} add()");
    (el.querySelector("[data-testid=hlo-back]") as HTMLButtonElement).click();
    await drawn(section);
    expect(section.op?.op).toBe("fusion.2");

    const radius = el.querySelector("[data-testid=hlo-radius]") as HTMLSelectElement;
    radius.value = "4";
    radius.dispatchEvent(new Event("change"));
    await drawn(section);
    expect(requests.at(-1)).toMatchObject({ op: "fusion.2", radius: 4 });

    (el.querySelector("[data-testid=hlo-find-events]") as HTMLAnchorElement).click();
    expect(searches).toEqual(["fusion.2"]);

    const details = el.querySelector("[data-testid=hlo-module]") as HTMLDetailsElement;
    details.open = true;
    details.dispatchEvent(new Event("toggle"));
    for (let i = 0; i < 50 && !el.querySelector("[data-testid=hlo-module-text]"); i++) await settle();
    expect(el.querySelector("[data-testid=hlo-module-text]")?.textContent).toBe("HloModule jit_f");
    expect(requests.at(-1)).toMatchObject({ full: 1 });
    section.stop();
  });

  it("shows a fusion's fused computation, the callers of a fused instruction and the cap note", async () => {
    const { host } = fakeHost(() =>
      opAnswer("fusion.2", {
        fusion: { name: "fused_computation", instructions: ["%param_0 = f32[8]{0} parameter(0)", "ROOT %neg = f32[8]{0} negate(f32[8]{0} %param_0)"] },
        callers: ["call.9"],
        capped: true,
        note: "showing the 80 nearest of 120 instructions within 6 edges",
      }),
    );
    const section = new HloGraphSection(host, 7, { probe: false, shown: () => {} });
    await drawn(section);
    expect(section.el.querySelector("[data-testid=hlo-fusion]")?.textContent).toBe("%param_0 = f32[8]{0} parameter(0)\nROOT %neg = f32[8]{0} negate(f32[8]{0} %param_0)");
    expect(section.el.querySelector("[data-testid=hlo-caller]")?.textContent).toBe("%call.9");
    expect(section.el.querySelector("[data-testid=hlo-note]")?.textContent).toBe("Showing the 80 nearest of 120 instructions within 6 edges.");
  });

  it("says when the profile carries no HLO module", async () => {
    const { host } = fakeHost(() => ({ kind: "no-module", subject: "s", host_index: 0, reason: "the profile carries no HLO module" }));
    const section = new HloGraphSection(host, 7, { probe: false, shown: () => {} });
    await settle();
    expect(section.el.hidden).toBe(false);
    expect(section.el.querySelector("[data-testid=hlo-none]")?.textContent).toBe("The profile carries no HLO module.");
  });

  it("stays hidden when a probed event names no op, and appears when it does", async () => {
    let shown = 0;
    const quiet = fakeHost(() => ({ kind: "not-an-op", subject: "s", host_index: 0, reason: "event 7 names no instruction" }));
    const hidden = new HloGraphSection(quiet.host, 7, { probe: true, shown: () => shown++ });
    await settle();
    expect([hidden.el.hidden, shown]).toEqual([true, 0]);
    const failing = { load: async () => Promise.reject(new Error("boom")), findEvents: () => {} };
    const failed = new HloGraphSection(failing, 7, { probe: true, shown: () => shown++ });
    await settle();
    expect([failed.el.hidden, shown]).toEqual([true, 0]);
    const found = new HloGraphSection(fakeHost(() => opAnswer("fusion.2")).host, 7, { probe: true, shown: () => shown++ });
    await drawn(found);
    expect([found.el.hidden, shown]).toEqual([false, 1]);
  });
});

describe("the details panel", () => {
  function panel(answers: (params: HloParams) => HloAnswer, xplane = true) {
    const fake = fakeHost(answers);
    let grew = 0;
    const details = new DetailsPanel({ trackLabel: () => "TPU:0 / XLA Ops", jumpTo: () => {}, hlo: fake.host, mayHoldHlo: () => xplane, panelGrew: () => grew++, pickName: () => {}, stepPicked: () => {} });
    return { details, fake, grew: () => grew };
  }

  it("puts an XLA op's graph beside its event and grows once to make room for it", async () => {
    const { details, fake, grew } = panel(() => opAnswer("fusion.2"));
    details.showEvent(event({ program_id: 1.2190760917235804e19, hlo_op: "fusion.2" }));
    expect(details.el.querySelector(".tv-details-grid")?.classList.contains("tv-hlo-grid")).toBe(true);
    // Once out of the one-line hint, once for the graph.
    expect(grew()).toBe(2);
    expect(details.el.querySelector("[data-testid=details-args]")?.textContent).toContain("≈ 12190760917235804160");
    await drawn(details.graphSection as HloGraphSection);
    details.showEvent(event({ program_id: 15 }));
    expect(grew()).toBe(2);
    expect(fake.requests.map((p) => p.event)).toEqual([7, 7]);
    details.hint();
    expect(details.graphSection).toBeNull();
  });

  it("asks quietly about other events of an XPlane and never about other traces", async () => {
    const { details, fake } = panel(() => ({ kind: "not-an-op", subject: "s", host_index: 0, reason: "no" }));
    details.showEvent(event({}));
    await settle();
    expect(fake.requests).toHaveLength(1);
    expect(details.el.querySelector(".tv-hlo-grid")).toBeNull();
    expect(details.el.querySelector("[data-testid=hlo-section]")?.hasAttribute("hidden")).toBe(true);
    const kineto = panel(() => opAnswer("fusion.2"), false);
    kineto.details.showEvent(event({}));
    expect(kineto.fake.requests).toHaveLength(0);
    expect(kineto.details.el.querySelector("[data-testid=hlo-section]")).toBeNull();
  });
});
