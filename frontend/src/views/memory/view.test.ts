// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { ProfscopeClient } from "../../api/client.ts";
import type { ViewContext } from "../view.ts";
import { type MemoryAnswer, peakTraceParams } from "./api.ts";
import { allocatorAnswer } from "./allocator_fixture.ts";
import { peakAnswer } from "./fixture.ts";
import { liveText, listing, MemoryView } from "./view.ts";

const BASE = "http://tb.local/data/plugin/profscope/";

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

function harness(answer: MemoryAnswer): { view: MemoryView; navigated: [string, Record<string, string>][] } {
  const fetchImpl = async (url: string) => (new URL(url).pathname.endsWith("trace/meta") ? json({}) : json(answer));
  const navigated: [string, Record<string, string>][] = [];
  const ctx: ViewContext = {
    client: new ProfscopeClient(BASE, fetchImpl),
    subject: { run: "job", session: "s1", hosts: ["peak"] },
    hosts: [],
    params: new URLSearchParams(),
    setParams: () => undefined,
    navigate: (tool, p) => navigated.push([tool, p]),
    signal: new AbortController().signal,
  };
  const view = new MemoryView(ctx);
  document.body.replaceChildren(view.el);
  return { view, navigated };
}

const text = (id: string) => document.querySelector(`[data-testid=${id}]`)?.textContent ?? "";

describe("memory view", () => {
  it("says how to record memory when the profile has none, and nothing else", async () => {
    const { view } = harness({ observed: false, reason: "memory not observed: record with profile_memory=True", devices: [], warnings: [], programs: [] });
    await view.start();
    expect(text("mem-not-observed")).toBe("memory not observed: record with profile_memory=True");
    expect(document.querySelector("[data-testid=mem-device]")).toBeNull();
  });

  it("shows the peak, its step and op, and the tables", async () => {
    const { view } = harness(peakAnswer());
    await view.start();
    expect(text("mem-peak-bytes")).toContain("16 MiB");
    expect(text("mem-peak-step")).toContain("ProfilerStep#3");
    expect(text("mem-peak-op")).toContain("big_backward_temporary › aten::div");
    expect(text("mem-peak")).toContain("Reserved at peaknot observed");
    expect(document.querySelectorAll("[data-testid=mem-steps-table] tbody tr").length).toBe(5);
    const first = document.querySelector("[data-testid=mem-live-table] tbody tr");
    expect(first?.textContent).toContain("aten::empty[4194304]16 MiB1");
    expect(document.querySelector("[data-testid=mem-never-table] tbody tr")?.textContent).toContain("ProfilerStep#5");
    view.destroy();
  });

  it("shows an XPlane allocator's own figures and its fragmentation curve, a Kineto device none", async () => {
    const { view } = harness(allocatorAnswer());
    await view.start();
    expect(text("mem-capacity")).toContain("144 GiB");
    expect(text("mem-fragmentation-at-peak")).toContain("41.9%");
    expect(document.querySelector("[data-testid=mem-fragmentation-chart] canvas")).not.toBeNull();
    view.destroy();
    const kineto = harness(peakAnswer());
    await kineto.view.start();
    expect(document.querySelector("[data-testid=mem-allocator]")).toBeNull();
    expect(document.querySelector("[data-testid=mem-fragmentation-chart]")).toBeNull();
    kineto.view.destroy();
  });

  it("opens the Trace tab around the peak with its op selected", async () => {
    const { view, navigated } = harness(peakAnswer());
    await view.start();
    (document.querySelector("[data-testid=mem-peak-trace]") as HTMLButtonElement).click();
    const peak = peakAnswer().devices[0].peak;
    expect(navigated).toEqual([["trace", peakTraceParams(peak)]]);
    expect(navigated[0][1]).toEqual({ start: String(peak.trace_start_ns), end: String(peak.trace_end_ns), sel: String(peak.op_event_id) });
    view.destroy();
  });

  it("names what the live blocks do not explain", () => {
    const device = { ...peakAnswer().devices[0], before_capture_bytes: 2048, live_at_peak_bytes: 1024, live_at_peak_count: 1 };
    expect(liveText(device)).toBe("1 KiB in 1 blocks allocated in the capture; the other 2 KiB of the peak were allocated before the capture started.");
    expect(listing(3, 81, "allocations")).toBe("the 3 largest of 81 allocations");
    expect(listing(6, 6, "blocks")).toBe("6 blocks");
  });

  it("breaks the peak's step down as XProf does where the events name their step, else says why", async () => {
    // gpu_host_bfc of tests/data/xplane/gpu_8x_tf_training.xplane.pb as tools.memory.peak_step gives it
    const step = {
      step: 1,
      rows: [
        { size_bytes: 256, count: 65, bytes: 16640, op: "__inference_train_single_step_318906" },
        { size_bytes: 256, count: 1, bytes: 256, op: "gradient_tape/replica_1/bert_span_labeler/bert_encoder_1/transformer/layer_0/activation/Gelu/mul_1/Mul" },
      ],
      count: 66,
      bytes: 16896,
      before_step_bytes: 589056,
    };
    const answer = allocatorAnswer();
    const named = harness({ ...answer, devices: [{ ...answer.devices[0], peak_step: step, peak_step_reason: undefined }] });
    await named.view.start();
    expect(document.querySelector("[data-testid=mem-step-blocks] [data-testid=mem-listing]")?.textContent).toBe(
      'Step 1 (the events\' group_id): 66 blocks allocated in it live at the peak, 16.5 KiB; 575 KiB held from before the step (XProf\'s "unused preallocated device memory")',
    );
    const rows = [...document.querySelectorAll("[data-testid=mem-step-blocks-table] tbody tr")];
    expect(rows.map((r) => r.querySelector("td[data-col=count]")?.textContent)).toEqual(["65", "1"]);
    expect(rows[0].querySelector("td[data-col=shape]")?.textContent).toBe("not observed");
    named.view.destroy();

    const unnamed = harness(allocatorAnswer());
    await unnamed.view.start();
    expect(document.querySelector("[data-testid=mem-step-blocks-table]")).toBeNull();
    expect(text("mem-peak-step-reason")).toContain("not observed; no event of this allocator names its step (group_id)");
    unnamed.view.destroy();
  });
});
