"""The XPlane allocators' peak the Overview shows (`analysis.memory_xplane.peak`) against the raw
`MemoryAllocation` / `MemoryDeallocation` events of the real 8-GPU TensorFlow XPlane
(tests/data/xplane/gpu_8x_tf_training.xplane.pb, four BFC allocators), their stats read with the
standard library: the highest `bytes_allocated` over the allocators, its allocator, the first event
reaching it and that event's own `tf_op`; the same as the Memory tab's peak of that allocator and
XProf's memory_profile (its answer saved in tests/data/memory/xprof). A trace without allocator
events gives none, never a peak of 0."""

from __future__ import annotations

import json

from profscope.analysis import memory_xplane
from profscope.analysis import memory_xplane_records as xplane_records
from profscope.analysis import steps as host_steps
from profscope.tools.memory import analysis
from tests.support import DATA_DIR
from tests.support.overview import GPU_TF, SLOW_INPUT, TF_CPU, host_events, overview
from tests.tools.memory.test_xplane_allocator import raw_events


def test_the_peak_is_the_highest_allocator_s_first_event_at_its_maximum() -> None:
    events = host_events(GPU_TF)
    steps = host_steps.find(events, None)
    peak = memory_xplane.peak(events, steps)
    raw = raw_events(GPU_TF)  # in time order
    top = max(stats["bytes_allocated"] for _, _, _, stats in raw)
    time_ps, _, _, stats = next(e for e in raw if e[3]["bytes_allocated"] == top)
    assert peak is not None and (peak.allocated_bytes, peak.device) == (top, stats["allocator_name"])
    assert peak.device == "GPU_6_bfc" and peak.op == stats["tf_op"] == "gradient_tape/replica_6/Tile"
    # its step is the one whose window holds the event (this capture has one step, "0")
    k = next(i for i in range(len(steps)) if steps.start_ps[i] <= time_ps < steps.end_ps[i])
    assert (peak.step, peak.step_number) == (steps.names[k], int(steps.numbers[k]))
    # XProf's memory_profile: the same bytes and op at that allocator's peak
    xprof = json.loads((DATA_DIR / "memory" / "xprof" / "gpu_8x_tf_training.memory_profile.json").read_text())
    theirs = xprof[peak.device]
    assert int(theirs["profileSummary"]["peakStats"]["heapAllocatedBytes"]) == peak.allocated_bytes
    assert theirs["peakSnapshot"]["activityMetadata"]["tfOpName"] == peak.op


def test_the_peak_is_the_memory_tab_s() -> None:
    events = host_events(GPU_TF)
    steps = host_steps.find(events, None)
    found, _ = xplane_records.read(events)
    clock = analysis.HostClock("gpu", 0, 0)
    tabs = [analysis.device(r, events, steps, clock, r.label) for r in found]
    top = max(tabs, key=lambda d: d.peak.allocated_bytes)
    peak = memory_xplane.peak(events, steps)
    assert peak is not None
    assert (peak.allocated_bytes, peak.device, peak.step, peak.step_number, peak.op) == (
        top.peak.allocated_bytes,
        top.label,
        top.peak.step,
        top.peak.step_number,
        top.peak.op,
    )


def test_the_overview_shows_it_and_none_without_allocator_events() -> None:
    (host,) = overview(GPU_TF).per_host
    assert host.memory_peak == memory_xplane.peak(
        host_events(GPU_TF), host_steps.find(host_events(GPU_TF), None)
    )
    for path in (TF_CPU, SLOW_INPUT):
        events = host_events(path)
        assert memory_xplane.peak(events, host_steps.find(events, None)) is None
