"""Speed and memory of the Chrome / Kineto JSON reader, end to end.

Usage:
    python benchmarks/bench_chrome_json.py TRACE.json[.gz] [...] [--runs 3] [--sequential]
        [--reader-only | --ingest-memory-mb MB] [--baseline DIR] [--timeline]

Each run reads the file with `profscope.formats.chrome.reader.read` in a fresh Python process (so
peak RSS is that of one read, not of earlier runs) and prints MB/s (source bytes; for .gz the
compressed size and the inflated size are both shown), events/s, peak RSS of the reading process
(also as it was when `finalize()` began) and of its helper process, CPU seconds of both (less
sensitive to other load than wall time), and where the wall time went: scanning + columns,
assembly into the builder, `TraceBuilder.finalize()`.

RSS over time: a thread of the reading process samples its own RSS and its helper's (from /proc,
every 50 ms); `peak together` is the highest sum of one sample, and `--timeline` prints the
highest sum per tenth of the run. `--reader-only` gives the reader a builder that counts what it
is given and keeps nothing, so the RSS is the reader's own (plus the interpreter), whatever the
builder does with its buffers.

`--ingest-memory-mb MB` reads as an ingest child with that budget does: inside
`spill.use(IngestMemory(...))` with the builder's and the reader's shares of it
(`ingest_memory.child_budget` and `shares`), spilling to a temporary directory.

`--baseline DIR` runs a second copy of the package (DIR holding a `profscope/` folder, e.g. a
copy of an earlier tree) alternately with this one, run for run, and prints the median and the
spread (lowest–highest) of both: on a shared machine only such interleaved runs compare.
`--sequential` turns off the second decoding process.

Before each run the decode floor of the file is measured (`json_decode_floor.py`: msgspec's typed
decode of the first `--floor-mb` MB of its events, args left raw, one core; plain JSON only), and
the summary prints the MB/s beside it and twice it, with the load average.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys

import json_decode_floor

_CHILD = r"""
import contextlib, json, os, resource, shutil, sys, tempfile, threading, time
import fsspec
from profscope.formats.chrome import reader as chrome_json
from profscope.model.columns import TraceBuilder

path, sequential, reader_only = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
ingest_mb = int(sys.argv[4])
budget = contextlib.nullcontext()
if ingest_mb:
    from profscope.model.spill import budget as spill_budget
    from profscope.engine.ingest import memory as ingest_memory

    spill_dir = tempfile.mkdtemp(prefix="bench-chrome-")
    builder_bytes, reader_bytes = ingest_memory.shares(ingest_memory.child_budget(ingest_mb))
    budget = spill_budget.use(spill_budget.IngestMemory(spill_dir, builder_bytes, reader_bytes))
if sequential:
    chrome_json.PARALLEL_MIN_BYTES = 1 << 62
times = {}
PAGE = os.sysconf("SC_PAGE_SIZE")

def rss(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except OSError:
        return 0

def children():
    found = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as f:
                found += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return found

samples = []  # (seconds, own RSS, helper RSS)
done = threading.Event()

def sample():
    t0 = time.perf_counter()
    while not done.is_set():
        samples.append((time.perf_counter() - t0, rss(os.getpid()), sum(rss(p) for p in children())))
        done.wait(0.05)

def timed(name, fn):
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            times[name] = times.get(name, 0.0) + time.perf_counter() - t
    return wrapper

class CountingBuilder(TraceBuilder):
    # Counts what the reader hands over and keeps none of it.
    given = {"events": 0, "flows": 0, "counters": 0, "calls": 0}

    def add_events(self, track, start_ps, dur_ps, name, cat=0, args=None, *, args_blob=None, args_lengths=None):
        n = len(start_ps)
        self.given["events"] += n
        self.given["calls"] += 1
        first = self._num_events
        self._num_events += n
        return first

    def add_flows(self, src, dst, name=0):
        self.given["flows"] += len(src)

    def add_flow(self, src, dst, name=0):
        self.given["flows"] += 1

    def add_flow_points(self, flow, name, phase, track, ts_ps, bind_next):
        self.given["flows"] += len(flow)

    def add_counter(self, track, time_ps, value):
        self.given["counters"] += len(time_ps)

    def finalize(self):
        self._num_events = 0
        return super().finalize()

if reader_only:
    chrome_json.TraceBuilder = CountingBuilder
finalize = chrome_json.TraceBuilder.finalize

def finalize_noting_rss(self):
    times["rss_before_finalize_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return finalize(self)

chrome_json.TraceBuilder.finalize = timed("finalize", finalize_noting_rss)
chrome_json._assemble = timed("assemble", chrome_json._assemble)
rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
t0 = time.perf_counter()
with budget:
    trace = chrome_json.read(path, fsspec.filesystem("file"))
total = time.perf_counter() - t0
done.set()
sampler.join()
given = CountingBuilder.given if reader_only else None
peak = max(samples, key=lambda s: s[1] + s[2])
print(json.dumps({
    "seconds": total,
    "scan_seconds": total - times.get("assemble", 0.0) - times.get("finalize", 0.0),
    "assemble_seconds": times.get("assemble", 0.0),
    "finalize_seconds": times.get("finalize", 0.0),
    "events": given["events"] if given else trace.num_events,
    "flows": given["flows"] if given else int(trace.flow_src.shape[0]),
    "counters": given["counters"] if given else int(trace.ctr_time_ps.shape[0]),
    "warnings": len(trace.warnings),
    "skipped": sum(trace.skipped.values()),
    "cpu_seconds": sum(resource.getrusage(resource.RUSAGE_SELF)[:2]),
    "helper_cpu_seconds": sum(resource.getrusage(resource.RUSAGE_CHILDREN)[:2]),
    "rss_before_kb": rss_before,
    "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "peak_rss_before_finalize_kb": times.get("rss_before_finalize_kb", 0),
    "helper_peak_rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    "peak_together_bytes": peak[1] + peak[2],
    "peak_together_at_s": peak[0],
    "samples": [[round(t, 2), a, b] for t, a, b in samples],
}))
if ingest_mb:
    del trace
    shutil.rmtree(spill_dir, ignore_errors=True)
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


def run_once(path: str, sequential: bool, reader_only: bool, ingest_mb: int, package_dir: str | None) -> dict:
    env = dict(os.environ)
    if package_dir is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_dir, env.get("PYTHONPATH")) if p)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHILD,
            path,
            "1" if sequential else "0",
            "1" if reader_only else "0",
            str(ingest_mb),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def timeline(r: dict, bins: int = 10) -> str:
    """Highest RSS sum (own + helper) per tenth of the run, in MB."""
    samples = r["samples"]
    if not samples:
        return ""
    end = samples[-1][0] or 1.0
    tops: list[int | None] = [None] * bins
    for t, own, helper in samples:
        k = min(bins - 1, int(t / end * bins))
        tops[k] = max(tops[k] or 0, own + helper)
    return " ".join(
        f"{end * k / bins:.1f}s:{'-' if top is None else f'{top / 1e6:.0f}'}" for k, top in enumerate(tops)
    )


def describe(r: dict, size: int, inflated: int | None) -> str:
    mbs = size / r["seconds"] / 1e6
    extra = f" ({inflated / r['seconds'] / 1e6:.0f} MB/s of JSON)" if inflated else ""
    return (
        f"{r['seconds']:.2f} s = {mbs:.0f} MB/s{extra}, "
        f"{r['events'] / r['seconds'] / 1e6:.2f} M events/s | "
        f"scan+columns {r['scan_seconds']:.2f} s, assemble {r['assemble_seconds']:.2f} s, "
        f"finalize {r['finalize_seconds']:.2f} s | "
        f"CPU {r['cpu_seconds']:.1f} s + helper {r['helper_cpu_seconds']:.1f} s | "
        f"peak RSS {r['peak_rss_kb'] / 1024:.0f} MB (after imports {r['rss_before_kb'] / 1024:.0f} MB, "
        f"before finalize {r['peak_rss_before_finalize_kb'] / 1024:.0f} MB), "
        f"helper process {r['helper_peak_rss_kb'] / 1024:.0f} MB, "
        f"peak together {r['peak_together_bytes'] / 1e6:.0f} MB at {r['peak_together_at_s']:.1f} s"
    )


def summary(label: str, results: list[dict], size: int) -> str:
    def spread(values: list[float], fmt: str) -> str:
        return (
            f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"
        )

    return (
        f"  {label}: median MB/s {spread([size / r['seconds'] / 1e6 for r in results], '{:.0f}')}, "
        f"s {spread([r['seconds'] for r in results], '{:.2f}')}, "
        f"CPU s (both) {spread([r['cpu_seconds'] + r['helper_cpu_seconds'] for r in results], '{:.1f}')}, "
        f"peak together MB {spread([r['peak_together_bytes'] / 1e6 for r in results], '{:.0f}')}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sequential", action="store_true", help="no second decoding process")
    parser.add_argument("--reader-only", action="store_true", help="a builder that keeps nothing")
    parser.add_argument("--ingest-memory-mb", type=int, default=0, help="read under an ingest's budget")
    parser.add_argument("--baseline", metavar="DIR", help="also run the package in DIR, alternately")
    parser.add_argument("--timeline", action="store_true", help="print RSS over time per run")
    parser.add_argument("--floor-mb", type=int, default=200, help="decode floor sample (0: none)")
    args = parser.parse_args(argv)
    for path in args.paths:
        size = os.path.getsize(path)
        inflated = _inflated_size(path)
        label = f"{size / 1e6:.1f} MB" + (f" gzip ({inflated / 1e6:.1f} MB JSON)" if inflated else "")
        mode = "sequential" if args.sequential else "parallel when big and local"
        if args.reader_only:
            mode += ", reader only"
        if args.ingest_memory_mb:
            mode += f", ingest budget {args.ingest_memory_mb} MB"
        print(f"{path}: {label}, {mode}")
        variants = [("this tree", None)] + ([("baseline", args.baseline)] if args.baseline else [])
        results: dict[str, list[dict]] = {name: [] for name, _ in variants}
        with_floor = args.floor_mb > 0 and not inflated
        floors: list[json_decode_floor.Floor] = []
        for k in range(args.runs):
            if with_floor:
                floors.append(json_decode_floor.measure_in_child(path, args.floor_mb))
            for name, package_dir in variants if k % 2 == 0 else variants[::-1]:
                r = run_once(path, args.sequential, args.reader_only, args.ingest_memory_mb, package_dir)
                results[name].append(r)
                print(f"  run {k + 1} {name}: {describe(r, size, inflated)}")
                if args.timeline:
                    print(f"    RSS together (MB) over time: {timeline(r)}")
        for name, _ in variants:
            print(summary(name, results[name], size))
        if floors:
            walls = [f.wall_mb_s for f in floors]
            print(
                f"  decode floor (msgspec typed, args raw, one core) {json_decode_floor.spread(walls)} MB/s, "
                f"2 x floor {json_decode_floor.spread([2 * w for w in walls])} MB/s; "
                f"load average {json_decode_floor.load_average()}"
            )
        best = min(results["this tree"], key=lambda r: r["seconds"])
        print(
            f"  best: {best['seconds']:.2f} s = {size / best['seconds'] / 1e6:.0f} MB/s, "
            f"{best['events']} events ({best['events'] / best['seconds'] / 1e6:.2f} M/s), {best['flows']} flows, "
            f"{best['counters']} counter values, {best['warnings']} warnings, {best['skipped']} skipped"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
