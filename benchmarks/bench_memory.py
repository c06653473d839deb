"""Latency of the `memory` answer on a trace with about a million `[memory]` events: cold and warm.

Usage:
    .venv/bin/python benchmarks/bench_memory.py [--copies 6410] [--full] [--cold 3] [--warm 5]
        [--profile]

The trace is the real capture tests/data/memory/peak_backward.pt.trace.json.gz (156 `[memory]`
events over 5 profiler steps) repeated `--copies` times in time, one copy after the other with a
1 ms gap: every copy's timestamps shifted by k × (span + gap), its `Ev Idx` by k × 10⁶, its
`ProfilerStep#N` renumbered N + 5k, so the steps, pairs and peak stay what they are in one copy
(addresses repeat, but each block is freed within its copy). By default a copy keeps its `[memory]`
events, its step markers and `record_function` labels and the metadata events (172 events, so
6,410 copies hold 1,000,000 `[memory]` events in 1.1 M events): the events the memory answer reads.
`--full` repeats every event of the capture (871 a copy, 5.6 M events for the same memory events).

The trace is written as JSON to a temporary folder, served by the plugin behind TensorBoard's WSGI
app in this process with an empty cache, and ingested (the ingest time is printed, not a goal).
Then `--cold` times: the plugin's caches cleared (classified events, steps, answers) and one `memory`
request; `--warm` times the same request again (the answer cache). Goals (issue 45, point 7): cold
≤ 2 s after ingest, warm ≤ 100 ms. Prints the median with min–max and the load average; timings on
a shared machine are noisy. `--profile` prints the cProfile top 25 of one cold answer.
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import json
import os
import pathlib
import pstats
import re
import statistics
import tempfile
import time

from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from profscope.plugin import ProfscopePlugin

REPO = pathlib.Path(__file__).resolve().parent.parent
CAPTURE = REPO / "tests/data/memory/peak_backward.pt.trace.json.gz"
BASE = "/data/plugin/profscope"
GAP_US = 1000.0
STEPS_PER_COPY = 5
STEP = re.compile(r"ProfilerStep#(\d+)")


def kept(event: dict, full: bool) -> bool:
    """The events a copy keeps: all with `--full`, else memory, steps, labels and metadata."""
    if full or event.get("ph") == "M" or event.get("name") == "[memory]":
        return True
    return event.get("cat") == "user_annotation" or STEP.fullmatch(str(event.get("name", ""))) is not None


def repeated(copies: int, full: bool, out: pathlib.Path) -> int:
    """Writes the repeated capture to `out`; returns how many `[memory]` events it holds."""
    with gzip.open(CAPTURE, "rt") as f:
        capture = json.load(f)
    events = [e for e in capture["traceEvents"] if kept(e, full)]
    timed = [e["ts"] for e in events if "ts" in e]
    span = max(e["ts"] + e.get("dur", 0) for e in events if "ts" in e) - min(timed) + GAP_US
    memory = 0
    with out.open("w") as f:
        head = {k: v for k, v in capture.items() if k != "traceEvents"}
        f.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
        first = True
        for k in range(copies):
            for event in events:
                if event.get("ph") == "M" and k:
                    continue
                copy = dict(event)
                if "ts" in copy:
                    copy["ts"] = event["ts"] + k * span
                name = STEP.fullmatch(str(copy.get("name", "")))
                if name:
                    copy["name"] = f"ProfilerStep#{int(name.group(1)) + STEPS_PER_COPY * k}"
                if copy.get("name") == "[memory]":
                    copy["args"] = {**event["args"], "Ev Idx": event["args"]["Ev Idx"] + k * 1_000_000}
                    memory += 1
                f.write(("" if first else ",\n") + json.dumps(copy))
                first = False
        f.write("\n]}\n")
    return memory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=6410, help="copies of the capture, one after the other")
    parser.add_argument("--full", action="store_true", help="repeat every event of the capture")
    parser.add_argument("--cold", type=int, default=3, help="cold answers (caches cleared before each)")
    parser.add_argument("--warm", type=int, default=5, help="warm answers")
    parser.add_argument("--profile", action="store_true", help="print the cProfile of one cold answer")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = pathlib.Path(tmp)
        (scratch / "logdir" / "run").mkdir(parents=True)
        trace = scratch / "logdir" / "run" / "worker0.1.pt.trace.json"
        start = time.perf_counter()
        memory_events = repeated(args.copies, args.full, trace)
        print(
            f"trace: {memory_events:,} [memory] events, {trace.stat().st_size / 1e6:.0f} MB, written in {time.perf_counter() - start:.1f} s"
        )
        flags = argparse.Namespace(profscope_cache_dir=str(scratch / "cache"))
        plugin = ProfscopePlugin(base_plugin.TBContext(logdir=str(scratch / "logdir"), flags=flags))
        client = Client(application.TensorBoardWSGI([plugin]))
        runs = json.loads(client.get(f"{BASE}/runs").get_data())["runs"]
        session = runs[0]["sessions"][0]
        subject = f"run=run&session={session['name']}&host={session['hosts'][0]['name']}"
        start = time.perf_counter()
        while client.get(f"{BASE}/trace/meta?{subject}").status_code == 202:
            time.sleep(0.1)
        print(f"ingest: {time.perf_counter() - start:.1f} s (not a goal)")

        def timed() -> tuple[float, dict]:
            begin = time.perf_counter()
            res = client.get(f"{BASE}/memory?{subject}")
            elapsed = time.perf_counter() - begin
            assert res.status_code == 200, res.status_code
            return elapsed, json.loads(res.get_data())

        cold = []
        for _ in range(args.cold):
            plugin.caches.clear()
            elapsed, answer = timed()
            cold.append(elapsed)
        (device,) = answer["devices"]
        assert device["events"] == memory_events, (device["events"], memory_events)
        warm = [timed()[0] for _ in range(args.warm)]
        if args.profile:
            plugin.caches.clear()
            profiler = cProfile.Profile()
            profiler.enable()
            timed()
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())

    def line(name: str, values: list[float]) -> str:
        ms = [v * 1e3 for v in values]
        return f"{name}: median {statistics.median(ms):.0f} ms (min {min(ms):.0f}, max {max(ms):.0f}, n={len(ms)})"

    print(line("cold", cold), "· goal ≤ 2000 ms")
    print(line("warm", warm), "· goal ≤ 100 ms")
    print(
        f"peak {device['peak']['allocated_bytes']:,} B in {device['peak'].get('step')}; load average {load}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
