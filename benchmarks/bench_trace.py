"""Speed and memory of the trace engine end to end, through a real TensorBoard server.

Usage:
    python benchmarks/bench_trace.py [--json BIG.json] [--xplane BIG.xplane.pb]
        [--port 6110] [--screen-px 1600] [--searches 5] [--out results.json]

Inputs come from `benchmarks/make_big_json.py` (>= 3 M events, >= 1 GB) and
`benchmarks/make_big_xplane.py` (JAX XPlane, >= 300 k events); each is linked into a scratch logdir
with an empty cache directory. For each input the script starts `tensorboard --logdir` (this
repository's venv, `--load_fast=false`, one process) and measures, as the browser would ask:

- cold first view: from the first `trace/meta` (polled every 50 ms while it answers 202) until every
  tile of the full-trace screen has arrived; ingest MB/s = file size / time until `trace/meta` is 200
  (child process parse + index + cache write, end to end);
- server RSS (VmRSS of the TensorBoard process, with its anonymous part and the mapped cache files)
  after that first view, and its peak (VmHWM);
- views: the full trace and windows of 1/4 … 1/16384 of it at seeded random places, each as a screen of
  `--screen-px` pixels at the level the frontend picks; per tile the HTTP latency on localhost (first
  request = computed; second = tile cache) and bytes per screen (gzip as sent, raw as decoded);
- whole-trace search: `trace/search` latency for a few queries;
- reopen from cache: a new server on the same cache, time until the full-trace screen is shown;
- engine only (in this process, no HTTP): p50/p95 of computing and encoding tiles of those views.

Timings on a shared 2-core machine are noisy; the script prints what it measured, no targets.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import math
import os
import pathlib
import random
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from typing import Any

from profscope import logdir as logdir_lib
from profscope.engine import service
from profscope.engine.lod import tiles

REPO = pathlib.Path(__file__).resolve().parent.parent
PYTHON = REPO / ".venv" / "bin" / "python"
ZOOMS = (1, 4, 32, 256, 2048, 16384)  # view = span / zoom
QUERIES = ("matmul", "cudaLaunchKernel", "ncclKernel", "Memcpy", "1234")


class Server:
    """A server process we start, with a persistent HTTP connection and its memory counters."""

    def __init__(
        self, argv: list[str], port: int, ready_path: str, log: pathlib.Path, cwd: str | None = None
    ) -> None:
        self.argv, self.port, self.ready_path, self.log, self.cwd = argv, port, ready_path, log, cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: http.client.HTTPConnection | None = None

    def start(self, timeout_s: float = 180.0) -> float:
        t0 = time.perf_counter()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.cwd)
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}; see {self.log}")
            try:
                if self.get(self.ready_path)["status"] == 200:
                    return time.perf_counter() - t0
            except OSError:
                self.conn = None
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not ready after {timeout_s} s; see {self.log}")
            time.sleep(0.2)

    def get(self, path: str, timeout_s: float = 600.0) -> dict[str, Any]:
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout_s)
        t0 = time.perf_counter()
        try:
            self.conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
            res = self.conn.getresponse()
            wire = res.read()
        except (OSError, http.client.HTTPException):
            self.conn = None
            raise
        seconds = time.perf_counter() - t0
        body = gzip.decompress(wire) if res.getheader("Content-Encoding") == "gzip" else wire
        return {"status": res.status, "body": body, "wire_bytes": len(wire), "seconds": seconds}

    def memory_mb(self) -> dict[str, float]:
        """VmRSS, VmHWM and the anonymous and file-backed parts of VmRSS (RssAnon, RssFile: pages
        of the memory-mapped cache, which the kernel can drop) of the server process (MB)."""
        assert self.proc is not None
        out = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                    out[key] = int(value.split()[0]) / 1024
        return out

    def stop(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def from_env(value: str | None, variable: str, flag: str, what: str) -> str:
    """`value` (a command-line flag), else the environment variable `variable`; exits naming both
    and `what` the value should be when neither is set."""
    found = value or os.environ.get(variable)
    if not found:
        raise SystemExit(f"{flag} is not given and ${variable} is not set: {what}")
    return found


def link_into(src: pathlib.Path, dst: pathlib.Path) -> None:
    """Hard link (no copy of a 1 GB file) when on the same filesystem, else copy."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def profscope_server(logdir: pathlib.Path, cache: pathlib.Path, port: int, log: pathlib.Path) -> Server:
    argv = [
        str(PYTHON),
        "-m",
        "tensorboard.main",
        "--logdir",
        str(logdir),
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
        "--load_fast=false",
        "--profscope_cache_dir",
        str(cache),
    ]
    return Server(argv, port, "/data/plugin/profscope/runs", log)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary_ms(seconds: list[float]) -> dict[str, float]:
    """p50, p95 and max of durations given in seconds, in ms (how every latency is reported)."""
    return {
        "p50": percentile(seconds, 50) * 1e3,
        "p95": percentile(seconds, 95) * 1e3,
        "max": max(seconds) * 1e3,
    }


class ProfscopeClient:
    """The requests the trace view makes, for one subject."""

    def __init__(self, server: Server, run: str, session: str, host: str) -> None:
        self.server = server
        self.subject = {"run": run, "session": session, "host": host}

    def path(self, route: str, **params: Any) -> str:
        return f"/data/plugin/profscope/{route}?" + urllib.parse.urlencode({**self.subject, **params})

    def meta(self, poll_s: float = 0.05, timeout_s: float = 1800.0) -> tuple[dict[str, Any], float]:
        t0 = time.perf_counter()
        while True:
            res = self.server.get(self.path("trace/meta"))
            if res["status"] == 200:
                return json.loads(res["body"]), time.perf_counter() - t0
            if res["status"] != 202:
                raise RuntimeError(f"trace/meta answered {res['status']}: {res['body'][:500]!r}")
            if time.perf_counter() - t0 > timeout_s:
                raise RuntimeError("ingest did not finish")
            time.sleep(poll_s)

    def tile(self, level: int, index: int) -> dict[str, Any]:
        res = self.server.get(self.path("trace/tile", level=level, index=index))
        if res["status"] != 200:
            raise RuntimeError(f"trace/tile {level}/{index} answered {res['status']}: {res['body'][:300]!r}")
        return res


def level_for(meta: dict[str, Any], ns_per_px: float) -> int:
    """The frontend's choice (views/trace/levels.ts): coarsest level whose pixel <= a screen pixel."""
    tile = meta["tile"]
    z = math.floor(math.log2(ns_per_px * tile["tile_px"] / tile["base_ns"]) + 1e-9)
    return max(0, min(tile["max_level"], z))


def screen_tiles(
    meta: dict[str, Any], start_ns: float, end_ns: float, screen_px: int
) -> tuple[int, list[int]]:
    level = level_for(meta, (end_ns - start_ns) / screen_px)
    width = meta["tile"]["base_ns"] * 2**level
    span_end = meta["span_ns"][1]
    last_index = max(0, math.ceil(span_end / width) - 1)
    first = max(0, min(last_index, math.floor(max(0.0, start_ns) / width)))
    last = max(first, min(last_index, math.ceil(end_ns / width) - 1))
    return level, list(range(first, last + 1))


def views(meta: dict[str, Any], seed: int, per_zoom: int = 3) -> list[tuple[int, float, float]]:
    """(zoom, start_ns, end_ns): the full trace, then `per_zoom` random windows per zoom factor."""
    rng = random.Random(seed)
    span = meta["span_ns"][1]
    out = [(1, 0.0, span)]
    for zoom in ZOOMS[1:]:
        width = span / zoom
        for _ in range(per_zoom):
            start = rng.uniform(0, span - width)
            out.append((zoom, start, start + width))
    return out


def measure_views(client: ProfscopeClient, meta: dict[str, Any], screen_px: int, seed: int) -> dict[str, Any]:
    rows = []
    cold, warm = [], []
    for zoom, start, end in views(meta, seed):
        level, indices = screen_tiles(meta, start, end, screen_px)
        wire = raw = 0
        for index in indices:
            first = client.tile(level, index)
            again = client.tile(level, index)
            cold.append(first["seconds"])
            warm.append(again["seconds"])
            wire += first["wire_bytes"]
            raw += len(first["body"])
        rows.append(
            {"zoom": zoom, "level": level, "tiles": len(indices), "wire_kb": wire / 1e3, "raw_kb": raw / 1e3}
        )
    by_zoom: dict[int, dict[str, float]] = {}
    for row in rows:
        agg = by_zoom.setdefault(
            row["zoom"], {"level": row["level"], "screens": 0, "wire_kb": 0.0, "raw_kb": 0.0}
        )
        agg["screens"] += 1
        agg["wire_kb"] = max(agg["wire_kb"], row["wire_kb"])
        agg["raw_kb"] = max(agg["raw_kb"], row["raw_kb"])
    return {
        "tile_ms_first": summary_ms(cold),
        "tile_ms_cached": summary_ms(warm),
        "tiles_requested": len(cold),
        "max_screen_kb_by_zoom": by_zoom,
    }


def first_view(client: ProfscopeClient, screen_px: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    meta, meta_s = client.meta()
    level, indices = screen_tiles(meta, 0.0, meta["span_ns"][1], screen_px)
    wire = 0
    for index in indices:
        wire += client.tile(level, index)["wire_bytes"]
    return {
        "meta": meta,
        "meta_s": meta_s,
        "first_view_s": time.perf_counter() - t0,
        "first_screen_kb": wire / 1e3,
    }


def engine_only(
    logdir: pathlib.Path,
    cache: pathlib.Path,
    run: str,
    session: str,
    host: str,
    meta: dict[str, Any],
    screen_px: int,
    seed: int,
) -> dict[str, Any]:
    """Tile compute + encode time in this process, on the cache the server wrote (no HTTP)."""
    served = logdir_lib.Logdir(str(logdir))
    hosts = [h for h in served.listing().run(run).session(session).hosts if h.name == host]
    trace_service = service.TraceService(str(cache))
    timeline = trace_service.open("bench", service.host_sources(hosts, served.fs), wait_s=60)
    times = []
    for _, start, end in views(meta, seed):
        level, indices = screen_tiles(meta, start, end, screen_px)
        for index in indices:
            t0 = time.perf_counter()
            tiles.encode(timeline.tile(level, index))
            times.append(time.perf_counter() - t0)
    search_s = {}
    for q in QUERIES:
        t0 = time.perf_counter()
        total = timeline.search(q, 100).total
        search_s[q] = {"seconds": time.perf_counter() - t0, "total": total}
    trace_service.manager.close()
    return {
        "tile_ms": summary_ms(times),
        "search": search_s,
    }


def bench_one(
    kind: str, source: pathlib.Path, work: pathlib.Path, port: int, screen_px: int, seed: int
) -> dict[str, Any]:
    logdir = work / f"logdir_{kind}"
    cache = work / f"cache_{kind}"
    if kind == "json":
        run, session, host = "big_json", "pytorch", "big"
        link_into(source, logdir / run / "big.pt.trace.json")
    else:
        run, session, host = "big_xplane", "session1", "host0"
        link_into(source, logdir / run / "plugins" / "profile" / session / "host0.xplane.pb")
    size = source.stat().st_size
    log = work / f"server_{kind}.log"
    server = profscope_server(logdir, cache, port, log)
    out: dict[str, Any] = {"input": str(source), "bytes": size}
    try:
        out["server_start_s"] = server.start()
        server.get("/data/plugins_listing")  # what the browser asks first when TensorBoard opens
        time.sleep(2.0)  # the server is up and idle before the user opens the trace
        client = ProfscopeClient(server, run, session, host)
        first = first_view(client, screen_px)
        meta = first.pop("meta")
        out.update(first)
        out["events"] = meta["num_events"]
        out["ingest_mb_s"] = size / 1e6 / first["meta_s"]
        out["memory_after_first_view_mb"] = server.memory_mb()
        out["views"] = measure_views(client, meta, screen_px, seed)
        searches = {}
        for q in QUERIES:
            res = server.get(client.path("trace/search", q=q, limit=100))
            searches[q] = {"seconds": res["seconds"], "total": json.loads(res["body"])["total"]}
        out["search"] = searches
        out["memory_after_all_mb"] = server.memory_mb()
    finally:
        server.stop()
    # Reopen: a new server process, same cache.
    server = profscope_server(logdir, cache, port, log)
    try:
        server.start()
        server.get("/data/plugins_listing")
        time.sleep(2.0)
        again = first_view(ProfscopeClient(server, run, session, host), screen_px)
        out["reopen_first_view_s"] = again["first_view_s"]
        out["memory_after_reopen_mb"] = server.memory_mb()
    finally:
        server.stop()
    out["engine_only"] = engine_only(logdir, cache, run, session, host, meta, screen_px, seed)
    return out


def report(results: dict[str, Any]) -> str:
    lines = []
    for kind, r in results.items():
        v = r["views"]
        lines.append(f"## {kind}: {r['input']} ({r['bytes'] / 1e6:.1f} MB, {r['events']:,} events)")
        lines.append(
            f"- ingest end to end (child parse + index + cache write): {r['meta_s']:.2f} s = {r['ingest_mb_s']:.1f} MB/s"
        )
        lines.append(
            f"- cold first view (trace/meta polled + full-trace screen of tiles): {r['first_view_s']:.2f} s, first screen {r['first_screen_kb']:.0f} KB sent"
        )
        lines.append(f"- reopen from cache (new server): {r['reopen_first_view_s']:.3f} s")
        lines.append(
            f"- tile over HTTP: first request p50 {v['tile_ms_first']['p50']:.1f} ms, p95 {v['tile_ms_first']['p95']:.1f} ms, "
            f"max {v['tile_ms_first']['max']:.1f} ms; cached p95 {v['tile_ms_cached']['p95']:.1f} ms ({v['tiles_requested']} tiles)"
        )
        e = r["engine_only"]["tile_ms"]
        lines.append(
            f"- tile compute + encode in process: p50 {e['p50']:.1f} ms, p95 {e['p95']:.1f} ms, max {e['max']:.1f} ms"
        )
        for zoom, agg in sorted(v["max_screen_kb_by_zoom"].items(), key=lambda kv: int(kv[0])):
            lines.append(
                f"  - view 1/{zoom} of the span (level {agg['level']}): largest screen {agg['wire_kb']:.0f} KB sent, {agg['raw_kb']:.0f} KB decoded"
            )
        for q, s in r["search"].items():
            lines.append(f"- search {q!r}: {s['seconds'] * 1e3:.0f} ms over HTTP, {s['total']:,} matches")
        m = r["memory_after_first_view_mb"]
        lines.append(
            f"- server RSS after first view {_rss(m)} (peak {m['VmHWM']:.0f} MB); after all views and searches "
            f"{_rss(r['memory_after_all_mb'])}; after reopen + first view {_rss(r['memory_after_reopen_mb'])}"
        )
    return "\n".join(lines)


def _rss(m: dict[str, float]) -> str:
    return f"{m['VmRSS']:.0f} MB (anonymous {m['RssAnon']:.0f}, mapped files {m['RssFile']:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=pathlib.Path, help="big Chrome/Kineto JSON (make_big_json.py)")
    parser.add_argument("--xplane", type=pathlib.Path, help="big XPlane (make_big_xplane.py)")
    parser.add_argument("--port", type=int, default=6110)
    parser.add_argument("--screen-px", type=int, default=1600, help="timeline width of the screen in pixels")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", type=pathlib.Path, help="scratch folder (default: a temp dir, removed)")
    parser.add_argument("--out", type=pathlib.Path, help="also write the numbers as JSON here")
    args = parser.parse_args()
    if not args.json and not args.xplane:
        parser.error("give --json and/or --xplane")
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="bench_trace_"))
    results = {}
    try:
        for kind, source in (("xplane", args.xplane), ("json", args.json)):
            if source:
                results[kind] = bench_one(kind, source.resolve(), work, args.port, args.screen_px, args.seed)
                print(report({kind: results[kind]}), flush=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
