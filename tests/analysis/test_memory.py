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


def memory_trace(tmp_path: pathlib.Path, args: list[dict | None]) -> pathlib.Path:
    """A Kineto-like trace of one `[memory]` event per entry of `args` (None: an event without args),
    1 µs apart on one thread, behind a `ProfilerStep#1` slice."""
    events: list[dict] = [{"ph": "X", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}]
    for k, a in enumerate(args):
        event = {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1}
        event["ts"] = 10 + k
        if a is not None:
            event["args"] = a
        events.append(event)
    path = tmp_path / "edge.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def alloc(addr: int, size: int, total: int, idx: int, **extra) -> dict:
    return {"Total Reserved": 1 << 21, "Total Allocated": total, "Bytes": size, "Device Id": 0, "Device Type": 1,
            "Addr": addr, "Ev Idx": idx, **extra}  # fmt: skip


def test_addresses_past_2_63_and_braces_in_strings_are_read_as_written(tmp_path: pathlib.Path) -> None:
    high = 2**64 - 4096
    path = memory_trace(
        tmp_path,
        [alloc(high, 256, 256, 1, note='}{"Addr": 1}'), alloc(-8192, 64, 320, 2), alloc(high, -256, 64, 3)],
    )
    found = memory.find(host_events(path).trace)
    assert found is not None and (found.unreadable, found.without_totals) == (0, 0)
    assert found.column("addr")[found.order].tolist() == [high, 2**64 - 8192, high]
    assert found.column("size")[found.order].tolist() == [256, 64, -256]
    assert found.allocated[found.order].tolist() == [256, 320, 64]


def test_events_without_args_or_totals_or_with_unreadable_args_are_counted_and_left_out(
    tmp_path: pathlib.Path,
) -> None:
    path = memory_trace(
        tmp_path,
        [alloc(4096, 256, 256, 1), None, {**alloc(8192, 64, 320, 2), "Addr": "0x2000"},
         {k: v for k, v in alloc(8192, 64, 320, 3).items() if k != "Total Allocated"}, alloc(4096, -256, 0, 4)],
    )  # fmt: skip
    found = memory.find(host_events(path).trace)
    assert found is not None and (found.unreadable, found.without_totals) == (2, 1)
    assert found.column("addr")[found.order].tolist() == [4096, 4096]
    assert found.allocated[found.order].tolist() == [256, 0]
    assert memory.device_label(int(found.device_type[0]), int(found.device_id[0])) == "CUDA 0"
