"""Ingest fanned out on Dask: how a 32-host session scales with 1, 2 and 4 local workers, and how
soon an 8-host session shows its first merged view.

Usage:
    python benchmarks/bench_dask.py --xplane F [--hosts 32] [--workers 1,2,4] [--view-hosts 8]
        [--screen-px 1600] [--out results.json] [--local-only]

Both sessions are hard links of one XPlane (`--xplane`, required; benchmarks/README.md used the
378 k-event JAX CPU capture written by `benchmarks/make_big_xplane.py`) under `plugins/profile/<session>/host<i>.xplane.pb`
in a scratch logdir, so every host is its own source (own URL, own cache entry) and the page cache
holds the bytes once (the file is read once before timing).

1. Scaling: for each worker count, a fresh cache directory and a `LocalCluster` of that many
   worker processes (one thread each; its start is timed apart), then `fanout.ingest_files` of the
   session's files: wall time until every entry is written and checked, files/s, speed-up over one
   worker.
2. First merged view of `--view-hosts` hosts, in this process through the server's trace engine
   (`TraceService`, as `trace/meta` and `trace/tile` call it, without HTTP): polled every 50 ms
   with `partial=True`, the time until the first host is shown (the progressive view) and until all
   are, plus the tiles of the full-trace screen of the complete timeline. Three ways: the server's
   local child processes (no cluster), `--profscope_dask_scheduler` on a running `LocalCluster` of 2
   workers, and a cache built beforehand by `profscope ingest` (the time of that ingest is shown).

Before each timed phase the disk is synced (`settle`). Timings on a shared 2-core machine are noisy;
the script prints what it measured, no targets.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import shutil
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import fsspec
import msgspec

from bench_trace import screen_tiles
from profscope import logdir as logdir_lib
from profscope.engine import service
from profscope.engine.answers import Ingesting
from profscope.engine.ingest import fanout
from profscope.engine.ingest import manager as ingest
from profscope.engine.progressive import is_partial

SESSION = "2026_12_01_12_00_00"
POLL_S = 0.05


def settle() -> None:
    """Flush what earlier phases wrote (gigabytes of cache entries) before the next is timed, so
    that writing it back does not overlap the next phase."""
    os.sync()
    time.sleep(2.0)


def make_session(root: pathlib.Path, source: pathlib.Path, hosts: int) -> list[service.HostSource]:
    """A logdir of `hosts` hard links of `source` in one session; its hosts as the server opens them."""
    folder = root / "run" / "plugins" / "profile" / SESSION
    folder.mkdir(parents=True)
    for i in range(hosts):
        target = folder / f"host{i:03d}.xplane.pb"
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)
    listing = logdir_lib.discover(str(root))
    found = listing.runs[0].sessions[0].hosts
    return service.host_sources(found, fsspec.filesystem("file"))


def scaling(
    session: list[service.HostSource], workers: list[int], scratch: pathlib.Path
) -> list[dict[str, Any]]:
    files = [(h.label, h.source) for h in session]
    rows = []
    for n in workers:
        cache = scratch / f"cache-{n}w"
        settle()
        started = time.perf_counter()
        with fanout.cluster_client(workers=n) as client:
            client.wait_for_workers(n)
            ready = time.perf_counter()
            outcomes = fanout.ingest_files(client, files, str(cache))
            done = time.perf_counter()
        failed = [o.label for o in outcomes if not o.ok]
        if failed:
            raise RuntimeError(f"{len(failed)} files failed with {n} workers: {failed[:3]}")
        rows.append(
            {
                "workers": n,
                "cluster_start_s": round(ready - started, 2),
                "ingest_s": round(done - ready, 2),
                "files_per_s": round(len(files) / (done - ready), 2),
                "mean_task_s": round(sum(o.seconds for o in outcomes) / len(outcomes), 2),
            }
        )
        shutil.rmtree(cache, ignore_errors=True)
        print(f"  {n} workers: {rows[-1]}", flush=True)
    base = rows[0]["ingest_s"]
    for row in rows:
        row["speedup"] = round(base / row["ingest_s"], 2)
    return rows


def first_view(svc: service.TraceService, hosts: list[service.HostSource], screen_px: int) -> dict[str, Any]:
    """Poll the engine as the trace view polls `trace/meta`; then the tiles of the full-trace screen."""
    started = time.perf_counter()
    first_shown: float | None = None
    shown_hosts = 0
    while True:
        got = svc.open("bench", hosts, wait_s=0.0, partial=True)
        now = time.perf_counter() - started
        if not isinstance(got, Ingesting):
            if first_shown is None:
                first_shown, shown_hosts = now, len(got.hosts)
            if not is_partial(got):
                break
        time.sleep(POLL_S)
    complete = now
    meta = msgspec.to_builtins(got.meta())
    level, indices = screen_tiles(meta, 0.0, meta["span_ns"][1], screen_px)
    for index in indices:
        svc.tile(got, level, index)
    return {
        "first_host_shown_s": round(first_shown or complete, 2),
        "hosts_in_first_view": shown_hosts,
        "all_hosts_shown_s": round(complete, 2),
        "full_view_with_tiles_s": round(time.perf_counter() - started, 2),
        "events": meta["num_events"],
    }


@contextlib.contextmanager
def engine(cache: pathlib.Path, runner: Any = None) -> Iterator[service.TraceService]:
    manager = ingest.IngestManager(str(cache), runner=runner)
    try:
        yield service.TraceService(manager=manager)
    finally:
        manager.close()


def merged_views(
    hosts: list[service.HostSource], scratch: pathlib.Path, screen_px: int, local_only: bool = False
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    settle()
    with engine(scratch / "cache-local") as svc:
        time.sleep(1.0)  # let the template finish its imports, as on a server that has been up a while
        out["local child processes"] = first_view(svc, hosts, screen_px)
    print(f"  local: {out['local child processes']}", flush=True)
    if local_only:
        return out
    with fanout.cluster_client(workers=2) as client:
        client.wait_for_workers(2)
        address = client.scheduler.address
        runner = fanout.DaskRunner(address)
        settle()
        with engine(scratch / "cache-dask", runner) as svc:
            out["dask, 2 workers (server submits)"] = first_view(svc, hosts, screen_px)
        runner.close()
        print(f"  dask: {out['dask, 2 workers (server submits)']}", flush=True)
        settle()
        started = time.perf_counter()
        outcomes = fanout.ingest_files(
            client, [(h.label, h.source) for h in hosts], str(scratch / "cache-cli")
        )
        ingest_s = time.perf_counter() - started
        assert all(o.ok for o in outcomes)
    settle()
    with engine(scratch / "cache-cli") as svc:
        row = first_view(svc, hosts, screen_px)
    row["ingested_before_s"] = round(ingest_s, 2)
    out["built before by profscope ingest (2 workers)"] = row
    print(f"  prebuilt: {row}", flush=True)
    return out


def report(results: dict[str, Any]) -> str:
    lines = [f"hard links of {results['source']}, {results['events_per_host']} events each"]
    if results["scaling"]:
        lines += [
            "",
            f"{results['hosts']}-host scaling:",
            "| workers | cluster start | ingest | files/s | speed-up | mean task |",
            "|---|---|---|---|---|---|",
        ]
    for r in results["scaling"]:
        lines.append(
            f"| {r['workers']} | {r['cluster_start_s']} s | {r['ingest_s']} s | {r['files_per_s']} | "
            f"{r['speedup']}× | {r['mean_task_s']} s |"
        )
    lines += [
        "",
        f"{results['view_hosts']}-host first merged view:",
        "| how | first host shown | all hosts shown | + full-view tiles |",
        "|---|---|---|---|",
    ]
    for how, r in results["merged_view"].items():
        before = f" (after {r['ingested_before_s']} s of ingest)" if "ingested_before_s" in r else ""
        lines.append(
            f"| {how}{before} | {r['first_host_shown_s']} s ({r['hosts_in_first_view']} hosts) | "
            f"{r['all_hosts_shown_s']} s | {r['full_view_with_tiles_s']} s |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--xplane", required=True, help="the XPlane to replicate, e.g. from benchmarks/make_big_xplane.py"
    )
    parser.add_argument("--hosts", type=int, default=32)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--view-hosts", type=int, default=8)
    parser.add_argument("--screen-px", type=int, default=1600)
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--local-only",
        action="store_true",
        help="only the merged view through local ingest processes: no scaling, no cluster, so no "
        "Dask in this process (its environment variables change malloc's policy)",
    )
    args = parser.parse_args()
    source = pathlib.Path(args.xplane)
    source.read_bytes()  # into the page cache: every run reads the bytes from memory
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="profscope-bench-dask-"))
    try:
        session = make_session(scratch / "logdir", source, args.hosts)
        view_session = make_session(scratch / "logdir-view", source, args.view_hosts)
        rows = []
        if not args.local_only:
            print(f"scaling over {args.hosts} hosts", flush=True)
            rows = scaling(session, [int(n) for n in args.workers.split(",")], scratch)
        print(f"first merged view of {args.view_hosts} hosts", flush=True)
        views = merged_views(view_session, scratch, args.screen_px, args.local_only)
        results = {
            "source": str(source),
            "events_per_host": views["local child processes"]["events"] // args.view_hosts,
            "hosts": args.hosts,
            "view_hosts": args.view_hosts,
            "cpus": os.cpu_count(),
            "scaling": rows,
            "merged_view": views,
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(report(results))
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
