/** The Memory tab: for each allocator of the selected hosts its curves (allocated, reserved), the
 * steps, the peak with its step and op (a click opens the Trace tab around it), and the tables: steps,
 * blocks live at the peak, ops, the largest allocations with their frees, and the blocks never freed;
 * for an XPlane allocator also its own figures and fragmentation curve (`allocator.ts`) and, where its
 * events name their step, XProf's breakdown of the peak's step (its blocks live at the peak).
 * Then, for a profile whose XLA programs carry a buffer assignment, the compiler's view of the program
 * and memory space picked in the selectors (`program.ts`, its allocation timeline `timeline.ts`),
 * kept in the deep link (`program`,
 * `program_host`, `memory_space`). A profile with neither shows why there is nothing, and nothing
 * else. */

import { clear, h, isAbort, messageOf } from "../../dom.ts";
import type { DrawnChart } from "../../shared/charts.ts";
import { ingestProgress } from "../../shared/progress.ts";
import { ensureStyle } from "../../shared/style.ts";
import { csvFileName, type SortableTable, tableStyle } from "../../shared/table.ts";
import { formatBytes, formatCount, formatDuration, NOT_OBSERVED } from "../../shared/units.ts";
import type { ViewContext } from "../view.ts";
import { allocatorCards, FRAGMENTATION_COLOR, fragmentationChart } from "./allocator.ts";
import { choiceParams, MemoryApi, type MemoryAnswer, type MemoryDevice, type MemoryPeakStepRow, type ProgramChoice, peakTraceParams, type ProgramMemory, type ProgramSummary, readChoice } from "./api.ts";
import { ALLOCATED_COLOR, memoryChart, PEAK_COLOR, type Point, RESERVED_COLOR } from "./chart.ts";
import css from "./memory.css";
import { BUFFER_COLUMNS, bufferRow, heapChart, instructionButton, kindText, memorySpaceSelector, padText, programPeakText, programSelector } from "./program.ts";
import { allocationColumns, described, liveColumns, memoryTable, OP_COLUMNS, PEAK_STEP_COLUMNS, peakStepText, STEP_COLUMNS } from "./tables.ts";
import { NO_TIMELINE, timelineChart, timelineText } from "./timeline.ts";

/** "12 of 81 allocations (the largest)". */
export function listing(shown: number, total: number, what: string): string {
  return shown < total ? `the ${formatCount(shown)} largest of ${formatCount(total)} ${what}` : `${formatCount(total)} ${what}`;
}

/** What is live at the peak, and what the allocations in the capture do not explain. */
export function liveText(device: MemoryDevice): string {
  const live = `${formatBytes(device.live_at_peak_bytes)} in ${formatCount(device.live_at_peak_count)} blocks allocated in the capture`;
  if (device.before_capture_bytes === 0) return `${live}: all of the peak.`;
  return `${live}; the other ${formatBytes(device.before_capture_bytes)} of the peak were allocated before the capture started.`;
}

function card(title: string, value: string, detail?: string, testId?: string): HTMLElement {
  return h(
    "div",
    { class: "mem-card", "data-testid": testId },
    h("span", { class: "mem-card-title" }, title),
    h("span", { class: "mem-card-value" }, value),
    detail ? h("span", { class: "mem-card-detail" }, detail) : null,
  );
}

function legendItem(color: string, label: string, extra = ""): HTMLElement {
  const swatch = h("span", { class: `mem-swatch ${extra}`.trim() });
  swatch.style.setProperty("--c", color);
  return h("li", {}, swatch, label);
}

export class MemoryView {
  readonly el = h("div", { class: "mem", "data-testid": "memory-view" });
  private readonly body = h("div", { class: "mem-body" });
  private readonly api: MemoryApi;
  private charts: DrawnChart<"scatter", Point[], unknown>[] = [];
  private tables: { destroy(): void }[] = [];
  private programSlot = h("div", { "data-testid": "mem-programs" });
  private programParts: { destroy(): void }[] = [];
  private picking: AbortController | null = null;
  private programs: ProgramSummary[] = [];
  private shown: ProgramMemory | null = null;

  constructor(private readonly ctx: ViewContext) {
    ensureStyle("mem-style", css + tableStyle("mem"));
    this.api = new MemoryApi(ctx.client);
    this.el.append(this.body);
  }

  /** Waits for the trace to be read (showing the progress), then asks for the memory answer. */
  async start(): Promise<void> {
    const { client, subject, signal } = this.ctx;
    const waiting = ingestProgress("Reading the profile…");
    this.body.append(waiting.el);
    try {
      await client.waitForTraceMeta(subject, (p) => waiting.progress(p), signal);
      clear(this.body);
      this.body.append(h("p", { class: "ps-loading" }, "Reading the allocator's events…"));
      this.render(await this.firstAnswer());
    } catch (e) {
      if (isAbort(e)) return;
      clear(this.body);
      this.body.append(h("div", { class: "ps-error", role: "alert", "data-testid": "mem-error" }, `Could not read the memory profile: ${messageOf(e)}`));
    }
  }

  /** The answer for the program the deep link names; when that program is gone (a link from another
   * capture), the default one, the link's keys dropped. */
  private async firstAnswer(): Promise<MemoryAnswer> {
    const { subject, signal } = this.ctx;
    const choice = readChoice(this.ctx.params);
    if (!choice) return this.api.answer(subject, signal);
    try {
      return await this.api.answer(subject, signal, choice);
    } catch (e) {
      if (isAbort(e)) throw e;
      this.ctx.setParams(choiceParams(null));
      return this.api.answer(subject, signal);
    }
  }

  /** The deep link changed under the open view: show the program and memory space it names. */
  update(params: URLSearchParams): void {
    const choice = readChoice(params);
    if (!choice || !this.programs.length || !this.shown) return;
    const same = choice.id === this.shown.program_id && choice.host === this.shown.host_index && (choice.memorySpace ?? 0) === this.shown.memory_space;
    if (!same) void this.pick(choice);
  }

  destroy(): void {
    for (const chart of this.charts) chart.destroy();
    for (const table of this.tables) table.destroy();
    for (const part of this.programParts) part.destroy();
    this.picking?.abort();
  }

  render(answer: MemoryAnswer): void {
    this.destroy();
    this.charts = [];
    this.tables = [];
    clear(this.body);
    if (answer.warnings.length) this.body.append(h("ul", { class: "mem-warnings", "data-testid": "mem-warnings" }, ...answer.warnings.map((w) => h("li", {}, w))));
    if (!answer.observed) this.body.append(h("div", { class: "mem-not-observed", "data-testid": "mem-not-observed" }, answer.reason ?? `memory ${NOT_OBSERVED}`));
    if (answer.step_source) this.body.append(h("p", { class: "mem-hint", "data-testid": "mem-step-source" }, `Steps: ${answer.step_source}`));
    for (const device of answer.devices) this.body.append(this.deviceSection(device));
    if (answer.programs_reason) this.body.append(h("p", { class: "mem-hint", "data-testid": "mem-programs-reason" }, answer.programs_reason));
    this.programs = answer.programs;
    if (answer.program && answer.programs.length) {
      this.programSlot = h("div", { "data-testid": "mem-programs" });
      this.body.append(this.programSlot);
      this.showProgram(answer.program);
    }
  }

  /** Asks for another program's view (or memory space) and shows it in place of the current one; the
   * choice goes into the deep link. */
  private async pick(choice: ProgramChoice): Promise<void> {
    this.picking?.abort();
    const picking = (this.picking = new AbortController());
    const signal = AbortSignal.any([picking.signal, this.ctx.signal]);
    this.ctx.setParams(choiceParams(choice));
    try {
      const answer = await this.api.answer(this.ctx.subject, signal, choice);
      if (answer.program) this.showProgram(answer.program);
    } catch (e) {
      if (isAbort(e)) return;
      this.programSlot.append(h("div", { class: "ps-error", role: "alert", "data-testid": "mem-program-error" }, `Could not read the program: ${messageOf(e)}`));
    }
  }

  private showProgram(program: ProgramMemory): void {
    for (const part of this.programParts) part.destroy();
    this.programParts = [];
    this.shown = program;
    clear(this.programSlot);
    this.programSlot.append(this.programSection(this.programs, program));
  }

  private programSection(programs: ProgramSummary[], program: ProgramMemory): HTMLElement {
    const openTrace = (params: Record<string, string>) => this.ctx.navigate("trace", params);
    const peakLink = instructionButton(program, program.peak_instruction, openTrace, "mem-program-peak-link");
    const cards = h(
      "div",
      { class: "mem-cards", "data-testid": "mem-program-peak" },
      card("Peak heap", formatBytes(program.peak_bytes), programPeakText(program), "mem-program-peak-bytes"),
      card("Whole program", formatBytes(program.whole_program_bytes), "parameters, outputs and constants, held for the whole run", "mem-program-whole"),
      card("Temporaries at peak", program.heap.events ? formatBytes(program.temporary_peak_bytes) : NOT_OBSERVED, program.heap_reason, "mem-program-temporary"),
      card("Padding at peak", formatBytes(program.padding_bytes), padText(program), "mem-program-padding"),
      card("By kind", kindText(program), `${formatCount(program.allocations)} allocations, ${formatBytes(program.allocation_bytes)}`, "mem-program-kinds"),
    );
    const chart = program.heap.events ? heapChart(program) : null; // no heap simulation: nothing over program order
    if (chart) this.programParts.push(chart.chart);
    let rows: HTMLElement | null = null;
    const lightRow = (box: number) => {
      for (const tr of rows?.querySelectorAll<HTMLElement>("tr.mem-row-lit") ?? []) tr.classList.remove("mem-row-lit");
      if (box >= 0) rows?.querySelector(`tr[data-box="${box}"]`)?.classList.add("mem-row-lit");
    };
    const timeline = program.timeline ? timelineChart(program, program.timeline, lightRow) : null;
    if (timeline) this.programParts.push(timeline.chart);
    const pickBox = (box: number) => {
      timeline?.select(box);
      timeline?.el.scrollIntoView?.({ block: "nearest" });
    };
    const table = memoryTable<ProgramMemory["live_at_peak"][number]>("mem-program-live", "size", true, bufferRow(program, openTrace, timeline ? pickBox : undefined));
    this.programParts.push(table);
    const { run, session } = this.ctx.subject;
    const caption = `${listing(program.live_at_peak.length, program.live_at_peak_count, "buffers")} live at the peak: ${formatBytes(program.live_at_peak_bytes)}`;
    table.setRows(BUFFER_COLUMNS, program.live_at_peak, caption, csvFileName("memory_program_buffers", run, session, program.name), "no buffer is live at the peak");
    rows = table.section("Buffers live at the peak");
    const here = { id: program.program_id, host: program.host_index };
    const pickers = h(
      "div",
      { class: "mem-program-picks" },
      programSelector(programs, program, (p) => void this.pick({ id: p.program_id, host: p.host_index })),
      memorySpaceSelector(program, (space) => void this.pick({ ...here, memorySpace: space })),
    );
    const peakAt = peakLink
      ? h("p", { class: "mem-hint", "data-testid": "mem-program-peak-at" }, "The peak's instruction ", peakLink, " in the Trace tab, with its HLO graph.")
      : null;
    return h(
      "section",
      { class: "mem-device mem-program", "data-testid": "mem-program", "data-program": program.name, "data-memory-space": String(program.memory_space) },
      h("h2", {}, `XLA program ${program.name}: the compiler's buffer assignment${program.memory_spaces.length > 1 ? ` in memory space ${program.memory_space}` : ""}`),
      pickers,
      cards,
      peakAt,
      chart?.el ?? null,
      ...this.timelineParts(program, timeline?.el ?? null),
      rows,
    );
  }

  /** The allocation timeline under its heading, or why there is none. */
  private timelineParts(program: ProgramMemory, drawn: HTMLElement | null): (HTMLElement | null)[] {
    if (!program.heap.events) return [];
    const title = h("h3", { class: "mem-subtitle" }, "Allocation timeline");
    if (!program.timeline || !drawn) return [title, h("p", { class: "mem-hint", "data-testid": "mem-timeline-none" }, NO_TIMELINE)];
    return [title, h("p", { class: "mem-hint", "data-testid": "mem-timeline-text" }, `${timelineText(program.timeline)}: each box one buffer, across the heap events it is held, at its offset.`), drawn];
  }

  private deviceSection(device: MemoryDevice): HTMLElement {
    const { peak } = device;
    const open = () => this.ctx.navigate("trace", peakTraceParams(peak));
    const link = h("button", { type: "button", class: "ps-button mem-peak-link", "data-testid": "mem-peak-trace" }, "Show the peak in the Trace tab");
    link.addEventListener("click", open);
    const reserved = peak.reserved_bytes === undefined ? card("Reserved at peak", NOT_OBSERVED, device.reserved_reason) : card("Reserved at peak", formatBytes(peak.reserved_bytes));
    const cards = h(
      "div",
      { class: "mem-cards", "data-testid": "mem-peak" },
      card("Peak allocated", formatBytes(peak.allocated_bytes), `at ${formatDuration(peak.time_ns)}`, "mem-peak-bytes"),
      card("Step", peak.step ?? "outside every step", undefined, "mem-peak-step"),
      card("Op", peak.op ?? "no enclosing host op", peak.op_path.length > 1 ? peak.op_path.join(" › ") : undefined, "mem-peak-op"),
      reserved,
      card("Never freed", formatBytes(device.never_freed_bytes), `${formatCount(device.never_freed_count)} of ${formatCount(device.allocations_count)} allocations`, "mem-never-freed"),
    );
    const own = allocatorCards(device);
    const ownCards = own.length ? h("div", { class: "mem-cards", "data-testid": "mem-allocator" }, ...own.map((c) => card(c.title, c.value, c.detail, c.testId))) : null;
    const chart = memoryChart(device, open);
    this.charts.push(chart.chart);
    const fragmentation = fragmentationChart(device);
    if (fragmentation) this.charts.push(fragmentation.chart);
    const legend = h(
      "ul",
      { class: "mem-legend", "data-testid": "mem-legend" },
      legendItem(ALLOCATED_COLOR, "allocated"),
      device.reserved ? legendItem(RESERVED_COLOR, "reserved") : h("li", {}, `reserved: ${NOT_OBSERVED}`),
      legendItem(PEAK_COLOR, "peak (click: show in the Trace tab)", "mem-triangle"),
      device.steps.length ? legendItem("#80868b", "step boundaries", "mem-dashed") : h("li", {}, `steps: ${NOT_OBSERVED}`),
    );
    const notes = device.notes.length ? h("ul", { class: "mem-notes", "data-testid": "mem-notes" }, ...device.notes.map((n) => h("li", {}, n))) : null;
    const { run, session } = this.ctx.subject;
    const name = (what: string) => csvFileName(`memory_${what}`, run, session, device.label);
    const steps = this.table("mem-steps", "step", false);
    steps.setRows(STEP_COLUMNS, device.steps, `${formatCount(device.steps.length)} steps`, name("steps"), `steps: ${NOT_OBSERVED}`);
    const live = this.table("mem-live", "bytes");
    live.setRows(liveColumns(described(device.live_at_peak)), device.live_at_peak, liveText(device), name("live_at_peak"), "no block of the capture is live at the peak");
    const peakStep = device.peak_step ? this.table<MemoryPeakStepRow>("mem-step-blocks", "size") : null;
    if (device.peak_step && peakStep) {
      const caption = `${peakStepText(device.peak_step)}${device.peak_step.rows.reduce((n, r) => n + r.count, 0) < device.peak_step.count ? `; the ${formatCount(device.peak_step.rows.length)} largest rows listed` : ""}`;
      peakStep.setRows(PEAK_STEP_COLUMNS, device.peak_step.rows, caption, name("peak_step"), "no block of the peak's step is live at the peak");
    }
    const stepReason = device.peak_step_reason ? h("p", { class: "mem-hint", "data-testid": "mem-peak-step-reason" }, `The peak's step as XProf breaks it down: ${NOT_OBSERVED}; ${device.peak_step_reason}.`) : null;
    const ops = this.table("mem-ops", "allocated");
    ops.setRows(OP_COLUMNS, device.ops, `${formatCount(device.ops.length)} ops`, name("ops"), null);
    const allocations = this.table("mem-allocations", "size");
    allocations.setRows(allocationColumns(true, described(device.allocations)), device.allocations, listing(device.allocations.length, device.allocations_count, "allocations"), name("allocations"), null);
    const never = this.table("mem-never", "size");
    never.setRows(allocationColumns(false, described(device.never_freed)), device.never_freed, `${listing(device.never_freed.length, device.never_freed_count, "blocks")} not freed in the capture`, name("never_freed"), "every allocation of the capture is freed in it");
    const orphans = device.freed_before_capture_count
      ? h("p", { class: "mem-hint" }, `${formatCount(device.freed_before_capture_count)} frees (${formatBytes(device.freed_before_capture_bytes)}) release blocks allocated before the capture.`)
      : null;
    return h(
      "section",
      { class: "mem-device", "data-testid": "mem-device", "data-device": device.label },
      h("h2", {}, `${device.label}: ${formatCount(device.events)} allocator events over ${formatDuration(device.end_ns - device.start_ns)}`),
      cards,
      ownCards,
      link,
      chart.el,
      legend,
      fragmentation?.el ?? null,
      fragmentation ? h("ul", { class: "mem-legend" }, legendItem(FRAGMENTATION_COLOR, "fragmentation (1 − largest free chunk ÷ free bytes), after each allocator event")) : null,
      notes,
      steps.section("Steps"),
      live.section("Live at the peak"),
      peakStep?.section("The peak's step: its blocks live at the peak (XProf's breakdown)") ?? stepReason,
      ops.section("Allocating ops"),
      allocations.section("Allocations and their frees"),
      never.section("Never freed in the capture"),
      orphans,
    );
  }

  private table<R>(testId: string, sort: string, descending = true): SortableTable<R> {
    const table = memoryTable<R>(testId, sort, descending);
    this.tables.push(table);
    return table;
  }
}
