"""profscope's per-stream idle split and device time breakdown next to HolisticTraceAnalysis' on the
same Kineto traces, with the differences and what makes them.

Usage:
    .venv/bin/python benchmarks/overview_vs_hta.py [TRACE.json.gz ...] [--anchors DIR]
        [--run-hta [--hta-python HTA_VENV/bin/python]]

profscope runs in this process (the Chrome reader and `profscope.analysis`, no server). HTA's answer
is the saved anchor `<name>.hta.json` in `--anchors` (default tests/data/hta, made by
`benchmarks/hta_anchor.py`, see its README.md), or with `--run-hta` (or when there is no anchor) a
fresh run of that script under `--hta-python` (default: $HTA_PYTHON), the python of a venv that has
`pip install HolisticTraceAnalysis`. Default files: the GPU traces of tests/data/kineto and HTA's
critical-path examples copied into tests/data/hta/inputs.

Same events: HTA analyses only part of a trace (with two or more `ProfilerStep`s it drops the device
events launched in the last one), so profscope is given HTA's events: per stream, the device events
(kernels, copies, memsets) from HTA's first to its last start, HTA's times (the trace's µs from its
first event) placed on profscope's clock by the first device event. Each stream's idle split is
printed three ways, each adding one of HTA's definitions to profscope's (`device_idle.idle_split`):

- `profscope`: as the Overview computes it: gaps after the latest end so far, gaps > 0 only,
  kernel wait under 30 µs (HTA's `consecutive_kernel_delay=30`, documented in ns but compared with
  the trace's own times, µs in every Kineto trace: the same threshold);
- `+µs rounding`: event starts rounded up and ends down to whole µs, as HTA's parser does for a
  trace with fractional µs (`round_down_time_stamps`);
- `+HTA gaps` (= HTA's rules): the gap after the previous event's end (not the latest end), every
  gap counted, negative ones (overlapping events of one stream) included.

`gaps` is the number of gaps profscope counts / HTA's rules count. The last variant should give
HTA's figure exactly; the verdict names the variant from which on profscope's figure is HTA's. The
temporal breakdown (HTA's `get_temporal_breakdown`: over the span of the rank's device events, idle =
span − union of the events, compute = union of compute kernels, non-compute = the rest) is printed
three ways over HTA's span: `profscope`, the priority sweep (`breakdown.parts`; compute =
`device_compute`, non-compute = communication + copies + memsets, idle = everything else); `+µs
rounding`, the same events rounded as HTA does; `+HTA's events`, also the `cuda_sync` records HTA
counts as device time (`Stream Sync`, `Context Sync`, `Stream Wait Event`) and HTA's compute test
by name (`HTA_NON_COMPUTE`).
"""

from __future__ import annotations

import argparse
import dataclasses
import decimal
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
from typing import Any

import fsspec
import numpy as np

from profscope.analysis import breakdown, device_idle, intervals
from profscope.analysis import events as ev
from profscope.analysis import steps as steps_lib
from profscope.engine.lod import index as lod
from profscope.formats.chrome import reader as chrome_json

REPO = pathlib.Path(__file__).resolve().parent.parent
ANCHORS = REPO / "tests" / "data" / "hta"  # HTA's saved answers (tests/data/hta/README.md)
KINETO = REPO / "tests" / "data" / "kineto"
DEFAULT_FILES = [
    KINETO / "worker0.1623143089861.pt.trace.json.gz",
    KINETO / "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    KINETO / "alexnet.pt.trace.json.gz",
    KINETO / "bert_small.pt.trace.json.gz",
    KINETO / "mi250_minitoy.pt.trace.json.gz",
    KINETO / "rank-0.pt.trace.json.gz",
    KINETO / "rank-1.pt.trace.json.gz",
    ANCHORS / "inputs" / "simple_add.pt.trace.json.gz",
    ANCHORS / "inputs" / "event_sync.pt.trace.json.gz",
    ANCHORS / "inputs" / "event_sync_multi_stream.pt.trace.json.gz",
]
PYTHON_ENV = "HTA_PYTHON"
PS_PER_UNIT = 1_000_000  # every Kineto trace here is in µs, the unit HTA's figures are in
# HTA's idle split and temporal breakdown round to 2 decimals; whole µs otherwise.
TOLERANCE_UNITS = 0.01
IDLE_CATEGORIES = ("host_wait", "kernel_wait", "other")
NON_COMPUTE = ("communication", "memcpy_h2d", "memcpy_d2h", "memcpy_d2d", "memset")
STREAM_TRACK = re.compile(r"^stream (-?\d+)\b")


def _sibling(name: str) -> Any:
    """A script of this folder as a module (`hta_anchor` needs HTA only when it runs HTA)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


hta_anchor = _sibling("hta_anchor")


def hta_python(given: str | None = None) -> str:
    """The Python that runs HTA: `given`, else $HTA_PYTHON; exits saying how to get one."""
    python = given or os.environ.get(PYTHON_ENV)
    if not python:
        raise SystemExit(
            f"no Python with HTA: pass --hta-python or set ${PYTHON_ENV} to the python of a venv "
            "that has `pip install HolisticTraceAnalysis`"
        )
    return python


def hta_answer(
    path: pathlib.Path, run: bool, anchors: pathlib.Path = ANCHORS, python: str | None = None
) -> dict[str, Any]:
    """HTA's answer for `path`: the saved anchor, else (or with `run`) HTA run now under `python`."""
    anchor = anchors / f"{hta_anchor.anchor_name(path)}.hta.json"
    if not run and anchor.is_file():
        return json.loads(anchor.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        script = REPO / "benchmarks" / "hta_anchor.py"
        subprocess.run(
            [hta_python(python), str(script), str(path), "-o", tmp], check=True, capture_output=True
        )
        return json.loads((pathlib.Path(tmp) / anchor.name).read_text())


def host_events(path: pathlib.Path) -> ev.HostEvents:
    trace = chrome_json.read(str(path), fsspec.filesystem("file"))
    return ev.build(path.name.split(".")[0], trace, lod.build(trace).self_ps)


@dataclasses.dataclass(frozen=True)
class Split:
    """One stream's idle time (trace units) by category, and the gaps counted."""

    host_wait: float
    kernel_wait: float
    other: float
    gaps: int

    def get(self, category: str) -> float:
        return float(getattr(self, category))


def stream_tracks(events: ev.HostEvents) -> dict[int, int]:
    """Track id per Kineto stream number (the reader names stream tracks `stream N (…)`)."""
    out = {}
    for track_id, track in enumerate(events.trace.tracks):
        match = STREAM_TRACK.match(track.name)
        if match and events.device_track[track_id]:
            out[int(match.group(1))] = track_id
    return out


@dataclasses.dataclass(frozen=True)
class Clock:
    """HTA's times on profscope's clock. `shift` is profscope's ps of the trace's whole µs `base`
    (the raw `ts` of the first device event, rounded down); HTA's time h is the trace's
    `min_ts + h` µs (HTA subtracts its first event's `ts`)."""

    shift: int
    base: int
    min_ts: int

    def ps(self, hta_time: float) -> int:
        return (self.min_ts + int(hta_time) - self.base) * PS_PER_UNIT + self.shift

    def _as_hta_reads(self, ps: np.ndarray) -> np.ndarray:
        """The trace's µs of `ps` as HTA holds them: a float64 of the absolute `ts` (at epoch µs a
        quarter µs apart)."""
        return np.float64(self.base) + (ps - self.shift).astype(np.float64) / PS_PER_UNIT

    def _back(self, units: np.ndarray) -> np.ndarray:
        return (units - self.base).astype(np.int64) * PS_PER_UNIT + self.shift

    def hta_start(self, start_ps: np.ndarray) -> np.ndarray:
        """A start as HTA rounds it (`round_down_time_stamps`): its float rounded up to whole µs."""
        return self._back(np.ceil(self._as_hta_reads(start_ps)))

    def hta_end(self, start_ps: np.ndarray, dur_ps: np.ndarray) -> np.ndarray:
        """An end as HTA rounds it: the float start plus the float duration, rounded down."""
        end = self._as_hta_reads(start_ps) + dur_ps.astype(np.float64) / PS_PER_UNIT
        return self._back(np.floor(end))


def clock(events: ev.HostEvents, answer: dict[str, Any]) -> Clock:
    """Place HTA's times on profscope's: the first device event of both is the same event."""
    device_events = events.of_roles(*ev.DEVICE_ROLES)
    first_ps = int(events.trace.ev_start_ps[device_events].min())
    raw_first = decimal.Decimal(answer["scope"]["first_device_start"])
    base = int(raw_first // 1)
    shift = first_ps - int((raw_first - base) * PS_PER_UNIT)
    return Clock(shift, base, int(answer["scope"]["min_ts"]))


def hta_stream_events(events: ev.HostEvents, answer: dict[str, Any], at: Clock) -> dict[int, np.ndarray]:
    """Per stream, the device events HTA's idle split read: from its first to its last start (HTA
    rounds a fractional start up, so a start counts within the µs before)."""
    trace = events.trace
    device_events = events.of_roles(*ev.DEVICE_ROLES)
    tracks = stream_tracks(events)
    out = {}
    for stream, scope in answer["scope"]["idle_split_streams"].items():
        mine = device_events[trace.ev_track[device_events] == tracks[int(stream)]]
        start = trace.ev_start_ps[mine]
        lo, hi = at.ps(scope["first_start"] - 1), at.ps(scope["last_start"])
        out[int(stream)] = mine[(start > lo) & (start <= hi)]
    return out


def split(events: ev.HostEvents, at: Clock, mine: np.ndarray, rounded: bool, hta_gaps: bool) -> Split:
    """A stream's idle split by profscope's rules (`device_idle.idle_split`), with HTA's µs rounding
    and HTA's gaps swapped in as asked (module docstring)."""
    if not mine.shape[0]:
        return Split(0.0, 0.0, 0.0, 0)
    trace = events.trace
    prev_end, gap, host_wait, kernel_wait = device_idle.idle_split(events, mine)
    start = trace.ev_start_ps[mine]
    end = start + trace.ev_dur_ps[mine]
    linked = events.launch[mine] >= 0
    launch_start = trace.ev_start_ps[np.maximum(events.launch[mine], 0)]
    if rounded or hta_gaps:
        if rounded:
            start, end = at.hta_start(start), at.hta_end(start, end - start)
            launch_start = at.hta_start(launch_start)
        prev_end = np.concatenate(([start[0]], end[:-1] if hta_gaps else np.maximum.accumulate(end)[:-1]))
        gap = start - prev_end
        host_wait = linked & (launch_start > prev_end)
        kernel_wait = ~host_wait & (gap < device_idle.KERNEL_WAIT_PS)
    keep = np.ones(mine.shape[0], dtype=bool) if hta_gaps else gap > 0
    keep[0] = False
    g = gap[keep].astype(np.float64) / PS_PER_UNIT
    hw, kw = host_wait[keep], kernel_wait[keep]
    return Split(float(g[hw].sum()), float(g[kw].sum()), float(g[~hw & ~kw].sum()), int(keep.sum()))


VARIANTS = {
    "profscope": (False, False),
    "+µs rounding": (True, False),
    "+HTA gaps": (True, True),
}


def idle_splits(events: ev.HostEvents, answer: dict[str, Any]) -> dict[int, dict[str, Split]]:
    """Per stream, the idle split under each of `VARIANTS` on HTA's events."""
    at = clock(events, answer)
    return {
        stream: {name: split(events, at, mine, *rules) for name, rules in VARIANTS.items()}
        for stream, mine in hta_stream_events(events, answer, at).items()
    }


def hta_idle(answer: dict[str, Any]) -> dict[int, dict[str, float]]:
    """HTA's idle rows as stream → category → time (a category HTA does not list: 0)."""
    out: dict[int, dict[str, float]] = {}
    for row in answer["idle_time_breakdown"]:
        out.setdefault(int(row["stream"]), dict.fromkeys(IDLE_CATEGORIES, 0.0))[row["idle_category"]] = row[
            "idle_time"
        ]
    return out


@dataclasses.dataclass(frozen=True)
class Temporal:
    """A device time breakdown over one span (trace units)."""

    idle: float
    compute: float
    non_compute: float
    span: float


# HTA's test of a non-compute device event (hta/utils/utils.py, `re.match`): NCCL kernels, copies,
# memsets and names with `Sync`.
HTA_NON_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
TEMPORAL_VARIANTS = ("profscope", "+µs rounding", "+HTA's events")


def temporal(events: ev.HostEvents, answer: dict[str, Any], variant: str) -> Temporal:
    """profscope's breakdown over HTA's span of device events in HTA's three parts (module
    docstring); `+µs rounding` rounds the events as HTA does, `+HTA's events` also takes the
    events HTA counts as device time (`cuda_sync` ones whose `stream` is not -1) and HTA's
    compute test (a name matching `HTA_NON_COMPUTE` is not compute)."""
    at = clock(events, answer)
    scope = answer["scope"]
    lo = np.array([at.ps(scope["temporal_first_start"])], np.int64)
    hi = np.array([at.ps(scope["temporal_last_end"])], np.int64)
    span = float(hi[0] - lo[0]) / PS_PER_UNIT
    if variant == "profscope":
        layers = breakdown.layers(events, steps_lib.find(events, None))
        parts = {k: v * 1e3 / PS_PER_UNIT for k, v in breakdown.parts(layers, lo, hi, True)[0].items()}
        compute = parts["device_compute"]
        non_compute = sum(parts[c] for c in NON_COMPUTE)
        return Temporal(span - compute - non_compute, compute, non_compute, span)
    trace = events.trace
    device_events = events.of_roles(*ev.DEVICE_ROLES)
    is_compute = events.role[device_events] == ev.ROLE_COMPUTE
    if variant == "+HTA's events":
        device_events = np.concatenate((device_events, hta_sync_events(events)))
        names = [trace.strings[n] for n in trace.ev_name[device_events].tolist()]
        is_compute = np.array([not HTA_NON_COMPUTE.match(n) for n in names], dtype=bool)
    start = at.hta_start(trace.ev_start_ps[device_events])
    end = at.hta_end(trace.ev_start_ps[device_events], trace.ev_dur_ps[device_events])
    layers = [
        intervals.merge(start[is_compute], end[is_compute]),
        intervals.merge(start[~is_compute], end[~is_compute]),
    ]
    table = intervals.partition(layers, lo, hi)
    idle, busy, rest = (float(table[k, 0]) / PS_PER_UNIT for k in (2, 0, 1))
    return Temporal(idle, busy, rest, span)


def hta_sync_events(events: ev.HostEvents) -> np.ndarray:
    """The `cuda_sync` events HTA counts as device activity: a `stream` arg other than -1 (HTA
    reads `Context Sync`'s 4294967295, the unsigned −1, as a stream)."""
    trace = events.trace
    is_sync = np.array([s == "cuda_sync" for s in trace.strings], dtype=bool)
    syncs = np.flatnonzero(is_sync[trace.ev_cat] & (trace.ev_dur_ps > 0))
    streams = [json.loads(bytes(a) or b"{}").get("stream", -1) for a in ev.args_of(trace, syncs)]
    return syncs[np.array([int(s) != -1 for s in streams], dtype=bool)] if syncs.shape[0] else syncs


def _fmt(value: float) -> str:
    return f"{value:.2f}"


def _verdict(row: dict[str, float], theirs: float) -> str:
    """ "ok" when profscope's own figure is HTA's, else the variant (row order: each adds one of HTA's
    definitions) from which on the figure is HTA's, else "DIFFERS"."""
    names = list(row)
    if abs(row[names[0]] - theirs) <= TOLERANCE_UNITS:
        return "ok"
    for k in range(1, len(names)):
        if all(abs(row[n] - theirs) <= TOLERANCE_UNITS for n in names[k:]):
            return f"by definition: equal from {names[k]}"
    return f"DIFFERS ({row[names[-1]] - theirs:+.2f})"


def report(path: pathlib.Path, answer: dict[str, Any]) -> None:
    events = host_events(path)
    ours = idle_splits(events, answer)
    theirs = hta_idle(answer)
    print(f"\n### {path.name} (rank {answer['rank']}, HTA {answer['hta_version']}; µs)\n")
    print("| stream | category | gaps | " + " | ".join(VARIANTS) + " | HTA | verdict |")
    print("|---|---|---|" + "---|" * len(VARIANTS) + "---|---|")
    for stream in sorted(theirs):
        for category in IDLE_CATEGORIES:
            row = {name: ours[stream][name].get(category) for name in VARIANTS}
            figures = " | ".join(_fmt(v) for v in row.values())
            gaps = f"{ours[stream]['profscope'].gaps}/{ours[stream]['+HTA gaps'].gaps}"
            value = theirs[stream][category]
            print(f"| {stream} | {category} | {gaps} | {figures} | {_fmt(value)} | {_verdict(row, value)} |")
    hta_row = answer["temporal_breakdown"]
    ours_t = {variant: temporal(events, answer, variant) for variant in TEMPORAL_VARIANTS}
    print("\n| temporal | " + " | ".join(TEMPORAL_VARIANTS) + " | HTA | verdict |")
    print("|---|" + "---|" * len(TEMPORAL_VARIANTS) + "---|---|")
    for part, key in TEMPORAL_KEYS.items():
        row = {variant: getattr(t, part) for variant, t in ours_t.items()}
        value = float(hta_row[key])
        figures = " | ".join(_fmt(v) for v in row.values())
        print(f"| {part} | {figures} | {_fmt(value)} | {_verdict(row, value)} |")


TEMPORAL_KEYS = {
    "idle": "idle_time(us)",
    "compute": "compute_time(us)",
    "non_compute": "non_compute_time(us)",
    "span": "kernel_time(us)",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "traces", nargs="*", type=pathlib.Path, help="Kineto traces (default: the corpus' GPU ones)"
    )
    parser.add_argument(
        "--anchors", type=pathlib.Path, default=ANCHORS, help="folder of saved <name>.hta.json"
    )
    parser.add_argument("--run-hta", action="store_true", help="run HTA now instead of reading the anchors")
    parser.add_argument("--hta-python", help=f"python of a venv with HTA (default ${PYTHON_ENV})")
    args = parser.parse_args(argv)
    for path in args.traces or DEFAULT_FILES:
        report(path, hta_answer(path, args.run_hta, args.anchors, args.hta_python))
    return 0


if __name__ == "__main__":
    sys.exit(main())
