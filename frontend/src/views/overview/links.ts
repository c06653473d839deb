/** From a figure to its events in the Trace tab. A link with a search text (a finding's evidence, an
 * op or kernel row) asks `trace/search` for the matching events and opens them selected, walked
 * "k of N" (`lk`): those named exactly the text, inside the link's time range and on its host, else
 * every match there; the window is the link's range, else some context around the first. A link
 * with only a time range opens that range. */

import type { OverviewLink, SearchMatch } from "../../api/answers.gen.ts";
import { traceRange } from "../view.ts";

/** How much of the trace to show around one event: its duration on each side, at least 1 µs. */
const MIN_PAD_NS = 1000;
/** Event ids a link carries at most (the Trace tab selects them one by one). */
const MAX_LINKED = 200;

/** The trace's link keys for a time-range link; null when the link has no range. */
export function rangeParams(link: OverviewLink): Record<string, string> | null {
  if (link.start_ns === undefined || link.end_ns === undefined || !(link.end_ns > link.start_ns)) return null;
  return traceRange(link.start_ns, link.end_ns);
}

/** The matches a link names: on host `hostIndex` (null: any), inside its range, named exactly its
 * search text when some are, else all of them. */
export function evidenceMatches(link: OverviewLink, matches: readonly SearchMatch[], hostIndex: number | null): SearchMatch[] {
  const lo = link.start_ns ?? -Infinity;
  const hi = link.end_ns ?? Infinity;
  const inside = matches.filter((m) => m.start_ns + m.dur_ns >= lo && m.start_ns <= hi && (hostIndex === null || Math.floor(m.id / 2 ** 32) === hostIndex));
  const exact = inside.filter((m) => m.name === link.search);
  return (exact.length ? exact : inside).slice(0, MAX_LINKED);
}

/** The trace's link keys that open `found` (the link's evidence) selected one by one, with the
 * search text in the trace's box; null when nothing was found. */
export function evidenceParams(link: OverviewLink, found: readonly SearchMatch[]): Record<string, string> | null {
  const first = found[0];
  if (!first) return null;
  const pad = Math.max(first.dur_ns, MIN_PAD_NS);
  const window = rangeParams(link) ?? traceRange(Math.max(0, first.start_ns - pad), first.start_ns + first.dur_ns + pad);
  return { ...window, lk: found.map((m) => m.id).join(","), ...(link.search ? { q: link.search } : {}) };
}
