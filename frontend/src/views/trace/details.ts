/** The details panel under the timeline: one event (every field and arg, its flows as links that
 * jump to the linked event, and for an XLA op its HLO graph, hlo_graph.ts) or a per-name summary
 * table of several events or a range; and the splitter that resizes it. */

import type { EventDetails, FlowLink, SummaryResponse, SummaryRow } from "../../api/types.ts";
import { clear, h } from "../../dom.ts";
import { formatCount, formatDuration } from "../../shared/units.ts";
import { DURATION_DIGITS, formatInstant } from "./axis.ts";
import { HloGraphSection, type HloGraphHost, isXlaOp } from "./hlo_graph.ts";

export interface DetailsHost {
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

type SortKey = keyof SummaryRow;

const COLUMNS: { key: SortKey; title: string; time: boolean }[] = [
  { key: "name", title: "Name", time: false },
  { key: "count", title: "Count", time: false },
  { key: "total_ns", title: "Total", time: true },
  { key: "self_ns", title: "Self", time: true },
  { key: "avg_ns", title: "Average", time: true },
  { key: "min_ns", title: "Min", time: true },
  { key: "max_ns", title: "Max", time: true },
];

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
  private sortKey: SortKey = "total_ns";
  private sortDesc = true;
  private lastSummary: { title: string; sub: string; resp: SummaryResponse } | null = null;
  private graph: HloGraphSection | null = null;
  /** The panel grew for a graph once; later graphs keep the height (or the splitter's). */
  private grown = false;

  constructor(private readonly host: DetailsHost) {
    this.hint();
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
    clear(this.el);
    this.el.append(h("p", { class: "tv-hint" }, text));
  }

  error(text: string): void {
    this.stop();
    clear(this.el);
    this.el.append(h("p", { class: "ps-error", role: "alert" }, text));
  }

  showEvent(d: EventDetails): void {
    this.lastSummary = null;
    this.stop();
    clear(this.el);
    const rows: [string, Node | string][] = [
      ["Name", h("span", { "data-testid": "details-name" }, d.name)],
      ["Category", d.category || "—"],
      ["Track", this.host.trackLabel(d.track)],
      ["Start", formatInstant(d.start_ns)],
      ["Duration", h("span", { "data-testid": "details-duration" }, d.dur_ns === 0 ? "instant" : formatDuration(d.dur_ns, DURATION_DIGITS))],
      ["Self time", d.dur_ns === 0 ? "—" : formatDuration(d.self_ns, DURATION_DIGITS)],
      ["Depth", String(d.depth)],
      ["Event id", h("span", { "data-testid": "details-id" }, String(d.id))],
    ];
    const table = h("table", { class: "tv-kv" });
    for (const [k, v] of rows) table.append(h("tr", {}, h("th", {}, k), h("td", {}, v)));
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

  showSummary(title: string, sub: string, resp: SummaryResponse): void {
    this.lastSummary = { title, sub, resp };
    this.stop();
    clear(this.el);
    const rows = [...resp.rows].sort((a, b) => {
      const x = a[this.sortKey];
      const y = b[this.sortKey];
      const c = typeof x === "string" ? x.localeCompare(y as string) : (x as number) - (y as number);
      return this.sortDesc ? -c : c;
    });
    const head = h("tr", {});
    for (const col of COLUMNS) {
      const arrow = col.key === this.sortKey ? (this.sortDesc ? " ▾" : " ▴") : "";
      const th = h("th", { class: col.time || col.key === "count" ? "num" : "", title: "Sort" }, col.title + arrow);
      th.addEventListener("click", () => {
        if (this.sortKey === col.key) this.sortDesc = !this.sortDesc;
        else {
          this.sortKey = col.key;
          this.sortDesc = col.key !== "name";
        }
        if (this.lastSummary) this.showSummary(this.lastSummary.title, this.lastSummary.sub, this.lastSummary.resp);
      });
      head.append(th);
    }
    const body = h("tbody", {});
    for (const r of rows) {
      const tr = h("tr", {});
      for (const col of COLUMNS) {
        const v = r[col.key];
        const text = col.key === "name" ? String(v) : col.time ? formatDuration(v as number, DURATION_DIGITS) : formatCount(v as number);
        tr.append(h("td", { class: col.key === "name" ? "" : "num" }, text));
      }
      body.append(tr);
    }
    this.el.append(
      h("h3", {}, title),
      h("p", { class: "tv-hint" }, `${sub} · ${formatCount(resp.num_events)} events, ${formatCount(resp.rows.length)} names`),
      resp.rows.length
        ? h("table", { class: "tv-summary", "data-testid": "summary-table" }, h("thead", {}, head), body)
        : h("p", { class: "tv-hint" }, "No events in this selection."),
    );
  }
}

/** The handle between the timeline and the details panel: dragging it resizes the panel. */
export function detailsSplitter(panel: HTMLElement): HTMLElement {
  const s = h("div", { class: "tv-splitter", title: "Drag to resize the details panel" });
  s.addEventListener("pointerdown", (e) => {
    const startY = e.clientY;
    const startH = panel.getBoundingClientRect().height;
    s.setPointerCapture(e.pointerId);
    const move = (ev: PointerEvent) => {
      const hgt = Math.max(60, Math.min(window.innerHeight - 160, startH - (ev.clientY - startY)));
      panel.style.height = `${hgt}px`;
    };
    const up = () => {
      s.removeEventListener("pointermove", move);
      s.removeEventListener("pointerup", up);
    };
    s.addEventListener("pointermove", move);
    s.addEventListener("pointerup", up);
  });
  return s;
}
