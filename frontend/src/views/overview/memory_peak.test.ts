// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { memoryPeakLine } from "./memory_peak.ts";
import { gpuAnswer } from "./test_answers.ts";

describe("memory peak line", () => {
  it("says the peak's bytes, step, op and device, and its link opens the Memory tab", () => {
    const host = gpuAnswer().per_host[0];
    host.memory_peak = { allocated_bytes: 16 * 1024 * 1024, device: "CUDA 0", step: "ProfilerStep#3", step_number: 3, op: "aten::empty" };
    let opened = 0;
    const el = memoryPeakLine(host, () => opened++);
    expect(el?.textContent).toBe("Memory peak: 16 MiB in ProfilerStep#3 under aten::empty (CUDA 0) → Memory tab");
    (el?.querySelector("[data-testid=ov-memory-link]") as HTMLButtonElement).click();
    expect(opened).toBe(1);
  });

  it("names a peak outside every step and op instead of leaving a gap", () => {
    const host = gpuAnswer().per_host[0];
    host.memory_peak = { allocated_bytes: 512, device: "CPU" };
    expect(memoryPeakLine(host, () => {})?.textContent).toBe("Memory peak: 512 B outside every step, in no host op (CPU) → Memory tab");
  });

  it("names an XPlane allocator's peak, its numbered step as a step", () => {
    const host = gpuAnswer().per_host[0];
    host.memory_peak = { allocated_bytes: 6210111488, device: "GPU_6_bfc", step: "0", step_number: 0, op: "gradient_tape/replica_6/Tile" };
    expect(memoryPeakLine(host, () => {})?.textContent).toBe("Memory peak: 5.78 GiB in step 0 under gradient_tape/replica_6/Tile (GPU_6_bfc) → Memory tab");
  });

  it("shows nothing when the trace has no memory events", () => {
    expect(memoryPeakLine(gpuAnswer().per_host[0], () => {})).toBeNull();
  });
});
