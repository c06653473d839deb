"""`profscope ingest`: build the cache entries of every host of a logdir's sessions on a Dask cluster.

For pod-scale sessions, whose hosts one machine would read one after another: each trace file is
one task (`fanout`), run by the workers of an existing scheduler (`--scheduler`) or of a
`LocalCluster` started for the command (`--workers`). The entries land in `--cache-dir`, which the
TensorBoard server then reads with `--profscope_cache_dir` and serves without ingesting anything.
Sources are found and fingerprinted exactly as the server does (`logdir` discovery,
`service.host_sources`), so the server finds every entry built here.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import TextIO

from profscope import logdir as logdir_lib
from profscope.engine import service as trace_service
from profscope.engine.ingest import fanout
from profscope.engine.ingest import manager as ingest
from profscope.engine.ingest import memory as ingest_memory

# Exit status: every file built or cached; some failed; nothing to ingest (or no cluster).
EXIT_OK, EXIT_FAILED, EXIT_NOTHING = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logdir", help="local folder or fsspec URL (gs://…, s3://…) the workers can read")
    parser.add_argument(
        "--cache-dir",
        required=True,
        metavar="DIR",
        help="the cache directory to fill: a path every worker and the TensorBoard server see alike "
        "(a shared filesystem); give the server the same one as --profscope_cache_dir",
    )
    parser.add_argument(
        "--run",
        action="append",
        metavar="R",
        help="ingest only this run (repeat for several); default: every run of the logdir",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler", metavar="ADDR", help="address of a running Dask scheduler (tcp://host:8786)"
    )
    where.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="start a local Dask cluster of N worker processes for the command (default: one per CPU)",
    )
    parser.add_argument(
        "--memory-mb",
        type=int,
        metavar="MB",
        help="memory each task's ingest process may use, in MB (default "
        f"{ingest_memory.child_budget(ingest_memory.DEFAULT_TOTAL_MB) >> 20}); bigger traces are sorted "
        "through files in the cache directory. A worker runs as many tasks at once as it has threads",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=fanout.RETRIES,
        metavar="K",
        help=f"times a failed task is run again (default {fanout.RETRIES}); a lost worker's task is rerun anyway",
    )


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Ingest the selected sessions; print one line per file as it ends, then a total. Exit status
    0 when every file is built or was cached, 1 when any failed, 2 when there is nothing to ingest
    or no cluster to ingest on."""
    problem = _cache_dir_problem(args.cache_dir)
    if problem:
        out.write(f"ERROR {problem}\n")
        return EXIT_NOTHING
    if args.workers is not None and args.workers < 1:
        out.write("ERROR --workers needs at least 1\n")
        return EXIT_NOTHING
    if args.memory_mb is not None and args.memory_mb < ingest_memory.MIN_CHILD_MB // 2:
        out.write(f"ERROR --memory-mb needs at least {ingest_memory.MIN_CHILD_MB // 2}\n")
        return EXIT_NOTHING
    cache_root = os.path.abspath(args.cache_dir.removeprefix("file://"))
    logdir = logdir_lib.Logdir(args.logdir, follow_symlinks=args.follow_symlinks)
    listing = logdir.listing()
    for error in listing.errors:
        out.write(f"ERROR {error}\n")
    for name in args.run or ():
        if listing.run(name) is None:
            out.write(f"skipped run {name!r}: not in the logdir\n")
    files, unreadable = trace_files(listing, logdir, args.run)
    for problem in unreadable:
        out.write(f"FAILED  {problem}\n")
    if not files:
        out.write(f"no trace file to ingest in {listing.logdir}\n")
        return EXIT_FAILED if unreadable else EXIT_NOTHING
    started = time.perf_counter()
    try:
        with fanout.cluster_client(args.scheduler, args.workers) as client:
            n_workers = len(client.scheduler_info().get("workers", {}))
            out.write(f"ingesting {len(files)} trace files on {n_workers} Dask workers into {cache_root}\n")
            outcomes = fanout.ingest_files(
                client,
                files,
                cache_root,
                retries=args.retries,
                on_outcome=lambda o: _print(o, out),
                memory_bytes=None if args.memory_mb is None else args.memory_mb << 20,
            )
    except (ImportError, OSError, TimeoutError) as e:
        out.write(f"ERROR no Dask cluster: {e}\n")
        return EXIT_NOTHING
    if os.path.isdir(cache_root):
        ingest.remove_stale_files(cache_root)  # what workers lost mid-task left behind
    failed = sum(not o.ok for o in outcomes) + len(unreadable)
    cached = sum(o.ok and o.cached for o in outcomes)
    built = sum(o.ok and not o.cached for o in outcomes)
    out.write(
        f"{built + cached + failed} trace files: {built} built, {cached} already cached, "
        f"{failed} failed, in {time.perf_counter() - started:.1f} s\n"
    )
    return EXIT_FAILED if failed else EXIT_OK


def trace_files(
    listing: logdir_lib.Listing, logdir: logdir_lib.Logdir, runs: list[str] | None
) -> tuple[list[tuple[str, ingest.SourceFile]], list[str]]:
    """(path in the logdir, source) of the trace file of every host of the selected runs (all when
    `runs` is empty), as the server would open it, and the hosts whose trace files discovery could
    not read, with why. Hosts without a trace file (PyTorch/XLA logs only) are left out."""
    files: list[tuple[str, ingest.SourceFile]] = []
    unreadable: list[str] = []
    for run_ in listing.runs:
        if runs and run_.name not in runs:
            continue
        for session in run_.sessions:
            for host in session.hosts:
                if host.trace_file is None:
                    unreadable.extend(f"{f.path}: {f.error}" for f in host.files if f.error)
                    continue
                (host_source,) = trace_service.host_sources([host], logdir.fs)
                files.append((host_source.label, host_source.source))
    return files, unreadable


def _cache_dir_problem(cache_dir: str) -> str | None:
    """Why `cache_dir` cannot be the shared cache: the URL of an object store, which the server
    cannot memory-map entries from nor the workers lock files in."""
    if "://" in cache_dir and not cache_dir.startswith("file://"):
        return (
            f"--cache-dir {cache_dir}: the cache must be a filesystem path that the workers and the "
            "server share (NFS, Lustre, a cloud file share); entries are memory-mapped and locked, "
            "which an object store cannot do"
        )
    return None


def _print(outcome: fanout.FileOutcome, out: TextIO) -> None:
    if not outcome.ok:
        message = (outcome.error or {}).get("message", "failed")
        out.write(f"FAILED  {outcome.label}: {message}\n")
    elif outcome.cached:
        out.write(f"cached  {outcome.label}\n")
    else:
        out.write(f"built   {outcome.label}  {outcome.seconds:.1f} s on {outcome.worker}\n")
    out.flush()
