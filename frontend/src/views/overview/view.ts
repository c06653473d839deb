/** The Overview tab: findings first, then (several hosts) the ranks side by side, then per host the
 * steps, where their time goes, their phases and the device activity, then the host op, device kernel and HLO op
 * tables (the `overview` route, docs/OVERVIEW.md). Deep-link keys: `step_name`, `batch_size`,
 * `group_by` (api.ts); changing one refetches. While the server reads the profile the view shows its
 * progress. Every figure leads to its events in the Trace tab (links.ts), the allocator's peak to the
 * Memory tab (memory_peak.ts). Hosts with PyTorch/XLA logs only (no trace) get the findings their
 * logs support, and nothing else. */

import type { OverviewAnswer, OverviewHloRow, OverviewHost, OverviewKernelRow, OverviewLink, OverviewOpRow, TraceCriticalPath } from "../../api/answers.gen.ts";
import { ApiError } from "../../api/client.ts";
import { clear, h, isAbort, messageOf } from "../../dom.ts";
import { ingestProgress } from "../../shared/progress.ts";
import { ensureStyle } from "../../shared/style.ts";
import { tableStyle } from "../../shared/table.ts";
import { NOT_OBSERVED } from "../../shared/units.ts";
import { LinkedOptions, Loads } from "../../shared/view_state.ts";
import type { ViewContext } from "../view.ts";
import { fetchOverview, type GroupBy, optionParams, type OverviewOptions, parseBatchSize, readOptions, sameOptions } from "./api.ts";
import type { ChartFrame } from "./chart_frame.ts";
import { devicesSection } from "./devices.ts";
import { findingsSection } from "./findings.ts";
import { evidenceMatches, evidenceParams, rangeParams } from "./links.ts";
import { memoryPeakLine } from "./memory_peak.ts";
import { hloColumns, hostOpColumns, kernelColumns } from "./op_columns.ts";
import css from "./overview.css";
import { phasesSection } from "./phases_section.ts";
import { ranksSection } from "./ranks.ts";
import { stepsSection } from "./steps_section.ts";
import { csvFileName, DataTable } from "./table.ts";

/** Matches of a link's search text looked through (those in its range and named exactly are kept). */
const EVIDENCE_LIMIT = 1000;

export class OverviewView {
  readonly el = h("div", { class: "ov", "data-testid": "overview-view" });
  private readonly stepInput = h("input", {
    type: "text",
    class: "ov-input",
    placeholder: "annotation name",
    list: "ov-annotations",
    "aria-label": "Step marker",
    "data-testid": "ov-step-name",
    title: "The annotation that wraps each step, when the profile has no step markers (or to use another one)",
  });
  private readonly annotations = h("datalist", { id: "ov-annotations" });
  private readonly batchInput = h("input", { type: "number", min: 1, step: 1, class: "ov-input ov-batch", placeholder: "examples", "aria-label": "Batch size", "data-testid": "ov-batch-size", title: "Examples per step, for examples/s" });
  private readonly status = h("span", { class: "ov-hint", "data-testid": "ov-status", role: "status" });
  private readonly toolbar = h(
    "div",
    { class: "ov-toolbar" },
    h("label", {}, "Step marker ", this.stepInput, this.annotations),
    h("label", {}, "Batch size ", this.batchInput),
    this.status,
  );
  private readonly groupSelect = h(
    "select",
    { "aria-label": "Group host ops by", "data-testid": "ov-group-by" },
    h("option", { value: "name" }, "name"),
    h("option", { value: "shapes" }, "name + input shapes"),
  );
  private readonly body = h("div", { class: "ov-body" });
  private readonly hostOps: DataTable<OverviewOpRow>;
  private readonly kernels: DataTable<OverviewKernelRow>;
  private readonly hloOps: DataTable<OverviewHloRow>;
  private readonly options: LinkedOptions<OverviewOptions>;
  private readonly loads: Loads;
  private answer: OverviewAnswer | null = null;
  private frames: ChartFrame[] = [];

  constructor(private readonly ctx: ViewContext) {
    ensureStyle("ov-style", css + tableStyle("ov"));
    this.options = new LinkedOptions({ read: readOptions, same: sameOptions, params: optionParams }, ctx, (fromLink) => {
      if (fromLink) this.showOptions();
      void this.load();
    });
    this.loads = new Loads(ctx.signal);
    const openRow = (row: { search: string }) => this.openLink({ search: row.search });
    const linkTitle = (row: { search: string }) => `Find “${row.search}” in the Trace tab`;
    this.hostOps = new DataTable<OverviewOpRow>({
      title: "Host ops",
      what: "host ops",
      testId: "ov-host-ops",
      sort: { column: "total", descending: true },
      openTrace: openRow,
      linkTitle,
      controls: [h("label", { class: "ov-hint" }, "Group by ", this.groupSelect)],
    });
    this.kernels = new DataTable<OverviewKernelRow>({ title: "Device kernels", what: "kernels", testId: "ov-kernels", sort: { column: "total", descending: true }, openTrace: openRow, linkTitle });
    this.hloOps = new DataTable<OverviewHloRow>({ title: "HLO ops", what: "HLO ops", testId: "ov-hlo-ops", sort: { column: "self", descending: true }, openTrace: openRow, linkTitle });
    this.stepInput.addEventListener("change", () => this.options.set({ ...this.options.value, stepName: this.stepInput.value.trim() }));
    this.batchInput.addEventListener("change", () => this.batchChanged());
    this.groupSelect.addEventListener("change", () => this.options.set({ ...this.options.value, groupBy: this.groupSelect.value as GroupBy }));
    this.showOptions();
    this.el.append(this.toolbar, this.body);
  }

  /** Waits for the trace to be read (showing the progress), then asks for the overview. Hosts with
   * PyTorch/XLA logs only have no trace to wait for. */
  async start(): Promise<void> {
    const { client, subject, signal } = this.ctx;
    if (this.ctx.hosts.length && !this.ctx.hosts.some((host) => host.tools.includes("trace"))) {
      await this.load();
      return;
    }
    const waiting = ingestProgress("Reading the profile…");
    this.body.append(waiting.el);
    try {
      await client.waitForTraceMeta(subject, (p) => waiting.progress(p), signal);
    } catch (e) {
      // 404: no trace among the hosts (logs only, e.g. a mixed selection); the route answers from the logs.
      if (!(e instanceof ApiError && e.status === 404)) {
        if (!isAbort(e)) this.showError(messageOf(e));
        return;
      }
    }
    await this.load();
  }

  applyParams(params: URLSearchParams): void {
    this.options.fromLink(params);
  }

  destroy(): void {
    this.loads.abort();
    this.destroyCharts();
    this.hostOps.destroy();
    this.kernels.destroy();
    this.hloOps.destroy();
  }

  private showOptions(): void {
    const options = this.options.value;
    this.stepInput.value = options.stepName;
    this.batchInput.value = options.batchSize === null ? "" : String(options.batchSize);
    this.batchInput.removeAttribute("aria-invalid");
    this.groupSelect.value = options.groupBy;
  }

  private batchChanged(): void {
    const typed = this.batchInput.value.trim();
    const batchSize = parseBatchSize(typed);
    if (typed && batchSize === null) {
      this.batchInput.setAttribute("aria-invalid", "true");
      this.status.textContent = "The batch size is a whole number of examples per step, 1 or more.";
      return;
    }
    this.batchInput.removeAttribute("aria-invalid");
    this.options.set({ ...this.options.value, batchSize });
  }

  private async load(): Promise<void> {
    this.status.textContent = "Loading…";
    if (!this.answer) {
      clear(this.body);
      this.body.append(h("p", { class: "ps-loading" }, "Computing the overview…"));
    }
    await this.loads.run(
      (signal) => fetchOverview(this.ctx.client, this.ctx.subject, this.options.value, signal),
      (answer) => {
        this.render(answer);
        this.status.textContent = "";
      },
      (e) => {
        this.status.textContent = "";
        this.showError(messageOf(e));
      },
    );
  }

  private showError(message: string): void {
    this.answer = null;
    this.destroyCharts();
    clear(this.body);
    this.body.append(h("div", { class: "ps-error", role: "alert", "data-testid": "ov-error" }, `Could not compute the overview: ${message}`));
  }

  private destroyCharts(): void {
    for (const frame of this.frames) frame.destroy();
    this.frames = [];
  }

  private render(answer: OverviewAnswer): void {
    this.answer = answer;
    this.destroyCharts();
    clear(this.body);
    const multiHost = answer.hosts.length > 1;
    const events = { openLink: (link: OverviewLink) => void this.openLink(link) };
    this.fillAnnotations(answer);
    const noMarkers = answer.per_host.some((p) => p.steps.source_kind === "none");
    this.stepInput.classList.toggle("ov-attention", noMarkers);
    if (answer.warnings.length) this.body.append(h("ul", { class: "ov-warnings", "data-testid": "ov-warnings" }, ...answer.warnings.map((w) => h("li", {}, w))));
    const traced = new Set(answer.per_host.map((p) => p.host));
    this.body.append(findingsSection(answer.findings, multiHost, (host) => traced.has(host), events));
    if (!answer.per_host.length) return;
    const rankEvents = { ...events, loadCriticalPath: (step: number) => this.ctx.client.getJson<TraceCriticalPath>("trace/critical_path", this.ctx.subject, { step }) };
    if (multiHost) this.body.append(ranksSection(answer, rankEvents, csvFileName("collectives", this.ctx.subject.run, this.ctx.subject.session)));
    answer.per_host.forEach((host, i) => this.body.append(this.hostSection(host, answer, multiHost, i === 0)));
    this.body.append(this.tablesSection(answer));
  }

  private hostSection(host: OverviewHost, answer: OverviewAnswer, multiHost: boolean, open: boolean): HTMLElement {
    const events = {
      openLink: (link: OverviewLink) => void this.openLink(link),
      chooseStepName: (name: string) => this.options.set({ ...this.options.value, stepName: name }),
    };
    const steps = stepsSection(host, answer.categories, answer.batch_size, events);
    const phases = phasesSection(host, events);
    const devices = devicesSection(host);
    const memory = memoryPeakLine(host, () => this.ctx.navigate("memory", {}));
    this.frames.push(...steps.frames, ...phases.frames, ...devices.frames);
    const title = `${multiHost ? host.host : "Steps and devices"} · ${host.format.replace(/_/g, " ")}`;
    if (!multiHost) return h("section", { class: "ov-host", "data-testid": "ov-host", "data-host": host.host }, h("h2", {}, title), memory, steps.el, phases.el, devices.el);
    return h("details", { class: "ov-host", "data-testid": "ov-host", "data-host": host.host, open }, h("summary", {}, h("h2", {}, title)), memory, steps.el, phases.el, devices.el);
  }

  private tablesSection(answer: OverviewAnswer): HTMLElement {
    const t = answer.tables;
    const { run, session } = this.ctx.subject;
    const el = h("section", { class: "ov-tables", "data-testid": "ov-tables" }, h("h2", {}, `Ops and kernels (${t.scope})`));
    this.groupSelect.value = t.group_by;
    this.hostOps.setRows(hostOpColumns(t.group_by === "shapes"), t.host_ops, t.host_ops_total, csvFileName("host_ops", run, session));
    el.append(this.hostOps.el);
    if (t.kernels_reason && !t.kernels.length) {
      el.append(
        h(
          "section",
          { class: "ov-table-section", "data-testid": "ov-kernels" },
          h("h3", {}, "Device kernels"),
          h("p", {}, h("span", { class: "ov-absent", title: t.kernels_reason, "data-absent": "1", "data-testid": "ov-kernels-absent" }, NOT_OBSERVED), h("span", { class: "ov-hint" }, ` — ${t.kernels_reason}`)),
        ),
      );
    } else {
      this.kernels.setRows(kernelColumns(), t.kernels, t.kernels_total, csvFileName("kernels", run, session));
      el.append(this.kernels.el);
    }
    if (t.hlo_ops_total > 0) {
      this.hloOps.setRows(hloColumns(), t.hlo_ops, t.hlo_ops_total, csvFileName("hlo_ops", run, session));
      el.append(this.hloOps.el);
    }
    return el;
  }

  /** The host op names offered by the step-marker field (annotations are among them). */
  private fillAnnotations(answer: OverviewAnswer): void {
    const names = [...new Set(answer.tables.host_ops.map((r) => r.name))].sort((a, b) => a.localeCompare(b));
    this.annotations.replaceChildren(...names.map((n) => h("option", { value: n })));
  }

  /** Opens the events behind `link` in the Trace tab (links.ts): the events its search text names,
   * selected one by one, in its time range; else the range alone. */
  private async openLink(link: OverviewLink): Promise<void> {
    const range = rangeParams(link);
    const search = link.search;
    if (!search) {
      if (range) this.ctx.navigate("trace", range);
      return;
    }
    this.status.textContent = `Finding “${search}” in the trace…`;
    try {
      const found = await this.ctx.client.search(this.ctx.subject, search, EVIDENCE_LIMIT, 0, this.ctx.signal);
      const host = link.host === undefined ? -1 : (this.answer?.hosts.indexOf(link.host) ?? -1);
      const params = evidenceParams(link, evidenceMatches(link, found.matches, host >= 0 ? host : null));
      this.status.textContent = params || range ? "" : `No event in the trace matches “${search}”.`;
      const target = params ?? range;
      if (target) this.ctx.navigate("trace", target);
    } catch (e) {
      if (isAbort(e)) return;
      this.status.textContent = `Could not search the trace for “${search}”: ${messageOf(e)}`;
      // The events cannot be named, but their time range still can.
      if (range) this.ctx.navigate("trace", range);
    }
  }
}
