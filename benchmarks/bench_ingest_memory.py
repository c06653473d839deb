"""Peak memory of one ingest child end to end (reader, `finalize()`, level-of-detail index, cache
write), as the server runs it, with and without a memory budget.

Usage:
    python benchmarks/bench_ingest_memory.py TRACE [--memory-mb MB] [--runs 1] [--replicate K]

The child is started like the one the server forks for a job (interpreter started and readers
imported before the job arrives) and gets the job spec the server would send: with `--memory-mb`
that per-child budget, else the default share of `--profscope_ingest_memory_mb`
(`trace.ingest_memory.child_budget`). A fresh empty cache directory per run.

Memory, in MB (10^6 bytes):
- `sampled peak`: every 20 ms the parent adds up VmRSS (and its RssAnon / RssFile parts) of the
  child and all its descendants (the Chrome reader's helper process); the largest sum seen;
- `VmHWM child`: the child's own high-water mark (/proc/self/status), and `helper`: the largest
  high-water mark of the processes the child waited for (getrusage RUSAGE_CHILDREN);
- the child's own RSS when `finalize()` is entered (reader done, builder buffers full) and its
  high-water mark before that (the reading phase); then the high-water mark is reset
  (`/proc/self/clear_refs` 5) and read again at the end: the peak of finalize + LOD + store alone.
Speed: MB/s = source size / wall time from the job sent to the child's exit; events/s likewise;
CPU = user + system seconds of the child and its helper (steadier than wall time on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading

from bench_ingest import job_spec, run_job, start_child
from profscope.engine.ingest import manager as ingest
from profscope.engine.ingest import memory as ingest_memory
from profscope.formats import detect

_CHILD = r"""
import json, os, resource, sys, time
import numpy as np
from profscope.model.spill import budget as spill_budget
from profscope.model.columns import TraceBuilder
from profscope.formats import registry
from profscope.engine.ingest import manager as ingest
from profscope.engine.ingest import memory as ingest_memory
from profscope.engine import store

ingest_memory.one_malloc_arena()  # as the template of the server's children does
from profscope.formats import registry
if hasattr(registry, "fork_helpers"):  # as the server's children do (code before it had no such call)
    registry.fork_helpers()
marks = {}
REPLICA = None

def replicated(path, fs, progress=None):
    # The source read in memory (outside the budget), then added REPLICA[1] times, each copy shifted
    # past the previous along the time axis, to a builder of the ingest's budget; the first trace
    # is freed before finalize. Flows all become explicit flows.
    reader, copies = REPLICA
    with spill_budget.use(None):
        t = registry.import_reader(reader)(path, fs)
    b = TraceBuilder(path, t.format)
    b.clock_origin_ns, b.metadata = t.clock_origin_ns, dict(t.metadata)
    for sec in t.sections:
        b.section(sec.name, sec.kind, sec.sort_index, key=sec.id)
    for tr in t.tracks:
        b.track(tr.section, tr.name, tr.kind, tr.sort_index, key=tr.id)
    ids = b.string_ids
    for text in t.strings:
        ids.setdefault(text, len(ids))
    lo_ps, hi_ps = t.time_span_ps()
    shift, n = hi_ps - lo_ps + 1, t.num_events
    inv, off = np.asarray(t.args_event), np.asarray(t.args_off)
    if t.args_frag_off.shape[0]:  # typed records (XPlane) are copied with their fragment table
        b.typed_args(np.asarray(t.args_frag_off), np.asarray(t.args_frag_blob))
    ctr_track = np.asarray(t.ctr_track)
    for c in range(copies):
        for lo in range(0, n, 200_000):
            hi = min(n, lo + 200_000)
            f = inv[lo:hi]
            b.add_events(t.ev_track[f], t.ev_start_ps[f] + c * shift, t.ev_dur_ps[f], t.ev_name[f],
                         t.ev_cat[f], args_blob=np.asarray(t.args_blob[off[lo]:off[hi]]),
                         args_lengths=np.diff(off[lo:hi + 1]))
        b.add_flows(c * n + t.ev_args[t.flow_src], c * n + t.ev_args[t.flow_dst], t.flow_name)
        for track in np.unique(ctr_track).tolist():
            mine = ctr_track == track
            b.add_counter(track, t.ctr_time_ps[mine] + c * shift, t.ctr_value[mine])
    del t, inv, off, ctr_track
    return b.finalize()

def status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) * 1024
    return out

def reset_hwm():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

original_finalize = TraceBuilder.finalize

def finalize(self):
    marks["before_finalize"] = status()
    marks["finalize_at"] = time.time()
    reset_hwm()
    trace = original_finalize(self)
    marks["finalized_at"] = time.time()
    marks["events"] = trace.num_events
    marks["spilled"] = self.spilled
    return trace

TraceBuilder.finalize = finalize
marks["idle"] = status()
line = sys.stdin.readline()
started = time.time()
job = json.loads(line)
if "replicate" in job:
    REPLICA = (job.pop("replica_reader"), job.pop("replicate"))
code = ingest.run_ingest(job)
marks["end"] = status()
marks["helper_maxrss"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
marks["returned_at"] = time.time()
marks["started_at"] = started
sys.stderr.write("MARKS " + json.dumps(marks) + "\n")
ingest.end_process(code)
"""


def _family(pid: int) -> list[int]:
    """`pid` and all its descendants (from /proc/<pid>/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return out


def _rss(pid: int) -> tuple[int, int, int]:
    """(VmRSS, RssAnon, RssFile) of `pid` in bytes, zeros when it is gone."""
    values = {"VmRSS": 0, "RssAnon": 0, "RssFile": 0}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in values:
                    values[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return values["VmRSS"], values["RssAnon"], values["RssFile"]


class Sampler(threading.Thread):
    """Largest sum of RSS over a process and its descendants, sampled every 20 ms."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = (0, 0, 0)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            total = [0, 0, 0]
            for p in _family(self.pid):
                for i, v in enumerate(_rss(p)):
                    total[i] += v
            if total[0] > self.peak[0]:
                self.peak = (total[0], total[1], total[2])
            self.stop.wait(0.02)


def run_once(path: str, fmt: str, memory_bytes: int, replicate: int = 1) -> dict[str, float]:
    cache = tempfile.mkdtemp(prefix="bench_ingest_memory_")
    try:
        child = start_child(_CHILD)
        spec = job_spec(path, fmt, cache) | {"memory_bytes": memory_bytes}
        if replicate > 1:
            spec.update(reader="__main__:replicated", replica_reader=ingest.READERS[fmt], replicate=replicate)
        sampler = Sampler(child.pid)
        sampler.start()
        done = run_job(child, spec)
        sampler.stop.set()
        sampler.join()
        marks = json.loads(next(x for x in done.err.splitlines() if x.startswith("MARKS "))[6:])
        return {
            "total_s": done.exited - done.sent,
            "cpu_s": done.cpu,
            "read_s": marks["finalize_at"] - marks["started_at"],
            "finalize_s": marks["finalized_at"] - marks["finalize_at"],
            "lod_store_s": marks["returned_at"] - marks["finalized_at"],
            "events": marks["events"],
            "spilled": marks["spilled"],
            "sampled_peak": sampler.peak[0],
            "sampled_anon": sampler.peak[1],
            "sampled_file": sampler.peak[2],
            "idle_rss": marks["idle"]["VmRSS"],
            "read_hwm": marks["before_finalize"]["VmHWM"],
            "rss_at_finalize": marks["before_finalize"]["VmRSS"],
            "after_finalize_hwm": marks["end"]["VmHWM"],
            "helper_hwm": marks["helper_maxrss"],
        }
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path")
    parser.add_argument("--memory-mb", type=int, help="per-child budget (default: the server's share)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--replicate",
        type=int,
        default=1,
        metavar="K",
        help="read the file in memory, then build a trace of K copies of it within the budget: the "
        "finalize + LOD + store share at K times the size (reading-phase numbers and MB/s then say "
        "nothing about the reader)",
    )
    args = parser.parse_args(argv)
    path = os.path.abspath(args.path)
    size = os.path.getsize(path)
    fmt = detect.XPLANE if path.endswith(".xplane.pb") else detect.CHROME_TRACE
    budget = (
        args.memory_mb << 20 if args.memory_mb else ingest_memory.child_budget(ingest_memory.DEFAULT_TOTAL_MB)
    )
    print(f"{path}: {size / 1e6:.1f} MB, {fmt}, child budget {budget / 1e6:.0f} MB")
    for k in range(args.runs):
        r = run_once(path, fmt, budget, args.replicate)
        mb = {
            name: r[name] / 1e6
            for name in r
            if name not in ("total_s", "events", "spilled") and not name.endswith("_s")
        }
        print(
            f"  run {k + 1}: {r['total_s']:.2f} s = {size / 1e6 / r['total_s']:.1f} MB/s, "
            f"{r['events'] / r['total_s'] / 1e6:.2f} M events/s ({r['events']} events, "
            f"{'spilled' if r['spilled'] else 'in memory'}) | read {r['read_s']:.2f} s, finalize "
            f"{r['finalize_s']:.2f} s, LOD + store {r['lod_store_s']:.2f} s | CPU {r['cpu_s']:.1f} s"
        )
        print(
            f"    sampled peak (child + helpers) {mb['sampled_peak']:.0f} MB (anon {mb['sampled_anon']:.0f}, "
            f"file {mb['sampled_file']:.0f}) | child idle {mb['idle_rss']:.0f} MB, VmHWM while reading "
            f"{mb['read_hwm']:.0f} MB, RSS entering finalize {mb['rss_at_finalize']:.0f} MB, VmHWM of "
            f"finalize + LOD + store {mb['after_finalize_hwm']:.0f} MB | helper VmHWM {mb['helper_hwm']:.0f} MB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
