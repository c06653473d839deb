/** The `compare` route (tools/compare/answers.py, docs/COMPARE.md) through the shared client, the
 * view's deep-link keys and the bases `/runs` offers. Keys: `base_run`, `base_session`, `base_host`
 * (the base), `step_name` and `base_step_name` (the annotations that mark a step on each side when
 * the profile has no step markers). The run is the shell's subject; compare takes one host per side. */

import type { CompareAnswer } from "../../api/answers.gen.ts";
import type { ProfscopeClient } from "../../api/client.ts";
import type { RunsResponse, Subject } from "../../api/types.ts";

export const TOOL_ID = "compare";

export interface BaseChoice {
  run: string;
  session: string;
  host: string;
}

export interface CompareOptions {
  /** null: no base picked yet. */
  base: BaseChoice | null;
  stepName: string;
  baseStepName: string;
}

/** The options a deep link names; a base needs all three of its keys. */
export function readOptions(params: URLSearchParams): CompareOptions {
  const run = params.get("base_run") ?? "";
  const session = params.get("base_session") ?? "";
  const host = params.get("base_host") ?? "";
  return {
    base: run && session && host ? { run, session, host } : null,
    stepName: (params.get("step_name") ?? "").trim(),
    baseStepName: (params.get("base_step_name") ?? "").trim(),
  };
}

/** The deep-link keys of `options` (undefined removes a key). */
export function optionParams(options: CompareOptions): Record<string, string | undefined> {
  return {
    base_run: options.base?.run,
    base_session: options.base?.session,
    base_host: options.base?.host,
    step_name: options.stepName || undefined,
    base_step_name: options.baseStepName || undefined,
  };
}

export function sameOptions(a: CompareOptions, b: CompareOptions): boolean {
  const sameBase = a.base === b.base || (a.base !== null && b.base !== null && a.base.run === b.base.run && a.base.session === b.base.session && a.base.host === b.base.host);
  return sameBase && a.stepName === b.stepName && a.baseStepName === b.baseStepName;
}

/** The run side: the shell's subject with one host (the first when several are merged). */
export function runSubject(subject: Subject): Subject {
  return { ...subject, hosts: subject.hosts.slice(0, 1) };
}

export function baseSubject(base: BaseChoice): Subject {
  return { run: base.run, session: base.session, hosts: [base.host] };
}

/** The route's query parameters besides the run's subject. */
export function routeParams(base: BaseChoice, options: CompareOptions): Record<string, string> {
  const params: Record<string, string> = { base_run: base.run, base_session: base.session, base_host: base.host };
  if (options.stepName) params.step_name = options.stepName;
  if (options.baseStepName) params.base_step_name = options.baseStepName;
  return params;
}

export function fetchCompare(client: ProfscopeClient, subject: Subject, base: BaseChoice, options: CompareOptions, signal?: AbortSignal): Promise<CompareAnswer> {
  return client.getJson<CompareAnswer>("compare", runSubject(subject), routeParams(base, options), signal);
}

export interface BaseHost {
  name: string;
}

export interface BaseSession {
  name: string;
  label: string;
  hosts: BaseHost[];
}

export interface BaseRun {
  name: string;
  sessions: BaseSession[];
}

/** The runs, sessions and hosts that can be a base: hosts the compare tool applies to (a trace). */
export function baseCandidates(runs: RunsResponse): BaseRun[] {
  const out: BaseRun[] = [];
  for (const run of runs.runs) {
    const sessions = run.sessions
      .map((s) => ({ name: s.name, label: s.label, hosts: s.hosts.filter((x) => x.tools.includes(TOOL_ID)).map((x) => ({ name: x.name })) }))
      .filter((s) => s.hosts.length > 0);
    if (sessions.length) out.push({ name: run.name, sessions });
  }
  return out;
}

/** The base a pick of `runName` (and maybe `sessionName`) leads to: that session or the run's first,
 * and the host named like the run's own when the session has one, else its first. */
export function completeBase(candidates: readonly BaseRun[], runName: string, sessionName: string | null, preferredHost: string): BaseChoice | null {
  const run = candidates.find((r) => r.name === runName);
  if (!run) return null;
  const session = run.sessions.find((s) => s.name === sessionName) ?? run.sessions[0];
  const host = session.hosts.find((x) => x.name === preferredHost) ?? session.hosts[0];
  return { run: run.name, session: session.name, host: host.name };
}
