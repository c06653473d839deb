/** The columns of the three op tables: host ops (framework ops and annotations on the CPU), device
 * kernels (and memcpy / memset) and, for XPlanes, HLO ops. Times are shown with units and written to
 * the CSV in ns; fractions are shown as percentages and written in percent. */

import type { OverviewHloRow, OverviewKernelDetails, OverviewKernelRow, OverviewOpRow } from "../../api/answers.gen.ts";
import type { Column } from "../../shared/table.ts";
import { formatBytes, formatCount } from "../../shared/units.ts";
import { absent, type Cell, count, duration, measured, percent, text } from "./cells.ts";

/** What the kernel and HLO tables' fraction is a share of (analysis/op_tables.py): wall time, not
 * device busy time, so a kernel of a mostly idle device reads small and concurrent streams can add up
 * past 100 %. */
const SHARE_OF_WALL = "Share of wall";
const SCOPE_WALL =
  "the wall time of the tables' scope (the steady steps, or the whole capture; summed over hosts): a share of wall time, " +
  "not of device busy time, so kernels on concurrent streams can add up past 100 %";

/** Why a per-row figure is absent although the row exists: the profile did not record it. */
const NOT_RECORDED = "the profile does not record this for the row";

function timeColumn<R>(id: string, title: string, help: string, value: (row: R) => number): Column<R> {
  return { id, title, csvTitle: `${title} (ns)`, numeric: true, help, cell: (row) => duration(value(row), NOT_RECORDED) };
}

function fractionColumn<R>(id: string, title: string, help: string, value: (row: R) => number): Column<R> {
  return { id, title, csvTitle: `${title} (%)`, numeric: true, help, cell: (row) => percent(value(row), NOT_RECORDED) };
}

function callsColumn<R extends { calls: number }>(): Column<R> {
  return { id: "calls", title: "Calls", csvTitle: "Calls", numeric: true, help: "Calls in the scope", cell: (row) => count(row.calls, NOT_RECORDED) };
}

function nameColumn<R extends { name: string }>(title: string): Column<R> {
  return { id: "name", title, csvTitle: title, numeric: false, cell: (row) => text(row.name) };
}

function optionalText(value: string | undefined, reason: string): Cell {
  return value ? text(value) : absent(reason);
}

/** The host op columns; grouped by shapes, the input shapes follow the name. */
export function hostOpColumns(byShapes: boolean): Column<OverviewOpRow>[] {
  const shapes: Column<OverviewOpRow> = {
    id: "shapes",
    title: "Input shapes",
    csvTitle: "Input shapes",
    numeric: false,
    help: "The input shapes the profile recorded for these calls",
    cell: (row) => optionalText(row.shapes, "no input shapes recorded for these calls (PyTorch: profile with record_shapes=True)"),
  };
  return [
    nameColumn<OverviewOpRow>("Host op"),
    ...(byShapes ? [shapes] : []),
    callsColumn<OverviewOpRow>(),
    timeColumn<OverviewOpRow>("total", "Total", "Inclusive time of every call (children included)", (r) => r.total_ns),
    timeColumn<OverviewOpRow>("self", "Self", "Exclusive time: the total less the time of the ops each call encloses", (r) => r.self_ns),
    timeColumn<OverviewOpRow>("avg", "Average", "Total time per call", (r) => r.avg_ns),
    timeColumn<OverviewOpRow>("min", "Min", "Shortest call", (r) => r.min_ns),
    timeColumn<OverviewOpRow>("max", "Max", "Longest call", (r) => r.max_ns),
    fractionColumn<OverviewOpRow>("total_fraction", "Total %", "Total time ÷ the scope's wall time", (r) => r.total_fraction),
    fractionColumn<OverviewOpRow>("self_fraction", "Self %", "Self time ÷ the scope's wall time", (r) => r.self_fraction),
  ];
}

/** "40×2×1". */
export function formatDims(dims: number[] | undefined): string | undefined {
  return dims?.length ? dims.join("×") : undefined;
}

function detail<K extends keyof OverviewKernelDetails>(row: OverviewKernelRow, key: K): OverviewKernelDetails[K] | undefined {
  return row.details?.[key];
}

const NO_DETAIL = "the profile records no launch configuration of this kind for the kernel";

export function kernelColumns(): Column<OverviewKernelRow>[] {
  return [
    nameColumn<OverviewKernelRow>("Kernel"),
    { id: "kind", title: "Kind", csvTitle: "Kind", numeric: false, cell: (row) => text(row.kind) },
    callsColumn<OverviewKernelRow>(),
    timeColumn<OverviewKernelRow>("total", "Total", "Device time of every call", (r) => r.total_ns),
    timeColumn<OverviewKernelRow>("avg", "Average", "Device time per call", (r) => r.avg_ns),
    timeColumn<OverviewKernelRow>("min", "Min", "Shortest call", (r) => r.min_ns),
    timeColumn<OverviewKernelRow>("max", "Max", "Longest call", (r) => r.max_ns),
    fractionColumn<OverviewKernelRow>("fraction", SHARE_OF_WALL, `Total device time ÷ ${SCOPE_WALL}`, (r) => r.fraction),
    {
      id: "framework_op",
      title: "Launched by",
      csvTitle: "Launched by",
      numeric: false,
      help: "The host op that launched most of its calls (through the launch flows)",
      cell: (row) => optionalText(row.framework_op, "no launch of this kernel is linked to a host op in the profile"),
    },
    { id: "framework_ops", title: "Host ops", csvTitle: "Host ops", numeric: true, help: "How many distinct host ops launched it", cell: (row) => count(row.framework_ops, NOT_RECORDED) },
    { id: "grid", title: "Grid", csvTitle: "Grid", numeric: false, cell: (row) => optionalText(formatDims(detail(row, "grid")), NO_DETAIL) },
    { id: "block", title: "Block", csvTitle: "Block", numeric: false, cell: (row) => optionalText(formatDims(detail(row, "block")), NO_DETAIL) },
    {
      id: "registers",
      title: "Registers",
      csvTitle: "Registers per thread",
      numeric: true,
      help: "Registers per thread",
      cell: (row) => measured(detail(row, "registers_per_thread"), (v) => formatCount(v), NO_DETAIL),
    },
    {
      id: "shared_memory",
      title: "Shared mem.",
      csvTitle: "Shared memory (bytes)",
      numeric: true,
      help: "Shared memory per block",
      cell: (row) => measured(detail(row, "shared_memory"), (v) => formatBytes(v), NO_DETAIL),
    },
    {
      id: "occupancy",
      title: "Est. occupancy",
      csvTitle: "Est. achieved occupancy (%)",
      numeric: true,
      help: "Estimated achieved occupancy, as the profiler recorded it (first call seen)",
      cell: (row) => measured(detail(row, "occupancy"), (v) => `${formatCount(v)}%`, NO_DETAIL),
    },
  ];
}

export function hloColumns(): Column<OverviewHloRow>[] {
  return [
    nameColumn<OverviewHloRow>("HLO op"),
    { id: "category", title: "Category", csvTitle: "Category", numeric: false, cell: (row) => text(row.category) },
    {
      id: "framework_op",
      title: "Framework op",
      csvTitle: "Framework op",
      numeric: false,
      cell: (row) => optionalText(row.framework_op, "the op's stats name no framework op"),
    },
    { id: "program", title: "Program", csvTitle: "Program", numeric: false, cell: (row) => optionalText(row.program, "the op's stats name no program") },
    callsColumn<OverviewHloRow>(),
    timeColumn<OverviewHloRow>("total", "Total", "Device time of every call (nested ops included)", (r) => r.total_ns),
    timeColumn<OverviewHloRow>("self", "Self", "Device time less the ops nested in it", (r) => r.self_ns),
    timeColumn<OverviewHloRow>("avg", "Average", "Device time per call", (r) => r.avg_ns),
    timeColumn<OverviewHloRow>("min", "Min", "Shortest call", (r) => r.min_ns),
    timeColumn<OverviewHloRow>("max", "Max", "Longest call", (r) => r.max_ns),
    fractionColumn<OverviewHloRow>("fraction", SHARE_OF_WALL, `Self device time ÷ ${SCOPE_WALL}`, (r) => r.fraction),
  ];
}
