// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { ProfscopeClient } from "../../api/client.ts";
import type { ViewContext } from "../view.ts";
import { choiceParams, type MemoryAnswer, readChoice } from "./api.ts";
import { programAnswer } from "./fixture.ts";
import { heapChartConfig, heapPoints, instructionLink, kindText, NO_INSTRUCTION_EVENT, programLabel, programPeakText } from "./program.ts";
import { NO_TIMELINE } from "./timeline.ts";
import { MemoryView } from "./view.ts";

const BASE = "http://tb.local/data/plugin/profscope/";
const program = () => {
  const found = programAnswer().program;
  if (!found) throw new Error("the fixture has a program");
  return found;
};

describe("program heap chart", () => {
  it("draws the heap after each event, the peak where it is first reached", () => {
    const p = program();
    const points = heapPoints(p);
    expect(points.map((q) => q.x)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(Math.max(...points.map((q) => q.y))).toBe(p.peak_bytes);
    expect(points.find((q) => q.y === p.peak_bytes)?.x).toBe(p.peak_position);
    const config = heapChartConfig(p);
    expect(config.data.datasets[1].data).toEqual([{ x: 3, y: 9003108 }]);
    expect(config.options?.scales?.x?.max).toBe(p.heap.events);
  });

  it("says where the peak is and what holds it", () => {
    const p = program();
    expect(programPeakText(p)).toBe("Peak 8.59 MiB after 3 of 8 heap events, at ynn_fusion.2");
    expect(kindText(p)).toBe("parameter 1.55 MiB · output 1.04 MiB · constant 4 B · temporary 6 MiB");
    expect(programLabel(programAnswer().programs[0], false)).toBe("jit_train_step (13) · 8.59 MiB");
    expect(programPeakText({ ...p, heap: { ...p.heap, events: 0 } })).toBe("Peak 8.59 MiB: whole-program allocations only");
  });
});

describe("program links and deep link", () => {
  it("links an instruction to the events that run it, and nothing for one no event runs", () => {
    expect(instructionLink(program(), "ynn_fusion.2")).toEqual({ lk: "448,501,865" });
    expect(instructionLink(program(), "params__w1__.1")).toBeNull();
    expect(instructionLink({ ...program(), instruction_events: undefined }, "ynn_fusion.2")).toBeNull();
  });

  it("keeps the program and memory space in the deep link, space 0 as the default", () => {
    expect(choiceParams({ id: "13", host: 0 })).toEqual({ program: "13", program_host: "0", memory_space: undefined });
    expect(choiceParams({ id: "13", host: 1, memorySpace: 2 })).toEqual({ program: "13", program_host: "1", memory_space: "2" });
    expect(choiceParams(null)).toEqual({ program: undefined, program_host: undefined, memory_space: undefined });
    expect(readChoice(new URLSearchParams("program=12190760917235803885&program_host=0&memory_space=5"))).toEqual({ id: "12190760917235803885", host: 0, memorySpace: 5 });
    expect(readChoice(new URLSearchParams("program=13"))).toEqual({ id: "13", host: 0 });
    expect(readChoice(new URLSearchParams("program=-3"))).toBeNull();
    expect(readChoice(new URLSearchParams("memory_space=1"))).toBeNull();
  });
});

describe("program view", () => {
  /** `answers` gives the route's answer to a URL, or an error status. */
  function harness(
    answers: (url: URL) => MemoryAnswer | number,
    params = new URLSearchParams(),
  ): { view: MemoryView; asked: URL[]; written: Record<string, string | undefined>[]; navigated: [string, Record<string, string>][] } {
    const asked: URL[] = [];
    const written: Record<string, string | undefined>[] = [];
    const navigated: [string, Record<string, string>][] = [];
    const fetchImpl = async (raw: string) => {
      const url = new URL(raw);
      if (url.pathname.endsWith("trace/meta")) return new Response("{}", { status: 200 });
      asked.push(url);
      const answer = answers(url);
      if (typeof answer === "number") return new Response(JSON.stringify({ error: "no such program" }), { status: answer, headers: { "Content-Type": "application/json" } });
      return new Response(JSON.stringify(answer), { status: 200, headers: { "Content-Type": "application/json" } });
    };
    const ctx: ViewContext = {
      client: new ProfscopeClient(BASE, fetchImpl),
      subject: { run: "jax", session: "s1", hosts: ["vm"] },
      hosts: [],
      params,
      setParams: (p) => written.push(p),
      navigate: (tool, p) => navigated.push([tool, p]),
      signal: new AbortController().signal,
    };
    const view = new MemoryView(ctx);
    document.body.replaceChildren(view.el);
    return { view, asked, written, navigated };
  }
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));
  const text = (id: string) => document.querySelector(`[data-testid=${id}]`)?.textContent ?? "";

  it("shows why there is no allocator curve, then the program's peak and its buffers", async () => {
    const { view } = harness(() => programAnswer());
    await view.start();
    expect(text("mem-not-observed")).toContain("allocator memory not observed");
    expect(text("mem-program-peak-bytes")).toContain("8.59 MiB");
    expect(text("mem-program-peak-point")).toBe("Peak 8.59 MiB after 3 of 8 heap events, at ynn_fusion.2");
    const rows = [...document.querySelectorAll("[data-testid=mem-program-live-table] tbody tr")];
    expect(rows.length).toBe(15);
    expect(rows[0].textContent).toContain("2 MiB");
    expect(rows[0].textContent).toContain("f32[512,1024]{1,0}");
    const options = [...document.querySelectorAll("[data-testid=mem-program-select] option")] as HTMLOptionElement[];
    expect(options.map((o) => o.selected)).toEqual([true, false, false]);
    view.destroy();
  });

  it("draws no curve for a program without a heap simulation, and says why", async () => {
    const p = program();
    const whole = { ...p, heap: { position: [0], bytes: [p.whole_program_bytes], instruction: [""], events: 0 }, heap_reason: "no heap simulation for this memory space" };
    const { view } = harness(() => ({ ...programAnswer(), program: whole }));
    await view.start();
    expect(document.querySelector("[data-testid=mem-program-chart]")).toBeNull();
    expect(text("mem-program-temporary")).toContain("no heap simulation for this memory space");
    view.destroy();
  });

  it("asks for the program picked in the selector", async () => {
    const other = { ...program(), name: "jit__normal", program_id: "4", peak_bytes: 4194424 };
    const { view, asked } = harness((url) => (url.searchParams.get("program") === "4" ? { ...programAnswer(), program: other } : programAnswer()));
    await view.start();
    const select = document.querySelector("[data-testid=mem-program-select]") as HTMLSelectElement;
    select.value = "1";
    select.dispatchEvent(new Event("change"));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(asked[asked.length - 1].searchParams.get("program")).toBe("4");
    expect(asked[asked.length - 1].searchParams.get("program_host")).toBe("0");
    expect(document.querySelector("[data-testid=mem-program]")?.getAttribute("data-program")).toBe("jit__normal");
    view.destroy();
  });

  it("offers the memory spaces of a program that has several, asks for the one picked and keeps it in the link", async () => {
    const spaces = { ...program(), memory_spaces: [0, 1, 5] };
    const { view, asked, written } = harness((url) => ({ ...programAnswer(), program: { ...spaces, memory_space: Number(url.searchParams.get("memory_space") ?? "0"), peak_bytes: 12 } }));
    await view.start();
    const select = document.querySelector("[data-testid=mem-space-select]") as HTMLSelectElement;
    expect([...select.options].map((o) => [o.value, o.selected])).toEqual([["0", true], ["1", false], ["5", false]]);
    select.value = "5";
    select.dispatchEvent(new Event("change"));
    await settle();
    const last = asked[asked.length - 1].searchParams;
    expect([last.get("program"), last.get("program_host"), last.get("memory_space")]).toEqual(["13", "0", "5"]);
    expect(written[written.length - 1]).toEqual({ program: "13", program_host: "0", memory_space: "5" });
    expect(document.querySelector("[data-testid=mem-program]")?.getAttribute("data-memory-space")).toBe("5");
    expect((document.querySelector("[data-testid=mem-space-select]") as HTMLSelectElement).value).toBe("5");
    view.destroy();
  });

  it("shows no memory-space selector for a program with one space", async () => {
    const { view } = harness(() => programAnswer());
    await view.start();
    expect(document.querySelector("[data-testid=mem-space-select]")).toBeNull();
    view.destroy();
  });

  it("opens the program and memory space the deep link names, and the default when it is gone", async () => {
    const named = new URLSearchParams("program=4&program_host=0&memory_space=1");
    const other = { ...program(), name: "jit__normal", program_id: "4", memory_space: 1, memory_spaces: [0, 1] };
    const found = harness((url) => ({ ...programAnswer(), program: url.searchParams.get("program") === "4" ? other : program() }), named);
    await found.view.start();
    expect(found.asked[0].searchParams.get("memory_space")).toBe("1");
    expect(document.querySelector("[data-testid=mem-program]")?.getAttribute("data-program")).toBe("jit__normal");
    found.view.destroy();

    const gone = harness((url) => (url.searchParams.has("program") ? 404 : programAnswer()), new URLSearchParams("program=99"));
    await gone.view.start();
    expect(gone.asked.map((u) => u.searchParams.get("program"))).toEqual(["99", null]);
    expect(gone.written).toEqual([{ program: undefined, program_host: undefined, memory_space: undefined }]);
    expect(document.querySelector("[data-testid=mem-program]")?.getAttribute("data-program")).toBe("jit_train_step");
    gone.view.destroy();
  });

  it("draws the allocation timeline, and a click on a temporary's row selects its box", async () => {
    const { view } = harness(() => programAnswer());
    await view.start();
    expect(text("mem-timeline-text")).toContain("4 buffers of 1 temporary allocation over 8 heap events");
    expect(document.querySelector("[data-testid=mem-timeline-canvas]")).not.toBeNull();
    const rows = [...document.querySelectorAll<HTMLElement>("[data-testid=mem-program-live-table] tbody tr[data-box]")];
    expect(rows.map((r) => r.dataset.box).sort()).toEqual(["0", "1", "2"]); // the three temporaries; whole-program rows have no box
    const ynn = rows.find((r) => r.textContent?.includes("ynn_fusion.2"));
    ynn?.click();
    const area = document.querySelector<HTMLElement>("[data-testid=mem-timeline]");
    expect(area?.dataset.selected).toBe("80");
    expect(area?.dataset.lit).toBe("80");
    expect(ynn?.classList.contains("mem-row-lit")).toBe(true);
    expect(text("mem-timeline-detail")).toBe("Selected: ynn_fusion.2 · f32[512,1024]{1,0} · f32 · 2 MiB · temporary, allocation 18 at offset 4 MiB · heap events 2–4 · live at the peak · jit(train_step)/transpose(jvp())/dot_general");
    ynn?.click(); // a second click clears it
    expect(area?.dataset.selected).toBe("");
    expect(ynn?.classList.contains("mem-row-lit")).toBe(false);
    view.destroy();
  });

  it("says why a program with a heap simulation has no allocation timeline", async () => {
    const { view } = harness(() => ({ ...programAnswer(), program: { ...program(), timeline: undefined } }));
    await view.start();
    expect(text("mem-timeline-none")).toBe(NO_TIMELINE);
    expect(document.querySelector("[data-testid=mem-program-live-table] tbody tr[data-box]")).toBeNull();
    view.destroy();
  });

  it("links each live buffer's instruction and the peak's to its executions in the Trace tab", async () => {
    const { view, navigated } = harness(() => programAnswer());
    await view.start();
    const links = [...document.querySelectorAll("[data-testid=mem-program-live-table] [data-testid=mem-instruction-link]")] as HTMLButtonElement[];
    expect(links.map((l) => l.textContent).sort()).toEqual(["broadcast_maximum_fusion", "dot", "dot.1", "ynn_fusion", "ynn_fusion.1", "ynn_fusion.2", "ynn_fusion.4"]);
    const parameter = [...document.querySelectorAll("[data-testid=mem-program-live-table] td[data-col=instruction]")].find((td) => td.textContent === "params__w1__.1");
    expect(parameter?.getAttribute("title")).toBe(NO_INSTRUCTION_EVENT);
    links.find((l) => l.textContent === "dot")?.click();
    const peak = document.querySelector("[data-testid=mem-program-peak-link]") as HTMLButtonElement;
    expect(peak.textContent).toBe("ynn_fusion.2");
    peak.click();
    expect(navigated).toEqual([
      ["trace", { lk: "474,523,550" }],
      ["trace", { lk: "448,501,865" }],
    ]);
    view.destroy();
  });
});
