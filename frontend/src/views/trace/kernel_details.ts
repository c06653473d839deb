/** What the details panel computes about an event beyond its fields: the launch → kernel latency
 * across its flows, and the fields of an XPlane GPU kernel's `kernel_details` argument (a text such
 * as "regs:32 static_shared:0 dynamic_shared:49152 grid:108,1,1 block:128,1,1 occ_pct:50"). */

import type { EventDetails } from "../../api/types.ts";
import { formatBytes, formatDuration } from "../../shared/units.ts";
import { DURATION_DIGITS } from "./axis.ts";

/** Labels of the keys XProf writes (CUDA and ROCm), with how their values read. */
const KERNEL_FIELDS: Record<string, { label: string; kind: "count" | "bytes" | "dims" | "percent" }> = {
  regs: { label: "Registers / thread", kind: "count" },
  static_shared: { label: "Static shared memory", kind: "bytes" },
  dynamic_shared: { label: "Dynamic shared memory", kind: "bytes" },
  shm: { label: "Shared memory", kind: "bytes" },
  private_mem: { label: "Private memory", kind: "bytes" },
  group_mem: { label: "Group memory (LDS)", kind: "bytes" },
  grid: { label: "Grid", kind: "dims" },
  block: { label: "Block", kind: "dims" },
  occ_pct: { label: "Occupancy", kind: "percent" },
};

/** `kernel_details` as [label, value] rows, in the order written; unknown keys keep their name. */
export function parseKernelDetails(text: string): [string, string][] {
  const rows: [string, string][] = [];
  for (const item of text.trim().split(/\s+/)) {
    const at = item.indexOf(":");
    if (at <= 0) continue;
    const key = item.slice(0, at);
    const value = item.slice(at + 1);
    const field = KERNEL_FIELDS[key];
    if (!field) {
      rows.push([key, value]);
      continue;
    }
    const n = Number(value);
    const shown =
      field.kind === "dims"
        ? value.split(",").join(" × ")
        : field.kind === "bytes" && Number.isFinite(n)
          ? formatBytes(n)
          : field.kind === "percent"
            ? `${value} %`
            : value;
    rows.push([field.label, shown]);
  }
  return rows;
}

/** One row per flow of `d`: the time from the flow's source starting to its destination starting,
 * seen from a launch (flows out: "Latency to gemm") or from a kernel (flows in: "Latency from
 * cudaLaunchKernel"). */
export function flowLatencies(d: EventDetails): [string, string][] {
  const rows: [string, string][] = [];
  const name = (n: string) => n || "linked event";
  for (const f of d.flows_out ?? []) rows.push([`Latency to ${name(f.name)}`, formatDuration(f.start_ns - d.start_ns, DURATION_DIGITS)]);
  for (const f of d.flows_in ?? []) rows.push([`Latency from ${name(f.name)}`, formatDuration(d.start_ns - f.start_ns, DURATION_DIGITS)]);
  return rows;
}
