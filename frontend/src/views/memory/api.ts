/** The `memory` route (docs/MEMORY.md) through the shared client (`&program=`, `&program_host=` and
 * `&memory_space=` for one XLA program's compiler view, kept in the view's deep link under the same
 * keys), and the Trace tab's link keys of a device's peak. */

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
  MemoryPeakStep,
  MemoryPeakStepRow,
  MemorySeries,
  MemoryStep,
  ProgramBuffer,
  ProgramHeap,
  ProgramMemory,
  ProgramSummary,
  ProgramTimeline,
} from "../../api/answers.gen.ts";

/** An XLA program of the compiler view: its unsigned id, its host's index and the memory space
 * (absent: the route's default, 0). */
export interface ProgramChoice {
  id: string;
  host: number;
  memorySpace?: number;
}

/** The view's deep-link keys of a choice (undefined removes a key; memory space 0 is the default). */
export function choiceParams(choice: ProgramChoice | null): Record<string, string | undefined> {
  const space = choice?.memorySpace;
  return { program: choice?.id, program_host: choice ? String(choice.host) : undefined, memory_space: space ? String(space) : undefined };
}

/** The choice a deep link names, or null when it names none (or names it badly). */
export function readChoice(params: URLSearchParams): ProgramChoice | null {
  const id = params.get("program") ?? "";
  const host = Number(params.get("program_host") ?? "0");
  const space = Number(params.get("memory_space") ?? "0");
  if (!/^\d{1,20}$/.test(id) || !Number.isInteger(host) || host < 0 || !Number.isInteger(space) || space < 0) return null;
  return space ? { id, host, memorySpace: space } : { id, host };
}

export class MemoryApi {
  constructor(private readonly client: ProfscopeClient) {}

  /** The answer; `program` picks an XLA program (its unsigned id and host index) and memory space
   * for the compiler view. */
  answer(subject: Subject, signal?: AbortSignal, program?: ProgramChoice | null): Promise<MemoryAnswer> {
    const params: Record<string, string> = program ? { program: program.id, program_host: String(program.host) } : {};
    if (program?.memorySpace !== undefined) params.memory_space = String(program.memorySpace);
    return this.client.getJson<MemoryAnswer>("memory", subject, params, signal);
  }
}

/** The trace around the peak (its op with the op's duration on each side), the op selected (the
 * `[memory]` event itself when no op encloses it). */
export function peakTraceParams(peak: MemoryPeak): Record<string, string> {
  return { ...traceRange(peak.trace_start_ns, peak.trace_end_ns), ...traceEvent(peak.op_event_id ?? peak.memory_event_id) };
}
