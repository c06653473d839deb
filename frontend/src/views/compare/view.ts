/** The Compare tab: the shell's run (one host) against a base picked over `/runs` (kept in the deep
 * link: api.ts). Top to bottom: the cautions, the step-time difference with its interval, every
 * step of both runs on a strip chart beside their figures, the breakdown deltas, the phase deltas, the op deltas
 * (host ops, device kernels, HLO ops: sortable, filterable by change, CSV), each allocator's memory
 * peak on both sides (memory.ts), the roofline deltas of the
 * ops in both runs (roofline.ts: each side's Roofline answer), and the method's advice.
 * While the server reads either profile the view shows the progress of both. */

import type { CompareAnswer, CompareCategory, CompareOpDelta, CompareOpTable, RooflineAnswer } from "../../api/answers.gen.ts";
import type { IngestProgress, Subject } from "../../api/types.ts";
import { clear, h, isAbort, messageOf } from "../../dom.ts";
import { ingestProgress } from "../../shared/progress.ts";
import { ensureStyle } from "../../shared/style.ts";
import { tableStyle } from "../../shared/table.ts";
import { formatCount, NOT_OBSERVED } from "../../shared/units.ts";
import { LinkedOptions, Loads } from "../../shared/view_state.ts";
import type { ViewContext } from "../view.ts";
import { type BaseChoice, baseCandidates, baseSubject, type CompareOptions, fetchCompare, optionParams, readOptions, runSubject, sameOptions } from "./api.ts";
import { BasePicker } from "./base_picker.ts";
import { categoryColumns, type OpTableId, opColumns } from "./columns.ts";
import css from "./compare.css";
import { memorySection } from "./memory.ts";
import { phasesSection } from "./phases.ts";
import { type RooflineDelta, rooflineColumns, rooflineDeltas, rooflineListing } from "./roofline.ts";
import { adviceSection, cautionsSection, shiftSection, sideLabel, statsTable } from "./sections.ts";
import { type StripChart, stripChart } from "./strip_chart.ts";
import { CompareTable, csvFileName } from "./table.ts";

export type ChangeFilter = "changed" | "all" | CompareOpDelta["change"];

const FILTERS: { value: ChangeFilter; text: string }[] = [
  { value: "changed", text: "changed ops" },
  { value: "all", text: "all ops" },
  { value: "added", text: "added" },
  { value: "removed", text: "removed" },
  { value: "faster", text: "faster" },
  { value: "slower", text: "slower" },
  { value: "same", text: "same" },
];

const TABLES: { id: OpTableId; title: string; what: string }[] = [
  { id: "host_ops", title: "Host ops", what: "host ops" },
  { id: "kernels", title: "Device kernels", what: "kernels" },
  { id: "hlo_ops", title: "HLO ops", what: "HLO ops" },
];

export function filterRows(rows: readonly CompareOpDelta[], filter: ChangeFilter): CompareOpDelta[] {
  if (filter === "all") return [...rows];
  if (filter === "changed") return rows.filter((r) => r.change !== "same");
  return rows.filter((r) => r.change === filter);
}

/** "showing 57 of 63 host ops, the largest difference first · 5 added, 1 removed, 12 faster, 39 slower, 6 same". */
export function opListing(table: CompareOpTable, shown: number, what: string): string {
  const changes = (["added", "removed", "faster", "slower", "same"] as const).map((c) => `${formatCount(table.changes[c] ?? 0)} ${c}`).join(", ");
  const limited = table.rows.length < table.total ? ` (the ${formatCount(table.rows.length)} largest differences are listed)` : "";
  return `showing ${formatCount(shown)} of ${formatCount(table.total)} ${what}${limited}, the largest difference first · ${changes}`;
}

class OpSection {
  readonly filter = h("select", { "aria-label": "Show", "data-testid": "cmp-filter" }, ...FILTERS.map((f) => h("option", { value: f.value }, f.text)));
  readonly table: CompareTable<CompareOpDelta>;
  private data: CompareOpTable | null = null;
  private fileName = "";
  private sameWithin = 0.05;

  constructor(
    private readonly id: OpTableId,
    title: string,
    private readonly what: string,
  ) {
    this.filter.value = "changed";
    this.table = new CompareTable<CompareOpDelta>({ title, testId: `cmp-${id}`, sort: { column: "", descending: true }, controls: [h("label", { class: "cmp-hint" }, "Show ", this.filter)] });
    this.filter.addEventListener("change", () => this.render());
  }

  set(data: CompareOpTable, sameWithin: number, fileName: string): void {
    this.data = data;
    this.sameWithin = sameWithin;
    this.fileName = fileName;
    this.render();
  }

  private render(): void {
    if (!this.data) return;
    const rows = filterRows(this.data.rows, this.filter.value as ChangeFilter);
    const empty = this.data.reason ?? `No ${this.what} with this change.`;
    this.table.setRows(opColumns(this.id, this.sameWithin), rows, opListing(this.data, rows.length, this.what), this.fileName, empty);
  }
}

export class CompareView {
  readonly el = h("div", { class: "cmp", "data-testid": "compare-view" });
  private readonly stepInput = h("input", { type: "text", class: "cmp-input", placeholder: "annotation", "aria-label": "Run step marker", "data-testid": "cmp-step-name", title: "The annotation that wraps each step of the run, when its profile has no step markers" });
  private readonly baseStepInput = h("input", { type: "text", class: "cmp-input", placeholder: "same as the run", "aria-label": "Base step marker", "data-testid": "cmp-base-step-name", title: "The annotation that wraps each step of the base (default: the run's)" });
  private readonly status = h("span", { class: "cmp-hint", "data-testid": "cmp-status", role: "status" });
  private readonly picker: BasePicker;
  private readonly body = h("div", { class: "cmp-body" });
  private readonly breakdown = new CompareTable<CompareCategory>({ title: "Where the step time goes", testId: "cmp-breakdown", sort: { column: "", descending: false } });
  private readonly ops = TABLES.map((t) => new OpSection(t.id, t.title, t.what));
  private readonly roofline = new CompareTable<RooflineDelta>({ title: "Roofline: FLOP rate and efficiency of the ops in both runs", testId: "cmp-roofline", sort: { column: "", descending: true } });
  private readonly options: LinkedOptions<CompareOptions>;
  private readonly loads: Loads;
  private chart: StripChart | null = null;

  constructor(private readonly ctx: ViewContext) {
    ensureStyle("cmp-style", css + tableStyle("cmp"));
    this.options = new LinkedOptions({ read: readOptions, same: sameOptions, params: optionParams }, ctx, (fromLink) => {
      if (fromLink) this.showOptions();
      void this.load();
    });
    this.loads = new Loads(ctx.signal);
    this.picker = new BasePicker(ctx.subject.hosts[0] ?? "", (base) => this.options.set({ ...this.options.value, base }));
    this.stepInput.addEventListener("change", () => this.options.set({ ...this.options.value, stepName: this.stepInput.value.trim() }));
    this.baseStepInput.addEventListener("change", () => this.options.set({ ...this.options.value, baseStepName: this.baseStepInput.value.trim() }));
    const toolbar = h(
      "div",
      { class: "cmp-toolbar" },
      this.picker.el,
      h("label", {}, "Step marker: run ", this.stepInput),
      h("label", {}, "base ", this.baseStepInput),
      this.status,
    );
    this.showOptions();
    this.el.append(toolbar, this.body);
  }

  /** Lists the bases `/runs` offers, then compares when the deep link names one. */
  async start(): Promise<void> {
    try {
      const runs = await this.ctx.client.runs(this.ctx.signal);
      this.picker.setCandidates(baseCandidates(runs));
      this.picker.show(this.options.value.base);
    } catch (e) {
      if (!isAbort(e)) this.showError(`could not list the runs: ${messageOf(e)}`);
      return;
    }
    await this.load();
  }

  applyParams(params: URLSearchParams): void {
    this.options.fromLink(params);
  }

  destroy(): void {
    this.loads.abort();
    this.chart?.destroy();
    this.chart = null;
    this.breakdown.destroy();
    this.roofline.destroy();
    for (const op of this.ops) op.table.destroy();
  }

  private showOptions(): void {
    const { stepName, baseStepName, base } = this.options.value;
    this.stepInput.value = stepName;
    this.baseStepInput.value = baseStepName;
    this.picker.show(base);
  }

  private async load(): Promise<void> {
    const base = this.options.value.base;
    if (!base) {
      this.loads.abort();
      this.clearResult();
      const { run, hosts } = this.ctx.subject;
      this.body.append(h("p", { class: "cmp-prompt", "data-testid": "cmp-prompt" }, `Pick the base to compare ${run} · ${hosts[0] ?? ""} with: the same program before the change, with the same step markers, batch and device.`));
      return;
    }
    this.status.textContent = "Loading…";
    await this.loads.run(
      async (signal) => {
        await this.waitForTraces(base, signal);
        const answer = await fetchCompare(this.ctx.client, this.ctx.subject, base, this.options.value, signal);
        const sides = [runSubject(this.ctx.subject), baseSubject(base)].map((subject) => this.fetchRoofline(subject, signal));
        return { answer, roofline: await Promise.all(sides) };
      },
      ({ answer, roofline }) => {
        this.render(answer, roofline);
        this.status.textContent = "";
      },
      (e) => {
        this.status.textContent = "";
        this.showError(messageOf(e));
      },
    );
  }

  /** Shows the progress of both profiles while the server reads them. */
  private async waitForTraces(base: BaseChoice, signal: AbortSignal): Promise<void> {
    this.clearResult();
    const sides: [string, Subject][] = [
      ["Reading the run's profile…", runSubject(this.ctx.subject)],
      ["Reading the base's profile…", baseSubject(base)],
    ];
    const waiting = sides.map(([title]) => ingestProgress(title));
    const box = h("div", { "data-testid": "cmp-waiting" }, h("p", { class: "ps-loading" }, "Comparing…"));
    this.body.append(box);
    let shown = false;
    await Promise.all(
      sides.map(([, subject], i) =>
        this.ctx.client.waitForTraceMeta(
          subject,
          (p: IngestProgress) => {
            if (!shown) box.append(...waiting.map((w) => w.el));
            shown = true;
            waiting[i].progress(p);
          },
          signal,
        ),
      ),
    );
  }

  /** One side's roofline answer, or why there is none (the run has no Roofline tab, a 4xx). */
  private async fetchRoofline(subject: Subject, signal: AbortSignal): Promise<RooflineAnswer | string> {
    try {
      return await this.ctx.client.getJson<RooflineAnswer>("roofline", subject, {}, signal);
    } catch (e) {
      if (isAbort(e)) throw e;
      return messageOf(e);
    }
  }

  private clearResult(): void {
    this.chart?.destroy();
    this.chart = null;
    clear(this.body);
  }

  private showError(message: string): void {
    this.clearResult();
    this.body.append(h("div", { class: "ps-error", role: "alert", "data-testid": "cmp-error" }, `Could not compare: ${message}`));
  }

  private render(answer: CompareAnswer, roofline: (RooflineAnswer | string)[]): void {
    this.clearResult();
    const { base, run } = answer;
    if (this.ctx.subject.hosts.length > 1) {
      this.body.append(h("p", { class: "cmp-notice", "data-testid": "cmp-one-host" }, `Compare takes one host per side: comparing ${run.host}. Pick one host above to compare another.`));
    }
    const cautions = cautionsSection(answer.cautions);
    if (cautions) this.body.append(cautions);
    this.body.append(shiftSection(answer));
    this.chart = stripChart(base, run, { base: `base: ${sideLabel(base)}`, run: `run: ${sideLabel(run)}` });
    this.body.append(
      h(
        "section",
        { class: "cmp-steps", "data-testid": "cmp-steps" },
        h("h2", {}, "Every step, side by side"),
        h("div", { class: "cmp-steps-grid" }, h("figure", { class: "cmp-figure-box" }, this.chart.el), statsTable(base, run)),
      ),
    );
    const seen = answer.categories.filter((c) => c.base_ns !== undefined || c.run_ns !== undefined);
    const unseen = answer.categories.filter((c) => c.base_ns === undefined && c.run_ns === undefined);
    this.breakdown.setRows(categoryColumns(), seen, answer.breakdown_scope, csvFileName("breakdown", run.run, base.run), "No category observed on either side.");
    this.body.append(this.breakdown.el);
    if (unseen.length) {
      this.body.append(h("p", { class: "cmp-hint", "data-testid": "cmp-unseen", title: unseen[0].reason }, `Not observed on either side: ${unseen.map((c) => c.label).join(", ")} — ${unseen[0].reason ?? NOT_OBSERVED}.`));
    }
    const phases = phasesSection(answer.phases);
    if (phases) this.body.append(phases);
    const tables = h("section", { class: "cmp-ops", "data-testid": "cmp-ops" }, h("h2", {}, "Ops that changed (self time per step)"));
    this.ops.forEach((section, i) => {
      const id = TABLES[i].id;
      const data = answer[id];
      if (id === "hlo_ops" && data.total === 0) return;
      if (data.reason && data.total === 0) {
        tables.append(
          h(
            "section",
            { class: "cmp-table-section", "data-testid": `cmp-${id}` },
            h("h3", {}, TABLES[i].title),
            h("p", {}, h("span", { class: "cmp-absent", title: data.reason, "data-testid": `cmp-${id}-absent` }, NOT_OBSERVED), h("span", { class: "cmp-hint" }, ` — ${data.reason}`)),
          ),
        );
        return;
      }
      section.set(data, answer.same_within, csvFileName(id, run.run, base.run));
      tables.append(section.table.el);
    });
    this.body.append(tables, memorySection(answer), this.rooflineSection(roofline, run.run, base.run), adviceSection(answer.advice));
  }

  private rooflineSection(roofline: (RooflineAnswer | string)[], run: string, base: string): HTMLElement {
    const [ours, theirs] = roofline;
    if (typeof ours === "string" || typeof theirs === "string") {
      const why = typeof ours === "string" ? `the run's roofline: ${ours}` : `the base's roofline: ${theirs}`;
      return h("p", { class: "cmp-hint", "data-testid": "cmp-roofline-absent" }, `Roofline deltas: ${NOT_OBSERVED} — ${why}`);
    }
    const deltas = rooflineDeltas(ours, theirs);
    const empty = deltas.reason ? `No device roofline on a side: ${deltas.reason}` : "No op of one name in both runs.";
    this.roofline.setRows(rooflineColumns(), deltas.rows, rooflineListing(deltas), csvFileName("roofline", run, base), empty);
    return this.roofline.el;
  }
}
