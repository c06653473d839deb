/** The "Tracks" panel under the toolbar: presets, a name filter, the kinds shown, and per track
 * show / pin / depth limit, per section fold. Every change goes to the host as a whole new choice
 * (tracks.ts), which relays out the timeline and writes the deep link. */

import type { MetaSection, TraceMeta } from "../../api/types.ts";
import { clear, h } from "../../dom.ts";
import { ensureStyle } from "../../shared/style.ts";
import { applyPreset, isShown, PRESETS, setDepthLimit, toggleHidden, togglePin, TRACK_KINDS, type TrackChoice, trackKind } from "./tracks.ts";

/** Tracks listed at most (a filter narrows the list); the others still follow the kinds and presets. */
const MAX_LISTED = 400;
const NO_PYTHON_LINES = "No track of Python frames in this trace (PyTorch records them with with_stack=True)";

const CSS = `
.tv-tracks { position: absolute; z-index: 6; top: 100%; left: 8px; width: 440px; max-height: 70vh; overflow: auto;
  background: var(--ps-bg); border: 1px solid var(--ps-border); border-radius: 6px; box-shadow: 0 6px 18px var(--ps-shadow);
  padding: 8px 10px; font-size: 12px; color: var(--ps-text); }
.tv-tracks[hidden] { display: none; }
.tv-tracks-row { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin-bottom: 6px; }
.tv-tracks-filter { flex: 1; min-width: 120px; }
.tv-tracks-section { margin-top: 6px; font-weight: 600; display: flex; gap: 6px; align-items: center; }
.tv-tracks-section button { font-weight: 400; }
.tv-tracks-track { display: grid; grid-template-columns: 18px 1fr auto auto; gap: 6px; align-items: center; padding: 1px 0 1px 12px; }
.tv-tracks-track .tv-tracks-name { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.tv-tracks-track input[type=number] { width: 46px; }
.tv-tracks-pin { padding: 0 5px; min-width: 52px; }
.tv-tracks-pin.active { background: var(--ps-accent-bg); border-color: var(--ps-accent-border); color: var(--ps-accent); }
.tv-tracks-note { color: var(--ps-text-muted); margin-top: 6px; }
.tv-tracks-anchor { position: relative; }
`;

export interface TracksHost {
  meta(): TraceMeta | null;
  choice(): TrackChoice;
  setChoice(choice: TrackChoice): void;
  folded(): ReadonlySet<number>;
  toggleSection(id: number): void;
}

export class TracksPanel {
  /** The toolbar button with the panel hanging under it. */
  readonly el: HTMLElement;
  private readonly panel = h("div", { class: "tv-tracks", "data-testid": "tracks-panel", hidden: true });
  private readonly list = h("div", { "data-testid": "tracks-list" });
  private readonly filter = h("input", { type: "search", class: "tv-tracks-filter", placeholder: "Filter tracks by name…", "aria-label": "Filter tracks", "data-testid": "tracks-filter" });
  private readonly kinds = h("div", { class: "tv-tracks-row" });
  private readonly presetButtons = new Map<string, HTMLButtonElement>();

  constructor(private readonly host: TracksHost) {
    ensureStyle("tv-tracks-style", CSS);
    const button = h("button", { type: "button", class: "ps-button", title: "Choose, order and fold the tracks (T)", "data-testid": "tracks-button" }, "Tracks ▾");
    button.addEventListener("click", () => this.toggle());
    const presets = h("div", { class: "tv-tracks-row" }, "Presets:");
    for (const p of PRESETS) {
      const b = h("button", { type: "button", class: "ps-button", title: p.help, "data-testid": `tracks-preset-${p.id}` }, p.label);
      b.addEventListener("click", () => this.change((c, meta) => applyPreset(c, p.id, meta)));
      presets.append(b);
      this.presetButtons.set(p.id, b);
    }
    this.filter.addEventListener("input", () => this.change((c) => ({ ...c, filter: this.filter.value })));
    this.filter.addEventListener("keydown", (e) => {
      if (e.key === "Escape") this.toggle(false);
      e.stopPropagation();
    });
    this.panel.append(presets, h("div", { class: "tv-tracks-row" }, this.filter), this.kinds, this.list);
    this.el = h("div", { class: "tv-tracks-anchor" }, button, this.panel);
  }

  get isOpen(): boolean {
    return !this.panel.hidden;
  }

  toggle(open = this.panel.hidden): void {
    this.panel.hidden = !open;
    if (open) this.render();
  }

  /** Redraws the panel after the choice changed elsewhere (a link, a jump revealing a track). */
  refresh(): void {
    if (this.isOpen) this.render();
  }

  private change(next: (c: TrackChoice, meta: TraceMeta) => TrackChoice): void {
    const meta = this.host.meta();
    if (!meta) return;
    this.host.setChoice(next(this.host.choice(), meta));
    this.render();
  }

  private render(): void {
    const meta = this.host.meta();
    if (!meta) return;
    const choice = this.host.choice();
    if (this.filter.value !== choice.filter) this.filter.value = choice.filter;
    clear(this.kinds);
    this.kinds.append("Show:");
    const sections = new Map(meta.sections.map((s) => [s.id, s]));
    const present = new Set(meta.tracks.map((t) => trackKind(t, sections.get(t.section))));
    const noPython = this.presetButtons.get("hide-python");
    if (noPython) {
      noPython.disabled = !present.has("python");
      noPython.title = noPython.disabled ? NO_PYTHON_LINES : (PRESETS.find((p) => p.id === "hide-python")?.help ?? "");
    }
    for (const { kind, label } of TRACK_KINDS) {
      if (!present.has(kind)) continue;
      const box = h("input", { type: "checkbox", "data-testid": `tracks-kind-${kind}`, checked: !choice.hiddenKinds.has(kind) });
      box.addEventListener("change", () =>
        this.change((c) => {
          const hiddenKinds = new Set(c.hiddenKinds);
          if (box.checked) hiddenKinds.delete(kind);
          else hiddenKinds.add(kind);
          return { ...c, hiddenKinds };
        }),
      );
      this.kinds.append(h("label", {}, box, ` ${label}`));
    }
    this.renderList(meta, choice, sections);
  }

  private renderList(meta: TraceMeta, choice: TrackChoice, sections: Map<number, MetaSection>): void {
    clear(this.list);
    const f = choice.filter.trim().toLowerCase();
    let listed = 0;
    const folded = this.host.folded();
    for (const section of [...meta.sections].sort((a, b) => a.host - b.host || a.sort_index - b.sort_index || a.id - b.id)) {
      const tracks = meta.tracks.filter((t) => t.section === section.id && (!f || t.name.toLowerCase().includes(f) || section.name.toLowerCase().includes(f)));
      if (!tracks.length || listed >= MAX_LISTED) continue;
      const fold = h("button", { type: "button", class: "ps-button", "data-testid": `tracks-fold-${section.id}`, title: "Fold or unfold this section on the timeline" }, folded.has(section.id) ? "Unfold" : "Fold");
      fold.addEventListener("click", () => {
        this.host.toggleSection(section.id);
        this.render();
      });
      this.list.append(h("div", { class: "tv-tracks-section" }, `${section.name} · ${section.kind.toUpperCase()}`, fold));
      for (const t of tracks.slice(0, MAX_LISTED - listed)) {
        listed++;
        const shown = h("input", { type: "checkbox", title: "Show this track", "data-testid": `tracks-show-${t.id}`, checked: isShown(choice, t, sections.get(t.section)) });
        shown.addEventListener("change", () => this.change((c) => toggleHidden(c, t.id)));
        const pinned = choice.pinned.includes(t.id);
        const pin = h("button", { type: "button", class: `ps-button tv-tracks-pin${pinned ? " active" : ""}`, title: pinned ? "Unpin" : "Pin to the top", "data-testid": `tracks-pin-${t.id}`, "aria-pressed": pinned ? "true" : "false" }, pinned ? "Pinned" : "Pin");
        pin.addEventListener("click", () => this.change((c) => togglePin(c, t.id)));
        const depth = h("input", {
          type: "number",
          min: "1",
          max: String(t.max_depth + 1),
          placeholder: String(t.max_depth + 1),
          value: choice.depthLimit.has(t.id) ? String(choice.depthLimit.get(t.id)) : "",
          title: `Rows shown (of ${t.max_depth + 1}); empty shows all`,
          "aria-label": `Depth limit of ${t.name}`,
          "data-testid": `tracks-depth-${t.id}`,
        });
        depth.addEventListener("change", () => this.change((c) => setDepthLimit(c, t.id, depth.value ? Number(depth.value) : null)));
        depth.addEventListener("keydown", (e) => e.stopPropagation());
        this.list.append(h("div", { class: "tv-tracks-track", "data-track": String(t.id) }, shown, h("span", { class: "tv-tracks-name", title: t.name }, t.name), pin, depth));
      }
    }
    if (listed >= MAX_LISTED) this.list.append(h("div", { class: "tv-tracks-note" }, `The first ${MAX_LISTED} tracks are listed: filter by name to find the others.`));
  }
}
