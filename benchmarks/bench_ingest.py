"""Ingest of one trace file end to end, as the server runs it, with the time of each stage.

Usage:
    python benchmarks/bench_ingest.py TRACE [TRACE ...] [--runs 3]

Each run starts a child like the one the server forks for a job (interpreter started and readers
imported before the job arrives, so that start is not counted), sends it the job on stdin and
measures until the child has exited: that is when the server sees the cache entry (it waits for the
process, not for the files). Inside the child the stages are timed: the reader (for Chrome JSON
split into scanning + columns (with the time the reading process waited for its helper's half),
assembly and `finalize()`), then the level-of-detail index and the cache
write (the two overlap), then the exit itself. A fresh empty cache directory per run. MB/s is the source
size over the whole time; CPU seconds (the child and the helper process it may start, without the
interpreter start before the job) are steadier than wall time on a shared machine. Faster than `bench_trace.py` (no TensorBoard, no views), so it suits
comparing two versions of the ingest code; timings on a shared machine are noisy, so take the best
and the median of several runs.

For Chrome / Kineto JSON (plain, not gzip), each run is preceded by a measurement of the decode
floor of the same file (`json_decode_floor.py`: msgspec's typed decode of the first `--floor-mb` MB
of its events, args left raw, on one core), and the summary prints the end-to-end MB/s beside that
floor and twice it (the two cores an ingest has), with the load average; `--floor-mb 0` leaves it
out.

Where the input is read from matters: an ingest hands the page cache's copy of a big input back
behind itself (`spill.page_cache.DropBehind`), so without `--warm` every run after the first reads
most of the file from the disk (on the 2-core VM also into memory the hypervisor has to hand back,
which costs CPU time too). `--warm` reads the whole file before each run, outside the timing, as
the page cache holds a trace its profiler has just written; the seconds it took are printed (about
0.1 s per GB when the file was cached already).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, NamedTuple

import json_decode_floor
from profscope.engine.ingest import manager as ingest
from profscope.formats import detect

_CHILD = r"""
import json, sys, time
from profscope.model.columns import TraceBuilder
from profscope.engine.ingest import manager as ingest
from profscope.engine.ingest import memory as ingest_memory
from profscope.engine.lod import spilled as lod_spilled
from profscope.engine import store
from profscope.formats.chrome import helper as chrome_helper
from profscope.formats.chrome import reader as chrome_json
from profscope.formats.xplane import reader as xplane

ingest_memory.one_malloc_arena()  # as the template of the server's children does
from profscope.formats import registry
if hasattr(registry, "fork_helpers"):  # as the server's children do (code before it had no such call)
    registry.fork_helpers()

stages = {}

def timed(name, fn):
    def wrapper(*args, **kwargs):
        t = time.time()
        try:
            return fn(*args, **kwargs)
        finally:
            stages[name] = stages.get(name, 0.0) + time.time() - t
    return wrapper

TraceBuilder.finalize = timed("finalize", TraceBuilder.finalize)
chrome_json._assemble = timed("assemble", chrome_json._assemble)
chrome_helper.HelperProcess.result = timed("helper_wait", chrome_helper.HelperProcess.result)
chrome_json.read = timed("read", chrome_json.read)
xplane.read = timed("read", xplane.read)
store.write = timed("index_and_write", store.write)
ingest.build_extras = timed("index", ingest.build_extras)
lod_spilled.build_extras = timed("index", lod_spilled.build_extras)  # a spilled trace's index
line = sys.stdin.readline()
started = time.time()
code = ingest.run_ingest(json.loads(line))
stages["returned_at"] = time.time()
stages["started_at"] = started
sys.stderr.write("STAGES " + json.dumps(stages) + "\n")
ingest.end_process(code)
"""


class Finished(NamedTuple):
    """A job's run in an ingest child: its stderr, when it was sent and when the child had exited
    (time.time()), and the CPU seconds of the child and its helper process."""

    err: str
    sent: float
    exited: float
    cpu: float


def start_child(code: str) -> subprocess.Popen[bytes]:
    """A child running `code`, given 2 s for its imports, like the template waiting for a job."""
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    time.sleep(2.0)
    return child


def job_spec(path: str, fmt: str, cache: str) -> dict[str, Any]:
    """The job the server sends its ingest child for `path`, its cache entry under `cache`."""
    source = ingest.SourceFile(path, fmt)
    key, size = ingest.source_key(source)
    return {
        "url": path,
        "format": fmt,
        "reader": ingest.READERS[fmt],
        "fs": source.fs.to_json(),
        "cache_root": cache,
        "key": key,
        "size": size,
    }


def run_job(child: subprocess.Popen[bytes], spec: dict[str, Any]) -> Finished:
    """Send `spec` to the child and wait for its exit; raises when the ingest failed."""
    assert child.stdin is not None and child.stderr is not None
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sent = time.time()
    child.stdin.write(json.dumps(spec).encode() + b"\n")
    child.stdin.close()
    err = child.stderr.read().decode(errors="replace")
    child.wait()
    exited = time.time()
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if child.returncode != 0:
        raise RuntimeError(f"ingest child failed ({child.returncode}):\n{err[-3000:]}")
    return Finished(err, sent, exited, sum(cpu_after[:2]) - sum(cpu_before[:2]))


def run_once(path: str, fmt: str) -> dict[str, float]:
    """One ingest in a fresh child process and a fresh cache directory."""
    cache = tempfile.mkdtemp(prefix="bench_ingest_")
    try:
        child = start_child(_CHILD)
        done = run_job(child, job_spec(path, fmt, cache))
        stages = json.loads(next(x for x in done.err.splitlines() if x.startswith("STAGES "))[7:])
        out = {k: v for k, v in stages.items() if not k.endswith("_at")}
        out["total"] = done.exited - done.sent
        out["cpu"] = done.cpu
        out["exit"] = done.exited - stages["returned_at"]
        out["job_start"] = stages["started_at"] - done.sent
        entry = os.path.join(cache, f"v{ingest.store.FORMAT_VERSION}")
        out["cache_mb"] = (
            sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(entry) for f in files) / 1e6
        )
        return out
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--floor-mb", type=int, default=200, help="decode floor sample (0: none)")
    parser.add_argument(
        "--warm", action="store_true", help="read the input into the page cache before each run"
    )
    args = parser.parse_args(argv)
    for path in args.paths:
        path = os.path.abspath(path)
        size = os.path.getsize(path)
        fmt = detect.XPLANE if path.endswith(".xplane.pb") else detect.CHROME_TRACE
        print(f"{path}: {size / 1e6:.1f} MB, {fmt}")
        with_floor = fmt == detect.CHROME_TRACE and args.floor_mb > 0 and not _gzipped(path)
        runs = []
        floors = []
        for k in range(args.runs):
            if with_floor:
                floors.append(json_decode_floor.measure_in_child(path, args.floor_mb))
            warmed = f" | input read into the page cache first in {warm_up(path):.2f} s" if args.warm else ""
            r = run_once(path, fmt)
            runs.append(r)
            parts = [f"read {r['read']:.2f} s"]
            if "assemble" in r:
                scan = r["read"] - r["assemble"] - r["finalize"]
                wait = (
                    f" of which waiting for the helper {r['helper_wait']:.2f}" if "helper_wait" in r else ""
                )
                parts[0] += (
                    f" (scan+columns {scan:.2f}{wait}, assemble {r['assemble']:.2f}, finalize {r['finalize']:.2f})"
                )
            elif "finalize" in r:
                parts[0] += f" (finalize {r['finalize']:.2f})"
            parts.append(f"index {r['index']:.2f} s, cache write {r['index_and_write']:.2f} s overlapping it")
            parts.append(f"exit {r['exit']:.2f} s (job start {r['job_start']:.2f} s)")
            floor = f" | floor {floors[-1].wall_mb_s:.0f} MB/s" if floors else ""
            print(
                f"  run {k + 1}: {r['total']:.2f} s = {size / 1e6 / r['total']:.1f} MB/s | "
                + ", ".join(parts)
                + f" | CPU {r['cpu']:.1f} s (child and its helper) | cache {r['cache_mb']:.0f} MB{floor}"
                + f" | load {json_decode_floor.load_average()}{warmed}"
            )
        print(summary(size, runs, floors))
    return 0


def warm_up(path: str) -> float:
    """Read the whole file (into one reused buffer), so the page cache holds it; the seconds taken."""
    started = time.time()
    buffer = bytearray(8 << 20)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buffer):
            pass
    return time.time() - started


def _gzipped(path: str) -> bool:
    """Whether the file is gzip (the decode floor is measured on plain JSON only)."""
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def summary(size: int, runs: list[dict[str, float]], floors: list[json_decode_floor.Floor]) -> str:
    """End to end MB/s (median, min-max), and beside it the decode floor measured in the same run."""
    spread = json_decode_floor.spread
    rates = [size / 1e6 / r["total"] for r in runs]
    cpu_rates = [size / 1e6 / r["cpu"] for r in runs]
    lines = [
        f"  end to end {spread(rates, '{:.1f}')} MB/s (median, min-max of {len(runs)}), "
        f"{spread(cpu_rates, '{:.1f}')} MB per CPU second (child and helper)"
    ]
    if floors:
        walls = [f.wall_mb_s for f in floors]
        ratio = statistics.median(rates) / statistics.median(walls)
        lines.append(
            f"  decode floor (msgspec typed, args raw, one core) {spread(walls)} MB/s, "
            f"2 x floor {spread([2 * w for w in walls])} MB/s, {spread([f.cpu_mb_s for f in floors])} MB per "
            f"CPU second; end to end = {ratio:.2f} x floor = {ratio / 2:.2f} of both cores' floor"
        )
    lines.append(f"  load average now {json_decode_floor.load_average()}")
    return "\n".join(lines)

    return 0


if __name__ == "__main__":
    sys.exit(main())
