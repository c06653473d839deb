/** The one typed client of the profscope HTTP API (docs/ARCHITECTURE.md "HTTP API"); every view
 * talks to the server through it so that URLs, query parameters and error handling live in one place. */

import { decodeTile, type Tile } from "./tile.ts";
import type {
  EventDetails,
  IngestProgress,
  RunsResponse,
  SearchResponse,
  Subject,
  SummaryResponse,
  TraceMeta,
} from "./types.ts";

/** A failed request, with the server's own message (TensorBoard answers errors as text) and, when
 * the server said when to ask again (503), its `Retry-After` in seconds. */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    message: string,
    readonly status: number,
    readonly route: string,
    readonly retryAfterS: number | null = null,
  ) {
    super(message);
  }
}

/** Times a search the server refused as busy (503) is asked again, each after its `Retry-After`. */
export const SEARCH_BUSY_RETRIES = 3;
/** A 503 asking to wait longer than this is not a busy search (an ingest that failed): not retried. */
const SEARCH_BUSY_MAX_WAIT_S = 10;
/** What a search says once the server stayed busy through every retry. */
export const SEARCH_BUSY_MESSAGE = "the server is busy searching; try again";

/** A random id for one viewer's searches (`client=`): the server cancels that viewer's earlier
 * search when it sends a newer one. `getRandomValues`, unlike `randomUUID`, works over plain http. */
export function newSearcherId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Whether a tile request failed because the trace's version it named is gone: the server is reading
 * the trace again (202), or has another version of it (409), or no longer has it (404). The view then
 * reads trace/meta again. */
export function isStaleTile(e: unknown): boolean {
  return e instanceof ApiError && e.route === "trace/tile" && [202, 404, 409].includes(e.status);
}

/** Seconds of a `Retry-After` header (the delay form; the date form is not used by the server). */
function retryAfterSeconds(res: Response): number | null {
  const value = res.headers.get("Retry-After");
  const seconds = value === null || value.trim() === "" ? NaN : Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : null;
}

export type MetaAnswer = { state: "ready"; meta: TraceMeta } | IngestProgress;

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

/** The plugin's data base URL (…/data/plugin/profscope/) seen from a module of the bundle: modules
 * live either there (index.js) or in its static/ folder (app.js and its chunks). */
export function pluginBaseFrom(moduleUrl: string): string {
  const here = new URL(".", moduleUrl);
  return (here.pathname.endsWith("/static/") ? new URL("../", here) : here).href;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

export class ProfscopeClient {
  private readonly fetchImpl: FetchLike;

  constructor(
    readonly base: string,
    fetchImpl?: FetchLike,
  ) {
    this.fetchImpl = fetchImpl ?? ((input, init) => fetch(input, init));
  }

  /** Absolute URL of `route` with query parameters (the subject's run/session/host first); a
   * parameter left undefined is not sent. */
  url(route: string, subject?: Subject, params: Record<string, string | number | undefined> = {}): string {
    const u = new URL(route, this.base);
    if (subject) {
      u.searchParams.set("run", subject.run);
      u.searchParams.set("session", subject.session);
      u.searchParams.set("host", subject.hosts.join(","));
    }
    for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, String(v));
    return u.href;
  }

  private async request(route: string, url: string, signal?: AbortSignal): Promise<Response> {
    let res: Response;
    try {
      res = await this.fetchImpl(url, { signal, credentials: "same-origin" });
    } catch (e) {
      if (signal?.aborted) throw e;
      throw new ApiError(`${route}: the server did not answer (${(e as Error).message})`, 0, route);
    }
    if (!res.ok) {
      const text = (await res.text().catch(() => "")).trim();
      let message = text;
      if (text.startsWith("{")) {
        try {
          const body = JSON.parse(text) as { message?: string; error?: string };
          message = body.message ?? body.error ?? text;
        } catch {
          message = text;
        }
      }
      throw new ApiError(
        `${route}: ${message || res.statusText || "request failed"} (HTTP ${res.status})`,
        res.status,
        route,
        retryAfterSeconds(res),
      );
    }
    return res;
  }

  /** A data route's answer; while the server is (again) ingesting the trace it answers 202 with the
   * progress, and the request is repeated until the data is there. */
  private async ready(route: string, url: string, signal?: AbortSignal): Promise<Response> {
    let delay = 300;
    for (;;) {
      const res = await this.request(route, url, signal);
      if (res.status !== 202) return res;
      await res.body?.cancel();
      await sleep(delay, signal);
      delay = Math.min(delay * 1.5, 2000);
    }
  }

  /** A JSON data route of any view: `route` with the subject and parameters, waiting out 202s. */
  getJson<T>(
    route: string,
    subject?: Subject,
    params: Record<string, string | number> = {},
    signal?: AbortSignal,
  ): Promise<T> {
    return this.json(route, this.url(route, subject, params), signal);
  }

  private async json<T>(route: string, url: string, signal?: AbortSignal): Promise<T> {
    const res = await this.ready(route, url, signal);
    try {
      return (await res.json()) as T;
    } catch (e) {
      throw new ApiError(`${route}: answer is not JSON (${(e as Error).message})`, res.status, route);
    }
  }

  runs(signal?: AbortSignal): Promise<RunsResponse> {
    return this.json("runs", this.url("runs"), signal);
  }

  /** One look at trace/meta: the metadata, or the ingest progress while the server reads the files. */
  async traceMeta(subject: Subject, signal?: AbortSignal): Promise<MetaAnswer> {
    const res = await this.request("trace/meta", this.url("trace/meta", subject), signal);
    const body = (await res.json()) as TraceMeta | IngestProgress;
    if (res.status === 202) return { ...(body as IngestProgress), state: "ingesting" };
    return { state: "ready", meta: body as TraceMeta };
  }

  /** Polls trace/meta while it answers 202, reporting progress, until the metadata is ready. */
  async waitForTraceMeta(
    subject: Subject,
    onProgress: (p: IngestProgress) => void,
    signal?: AbortSignal,
    pollMs = 400,
  ): Promise<TraceMeta> {
    let delay = pollMs;
    for (;;) {
      const answer = await this.traceMeta(subject, signal);
      if (answer.state === "ready") return answer.meta;
      onProgress(answer);
      await sleep(delay, signal);
      delay = Math.min(delay * 1.5, 2000);
    }
  }

  /** One tile of the trace's `version` (`TraceMeta.version`, in the URL as `v=` so the browser's
   * cache never mixes versions). A 202 (the trace is being read again) is an `ApiError` like the
   * 409 of a gone version: `isStaleTile` tells the view to read trace/meta again. */
  async tile(subject: Subject, level: number, index: number, signal?: AbortSignal, version?: string): Promise<Tile> {
    const route = "trace/tile";
    const res = await this.request(route, this.url(route, subject, { level, index, v: version || undefined }), signal);
    if (res.status === 202) {
      await res.body?.cancel();
      throw new ApiError(`${route}: the trace is being read again (HTTP 202)`, 202, route);
    }
    return decodeTile(await res.arrayBuffer(), `trace/tile level ${level} index ${index}`);
  }

  event(subject: Subject, id: number, signal?: AbortSignal): Promise<EventDetails> {
    return this.json("trace/event", this.url("trace/event", subject, { id }), signal);
  }

  /** `limit` matches in time order from the `offset`-th, and the total count over the whole trace.
   * `searcher` (`newSearcherId`) names the viewer: its newer search cancels this one, which then
   * fails with 409. A search refused as busy (503) is asked again after the server's `Retry-After`,
   * `SEARCH_BUSY_RETRIES` times, then fails with `SEARCH_BUSY_MESSAGE`. `filters`: `regex` (the query
   * is a regular expression over names) and `arg` (`key:value` argument filters). */
  async search(
    subject: Subject,
    query: string,
    limit: number,
    offset = 0,
    signal?: AbortSignal,
    searcher?: string,
    filters: { regex?: boolean; arg?: string } = {},
  ): Promise<SearchResponse> {
    const route = "trace/search";
    const { regex, arg } = filters;
    const url = this.url(route, subject, { q: query, limit, offset, client: searcher || undefined, regex: regex ? 1 : undefined, arg: arg || undefined });
    for (let retries = 0; ; retries++) {
      try {
        return await this.json<SearchResponse>(route, url, signal);
      } catch (e) {
        const busy = e instanceof ApiError && e.status === 503 && e.retryAfterS !== null && e.retryAfterS <= SEARCH_BUSY_MAX_WAIT_S;
        if (!busy) throw e;
        if (retries >= SEARCH_BUSY_RETRIES) throw new ApiError(SEARCH_BUSY_MESSAGE, 503, route, e.retryAfterS);
        await sleep((e.retryAfterS ?? 0) * 1000, signal);
      }
    }
  }

  /** Per-name statistics of every event overlapping [startNs, endNs) on the given tracks. */
  summaryRange(
    subject: Subject,
    startNs: number,
    endNs: number,
    tracks: number[],
    signal?: AbortSignal,
  ): Promise<SummaryResponse> {
    const params = { start: startNs, end: endNs, tracks: tracks.join(",") };
    return this.json("trace/summary", this.url("trace/summary", subject, params), signal);
  }

  /** Per-name statistics of the given events (global ids). */
  summaryIds(subject: Subject, ids: number[], signal?: AbortSignal): Promise<SummaryResponse> {
    return this.json("trace/summary", this.url("trace/summary", subject, { ids: ids.join(",") }), signal);
  }
}
