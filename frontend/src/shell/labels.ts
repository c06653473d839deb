/** Picker labels that say what a run holds, so runs from different frameworks can be told apart in the
 * run list before opening one (a bare folder name says nothing about XPlane vs trace vs XLA logs). */

import type { RunsFile, RunsRun } from "../api/types.ts";

const FORMAT_LABELS: Record<string, string> = {
  xplane: "XPlane",
  chrome_trace: "Chrome trace",
  xla_metrics: "XLA logs",
  xla_debug: "XLA logs",
  xla_graphs: "XLA logs",
};

function filesOf(run: RunsRun): RunsFile[] {
  return run.sessions.flatMap((s) => s.hosts.flatMap((h) => h.files));
}

/** "name — XPlane, XLA logs · 2 sessions · 1 unreadable file": formats in order of first appearance. */
export function runLabel(run: RunsRun): string {
  const files = filesOf(run);
  const kinds = [
    ...new Set(files.filter((f) => !f.error && f.format).map((f) => FORMAT_LABELS[f.format] ?? f.format)),
  ];
  const bad = files.filter((f) => f.error).length;
  const parts = [kinds.length ? `${run.name} — ${kinds.join(", ")}` : run.name];
  if (run.sessions.length > 1) parts.push(`${run.sessions.length} sessions`);
  if (bad) parts.push(`${bad} unreadable file${bad > 1 ? "s" : ""}`);
  return parts.join(" · ");
}
