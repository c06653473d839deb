"""The allocator's peak the Overview shows (`analysis.memory.peak`) against the raw `[memory]`
events, recomputed from the gzipped JSON with the standard library: on a capture with two devices
(the H100 BERT trace: the CPU's and CUDA 0's allocators) it is the higher device's first event at
its highest `Total Allocated`; a trace whose `[memory]` events carry no totals (the V100 trace, an
older Kineto) and one without memory events give none, never a peak of 0."""

from __future__ import annotations

import gzip
import json
import pathlib

from profscope.analysis import memory
from profscope.analysis import steps as host_steps
from tests.support.overview import H100, SLOW_INPUT, V100, host_events


def raw_events(path: pathlib.Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return json.load(f)["traceEvents"]


def raw_peak(path: pathlib.Path) -> tuple[int, str, float]:
    """The highest `Total Allocated`, its device, and the time of the first event reaching it."""
    found = [e for e in raw_events(path) if e.get("name") == "[memory]"]
    top = max(e["args"]["Total Allocated"] for e in found)
    first = min(
        (e for e in found if e["args"]["Total Allocated"] == top),
        key=lambda e: (e["ts"], e["args"]["Ev Idx"]),
    )
    device = {0: "CPU", 1: "CUDA"}[first["args"]["Device Type"]]
    if first["args"]["Device Id"] >= 0:
        device += f" {first['args']['Device Id']}"
    return top, device, first["ts"]


def test_the_peak_is_the_highest_device_s_first_event_at_its_maximum() -> None:
    events = host_events(H100)
    steps = host_steps.find(events, None)
    peak = memory.peak(events, steps)
    top, device, ts = raw_peak(H100)
    assert peak is not None and (peak.allocated_bytes, peak.device) == (top, device)
    assert device == "CUDA 0"  # the CPU allocator of this capture holds a few bytes
    # its step is the step marker whose window holds the event
    step = next(e for e in raw_events(H100) if e.get("name") == peak.step)
    assert step["ts"] <= ts < step["ts"] + step["dur"] and peak.step == f"ProfilerStep#{peak.step_number}"
    assert peak.op == "aten::empty"


def test_no_peak_without_memory_totals() -> None:
    for path in (V100, SLOW_INPUT):
        events = host_events(path)
        assert memory.peak(events, host_steps.find(events, None)) is None
