/** The xla/* routes (docs/XLA.md): JSON shapes and typed requests, next to the shared client.
 * Values are in the units `torch_xla.debug.metrics.metric_data()` gives: `unit` "ns" for times,
 * "B" for bytes, "" for plain numbers; null means "not observed". */

import type { ProfscopeClient } from "./client.ts";
import type { Subject } from "./types.ts";

export type XlaUnit = "ns" | "B" | "";

export interface XlaValue {
  /** null when the report printed `nan` (no samples). */
  value: number | null;
  text: string;
  /** One unit of the last printed digit, in the value's unit. */
  resolution: number;
  /** A rounded-up time part was brought back down (see docs/XLA.md). */
  corrected: boolean;
  unit: XlaUnit | null;
}

export interface XlaPercentile extends XlaValue {
  p: number;
}

export interface XlaMetric {
  name: string;
  unit: XlaUnit | null;
  description: string | null;
  line: number;
  total_samples: number | null;
  accumulator: XlaValue | null;
  value_rate: XlaValue | null;
  rate: XlaValue | null;
  mean: XlaValue | null;
  stddev: XlaValue | null;
  percentiles: XlaPercentile[];
  corrected: boolean;
  legacy_counter_field: boolean;
}

export interface XlaCounter {
  name: string;
  value: number | null;
  category: "cpu_fallback" | "op" | "runtime";
  description: string | null;
}

export interface XlaTransfer {
  metric: string | null;
  transfers: number | null;
  time_ns: number | null;
  bytes: number | null;
}

export interface XlaSummary {
  uncached_compiles: number | null;
  cached_compiles: number | null;
  compilations: number | null;
  compile_time_ns: number | null;
  executions: number | null;
  execute_time_ns: number | null;
  to_device: XlaTransfer;
  from_device: XlaTransfer;
  cpu_fallback_calls: number | null;
  cpu_fallback_ops: { name: string; value: number | null }[];
  steps: number | null;
}

export interface XlaSeriesMetric {
  unit: XlaUnit | null;
  samples: (number | null)[];
  accumulator: (number | null)[];
  delta_samples: number[];
  delta_accumulator: number[];
}

export interface XlaSeries {
  source: string;
  x_label: "step" | "report";
  steps: number[];
  resets: number[];
  metrics: Record<string, XlaSeriesMetric>;
  counters: Record<string, { values: (number | null)[]; deltas: number[] }>;
}

export interface XlaLocation {
  function: string;
  file: string | null;
  line: number | null;
  label: string;
  count: number;
  role: string;
  file_as_logged?: string;
}

export interface XlaFindingDiff {
  a: number;
  b: number;
  summary: string;
  same_structure: boolean;
}

export interface XlaFinding {
  id: string;
  severity: "high" | "medium" | "info";
  title: string;
  summary: string;
  evidence: { label: string; value: string }[];
  locations: XlaLocation[];
  steps: number[];
  diffs: XlaFindingDiff[];
  fix: string;
  sources: string[];
}

export interface XlaSource {
  path: string;
  format: string;
  ordinal: number | null;
  skipped: Record<string, number>;
  warnings: string[];
  reports?: number;
  steps?: number;
  analyses?: number;
  messages?: number;
  graphs?: number;
}

export interface XlaFileError {
  path: string;
  format: string;
  error: string;
}

export interface XlaFrame {
  function: string;
  file: string | null;
  line: number | null;
  label: string;
}

export interface XlaAnalysis {
  kind: string;
  cause: string;
  step: number | null;
  line: number;
  graph_hash: string | null;
  graph_name: string | null;
  num_inputs: number | null;
  num_outputs: number | null;
  frames: XlaFrame[];
  user_frame: XlaFrame | null;
  post: {
    computation_hash: string | null;
    input_bytes: number | null;
    output_bytes: number | null;
    aliased_input_bytes: number | null;
    intermediate_bytes: number | null;
    program_bytes: number | null;
  } | null;
}

export interface XlaDebugDigest {
  compilations: XlaAnalysis[];
  executions: number;
  unexpected_executions: number;
  causes: { kind: string; cause: string; count: number }[];
  messages: { text: string; kind: string; count: number; first_line: number; last_line: number }[];
}

export interface XlaReport {
  ordinal: number | null;
  ordinals: (number | null)[];
  snapshot: { path: string; step: number | null; first_line: number; last_line: number } | null;
  summary: XlaSummary | null;
  metrics: XlaMetric[];
  counters: XlaCounter[];
  series: XlaSeries | null;
  /** Steps counted as warm-up by the recompilation check. */
  warmup_steps: number;
  debug: XlaDebugDigest | null;
  graphs: { records: number; unique: number } | null;
  findings: XlaFinding[];
  sources: XlaSource[];
  errors: XlaFileError[];
}

export interface XlaGraphRecord {
  index: number;
  file: string;
  line: number;
  step: number | null;
  key: string;
  graph_hash: string | null;
  header: string;
  format: string;
  num_nodes: number;
  complete: boolean;
  ends_step: boolean;
  user_frame: XlaFrame | null;
}

export interface XlaGraphChange {
  kind: "new_structure" | "different_shape";
  line: number;
  current_shape: string | null;
  previous_shape: string | null;
  node: string | null;
  current_trace: XlaFrame[];
  previous_trace: XlaFrame[];
}

export interface XlaGraphGroup {
  key: string;
  graph_hash: string | null;
  first_index: number;
  indices: number[];
  steps: number[];
  format: string;
  num_nodes: number;
  headers: string[];
  compile: XlaAnalysis | null;
  changes: (XlaGraphChange & { index: number })[];
  count: number;
  frames: { frames: string[]; count: number }[];
  user_frame: XlaFrame | null;
}

export interface XlaGraphList {
  ordinal: number | null;
  ordinals: (number | null)[];
  records: XlaGraphRecord[];
  groups: XlaGraphGroup[];
  sources: XlaSource[];
  errors: XlaFileError[];
}

export interface XlaGraph extends XlaGraphRecord {
  frames: XlaFrame[];
  frame_kind: string | null;
  root_hashes: string[];
  change: XlaGraphChange | null;
  output_sharding: string[];
  text: string;
  dot: string | null;
  dot_note: string | null;
  ops: { op: string; count: number }[];
}

export interface XlaDiffNode {
  name: string;
  op: string;
  shape: string;
  line: number;
  location: XlaFrame | null;
}

export interface XlaShapeChange {
  a: XlaDiffNode;
  b: XlaDiffNode;
  op: string;
  shape_a: string;
  shape_b: string;
  origin: boolean;
  location: XlaFrame | null;
}

export type XlaDiffRow =
  | { kind: "same"; count: number }
  | {
      kind: "equal" | "changed" | "removed" | "added" | "replaced";
      a: { line: number; text: string } | null;
      b: { line: number; text: string } | null;
    };

export interface XlaDiff {
  a: XlaGraphRecord;
  b: XlaGraphRecord;
  aligned: boolean;
  reason?: string;
  nodes_a: number;
  nodes_b: number;
  same_structure?: boolean;
  shape_changes?: XlaShapeChange[];
  origins?: XlaShapeChange[];
  origin_locations?: { label: string; count: number }[];
  attr_changes?: { a: XlaDiffNode; b: XlaDiffNode; attrs_a: string; attrs_b: string }[];
  added?: XlaDiffNode[];
  removed?: XlaDiffNode[];
  rows?: XlaDiffRow[];
}

/** Requests of the XLA view, through the shared client (URLs, errors with the server's message). */
export class XlaApi {
  constructor(private readonly client: ProfscopeClient) {}

  private get<T>(route: string, subject: Subject, params: Record<string, string | number>, signal?: AbortSignal): Promise<T> {
    return this.client.getJson<T>(route, subject, params, signal);
  }

  private static ordinal(ordinal: number | null | undefined): Record<string, number> {
    return ordinal === null || ordinal === undefined ? {} : { ordinal };
  }

  report(subject: Subject, ordinal?: number | null, signal?: AbortSignal): Promise<XlaReport> {
    return this.get("xla/report", subject, XlaApi.ordinal(ordinal), signal);
  }

  graphs(subject: Subject, ordinal?: number | null, signal?: AbortSignal): Promise<XlaGraphList> {
    return this.get("xla/graphs", subject, XlaApi.ordinal(ordinal), signal);
  }

  graph(subject: Subject, index: number, ordinal?: number | null, signal?: AbortSignal): Promise<XlaGraph> {
    return this.get("xla/graph", subject, { index, ...XlaApi.ordinal(ordinal) }, signal);
  }

  diff(subject: Subject, a: number, b: number, ordinal?: number | null, signal?: AbortSignal): Promise<XlaDiff> {
    return this.get("xla/diff", subject, { a, b, ...XlaApi.ordinal(ordinal) }, signal);
  }
}
