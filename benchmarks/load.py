"""Load on one TensorBoard: 16 concurrent clients on the routes a team uses, for a bounded time.

Usage:
    python benchmarks/load.py [--seconds 60] [--rounds 3] [--floor-seconds 5] [--clients 16]
        [--max-requests 200000] [--extra FILE ...] [--seed 0] [--control]
    # searches that take 0.1 s alone, as in issue 41: the larger real captures of tests/data too
    python benchmarks/load.py --seconds 20 --extra tests/data/xplane/gpu_8x_tf_training.xplane.pb \
        tests/data/xplane/tpu_v6e_inference.xplane.pb tests/data/kineto/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz

Builds a logdir of the real traces and logs in tests/data (every layout of tests/data/layouts and
the runs of tests/data/trace; `--extra` adds more files, e.g. the 378 k-event JAX XPlane, each as
its own run), starts `tensorboard` on 127.0.0.1 only, with an empty cache, waits until every trace
is ingested. Then the floors: one client asking only for tiles, then only event details, then only
searches, `--floor-seconds` each. Then `--rounds` rounds of `--clients` threads with one keep-alive
connection each for `--seconds` or until `--max-requests` answers, whichever comes first. Each
request is drawn at random from the mix: tiles at every level a view asks for, searches
(one-letter and word queries, first pages and deep ones), event details, `hlo` for events that are
XLA ops, and the tools' routes of each host (`overview`, `roofline`, `xla/report`). Printed per
round: throughput, per route count, p50 / p99 / max latency, errors (any answer but 200 or 503)
and 503s (searches refused while too many wait), and the server's resident memory every few
seconds (and of it the anonymous part: the rest is pages of the memory-mapped cache), with its
growth after the first 10 s and over the second half of the round (flat after warm-up is the
target). With `--control`, each round is followed by one of the same mix less the searches, and
the tile p99 of both is compared: what the searches cost the tiles. At the end, per route, the
median p50 and p99 of the rounds with their range, and the median p99 as a multiple of the
route's p99 alone. The server stops with the script. Exit status 1 on any error.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BASE = "/data/plugin/profscope"
QUERIES = ("a", "e", "x", "_", "1", "conv", "aten::", "cudaLaunchKernel", "nccl", "fusion", "zzz-none")
WARM_UP_S = 10.0
# Routes also measured alone (one client, nothing else asked) before the rounds: their floor.
FLOOR_ROUTES = ("trace/tile", "trace/event", "trace/search")
# Share of the requests per route (of the routes the logdir has): what a team looking at traces does.
WEIGHTS = {
    "trace/tile": 35, "trace/search": 15, "trace/event": 20, "hlo": 5,
    "overview": 9, "roofline": 8, "xla/report": 8,
}  # fmt: skip
# The control rounds (`--control`): the same mix less the searches, to tell what they cost the rest.
CONTROL_WEIGHTS = {route: weight for route, weight in WEIGHTS.items() if route != "trace/search"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Connection:
    """One client's keep-alive connection to the server on loopback."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn: http.client.HTTPConnection | None = None

    def get(self, path: str, timeout_s: float = 120.0) -> tuple[int, bytes]:
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout_s)
        try:
            self.conn.request("GET", path)
            response = self.conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = None
            raise


def build_logdir(root: Path, extra: list[str]) -> Path:
    logdir = root / "logdir"
    shutil.copytree(REPO / "tests" / "data" / "layouts" / "logdir", logdir)
    for run in (REPO / "tests" / "data" / "trace" / "logdir").iterdir():
        shutil.copytree(run, logdir / f"trace_{run.name}")
    for i, path in enumerate(extra):
        target = logdir / f"extra{i}" / Path(path).name
        target.parent.mkdir(parents=True)
        try:
            os.link(path, target)
        except OSError:
            shutil.copyfile(path, target)
    return logdir


def start_server(logdir: Path, cache: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--port", str(port),
        "--host", "127.0.0.1", "--load_fast=false", "--profscope_cache_dir", str(cache),
    ]  # fmt: skip
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    conn = Connection(port)
    deadline = time.monotonic() + 180
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"tensorboard exited with {proc.returncode}; see {log}")
        with contextlib.suppress(OSError, http.client.HTTPException):
            if conn.get(f"{BASE}/runs")[0] == 200:
                return proc
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"tensorboard not ready after 180 s; see {log}")
        time.sleep(0.3)


def rss_mb(pid: int) -> tuple[float, float]:
    """(resident, of which anonymous) MB of process `pid`: the rest is pages of files, mostly the
    memory-mapped cache columns, which the kernel can drop and other processes share."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon"):
                fields[key] = int(value.split()[0]) / 1024
    return fields.get("VmRSS", math.nan), fields.get("RssAnon", math.nan)


def _query(subject: dict[str, str], **params: Any) -> str:
    return urllib.parse.urlencode({**subject, **params})


def request_mix(conn: Connection) -> list[tuple[str, str]]:
    """(route, path) of every request the clients draw from, after each trace is ingested."""
    runs = json.loads(conn.get(f"{BASE}/runs")[1])["runs"]
    mix: list[tuple[str, str]] = []
    for run in runs:
        for session in run["sessions"]:
            for host in session["hosts"]:
                subject = {"run": run["name"], "session": session["name"], "host": host["name"]}
                tools = host["tools"]
                if "trace" in tools:
                    mix += _trace_requests(conn, subject)
                for tool, route in (
                    ("overview", "overview"),
                    ("roofline", "roofline"),
                    ("xla", "xla/report"),
                ):
                    if tool in tools:
                        mix.append((route, f"{BASE}/{route}?{_query(subject)}"))
    return mix


def _trace_requests(conn: Connection, subject: dict[str, str]) -> list[tuple[str, str]]:
    while True:
        status, body = conn.get(f"{BASE}/trace/meta?{_query(subject)}")
        if status == 200:
            break
        if status != 202:
            raise SystemExit(f"trace/meta of {subject} answered {status}: {body[:300]!r}")
        time.sleep(0.2)
    meta = json.loads(body)
    tile = meta["tile"]
    out: list[tuple[str, str]] = []
    for level in range(tile["max_level"], max(-1, tile["max_level"] - 12), -1):
        width = tile["base_ns"] * 2**level
        count = max(1, math.ceil(meta["span_ns"][1] / width))
        for index in sorted({0, count // 2, count - 1}):
            out.append(("trace/tile", f"{BASE}/trace/tile?{_query(subject, level=level, index=index)}"))
    ids: list[int] = []
    for q in QUERIES:
        for limit, offset in ((100, 0), (1000, 0), (100, 5000)):
            out.append(
                ("trace/search", f"{BASE}/trace/search?{_query(subject, q=q, limit=limit, offset=offset)}")
            )
        status, body = conn.get(f"{BASE}/trace/search?{_query(subject, q=q, limit=50)}")
        if status == 200:
            ids += [m["id"] for m in json.loads(body)["matches"]]
    for event_id in sorted(set(ids))[:200]:
        out.append(("trace/event", f"{BASE}/trace/event?{_query(subject, id=event_id)}"))
        status, body = conn.get(f"{BASE}/trace/event?{_query(subject, id=event_id)}")
        if status == 200 and "program_id" in (json.loads(body).get("args") or {}):
            out.append(("hlo", f"{BASE}/hlo?{_query(subject, event=event_id)}"))
    return out


class Results:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, list[str]] = defaultdict(list)
        self.refused: dict[str, int] = defaultdict(int)
        self.count = 0


def client(
    port: int,
    mix: list[tuple[str, str]],
    weights: dict[str, int],
    seed: int,
    stop: float,
    limit: int,
    results: Results,
) -> None:
    """One client: requests drawn from `mix` by route `weights` until `stop` or `limit` answers.
    A 503 (a search refused while too many wait: the server sheds load) is counted apart from the
    errors, its latency under "<route> 503"."""
    rng = random.Random(seed)
    conn = Connection(port)
    by_route: dict[str, list[str]] = defaultdict(list)
    for route, path in mix:
        if weights.get(route):
            by_route[route].append(path)
    routes = sorted(by_route)
    chances = [weights[r] for r in routes]
    while time.monotonic() < stop:
        with results.lock:
            if results.count >= limit:
                return
            results.count += 1
        route = rng.choices(routes, chances)[0]
        path = rng.choice(by_route[route])
        started = time.perf_counter()
        refused = False
        try:
            status, body = conn.get(path)
            refused = status == 503
            problem = None if status == 200 or refused else f"{status}: {body[:200]!r}"
        except (OSError, http.client.HTTPException) as exc:
            problem = f"no answer: {exc}"
        took = time.perf_counter() - started
        with results.lock:
            results.latency[f"{route} 503" if refused else route].append(took)
            results.refused[route] += refused
            if problem is not None:
                results.errors[route].append(f"{path[:160]} -> {problem}")


def run_phase(
    proc: subprocess.Popen[bytes],
    port: int,
    mix: list[tuple[str, str]],
    weights: dict[str, int],
    clients: int,
    seconds: float,
    max_requests: int,
    seed: int,
) -> tuple[Results, float, list[tuple[float, float, float]]]:
    """`clients` threads for `seconds`: (results, elapsed s, (s, RSS MB, anonymous MB) samples)."""
    results = Results()
    stop = time.monotonic() + seconds
    threads = [
        threading.Thread(target=client, args=(port, mix, weights, seed + i, stop, max_requests, results))
        for i in range(clients)
    ]
    begun = time.monotonic()
    for t in threads:
        t.start()
    samples: list[tuple[float, float, float]] = []
    while any(t.is_alive() for t in threads):
        samples.append((time.monotonic() - begun, *rss_mb(proc.pid)))
        time.sleep(1.0)
    for t in threads:
        t.join()
    return results, time.monotonic() - begun, samples


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--floor-seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--max-requests", type=int, default=200_000, help="per round")
    parser.add_argument("--extra", nargs="*", default=[])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--control", action="store_true", help="after each round, one of the same mix less the searches"
    )
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="profscope-load-"))
    port = _free_port()
    proc = start_server(build_logdir(root, args.extra), root / "cache", port, root / "tensorboard.log")
    rounds: list[Results] = []
    control: list[Results] = []
    try:
        started = time.monotonic()
        mix = request_mix(Connection(port))
        hosts = {
            tuple(urllib.parse.parse_qs(p.split("?")[1])[k][0] for k in ("run", "session", "host"))
            for _, p in mix
        }
        print(f"{len(mix)} distinct requests on {len(hosts)} hosts; "
              f"every trace ingested in {time.monotonic() - started:.1f} s; server RSS {rss_mb(proc.pid)[0]:.0f} MB")  # fmt: skip
        floors = {}
        for route in FLOOR_ROUTES:
            floors[route], _, _ = run_phase(
                proc, port, mix, {route: 1}, 1, args.floor_seconds, args.max_requests, args.seed
            )
        for k in range(args.rounds):
            phases = [("", WEIGHTS, rounds)]
            if args.control:
                phases.append((" without searches", CONTROL_WEIGHTS, control))
            for label, weights, kept in phases:
                results, elapsed, samples = run_phase(
                    proc,
                    port,
                    mix,
                    weights,
                    args.clients,
                    args.seconds,
                    args.max_requests,
                    args.seed + 100 * k,
                )
                print(f"\nround {k + 1} of {args.rounds}{label}")
                _report(results, elapsed, samples, args.clients)
                kept.append(results)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(root, ignore_errors=True)
    _summary("", rounds, floors, args.clients)
    _summary(" without searches", control, floors, args.clients)
    if rounds and control:
        with_search = statistics.median(percentile(r.latency["trace/tile"], 99) for r in rounds)
        without = statistics.median(percentile(r.latency["trace/tile"], 99) for r in control)
        print(
            f"tile p99 with searches / without: {with_search * 1e3:.1f} / {without * 1e3:.1f} ms "
            f"= {with_search / without:.2f}x"
        )
    return 1 if any(found for results in rounds + control for found in results.errors.values()) else 0


def _report(
    results: Results, elapsed: float, samples: list[tuple[float, float, float]], clients: int
) -> None:
    total = sum(len(v) for v in results.latency.values())
    errors = sum(len(v) for v in results.errors.values())
    print(
        f"{total} requests in {elapsed:.1f} s from {clients} clients: {total / elapsed:.0f} requests/s, "
        f"{errors} errors, {sum(results.refused.values())} refused (503)"
    )
    print(f"{'route':<18} {'count':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>7} {'503':>6}")
    for route in sorted(results.latency):
        values = results.latency[route]
        print(
            f"{route:<18} {len(values):>7} {percentile(values, 50) * 1e3:>8.1f} {percentile(values, 99) * 1e3:>8.1f} "
            f"{max(values) * 1e3:>8.1f} {len(results.errors[route]):>7} {results.refused[route]:>6}"
        )
    for route, found in results.errors.items():
        for line in found[:3]:
            print(f"  error {route}: {line}")
    print(
        "server RSS (anonymous) MB by second: "
        + ", ".join(
            f"{t:.0f}s {mb:.0f} ({anon:.0f})" for t, mb, anon in samples[:: max(1, len(samples) // 12)]
        )
    )
    # The tile cache (128 MB) and the mapped columns' pages fill during the first minute: the
    # second half of a longer run says whether memory keeps growing.
    for label, since in (
        (f"after {WARM_UP_S:.0f} s of warm-up", WARM_UP_S),
        ("second half", samples[-1][0] / 2 if samples else 0.0),
    ):
        kept = [(mb, anon) for t, mb, anon in samples if t >= since]
        if kept:
            print(
                f"{label}: RSS {kept[0][0]:.0f} -> {kept[-1][0]:.0f} MB (peak {max(k[0] for k in kept):.0f}, "
                f"growth {kept[-1][0] - kept[0][0]:+.0f}), anonymous {kept[0][1]:.0f} -> {kept[-1][1]:.0f} MB "
                f"(growth {kept[-1][1] - kept[0][1]:+.0f})"
            )


def _summary(label: str, rounds: list[Results], floors: dict[str, Results], clients: int) -> None:
    """Per route, the median of the rounds' p50 and p99 with their range, and for the floor routes
    the ratio of the median p99 under load to the p99 of one client asking for that route alone."""
    if not rounds:
        return
    print(f"\nsummary of {len(rounds)} rounds{label}, {clients} clients: median (min-max) over rounds, ms")
    print(f"{'route':<18} {'p50':<22} {'p99':<26} {'alone p50':>9} {'alone p99':>9} {'p99 ratio':>9}")
    for route in sorted({r for results in rounds for r in results.latency}):
        per_round = [results.latency[route] for results in rounds if results.latency[route]]
        p50 = [percentile(v, 50) * 1e3 for v in per_round]
        p99 = [percentile(v, 99) * 1e3 for v in per_round]
        line = (
            f"{route:<18} {f'{statistics.median(p50):.1f} ({min(p50):.1f}-{max(p50):.1f})':<22} "
            f"{f'{statistics.median(p99):.1f} ({min(p99):.1f}-{max(p99):.1f})':<26}"
        )
        alone = floors.get(route)
        if alone is not None and alone.latency[route]:
            floor_p50 = percentile(alone.latency[route], 50) * 1e3
            floor_p99 = percentile(alone.latency[route], 99) * 1e3
            line += f" {floor_p50:>9.1f} {floor_p99:>9.1f} {statistics.median(p99) / floor_p99:>8.1f}x"
        print(line)


if __name__ == "__main__":
    sys.exit(main())
