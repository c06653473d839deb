/** The `overview` route (tools/overview/answers.py, docs/OVERVIEW.md) through the shared client, and the
 * view's deep-link keys: `step_name` (the annotation that marks a step when the profile has no step
 * markers), `batch_size` (examples per step, for examples/s) and `group_by=shapes` (host ops grouped by
 * name and input shapes). Absent keys are the route's defaults, so a plain link stays short. */

import type { OverviewAnswer } from "../../api/answers.gen.ts";
import type { ProfscopeClient } from "../../api/client.ts";
import type { Subject } from "../../api/types.ts";

export type GroupBy = "name" | "shapes";

export interface OverviewOptions {
  /** The annotation whose slices are the steps; "" lets the route find the step markers. */
  stepName: string;
  /** Examples per step; null: not given (no examples/s). */
  batchSize: number | null;
  groupBy: GroupBy;
}

/** A batch size as the user typed it: a whole number ≥ 1, else null. */
export function parseBatchSize(text: string | null): number | null {
  const trimmed = (text ?? "").trim();
  if (!/^\d+$/.test(trimmed)) return null;
  const n = Number(trimmed);
  return Number.isSafeInteger(n) && n >= 1 ? n : null;
}

/** The options a deep link names; malformed values fall back to the defaults. */
export function readOptions(params: URLSearchParams): OverviewOptions {
  return {
    stepName: (params.get("step_name") ?? "").trim(),
    batchSize: parseBatchSize(params.get("batch_size")),
    groupBy: params.get("group_by") === "shapes" ? "shapes" : "name",
  };
}

/** The deep-link keys of `options` (undefined removes a key). */
export function optionParams(options: OverviewOptions): Record<string, string | undefined> {
  return {
    step_name: options.stepName || undefined,
    batch_size: options.batchSize === null ? undefined : String(options.batchSize),
    group_by: options.groupBy === "name" ? undefined : options.groupBy,
  };
}

export function sameOptions(a: OverviewOptions, b: OverviewOptions): boolean {
  return a.stepName === b.stepName && a.batchSize === b.batchSize && a.groupBy === b.groupBy;
}

/** The route's query parameters for `options` (the subject's run, session and hosts are added by the client). */
export function routeParams(options: OverviewOptions): Record<string, string | number> {
  const params: Record<string, string | number> = {};
  if (options.stepName) params.step_name = options.stepName;
  if (options.batchSize !== null) params.batch_size = options.batchSize;
  if (options.groupBy !== "name") params.group_by = options.groupBy;
  return params;
}

export function fetchOverview(client: ProfscopeClient, subject: Subject, options: OverviewOptions, signal?: AbortSignal): Promise<OverviewAnswer> {
  return client.getJson<OverviewAnswer>("overview", subject, routeParams(options), signal);
}
