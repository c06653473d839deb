/** JSON shapes of the profscope HTTP API. The answers are generated from the server's msgspec Structs
 * (answers.gen.ts, from answers.schema.json: see scripts/gen-answer-types.mjs); this module gives them
 * the names the views use and adds the request-side types. */

import type {
  FileEntry,
  HostEntry,
  Ingesting,
  RunEntry,
  RunsAnswer,
  SessionEntry,
  TileScheme,
  TraceEvent,
  TraceHost,
  TraceSearch,
  TraceSection,
  TraceSummary,
  TraceTrack,
} from "./answers.gen.ts";

export type { FlowLink, SearchMatch, SummaryRow, TraceMeta } from "./answers.gen.ts";

/** A tool's id: the name of its folder `src/views/<tool>/`. Tools are discovered from those folders, so
 * this is checked at run time against the registry (`isToolId` in src/views/registry.ts). */
export type ToolId = string;

/** `/runs`: the logdir's runs, sessions and hosts, with each host's files and tools. */
export type RunsResponse = RunsAnswer;
export type RunsRun = RunEntry;
export type RunsSession = SessionEntry;
export type RunsHost = HostEntry;
export type RunsFile = FileEntry;

/** What every data route is about: one session of one run, one or more hosts merged. */
export interface Subject {
  run: string;
  session: string;
  /** Host names exactly as `/runs` lists them; several = merged on one timeline. */
  hosts: string[];
}

/** The 202 answer of a route that needs a trace still being ingested. */
export type IngestProgress = Ingesting;

export type MetaHost = TraceHost;
export type MetaSection = TraceSection;
export type MetaTrack = TraceTrack;
export type TileParams = TileScheme;
export type EventDetails = TraceEvent;
export type SearchResponse = TraceSearch;
export type SummaryResponse = TraceSummary;
