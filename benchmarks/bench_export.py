"""Speed, size and server memory of `export` (gzipped Chrome trace JSON), through a real server.

Usage:
    python benchmarks/bench_export.py --json BIG.json [--work DIR] [--port 6112] [--out F]

`--json` (required) comes from `benchmarks/make_big_json.py` (>= 3 M events). It is linked into a
scratch logdir under `--work` (default `~/.cache/profscope-bench-export`; a hard link on the same
filesystem, else a copy; kept, so its cache is reused by the next run: the first run ingests, later
ones open the cache). The script starts `tensorboard` (this repository's venv, one process), waits for
`trace/meta`, then for the whole trace, plain and redacted (`redact=1`):

- `export/preview`: seconds (it runs the redaction over every name and args record);
- `export`: seconds until the last byte, bytes sent (the .json.gz), the JSON's size once inflated,
  and the events it holds (`"ph":` members counted in the inflated stream, without parsing it);
- the server's resident memory (VmRSS) before, its highest value sampled every 50 ms during the
  export, and VmHWM after; the same for its anonymous part (RssAnon: Python objects and buffers),
  the part that says whether the export holds the document in memory (the rest is file-backed:
  the cache's memory-mapped columns the export reads, pages the kernel can drop).

Timings on a shared 2-core machine are noisy; the script prints what it measured, no targets.
"""

from __future__ import annotations

import argparse
import http.client
import json
import pathlib
import sys
import threading
import time
import urllib.parse
import zlib
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_trace import Server, link_into, profscope_server  # noqa: E402

RUN, SESSION, HOST = "big", "pytorch", "big"
READ_BYTES = 1 << 20


def memory_mb(server: Server) -> dict[str, float]:
    """VmRSS, VmHWM and the resident memory's anonymous and file-backed parts (MB)."""
    assert server.proc is not None
    out = {}
    with open(f"/proc/{server.proc.pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) / 1024
    return out


class RssSampler(threading.Thread):
    """Highest VmRSS and RssAnon (MB) of a process, sampled until stopped."""

    def __init__(self, server: Server, every_s: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.server, self.every_s = server, every_s
        self.peak = {"VmRSS": 0.0, "RssAnon": 0.0}
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            now = memory_mb(self.server)
            for key in self.peak:
                self.peak[key] = max(self.peak[key], now[key])
            self._done.wait(self.every_s)

    def stop(self) -> dict[str, float]:
        self._done.set()
        self.join()
        return self.peak


def path(route: str, **params: Any) -> str:
    query = {"run": RUN, "session": SESSION, "host": HOST, **params}
    return f"/data/plugin/profscope/{route}?" + urllib.parse.urlencode(query)


def wait_for_meta(server: Server, timeout_s: float = 1800.0) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    while True:
        res = server.get(path("trace/meta"))
        if res["status"] == 200:
            return json.loads(res["body"]), time.perf_counter() - t0
        if res["status"] != 202 or time.perf_counter() - t0 > timeout_s:
            raise RuntimeError(f"trace/meta answered {res['status']}: {res['body'][:300]!r}")
        time.sleep(0.2)


def stream_export(port: int, route: str) -> dict[str, Any]:
    """GET the export, inflating and counting it as it arrives (never holding it whole)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1800)
    t0 = time.perf_counter()
    conn.request("GET", route)
    res = conn.getresponse()
    if res.status != 200:
        raise RuntimeError(f"export answered {res.status}: {res.read()[:300]!r}")
    inflate = zlib.decompressobj(31)
    sent = inflated = events = 0
    first_byte_s = None
    tail = b""
    while True:
        piece = res.read(READ_BYTES)
        if not piece:
            break
        if first_byte_s is None:
            first_byte_s = time.perf_counter() - t0
        sent += len(piece)
        text = tail + inflate.decompress(piece)
        inflated += len(text) - len(tail)
        events += text.count(b'"ph":')
        tail = text[-4:]
        events -= tail.count(b'"ph":')
    events += tail.count(b'"ph":')
    conn.close()
    return {
        "seconds": time.perf_counter() - t0,
        "first_byte_seconds": first_byte_s,
        "gzip_mb": sent / 1e6,
        "json_mb": inflated / 1e6,
        "disposition": res.getheader("Content-Disposition"),
        "ph_members": events,
    }


def measure(server: Server, port: int, redact: bool) -> dict[str, Any]:
    flags = {"redact": 1} if redact else {}
    t0 = time.perf_counter()
    preview = server.get(path("export/preview", **flags))
    preview_s = time.perf_counter() - t0
    counts = json.loads(preview["body"])
    before = memory_mb(server)
    sampler = RssSampler(server)
    sampler.start()
    got = stream_export(port, path("export", **flags))
    peak = sampler.stop()
    after = memory_mb(server)
    return {
        "redact": redact,
        "preview_seconds": preview_s,
        "preview": {k: counts[k] for k in ("events", "flows", "counter_samples")},
        "redactions": counts["redactions"],
        **got,
        "rss_before_mb": before["VmRSS"],
        "rss_peak_during_mb": peak["VmRSS"],
        "rss_growth_mb": peak["VmRSS"] - before["VmRSS"],
        "anon_before_mb": before["RssAnon"],
        "anon_peak_during_mb": peak["RssAnon"],
        "anon_growth_mb": peak["RssAnon"] - before["RssAnon"],
        "file_backed_after_mb": after["RssFile"],
        "hwm_before_mb": before["VmHWM"],
        "hwm_after_mb": after["VmHWM"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--json", type=pathlib.Path, required=True, help="a big trace from benchmarks/make_big_json.py"
    )
    parser.add_argument(
        "--work", type=pathlib.Path, default=pathlib.Path.home() / ".cache" / "profscope-bench-export"
    )
    parser.add_argument("--port", type=int, default=6112)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    logdir, cache = args.work / "logdir", args.work / "cache"
    trace = logdir / RUN / f"{HOST}.pt.trace.json"
    if not trace.exists():
        link_into(args.json, trace)
    server = profscope_server(logdir, cache, args.port, args.work / "tensorboard.log")
    results: dict[str, Any] = {"input": str(args.json), "input_mb": args.json.stat().st_size / 1e6}
    try:
        server.start()
        meta, ingest_s = wait_for_meta(server)
        results.update(num_events=meta["num_events"], num_flows=meta["num_flows"], meta_seconds=ingest_s)
        results["server_after_meta_mb"] = memory_mb(server)
        results["runs"] = []
        for redact in (False, True):
            results["runs"].append(measure(server, args.port, redact))
            print(json.dumps(results["runs"][-1]), file=sys.stderr, flush=True)
    finally:
        server.stop()
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
