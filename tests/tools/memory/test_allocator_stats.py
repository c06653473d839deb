"""An XPlane allocator's own figures (`tools/memory/allocator_stats.py`: capacity, free bytes and
fragmentation at the peak, the fragmentation curve, the lifetime peak, the peak of stack + heap)
against XProf's memory_profile (xprof 2.24.2; its answers cut by `benchmarks/memory_profile_vs_xprof.py
--save` in tests/data/memory/xprof) and the events' own stats, on the real TensorFlow 8-GPU XPlane
(four BFC allocators), the Keras CPU BFC XPlane and the TPU XPlane (four chips with a reserved stack).
"""

from __future__ import annotations

import functools
import json

import msgspec
import pytest

from profscope.analysis import memory_records as records
from profscope.analysis import memory_xplane_records as xplane_records
from profscope.analysis import steps as host_steps
from profscope.tools.memory import analysis
from profscope.tools.memory.answers import MemoryDevice
from tests.support import DATA_DIR
from tests.support.overview import host_events
from tests.tools.memory.test_xplane_allocator import GPU, GPU_ALLOCATORS, TF, XPROF, raw_events

TPU = DATA_DIR / "xplane" / "tpu_v6e_inference.xplane.pb"


@functools.cache
def devices(path) -> dict[str, MemoryDevice]:  # noqa: ANN001
    events = host_events(path)
    found, _ = xplane_records.read(events)
    steps = host_steps.find(events, None)
    clock = analysis.HostClock(path.name, 0, 0)
    return {r.label: analysis.device(r, events, steps, clock, r.label) for r in found}


def xprof(path, name: str) -> dict:  # noqa: ANN001
    stem = path.name.removesuffix(".xplane.pb")
    answer = json.loads((XPROF / f"{stem}.memory_profile.json").read_text())
    return answer[name.removeprefix("device ")]


def raw_stats(path, name: str) -> list[dict]:  # noqa: ANN001
    key = "index_on_host" if name.startswith("device ") else "allocator_name"
    value = int(name.removeprefix("device ")) if name.startswith("device ") else name
    return [stats for _, _, _, stats in raw_events(path) if stats.get(key) == value]


CASES = [(GPU, name) for name in GPU_ALLOCATORS] + [(TF, "bfc_cpu_allocator_for_gpu")]


@pytest.mark.parametrize(("path", "name"), CASES)
def test_the_summary_at_the_peak_is_xprofs(path, name: str) -> None:  # noqa: ANN001
    d, theirs = devices(path)[name], xprof(path, name)
    own, summary = d.allocator_stats, theirs["profileSummary"]
    at = summary["peakStats"]
    assert own.capacity_bytes == int(summary["memoryCapacity"])
    assert own.free_at_peak_bytes == int(at["freeMemoryBytes"])
    assert own.fragmentation_at_peak == at["fragmentation"]
    assert own.peak_in_use_bytes == int(at["peakBytesInUse"]) == d.peak.allocated_bytes
    # capacity = what is held + what is free, after the peak event (the allocator's limit)
    raw = raw_stats(path, name)
    first_at_peak = next(s for s in raw if s["bytes_allocated"] == d.peak.allocated_bytes)
    assert own.capacity_bytes == sum(
        first_at_peak[k] for k in ("bytes_allocated", "bytes_reserved", "bytes_available")
    )


@pytest.mark.parametrize(("path", "name"), CASES)
def test_the_lifetime_peak_and_highest_fragmentation_are_the_events(path, name: str) -> None:  # noqa: ANN001
    d, theirs = devices(path)[name], xprof(path, name)
    raw = raw_stats(path, name)
    own = d.allocator_stats
    assert own.lifetime_peak_bytes == max(s["peak_bytes_in_use"] for s in raw) == raw[-1]["peak_bytes_in_use"]
    assert own.peak_fragmentation == max(s["fragmentation"] for s in raw)
    first = next(
        t for t, _, _, s in raw_events(path) if s in raw and s["fragmentation"] == own.peak_fragmentation
    )
    assert round(own.peak_fragmentation_ns * 1000) == first
    if theirs["sampledSnapshots"] == d.events:  # XProf kept every event: its timeline's highest values
        assert own.lifetime_peak_bytes == theirs["timelinePeakBytesInUse"]
        assert own.peak_fragmentation == theirs["timelinePeakFragmentation"]


def test_xprofs_lifetime_peak_can_fall_below_the_capture_s_peak() -> None:
    """XProf takes the `peak_bytes_in_use` of the last event in line order, not in time: for GPU_4_bfc
    its lifetime peak is below the peak inside the capture; ours is the allocator's high-water mark."""
    d, theirs = devices(GPU)["GPU_4_bfc"], xprof(GPU, "GPU_4_bfc")
    assert int(theirs["profileSummary"]["peakBytesUsageLifetime"]) == 5_006_386_688
    assert d.allocator_stats.lifetime_peak_bytes == d.peak.allocated_bytes == 6_208_853_760


@pytest.mark.parametrize(("path", "name"), CASES)
def test_the_fragmentation_curve_holds_xprofs_timeline(path, name: str) -> None:  # noqa: ANN001
    d, theirs = devices(path)[name], xprof(path, name)
    curve = d.allocator_stats.fragmentation
    assert curve.events == d.events and len(curve.time_ns) == len(curve.fraction) == d.events  # < 2,000
    ours = {(round((t - d.start_ns) * 1000), f) for t, f in zip(curve.time_ns, curve.fraction)}
    assert all((t, f) in ours for t, f in theirs["fragmentationCurve"])
    assert len(theirs["fragmentationCurve"]) == min(d.events, 1000)


@pytest.mark.parametrize("chip", range(4))
def test_tpu_capacity_and_stack_plus_heap_are_xprofs(chip: int) -> None:
    """The TPU runtime reserves a stack: XProf's peak is stack + heap, the Memory tab's the heap's."""
    name = f"device {chip}"
    d, theirs = devices(TPU)[name], xprof(TPU, name)
    summary = theirs["profileSummary"]
    own = d.allocator_stats
    assert own.capacity_bytes == int(summary["memoryCapacity"]) == 33_550_237_696
    assert own.peak_in_use_bytes == int(summary["peakStats"]["peakBytesInUse"]) > d.peak.allocated_bytes
    assert own.lifetime_peak_bytes == int(summary["peakBytesUsageLifetime"])
    assert d.reserved is not msgspec.UNSET


def test_kineto_devices_have_no_allocator_stats() -> None:
    path = DATA_DIR / "memory" / "peak_backward.pt.trace.json.gz"
    events = host_events(path)
    (found,), _ = records.read(events)
    d = analysis.device(found, events, host_steps.find(events, None), analysis.HostClock("k", 0, 0), "CPU")
    assert d.allocator_stats is msgspec.UNSET
