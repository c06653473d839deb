"""The allocator timelines of real TensorFlow XPlanes (`MemoryAllocation` / `MemoryDeallocation`).

tests/data/memory/tf_keras_cpu_bfc.xplane.pb (PROVENANCE.md): a Keras CPU fit with TensorFlow's BFC
CPU allocator, 818 allocations and 810 frees; tests/data/xplane/gpu_8x_tf_training.xplane.pb: a
TensorFlow 8-GPU training whose GPU BFC allocators GPU_1_bfc, GPU_4_bfc, GPU_6_bfc and gpu_host_bfc
write them. The expectations are recomputed from the events' own stats (their args JSON read with the
standard library), and the peak, when it is first reached, its op, shape, dtype and region are XProf's
memory_profile's (xprof 2.24.2; its answers cut to these figures by
`benchmarks/memory_profile_vs_xprof.py --save` in tests/data/memory/xprof/*.memory_profile.json).
"""

from __future__ import annotations

import functools
import json
import pathlib

import msgspec
import pytest

from profscope.analysis import memory_xplane
from profscope.analysis import memory_xplane_records as xplane_records
from profscope.analysis import steps as host_steps
from profscope.tools.memory import analysis
from profscope.tools.memory.answers import MemoryDevice
from tests.support import DATA_DIR
from tests.support.overview import host_events

TF = DATA_DIR / "memory" / "tf_keras_cpu_bfc.xplane.pb"
GPU = DATA_DIR / "xplane" / "gpu_8x_tf_training.xplane.pb"
XPROF = DATA_DIR / "memory" / "xprof"
GPU_ALLOCATORS = ["GPU_1_bfc", "GPU_4_bfc", "GPU_6_bfc", "gpu_host_bfc"]


@functools.cache
def raw_events(path: pathlib.Path = TF) -> list[tuple[int, int, str, dict]]:
    """(time ps, event index, name, stats) of the allocator events, in time order."""
    trace = host_events(path).trace
    names = {memory_xplane.ALLOCATION, memory_xplane.DEALLOCATION}
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
    xprof = json.loads((XPROF / "tf_keras_cpu_bfc.memory_profile.json").read_text())[
        "bfc_cpu_allocator_for_gpu"
    ]
    at = xprof["peakSnapshot"]
    assert (
        peak.allocated_bytes
        == highest
        == int(xprof["profileSummary"]["peakStats"]["heapAllocatedBytes"])
        == 886_528
    )
    after_first = int(at["timeOffsetPs"]) - int(xprof["firstTimeOffsetPs"])
    assert (
        round((peak.time_ns - device().start_ns) * 1000)
        == first - raw[0][0]
        == after_first
        == 175_594_115_000
    )
    # the event's own tf_op, inside the TraceMe of its op (_MklMatMul)
    assert peak.op == "StatefulPartitionedCall/gradient_tape/sequential_1/dense_1_2/MatMul/MatMul"
    assert peak.op == at["activityMetadata"]["tfOpName"]
    assert peak.op_path[-2:] == ["_MklMatMul", peak.op]


def test_pairs_by_address_in_time_order_and_what_the_peak_holds() -> None:
    open_at: dict[int, int] = {}
    freed = orphans = 0
    for _, _, name, stats in raw_events():
        if name == memory_xplane.ALLOCATION:
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
    assert d.reserved is msgspec.UNSET and d.reserved_reason == analysis.RESERVED_ZERO_XPLANE


@functools.cache
def gpu_allocators() -> tuple[dict[str, xplane_records.MemoryRecords], dict[str, MemoryDevice]]:
    events = host_events(GPU)
    found, skipped = xplane_records.read(events)
    assert skipped == xplane_records.Skipped()
    steps = host_steps.find(events, None)
    clock = analysis.HostClock("gpu", 0, 0)
    records = {r.label: r for r in found}
    return records, {r.label: analysis.device(r, events, steps, clock, r.label) for r in found}


@pytest.mark.parametrize("name", GPU_ALLOCATORS)
def test_gpu_allocators_peak_and_its_op_are_xprofs(name: str) -> None:
    xprof = json.loads((XPROF / "gpu_8x_tf_training.memory_profile.json").read_text())
    assert sorted(xprof) == sorted(gpu_allocators()[1]) == GPU_ALLOCATORS
    records, d = gpu_allocators()[0][name], gpu_allocators()[1][name]
    theirs, at = xprof[name], xprof[name]["peakSnapshot"]
    raw = [e for e in raw_events(GPU) if e[3]["allocator_name"] == name]
    highest = max(stats["bytes_allocated"] for _, _, _, stats in raw)
    first = next(k for k, (_, _, _, stats) in enumerate(raw) if stats["bytes_allocated"] == highest)
    assert d.events == len(raw) >= theirs["sampledSnapshots"]
    assert (
        d.reserved_reason == analysis.RESERVED_ZERO_XPLANE
        and int(at["aggregationStats"]["stackReservedBytes"]) == 0
    )
    assert (
        d.peak.allocated_bytes == highest == int(theirs["profileSummary"]["peakStats"]["heapAllocatedBytes"])
    )
    after_first = round((d.peak.time_ns - d.start_ns) * 1000)
    assert (
        after_first == raw[first][0] - raw[0][0] == int(at["timeOffsetPs"]) - int(theirs["firstTimeOffsetPs"])
    )
    assert d.peak.op == raw[first][3]["tf_op"] == at["activityMetadata"]["tfOpName"]
    # the block allocated at the peak, as the event describes it and XProf shows it
    peak_at = int(records.allocated.argmax())
    own = records.own
    assert own is not None and records.event[peak_at] == raw[first][1]
    xprof_meta = at["activityMetadata"]
    # XProf writes "" for a text the event lacks and INVALID for DataType 0: we say nothing (None)
    assert (
        own.text(own.shape, peak_at) == raw[first][3].get("shape") == (xprof_meta.get("tensorShape") or None)
    )
    assert own.text(own.dtype, peak_at) == {"INVALID": None}.get(
        xprof_meta["dataType"], xprof_meta["dataType"]
    )
    region = raw[first][3].get("region_type")
    assert own.text(own.region, peak_at) == region == (xprof_meta.get("regionType") or None)


def test_gpu_rows_show_the_events_own_op_shape_dtype_and_region() -> None:
    raw = [
        e
        for e in raw_events(GPU)
        if e[3]["allocator_name"] == "GPU_4_bfc" and e[2] == memory_xplane.ALLOCATION
    ]
    by_event = {index: stats for _, index, _, stats in raw}
    d = gpu_allocators()[1]["GPU_4_bfc"]
    described = [a for a in d.allocations if a.shape is not msgspec.UNSET]
    assert described and all(
        a.dtype is not msgspec.UNSET and a.region is not msgspec.UNSET for a in described
    )
    # every row's texts are one allocation event's own stats at that address and time
    stats_of = {(hex(s["addr"]), t): s for t, _, _, s in raw}
    for row in d.allocations:
        stats = stats_of[(row.addr, round(row.alloc_ns * 1000))]
        assert row.alloc_op == stats["tf_op"] and row.shape == stats.get("shape", msgspec.UNSET)
        assert row.dtype == memory_xplane.dtype_name(stats["data_type"])
        assert row.region == stats.get("region_type", msgspec.UNSET)
    assert len(by_event) == d.allocations_count
    # the largest block live at GPU 4's peak: BERT-large's word embeddings cast to half
    top = d.live_at_peak[0]
    assert (top.op, top.shape, top.dtype) == (
        "replica_4/bert_span_labeler/bert_encoder_1/word_embeddings/GatherV2/Cast",
        "[30522,1024]",
        "half",
    )
    assert (top.bytes, top.count) == (30522 * 1024 * 2, 1)
    host = gpu_allocators()[1]["gpu_host_bfc"]  # few groups: all listed, adding up to the live blocks
    assert sum(g.bytes for g in host.live_at_peak) == host.live_at_peak_bytes
    assert sum(g.count for g in host.live_at_peak) == host.live_at_peak_count


def test_data_type_names_are_tensorflows() -> None:
    assert [memory_xplane.dtype_name(v) for v in (0, 1, 3, 10, 14, 19, 99)] == [
        "",
        "float",
        "int32",
        "bool",
        "bfloat16",
        "half",
        "DataType 99",
    ]


def test_tpu_allocators_are_named_by_device_and_frees_take_their_block_s_size() -> None:
    """The TPU runtime's events (tests/data/xplane/tpu_v6e_inference.xplane.pb) name no allocator but
    the device (`index_on_host`, XProf's memory id), and its frees carry no `allocation_bytes`: each
    device is one allocator, and each free releases the block allocated before it at its address."""
    tpu = DATA_DIR / "xplane" / "tpu_v6e_inference.xplane.pb"
    raw = raw_events(tpu)
    events = host_events(tpu)
    found, skipped = xplane_records.read(events)
    assert skipped == xplane_records.Skipped()
    devices = sorted({stats["index_on_host"] for _, _, _, stats in raw})
    assert [r.label for r in found] == [f"device {d}" for d in devices] == [f"device {d}" for d in range(4)]
    steps = host_steps.find(events, None)
    clock = analysis.HostClock("tpu", 0, 0)
    for records, number in zip(found, devices):
        mine = [e for e in raw if e[3]["index_on_host"] == number]
        frees = [e for e in mine if e[2] == memory_xplane.DEALLOCATION]
        assert all("allocation_bytes" not in stats for _, _, _, stats in frees)
        open_size: dict[int, int] = {}
        freed_sizes = []
        for _, _, name, stats in mine:
            if name == memory_xplane.ALLOCATION:
                open_size[stats["addr"]] = stats["allocation_bytes"]
            else:
                freed_sizes.append(open_size.pop(stats["addr"]))
        assert sorted(-records.size[records.size < 0]) == sorted(freed_sizes) and len(freed_sizes) == len(
            frees
        )
        d = analysis.device(records, events, steps, clock, records.label)
        assert d.never_freed_count == len(open_size) and d.freed_before_capture_count == 0
        assert d.peak.allocated_bytes == max(stats["bytes_allocated"] for _, _, _, stats in mine)
        # every event's change of bytes_allocated is its own block: nothing unexplained
        assert d.notes == [] and d.live_at_peak_bytes == d.peak.allocated_bytes
