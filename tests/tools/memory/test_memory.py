"""The Memory tab's figures against the raw `[memory]` events of two real PyTorch captures.

tests/data/memory (PROVENANCE.md): `peak_backward` puts a 16 MiB temporary in the backward of step
3; `leak_per_step` keeps 1 MiB more every step. Every expectation is recomputed here from the
gzipped JSON with the standard library (no profscope reader), or is what the capture scripts made.
"""

from __future__ import annotations

import functools
import gzip
import json
import pathlib

import msgspec
import pytest

from profscope.analysis import memory_records as records
from profscope.analysis import steps as host_steps
from profscope.tools.memory import analysis
from profscope.tools.memory.answers import MemoryDevice
from tests.support import DATA_DIR
from tests.support.overview import host_events

PEAK = DATA_DIR / "memory" / "peak_backward.pt.trace.json.gz"
LEAK = DATA_DIR / "memory" / "leak_per_step.pt.trace.json.gz"
MiB = 1024 * 1024


@functools.cache
def raw(path: pathlib.Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def raw_memory(path: pathlib.Path) -> list[dict]:
    """The `[memory]` events in the profiler's order (time, then `Ev Idx`)."""
    found = [e for e in raw(path)["traceEvents"] if e.get("name") == "[memory]"]
    return sorted(found, key=lambda e: (e["ts"], e["args"]["Ev Idx"]))


def raw_pairs(path: pathlib.Path) -> tuple[list[tuple[int, int, float, float | None]], int]:
    """(addr, bytes, alloc ts, free ts or None) per allocation, and the frees without one."""
    open_at: dict[int, int] = {}
    pairs: list[list] = []
    orphans = 0
    for e in raw_memory(path):
        addr, size = e["args"]["Addr"], e["args"]["Bytes"]
        if size > 0:
            open_at[addr] = len(pairs)
            pairs.append([addr, size, e["ts"], None])
        elif addr in open_at:
            pairs[open_at.pop(addr)][3] = e["ts"]
        else:
            orphans += 1
    return [tuple(p) for p in pairs], orphans


@functools.cache
def device_of(path: pathlib.Path) -> MemoryDevice:
    events = host_events(path)
    (found,), skipped = records.read(events)
    assert skipped == records.Skipped()
    clock = analysis.HostClock("host", 0, 0)
    return analysis.device(found, events, host_steps.find(events, None), clock, found.label)


def origin_us(path: pathlib.Path) -> float:
    """The raw `ts` of the trace's zero (the reader's time base), to turn answer ns back into ts."""
    return float(host_events(path).trace.metadata["reader"]["time_zero_us"])


@pytest.mark.parametrize("path", [PEAK, LEAK], ids=["peak", "leak"])
def test_the_peak_is_the_largest_total_allocated_of_the_raw_events(path: pathlib.Path) -> None:
    events = raw_memory(path)
    device = device_of(path)
    top = max(e["args"]["Total Allocated"] for e in events)
    first = next(e for e in events if e["args"]["Total Allocated"] == top)
    assert device.peak.allocated_bytes == top
    assert device.peak.time_ns == pytest.approx((first["ts"] - origin_us(path)) * 1000, abs=1)
    assert device.events == len(events)
    assert device.label == "CPU" and (device.device_type, device.device_id) == (0, -1)
    assert max(device.allocated.bytes) == top and device.allocated.events == len(events)


@pytest.mark.parametrize("path", [PEAK, LEAK], ids=["peak", "leak"])
def test_live_blocks_at_the_peak_add_up_to_the_peak(path: pathlib.Path) -> None:
    device = device_of(path)
    assert sum(g.bytes for g in device.live_at_peak) == device.live_at_peak_bytes
    assert sum(g.count for g in device.live_at_peak) == device.live_at_peak_count
    # The CPU allocator counts from the start of the capture: nothing older is held.
    assert device.before_capture_bytes == 0
    assert device.live_at_peak_bytes == device.peak.allocated_bytes
    assert sum(r.peak_bytes for r in device.ops) == device.live_at_peak_bytes


@pytest.mark.parametrize("path", [PEAK, LEAK], ids=["peak", "leak"])
def test_pairs_match_addresses_in_time_order(path: pathlib.Path) -> None:
    pairs, orphans = raw_pairs(path)
    device = device_of(path)
    zero = origin_us(path)
    assert device.allocations_count == len(pairs)
    assert device.allocated_bytes == sum(p[1] for p in pairs)
    assert device.freed_before_capture_count == orphans
    never = [p for p in pairs if p[3] is None]
    assert device.never_freed_count == len(never)
    assert device.never_freed_bytes == sum(p[1] for p in never)
    for row in device.allocations + device.never_freed:
        (match,) = [
            p for p in pairs if p[0] == int(row.addr, 16) and abs((p[2] - zero) * 1000 - row.alloc_ns) < 2
        ]
        _, size, _, free_ts = match
        assert row.size_bytes == size
        if free_ts is None:
            assert row.free_ns is msgspec.UNSET and row.lifetime_ns is msgspec.UNSET
        else:
            assert row.free_ns == pytest.approx((free_ts - zero) * 1000, abs=1)
            assert row.lifetime_ns == pytest.approx(row.free_ns - row.alloc_ns, abs=1e-6)
    assert device.notes == []


def test_the_backward_temporary_is_the_peak_of_step_3() -> None:
    device = device_of(PEAK)
    peak = device.peak
    assert peak.step == "ProfilerStep#3" and peak.step_number == 3
    assert "big_backward_temporary" in peak.op_path and peak.op_path[0] == "ProfilerStep#3"
    assert peak.op == peak.op_path[-1]
    top = device.live_at_peak[0]
    assert (top.op, top.shape, top.bytes, top.count) == ("aten::empty", "[4194304]", 16 * MiB, 1)
    (biggest, *_) = device.allocations
    assert biggest.size_bytes == 16 * MiB and biggest.step == "ProfilerStep#3"
    assert biggest.free_op == "big_backward_temporary" and biggest.shape == "[4194304]"
    by_step = {s.number: s for s in device.steps}
    assert max(by_step.values(), key=lambda s: s.peak_bytes).number == 3
    assert by_step[3].peak_bytes == peak.allocated_bytes
    assert all(by_step[n].peak_bytes < MiB for n in (1, 2, 4, 5))
    assert peak.trace_start_ns < peak.time_ns < peak.trace_end_ns
    assert device.reserved is msgspec.UNSET and "reserved not observed" in device.reserved_reason


def test_the_leak_grows_one_mebibyte_a_step_never_freed() -> None:
    device = device_of(LEAK)
    kept = [r for r in device.never_freed if r.alloc_op == "aten::mul" and r.shape == "[256, 1024]"]
    assert sorted(r.step for r in kept) == [f"ProfilerStep#{n}" for n in range(1, 6)]
    assert all(r.size_bytes == MiB for r in kept)
    steps = device.steps
    assert [s.number for s in steps] == [1, 2, 3, 4, 5]
    growth = [b.end_bytes - a.end_bytes for a, b in zip(steps, steps[1:])]
    assert growth == [MiB] * 4
    assert all(s.never_freed_bytes >= MiB for s in steps)
    assert device.peak.step == "ProfilerStep#5"


def test_the_step_values_follow_the_raw_totals() -> None:
    events = raw_memory(LEAK)
    zero = origin_us(LEAK)
    for step in device_of(LEAK).steps:
        before = [e for e in events if (e["ts"] - zero) * 1000 < step.end_ns - 0.5]
        assert step.end_bytes == before[-1]["args"]["Total Allocated"]
        inside = [
            e["args"]["Total Allocated"]
            for e in events
            if step.start_ns - 0.5 <= (e["ts"] - zero) * 1000 < step.end_ns - 0.5
        ]
        assert step.peak_bytes == max([step.start_bytes, *inside])
