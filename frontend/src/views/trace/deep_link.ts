/** The trace's keys of the deep link: `start` / `end` (the visible window, ns), `sel` (selected event
 * ids) or `range` + `tracks` (a selected time range on tracks), and `q` (the search box's text). The
 * events other tabs link to are `lk` (ids) or `find` (a name), read by linked_walk.ts; the track
 * panel's keys are tracks.ts'. */

import type { Selection } from "./selection.ts";
import type { Range } from "./viewport.ts";

export interface LinkedView {
  /** The window to show, when the link names a valid one. */
  range: Range | null;
  /** Event ids to select (empty when none). */
  eventIds: number[];
  /** A range to select when no events are, on `tracks` (null: every track). */
  rangeSelection: { start: number; end: number; tracks: number[] | null } | null;
  /** The text of the search box, when the link names one. */
  query: string | null;
}

export function readLink(p: URLSearchParams): LinkedView {
  const start = Number(p.get("start"));
  const end = Number(p.get("end"));
  const hasRange = p.has("start") && p.has("end") && Number.isFinite(start) && Number.isFinite(end) && end > start;
  const eventIds = (p.get("sel") ?? "").split(",").filter(Boolean).map(Number).filter(Number.isFinite);
  const rsel = (p.get("range") ?? "").split(",").map(Number);
  let rangeSelection: LinkedView["rangeSelection"] = null;
  if (rsel.length === 2 && rsel.every(Number.isFinite) && rsel[1] > rsel[0]) {
    const tracks = (p.get("tracks") ?? "").split(",").filter(Boolean).map(Number);
    rangeSelection = { start: rsel[0], end: rsel[1], tracks: tracks.length ? tracks : null };
  }
  const query = (p.get("q") ?? "").trim() || null;
  return { range: hasRange ? { start, end } : null, eventIds, rangeSelection, query };
}

/** Nanoseconds to 3 decimals: enough to restore a deep zoom, short enough to share. */
function roundNs(ns: number): string {
  return String(Math.round(ns * 1000) / 1000);
}

/** The link keys of a view (undefined removes a key). */
export function linkParams(range: Range, s: Selection, query = ""): Record<string, string | undefined> {
  return {
    q: query.trim() || undefined,
    start: roundNs(range.start),
    end: roundNs(range.end),
    sel: s.kind === "events" && s.events.length ? s.events.map((e) => e.id).join(",") : undefined,
    range: s.kind === "range" ? `${roundNs(s.start)},${roundNs(s.end)}` : undefined,
    tracks: s.kind === "range" ? s.tracks.join(",") : undefined,
  };
}
