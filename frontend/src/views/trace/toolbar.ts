/** The bar above the timeline: the mouse tools, the flows and critical-path toggles, the search box, "Whole trace", the
 * help and "Export…" buttons and the status line (visible span, tile level, boxes drawn, tiles held and loading). */

import { h } from "../../dom.ts";
import { formatBytes, formatCount, formatDuration } from "../../shared/units.ts";
import { DURATION_DIGITS } from "./axis.ts";
import type { CacheStats } from "./tilecache.ts";
import { type Tool, TOOLS } from "./tools.ts";

export interface ToolbarActions {
  setTool(tool: Tool): void;
  flowsChanged(): void;
  wholeTrace(): void;
  toggleHelp(): void;
  /** The "Critical path" toggle changed; without it the bar has no such toggle. */
  criticalPathChanged?(on: boolean): void;
  /** Opens the export dialog; without it the bar has no "Export…" button. */
  exportTrace?(): void;
}

export interface StatusFacts {
  visibleNs: number;
  /** The tile level drawn, null before the first frame. */
  level: number | null;
  boxes: number;
  tiles: CacheStats;
}

/** The status line's words, and how many tiles are still on their way. */
export function statusText(s: StatusFacts): { text: string; loading: number } {
  const loading = s.tiles.inFlight + s.tiles.queued;
  const text =
    `${formatDuration(s.visibleNs, DURATION_DIGITS)} visible · level ${s.level ?? "–"}` +
    ` · ${formatCount(s.boxes)} boxes · ${s.tiles.tiles} tiles (${formatBytes(s.tiles.bytes)})` +
    (loading ? ` · loading ${loading}` : "");
  return { text, loading };
}

export class Toolbar {
  readonly el: HTMLElement;
  private readonly status = h("div", { class: "tv-status", "data-testid": "trace-status" });
  private readonly flowsToggle = h("input", { type: "checkbox", "data-testid": "flows-toggle" });
  private readonly toolButtons = new Map<Tool, HTMLButtonElement>();
  private readonly criticalToggle = h("input", { type: "checkbox", "data-testid": "critical-path-toggle" });
  private readonly criticalReadout = h("div", { class: "tv-status", "data-testid": "critical-path-readout", hidden: true });

  /** `searchBox` sits between the tools and the buttons. */
  constructor(actions: ToolbarActions, searchBox: HTMLElement) {
    const tools = h("div", { class: "tv-tools", role: "radiogroup", "aria-label": "Mouse tool" });
    for (const t of TOOLS) {
      const b = h(
        "button",
        { type: "button", class: "tv-tool", "data-testid": `tool-${t.id}`, title: `${t.title} (${t.key} or ${t.shifted}): ${t.help}`, role: "radio" },
        h("kbd", {}, t.key),
        ` ${t.title}`,
      );
      b.addEventListener("click", () => actions.setTool(t.id));
      tools.append(b);
      this.toolButtons.set(t.id, b);
    }
    this.flowsToggle.addEventListener("change", () => actions.flowsChanged());
    const flows = h("label", { class: "tv-toggle", title: "Draw flow arrows (launch → kernel, send → recv…) of visible events" }, this.flowsToggle, " Flows");
    const critical = actions.criticalPathChanged
      ? h("label", { class: "tv-toggle", title: "Outline the critical path of the step in view and draw its dependencies" }, this.criticalToggle, " Critical path")
      : null;
    this.criticalToggle.addEventListener("change", () => actions.criticalPathChanged?.(this.criticalToggle.checked));
    const reset = h("button", { type: "button", class: "ps-button", title: "Show the whole trace (0)" }, "Whole trace");
    reset.addEventListener("click", () => actions.wholeTrace());
    const helpButton = h("button", { type: "button", class: "ps-button", title: "Keys and mouse (?)", "data-testid": "help-button" }, "?");
    helpButton.addEventListener("click", () => actions.toggleHelp());
    const exportButton = actions.exportTrace
      ? h("button", { type: "button", class: "ps-button", title: "Download the trace as Chrome trace JSON, redacted by default", "data-testid": "export-button" }, "Export…")
      : null;
    exportButton?.addEventListener("click", () => actions.exportTrace?.());
    this.el = h(
      "div",
      { class: "tv-toolbar" },
      tools,
      flows,
      critical,
      searchBox,
      reset,
      helpButton,
      exportButton,
      h("span", { class: "ps-spacer" }),
      this.criticalReadout,
      this.status,
    );
  }

  /** The critical path's one-line breakdown (null: hidden). */
  showCriticalPath(text: string | null): void {
    this.criticalReadout.textContent = text ?? "";
    this.criticalReadout.hidden = text === null;
  }

  /** Whether flow arrows of all visible events are drawn. */
  get showFlows(): boolean {
    return this.flowsToggle.checked;
  }

  showTool(tool: Tool): void {
    for (const [id, b] of this.toolButtons) {
      b.classList.toggle("active", id === tool);
      b.setAttribute("aria-checked", id === tool ? "true" : "false");
    }
  }

  showStatus(facts: StatusFacts): void {
    const { text, loading } = statusText(facts);
    this.status.textContent = text;
    this.status.dataset.loading = String(loading);
  }
}
