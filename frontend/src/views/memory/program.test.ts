// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { ProfscopeClient } from "../../api/client.ts";
import type { ViewContext } from "../view.ts";
import type { MemoryAnswer } from "./api.ts";
import { programAnswer } from "./fixture.ts";
import { heapChartConfig, heapPoints, kindText, programLabel, programPeakText } from "./program.ts";
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

describe("program view", () => {
  function harness(answers: (url: URL) => MemoryAnswer): { view: MemoryView; asked: URL[] } {
    const asked: URL[] = [];
    const fetchImpl = async (raw: string) => {
      const url = new URL(raw);
      if (url.pathname.endsWith("trace/meta")) return new Response("{}", { status: 200 });
      asked.push(url);
      return new Response(JSON.stringify(answers(url)), { status: 200, headers: { "Content-Type": "application/json" } });
    };
    const ctx: ViewContext = {
      client: new ProfscopeClient(BASE, fetchImpl),
      subject: { run: "jax", session: "s1", hosts: ["vm"] },
      hosts: [],
      params: new URLSearchParams(),
      setParams: () => undefined,
      navigate: () => undefined,
      signal: new AbortController().signal,
    };
    const view = new MemoryView(ctx);
    document.body.replaceChildren(view.el);
    return { view, asked };
  }
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
});
