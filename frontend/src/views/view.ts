/** The contract between the shell and a view. A view lives in `src/views/<tool>/index.ts` (beside the
 * folder's `tool.json`, see registry.ts) and exports `mount`; the build discovers the folder, bundles it
 * as its own chunk and the shell loads it the first time its tab opens. Heavy libraries belong in the
 * view's own dynamic imports. */

import type { ProfscopeClient } from "../api/client.ts";
import type { RunsHost, Subject, ToolId } from "../api/types.ts";

export interface ViewContext {
  client: ProfscopeClient;
  subject: Subject;
  /** The `/runs` entries of the selected hosts (files, formats, read errors). */
  hosts: RunsHost[];
  /** The view's keys of the deep link at mount time (e.g. `start`, `end`, `sel` for the trace). */
  params: URLSearchParams;
  /** Replace the view's keys in the deep link (undefined removes a key). */
  setParams(params: Record<string, string | undefined>): void;
  /** Open another tool with link keys, e.g. the trace at a range: `navigate("trace", traceRange(a, b))`.
   * Throws for an id that is not a tool of this build. */
  navigate(tool: ToolId, params: Record<string, string>): void;
  /** Aborted when the view is unmounted (subject changed): pass it to every request. */
  signal: AbortSignal;
}

export interface ViewInstance {
  /** The deep link changed under an open view (another tab navigated here, or the user edited it). */
  update?(params: URLSearchParams): void;
  /** The tab became visible again (e.g. re-measure sizes). */
  show?(): void;
  unmount?(): void;
}

export type MountView = (container: HTMLElement, ctx: ViewContext) => ViewInstance;

export interface ViewModule {
  mount: MountView;
}

/** Link keys that open the trace on [startNs, endNs] (ns from the session timeline start). */
export function traceRange(startNs: number, endNs: number): Record<string, string> {
  return { start: String(startNs), end: String(endNs) };
}

/** Link keys that open the trace on one event (global id) and select it. */
export function traceEvent(id: number): Record<string, string> {
  return { sel: String(id) };
}
