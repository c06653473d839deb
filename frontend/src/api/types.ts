/** JSON shapes of the profscope HTTP API, as documented in docs/ARCHITECTURE.md. */

export type ToolId = "trace" | "roofline" | "xla" | "overview";

export interface RunsFile {
  name?: string;
  path: string;
  format: string;
  size: number;
  error?: string;
}

export interface RunsHost {
  name: string;
  files: RunsFile[];
  tools: string[];
}

export interface RunsSession {
  name: string;
  hosts: RunsHost[];
}

export interface RunsRun {
  name: string;
  sessions: RunsSession[];
}

export interface RunsResponse {
  logdir: string;
  runs: RunsRun[];
  /** Logdir-level problems (unreadable folders…); file problems sit on the files. */
  errors?: string[];
  empty_message?: string;
}

/** What every data route is about: one session of one run, one or more hosts merged. */
export interface Subject {
  run: string;
  session: string;
  /** Host names exactly as `/runs` lists them; several = merged on one timeline. */
  hosts: string[];
}

export interface IngestProgress {
  state: "ingesting";
  bytes_done: number;
  bytes_total: number;
  /** What the ingest is doing now (reading, indexing…), when the server says. */
  stage?: string;
  files?: unknown;
}

export interface MetaHost {
  name: string;
  offset_ns: number;
  num_events: number;
  warnings: string[];
  skipped: Record<string, number>;
}

export interface MetaSection {
  id: number;
  name: string;
  kind: string;
  sort_index: number;
  /** Index into `hosts` (a host name is accepted too). */
  host: number | string;
}

export interface MetaTrack {
  id: number;
  section: number;
  name: string;
  kind: string;
  sort_index: number;
  max_depth: number;
  host: number | string;
}

export interface TileParams {
  base_ns: number;
  tile_px: number;
  max_level: number;
}

export interface TraceMeta {
  span_ns: [number, number];
  hosts: MetaHost[];
  sections: MetaSection[];
  tracks: MetaTrack[];
  num_events: number;
  num_flows: number;
  /** Timeline-level problems (e.g. hosts without a clock origin, so not aligned). */
  warnings?: string[];
  tile: TileParams;
}

export interface FlowLink {
  id: number;
  name: string;
  start_ns: number;
  track: number;
}

export interface EventDetails {
  id: number;
  name: string;
  category: string;
  track: number;
  section: number;
  start_ns: number;
  dur_ns: number;
  self_ns: number;
  depth: number;
  args: Record<string, unknown>;
  flows_out: FlowLink[];
  flows_in: FlowLink[];
}

export interface SearchMatch {
  id: number;
  name: string;
  start_ns: number;
  dur_ns: number;
  track: number;
}

export interface SearchResponse {
  query: string;
  total: number;
  /** Index (in time order among all matches) of `matches[0]`. */
  offset: number;
  matches: SearchMatch[];
  truncated: boolean;
}

export interface SummaryRow {
  name: string;
  count: number;
  total_ns: number;
  self_ns: number;
  avg_ns: number;
  min_ns: number;
  max_ns: number;
}

export interface SummaryResponse {
  rows: SummaryRow[];
  num_events: number;
}
