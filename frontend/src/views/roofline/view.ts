/** The Roofline tab: the device's peaks, the roofline chart, the program rows and the top ops of the
 * selected hosts (the `roofline` route). Deep-link keys: `infeed=0` (infeed / outfeed left out) and
 * `step=N` (the ops of step N only). While the server reads the profile the view shows its progress;
 * a profile without device activity shows why, and nothing else. */

import { ApiError } from "../../api/client.ts";
import { clear, h, isAbort, messageOf } from "../../dom.ts";
import { ingestProgress } from "../../shared/progress.ts";
import { ensureStyle } from "../../shared/style.ts";
import { tableStyle } from "../../shared/table.ts";
import { LinkedOptions, Loads } from "../../shared/view_state.ts";
import type { ViewContext } from "../view.ts";
import { optionParams, readOptions, RooflineApi, type RooflineAnswer, type RooflineOpRow, type RooflineOptions, sameOptions } from "./api.ts";
import { coverageText, type RooflineContext, rooflineContext } from "./cells.ts";
import { RooflineChart } from "./chart.ts";
import { devicePanel } from "./device.ts";
import { rooflineModel } from "./geometry.ts";
import { csvFileName, OpTable } from "./op_table.ts";
import { programTable } from "./program_table.ts";
import css from "./roofline.css";

/** The level whose intensity is the x axis at first: HBM when it has traffic, else the first that does. */
function defaultLevel(ctx: RooflineContext): string | null {
  return ctx.levels.includes("hbm") ? "hbm" : (ctx.levels[0] ?? null);
}

export class RooflineView {
  readonly el = h("div", { class: "rf", "data-testid": "roofline-view" });
  private readonly api: RooflineApi;
  private readonly infeedBox = h("input", { type: "checkbox", "data-testid": "rf-infeed" });
  private readonly stepSelect = h("select", { "aria-label": "Step", "data-testid": "rf-step" });
  private readonly status = h("span", { class: "rf-hint", "data-testid": "rf-status" });
  private readonly toolbar = h(
    "div",
    { class: "rf-toolbar", hidden: true },
    h("label", { title: "Count the infeed and outfeed ops (host↔device copies) and their time" }, this.infeedBox, " Include infeed & outfeed"),
    h("label", {}, "Ops of ", this.stepSelect),
    this.status,
  );
  private readonly body = h("div", { class: "rf-body" });
  private readonly chart: RooflineChart;
  private readonly ops: OpTable;
  private readonly chartEmpty = h("p", { class: "rf-empty", "data-testid": "rf-chart-empty" });
  private readonly programSection = h("section", { class: "rf-program", "data-testid": "rf-program" });
  private readonly options: LinkedOptions<RooflineOptions>;
  private readonly loads: Loads;
  private answer: RooflineAnswer | null = null;
  private context: RooflineContext | null = null;
  private level: string | null = null;
  private selected: string | null = null;

  constructor(private readonly ctx: ViewContext) {
    ensureStyle("rf-style", css + tableStyle("rf"));
    this.api = new RooflineApi(ctx.client);
    this.options = new LinkedOptions({ read: readOptions, same: sameOptions, params: optionParams }, ctx, () => void this.load());
    this.loads = new Loads(ctx.signal);
    this.chart = new RooflineChart({
      select: (point) => this.select(point.key, true),
      openTrace: (op) => this.openTrace(op),
      level: (level) => {
        this.level = level;
        this.drawChart();
      },
    });
    this.ops = new OpTable({
      select: (rank) => this.select(`op:${rank}`, false),
      openTrace: (op) => this.openTrace(op),
      filtered: () => this.drawChart(),
    });
    this.infeedBox.addEventListener("change", () => this.options.set({ ...this.options.value, includeInfeed: this.infeedBox.checked }));
    this.stepSelect.addEventListener("change", () => this.options.set({ ...this.options.value, step: this.stepSelect.value === "" ? null : Number(this.stepSelect.value) }));
    this.el.append(this.toolbar, this.body);
  }

  /** Waits for the trace to be read (showing the progress), then asks for the roofline. */
  async start(): Promise<void> {
    const { client, subject, signal } = this.ctx;
    const waiting = ingestProgress("Reading the profile…");
    this.body.append(waiting.el);
    try {
      await client.waitForTraceMeta(subject, (p) => waiting.progress(p), signal);
    } catch (e) {
      if (isAbort(e)) return;
      this.showError(messageOf(e));
      return;
    }
    await this.load();
  }

  applyParams(params: URLSearchParams): void {
    this.options.fromLink(params);
  }

  destroy(): void {
    this.loads.abort();
    this.chart.destroy();
    this.ops.destroy();
  }

  private async load(): Promise<void> {
    const loading = this.loads.next();
    this.status.textContent = "Loading…";
    this.infeedBox.disabled = true;
    this.stepSelect.disabled = true;
    if (!this.answer) {
      clear(this.body);
      this.body.append(h("p", { class: "ps-loading" }, "Computing the roofline…"));
    }
    try {
      const answer = await this.api.answer(this.ctx.subject, this.options.value, loading.signal);
      if (loading.signal.aborted) return;
      this.render(answer);
    } catch (e) {
      if (isAbort(e) || loading.signal.aborted) return;
      this.showError(messageOf(e), e instanceof ApiError && e.status === 400 && this.options.value.step !== null);
    } finally {
      loading.end();
      if (loading.latest()) {
        this.status.textContent = "";
        this.infeedBox.disabled = false;
        this.stepSelect.disabled = !(this.answer?.steps.length ?? 0);
      }
    }
  }

  private showError(message: string, offerAllSteps = false): void {
    clear(this.body);
    const error = h("div", { class: "ps-error", role: "alert", "data-testid": "rf-error" }, `Could not compute the roofline: ${message} `);
    if (offerAllSteps) {
      const button = h("button", { type: "button", class: "ps-button" }, "Show every step");
      button.addEventListener("click", () => this.options.set({ ...this.options.value, step: null }));
      error.append(button);
    }
    this.body.append(error);
  }

  private render(answer: RooflineAnswer): void {
    this.answer = answer;
    clear(this.body);
    const warnings = answer.warnings.length ? h("ul", { class: "rf-warnings", "data-testid": "rf-warnings" }, ...answer.warnings.map((w) => h("li", {}, w))) : null;
    if (!answer.observed) {
      this.toolbar.hidden = true;
      this.body.append(h("div", { class: "rf-not-observed", "data-testid": "rf-not-observed" }, answer.reason ?? "no device roofline: device activity not observed"), warnings ?? "");
      return;
    }
    const context = rooflineContext(answer);
    this.context = context;
    if (!this.level || !context.levels.includes(this.level)) this.level = defaultLevel(context);
    this.renderToolbar(answer);
    this.programSection.replaceChildren(
      h("h2", {}, "Program"),
      ...(answer.step_source ? [h("p", { class: "rf-hint", "data-testid": "rf-step-source" }, `Steps: ${answer.step_source}`)] : []),
      h("div", { class: "rf-table-scroll" }, programTable(answer.program, context, this.options.value.step, (row) => this.select(`program:${row.step}`, false))),
    );
    this.body.append(
      ...(warnings ? [warnings] : []),
      ...(answer.device ? [devicePanel(answer.device, context)] : []),
      h("p", { class: "rf-hint", "data-testid": "rf-coverage" }, coverageText(answer) ?? ""),
      this.chart.el,
      this.chartEmpty,
      this.programSection,
      this.ops.el,
    );
    this.ops.setAnswer(answer, context, csvFileName(this.ctx.subject.run, this.ctx.subject.session, this.options.value.step));
    this.select(this.selected, false);
  }

  private renderToolbar(answer: RooflineAnswer): void {
    this.toolbar.hidden = false;
    this.infeedBox.checked = answer.include_infeed;
    clear(this.stepSelect);
    this.stepSelect.append(
      h("option", { value: "", selected: answer.step === undefined }, answer.steps.length ? "every step" : "every step (no steps observed)"),
      ...answer.steps.map((s) => h("option", { value: String(s), selected: answer.step === s }, `step ${s}`)),
    );
    this.stepSelect.disabled = !answer.steps.length;
  }

  /** Draws the chart for the chart's level and the ops the table's filter lets through, or says why
   * there is nothing to draw. */
  private drawChart(): void {
    const answer = this.answer;
    const context = this.context;
    if (!answer || !context) return;
    const model = this.level === null ? null : rooflineModel(context, this.level, answer.program, this.ops.rows);
    const points = model ? model.program.length + model.ops.length : 0;
    this.chart.el.hidden = !model || !points;
    this.chartEmpty.hidden = !this.chart.el.hidden;
    if (model && points) {
      this.chart.show(model, context);
      return;
    }
    const total = answer.program.find((r) => r.step === "Total");
    const why = model?.notDrawn.length ? model.notDrawn.join("; ") : (total?.source ?? "no FLOPs and bytes observed");
    this.chartEmpty.textContent = `Nothing to place on the roofline: ${context.levels.length ? why : `no memory traffic observed (${total?.source ?? "no costs"})`}.`;
  }

  /** Selects the chart point `key` ("op:<rank>" or "program:<step>"): its table row is highlighted
   * (and scrolled to when `scroll`), the chart pins its card. */
  private select(key: string | null, scroll: boolean): void {
    this.selected = key;
    const rank = key?.startsWith("op:") ? Number(key.slice(3)) : null;
    this.ops.highlight(rank, scroll);
    const step = key?.startsWith("program:") ? key.slice(8) : null;
    for (const tr of Array.from(this.programSection.querySelectorAll<HTMLElement>("tr[data-step]"))) {
      const on = tr.dataset.step === step;
      tr.classList.toggle("rf-selected", on);
      if (on && scroll) tr.scrollIntoView({ block: "nearest" });
    }
    this.chart.select(key);
  }

  /** The row's own events (the kernels its time comes from) when the answer names them, else the
   * events named as its search text, the device's first. */
  private openTrace(op: RooflineOpRow): void {
    this.ctx.navigate("trace", op.event_ids?.length ? { lk: op.event_ids.join(",") } : { find: op.search });
  }
}

