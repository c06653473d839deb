/** From a figure to its events in the Trace tab. A link with a time range opens that range; a link
 * with only a search text (an op or kernel row) asks `trace/search` for the matching events and opens
 * the first one whose name is the text (else the first match), zoomed to it and selected, with the
 * text in the trace's search box (`q`) so Enter walks on through the other matches. */

import type { OverviewLink, SearchMatch } from "../../api/answers.gen.ts";
import { traceEvent, traceRange } from "../view.ts";

/** How much of the trace to show around one event: its duration on each side, at least 1 µs. */
const MIN_PAD_NS = 1000;

/** The trace's link keys for a time-range link; null when the link has no range. */
export function rangeParams(link: OverviewLink): Record<string, string> | null {
  if (link.start_ns === undefined || link.end_ns === undefined || !(link.end_ns > link.start_ns)) return null;
  return traceRange(link.start_ns, link.end_ns);
}

/** The match to open for `text`: the first (in time order) named exactly so, else the first. */
export function pickMatch(matches: readonly SearchMatch[], text: string): SearchMatch | null {
  return matches.find((m) => m.name === text) ?? matches[0] ?? null;
}

/** The trace's link keys that show `match` with some context around it, selected. */
export function matchParams(match: SearchMatch): Record<string, string> {
  const pad = Math.max(match.dur_ns, MIN_PAD_NS);
  return { ...traceRange(Math.max(0, match.start_ns - pad), match.start_ns + match.dur_ns + pad), ...traceEvent(match.id) };
}
