import { describe, expect, it } from "vitest";
import { MockApi } from "../../test/mock/api.ts";
import { makeTrace } from "../../test/mock/trace.ts";
import { ApiError, isStaleTile, newSearcherId, pluginBaseFrom, ProfscopeClient, SEARCH_BUSY_MESSAGE, SEARCH_BUSY_RETRIES } from "./client.ts";

const BASE = "http://tb.local/data/plugin/profscope/";
const subject = { run: "resnet", session: "2024_01_01_00_00_00", hosts: ["worker0", "worker1"] };

describe("ProfscopeClient", () => {
  it("derives the plugin base from the loader or from a chunk in static/", () => {
    expect(pluginBaseFrom("http://tb.local/data/plugin/profscope/index.js")).toBe(BASE);
    expect(pluginBaseFrom("http://tb.local/data/plugin/profscope/static/app.js")).toBe(BASE);
    expect(pluginBaseFrom("http://tb.local/prefix/data/plugin/profscope/static/chunk-X.js")).toBe(
      "http://tb.local/prefix/data/plugin/profscope/",
    );
  });

  it("names the subject with run, session and a comma-separated host list", () => {
    const url = new URL(new ProfscopeClient(BASE).url("trace/tile", subject, { level: 3, index: 9 }));
    expect(url.pathname).toBe("/data/plugin/profscope/trace/tile");
    expect(url.searchParams.get("host")).toBe("worker0,worker1");
    expect(url.searchParams.get("level")).toBe("3");
  });

  it("polls trace/meta while it answers 202 and reports progress", async () => {
    const api = new MockApi(makeTrace(2, 3), { ingestPolls: 2 });
    const client = new ProfscopeClient(BASE, api.fetch);
    const seen: number[] = [];
    const meta = await client.waitForTraceMeta(subject, (p) => seen.push(p.bytes_done), undefined, 1);
    expect(seen).toEqual([100, 200]);
    expect(meta.tracks.length).toBe(4);
  });

  it("decodes tiles and surfaces the server's error text", async () => {
    const api = new MockApi(makeTrace(2, 3));
    const client = new ProfscopeClient(BASE, api.fetch);
    const tile = await client.tile(subject, api.trace.meta.tile.max_level, 0);
    expect(tile.events.n).toBeGreaterThan(0);
    await expect(client.tile({ ...subject, run: "missing" }, 0, 0)).rejects.toThrow(
      /trace\/tile: Not found: no run named 'missing' \(HTTP 404\)/,
    );
    await expect(client.tile(subject, 99, 0)).rejects.toBeInstanceOf(ApiError);
  });

  it("names the trace's version in tile URLs, and takes 202 and 409 for a version that is gone", async () => {
    const api = new MockApi(makeTrace(2, 3));
    const client = new ProfscopeClient(BASE, api.fetch);
    await client.tile(subject, 0, 0, undefined, "3f2a9c");
    expect(new URL(api.requests.at(-1) as string, BASE).searchParams.get("v")).toBe("3f2a9c");
    await client.tile(subject, 0, 0);
    expect(new URL(api.requests.at(-1) as string, BASE).searchParams.has("v")).toBe(false);
    for (const status of [202, 404, 409]) {
      const answering = new ProfscopeClient(BASE, async () => new Response("gone", { status }));
      const error = await answering.tile(subject, 0, 0, undefined, "old").catch((e: unknown) => e);
      expect(isStaleTile(error), String(status)).toBe(true);
    }
    const badRequest = await client.tile(subject, 99, 0, undefined, "3f2a9c").catch((e: unknown) => e);
    expect(isStaleTile(badRequest)).toBe(false);
  });

  it("sends the viewer's searcher id and retries a busy search after Retry-After, then says so", async () => {
    const api = new MockApi(makeTrace(2, 3));
    const asked: string[] = [];
    let busyAnswers = 2;
    const fetchLike = async (input: string, init?: RequestInit) => {
      asked.push(input);
      if (busyAnswers-- > 0) return new Response("busy", { status: 503, headers: { "Retry-After": "0" } });
      return api.fetch(input, init);
    };
    const client = new ProfscopeClient(BASE, fetchLike);
    const searcher = newSearcherId();
    expect(searcher).toMatch(/^[0-9a-f]{16}$/);
    expect(newSearcherId()).not.toBe(searcher);
    const resp = await client.search(subject, "sgemm", 10, 0, undefined, searcher);
    expect(resp.total).toBeGreaterThan(0);
    expect(asked).toHaveLength(3);
    expect(asked.every((url) => new URL(url).searchParams.get("client") === searcher)).toBe(true);

    busyAnswers = Infinity;
    asked.length = 0;
    await expect(client.search(subject, "sgemm", 10, 0, undefined, searcher)).rejects.toThrow(SEARCH_BUSY_MESSAGE);
    expect(asked).toHaveLength(1 + SEARCH_BUSY_RETRIES);
  });

  it("waits the Retry-After of a busy search, and never retries a 503 of a failed ingest", async () => {
    const delays: number[] = [];
    let last = Date.now();
    let answers = 0;
    const client = new ProfscopeClient(BASE, async () => {
      const now = Date.now();
      delays.push(now - last);
      last = now;
      const retryAfter = answers++ === 0 ? "1" : "60";
      return new Response("no", { status: 503, headers: { "Retry-After": retryAfter } });
    });
    await expect(client.search(subject, "x", 10)).rejects.toThrow(/HTTP 503/);
    expect(delays).toHaveLength(2);
    expect(delays[1]).toBeGreaterThanOrEqual(950);
  });

  it("reports an unreachable server as an ApiError", async () => {
    const client = new ProfscopeClient(BASE, () => Promise.reject(new TypeError("Failed to fetch")));
    await expect(client.runs()).rejects.toThrow(/runs: the server did not answer \(Failed to fetch\)/);
  });

  it("asks for summaries by range and tracks, or by ids", async () => {
    const api = new MockApi(makeTrace(2, 3));
    const client = new ProfscopeClient(BASE, api.fetch);
    const byRange = await client.summaryRange(subject, 0, api.trace.meta.span_ns[1], [2]);
    expect(byRange.rows.map((r) => r.name).sort()).toEqual(["implicit_convolve_sgemm", "volta_sgemm_128x64_nn"]);
    const byIds = await client.summaryIds(subject, [1, 2]);
    expect(byIds.num_events).toBe(2);
    expect(api.requests.at(-1)).toContain("ids=1%2C2");
  });
});

describe("ProfscopeClient while the server re-ingests", () => {
  it("repeats a data request that answers 202 until the data is there", async () => {
    const api = new MockApi(makeTrace(2, 3));
    let busy = 2;
    const fetch202 = async (input: string, init?: RequestInit) => {
      if (input.includes("trace/search") && busy-- > 0) {
        return new Response(JSON.stringify({ state: "ingesting", bytes_done: 1, bytes_total: 2 }), { status: 202 });
      }
      return api.fetch(input, init);
    };
    const client = new ProfscopeClient(BASE, fetch202);
    const resp = await client.search(subject, "sgemm", 10);
    expect(busy).toBe(-1);
    expect(resp.total).toBeGreaterThan(0);
  });
});
