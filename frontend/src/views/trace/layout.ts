/** Vertical layout of the timeline: section headers (collapsible) and their tracks, each track as
 * many rows as its nesting depth (or its depth limit), the pinned tracks first in a section of their
 * own and the tracks the choice hides left out. Content coordinates: y = 0 is the top of the first
 * section. */

import type { MetaSection, MetaTrack, TraceMeta } from "../../api/types.ts";
import { emptyChoice, isShown, type TrackChoice } from "./tracks.ts";

export const SECTION_HEIGHT = 24;
export const ROW_HEIGHT = 18;
export const TRACK_PAD = 3;
export const COUNTER_HEIGHT = 44;
/** Section id of the pinned tracks (real sections have ids from 0). */
export const PINNED_SECTION = -1;

export interface TrackBox {
  track: MetaTrack;
  /** The section it is drawn in: its own, or the pinned one. */
  section: SectionBox;
  /** The section it belongs to in the trace. */
  home: MetaSection;
  /** y of the first depth row. */
  top: number;
  height: number;
  /** Depth rows drawn (deeper events are not). */
  rows: number;
  isCounter: boolean;
}

export interface SectionBox {
  section: MetaSection;
  hostName: string;
  top: number;
  collapsed: boolean;
  tracks: TrackBox[];
  /** y just below the section (header plus visible tracks). */
  bottom: number;
}

export type RowHit =
  | { kind: "section"; section: SectionBox }
  | { kind: "track"; track: TrackBox; depth: number };

export function hostIndexOf(meta: TraceMeta, host: number | string): number {
  if (typeof host === "number") return host;
  const i = meta.hosts.findIndex((h) => h.name === host);
  return i < 0 ? 0 : i;
}

export class Layout {
  readonly sections: SectionBox[] = [];
  readonly tracks = new Map<number, TrackBox>();
  readonly totalHeight: number;

  constructor(
    readonly meta: TraceMeta,
    collapsed: ReadonlySet<number>,
    choice: TrackChoice = emptyChoice(),
  ) {
    const byHostThenOrder = (a: MetaSection, b: MetaSection) =>
      hostIndexOf(meta, a.host) - hostIndexOf(meta, b.host) || a.sort_index - b.sort_index || a.id - b.id;
    const sectionsById = new Map(meta.sections.map((s) => [s.id, s]));
    const pinned = new Set(choice.pinned);
    const trackLists = new Map<number, MetaTrack[]>();
    const byId = new Map<number, MetaTrack>();
    for (const t of meta.tracks) {
      byId.set(t.id, t);
      if (pinned.has(t.id) || !isShown(choice, t, sectionsById.get(t.section))) continue;
      const list = trackLists.get(t.section) ?? [];
      list.push(t);
      trackLists.set(t.section, list);
    }
    const groups: { section: MetaSection; tracks: MetaTrack[] }[] = [];
    const pinnedTracks = choice.pinned.map((id) => byId.get(id)).filter((t): t is MetaTrack => !!t);
    if (pinnedTracks.length) {
      const pinnedSection: MetaSection = { id: PINNED_SECTION, name: "Pinned", kind: "pinned", sort_index: -1, host: pinnedTracks[0].host };
      groups.push({ section: pinnedSection, tracks: pinnedTracks });
    }
    for (const section of [...meta.sections].sort(byHostThenOrder)) {
      const tracks = (trackLists.get(section.id) ?? []).sort((a, b) => a.sort_index - b.sort_index || a.id - b.id);
      // A section left empty by the choice is left out; one empty in the trace is still shown.
      if (tracks.length || !meta.tracks.some((t) => t.section === section.id)) groups.push({ section, tracks });
    }
    let y = 0;
    for (const { section, tracks } of groups) {
      const host = meta.hosts[hostIndexOf(meta, section.host)];
      const box: SectionBox = {
        section,
        hostName: host && section.id !== PINNED_SECTION ? host.name : "",
        top: y,
        collapsed: collapsed.has(section.id),
        tracks: [],
        bottom: 0,
      };
      y += SECTION_HEIGHT;
      for (const track of tracks) {
        const isCounter = track.kind === "counter";
        const rows = Math.min(track.max_depth + 1, choice.depthLimit.get(track.id) ?? Infinity);
        const height = isCounter ? COUNTER_HEIGHT : rows * ROW_HEIGHT + 2 * TRACK_PAD;
        const home = sectionsById.get(track.section) ?? section;
        const tb: TrackBox = { track, section: box, home, top: y + (isCounter ? 0 : TRACK_PAD), height, rows, isCounter };
        box.tracks.push(tb);
        this.tracks.set(track.id, tb);
        if (!box.collapsed) y += height;
      }
      box.bottom = y;
      this.sections.push(box);
    }
    this.totalHeight = y;
  }

  /** What is at content height `y`: a section header, a track row (with its depth), or nothing. */
  rowAt(y: number): RowHit | null {
    let lo = 0;
    let hi = this.sections.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = this.sections[mid];
      if (y < s.top) hi = mid - 1;
      else if (y >= s.bottom) lo = mid + 1;
      else {
        if (y < s.top + SECTION_HEIGHT || s.collapsed) return { kind: "section", section: s };
        for (const t of s.tracks) {
          const outerTop = t.isCounter ? t.top : t.top - TRACK_PAD;
          if (y >= outerTop && y < outerTop + t.height) {
            const depth = t.isCounter ? 0 : Math.floor((y - t.top) / ROW_HEIGHT);
            return { kind: "track", track: t, depth: Math.max(0, Math.min(t.rows - 1, depth)) };
          }
        }
        return null;
      }
    }
    return null;
  }

  /** Vertical centre of an event's row, or of its section header when the section is collapsed. */
  yOf(trackId: number, depth: number): number | null {
    const t = this.tracks.get(trackId);
    if (!t) return null;
    if (t.section.collapsed) return t.section.top + SECTION_HEIGHT / 2;
    return t.isCounter ? t.top + t.height / 2 : t.top + Math.min(depth, t.rows - 1) * ROW_HEIGHT + ROW_HEIGHT / 2;
  }

  /** Ids of the visible tracks overlapping content heights [y0, y1] (rubber-band selection). */
  tracksBetween(y0: number, y1: number): number[] {
    const lo = Math.min(y0, y1);
    const hi = Math.max(y0, y1);
    const out: number[] = [];
    for (const s of this.sections) {
      if (s.bottom < lo || s.top > hi) continue;
      if (s.collapsed) {
        for (const t of s.tracks) out.push(t.track.id);
        continue;
      }
      for (const t of s.tracks) {
        const top = t.isCounter ? t.top : t.top - TRACK_PAD;
        if (top <= hi && top + t.height >= lo) out.push(t.track.id);
      }
    }
    return out;
  }

  /** Host index of a track, for global event ids (host * 2^32 + index in that host's trace). */
  hostOfTrack(trackId: number): number {
    const t = this.tracks.get(trackId);
    return t ? hostIndexOf(this.meta, t.track.host) : 0;
  }
}
