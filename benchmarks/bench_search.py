"""Time and transient memory of whole-trace search, the way the server answers `trace/search`.

Usage:
    python benchmarks/bench_search.py TRACE [TRACE ...] [--queries a,e,x,_] [--limits 100,10000]
        [--runs 3] [--cache DIR]

Each trace is ingested once into `--cache` (default `~/.cache/profscope-bench-search`; kept between
runs, so a second call starts at once) and opened as the server opens it (memory-mapped columns,
`Timeline` over one host). Then every query
with every limit runs `--runs` times; one-letter queries are the worst case (they match most events
and most bytes of the args). Printed per query: total matches, wall time (best and median),
the peak of Python/numpy allocations during the call (`tracemalloc`) and the peak resident memory
above the resident memory before the call (VmHWM, reset through /proc/self/clear_refs; it also
counts pages of the mapped columns the search touched, which the kernel may drop).

Run it against the code before a change with PYTHONPATH pointing at a copy of the old package.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import fsspec


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def open_timeline(path: str, cache: str):  # noqa: ANN201 - profscope is imported late on purpose
    """The one-host timeline of `path`, ingested into `cache` first when needed."""
    from profscope.engine.ingest import manager as ingest
    from profscope.engine.timeline import HostTrace, Timeline
    from profscope.formats import registry

    fs = fsspec.filesystem("file")
    fmt = registry.XPLANE if path.endswith(".xplane.pb") else registry.CHROME_TRACE
    manager = ingest.IngestManager(cache)
    source = ingest.SourceFile(path, fmt, fs)
    started = time.perf_counter()
    while True:
        got = manager.ensure(source, wait_s=5.0)
        if isinstance(got, ingest.OpenedTrace):
            break
        print(f"  ingesting {path}: {got.bytes_done >> 20} of {got.bytes_total >> 20} MB", flush=True)
    print(f"{path}: {got.trace.num_events} events, args {got.trace.args_blob.shape[0] >> 20} MB, "
          f"opened in {time.perf_counter() - started:.1f} s")  # fmt: skip
    return Timeline([HostTrace("host", got.trace, got.index, got.key, got.searcher)], Path(path).name)


def measure(timeline, query: str, limit: int, runs: int) -> dict[str, float]:  # noqa: ANN001
    """Best / median seconds, tracemalloc peak MB and peak RSS growth MB over `runs` searches."""
    seconds, heap, rss = [], [], []
    total = 0
    for _ in range(runs):
        resettable = _reset_peak_rss()
        before = _status_kb("VmRSS")
        tracemalloc.start()
        started = time.perf_counter()
        answer = timeline.search(query, limit=limit, offset=0)
        seconds.append(time.perf_counter() - started)
        heap.append(tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
        rss.append((_status_kb("VmHWM") - before) / 1024 if resettable else float("nan"))
        total = answer.total
        del answer
    return {
        "total": total,
        "best_s": min(seconds),
        "median_s": statistics.median(seconds),
        "heap_mb": max(heap),
        "rss_mb": max(rss),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--queries", default="a,e,x,_")
    parser.add_argument("--limits", default="100,10000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "profscope-bench-search"))
    args = parser.parse_args(argv)
    import profscope

    print(f"profscope from {Path(profscope.__file__).parent}")
    for path in args.paths:
        timeline = open_timeline(path, args.cache)
        timeline.search("warm-up names", limit=1)  # lowercased names are built once per trace
        for query in args.queries.split(","):
            for limit in (int(x) for x in args.limits.split(",")):
                r = measure(timeline, query, limit, args.runs)
                print(
                    f"  q={query!r:5} limit={limit:<6} matches {r['total']:>9}  best {r['best_s']:.3f} s  "
                    f"median {r['median_s']:.3f} s  heap peak {r['heap_mb']:7.1f} MB  "
                    f"RSS peak +{r['rss_mb']:7.1f} MB",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
