/** The xla/* routes (docs/XLA.md) through the shared client: their JSON shapes and typed requests.
 * The shapes are generated from the server's Structs (tools/xla/answers.py, via answers.gen.ts), so
 * a field the server may leave out is optional here too. Values are in the units
 * `torch_xla.debug.metrics.metric_data()` gives: `unit` "ns" for times, "B" for bytes, "" for plain
 * numbers; null (or an absent field) means "not observed", never 0. */

import type { XlaDiff, XlaGraph, XlaGraphList, XlaReport, XlaValue } from "../../api/answers.gen.ts";
import type { ProfscopeClient } from "../../api/client.ts";
import type { Subject } from "../../api/types.ts";

export type {
  XlaAnalysis,
  XlaAttrChange,
  XlaCauseCount,
  XlaCounter,
  XlaDebugDigest,
  XlaDiff,
  XlaDiffNode,
  XlaDiffRow,
  XlaDiffSide,
  XlaEvidence,
  XlaFallbackOp,
  XlaFileError,
  XlaFinding,
  XlaFindingDiff,
  XlaFrame,
  XlaFrameCount,
  XlaGraph,
  XlaGraphChange,
  XlaGraphCounts,
  XlaGraphGroup,
  XlaGraphList,
  XlaGraphRecord,
  XlaLocation,
  XlaMessageCount,
  XlaMetric,
  XlaOpCount,
  XlaOriginCount,
  XlaPercentile,
  XlaPostCompilation,
  XlaReport,
  XlaSeries,
  XlaSeriesCounter,
  XlaSeriesMetric,
  XlaShapeChange,
  XlaSnapshot,
  XlaSource,
  XlaSummary,
  XlaTransfer,
  XlaValue,
} from "../../api/answers.gen.ts";

/** The unit a value is printed in; the generated `XlaValue.unit` already names exactly the three. */
export type XlaUnit = NonNullable<XlaValue["unit"]>;

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
