"""HolisticTraceAnalysis' own idle-time and temporal breakdowns of Kineto traces: the anchor the
Overview's per-stream idle split and time breakdown are checked against.

Usage (run it with the Python of a venv that has `pip install HolisticTraceAnalysis`; nothing of
profscope is needed):
    python3 -m venv HTA_VENV && HTA_VENV/bin/pip install HolisticTraceAnalysis   # once, any folder
    HTA_VENV/bin/python benchmarks/hta_anchor.py TRACE.json.gz [...] -o OUT_DIR

Each trace is analysed alone, as rank it declares (`distributedInfo`, else 0): HTA reads a folder
and wants one file per rank, so the file is linked into a fresh temporary folder. HTA is called the
way its documentation does, `TraceAnalysis(trace_dir=…)` with its defaults, then
`get_idle_time_breakdown(visualize=False)` (its default `consecutive_kernel_delay=30`) and
`get_temporal_breakdown(visualize=False)`. `OUT_DIR/<name>.hta.json` gets, per input:

- `idle_time_breakdown`: HTA's rows unchanged (`stream`, `idle_category`, `idle_time`,
  `idle_time_ratio`; HTA rounds them to 2 decimals);
- `temporal_breakdown`: HTA's row unchanged (`idle_time(us)`, `compute_time(us)`, … `_pctg`);
- `scope`: which events HTA analysed, so that a comparison can pick the same ones: the trace's time
  origin HTA subtracted (`min_ts`), the exact raw `ts` of the first device event
  (`first_device_start`, text), whether HTA dropped the last `ProfilerStep` (it keeps only the
  device events whose launch starts before the last step's start, and drops device events with no
  launch it kept), and per stream the count, first start and last start of the events of its idle
  split (and how many last 0 µs: HTA counts them, profscope's roles leave them out) and, for the
  temporal breakdown, the span and categories of the events it counts.

Times are in the trace's own unit (µs for a µs trace, ns for a ns one), as HTA gives them: HTA never
converts, and the `(us)` of its column names holds only for µs traces. `<name>` is the file name
without `.pt.trace.json.gz` / `.json.gz` / `.json`.
"""

from __future__ import annotations

import argparse
import decimal
import gzip
import hashlib
import json
import logging
import os
import pathlib
import sys
import tempfile
from importlib import metadata
from typing import Any

# The device event categories HTA's idle split reads (hta/analyzers/breakdown_analysis.py).
IDLE_SPLIT_CATEGORIES = (
    "kernel",
    "Kernel",
    "gpu_memset",
    "Memset",
    "gpu_memcpy",
    "Memcpy",
    "mtia_ccp_events",
)
SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json")


def anchor_name(path: pathlib.Path) -> str:
    """The name of a trace's answer: the file name without its trace suffix."""
    for suffix in SUFFIXES:
        if path.name.endswith(suffix):
            return path.name.removesuffix(suffix)
    return path.name


def first_device_start(path: pathlib.Path) -> str:
    """The exact text of the earliest device event's `ts` (kernel, copy, memset) in the raw file: it
    places HTA's rounded times (HTA rounds fractional µs) on another tool's clock to the ps."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as stream:
        raw = json.load(stream, parse_float=decimal.Decimal)
    starts = [
        decimal.Decimal(event["ts"])
        for event in raw["traceEvents"]
        if event.get("ph") == "X" and event.get("cat") in IDLE_SPLIT_CATEGORIES
    ]
    return str(min(starts))


def _plain(value: Any) -> Any:
    """A JSON-ready copy of a pandas/numpy scalar (NaN as None)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def _records(frame: Any) -> list[dict[str, Any]]:
    return [{str(k): _plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def hta_answer(path: pathlib.Path) -> dict[str, Any]:
    """HTA's idle split and temporal breakdown of one trace, with the scope it used."""
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as folder:
        os.symlink(path.resolve(), pathlib.Path(folder) / path.name)
        analysis = TraceAnalysis(trace_dir=folder)
        (rank,) = analysis.t.get_ranks()
        idle, _ = analysis.get_idle_time_breakdown(ranks=[rank], visualize=False)
        temporal = analysis.get_temporal_breakdown(visualize=False)
        trace = analysis.t.get_trace(rank)
        symbols = analysis.t.symbol_table.get_sym_table()
        step_names = [s for s in symbols if "ProfilerStep" in s]
        category = trace["cat"].map(lambda c: symbols[c])
        on_stream = trace[trace["stream"].ne(-1)]
        split_events = trace[trace["stream"].ne(-1) & category.isin(IDLE_SPLIT_CATEGORIES)]
        streams = {}
        for stream, rows in split_events.groupby("stream"):
            streams[str(_plain(stream))] = {
                "events": int(rows.shape[0]),
                "first_start": _plain(rows["ts"].min()),
                "last_start": _plain(rows["ts"].max()),
                "zero_duration": int(rows["dur"].eq(0).sum()),
            }
        counted = category[trace["stream"].ne(-1)].value_counts()
        return {
            "input": path.name,
            "input_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "hta_version": metadata.version("HolisticTraceAnalysis"),
            "rank": int(rank),
            "idle_time_breakdown": _records(idle),
            "temporal_breakdown": _records(temporal)[0],
            "scope": {
                "min_ts": _plain(analysis.t.min_ts),
                "first_device_start": first_device_start(path),
                "profiler_steps": len(step_names),
                "last_step_dropped": len(step_names) > 1,
                "idle_split_streams": streams,
                "temporal_events": int(on_stream.shape[0]),
                "temporal_first_start": _plain(on_stream["ts"].min()),
                "temporal_last_end": _plain((on_stream["ts"] + on_stream["dur"]).max()),
                "temporal_categories": {str(k): int(v) for k, v in counted.items()},
            },
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", type=pathlib.Path, help="Kineto trace files (read only)")
    parser.add_argument("-o", "--out", type=pathlib.Path, required=True, help="folder for <name>.hta.json")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # HTA logs every parse step at WARNING
    args.out.mkdir(parents=True, exist_ok=True)
    for path in args.traces:
        answer = hta_answer(path)
        target = args.out / f"{anchor_name(path)}.hta.json"
        target.write_text(json.dumps(answer, indent=1, sort_keys=True) + "\n")
        print(f"{path.name}: {len(answer['idle_time_breakdown'])} idle rows -> {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
