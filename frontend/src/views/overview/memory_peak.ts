/** The host's allocator peak as one line of the Overview, for the "why did it OOM" question next to
 * "why is it slow": its bytes, step, op and device, and a link to the Memory tab, which shows that
 * device's curve and what is live at the peak. Kineto's `[memory]` events and an XPlane's allocator
 * events (TensorFlow's BFC allocators, named like "GPU_0_bfc") give the same line. No line when the
 * trace has no memory events (the answer leaves `memory_peak` out): a missing figure is never shown
 * as 0. */

import type { OverviewHost } from "../../api/answers.gen.ts";
import { h } from "../../dom.ts";
import { formatBytes } from "../../shared/units.ts";

/** A step by its marker's name; a bare number (an XPlane's step line names steps by number) as "step N". */
function stepText(step: string): string {
  return /^\d+$/.test(step) ? `step ${step}` : step;
}

/** "Memory peak: 16 MiB in ProfilerStep#3 under aten::empty (CUDA 0) → Memory tab"; null without a peak. */
export function memoryPeakLine(host: OverviewHost, openMemory: () => void): HTMLElement | null {
  const peak = host.memory_peak;
  if (!peak) return null;
  const link = h("button", { type: "button", class: "ov-link", "data-testid": "ov-memory-link", title: "Open the Memory tab: the allocator's curve and what is live at the peak" }, "Memory tab");
  link.addEventListener("click", openMemory);
  const step = peak.step ? ` in ${stepText(peak.step)}` : " outside every step";
  const op = peak.op ? ` under ${peak.op}` : ", in no host op";
  return h("p", { class: "ov-memory-peak", "data-testid": "ov-memory-peak" }, "Memory peak: ", h("strong", {}, formatBytes(peak.allocated_bytes)), `${step}${op} (${peak.device}) → `, link);
}
