/** The Graph section of the details panel for an XLA op (an event whose args name its `program_id`:
 * GPU kernels and their launches with `hlo_op`, TPU and CPU XLA ops): the op's neighbourhood in its
 * HLO module drawn with Graphviz, the op highlighted and every other node a click that re-centres the
 * graph on it (Back returns), the instruction as XLA prints it, a fusion's fused computation, the
 * whole module's text on request and a link that searches the trace for the op's events. The first
 * request names the event (the server reads its 64-bit program id, which JavaScript numbers cannot
 * hold); the walk goes on with the `program_id` string the answers give. */

import type { HloModuleText, HloOp, NoHloModule, NotAnXlaOp } from "../../api/answers.gen.ts";
import type { EventDetails } from "../../api/types.ts";
import { append, type Child, clear, h, isAbort, messageOf } from "../../dom.ts";
import { renderDot } from "../../shared/graphviz.ts";
import { ensureStyle } from "../../shared/style.ts";
import css from "./hlo_graph.css";

export type HloAnswer = HloOp | NoHloModule | NotAnXlaOp;
export type HloParams = Record<string, string | number>;

/** The server's default and largest radius (tools/trace/hlo.py). */
export const DEFAULT_RADIUS = 2;
export const MAX_RADIUS = 6;

export interface HloGraphHost {
  /** The `hlo` route's answer to these parameters. */
  load(params: HloParams, signal: AbortSignal): Promise<HloAnswer>;
  /** Searches the trace for `query` (the op's events) and goes to the first match. */
  findEvents(query: string): void;
}

/** Whether an event is an XLA op for certain: its args name the program it ran in. Other events of
 * an XPlane may name one too (host-side thunks, derived XLA Ops lines): the section asks the server
 * quietly (`probe`) and shows only if they do. */
export function isXlaOp(d: EventDetails): boolean {
  return typeof d.args?.program_id === "number" || typeof d.args?.program_id === "string";
}

export interface SectionOptions {
  /** The event may name no op: the section stays hidden unless the server finds one. */
  probe: boolean;
  /** Called once, when the section is to be seen (at once, or when a probe finds an op). */
  shown(): void;
}

/** The request for the op a trace event names. */
export function eventRequest(eventId: number, radius: number): HloParams {
  return { event: eventId, radius };
}

/** The request for instruction `op` of the program of `answer` (a step of the walk). */
export function opRequest(answer: HloOp, op: string, radius: number, full = false): HloParams {
  const params: HloParams = { program_id: answer.program_id, op, host_index: answer.host_index, radius };
  if (full) params.full = 1;
  return params;
}

/** The node groups of a rendered graph by instruction name: Graphviz writes each node's id (the
 * instruction's name, see hlo_graph.py) as its `<title>`. */
export function nodeGroups(svg: Element): Map<string, SVGGElement> {
  const out = new Map<string, SVGGElement>();
  for (const g of Array.from(svg.querySelectorAll<SVGGElement>("g.node"))) {
    const title = g.querySelector("title")?.textContent;
    if (title) out.set(title, g);
  }
  return out;
}

/** A server phrase as a sentence: "the profile carries no HLO module" → "The profile carries no HLO module." */
export function sentence(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1) + (text.endsWith(".") ? "" : ".");
}

/** "Find its events" searches for the op's name. */
export function eventQuery(answer: HloOp): string {
  return answer.op;
}

/** Scrolls `box` so that `target` (the op's node) is in its middle. */
function centreOn(box: HTMLElement, target: Element | null): void {
  if (!target) return;
  const outer = box.getBoundingClientRect();
  const inner = target.getBoundingClientRect();
  box.scrollTop += inner.top + inner.height / 2 - (outer.top + box.clientHeight / 2);
  box.scrollLeft += inner.left + inner.width / 2 - (outer.left + box.clientWidth / 2);
}

export class HloGraphSection {
  readonly el = h("section", { class: "tv-hlo", "data-testid": "hlo-section" });
  private abort = new AbortController();
  private radius = DEFAULT_RADIUS;
  private current: HloOp | null = null;
  private readonly back: HloOp[] = [];
  private readonly moduleTexts = new Map<string, HloModuleText>();

  constructor(
    private readonly host: HloGraphHost,
    eventId: number,
    private readonly options: SectionOptions,
  ) {
    ensureStyle("tv-hlo-style", css);
    this.el.hidden = options.probe;
    if (!options.probe) options.shown();
    void this.load(eventRequest(eventId, this.radius));
  }

  /** The op now shown (null while the first answer is awaited or when there is none). */
  get op(): HloOp | null {
    return this.current;
  }

  stop(): void {
    this.abort.abort();
  }

  /** Re-centres the graph on instruction `name` of the current program. */
  walkTo(name: string): Promise<void> {
    const from = this.current;
    if (!from || name === from.op) return Promise.resolve();
    return this.load(opRequest(from, name, this.radius), from);
  }

  private async load(params: HloParams, from: HloOp | null = null): Promise<void> {
    this.abort.abort();
    const abort = new AbortController();
    this.abort = abort;
    this.status("Loading the HLO graph…");
    let answer: HloAnswer;
    try {
      answer = await this.host.load(params, abort.signal);
    } catch (e) {
      if (!isAbort(e)) this.status(messageOf(e), true);
      return;
    }
    if (abort.signal.aborted || (this.el.hidden && answer.kind !== "op")) return;
    if (this.el.hidden) {
      this.el.hidden = false;
      this.options.shown();
    }
    if (answer.kind !== "op") {
      this.current = null;
      this.render(this.heading(), h("p", { class: "tv-hint", "data-testid": "hlo-none" }, sentence(answer.reason)));
      return;
    }
    if (from) this.back.push(from);
    this.current = answer;
    await this.show(answer);
  }

  private heading(...extra: (Node | string)[]): HTMLElement {
    return h("div", { class: "tv-hlo-head" }, h("h3", {}, "HLO graph"), ...extra);
  }

  private render(...children: Child[]): void {
    clear(this.el);
    append(this.el, children);
  }

  private status(text: string, error = false): void {
    const p = error ? h("p", { class: "ps-error", role: "alert" }, text) : h("p", { class: "tv-hint" }, text);
    if (this.current) {
      this.el.querySelector(".tv-hlo-status")?.replaceChildren(p);
      return;
    }
    this.render(this.heading(), p);
  }

  private controls(answer: HloOp): HTMLElement {
    const back = h("button", { type: "button", class: "ps-button", "data-testid": "hlo-back", title: "Back to the op shown before" }, "← Back");
    back.disabled = !this.back.length;
    back.addEventListener("click", () => {
      const previous = this.back.pop();
      if (previous) void this.load(opRequest(previous, previous.op, this.radius));
    });
    const radius = h("select", { "aria-label": "Radius", "data-testid": "hlo-radius", title: "Edges from the op" });
    for (let r = 1; r <= MAX_RADIUS; r++) radius.append(h("option", { value: String(r) }, String(r)));
    radius.value = String(this.radius);
    radius.addEventListener("change", () => {
      this.radius = Number(radius.value);
      void this.load(opRequest(answer, answer.op, this.radius));
    });
    const find = h("a", { href: "#", "data-testid": "hlo-find-events", title: `Search the trace for "${eventQuery(answer)}"` }, "Find its events");
    find.addEventListener("click", (e) => {
      e.preventDefault();
      this.host.findEvents(eventQuery(answer));
    });
    return h("div", { class: "tv-hlo-controls" }, back, h("label", {}, "radius ", radius), find);
  }

  private async show(answer: HloOp): Promise<void> {
    const title = h(
      "span",
      { class: "tv-hlo-title", "data-testid": "hlo-title" },
      h("code", {}, `%${answer.op}`),
      ` in ${answer.module} · program ${answer.program_id}`,
    );
    const drawing = h("div", { class: "tv-hlo-graph", "data-testid": "hlo-graph" }, h("p", { class: "tv-hint" }, "Drawing…"));
    this.render(
      this.heading(title, this.controls(answer)),
      h("div", { class: "tv-hlo-status" }),
      drawing,
      answer.note ? h("p", { class: "tv-hint", "data-testid": "hlo-note" }, sentence(answer.note)) : null,
      this.instruction(answer),
      this.moduleSection(answer),
    );
    try {
      const svg = await renderDot(answer.dot);
      if (this.current !== answer) return;
      drawing.replaceChildren(svg);
      this.wireNodes(svg, answer);
      centreOn(drawing, svg.querySelector(".tv-hlo-current"));
    } catch (e) {
      drawing.replaceChildren(h("p", { class: "ps-error" }, messageOf(e)));
    }
  }

  private wireNodes(svg: SVGSVGElement, answer: HloOp): void {
    for (const [name, g] of nodeGroups(svg)) {
      g.setAttribute("data-op", name);
      if (name === answer.op) {
        g.classList.add("tv-hlo-current");
        continue;
      }
      g.classList.add("tv-hlo-node");
      g.setAttribute("tabindex", "0");
      g.setAttribute("role", "button");
      g.setAttribute("aria-label", `Centre the graph on ${name}`);
      g.addEventListener("click", () => void this.walkTo(name));
      g.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          void this.walkTo(name);
        }
      });
    }
  }

  private instruction(answer: HloOp): HTMLElement {
    const rows: [string, Node | string][] = [["Computation", answer.computation]];
    if (answer.op_name) rows.push(["Framework op", answer.op_name]);
    if (answer.source) rows.push(["Source", answer.source]);
    if (answer.callers.length) {
      const links = answer.callers.map((name) => {
        const a = h("a", { href: "#", "data-testid": "hlo-caller" }, `%${name}`);
        a.addEventListener("click", (e) => {
          e.preventDefault();
          void this.walkTo(name);
        });
        return a;
      });
      rows.push(["Called by", h("span", {}, ...links.flatMap((a, i) => (i ? [", ", a] : [a])))]);
    }
    const table = h("table", { class: "tv-kv" });
    for (const [k, v] of rows) table.append(h("tr", {}, h("th", {}, k), h("td", {}, v)));
    const fusion = answer.fusion
      ? h(
          "details",
          { class: "tv-hlo-fusion", open: true },
          h("summary", {}, `Fused computation %${answer.fusion.name} (${answer.fusion.instructions.length} instructions)`),
          h("pre", { class: "tv-hlo-pre", "data-testid": "hlo-fusion" }, answer.fusion.instructions.join("\n")),
        )
      : null;
    return h("div", { class: "tv-hlo-info" }, h("pre", { class: "tv-hlo-pre", "data-testid": "hlo-text" }, answer.text), table, fusion);
  }

  private moduleSection(answer: HloOp): HTMLElement {
    const body = h("div", {});
    const details = h("details", { class: "tv-hlo-module", "data-testid": "hlo-module" }, h("summary", {}, `Whole module ${answer.module}`), body);
    details.addEventListener("toggle", () => {
      if (details.open && !body.firstChild) void this.fillModule(answer, body);
    });
    return details;
  }

  private async fillModule(answer: HloOp, body: HTMLElement): Promise<void> {
    let listing = this.moduleTexts.get(answer.program_id);
    if (!listing) {
      body.replaceChildren(h("p", { class: "tv-hint" }, "Loading the module…"));
      try {
        const full = await this.host.load(opRequest(answer, answer.op, this.radius, true), this.abort.signal);
        if (full.kind !== "op" || !full.module_text) throw new Error("the answer holds no module text");
        listing = full.module_text;
        this.moduleTexts.set(answer.program_id, listing);
      } catch (e) {
        if (!isAbort(e)) body.replaceChildren(h("p", { class: "ps-error" }, messageOf(e)));
        return;
      }
    }
    clear(body);
    append(body, [
      listing.truncated && h("p", { class: "tv-hint" }, `The first ${listing.shown} of ${listing.total} instructions.`),
      h("pre", { class: "tv-hlo-pre tv-hlo-listing", "data-testid": "hlo-module-text" }, listing.text),
    ]);
  }
}
