/** The keyboard, like chrome://tracing: W / S zoom and A / D (or ← / →) pan, faster the longer a key
 * is held; 1–4 pick a tool, F fits the selection, M marks it, 0 shows the whole trace, Z zooms to
 * the device's activity, T opens the track panel, / finds and Enter / Shift+Enter walk the search's
 * matches, ? shows the help, Esc clears. Keys are read from the top document too, so they work inside
 * TensorBoard before any click into the plugin's frame. */

import type { Timeline } from "./timeline.ts";
import { type Tool, toolForKey } from "./tools.ts";
import { panBy, zoomAround } from "./viewport.ts";

export interface KeyActions {
  /** Whether keys are for the viewer now (it is on screen and holds a trace). */
  ready(): boolean;
  redraw(): void;
  setTool(tool: Tool): void;
  toggleHelp(): void;
  /** Closes the help if it is open; false when it was closed already. */
  closeHelp(): boolean;
  /** Esc: drops the drag under way, the marks and the selection. */
  clearAll(): void;
  zoomToSelection(): void;
  markSelection(): void;
  wholeTrace(): void;
  focusSearch(): void;
  /** Enter / Shift+Enter on the timeline: the next / previous match of the search box's query. */
  searchStep(dir: 1 | -1): void;
  zoomToActivity(): void;
  toggleTracks(): void;
}

/** Zoom factor of one tap of W (S zooms out by its inverse), and pan of one tap of A / D as a
 * fraction of the window: a tap moves a visible step even if the key is up before the next frame. */
const TAP_ZOOM = 1.25;
const TAP_PAN = 0.05;
/** Held keys: zoom factor and window fractions per second, boosted up to 3.5× after 1.5 s held. */
const ZOOM_PER_SECOND = 3.5;
const PAN_PER_SECOND = 0.6;
const BOOST_RAMP_MS = 600;
const MAX_BOOST = 2.5;

/** Shown on screen: attached, not in a hidden tab, and (inside TensorBoard) its iframe displayed. */
export function isOnScreen(el: HTMLElement): boolean {
  if (!el.isConnected || el.closest("[hidden]")) return false;
  try {
    const frame = window.frameElement;
    if (frame && frame.getClientRects().length === 0) return false;
  } catch {
    // Cross-origin parent: our own document is all we can see.
  }
  return true;
}

/** This frame's document and, inside TensorBoard, the top document: keys typed while the focus is
 * still on TensorBoard's page (before any click into the plugin) must reach the viewer too. */
function keyDocuments(): Document[] {
  const docs = [document];
  try {
    const top = window.top;
    if (top && top !== window && top.document) docs.push(top.document);
  } catch {
    // Cross-origin top window: only our own frame's keys.
  }
  return docs;
}

function isTextField(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
}

export class KeyboardInput {
  /** Navigation keys held down ("w", "a", "s", "d"; arrows as "a" / "d") and since when. */
  private readonly held = new Map<string, number>();
  private readonly cleanups: (() => void)[] = [];

  /** `anchorX`: the pointer's canvas x that zooms keep in place, null when it is off the canvas. */
  constructor(
    private readonly timeline: Timeline,
    private readonly anchorX: () => number | null,
    private readonly actions: KeyActions,
  ) {
    for (const doc of keyDocuments()) {
      this.listen(doc, "keydown", (e) => this.onKeyDown(e));
      this.listen(doc, "keyup", (e) => {
        this.held.delete(e.key.toLowerCase());
        if (e.code === "ArrowLeft") this.held.delete("a");
        if (e.code === "ArrowRight") this.held.delete("d");
      });
      if (doc.defaultView) this.listen(doc.defaultView, "blur", () => this.held.clear());
    }
  }

  /** Whether held keys move the view. */
  get moving(): boolean {
    return this.held.size > 0;
  }

  /** Continuous WASD motion over `dtMs`; false when no key is held. */
  animate(now: number, dtMs: number): boolean {
    if (!this.held.size) return false;
    const tl = this.timeline;
    for (const [key, since] of this.held) {
      const boost = 1 + Math.min((now - since) / BOOST_RAMP_MS, MAX_BOOST);
      const secs = dtMs / 1000;
      if (key === "w" || key === "s") {
        const factor = Math.exp(Math.log(ZOOM_PER_SECOND * boost) * secs);
        tl.range = zoomAround(tl.range, tl.anchorNs(this.anchorX()), key === "w" ? factor : 1 / factor, tl.limits);
      } else if (key === "a" || key === "d") {
        tl.range = panBy(tl.range, (key === "d" ? 1 : -1) * PAN_PER_SECOND * boost * secs, tl.limits);
      }
    }
    return true;
  }

  /** Removes the listeners from the documents. */
  stop(): void {
    for (const c of this.cleanups) c();
  }

  private listen<K extends keyof DocumentEventMap>(target: Document | Window, type: K, fn: (e: DocumentEventMap[K]) => void): void {
    target.addEventListener(type, fn as EventListener);
    this.cleanups.push(() => target.removeEventListener(type, fn as EventListener));
  }

  private onKeyDown(e: KeyboardEvent): void {
    if (!this.actions.ready()) return;
    if (isTextField(e.target)) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const key = e.key;
    const lower = key.toLowerCase();
    const nav = lower === "w" || lower === "s" || lower === "a" || lower === "d";
    const arrow = e.code === "ArrowLeft" ? "a" : e.code === "ArrowRight" ? "d" : null;
    if (nav || arrow) {
      e.preventDefault();
      this.press(arrow ?? lower);
      return;
    }
    const tool = toolForKey(key, e.code);
    if (tool) {
      e.preventDefault();
      this.actions.setTool(tool);
      return;
    }
    switch (key) {
      case "?":
        e.preventDefault();
        this.actions.toggleHelp();
        return;
      case "Escape":
        if (this.actions.closeHelp()) return;
        this.actions.clearAll();
        return;
      case "f":
      case "F":
        e.preventDefault();
        this.actions.zoomToSelection();
        return;
      case "m":
      case "M":
        e.preventDefault();
        this.actions.markSelection();
        return;
      case "0":
        e.preventDefault();
        this.actions.wholeTrace();
        return;
      case "/":
        e.preventDefault();
        this.actions.focusSearch();
        return;
      case "z":
      case "Z":
        e.preventDefault();
        this.actions.zoomToActivity();
        return;
      case "t":
      case "T":
        e.preventDefault();
        this.actions.toggleTracks();
        return;
      case "Enter":
        // A focused button's Enter is its click.
        if ((e.target as HTMLElement | null)?.tagName === "BUTTON") return;
        e.preventDefault();
        this.actions.searchStep(e.shiftKey ? -1 : 1);
        return;
    }
  }

  /** A navigation key goes down: it moves one step at once, then keeps moving while held. */
  private press(k: string): void {
    if (this.held.has(k)) return;
    this.held.set(k, performance.now());
    const tl = this.timeline;
    if (k === "w" || k === "s") tl.range = zoomAround(tl.range, tl.anchorNs(this.anchorX()), k === "w" ? TAP_ZOOM : 1 / TAP_ZOOM, tl.limits);
    else tl.range = panBy(tl.range, k === "d" ? TAP_PAN : -TAP_PAN, tl.limits);
    this.actions.redraw();
  }
}
