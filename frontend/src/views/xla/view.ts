/** The XLA tab: PyTorch/XLA and X10 runtime logs of the selected host, as findings, tables, per-step
 * charts and graphs. Deep-link keys: `xtab` (sub-tab), `graph` (graph index), `diff` ("a,b"),
 * `ordinal` (device ordinal when the logs of several processes sit side by side). */

import { XlaApi, type XlaReport } from "./api.ts";
import { clear, h, isAbort, messageOf } from "../../dom.ts";
import { ensureStyle } from "../../shared/style.ts";
import type { ViewContext } from "../view.ts";
import { GraphsPanel } from "./graphs.ts";
import { debugDigest, findingsList, stepCharts, summaryCards } from "./overview.ts";
import { countersTable, metricsTable, sourcesList } from "./tables.ts";
import css from "./xla.css";

const TABS = [
  { id: "overview", title: "Findings" },
  { id: "metrics", title: "Metrics" },
  { id: "counters", title: "Counters" },
  { id: "graphs", title: "Graphs" },
  { id: "sources", title: "Sources" },
] as const;
type TabId = (typeof TABS)[number]["id"];

function isTab(x: string | null): x is TabId {
  return TABS.some((t) => t.id === x);
}

export class XlaView {
  readonly el = h("div", { class: "xv", "data-testid": "xla-view" });
  private readonly api: XlaApi;
  private readonly tabsEl = h("nav", { class: "xv-tabs", role: "tablist" });
  private readonly body = h("div", { class: "xv-body" });
  private readonly panels = new Map<TabId, HTMLElement>();
  private report: XlaReport | null = null;
  private graphs: GraphsPanel | null = null;
  private params: URLSearchParams;

  constructor(private readonly ctx: ViewContext) {
    ensureStyle("xv-style", css);
    this.api = new XlaApi(ctx.client);
    this.params = new URLSearchParams(ctx.params);
    this.el.append(this.tabsEl, this.body);
  }

  private get ordinal(): number | null {
    const o = this.params.get("ordinal");
    return o !== null && /^\d+$/.test(o) ? Number(o) : null;
  }

  private get tab(): TabId {
    const t = this.params.get("xtab");
    if (isTab(t)) return t;
    return this.params.has("graph") || this.params.has("diff") ? "graphs" : "overview";
  }

  async start(): Promise<void> {
    this.body.append(h("p", { class: "ps-loading" }, "Reading the PyTorch/XLA logs…"));
    try {
      this.report = await this.api.report(this.ctx.subject, this.ordinal, this.ctx.signal);
    } catch (e) {
      if (isAbort(e)) return;
      clear(this.body);
      this.body.append(h("div", { class: "ps-error", role: "alert" }, messageOf(e)));
      return;
    }
    this.render();
  }

  applyParams(params: URLSearchParams): void {
    const ordinalChanged = params.get("ordinal") !== this.params.get("ordinal");
    this.params = new URLSearchParams(params);
    if (ordinalChanged) {
      this.panels.clear();
      this.graphs = null;
      clear(this.body);
      void this.start();
      return;
    }
    if (this.report) this.showTab();
  }

  private setParams(next: Record<string, string | undefined>): void {
    for (const [k, v] of Object.entries(next)) {
      if (v === undefined) this.params.delete(k);
      else this.params.set(k, v);
    }
    this.ctx.setParams(next);
    this.showTab();
  }

  private render(): void {
    const report = this.report;
    if (!report) return;
    clear(this.tabsEl);
    for (const t of TABS) {
      const count =
        t.id === "overview" ? report.findings.length : t.id === "metrics" ? report.metrics.length : t.id === "counters" ? report.counters.length : t.id === "graphs" ? report.graphs?.unique : undefined;
      const button = h(
        "button",
        { class: "xv-tab", type: "button", role: "tab", "data-tab": t.id, "data-testid": `xla-tab-${t.id}` },
        count === undefined ? t.title : `${t.title} (${count})`,
      );
      button.addEventListener("click", () => this.setParams({ xtab: t.id, graph: undefined, diff: undefined }));
      this.tabsEl.append(button);
    }
    if (report.ordinals.length > 1) {
      const select = h(
        "select",
        { "aria-label": "Device ordinal", class: "xv-ordinal" },
        ...report.ordinals.map((o) => h("option", { value: o === null ? "" : String(o), selected: o === report.ordinal }, o === null ? "—" : `ordinal ${o}`)),
      );
      select.addEventListener("change", () => {
        this.ctx.setParams({ ordinal: select.value || undefined, graph: undefined, diff: undefined });
        this.applyParams(new URLSearchParams(select.value ? { ordinal: select.value, xtab: this.tab } : { xtab: this.tab }));
      });
      this.tabsEl.append(h("label", { class: "xv-ordinal-label" }, "Device ", select));
    }
    if (report.errors.length) {
      this.tabsEl.append(h("span", { class: "xv-warn" }, `${report.errors.length} unreadable file(s): see Sources`));
    }
    clear(this.body);
    this.showTab();
  }

  private panel(tab: TabId): HTMLElement {
    let panel = this.panels.get(tab);
    if (panel) return panel;
    const report = this.report as XlaReport;
    panel = h("div", { class: "xv-panel", "data-panel": tab });
    if (tab === "overview") {
      panel.append(
        summaryCards(report.summary),
        findingsList(report, { openDiff: (a, b) => this.setParams({ xtab: "graphs", graph: undefined, diff: `${a},${b}` }) }),
      );
      const charts = stepCharts(report);
      if (charts) panel.append(charts);
      const debug = debugDigest(report);
      if (debug) panel.append(debug);
    } else if (tab === "metrics") {
      panel.append(metricsTable(report));
    } else if (tab === "counters") {
      panel.append(countersTable(report));
    } else if (tab === "sources") {
      panel.append(sourcesList(report));
    } else {
      this.graphs = new GraphsPanel({
        api: this.api,
        subject: this.ctx.subject,
        ordinal: report.ordinal,
        signal: this.ctx.signal,
        setParams: (p) => this.setParams({ xtab: "graphs", ...p }),
      });
      panel.append(this.graphs.el);
    }
    this.panels.set(tab, panel);
    this.body.append(panel);
    return panel;
  }

  private showTab(): void {
    const tab = this.tab;
    for (const b of Array.from(this.tabsEl.querySelectorAll<HTMLElement>(".xv-tab"))) {
      const active = b.dataset.tab === tab;
      b.classList.toggle("active", active);
      b.setAttribute("aria-selected", String(active));
    }
    const panel = this.panel(tab);
    for (const p of this.panels.values()) p.hidden = p !== panel;
    if (tab === "graphs" && this.graphs) void this.graphs.show(this.params);
  }
}
