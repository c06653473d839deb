/** The tools of the profscope tab, built from their folders: nothing here names a tool. Each
 * `src/views/<tool>/` declares itself in a `tool.json` ({id, title, order}) beside its view's
 * `index.ts`, loaded as its own chunk the first time its tab opens. `scripts/views.mjs` finds and checks the declarations at build (and test) time
 * and injects them here through `define`.
 *
 * Why `tool.json` and not a `tool.ts`: the declaration is data the build needs before bundling
 * anything (which folders are tools, which have views, the tab order), and Node reads JSON as it is,
 * without compiling TypeScript first; keeping it out of the view module also means the shell can draw
 * every tab without loading a single view chunk. */

import type { DiscoveredTool } from "../../scripts/views.mjs";
import type { ToolId } from "../api/types.ts";
import type { ViewModule } from "./view.ts";

/** Replaced by the build (build.mjs / vitest.config.ts via scripts/views.mjs) with the discovered tools. */
declare const __PROFSCOPE_TOOLS__: DiscoveredTool[];

export type ToolInfo = DiscoveredTool;

/** Every tool, in tab order. */
export const TOOLS: readonly ToolInfo[] = __PROFSCOPE_TOOLS__;

/** Whether `id` names a tool of this build (ids come from `/runs`, deep links and views). */
export function isToolId(id: string | null | undefined): id is ToolId {
  return TOOLS.some((t) => t.id === id);
}

/** The tool named `id`; an unknown id is a programming error (validate outside input with isToolId). */
export function toolInfo(id: ToolId): ToolInfo {
  const tool = TOOLS.find((t) => t.id === id);
  if (!tool) throw new Error(`unknown tool "${id}"; the tools are ${TOOLS.map((t) => t.id).join(", ")}`);
  return tool;
}

/** The view module of `tool`. */
export async function loadView(tool: ToolId): Promise<ViewModule> {
  toolInfo(tool);
  return (await import(`./${tool}/index.ts`)) as ViewModule;
}
