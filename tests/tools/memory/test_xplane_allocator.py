"""The allocator timeline of a real TensorFlow XPlane (`MemoryAllocation` / `MemoryDeallocation`).

tests/data/memory/tf_keras_cpu_bfc.xplane.pb (PROVENANCE.md): a Keras CPU fit with TensorFlow's BFC
CPU allocator, 818 allocations and 810 frees. The expectations are recomputed from the events' own
stats (their args JSON read with the standard library), and the peak is XProf's memory_profile figure
(xprof 2.24.2, `benchmarks/memory_profile_vs_xprof.py`: peakStats.heapAllocatedBytes 886,528, first
reached 175,594,115,000 ps after the allocator's first event).
"""

from __future__ import annotations

import functools
import json

import msgspec

from profscope.analysis import steps as host_steps
from profscope.tools.memory import analysis, xplane_records
from profscope.tools.memory.answers import MemoryDevice
from tests.support import DATA_DIR
from tests.support.overview import host_events

TF = DATA_DIR / "memory" / "tf_keras_cpu_bfc.xplane.pb"
XPROF_PEAK_BYTES = 886_528
XPROF_PEAK_AFTER_FIRST_PS = 175_594_115_000


@functools.cache
def raw_events() -> list[tuple[int, int, str, dict]]:
    """(time ps, event index, name, stats) of the allocator events, in time order."""
    trace = host_events(TF).trace
    names = {xplane_records.ALLOCATION, xplane_records.DEALLOCATION}
    found = []
    for i in range(trace.num_events):
        name = trace.strings[trace.ev_name[i]]
        if name in names:
            found.append((int(trace.ev_start_ps[i]), i, name, json.loads(bytes(trace.args_json(i)))))
    return sorted(found)


@functools.cache
def device() -> MemoryDevice:
    events = host_events(TF)
    (records,), skipped = xplane_records.read(events)
    assert skipped == xplane_records.Skipped()
    clock = analysis.HostClock("tf", 0, 0)
    return analysis.device(records, events, host_steps.find(events, None), clock, records.label)


def test_one_allocator_named_by_its_memory_id() -> None:
    raw = raw_events()
    assert {stats["allocator_name"] for _, _, _, stats in raw} == {"bfc_cpu_allocator_for_gpu"}
    assert device().label == "bfc_cpu_allocator_for_gpu" and device().events == len(raw) == 818 + 810


def test_the_peak_is_the_highest_bytes_allocated_and_xprofs() -> None:
    raw = raw_events()
    highest = max(stats["bytes_allocated"] for _, _, _, stats in raw)
    first = next(t for t, _, _, stats in raw if stats["bytes_allocated"] == highest)
    peak = device().peak
    assert peak.allocated_bytes == highest == XPROF_PEAK_BYTES
    assert round((peak.time_ns - device().start_ns) * 1000) == first - raw[0][0] == XPROF_PEAK_AFTER_FIRST_PS
    assert peak.op == "_MklMatMul"  # the TensorFlow op's TraceMe enclosing the allocation


def test_pairs_by_address_in_time_order_and_what_the_peak_holds() -> None:
    open_at: dict[int, int] = {}
    freed = orphans = 0
    for _, _, name, stats in raw_events():
        if name == xplane_records.ALLOCATION:
            open_at[stats["addr"]] = stats["allocation_bytes"]
        elif open_at.pop(stats["addr"], None) is not None:
            freed += 1
        else:
            orphans += 1
    d = device()
    assert d.allocations_count == 818 and d.allocations_count - d.never_freed_count == freed
    assert d.never_freed_count == len(open_at) and d.never_freed_bytes == sum(open_at.values())
    assert d.freed_before_capture_count == orphans == 4
    assert d.live_at_peak_bytes + d.before_capture_bytes == d.peak.allocated_bytes
    assert d.reserved is msgspec.UNSET and d.reserved_reason == analysis.RESERVED_ZERO  # 0 on the CPU
