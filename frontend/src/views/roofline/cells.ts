/** The columns of the program and op tables: what each cell shows, how it sorts, what the CSV holds.
 * A figure the answer leaves out reads "not observed" (with the row's reason as tooltip), never 0; a
 * figure computed from costs estimated from shapes is marked as such; a percentage of a peak nobody
 * knows reads "peak unknown". Numbers are shown in SI units (shared/units.ts) and written to the CSV
 * as plain numbers in the unit its header names. */

import type { AbsentCell, NumberCell, Column as TableColumn, TextCell } from "../../shared/table.ts";
import {
  formatByteRate,
  formatCount,
  formatDuration,
  formatFlopRate,
  formatFlops,
  formatPercent,
  NOT_OBSERVED,
} from "../../shared/units.ts";
import type { RooflineAnswer, RooflineDevice, RooflineFigures, RooflineOpRow, RooflineProgramRow } from "./api.ts";

/** The `source` of a row whose FLOPs and bytes were computed from the recorded shapes. */
export const ESTIMATED = "estimated from shapes";
/** The `source` of a GPU XPlane op costed by our HLO cost model over the profile's HLO module. */
export const HLO_COST_MODEL = "HLO cost model (profscope)";
/** The `source` of an op XLA's cost model does not price (fused attention), modelled from its shapes. */
export const MODELLED = "modelled from shapes (profscope)";
/** Sources that mean the costs are known; any other source is the reason they are not. */
const MEASURED_SOURCES = new Set(["profile", ESTIMATED, HLO_COST_MODEL, MODELLED]);
export const PEAK_UNKNOWN = "peak unknown";
export const PEAK_NOT_KNOWN = "peak not known";
export const ABOVE_ROOF = "above the roof";

/** What a program row and an op row have in common: the figures and where their costs come from. */
export interface FigureRow {
  figures: RooflineFigures;
  source: string;
  bytes_by_level: Record<string, number>;
  note?: string;
}

/** A cell (shared/table.ts); a number also says whether it was estimated from shapes and, above the
 * roof, why it is not a rate. */
export type Cell = (NumberCell & { estimated: boolean; anomaly?: string }) | TextCell | AbsentCell;

export type Column<R> = TableColumn<R, Cell>;

/** One compute roof the ops run at: a precision ("bf16", "fp32", …) and its peak, null when the
 * device's peak of that precision is not known. */
export interface ComputeRoof {
  precision: string;
  peak: number | null;
}

/** The device and the memory levels the tables and the chart show. */
export interface RooflineContext {
  device: RooflineDevice | null;
  /** Memory levels with traffic in some row, in the device's order. */
  levels: string[];
  /** The compute roof (FLOP/s), null when the device's compute peak is unknown. */
  computePeak: number | null;
  /** The compute roofs the ops run at, most FLOPs first (the answer's `device.roofs`). */
  roofs: ComputeRoof[];
}

/** A precision's peak (FLOP/s), null when the device does not know it. */
export function roofPeak(device: RooflineDevice | null | undefined, precision: string): number | null {
  const peak = device?.flops[precision];
  return peak && peak.value > 0 ? peak.value : null;
}

export function levelLabel(ctx: RooflineContext, level: string): string {
  return ctx.device?.levels[level] ?? level;
}

/** Memory levels some program or op row moves bytes at: levels without traffic get no columns and no
 * roof. The device's order first, then any others the rows name. */
export function trafficLevels(answer: RooflineAnswer): string[] {
  const order = Object.keys(answer.device?.levels ?? {});
  const used = new Set<string>();
  for (const row of [...answer.program, ...answer.ops]) {
    for (const [level, bytes] of Object.entries(row.bytes_by_level)) if (bytes > 0) used.add(level);
  }
  return [...order.filter((l) => used.has(l)), ...[...used].filter((l) => !order.includes(l)).sort()];
}

/** The compute roof: the peak of the precision the answer names, else unknown. */
export function computePeak(device: RooflineDevice | null | undefined): number | null {
  const precision = device?.roof_precision;
  const peak = precision === undefined ? undefined : device?.flops[precision];
  return peak && peak.value > 0 ? peak.value : null;
}

export function rooflineContext(answer: RooflineAnswer): RooflineContext {
  const device = answer.device ?? null;
  const roofs = (device?.roofs ?? []).map((precision) => ({ precision, peak: roofPeak(device, precision) }));
  return { device, levels: trafficLevels(answer), computePeak: computePeak(device), roofs };
}

/** The precisions a row's `figures.roof` names ("bf16 + fp32": a program row's several roofs). */
export function rowRoofs(row: FigureRow): string[] {
  return row.figures.roof ? row.figures.roof.split(" + ") : [];
}

/** The compute roof cell: the precision(s) the row's FLOP utilization is against, each with its
 * peak or "peak not known"; a program row's tooltip gives the FLOPs at each. */
function roofCell(ctx: RooflineContext, row: FigureRow & { flops_by_roof?: Record<string, number> }): Cell {
  const roofs = rowRoofs(row);
  if (!roofs.length) return notObserved(row, "FLOPs");
  const unknown = roofs.filter((r) => roofPeak(ctx.device, r) === null);
  const parts = roofs.map((r) => {
    const peak = roofPeak(ctx.device, r);
    return peak === null ? `${r}: ${PEAK_NOT_KNOWN}` : `${r}: ${formatFlopRate(peak)}`;
  });
  const shares = row.flops_by_roof ? Object.entries(row.flops_by_roof).map(([r, f]) => `${r}: ${formatFlops(f)}`) : [];
  const title = [...parts, ...(shares.length > 1 ? ["FLOPs per roof:", ...shares] : [])].join("\n");
  const names = roofs.map((r) => (r === "peak" ? "device peak" : r)).join(" + ");
  return text(unknown.length ? `${names} (${unknown.join(", ")}: ${PEAK_NOT_KNOWN})` : names, title);
}

/** FLOPs per byte to 3 significant digits: "0.125 FLOP/B", "560 FLOP/B". */
export function formatIntensity(flopsPerByte: number | null | undefined): string {
  if (flopsPerByte === null || flopsPerByte === undefined || !Number.isFinite(flopsPerByte)) return NOT_OBSERVED;
  return `${Number(flopsPerByte.toPrecision(3)).toLocaleString("en-US", { maximumSignificantDigits: 3 })} FLOP/B`;
}

/** Why a figure of `row` is absent: the row's note, the reason its costs were not observed, or that
 * the profile has no such figure for it. */
export function absentReason(row: FigureRow, what: string): string {
  if (row.note) return row.note;
  if (!MEASURED_SOURCES.has(row.source)) return row.source;
  return `the profile records no ${what} for this row`;
}

function notObserved(row: FigureRow, what: string): Cell {
  return { kind: "absent", text: NOT_OBSERVED, reason: absentReason(row, what) };
}

function peakUnknown(what: string): Cell {
  return { kind: "absent", text: PEAK_UNKNOWN, reason: `the device's ${what} peak is unknown, so there is no roof to compare with` };
}

/** Texts sort regardless of case. */
function text(value: string, title?: string): Cell {
  return { kind: "text", text: value, title, sortText: value.toLowerCase() };
}

function measured(value: number | undefined, format: (v: number) => string, csv: (v: number) => number, row: FigureRow, what: string, estimated = false): Cell {
  if (value === undefined || !Number.isFinite(value)) return notObserved(row, what);
  return { kind: "number", value, text: format(value), csv: String(csv(value)), estimated };
}

const same = (v: number) => v;
const percent = (v: number) => v * 100;

/** Utilization of a peak: a percentage; above 100 % the answer's anomaly says why it is not a rate. */
function utilization(value: number | undefined, row: FigureRow, estimated: boolean, peakKnown: boolean, peakName: string, what: string): Cell {
  if (value === undefined || !Number.isFinite(value)) return peakKnown ? notObserved(row, what) : peakUnknown(peakName);
  const cell: Cell = { kind: "number", value, text: formatPercent(value), csv: String(percent(value)), estimated };
  if (value > 1 && row.figures.anomaly) cell.anomaly = row.figures.anomaly;
  return cell;
}

export function boundLabel(ctx: RooflineContext, bound: string): string {
  return bound === "compute" ? "Compute" : levelLabel(ctx, bound);
}

/** Whether the device knows the peak of some roof the row's FLOP utilization is against (rows
 * without a roof: the device's compute roof). */
function rowPeakKnown(ctx: RooflineContext, row: FigureRow): boolean {
  const roofs = rowRoofs(row);
  return roofs.length ? roofs.some((r) => roofPeak(ctx.device, r) !== null) : ctx.computePeak !== null;
}

/** The columns every row with figures has: rates, intensities and utilizations against the roofs. */
export function figureColumns<R extends FigureRow>(ctx: RooflineContext): Column<R>[] {
  const est = (row: R) => row.source === ESTIMATED;
  const columns: Column<R>[] = [
    {
      id: "flop_rate",
      title: "FLOP rate",
      csvTitle: "FLOP rate (FLOP/s)",
      numeric: true,
      help: "FLOPs ÷ time",
      cell: (row) => measured(row.figures.flop_rate, (v) => formatFlopRate(v), same, row, "FLOPs", est(row)),
    },
  ];
  for (const level of ctx.levels) {
    const label = levelLabel(ctx, level);
    columns.push({
      id: `bw:${level}`,
      title: `${label} bandwidth`,
      csvTitle: `${label} bandwidth (B/s)`,
      numeric: true,
      help: `${label} bytes ÷ time`,
      cell: (row) => measured(row.figures.bandwidth[level], (v) => formatByteRate(v), same, row, `${label} bytes`, est(row)),
    });
  }
  for (const level of ctx.levels) {
    const label = levelLabel(ctx, level);
    columns.push({
      id: `oi:${level}`,
      title: `${label} intensity`,
      csvTitle: `${label} operational intensity (FLOP/B)`,
      numeric: true,
      help: `operational intensity: FLOPs ÷ ${label} bytes`,
      cell: (row) => measured(row.figures.intensity[level], formatIntensity, same, row, `FLOPs or ${label} bytes`, est(row)),
    });
  }
  columns.push(
    {
      id: "bound",
      title: "Bound by",
      csvTitle: "Bound by",
      numeric: false,
      help: "the resource (compute or a memory level) this row uses the largest fraction of",
      cell: (row) => (row.figures.bound_by === undefined ? notObserved(row, "FLOPs or bytes") : text(boundLabel(ctx, row.figures.bound_by))),
    },
    {
      id: "efficiency",
      title: "Roofline efficiency",
      csvTitle: "Roofline efficiency (%)",
      numeric: true,
      help: "the fraction of its bound resource's peak this row achieves",
      cell: (row) => {
        const value = row.figures.roofline_efficiency;
        if (value === undefined && row.figures.anomaly) return { kind: "absent", text: ABOVE_ROOF, reason: row.figures.anomaly };
        return measured(value, (v) => formatPercent(v), percent, row, "FLOPs or bytes", est(row));
      },
    },
    {
      id: "flop_peak",
      title: "% of peak FLOP rate",
      csvTitle: "% of peak FLOP rate",
      numeric: true,
      help: "FLOP rate ÷ the peak of the compute roof the row runs at (a program row of several roofs: Σ FLOPs at each ÷ its peak, ÷ time)",
      cell: (row) => utilization(row.figures.flop_utilization, row, est(row), rowPeakKnown(ctx, row), rowRoofs(row).join(" + ") || "compute", "FLOPs"),
    },
    {
      id: "roof",
      title: "Compute roof",
      csvTitle: "Compute roof",
      numeric: false,
      help: "the peak the FLOP utilization is against: the tensor / matrix units at the op's dtype (bf16, fp16, fp8, int8, fp32_matrix, fp64_matrix) or the vector units (fp32, fp64)",
      cell: (row) => roofCell(ctx, row),
    },
  );
  for (const level of ctx.levels) {
    const label = levelLabel(ctx, level);
    const known = Boolean(ctx.device?.bandwidth[level]);
    columns.push({
      id: `bw_peak:${level}`,
      title: `% of peak ${label} bandwidth`,
      csvTitle: `% of peak ${label} bandwidth`,
      numeric: true,
      help: `${label} bandwidth ÷ its roof`,
      cell: (row) => utilization(row.figures.bandwidth_utilization[level], row, est(row), known, `${label} bandwidth`, `${label} bytes`),
    });
  }
  return columns;
}

function sourceColumn<R extends FigureRow>(): Column<R> {
  return {
    id: "source",
    title: "Costs",
    csvTitle: "Costs",
    numeric: false,
    help: "where the FLOPs and bytes come from: the profile, estimated from shapes, or why they were not observed",
    cell: (row) => text(row.source, row.note),
  };
}

function count<R>(id: string, title: string, value: (row: R) => number, help?: string): Column<R> {
  return { id, title, csvTitle: title, numeric: true, help, cell: (row) => ({ kind: "number", value: value(row), text: formatCount(value(row)), csv: String(value(row)), estimated: false }) };
}

function duration<R>(id: string, title: string, value: (row: R) => number, help?: string): Column<R> {
  return {
    id,
    title,
    csvTitle: `${title} (ns)`,
    numeric: true,
    help,
    cell: (row) => ({ kind: "number", value: value(row), text: formatDuration(value(row)), csv: String(value(row)), estimated: false }),
  };
}

function share<R>(id: string, title: string, value: (row: R) => number, help?: string): Column<R> {
  return {
    id,
    title,
    csvTitle: title.includes("%") ? title : `${title} (%)`,
    numeric: true,
    help,
    cell: (row) => ({ kind: "number", value: value(row), text: formatPercent(value(row)), csv: String(percent(value(row))), estimated: false }),
  };
}

export function opColumns(ctx: RooflineContext): Column<RooflineOpRow>[] {
  return [
    { ...count<RooflineOpRow>("rank", "#", (r) => r.rank, "rank by self time"), firstDescending: false },
    { id: "name", title: "Op", csvTitle: "Op", numeric: false, cell: (r) => text(r.name, r.program ? `${r.name}\nprogram ${r.program}` : r.name) },
    { id: "category", title: "Category", csvTitle: "Category", numeric: false, cell: (r) => text(r.category) },
    count("occurrences", "Occurrences", (r) => r.occurrences, "executions of the op"),
    duration("total_time", "Total time", (r) => r.total_time_ns, "summed over its executions"),
    duration("avg_time", "Average time", (r) => r.avg_time_ns, "per execution"),
    duration("self_time", "Self time", (r) => r.self_time_ns, "total time less the ops nested inside"),
    share("time_share", "% of time", (r) => r.time_fraction, "self time ÷ the program's device time"),
    share("cumulative_share", "Cumulative %", (r) => r.cumulative_time_fraction, "running sum by rank"),
    ...figureColumns<RooflineOpRow>(ctx),
    sourceColumn<RooflineOpRow>(),
  ];
}

export function programColumns(ctx: RooflineContext): Column<RooflineProgramRow>[] {
  return [
    { id: "step", title: "Program", csvTitle: "Program", numeric: false, cell: (r) => text(/^\d+$/.test(r.step) ? `Step ${r.step}` : r.step) },
    {
      id: "wall_time",
      title: "Wall time",
      csvTitle: "Wall time (ns)",
      numeric: true,
      help: "a step's window, as the Overview shows it (its marker's start to the end of the work launched in it); the Total: first to last device activity",
      cell: (r) => measured(r.wall_time_ns, (v) => formatDuration(v), same, r, "wall time"),
    },
    duration("device_time", "Device time", (r) => r.device_time_ns, "busy span of each device, summed over the devices: the rates' denominator"),
    duration("time_per_device", "Time per device", (r) => r.time_per_device_ns, "device time ÷ the active devices"),
    count("devices", "Devices", (r) => r.devices, "devices with activity"),
    {
      id: "flops",
      title: "FLOPs",
      csvTitle: "FLOPs (FLOP)",
      numeric: true,
      cell: (r) => measured(r.flops, (v) => formatFlops(v), same, r, "FLOPs", r.source === ESTIMATED),
    },
    ...figureColumns<RooflineProgramRow>(ctx),
    share("coverage", "Cost coverage", (r) => r.coverage, "fraction of the counted ops' time whose costs were observed; below 100 % the figures are lower bounds"),
    sourceColumn<RooflineProgramRow>(),
  ];
}

/** The sentence above the chart: the share of the program's counted op time whose costs are known
 * (the row of the listed step, else the Total), and how many listed ops were modelled. */
export function coverageText(answer: RooflineAnswer): string | null {
  const row = answer.program.find((r) => answer.step !== undefined && r.step === String(answer.step)) ?? answer.program.find((r) => r.step === "Total");
  if (!row) return null;
  const modelled = answer.ops.filter((o) => o.source === MODELLED).length;
  const scope = row.step === "Total" ? "the program's" : `step ${row.step}'s`;
  const lower = row.coverage < 1 ? ": the rest has no cost, so the figures are lower bounds" : "";
  const model = modelled ? `; ${modelled} op${modelled === 1 ? "" : "s"} ${MODELLED}` : "";
  return `Costs known for ${formatPercent(row.coverage)} of ${scope} device time in counted ops${lower}${model}.`;
}
