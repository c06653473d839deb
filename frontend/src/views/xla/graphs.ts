/** The Graphs tab: graphs grouped by hash with counts, steps and triggering frames; one graph's
 * drawing (Graphviz WASM) and text; a node-by-node comparison of any two graphs. */

import type { Subject } from "../../api/types.ts";
import type { XlaApi, XlaDiff, XlaDiffRow, XlaGraph, XlaGraphList, XlaGraphRecord } from "./api.ts";
import { append, clear, h, isAbort, messageOf } from "../../dom.ts";
import { formatCount } from "../../shared/units.ts";
import { shortHash } from "./format.ts";
import { renderDot } from "../../shared/graphviz.ts";

/** Graphs up to this many nodes are drawn as soon as they are opened; bigger ones on request. */
const AUTO_DRAW_NODES = 400;

export interface GraphsHost {
  api: XlaApi;
  subject: Subject;
  ordinal: number | null;
  signal: AbortSignal;
  setParams(params: Record<string, string | undefined>): void;
}

function recordLabel(r: XlaGraphRecord): string {
  const step = r.step === null ? "" : `, step ${r.step}`;
  return `#${r.index} ${shortHash(r.key)} (${formatCount(r.num_nodes)} nodes${step})`;
}

export class GraphsPanel {
  readonly el = h("div", { class: "xv-graphs", "data-testid": "graphs" });
  private list: XlaGraphList | null = null;
  private readonly listEl = h("div", { class: "xv-graph-list" });
  private readonly detailEl = h("div", { class: "xv-graph-detail" });

  constructor(private readonly host: GraphsHost) {
    this.el.append(this.listEl, this.detailEl);
  }

  async show(params: URLSearchParams): Promise<void> {
    if (!this.list) {
      this.listEl.append(h("p", { class: "ps-loading" }, "Loading graphs…"));
      try {
        this.list = await this.host.api.graphs(this.host.subject, this.host.ordinal, this.host.signal);
      } catch (e) {
        if (isAbort(e)) return;
        clear(this.listEl);
        this.listEl.append(h("div", { class: "ps-error" }, messageOf(e)));
        return;
      }
      this.renderList();
    }
    const diff = params.get("diff");
    const graph = params.get("graph");
    if (diff && /^\d+,\d+$/.test(diff)) {
      const [a, b] = diff.split(",").map(Number) as [number, number];
      await this.showDiff(a, b);
    } else if (graph && /^\d+$/.test(graph)) {
      await this.showGraph(Number(graph));
    } else if (this.list.records.length) {
      this.detailEl.replaceChildren(h("p", { class: "xv-hint" }, "Pick a graph in the list above to draw it, read its text or compare it with another."));
    }
  }

  private renderList(): void {
    const list = this.list;
    clear(this.listEl);
    if (!list || !list.records.length) {
      this.listEl.append(
        h("p", { class: "xv-hint" }, "No graph log for this host. Set XLA_SAVE_TENSORS_FILE (see profscope.xla.xla_env) to record every graph."),
      );
      return;
    }
    const rows = list.groups.map((g) => {
      const row = h(
        "tr",
        { class: "xv-row", tabindex: 0, "data-testid": "graph-group", "data-key": g.key },
        h("td", {}, h("code", {}, shortHash(g.key))),
        h("td", { class: "num" }, `×${g.count}`),
        h("td", {}, g.steps.length ? g.steps.join(", ") : "—"),
        h("td", { class: "num" }, formatCount(g.num_nodes)),
        h("td", {}, g.user_frame ? h("code", { class: "xv-loc" }, g.user_frame.label) : "—"),
        h("td", {}, g.compile ? g.compile.cause : g.changes.length ? g.changes.map((c) => c.kind.replace("_", " ")).join(", ") : "—"),
      );
      const open = () => this.host.setParams({ graph: String(g.first_index), diff: undefined });
      row.addEventListener("click", open);
      row.addEventListener("keydown", (e) => {
        if (e.key === "Enter") open();
      });
      return row;
    });
    this.listEl.append(
      h(
        "p",
        { class: "xv-hint" },
        `${list.records.length} graph records, ${list.groups.length} distinct graphs. A graph that runs with new tensor sizes or new ops gets a new hash and is compiled again.`,
      ),
      h(
        "table",
        { class: "xv-table" },
        h(
          "thead",
          {},
          h("tr", {}, h("th", {}, "Graph"), h("th", { class: "num" }, "Runs"), h("th", {}, "Steps"), h("th", { class: "num" }, "Nodes"), h("th", {}, "Triggered at"), h("th", {}, "Compiled because")),
        ),
        h("tbody", {}, ...rows),
      ),
    );
  }

  private record(index: number): XlaGraphRecord | undefined {
    return this.list?.records[index];
  }

  private async showGraph(index: number): Promise<void> {
    this.highlight(this.record(index)?.key);
    this.detailEl.replaceChildren(h("p", { class: "ps-loading" }, `Loading graph #${index}…`));
    let graph: XlaGraph;
    try {
      graph = await this.host.api.graph(this.host.subject, index, this.host.ordinal, this.host.signal);
    } catch (e) {
      if (!isAbort(e)) this.detailEl.replaceChildren(h("div", { class: "ps-error" }, messageOf(e)));
      return;
    }
    const drawing = h("div", { class: "xv-drawing", "data-testid": "graph-drawing" });
    const draw = async () => {
      drawing.replaceChildren(h("p", { class: "ps-loading" }, "Laying out the graph with Graphviz…"));
      try {
        const svgEl = await renderDot(graph.dot ?? "");
        drawing.replaceChildren(zoomable(svgEl));
      } catch (e) {
        drawing.replaceChildren(h("div", { class: "ps-error" }, messageOf(e)));
      }
    };
    if (graph.dot === null) {
      drawing.append(h("p", { class: "xv-hint" }, graph.dot_note ?? "No drawing for this graph."));
    } else if (graph.num_nodes <= AUTO_DRAW_NODES) {
      void draw();
    } else {
      const button = h("button", { class: "ps-button", type: "button" }, `Draw ${formatCount(graph.num_nodes)} nodes`);
      button.addEventListener("click", () => void draw());
      drawing.append(button);
    }
    const same = (this.list?.records ?? []).filter((r) => r.index !== index);
    const compare = h(
      "select",
      { "aria-label": "Compare with", "data-testid": "compare-select" },
      h("option", { value: "" }, "Compare with…"),
      ...same.map((r) => h("option", { value: String(r.index) }, recordLabel(r))),
    );
    compare.addEventListener("change", () => {
      if (compare.value !== "") this.host.setParams({ graph: undefined, diff: `${index},${compare.value}` });
    });
    const frames = graph.frames.map((f) => h("li", {}, h("code", { class: "xv-loc" }, f.label)));
    const change = graph.change
      ? h(
          "p",
          { class: "xv-change" },
          graph.change.kind === "new_structure"
            ? "Graph change log: new graph structure."
            : `Graph change log: ${graph.change.node ?? "a node"} is ${graph.change.current_shape}, was ${graph.change.previous_shape}.`,
        )
      : null;
    this.detailEl.replaceChildren(h("h3", {}, `Graph #${graph.index} `, h("code", {}, graph.key)));
    append(
      this.detailEl,
      [
      h(
        "p",
        { class: "xv-hint" },
        `[${graph.header}] at ${graph.file}:${graph.line}` +
          (graph.step === null ? "" : `, step ${graph.step}`) +
          `, ${graph.format} format, ${formatCount(graph.num_nodes)} nodes, ${graph.root_hashes.length} roots` +
          (graph.complete ? "" : " — truncated (no END_GRAPH)"),
      ),
      change,
      h("h4", {}, "Triggered by"),
      h("ul", { class: "xv-frames" }, ...frames),
      h("div", { class: "xv-row-tools" }, compare),
      drawing,
      h("details", { class: "xv-text" }, h("summary", {}, "Graph text as dumped"), h("pre", { class: "xv-pre", "data-testid": "graph-text" }, graph.text)),
      ],
    );
  }

  private highlight(key: string | undefined): void {
    for (const row of Array.from(this.listEl.querySelectorAll<HTMLElement>("tr[data-key]"))) {
      row.classList.toggle("selected", row.dataset.key === key);
    }
  }

  private async showDiff(a: number, b: number): Promise<void> {
    this.highlight(undefined);
    this.detailEl.replaceChildren(h("p", { class: "ps-loading" }, `Comparing graph #${a} with #${b}…`));
    let diff: XlaDiff;
    try {
      diff = await this.host.api.diff(this.host.subject, a, b, this.host.ordinal, this.host.signal);
    } catch (e) {
      if (!isAbort(e)) this.detailEl.replaceChildren(h("div", { class: "ps-error" }, messageOf(e)));
      return;
    }
    this.detailEl.replaceChildren(diffView(diff, (index) => this.host.setParams({ diff: undefined, graph: String(index) })));
  }
}

function zoomable(svgEl: SVGSVGElement): HTMLElement {
  const width = svgEl.width.baseVal.value || 800;
  let scale = Math.min(1, 1100 / width);
  const box = h("div", { class: "xv-zoom" }, svgEl);
  const apply = () => {
    svgEl.style.width = `${width * scale}px`;
    svgEl.style.height = "auto";
  };
  const button = (label: string, f: number) => {
    const b = h("button", { class: "ps-button", type: "button" }, label);
    b.addEventListener("click", () => {
      scale = f === 0 ? Math.min(1, box.clientWidth / width) : scale * f;
      apply();
    });
    return b;
  };
  apply();
  return h("div", {}, h("div", { class: "xv-row-tools" }, button("−", 0.8), button("+", 1.25), button("Fit", 0)), box);
}

function side(cell: XlaDiffRow["a"]): HTMLElement[] {
  return cell ? [h("td", { class: "xv-ln" }, String(cell.line)), h("td", {}, h("code", {}, cell.text))] : [h("td", { class: "xv-ln" }), h("td")];
}

function rowsTable(rows: XlaDiffRow[]): HTMLElement {
  return h(
    "table",
    { class: "xv-sbs", "data-testid": "diff-rows" },
    h("colgroup", {}, h("col", { class: "xv-col-ln" }), h("col"), h("col", { class: "xv-col-ln" }), h("col")),
    h("tbody", {}, ...rows.map((r) =>
      r.kind === "same"
        ? h("tr", { class: "xv-same" }, h("td", { colspan: 4 }, `… ${formatCount(r.count)} identical nodes …`))
        : h("tr", { class: `xv-${r.kind}` }, ...side(r.a), ...side(r.b)),
    )),
  );
}

export function diffView(diff: XlaDiff, open: (index: number) => void): HTMLElement {
  const link = (r: XlaGraphRecord) => {
    const b = h("button", { class: "xv-link", type: "button" }, recordLabel(r));
    b.addEventListener("click", () => open(r.index));
    return b;
  };
  const head = h("h3", {}, "Compare ", link(diff.a), " with ", link(diff.b));
  if (!diff.aligned) return h("div", { "data-testid": "diff" }, head, h("p", { class: "xv-hint" }, diff.reason ?? "These graphs could not be aligned."));
  const shapes = diff.shape_changes ?? [];
  const verdict = diff.same_structure
    ? `Same ops and wiring; ${shapes.length} nodes have other tensor sizes, so the runtime compiled a second program.`
    : `Different graphs: ${diff.added?.length ?? 0} nodes added, ${diff.removed?.length ?? 0} removed, ${shapes.length} with other sizes.`;
  const origins = diff.origins ?? [];
  return h(
    "div",
    { "data-testid": "diff" },
    head,
    h("p", { class: "xv-summary", "data-testid": "diff-verdict" }, verdict),
    origins.length
      ? h(
          "div",
          {},
          h("h4", {}, "Where a new size enters (nodes whose inputs kept their sizes)"),
          h(
            "table",
            { class: "xv-table" },
            h("thead", {}, h("tr", {}, h("th", {}, "Op"), h("th", {}, "Before"), h("th", {}, "After"), h("th", {}, "Created at"))),
            h(
              "tbody",
              {},
              ...origins.map((o) =>
                h("tr", {}, h("td", {}, o.op), h("td", {}, h("code", {}, o.shape_a)), h("td", {}, h("code", {}, o.shape_b)), h("td", {}, o.location ? h("code", { class: "xv-loc" }, o.location.label) : "not recorded (set XLA_IR_DEBUG=1)")),
              ),
            ),
          ),
        )
      : null,
    diff.attr_changes?.length ? h("p", { class: "xv-hint" }, `${diff.attr_changes.length} nodes differ in other attributes.`) : null,
    h("h4", {}, `Side by side (${formatCount(diff.nodes_a)} and ${formatCount(diff.nodes_b)} nodes)`),
    rowsTable(diff.rows ?? []),
  );
}
