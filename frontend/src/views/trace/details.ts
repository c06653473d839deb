/** The details panel under the timeline: one event (every field and arg, its flows as links that
 * jump to the linked event, and for an XLA op its HLO graph, hlo_graph.ts) or a per-name summary
 * table of several events or a range; and the splitter that resizes it. */

import type { EventDetails, FlowLink, SummaryResponse } from "../../api/types.ts";
import { clear, h } from "../../dom.ts";
import { formatCount, formatDuration } from "../../shared/units.ts";
import { DURATION_DIGITS, formatInstant } from "./axis.ts";
import { HloGraphSection, type HloGraphHost, isXlaOp } from "./hlo_graph.ts";
import { flowLatencies, parseKernelDetails } from "./kernel_details.ts";
import { shortName } from "./names.ts";
import { type Picked, type SummaryHost, SummaryTable } from "./summary_table.ts";

export interface DetailsHost extends SummaryHost {
  /** "section / track" for a track id. */
  trackLabel(track: number): string;
  /** Zoom to and select the event with this global id. */
  jumpTo(id: number): void;
  /** The `hlo` route and the trace search, for the Graph section of an XLA op. */
  hlo: HloGraphHost;
  /** Whether host `host`'s trace may carry HLO modules (an XPlane). */
  mayHoldHlo(host: number): boolean;
  /** The panel grew to make room for a graph (the timeline above it shrank). */
  panelGrew(): void;
}

/** The panel's height the first time it shows a graph, unless the splitter has set one. */
const GRAPH_PANEL_HEIGHT = "min(480px, 55vh)";

function argValue(v: unknown): Node {
  if (v === null || v === undefined) return document.createTextNode(String(v));
  if (typeof v === "string") {
    return v.includes("\n") || v.length > 120 ? h("pre", { class: "tv-pre" }, v) : document.createTextNode(v);
  }
  if (typeof v === "object") {
    const flat = JSON.stringify(v);
    return flat.length <= 100 ? document.createTextNode(flat) : h("pre", { class: "tv-pre" }, JSON.stringify(v, null, 2));
  }
  if (typeof v === "number" && Number.isInteger(v) && !Number.isSafeInteger(v)) {
    // JSON.parse rounds integers past 2**53 (TPU program ids): say so rather than show a wrong id.
    return h("span", { title: "Rounded: JavaScript numbers hold integers exactly only up to 2^53" }, `≈ ${BigInt(v)}`);
  }
  return document.createTextNode(String(v));
}

export class DetailsPanel {
  readonly el = h("div", { class: "tv-details", "data-testid": "details-panel" });
  private readonly summary: SummaryTable;
  private lastSummary: { title: string; sub: string; resp: SummaryResponse; spanNs: number; picked: Picked | null } | null = null;
  private graph: HloGraphSection | null = null;
  /** The panel grew for a graph once; later graphs keep the height (or the splitter's). */
  private grown = false;

  constructor(private readonly host: DetailsHost) {
    this.summary = new SummaryTable(host);
    this.hint();
  }

  /** Empties the panel for something to show; leaving the one-line hint, it takes its height, and
   * the timeline above it keeps the selection in view. */
  private fill(): void {
    clear(this.el);
    if (!this.el.classList.contains("tv-details-empty")) return;
    this.el.classList.remove("tv-details-empty");
    this.host.panelGrew();
  }

  /** The Graph section shown (an XLA op's), if any. */
  get graphSection(): HloGraphSection | null {
    return this.graph;
  }

  /** Stops the Graph section's requests (the panel shows something else, or the view is gone). */
  stop(): void {
    this.graph?.stop();
    this.graph = null;
  }

  hint(): void {
    this.lastSummary = null;
    this.stop();
    clear(this.el);
    // Nothing selected: one line, so the timeline has the height.
    this.el.classList.add("tv-details-empty");
    this.el.append(
      h(
        "p",
        { class: "tv-hint" },
        "Click an event to see its details. Ctrl/⌘+click adds events; drag with the Select tool (1) to summarize every event in a time range and tracks. Press ? for all keys.",
      ),
    );
  }

  loading(text: string): void {
    this.stop();
    this.fill();
    this.el.append(h("p", { class: "tv-hint" }, text));
  }

  error(text: string): void {
    this.stop();
    this.fill();
    this.el.append(h("p", { class: "ps-error", role: "alert" }, text));
  }

  showEvent(d: EventDetails): void {
    this.lastSummary = null;
    this.stop();
    this.fill();
    const rows: [string, Node | string][] = [
      ["Name", this.nameOf(d.name)],
      ["Category", d.category || "—"],
      ["Track", this.host.trackLabel(d.track)],
      ["Start", formatInstant(d.start_ns)],
      ["Duration", h("span", { "data-testid": "details-duration" }, d.dur_ns === 0 ? "instant" : formatDuration(d.dur_ns, DURATION_DIGITS))],
      ["Self time", d.dur_ns === 0 ? "—" : formatDuration(d.self_ns, DURATION_DIGITS)],
      ["Depth", String(d.depth)],
      ["Event id", h("span", { "data-testid": "details-id" }, String(d.id))],
    ];
    const table = h("table", { class: "tv-kv", "data-testid": "details-fields" });
    for (const [k, v] of rows) table.append(h("tr", {}, h("th", {}, k), h("td", {}, v)));
    // Computed: the launch → kernel latency of each flow, and a GPU kernel's launch parameters.
    for (const [k, v] of flowLatencies(d)) table.append(h("tr", { "data-testid": "flow-latency" }, h("th", { class: "tv-name", title: k }, shortName(k)), h("td", {}, v)));
    const kernel = d.args?.kernel_details;
    if (typeof kernel === "string") {
      for (const [k, v] of parseKernelDetails(kernel)) table.append(h("tr", { "data-testid": "kernel-field" }, h("th", {}, k), h("td", {}, v)));
    }
    const args = Object.entries(d.args ?? {});
    const argTable = h("table", { class: "tv-kv", "data-testid": "details-args" });
    for (const [k, v] of args) argTable.append(h("tr", {}, h("th", {}, k), h("td", {}, argValue(v))));
    const flows = h("div", { class: "tv-flows", "data-testid": "details-flows" });
    const flowList = (title: string, list: FlowLink[], arrow: string) => {
      if (!list.length) return;
      const ul = h("ul", {});
      for (const f of list) {
        const a = h(
          "a",
          { href: "#", "data-flow-id": String(f.id), title: `Jump to event ${f.id}` },
          `${arrow} ${f.name || "flow"} · ${this.host.trackLabel(f.track)} at ${formatInstant(f.start_ns)}`,
        );
        a.addEventListener("click", (ev) => {
          ev.preventDefault();
          this.host.jumpTo(f.id);
        });
        ul.append(h("li", {}, a));
      }
      flows.append(h("h4", {}, title), ul);
    };
    flowList("Flows out", d.flows_out ?? [], "→");
    flowList("Flows in", d.flows_in ?? [], "←");
    const grid = h(
      "div",
      { class: "tv-details-grid" },
      h("div", {}, h("h3", {}, "Event"), table),
      h("div", {}, h("h3", {}, `Arguments (${args.length})`), args.length ? argTable : h("p", { class: "tv-hint" }, "No arguments recorded."), flows),
    );
    const named = isXlaOp(d);
    if (named || this.host.mayHoldHlo(d.host)) {
      const shown = () => {
        grid.classList.add("tv-hlo-grid");
        if (this.grown || this.el.style.height) return;
        this.grown = true;
        this.el.style.height = GRAPH_PANEL_HEIGHT;
        this.host.panelGrew();
      };
      this.graph = new HloGraphSection(this.host.hlo, d.id, { probe: !named, shown });
      grid.append(this.graph.el);
    }
    this.el.append(grid);
  }

  /** The per-name summary of a selection spanning `spanNs`, with the name picked in it if any. */
  /** The event's name, two lines at most (a C++ kernel's runs to ten): the full name on hover, and
   * all of it on a click. */
  private nameOf(name: string): HTMLElement {
    const el = h("span", { class: "tv-clamp", title: `${name}\n(click to show it all)`, "data-testid": "details-name" }, name);
    el.addEventListener("click", () => el.classList.toggle("open"));
    return el;
  }

  showSummary(title: string, sub: string, resp: SummaryResponse, spanNs: number, picked: Picked | null = null): void {
    this.lastSummary = { title, sub, resp, spanNs, picked };
    this.stop();
    this.fill();
    const rerender = () => {
      const last = this.lastSummary;
      if (last) this.showSummary(last.title, last.sub, last.resp, last.spanNs, last.picked);
    };
    this.el.append(
      h("h3", {}, title),
      h("p", { class: "tv-hint" }, `${sub} · ${formatCount(resp.num_events)} events, ${formatCount(resp.rows.length)} names`),
      resp.rows.length ? this.summary.render(resp, spanNs, picked, rerender) : h("p", { class: "tv-hint" }, "No events in this selection."),
    );
  }

  /** Marks the name picked in the summary shown (and where its walk is); false when none is shown. */
  showPicked(picked: Picked | null): boolean {
    const last = this.lastSummary;
    if (!last) return false;
    const scroll = this.el.scrollTop;
    this.showSummary(last.title, last.sub, last.resp, last.spanNs, picked);
    this.el.scrollTop = scroll;
    return true;
  }
}

/** Where the details panel's height set with the splitter is kept, across views and sessions. */
export const DETAILS_HEIGHT_KEY = "profscope.detailsHeight";
/** The panel's least height, and the least left to the timeline above it. */
const MIN_PANEL_PX = 60;
const MIN_TIMELINE_PX = 160;

function storedHeight(): number | null {
  try {
    const px = Number(localStorage.getItem(DETAILS_HEIGHT_KEY));
    return Number.isFinite(px) && px >= MIN_PANEL_PX ? px : null;
  } catch {
    return null; // storage refused (a sandboxed frame, privacy settings)
  }
}

/** The handle between the timeline and the details panel: dragging it resizes the panel, and the
 * height is remembered (localStorage) for the next view. */
export function detailsSplitter(panel: HTMLElement): HTMLElement {
  const s = h("div", { class: "tv-splitter", title: "Drag to resize the details panel", "data-testid": "details-splitter" });
  const fit = (px: number) => Math.max(MIN_PANEL_PX, Math.min(window.innerHeight - MIN_TIMELINE_PX, px));
  const stored = storedHeight();
  if (stored !== null) panel.style.height = `${fit(stored)}px`;
  s.addEventListener("pointerdown", (e) => {
    const startY = e.clientY;
    const startH = panel.getBoundingClientRect().height;
    s.setPointerCapture(e.pointerId);
    const move = (ev: PointerEvent) => {
      panel.style.height = `${fit(startH - (ev.clientY - startY))}px`;
    };
    const up = () => {
      s.removeEventListener("pointermove", move);
      s.removeEventListener("pointerup", up);
      try {
        localStorage.setItem(DETAILS_HEIGHT_KEY, String(Math.round(panel.getBoundingClientRect().height)));
      } catch {
        // Not remembered; the height holds for this view.
      }
    };
    s.addEventListener("pointermove", move);
    s.addEventListener("pointerup", up);
  });
  return s;
}
