/** The `memory` route (docs/MEMORY.md) through the shared client (`&program=` for one XLA program's
 * compiler view), and the Trace tab's link keys of a device's peak. */

import type { MemoryAnswer, MemoryPeak } from "../../api/answers.gen.ts";
import type { ProfscopeClient } from "../../api/client.ts";
import type { Subject } from "../../api/types.ts";
import { traceEvent, traceRange } from "../view.ts";

export type {
  MemoryAllocation,
  MemoryAnswer,
  MemoryDevice,
  MemoryLiveGroup,
  MemoryOpRow,
  MemoryPeak,
  MemorySeries,
  MemoryStep,
  ProgramBuffer,
  ProgramHeap,
  ProgramMemory,
  ProgramSummary,
} from "../../api/answers.gen.ts";

export class MemoryApi {
  constructor(private readonly client: ProfscopeClient) {}

  /** The answer; `program` picks an XLA program (its unsigned id and host index) for the compiler view. */
  answer(subject: Subject, signal?: AbortSignal, program?: { id: string; host: number }): Promise<MemoryAnswer> {
    const params: Record<string, string> = program ? { program: program.id, program_host: String(program.host) } : {};
    return this.client.getJson<MemoryAnswer>("memory", subject, params, signal);
  }
}

/** The trace around the peak (its op with the op's duration on each side), the op selected (the
 * `[memory]` event itself when no op encloses it). */
export function peakTraceParams(peak: MemoryPeak): Record<string, string> {
  return { ...traceRange(peak.trace_start_ns, peak.trace_end_ns), ...traceEvent(peak.op_event_id ?? peak.memory_event_id) };
}
