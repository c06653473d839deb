/** Which tracks the timeline shows and in what order: a name filter, kinds and single tracks
 * hidden, tracks pinned to the top (in pin order), folded sections and a depth limit per track,
 * with the presets of the track panel and their deep-link keys. Free of the DOM. */

import type { Tile } from "../../api/tile.ts";
import type { MetaSection, MetaTrack, TraceMeta } from "../../api/types.ts";
import type { Range } from "./viewport.ts";

/** What a track holds, as the panel filters it. */
export type TrackKind = "host" | "python" | "device" | "xla" | "other";

export const TRACK_KINDS: readonly { kind: TrackKind; label: string }[] = [
  { kind: "device", label: "GPU / TPU streams" },
  { kind: "xla", label: "XLA lines" },
  { kind: "host", label: "Host threads" },
  { kind: "python", label: "Python stacks" },
  { kind: "other", label: "Other" },
];

const XLA_LINE = /^(XLA |Async XLA|Framework |Source code|Steps|TensorFlow )/;

/** Lines of Python frames (an XPlane's "python3" thread, a Python tracer's line). A Kineto thread
 * is named after its process ("thread 7 (python3)") and holds the ops: it is a host thread. */
const PYTHON_LINE = /^python/i;
/** The track the Chrome reader gives a Kineto thread's Python frames ("thread 7 (python3) · Python"),
 * beside the thread's; a thread of frames alone may sit in a GPU's process (pid 0). */
const KINETO_PYTHON = / · Python$/;

export function trackKind(track: MetaTrack, section: MetaSection | undefined): TrackKind {
  if (XLA_LINE.test(track.name) || track.kind === "derived") return "xla";
  if (track.kind === "thread" && KINETO_PYTHON.test(track.name)) return "python";
  if (isDeviceSection(section)) return "device";
  if (PYTHON_LINE.test(track.name)) return "python";
  if (section?.kind === "cpu" && track.kind === "thread") return "host";
  return "other";
}

export interface TrackChoice {
  /** Case-insensitive text a track's or its section's name must hold ("" shows all). */
  filter: string;
  hiddenKinds: Set<TrackKind>;
  hidden: Set<number>;
  /** Track ids shown first, in this order, in a "Pinned" section. */
  pinned: number[];
  /** Rows shown per track (tracks not named show all their depth). */
  depthLimit: Map<number, number>;
}

export function emptyChoice(): TrackChoice {
  return { filter: "", hiddenKinds: new Set(), hidden: new Set(), pinned: [], depthLimit: new Map() };
}

/** Whether `track` is drawn under `choice` (pinned tracks are drawn whatever their kind). */
export function isShown(choice: TrackChoice, track: MetaTrack, section: MetaSection | undefined): boolean {
  if (choice.pinned.includes(track.id)) return true;
  if (choice.hidden.has(track.id) || choice.hiddenKinds.has(trackKind(track, section))) return false;
  const f = choice.filter.trim().toLowerCase();
  return !f || track.name.toLowerCase().includes(f) || (section?.name.toLowerCase().includes(f) ?? false);
}

export type Preset = "device-first" | "hide-python" | "all";

export const PRESETS: readonly { id: Preset; label: string; help: string }[] = [
  { id: "device-first", label: "Device first", help: "Pin every GPU / TPU stream and line to the top" },
  { id: "hide-python", label: "Hide Python stacks", help: "Hide the tracks of Python frames" },
  { id: "all", label: "Show all", help: "Every track, in the trace's order, none pinned or limited" },
];

/** The choice after a preset: "device first" pins the device tracks (keeping what is hidden),
 * "hide Python stacks" hides that kind, "show all" starts afresh. */
export function applyPreset(choice: TrackChoice, preset: Preset, meta: TraceMeta): TrackChoice {
  if (preset === "all") return emptyChoice();
  if (preset === "hide-python") return { ...choice, hiddenKinds: new Set([...choice.hiddenKinds, "python"]) };
  const sections = new Map(meta.sections.map((s) => [s.id, s]));
  const device = meta.tracks.filter((t) => {
    const kind = trackKind(t, sections.get(t.section));
    return kind === "device" || (kind === "xla" && isDeviceSection(sections.get(t.section)));
  });
  const order = [...device].sort((a, b) => (sections.get(a.section)?.sort_index ?? 0) - (sections.get(b.section)?.sort_index ?? 0) || a.section - b.section || a.sort_index - b.sort_index || a.id - b.id);
  const pinned = [...choice.pinned, ...order.map((t) => t.id).filter((id) => !choice.pinned.includes(id))];
  return { ...choice, pinned };
}

function isDeviceSection(s: MetaSection | undefined): boolean {
  return s?.kind === "gpu" || s?.kind === "tpu";
}

export function togglePin(choice: TrackChoice, track: number): TrackChoice {
  const pinned = choice.pinned.includes(track) ? choice.pinned.filter((t) => t !== track) : [...choice.pinned, track];
  return { ...choice, pinned };
}

export function toggleHidden(choice: TrackChoice, track: number): TrackChoice {
  const hidden = new Set(choice.hidden);
  if (!hidden.delete(track)) hidden.add(track);
  return { ...choice, hidden, pinned: choice.pinned.filter((t) => !hidden.has(t)) };
}

/** `rows` null: the track shows all its depth again. */
export function setDepthLimit(choice: TrackChoice, track: number, rows: number | null): TrackChoice {
  const depthLimit = new Map(choice.depthLimit);
  if (rows === null || rows < 1) depthLimit.delete(track);
  else depthLimit.set(track, Math.floor(rows));
  return { ...choice, depthLimit };
}

/** Makes `track` drawn again (a jump lands on it): unhidden, its kind shown, the filter dropped. */
export function reveal(choice: TrackChoice, track: MetaTrack, section: MetaSection | undefined): TrackChoice {
  if (isShown(choice, track, section)) return choice;
  const hidden = new Set(choice.hidden);
  hidden.delete(track.id);
  const hiddenKinds = new Set(choice.hiddenKinds);
  hiddenKinds.delete(trackKind(track, section));
  return { ...choice, hidden, hiddenKinds, filter: "" };
}

function ids(text: string | null): number[] {
  return (text ?? "").split(",").filter(Boolean).map(Number).filter(Number.isInteger);
}

const KIND_NAMES = new Set<string>(TRACK_KINDS.map((k) => k.kind));

/** The deep-link keys of a choice and the folded sections: `tf` filter, `tk` hidden kinds, `th`
 * hidden tracks, `tp` pinned tracks, `td` depth limits as `track:rows`, `tc` folded sections ("-"
 * for none, so a link that unfolds everything stays so); undefined removes a key. */
export function choiceParams(c: TrackChoice, folded: Iterable<number>): Record<string, string | undefined> {
  const some = (list: (string | number)[]) => (list.length ? list.join(",") : undefined);
  return {
    tc: some([...folded]) ?? "-",
    tf: c.filter.trim() || undefined,
    tk: some([...c.hiddenKinds]),
    th: some([...c.hidden]),
    tp: some(c.pinned),
    td: some([...c.depthLimit].map(([t, rows]) => `${t}:${rows}`)),
  };
}

export function readChoice(p: URLSearchParams): TrackChoice {
  const depthLimit = new Map<number, number>();
  for (const part of (p.get("td") ?? "").split(",")) {
    const [t, rows] = part.split(":").map(Number);
    if (Number.isInteger(t) && Number.isInteger(rows) && rows > 0) depthLimit.set(t, rows);
  }
  const hiddenKinds = new Set((p.get("tk") ?? "").split(",").filter((k): k is TrackKind => KIND_NAMES.has(k)));
  return { filter: p.get("tf") ?? "", hiddenKinds, hidden: new Set(ids(p.get("th"))), pinned: ids(p.get("tp")), depthLimit };
}

/** The folded sections a link names; null when it names none (the view folds by default). */
export function readFolded(p: URLSearchParams): number[] | null {
  const text = p.get("tc");
  return text === null ? null : ids(text === "-" ? "" : text);
}

/** The tracks "zoom to activity" looks at: those of `section` when given (the selection's), else the
 * device's (GPU / TPU sections, but the Python frames Kineto may put in a GPU's process), else every
 * track. */
export function activityTracks(meta: TraceMeta, section: number | null): Set<number> {
  const device = new Set(meta.sections.filter(isDeviceSection).map((s) => s.id));
  const sections = new Map(meta.sections.map((s) => [s.id, s]));
  const onDevice = (t: MetaTrack) => device.has(t.section) && trackKind(t, sections.get(t.section)) !== "python";
  const wanted = (t: MetaTrack) => (section !== null ? t.section === section : !device.size || onDevice(t));
  return new Set(meta.tracks.filter((t) => t.kind !== "counter" && wanted(t)).map((t) => t.id));
}

/** From the first to the last event or summary on `tracks` in a tile (ns of the session timeline);
 * null when they hold none. The whole-trace tile is exact to one of its pixels. */
export function busySpan(tile: Tile, tracks: ReadonlySet<number>): Range | null {
  let start = Infinity;
  let end = -Infinity;
  const ev = tile.events;
  for (let i = 0; i < ev.n; i++) {
    if (!tracks.has(ev.track[i])) continue;
    start = Math.min(start, ev.start[i]);
    end = Math.max(end, ev.start[i] + ev.dur[i]);
  }
  const sm = tile.summaries;
  for (let i = 0; i < sm.n; i++) {
    if (!tracks.has(sm.track[i])) continue;
    start = Math.min(start, sm.start[i]);
    end = Math.max(end, sm.start[i] + sm.width[i]);
  }
  return end >= start ? { start: tile.startNs + start, end: tile.startNs + end } : null;
}
