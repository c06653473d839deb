/** The tools of the profscope tab and where their views come from. A tool whose folder
 * `src/views/<tool>/index.ts` exists is loaded from it (own chunk); one without says what is planned. */

import type { ToolId } from "../api/types.ts";
import type { ViewModule } from "./view.ts";

/** Folders under src/views/ that have an index.ts, found by build.mjs / vitest.config.ts. */
declare const __PROFSCOPE_VIEWS__: string[];

export interface ToolInfo {
  id: ToolId;
  title: string;
  /** What the tool will show, for tools whose view is not built yet (absent once it is). */
  planned?: string;
}

export const TOOLS: ToolInfo[] = [
  {
    id: "trace",
    title: "Trace",
  },
  {
    id: "overview",
    title: "Overview",
    planned:
      "Planned: a one-page summary of the selected host — step time and its breakdown (compute, " +
      "communication, input, idle), device busy time, and the operations with the most self time, each " +
      "linking into the Trace tab at the matching time range.",
  },
  {
    id: "roofline",
    title: "Roofline",
    planned:
      "Planned: every XLA or GPU operation placed by its arithmetic intensity (FLOPs per byte accessed) " +
      "against its achieved FLOP/s, under the device's compute and memory-bandwidth roofs, from the cost " +
      "statistics recorded in the profile; operations without such statistics will be listed as not observed.",
  },
  {
    id: "xla",
    title: "XLA",
  },
];

export function hasView(tool: ToolId): boolean {
  return __PROFSCOPE_VIEWS__.includes(tool);
}

/** The view module of `tool`, or null when it is not built yet. */
export async function loadView(tool: ToolId): Promise<ViewModule | null> {
  if (!hasView(tool)) return null;
  return (await import(`./${tool}/index.ts`)) as ViewModule;
}
