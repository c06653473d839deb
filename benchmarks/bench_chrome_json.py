"""Speed and memory of the Chrome / Kineto JSON reader, end to end.

Usage:
    python benchmarks/bench_chrome_json.py TRACE.json[.gz] [...] [--runs 3] [--sequential]

Each run reads the file with `profscope.formats.chrome_json.read` in a fresh Python process (so
peak RSS is that of one read, not of earlier runs) and prints MB/s (source bytes; for .gz the
compressed size and the inflated size are both shown), events/s, peak RSS of the reading process
(also as it was when `finalize()` began) and of its helper process, CPU seconds of both (less
sensitive to other load than wall time), and where the wall time went: scanning + columns,
assembly into the builder, `TraceBuilder.finalize()`.
`--sequential` turns off the second decoding process. Timings on a shared machine are noisy:
compare the best of several runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys

_CHILD = r"""
import json, resource, sys, time
import fsspec
from profscope.formats import chrome_json
from profscope.columns import TraceBuilder

path, sequential = sys.argv[1], sys.argv[2] == "1"
if sequential:
    chrome_json.PARALLEL_MIN_BYTES = 1 << 62
times = {}

def timed(name, fn):
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            times[name] = times.get(name, 0.0) + time.perf_counter() - t
    return wrapper

finalize = TraceBuilder.finalize

def finalize_noting_rss(self):
    times["rss_before_finalize_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return finalize(self)

TraceBuilder.finalize = timed("finalize", finalize_noting_rss)
chrome_json._assemble = timed("assemble", chrome_json._assemble)
rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
trace = chrome_json.read(path, fsspec.filesystem("file"))
total = time.perf_counter() - t0
print(json.dumps({
    "seconds": total,
    "scan_seconds": total - times.get("assemble", 0.0) - times.get("finalize", 0.0),
    "assemble_seconds": times.get("assemble", 0.0),
    "finalize_seconds": times.get("finalize", 0.0),
    "events": trace.num_events,
    "flows": int(trace.flow_src.shape[0]),
    "counters": int(trace.ctr_time_ps.shape[0]),
    "warnings": len(trace.warnings),
    "skipped": sum(trace.skipped.values()),
    "cpu_seconds": sum(resource.getrusage(resource.RUSAGE_SELF)[:2]),
    "helper_cpu_seconds": sum(resource.getrusage(resource.RUSAGE_CHILDREN)[:2]),
    "rss_before_kb": rss_before,
    "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "peak_rss_before_finalize_kb": times.get("rss_before_finalize_kb", 0),
    "helper_peak_rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
}))
"""


def _inflated_size(path: str) -> int | None:
    with open(path, "rb") as f:
        if f.read(2) != b"\x1f\x8b":
            return None
        f.seek(0)

        n = 0
        with gzip.open(f) as g:
            while chunk := g.read(16 << 20):
                n += len(chunk)
        return n


def run_once(path: str, sequential: bool) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, path, "1" if sequential else "0"],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sequential", action="store_true", help="no second decoding process")
    args = parser.parse_args(argv)
    for path in args.paths:
        size = os.path.getsize(path)
        inflated = _inflated_size(path)
        label = f"{size / 1e6:.1f} MB" + (f" gzip ({inflated / 1e6:.1f} MB JSON)" if inflated else "")
        print(f"{path}: {label}, {'sequential' if args.sequential else 'parallel when big and local'}")
        results = []
        for k in range(args.runs):
            r = run_once(path, args.sequential)
            results.append(r)
            mbs = size / r["seconds"] / 1e6
            extra = f" ({inflated / r['seconds'] / 1e6:.0f} MB/s of JSON)" if inflated else ""
            print(
                f"  run {k + 1}: {r['seconds']:.2f} s = {mbs:.0f} MB/s{extra}, "
                f"{r['events'] / r['seconds'] / 1e6:.2f} M events/s | "
                f"scan+columns {r['scan_seconds']:.2f} s, assemble {r['assemble_seconds']:.2f} s, "
                f"finalize {r['finalize_seconds']:.2f} s | "
                f"CPU {r['cpu_seconds']:.1f} s + helper {r['helper_cpu_seconds']:.1f} s | "
                f"peak RSS {r['peak_rss_kb'] / 1024:.0f} MB (after imports {r['rss_before_kb'] / 1024:.0f} MB, "
                f"before finalize {r['peak_rss_before_finalize_kb'] / 1024:.0f} MB), "
                f"helper process {r['helper_peak_rss_kb'] / 1024:.0f} MB"
            )
        best = min(results, key=lambda r: r["seconds"])
        print(
            f"  best: {best['seconds']:.2f} s = {size / best['seconds'] / 1e6:.0f} MB/s, "
            f"{best['events']} events ({best['events'] / best['seconds'] / 1e6:.2f} M/s), {best['flows']} flows, "
            f"{best['counters']} counter values, {best['warnings']} warnings, {best['skipped']} skipped"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
