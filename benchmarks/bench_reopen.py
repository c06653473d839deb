"""Reopening a cache entry as a restarted server does, with the cost of the integrity checks.

Usage:
    python benchmarks/bench_reopen.py TRACE [--cache DIR] [--runs 5]

DIR defaults to `profscope-bench-reopen` in $XDG_CACHE_HOME, else in ~/.cache (kept between runs).

Ingests TRACE once into DIR (skipped when its entry is already there), then `--runs` times makes a
fresh `IngestManager` (no template process) and asks it for the trace: what a server does on the
first request after a restart (each in a new process; the interpreter start and imports are not
counted), and it includes the checks of `store.open` (sizes, `.npy` headers,
invariants, the first and last block of every mapped array, every block of every copied one). It
prints each reopen's wall time, then the entry's size, how many arrays are copied or mapped, and the
time of a full `store.verify` (what the background check reads and hashes once per opened entry).
Timings are with the page cache warm (the entry was just written or read); a cold cache adds the
disk reads of the copied arrays and of two blocks per mapped array.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from profscope.engine import store
from profscope.engine.ingest import manager as ingest
from profscope.formats import detect

_REOPEN = """
import sys, time
from profscope.engine.ingest import manager as ingest
started = time.perf_counter()
manager = ingest.IngestManager(sys.argv[1], prewarm=False)
got = manager.ensure(ingest.SourceFile(sys.argv[2], sys.argv[3]))
elapsed = time.perf_counter() - started
assert isinstance(got, ingest.OpenedTrace), got
print(elapsed)
"""


def _entry_bytes(path: str) -> int:
    return sum(
        os.path.getsize(os.path.join(folder, name)) for folder, _, names in os.walk(path) for name in names
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("trace")
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    parser.add_argument("--cache", default=os.path.join(cache_home, "profscope-bench-reopen"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    name = os.path.basename(args.trace)
    match = detect.match_name(name, in_session=True)
    fmt = match.format if match is not None and match.format else "chrome_trace"
    source = ingest.SourceFile(os.path.abspath(args.trace), fmt)

    started = time.perf_counter()
    manager = ingest.IngestManager(args.cache, prewarm=False)
    opened = manager.wait(source, timeout_s=3600)
    print(
        f"ingest (or first open): {time.perf_counter() - started:.2f} s, {opened.trace.num_events:,} events"
    )
    path = opened.path
    del opened, manager

    times = []
    for _ in range(args.runs):
        # A fresh process per reopen, as after a restart (its background check ends with it).
        done = subprocess.run(
            [sys.executable, "-c", _REOPEN, args.cache, source.url, source.format],
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(done.stdout.split()[-1]))
    print("reopen: " + ", ".join(f"{t * 1000:.0f} ms" for t in times))
    print(f"reopen best {min(times) * 1000:.0f} ms, median {statistics.median(times) * 1000:.0f} ms")

    meta = store.read_meta(path) or {}
    mapped = store.mapped_arrays(path)
    print(
        f"entry {_entry_bytes(path) / 1e6:,.0f} MB, {len(meta.get('arrays', {}))} arrays: "
        f"{len(meta.get('arrays', {})) - len(mapped)} copied and checked whole at open, {len(mapped)} mapped"
    )
    started = time.perf_counter()
    problems = store.verify(path)
    print(
        f"full verify (background, once per opened entry): {time.perf_counter() - started:.2f} s, {problems or 'intact'}"
    )


if __name__ == "__main__":
    main()
