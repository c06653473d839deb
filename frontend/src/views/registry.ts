/** The tools of the profscope tab, built from their folders: nothing here names a tool. Each
 * `src/views/<tool>/` declares itself in a `tool.json` ({id, title}) beside its view's
 * `index.ts`, loaded as its own chunk the first time its tab opens. `scripts/views.mjs` finds and checks the declarations at build (and test) time
 * and injects them here through `define`.
 *
 * The tab order is not declared here: it is the server's (each tool's Python `Tool(order=...)`),
 * which `/runs` applies when it lists the tools of each host; `tabOrder` reads it from there.
 *
 * Why `tool.json` and not a `tool.ts`: the declaration is data the build needs before bundling
 * anything (which folders are tools, which have views), and Node reads JSON as it is,
 * without compiling TypeScript first; keeping it out of the view module also means the shell can draw
 * every tab without loading a single view chunk. */

import type { DiscoveredTool } from "../../scripts/views.mjs";
import type { ToolId } from "../api/types.ts";
import type { ViewModule } from "./view.ts";

/** Replaced by the build (build.mjs / vitest.config.ts via scripts/views.mjs) with the discovered tools. */
declare const __PROFSCOPE_TOOLS__: DiscoveredTool[];

export type ToolInfo = DiscoveredTool;

/** Every tool of this build, by id (the tab order is `tabOrder`'s). */
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

/** Every tool of this build in tab order, read from `/runs`: each host's `tools` lists the tools that
 * apply to it in the server's tab order, so the lists are merged into one order that keeps every
 * list's (ties by which tool was seen first), the same whichever host is picked. Tools no host lists
 * follow, by id (their tabs are disabled everywhere); ids this build lacks are left out. */
export function tabOrder(toolLists: Iterable<readonly string[]>): ToolInfo[] {
  const seen: ToolId[] = [];
  const after = new Map<ToolId, Set<ToolId>>();
  const before = new Map<ToolId, number>();
  for (const list of toolLists) {
    const ids = list.filter(isToolId);
    for (const id of ids) {
      if (!after.has(id)) {
        seen.push(id);
        after.set(id, new Set());
        before.set(id, 0);
      }
    }
    for (let i = 1; i < ids.length; i++) {
      const [a, b] = [ids[i - 1], ids[i]];
      const next = after.get(a) as Set<ToolId>;
      if (a !== b && !next.has(b)) {
        next.add(b);
        before.set(b, (before.get(b) as number) + 1);
      }
    }
  }
  const order: ToolId[] = [];
  const left = new Set(seen);
  while (left.size) {
    // The first-seen tool nothing still waiting comes before; lists that disagree (a cycle) fall
    // back to first-seen order rather than losing tabs.
    const id = seen.find((t) => left.has(t) && (before.get(t) as number) <= 0) ?? (seen.find((t) => left.has(t)) as ToolId);
    left.delete(id);
    order.push(id);
    for (const b of after.get(id) as Set<ToolId>) before.set(b, (before.get(b) as number) - 1);
  }
  return [...order.map(toolInfo), ...TOOLS.filter((t) => !after.has(t.id))];
}
