/** A fetch-compatible mock of the profscope routes over one or more MockTraces, for unit tests and
 * the development server. Records every request so tests can assert which tiles were asked for. */

import type { RunsResponse } from "../../src/api/types.ts";
import { buildTile, encodeTile, eventDetails, type MockTrace, summarize } from "./trace.ts";

export interface MockOptions {
  /** How many trace/meta calls answer 202 before the metadata is ready. */
  ingestPolls?: number;
  /** Delay before each tile answer, in ms (to exercise the coarse fallback and cancellation). */
  tileDelayMs?: number;
  runs?: RunsResponse;
}

/** `/runs` as the backend sends it: every file with its `format_label`, every session with its `label`
 * (the name itself, except PyTorch sessions named by a timestamp, which read as a local date-time). */
export const DEFAULT_RUNS: RunsResponse = {
  logdir: "/logs",
  runs: [
    {
      name: "resnet",
      sessions: [
        {
          name: "2024_01_01_00_00_00",
          label: "2024_01_01_00_00_00",
          hosts: [
            {
              name: "worker0",
              files: [{ name: "worker0.pt.trace.json.gz", path: "worker0.pt.trace.json.gz", format: "chrome_trace", format_label: "Chrome trace", size: 1, mtime: null }],
              tools: ["overview", "trace"],
            },
            {
              name: "worker1",
              files: [{ name: "worker1.pt.trace.json.gz", path: "worker1.pt.trace.json.gz", format: "chrome_trace", format_label: "Chrome trace", size: 1, mtime: null }],
              tools: ["overview", "trace"],
            },
          ],
        },
      ],
    },
    {
      name: "xla_run",
      sessions: [
        {
          name: "s1",
          label: "s1",
          hosts: [
            {
              name: "cpu",
              files: [{ name: "xla_metrics.txt", path: "xla_metrics.txt", format: "xla_metrics", format_label: "XLA logs", size: 1, mtime: null }],
              tools: ["xla"],
            },
          ],
        },
      ],
    },
  ],
  errors: [],
};

export class MockApi {
  readonly requests: string[] = [];
  private metaCalls = 0;

  constructor(
    readonly trace: MockTrace,
    readonly options: MockOptions = {},
  ) {}

  fetch = async (input: string, init?: RequestInit): Promise<Response> => {
    const url = new URL(input, "http://localhost/");
    this.requests.push(url.pathname + url.search);
    const route = url.pathname.replace(/^.*\/data\/plugin\/profscope\//, "");
    const q = url.searchParams;
    const json = (body: unknown, status = 200) =>
      new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
    const meta = this.trace.meta;
    if (route === "runs") return json(this.options.runs ?? DEFAULT_RUNS);
    if (route.startsWith("trace/") && q.get("run") === "missing") {
      return new Response("Not found: no run named 'missing'", { status: 404 });
    }
    switch (route) {
      case "trace/meta":
        if (this.metaCalls++ < (this.options.ingestPolls ?? 0)) {
          return json({ state: "ingesting", bytes_done: this.metaCalls * 100, bytes_total: 1000, files: [] }, 202);
        }
        return json(meta);
      case "trace/tile": {
        const level = Number(q.get("level"));
        const index = Number(q.get("index"));
        if (!(level >= 0 && level <= meta.tile.max_level && index >= 0)) {
          return new Response(`Invalid argument: level ${q.get("level")} index ${q.get("index")}`, { status: 400 });
        }
        if (this.options.tileDelayMs) {
          await new Promise<void>((resolve, reject) => {
            const timer = setTimeout(resolve, this.options.tileDelayMs);
            init?.signal?.addEventListener("abort", () => {
              clearTimeout(timer);
              reject(new DOMException("aborted", "AbortError"));
            });
          });
        }
        return new Response(encodeTile(buildTile(this.trace, level, index)), {
          headers: { "Content-Type": "application/octet-stream" },
        });
      }
      case "trace/event": {
        const id = Number(q.get("id"));
        if (!(id >= 0 && id < this.trace.events.length)) return new Response(`Not found: event ${q.get("id")}`, { status: 404 });
        return json(eventDetails(this.trace, id));
      }
      case "trace/search": {
        const needle = (q.get("q") ?? "").toLowerCase();
        const limit = Number(q.get("limit") ?? 100);
        const offset = Number(q.get("offset") ?? 0);
        const all = this.trace.events
          .filter((e) => e.name.toLowerCase().includes(needle))
          .sort((a, b) => a.start - b.start || a.id - b.id);
        return json({
          query: q.get("q"),
          total: all.length,
          offset,
          truncated: all.length > offset + limit,
          matches: all
            .slice(offset, offset + limit)
            .map((e) => ({ id: e.id, name: e.name, start_ns: e.start, dur_ns: e.dur, track: e.track })),
        });
      }
      case "trace/summary": {
        if (q.has("ids")) {
          const ids = (q.get("ids") ?? "").split(",").filter(Boolean).map(Number);
          return json(summarize(this.trace, ids.map((id) => this.trace.events[id])));
        }
        const start = Number(q.get("start"));
        const end = Number(q.get("end"));
        const tracks = new Set((q.get("tracks") ?? "").split(",").filter(Boolean).map(Number));
        const picked = this.trace.events.filter(
          (e) => tracks.has(e.track) && e.start < end && e.start + e.dur > start,
        );
        return json(summarize(this.trace, picked));
      }
      default:
        return new Response(`Not found: ${route}`, { status: 404 });
    }
  };
}
