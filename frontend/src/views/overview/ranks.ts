/** Several hosts (ranks) side by side: each rank's steady step time, device busy share and overlap;
 * then who waits for whom in the collectives (`OverviewRanks`, analysis/collectives.py): the
 * straggler line, a rank × step heatmap of each rank's wait, the critical path of the steady step the
 * others waited longest in (`trace/critical_path`, analysis/rank_path.py: each rank's step time by
 * cause, waiting for another rank included, and the ranks its path runs through), and the matched
 * collectives in a sortable table with a CSV download. Every step cell and collective row opens its
 * time range in the merged Trace view (all hosts). */

import type { OverviewAnswer, OverviewHost, OverviewLink, OverviewRankCollective, OverviewRanks, OverviewRankStep, TraceCriticalPath } from "../../api/answers.gen.ts";
import { h } from "../../dom.ts";
import { type Column, SortableTable } from "../../shared/table.ts";
import { formatByteRate, formatBytes, formatCount, formatDuration, formatPercent } from "../../shared/units.ts";
import { absent, type Cell, cellElement, count, duration, measured, percent, text } from "./cells.ts";
import { overlapReason } from "./devices.ts";

export interface RankEvents {
  openLink(link: OverviewLink): void;
  /** The critical path of step `step` on every rank (`trace/critical_path`); absent: not shown. */
  loadCriticalPath?(step: number): Promise<TraceCriticalPath>;
}

/** The causes of a critical path's breakdown, in the order the table lists them. */
const PATH_CAUSES: readonly (readonly [string, string])[] = [
  ["cpu", "CPU"],
  ["launch", "Launch"],
  ["compute", "Device compute"],
  ["communication", "Communication"],
  ["kernel_gap", "Kernel gaps"],
  ["rank_wait", "Waiting for another rank"],
  ["data_loading", "Data loading"],
  ["idle", "Idle"],
];
/** Event ids of a merged timeline: host index × 2^32 + the event's index in its host. */
const HOST_ID_BASE = 2 ** 32;

/** Per-rank wait columns are listed up to this many ranks (the heatmap shows every rank). */
export const MAX_RANK_COLUMNS = 8;

/** The share of the host's device windows its devices were busy (all devices together). */
export function deviceBusy(host: OverviewHost): Cell {
  const d = host.devices;
  if (!d.observed) return absent(d.reason ?? "device activity not observed");
  const window = d.devices.reduce((n, x) => n + x.window_ns, 0);
  const busy = d.devices.reduce((n, x) => n + x.busy_ns, 0);
  return percent(window > 0 ? busy / window : undefined, "no device window in the scope");
}

/** "rank2 is the rank the others wait for in 6 of 6 steady steps (…)", or why no rank is named. */
export function stragglerLine(ranks: OverviewRanks): string {
  const steady = ranks.steps.filter((s) => s.steady && s.collectives > 0);
  if (!steady.length) return "No steady step holds a collective matched on several ranks: no rank to name.";
  const times = new Map<string, OverviewRankStep[]>();
  for (const s of steady) if (s.straggler) times.set(s.straggler, [...(times.get(s.straggler) ?? []), s]);
  const [name, mine] = [...times.entries()].sort((a, b) => b[1].length - a[1].length)[0] ?? ["", []];
  if (!name) return `No rank is waited for in the ${steady.length} steady steps with collectives.`;
  const waited = mine.reduce((n, s) => n + s.waited_for_ns, 0) / steady.length;
  const doing = mostCommon(mine.map((s) => s.doing).filter((d): d is string => Boolean(d)));
  const meanwhile = doing ? `; meanwhile it is in ${doing}` : "";
  return `${name} is the rank the others wait for most in ${mine.length} of ${steady.length} steady steps (their wait for it: ${formatDuration(waited)} per step${meanwhile}).`;
}

/** The steady step with collectives whose critical path the section shows: the one the others waited longest in. */
export function pathStep(ranks: OverviewRanks): OverviewRankStep | undefined {
  const steady = ranks.steps.filter((s) => s.steady && s.collectives > 0);
  return [...steady].sort((a, b) => b.waited_for_ns - a.waited_for_ns)[0];
}

/** Rank × cause: each rank's step time along its critical path (a cause no rank has is left out),
 * and the ranks its path runs through (from its events' ids). */
export function criticalPathTable(answer: TraceCriticalPath): HTMLElement {
  const causes = PATH_CAUSES.filter(([c]) => answer.hosts.some((host) => (host.by_cause_ns[c] ?? 0) > 0));
  const head = h("tr", {}, h("th", {}, "Rank"), h("th", { class: "num" }, "Step time"), ...causes.map(([, label]) => h("th", { class: "num" }, label)), h("th", {}, "Path through"));
  const rows = answer.hosts.map((host) => {
    const window = host.end_ns - host.start_ns;
    const through = [...new Set(host.events.map((e) => Math.floor(e.id / HOST_ID_BASE)))].map((i) => answer.hosts[i]?.host ?? `host ${i}`);
    return h(
      "tr",
      { "data-testid": "ov-rank-path-row", "data-host": host.host },
      h("td", {}, host.host),
      cellElement(duration(window, ""), true),
      ...causes.map(([c]) => {
        const ns = host.by_cause_ns[c];
        if (ns === undefined) return cellElement(absent(`not modelled on ${host.host}'s path (no collective joins it to the others)`), true);
        return h("td", { class: "num", "data-cause": c }, `${formatDuration(ns)} (${formatPercent(window > 0 ? ns / window : 0, 2)})`);
      }),
      h("td", {}, through.join(" → ") || "no event"),
    );
  });
  return h("table", { class: "ov-table ov-compact", "data-testid": "ov-rank-path" }, h("thead", {}, head), h("tbody", {}, ...rows));
}

/** The critical path of `pathStep` across the ranks, asked for when the section is drawn. */
function criticalPathPart(ranks: OverviewRanks, events: RankEvents): HTMLElement[] {
  const step = pathStep(ranks);
  if (!events.loadCriticalPath || !step) return [];
  const body = h("div", { class: "ov-table-scroll ov-fit", "data-testid": "ov-rank-path-body" }, h("p", { class: "ov-hint" }, "Computing the critical path…"));
  events.loadCriticalPath(step.step).then(
    (answer) => body.replaceChildren(criticalPathTable(answer)),
    (error: unknown) => body.replaceChildren(h("p", { class: "ov-hint" }, `The critical path could not be computed: ${(error as Error).message}`)),
  );
  const open = h("button", { type: "button", class: "ov-link", "data-testid": "ov-open-trace", title: `Show step ${step.step} of every rank in the Trace tab (turn on "Critical path" there to see the path)` }, "events");
  open.addEventListener("click", () => events.openLink(rangeLink(step)));
  return [
    h("h3", {}, `Critical path of step ${step.step}`, " ", open),
    h("p", { class: "ov-hint" }, "The steady step the others waited longest in. Each rank's step time along its critical path, which crosses into the last arriver's chain at a collective: the time it sat in the collective meanwhile is waiting for another rank."),
    body,
  ];
}

function mostCommon(values: readonly string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
}

/** The link of a step cell or a collective row: its time range on the merged timeline. */
export function rangeLink(row: { start_ns: number; end_ns: number }): OverviewLink {
  return { start_ns: row.start_ns, end_ns: row.end_ns };
}

/** A heat colour for `wait` out of `max` (white → red), as a CSS background. */
export function heatColour(wait: number, max: number): string {
  const alpha = max > 0 ? Math.min(1, wait / max) : 0;
  return `background: rgba(214, 39, 40, ${(0.85 * alpha).toFixed(3)})`;
}

/** Rank × step: each rank's summed wait in the step's collectives; the straggler's cell is marked. */
export function heatmap(ranks: OverviewRanks, events: RankEvents): HTMLElement {
  const steps = ranks.steps.filter((s) => s.collectives > 0);
  const max = Math.max(0, ...steps.flatMap((s) => s.wait_ns.map((w) => w ?? 0)));
  const head = h("tr", {}, h("th", {}, "Rank \\ step"), ...steps.map((s) => h("th", { class: "num", title: s.steady ? "steady step" : "warm-up step" }, `${s.step}${s.steady ? "" : " (warm-up)"}`)));
  const rows = ranks.hosts.map((host, r) =>
    h(
      "tr",
      { "data-host": host },
      h("th", {}, host),
      ...steps.map((s) => {
        const wait = s.wait_ns[r];
        if (wait === null || wait === undefined) return h("td", { class: "num ov-absent", title: `${host} has no step ${s.step}` }, "—");
        const last = s.straggler === host;
        const title = `${host}, step ${s.step}: waited ${formatDuration(wait)} in ${s.collectives} collective(s)${last ? `; the others waited ${formatDuration(s.waited_for_ns)} for it${s.doing ? ` (it was in ${s.doing})` : ""}` : ""}`;
        const cell = h("td", { class: "num", style: heatColour(wait, max), title, "data-step": s.step, "data-straggler": last ? "1" : undefined }, last ? `${formatDuration(wait)} ◆` : formatDuration(wait));
        const open = h("button", { type: "button", class: "ov-link", "data-testid": "ov-open-trace", title: `Show step ${s.step} of every rank in the Trace tab` }, "events");
        open.addEventListener("click", () => events.openLink(rangeLink(s)));
        cell.append(" ", open);
        return cell;
      }),
    ),
  );
  return h("table", { class: "ov-table ov-compact", "data-testid": "ov-rank-heatmap" }, h("thead", {}, head), h("tbody", {}, ...rows));
}

function waitColumn(host: string, r: number): Column<OverviewRankCollective> {
  return { id: `wait_${r}`, title: `Wait ${host}`, csvTitle: `Wait ${host} (ns)`, numeric: true, help: `${host}'s wait: last arrival − its arrival, at most its time in the collective`, cell: (row) => duration(row.wait_ns[r], `${host} has no part in this instance`) };
}

const NO_SIZE = "the trace records no message size for this collective";
const NO_TRANSFER = "no message size, or no transfer time after the last arrival";

/** The collective table's columns; a wait column per rank up to `MAX_RANK_COLUMNS` ranks. */
export function collectiveColumns(hosts: readonly string[]): Column<OverviewRankCollective>[] {
  const maxWait = (row: OverviewRankCollective) => Math.max(0, ...row.wait_ns.map((w) => w ?? 0));
  return [
    { id: "name", title: "Collective", csvTitle: "Collective", numeric: false, cell: (row) => text(row.name, `${row.kind}, ${row.matched_by}`) },
    { id: "step", title: "Step", csvTitle: "Step", numeric: true, cell: (row) => measured(row.step, String, "the instance falls in no step") },
    { id: "kind", title: "Kind", csvTitle: "Kind", numeric: false, cell: (row) => text(row.kind) },
    { id: "bytes", title: "Size", csvTitle: "Size (B)", numeric: true, help: "max(input, output) elements × element size", cell: (row) => measured(row.bytes, (v) => formatBytes(v), NO_SIZE) },
    { id: "last", title: "Last arriver", csvTitle: "Last arriver", numeric: false, cell: (row) => text(row.last) },
    { id: "max_wait", title: "Max wait", csvTitle: "Max wait (ns)", numeric: true, firstDescending: true, help: "The longest wait of a rank for the last arriver", cell: (row) => duration(maxWait(row), "") },
    ...(hosts.length <= MAX_RANK_COLUMNS ? hosts.map(waitColumn) : []),
    { id: "transfer", title: "Transfer", csvTitle: "Transfer (ns)", numeric: true, help: "Last arrival → the last rank done", cell: (row) => duration(row.transfer_ns, "") },
    { id: "algbw", title: "Alg. bandwidth", csvTitle: "Algorithm bandwidth (B/s)", numeric: true, help: "size ÷ transfer time", cell: (row) => measured(row.algbw, (v) => formatByteRate(v), NO_TRANSFER) },
    { id: "busbw", title: "Bus bandwidth", csvTitle: "Bus bandwidth (B/s)", numeric: true, help: "algorithm bandwidth × 2(n−1)/n (all-reduce), (n−1)/n (all-gather, reduce-scatter, all-to-all), 1 (broadcast, reduce): nccl-tests", cell: (row) => measured(row.busbw, (v) => formatByteRate(v), NO_TRANSFER) },
    { id: "matched_by", title: "Matched by", csvTitle: "Matched by", numeric: false, cell: (row) => text(row.matched_by) },
  ];
}

function collectiveRow(row: OverviewRankCollective, columns: readonly Column<OverviewRankCollective>[], events: RankEvents): HTMLTableRowElement {
  const tr = h("tr", { "data-testid": "ov-collectives-row" });
  columns.forEach((column, i) => {
    const cell = column.cell(row);
    const td = cellElement(cell, column.numeric);
    if (i === 0) {
      const open = h("button", { type: "button", class: "ov-link", "data-testid": "ov-open-trace", title: "Show this collective on every rank in the Trace tab" }, "events");
      open.addEventListener("click", () => events.openLink(rangeLink(row)));
      td.append(" ", open);
    }
    tr.append(td);
  });
  return tr;
}

/** The collectives table: sortable, with a CSV download named `fileName`. */
export function collectivesTable(ranks: OverviewRanks, events: RankEvents, fileName: string): HTMLElement {
  const columns = collectiveColumns(ranks.hosts);
  const table = new SortableTable<OverviewRankCollective>({ prefix: "ov", testId: "ov-collectives", csvTestId: "ov-collectives-csv", sort: { column: "max_wait", descending: true }, row: (row, cols) => collectiveRow(row, cols, events) });
  const shown = ranks.collectives.length;
  const listing = shown < ranks.collectives_total ? `showing the first ${formatCount(shown)} of ${formatCount(ranks.collectives_total)} matched collectives (by arrival)` : `${formatCount(shown)} matched collectives`;
  table.setRows(columns, [...ranks.collectives], listing, fileName, "No collective was matched across the ranks.");
  return table.section("Collectives");
}

function ranksTable(hosts: readonly OverviewHost[]): HTMLElement {
  const head = h(
    "tr",
    {},
    h("th", {}, "Rank"),
    h("th", { class: "num" }, "Steady steps"),
    h("th", { class: "num" }, "Median step"),
    h("th", { class: "num" }, "Max step"),
    h("th", { class: "num", title: "Busy ÷ window, over the host's devices" }, "Device busy"),
    h("th", { class: "num", title: "Computing while communicating ÷ communicating" }, "Overlap"),
  );
  const rows = hosts.map((host) => {
    const stats = host.steps.stats;
    const noSteps = host.steps.message ?? "no steady steps";
    return h(
      "tr",
      { "data-host": host.host },
      h("td", {}, host.host),
      cellElement(stats ? count(stats.count, noSteps) : absent(noSteps), true),
      cellElement(duration(stats?.median_ns, noSteps), true),
      cellElement(duration(stats?.max_ns, noSteps), true),
      cellElement(deviceBusy(host), true),
      cellElement(host.overlap ? percent(host.overlap.fraction, "") : absent(overlapReason(host.devices)), true),
    );
  });
  return h("table", { class: "ov-table ov-compact", "data-testid": "ov-ranks-table" }, h("thead", {}, head), h("tbody", {}, ...rows));
}

/** Who waits for whom: the straggler line, the heatmap, the collectives table and what was not matched. */
function waitsPart(ranks: OverviewRanks, events: RankEvents, fileName: string): HTMLElement[] {
  const out: HTMLElement[] = [h("h3", {}, "Who waits for whom"), h("p", { "data-testid": "ov-straggler-line" }, stragglerLine(ranks)), h("p", { class: "ov-hint", "data-testid": "ov-rank-records" }, `Read from ${ranks.records}.`)];
  if (ranks.unmatched) out.push(h("p", { class: "ov-hint", "data-testid": "ov-rank-unmatched" }, `Not matched: ${ranks.unmatched}`));
  if (ranks.steps.some((s) => s.collectives > 0)) {
    out.push(h("p", { class: "ov-hint" }, "Each rank's wait in the step's collectives (last arrival − its arrival); ◆ marks the rank the others waited for."));
    out.push(h("div", { class: "ov-table-scroll ov-fit" }, heatmap(ranks, events)));
  }
  out.push(...criticalPathPart(ranks, events));
  out.push(collectivesTable(ranks, events, fileName));
  return out;
}

export function ranksSection(answer: OverviewAnswer, events: RankEvents, fileName: string): HTMLElement {
  const el = h("section", { class: "ov-ranks", "data-testid": "ov-ranks" }, h("h2", {}, `Ranks (${answer.hosts.length} hosts)`));
  el.append(h("div", { class: "ov-table-scroll ov-fit" }, ranksTable(answer.per_host)));
  if (answer.ranks) el.append(...waitsPart(answer.ranks, events, fileName));
  return el;
}
