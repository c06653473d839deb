/** The Memory tab's tables, as columns of the shared sortable table (shared/table.ts): the steps, the
 * blocks live at the peak by op and shape, the allocating ops, the largest allocations with their
 * frees, and the blocks never freed. A figure the profile does not give reads "not observed" (a
 * block freed after the capture has no free time), never 0. */

import { h } from "../../dom.ts";
import { type Cell, type Column, csvNumber, SortableTable } from "../../shared/table.ts";
import { formatBytes, formatCount, formatDuration, NOT_OBSERVED } from "../../shared/units.ts";
import type { MemoryAllocation, MemoryLiveGroup, MemoryOpRow, MemoryPeakStep, MemoryPeakStepRow, MemoryStep } from "./api.ts";

export const NOT_FREED = "not freed in the capture";

export function bytesCell(value: number): Cell {
  return { kind: "number", value, text: formatBytes(value), csv: csvNumber(value), title: `${formatCount(value)} B` };
}

export function countCell(value: number): Cell {
  return { kind: "number", value, text: formatCount(value), csv: csvNumber(value) };
}

/** A time or duration in ns; absent ones say why. */
export function timeCell(ns: number | undefined, reason: string): Cell {
  if (ns === undefined) return { kind: "absent", text: NOT_OBSERVED, reason };
  return { kind: "number", value: ns, text: formatDuration(ns), csv: csvNumber(ns) };
}

export function textCell(text: string | undefined, reason = "not recorded"): Cell {
  return text === undefined ? { kind: "absent", text: NOT_OBSERVED, reason } : { kind: "text", text, sortText: text.toLowerCase() };
}

function numeric<R>(id: string, title: string, unit: string, help: string, cell: (row: R) => Cell): Column<R> {
  return { id, title, csvTitle: `${title} (${unit})`, numeric: true, help, cell };
}

function text<R>(id: string, title: string, help: string, cell: (row: R) => Cell): Column<R> {
  return { id, title, csvTitle: title, numeric: false, help, cell };
}

export const STEP_COLUMNS: Column<MemoryStep>[] = [
  text("step", "Step", "The step marker", (s) => ({ kind: "text", text: s.name, sortText: String(s.number).padStart(12, "0") })),
  numeric("start", "At start", "bytes", "Allocated bytes when the step starts", (s) => bytesCell(s.start_bytes)),
  numeric("peak", "Peak", "bytes", "The highest allocated bytes within the step", (s) => bytesCell(s.peak_bytes)),
  numeric("end", "At end", "bytes", "Allocated bytes when the step ends", (s) => bytesCell(s.end_bytes)),
  numeric("growth", "Growth", "bytes", "At end − at start", (s) => bytesCell(s.end_bytes - s.start_bytes)),
  numeric("allocations", "Allocations", "count", "Allocations made in the step", (s) => countCell(s.allocations)),
  numeric("never", "Never freed", "bytes", "Bytes allocated in the step that the capture never frees", (s) => bytesCell(s.never_freed_bytes)),
];

const OP_HELP = "The op the allocator event names (TensorFlow's tf_op), else the innermost host op enclosing it";
const SHAPE_HELP = "The tensor's shape the event names (TensorFlow), else the allocating op's input shapes (record_shapes)";
const NO_SHAPE = "neither the event nor its op records a shape";
const DTYPE_HELP = "The tensor's element type the event names (TensorFlow's data_type)";
const NO_DTYPE = "the event names no element type (PyTorch's [memory] events never do)";

const NOT_NAMED = "the allocation event does not name it";

/** XProf's breakdown of the peak's step: blocks of one size and kind, allocated in the step and live at the peak. */
export const PEAK_STEP_COLUMNS: Column<MemoryPeakStepRow>[] = [
  numeric("size", "Size", "bytes", "The size of each block", (r) => bytesCell(r.size_bytes)),
  numeric("count", "Blocks", "count", "How many such blocks of the step are live at the peak", (r) => countCell(r.count)),
  numeric("bytes", "Bytes", "bytes", "Size × blocks", (r) => bytesCell(r.bytes)),
  text("op", "Op", "The op the allocation event names (tf_op)", (r) => textCell(r.op, NOT_NAMED)),
  text("shape", "Shape", "The tensor's shape the event names", (r) => textCell(r.shape, NOT_NAMED)),
  text("dtype", "Dtype", "The tensor's element type the event names", (r) => textCell(r.dtype, NOT_NAMED)),
  text("region", "Region", "The allocator's region type (persist, dynamic, output, temp)", (r) => textCell(r.region, NOT_NAMED)),
];

/** "Step 0 (group_id): 554 blocks allocated in it are live at the peak, 2.04 GiB; 3.74 GiB were
 * allocated before it (XProf's "unused preallocated device memory")". */
export function peakStepText(step: MemoryPeakStep): string {
  const blocks = `${formatCount(step.count)} ${step.count === 1 ? "block" : "blocks"} allocated in it live at the peak, ${formatBytes(step.bytes)}`;
  return `Step ${step.step} (the events' group_id): ${blocks}; ${formatBytes(step.before_step_bytes)} held from before the step (XProf's "unused preallocated device memory")`;
}

/** The live groups' columns; `described`: the events name element types (TensorFlow's), so a dtype
 * column says something (PyTorch's `[memory]` events never do: no column of "not observed"). */
export function liveColumns(described: boolean): Column<MemoryLiveGroup>[] {
  return [
    text("op", "Allocating op", OP_HELP, (g) => textCell(g.op)),
    text("shape", "Shape", SHAPE_HELP, (g) => textCell(g.shape, NO_SHAPE)),
    ...(described ? [text<MemoryLiveGroup>("dtype", "Dtype", DTYPE_HELP, (g) => textCell(g.dtype, NO_DTYPE))] : []),
    numeric("bytes", "Bytes at peak", "bytes", "Bytes of its blocks live at the peak", (g) => bytesCell(g.bytes)),
    numeric("count", "Blocks", "count", "How many of its blocks are live at the peak", (g) => countCell(g.count)),
  ];
}

/** Whether rows carry the allocator's own description of their blocks (dtype or region). */
export function described(rows: readonly (MemoryAllocation | MemoryLiveGroup)[]): boolean {
  return rows.some((r) => r.dtype !== undefined || ("region" in r && r.region !== undefined));
}

export const OP_COLUMNS: Column<MemoryOpRow>[] = [
  text("op", "Op", OP_HELP, (r) => textCell(r.op)),
  numeric("allocated", "Allocated", "bytes", "Bytes of all its allocations", (r) => bytesCell(r.allocated_bytes)),
  numeric("allocations", "Allocations", "count", "How many allocations it made", (r) => countCell(r.allocations)),
  numeric("freed", "Freed", "count", "How many of them the capture frees", (r) => countCell(r.freed)),
  numeric("peak", "At peak", "bytes", "Its bytes live at the peak", (r) => bytesCell(r.peak_bytes)),
  numeric("never", "Never freed", "bytes", "Its bytes the capture never frees", (r) => bytesCell(r.never_freed_bytes)),
];

/** The allocation tables' columns; `withFree`: the free's time, lifetime and op; `described`: the
 * events name dtype and region (TensorFlow), else those columns are left out. */
export function allocationColumns(withFree: boolean, described = false): Column<MemoryAllocation>[] {
  const columns: Column<MemoryAllocation>[] = [
    numeric("size", "Size", "bytes", "Bytes allocated", (a) => bytesCell(a.size_bytes)),
    numeric("alloc", "Allocated at", "ns", "Time of the allocation from the session start", (a) => timeCell(a.alloc_ns, "")),
  ];
  if (withFree) {
    columns.push(
      numeric("free", "Freed at", "ns", "Time of its free from the session start", (a) => timeCell(a.free_ns, NOT_FREED)),
      numeric("lifetime", "Lifetime", "ns", "Freed at − allocated at", (a) => timeCell(a.lifetime_ns, NOT_FREED)),
    );
  }
  columns.push(
    text("op", "Allocating op", OP_HELP, (a) => textCell(a.alloc_op, "the event names no op and no host op encloses it")),
  );
  if (withFree) columns.push(text("free_op", "Freeing op", "The op the free names (tf_op), else the innermost host op enclosing it", (a) => textCell(a.free_op, a.free_ns === undefined ? NOT_FREED : "the free names no op and no host op encloses it")));
  columns.push(
    text("shape", "Shape", SHAPE_HELP, (a) => textCell(a.shape, NO_SHAPE)),
  );
  if (described) {
    columns.push(
      text("dtype", "Dtype", DTYPE_HELP, (a) => textCell(a.dtype, NO_DTYPE)),
      text("region", "Region", "The allocator's region type the event names (TensorFlow's BFC: persist, dynamic, output, temp)", (a) => textCell(a.region, "the event names no region")),
    );
  }
  columns.push(
    text("step", "Step", "The step the allocation is made in", (a) => textCell(a.step, "outside every step")),
    text("addr", "Address", "The block's address", (a) => textCell(a.addr)),
  );
  return columns;
}

/** A table row: the cells of `columns`, absent ones with their reason as tooltip. */
export function rowElement<R>(row: R, columns: readonly Column<R>[]): HTMLTableRowElement {
  return h(
    "tr",
    {},
    ...columns.map((c) => {
      const cell = c.cell(row);
      const title = cell.kind === "absent" ? cell.reason : cell.title;
      return h("td", { class: c.numeric ? "num" : undefined, title: title || undefined, "data-col": c.id }, cell.text);
    }),
  );
}

/** A sortable table of the tab, `testId` naming it for tests; `row` draws a row (plain cells by default). */
export function memoryTable<R>(testId: string, sort: string, descending: boolean, row: (row: R, columns: readonly Column<R>[]) => HTMLTableRowElement = rowElement): SortableTable<R> {
  return new SortableTable<R>({ prefix: "mem", testId, csvTestId: `${testId}-csv`, sort: { column: sort, descending }, row });
}
