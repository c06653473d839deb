/** Picker labels that say what a run holds, so runs from different frameworks can be told apart in the
 * run list before opening one (a bare folder name says nothing about XPlane vs trace vs XLA logs).
 * The words come from `/runs` (`format_label`, session `label`): the backend knows the formats, the
 * frontend only arranges them. */

import type { RunsFile, RunsRun, RunsSession } from "../api/types.ts";

function filesOf(run: RunsRun): RunsFile[] {
  return run.sessions.flatMap((s) => s.hosts.flatMap((h) => h.files));
}

/** The file's format for people; the raw format id when the server sent no label. */
export function formatLabel(file: RunsFile): string {
  return file.format_label ?? file.format ?? "unknown format";
}

/** What the session picker shows; the session is still named by `name` in links and requests. */
export function sessionLabel(session: RunsSession): string {
  return session.label ?? session.name;
}

/** "name — XPlane, XLA logs · 2 sessions · 1 unreadable file": formats in order of first appearance. */
export function runLabel(run: RunsRun): string {
  const files = filesOf(run);
  const kinds = [...new Set(files.filter((f) => !f.error && f.format).map(formatLabel))];
  const bad = files.filter((f) => f.error).length;
  const parts = [kinds.length ? `${run.name} — ${kinds.join(", ")}` : run.name];
  if (run.sessions.length > 1) parts.push(`${run.sessions.length} sessions`);
  if (bad) parts.push(`${bad} unreadable file${bad > 1 ? "s" : ""}`);
  return parts.join(" · ");
}
