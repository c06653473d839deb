"""XPlane reader on real profiles: every count, name, time, arg and flow is checked against the
source as decoded independently by protobuf itself (a message class built from
tests/data/xplane/xspace_reference.textproto), never against the reader's own decoder."""

from __future__ import annotations

import collections
import math
from functools import cache
from pathlib import Path
from typing import Any

import fsspec
import msgspec
import numpy as np
import pytest

from profscope.formats.xplane import reader as xplane
from profscope.model.columns import Trace
from tests.support import DATA_DIR
from tests.support.xplane_messages import space_class

DATA = DATA_DIR / "xplane"
TPU = "tpu_v6e_inference.xplane.pb"
GPU_TF = "gpu_8x_tf_training.xplane.pb"
MI300 = "mi300_jax_conv.xplane.pb"
ALL = (TPU, GPU_TF, MI300)


@cache
def source(name: str) -> Any:
    return space_class().FromString((DATA / name).read_bytes())


@cache
def trace(name: str) -> Trace:
    return xplane.read(str(DATA / name), fsspec.filesystem("file"))


def stat_value(plane: Any, stat: Any) -> Any:
    """A stat's value as the reader is expected to show it in args."""
    which = stat.WhichOneof("value")
    if which is None:
        return None
    value = getattr(stat, which)
    if which == "ref_value":
        return plane.stat_metadata[value].name
    if which == "bytes_value":
        try:
            decoded = value.decode("utf-8")
        except UnicodeDecodeError:
            return value.hex()
        return decoded if all(c.isprintable() or c in "\t\n\r" for c in decoded) else value.hex()
    if which == "double_value" and math.isnan(value):
        return None
    return value


def timed_events(name: str) -> list[tuple[Any, Any, Any]]:
    """(plane, line, event) of every source event the timeline shows as a slice."""
    out = []
    for plane in source(name).planes:
        for line in plane.lines:
            if line.name == "_counters_":
                continue
            for event in line.events:
                if event.WhichOneof("data") != "num_occurrences":
                    out.append((plane, line, event))
    return out


def abs_ps(line: Any, event: Any) -> int:
    return line.timestamp_ns * 1000 + event.offset_ps


def event_name(plane: Any, event: Any) -> str:
    meta = plane.event_metadata[event.metadata_id]
    for stat in event.stats:
        if plane.stat_metadata[stat.metadata_id].name == "step_name":
            return stat_value(plane, stat)
    return meta.display_name or meta.name


def zero_ps(name: str) -> int:
    """Absolute ps of the trace's zero: the earliest event, rounded down to a whole ns."""
    return min(abs_ps(line, event) for _, line, event in timed_events(name)) // 1000 * 1000


def source_tracks(tr: Trace) -> np.ndarray:
    """Mask of the trace's events that come from the file (not derived lines)."""
    derived = [t.id for t in tr.tracks if t.kind == "derived"]
    return ~np.isin(tr.ev_track, derived)


def by_key(tr: Trace, mask: np.ndarray) -> dict[tuple[str, int, int, str], list[int]]:
    """Trace events by (section, start, duration, name)."""
    out: dict[tuple[str, int, int, str], list[int]] = collections.defaultdict(list)
    for i in np.flatnonzero(mask).tolist():
        section = tr.sections[tr.tracks[int(tr.ev_track[i])].section].name
        out[(section, int(tr.ev_start_ps[i]), int(tr.ev_dur_ps[i]), tr.strings[tr.ev_name[i]])].append(i)
    return out


def args(tr: Trace, index: int) -> dict[str, Any]:
    raw = tr.args_json(index)
    return msgspec.json.decode(raw) if raw else {}


@pytest.mark.parametrize("name", ALL)
def test_every_source_event_is_loaded_once_with_exact_times(name: str) -> None:
    tr = trace(name)
    zero = zero_ps(name)
    expected = collections.Counter(
        (plane.name, abs_ps(line, event) - zero, event.duration_ps, event_name(plane, event))
        for plane, line, event in timed_events(name)
    )
    mask = source_tracks(tr)
    got = collections.Counter({k: len(v) for k, v in by_key(tr, mask).items()})
    assert sum(expected.values()) == int(mask.sum()) > 0
    assert got == expected
    assert tr.skipped == {}


@pytest.mark.parametrize("name", ALL)
def test_planes_become_sections_host_first_then_devices_by_number(name: str) -> None:
    tr = trace(name)
    with_events = [p.name for p in source(name).planes if any(len(line.events) for line in p.lines)]
    ordered = sorted(tr.sections, key=lambda s: s.sort_index)
    assert sorted(s.name for s in ordered) == sorted(with_events)
    assert ordered[0].name == "/host:CPU" and ordered[0].kind == "cpu"
    devices = ordered[1:]
    numbers = [int(s.name.rsplit(":", 1)[1]) for s in devices]
    assert numbers == sorted(numbers)
    assert {s.kind for s in devices} == ({"tpu"} if name == TPU else {"gpu"})


@pytest.mark.parametrize("name", ALL)
def test_lines_become_tracks(name: str) -> None:
    tr = trace(name)
    for plane in source(name).planes:
        lines = [line for line in plane.lines if len(line.events)]
        if not lines:
            continue
        section = next(s for s in tr.sections if s.name == plane.name)
        tracks = {t.name: t for t in tr.tracks if t.section == section.id and t.kind != "derived"}
        if section.kind == "cpu":
            assert sorted(tracks) == sorted(line.display_name or line.name for line in lines)
            assert {t.kind for t in tracks.values()} == {"thread"}
        elif section.kind == "tpu":
            assert sorted(tracks) == sorted(line.name for line in lines)
        else:
            for line in lines:
                if line.name.startswith("Stream"):
                    number = line.name.split("#")[1].split("(")[0]
                    matching = [t for t in tracks.values() if t.name.startswith(f"Stream #{number} (")]
                    assert len(matching) == 1 and matching[0].kind == "stream"
                else:
                    assert tracks[line.name].kind == "line"


def test_gpu_streams_are_named_after_what_runs_on_them() -> None:
    names = {t.name for t in trace(GPU_TF).tracks if t.kind == "stream"}
    assert {"Stream #134 (Compute)", "Stream #135 (MemcpyH2D)", "Stream #136 (MemcpyD2H)"} <= names
    assert "Stream #19 (Compute)" in {t.name for t in trace(MI300).tracks}


@pytest.mark.parametrize("name", ALL)
def test_args_are_metadata_stats_then_event_stats(name: str) -> None:
    tr = trace(name)
    zero = zero_ps(name)
    index = by_key(tr, source_tracks(tr))
    checked = 0
    for plane, line, event in timed_events(name):
        meta = plane.event_metadata[event.metadata_id]
        expected: dict[str, Any] = {}
        if meta.display_name and meta.display_name != meta.name:
            expected["long_name"] = meta.name
        for stat in meta.stats:
            expected[plane.stat_metadata[stat.metadata_id].name] = stat_value(plane, stat)
        seen: collections.Counter[str] = collections.Counter()
        for stat in event.stats:
            key = plane.stat_metadata[stat.metadata_id].name
            seen[key] += 1
            if seen[key] > 1:
                key = f"{key} ({seen[key]})"
            expected.pop(key, None)
            expected[key] = stat_value(plane, stat)
        key = (plane.name, abs_ps(line, event) - zero, event.duration_ps, event_name(plane, event))
        candidates = [args(tr, i) for i in index[key]]
        assert expected in candidates, (key, expected, candidates)
        checked += 1
    assert checked == len(timed_events(name))


def test_tpu_op_args_carry_cost_model_stats() -> None:
    tr = trace(TPU)
    section = next(s for s in tr.sections if s.name == "/device:TPU:0")
    ops = next(t for t in tr.tracks if t.section == section.id and t.name == "XLA Ops")
    all_reduce = [
        args(tr, i)
        for i in np.flatnonzero(tr.ev_track == ops.id)
        if tr.strings[tr.ev_name[i]] == "all-reduce"
    ]
    assert all_reduce
    first = all_reduce[0]
    assert first["flops"] == 1342177280
    assert first["bytes_accessed"] == 10737418240
    assert first["hlo_category"] == "all-reduce"
    assert first["long_name"].startswith("%all-reduce = f32[5,1024,1024,256]")
    assert isinstance(first["device_duration_ps"], int)


def test_gpu_kernel_args_resolve_ref_values() -> None:
    tr = trace(MI300)
    kernels = [i for i in range(tr.num_events) if tr.strings[tr.ev_name[i]] == "loop_transpose_fusion.kd"]
    in_source = [e for p, _, e in timed_events(MI300) if event_name(p, e) == "loop_transpose_fusion.kd"]
    assert len(kernels) == len(in_source) > 0
    a = args(tr, kernels[0])
    assert a["hlo_op"] == "loop_transpose_fusion"
    assert a["hlo_module"] == "jit_forward_3d_conv"
    assert a["tf_op"] == "XlaModule:"
    assert a["program_id"] == 15
    assert a["kernel_details"].startswith(" grid:1280,1,1 block:256,1,1")


def test_clock_origin_is_the_absolute_time_of_the_trace_zero() -> None:
    for name in (TPU, MI300):
        env = next(p for p in source(name).planes if p.name == "Task Environment")
        start = next(
            s.uint64_value for s in env.stats if env.stat_metadata[s.metadata_id].name == "profile_start_time"
        )
        tr = trace(name)
        assert tr.clock_origin_ns == start + zero_ps(name) // 1000
        assert tr.metadata["profile_start_time_ns"] == start
        assert tr.ev_start_ps.min() >= 0
    # The 2020 TensorFlow profile has line timestamps relative to an unrecorded start.
    assert trace(GPU_TF).clock_origin_ns is None
    assert any("relative only" in w for w in trace(GPU_TF).warnings)


def correlation_pairs(name: str) -> set[tuple[tuple[str, int, str], tuple[str, int, str]]]:
    """(host event, device event) pairs sharing a correlation_id, from the source."""
    zero = zero_ps(name)
    host: dict[int, list[tuple[str, int, str]]] = collections.defaultdict(list)
    device: list[tuple[int, tuple[str, int, str]]] = []
    for plane, line, event in timed_events(name):
        for stat in event.stats:
            if plane.stat_metadata[stat.metadata_id].name == "correlation_id":
                who = (plane.name, abs_ps(line, event) - zero, event_name(plane, event))
                value = stat.uint64_value or stat.int64_value
                (host[value].append(who) if plane.name == "/host:CPU" else device.append((value, who)))
    pairs = set()
    for value, who in device:
        before = [h for h in host.get(value, []) if h[1] <= who[1]]
        if len(host.get(value, [])) == 1:
            pairs.add((host[value][0], who))
        elif before:
            pairs.add((max(before, key=lambda h: h[1]), who))
    return pairs


@pytest.mark.parametrize("name", (MI300, GPU_TF))
def test_host_launches_flow_to_device_activity_by_correlation_id(name: str) -> None:
    tr = trace(name)
    expected = correlation_pairs(name)
    assert len(expected) > 200

    def who(i: int) -> tuple[str, int, str]:
        section = tr.sections[tr.tracks[int(tr.ev_track[i])].section].name
        return (section, int(tr.ev_start_ps[i]), tr.strings[tr.ev_name[i]])

    got = {(who(s), who(d)) for s, d in zip(tr.flow_src.tolist(), tr.flow_dst.tolist(), strict=True)}
    assert got == expected
    assert {tr.strings[n] for n in tr.flow_name.tolist()} == {"gpu_launch"}


def test_tpu_async_ops_with_single_flow_ends_get_no_flows() -> None:
    # Each flow id in this file occurs once (async copy spans), so there is nothing to link.
    flows = collections.Counter()
    for plane, _, event in timed_events(TPU):
        for stat in event.stats:
            if plane.stat_metadata[stat.metadata_id].name == "flow":
                flows[(stat.uint64_value >> 2) & ((1 << 56) - 1)] += 1
    assert flows and set(flows.values()) == {1}
    assert trace(TPU).flow_src.shape[0] == 0


def merged(items: list[tuple[Any, int, int]]) -> list[tuple[Any, int, int]]:
    """Reference merge: consecutive items with the same key become one (key, start, end) box."""
    out: list[tuple[Any, int, int]] = []
    for key, start, end in items:
        if out and out[-1][0] == key:
            out[-1] = (key, out[-1][1], max(out[-1][2], end))
        else:
            out.append((key, start, end))
    return out


def derived_boxes(tr: Trace, section: str, track: str) -> list[tuple[str, int, int]]:
    sid = next(s.id for s in tr.sections if s.name == section)
    tid = next(t.id for t in tr.tracks if t.section == sid and t.name == track)
    idx = np.flatnonzero(tr.ev_track == tid)
    return sorted(
        (tr.strings[tr.ev_name[i]], int(tr.ev_start_ps[i]), int(tr.ev_start_ps[i] + tr.ev_dur_ps[i]))
        for i in idx
    )


def kernels_by_stream(name: str) -> dict[tuple[str, str], list[tuple[Any, Any, int, int]]]:
    zero = zero_ps(name)
    out = collections.defaultdict(list)
    for plane, line, event in timed_events(name):
        stats = {plane.stat_metadata[s.metadata_id].name: stat_value(plane, s) for s in event.stats}
        if plane.name.startswith("/device:GPU") and "kernel_details" in stats:
            number = line.name.split("#")[1].split("(")[0]
            start = abs_ps(line, event) - zero
            out[(plane.name, number)].append((stats, event, start, start + event.duration_ps))
    for items in out.values():
        items.sort(key=lambda k: k[2])
    return out


def test_gpu_xla_module_and_op_lines_merge_consecutive_kernels_per_stream() -> None:
    tr = trace(MI300)
    streams = kernels_by_stream(MI300)
    checked = 0
    for (plane, number), kernels in streams.items():
        with_op = [k for k in kernels if "hlo_op" in k[0]]
        if not with_op:
            continue
        modules = merged([(f"{k[0]['hlo_module']}({k[0]['program_id']})", k[2], k[3]) for k in with_op])
        assert derived_boxes(tr, plane, f"XLA Modules (Stream #{number})") == sorted(modules)
        ops = merged([(k[0]["hlo_op"], k[2], k[3]) for k in with_op])
        assert derived_boxes(tr, plane, f"XLA Ops (Stream #{number})") == sorted(ops)
        checked += 1
    assert checked == 8


def test_gpu_framework_lines_come_from_the_hlo_instruction_metadata() -> None:
    tr = trace(MI300)
    boxes = derived_boxes(tr, "/device:GPU:1", "Framework Ops (Stream #19)")
    names = collections.Counter(b[0] for b in boxes)
    # The conv kernels of one execution (Im2Col, GEMM, transpose) belong to one JAX op.
    assert names["conv_general_dilated"] == 5
    scope = derived_boxes(tr, "/device:GPU:1", "Framework Name Scope (Stream #19)")
    assert {b[0] for b in scope} == {"jit(forward_3d_conv)"}
    lines = derived_boxes(tr, "/device:GPU:1", "Source code (Stream #19)")
    assert {b[0] for b in lines} == {"/workspace/traces/generate_conv_trace.py:23"}
    # Each conv box spans exactly the kernels whose hlo_op is the conv.
    kernels = kernels_by_stream(MI300)[("/device:GPU:1", "19")]
    conv = merged(
        [
            (k[0]["hlo_op"] == "cudnn-conv.1" or k[0]["hlo_op"] == "input_transpose_fusion", k[2], k[3])
            for k in kernels
        ]
    )
    assert [(s, e) for key, s, e in conv if key] == [
        (s, e) for n, s, e in boxes if n == "conv_general_dilated"
    ]


def test_tpu_framework_lines_from_op_metadata_within_each_module_run() -> None:
    tr = trace(TPU)
    zero = zero_ps(TPU)
    plane = source(TPU).planes[0]
    assert plane.name == "/device:TPU:0"
    modules = sorted(
        (abs_ps(line, e) - zero, abs_ps(line, e) - zero + e.duration_ps)
        for line in plane.lines
        if line.name == "XLA Modules"
        for e in line.events
    )
    items = []
    for line in plane.lines:
        for event in line.events:
            meta = plane.event_metadata[event.metadata_id]
            stats = {
                plane.stat_metadata[s.metadata_id].name: stat_value(plane, s)
                for s in [*meta.stats, *event.stats]
            }
            if stats.get("_a") or not stats.get("tf_op"):
                continue
            start = abs_ps(line, event) - zero
            run = next((m for m in modules if m[0] <= start < m[1]), None)
            items.append(((stats["tf_op"], run), start, start + event.duration_ps))
    items.sort(key=lambda k: k[1])
    expected = sorted((key[0].split("/")[-1].rstrip(":"), s, e) for key, s, e in merged(items))
    assert len(expected) > 10
    assert derived_boxes(tr, "/device:TPU:0", "Framework Ops") == expected
    # No op box leaves the module execution it started in.
    for _, s, e in expected:
        assert any(m[0] <= s and e <= m[1] for m in modules)
    scopes = derived_boxes(tr, "/device:TPU:0", "Framework Name Scope")
    assert {s[0] for s in scopes} == {"jit(main)", "jit(f)", "jit(_psum)", "jit(broadcast_in_dim)"}
    sources = derived_boxes(tr, "/device:TPU:0", "Source code")
    assert {s[0].rsplit(":", 1)[0].rsplit("/", 1)[-1] for s in sources} == {"host_offload_stress_test.py"}


def test_launch_stats_per_gpu_and_step() -> None:
    tr = trace(GPU_TF)
    zero = zero_ps(GPU_TF)
    device_of: dict[int, str] = {}
    for plane, _, event in timed_events(GPU_TF):
        if plane.name.startswith("/device:GPU"):
            for stat in event.stats:
                if plane.stat_metadata[stat.metadata_id].name == "correlation_id":
                    device_of[stat.uint64_value] = plane.name
    launches: dict[tuple[str, int], list[tuple[int, int]]] = collections.defaultdict(list)
    for plane, line, event in timed_events(GPU_TF):
        if plane.name != "/host:CPU":
            continue
        stats = {plane.stat_metadata[s.metadata_id].name: stat_value(plane, s) for s in event.stats}
        if "correlation_id" in stats and "group_id" in stats and stats["correlation_id"] in device_of:
            start = abs_ps(line, event) - zero
            launches[(device_of[stats["correlation_id"]], stats["group_id"])].append(
                (start, event.duration_ps)
            )
    assert launches
    for (gpu, group), spans in launches.items():
        boxes = [b for b in derived_boxes(tr, gpu, "Launch Stats") if b[0] == f"Launch Stats for {group}"]
        assert boxes == [
            (f"Launch Stats for {group}", min(s for s, _ in spans), max(s + d for s, d in spans))
        ]
    sid = next(s.id for s in tr.sections if s.name == "/device:GPU:4")
    tid = next(t.id for t in tr.tracks if t.section == sid and t.name == "Launch Stats")
    for i in np.flatnonzero(tr.ev_track == tid):
        a = args(tr, int(i))
        spans = launches[("/device:GPU:4", a["group_id"])]
        assert a["num_launches"] == len(spans)
        assert a["max_launch_time_us"] == pytest.approx(max(d for _, d in spans) / 1e6)


def test_lines_the_producer_already_derived_are_not_derived_again() -> None:
    tr = trace(GPU_TF)
    sid = next(s.id for s in tr.sections if s.name == "/device:GPU:4")
    names = [t.name for t in tr.tracks if t.section == sid]
    assert names.count("Steps") == 1 and "TensorFlow Ops" in names
    assert not any(n.startswith("Framework Ops") for n in names)


def test_device_metadata_for_the_roofline() -> None:
    tr = trace(TPU)
    devices = tr.metadata["devices"]
    tpu0 = next(s for s in tr.sections if s.name == "/device:TPU:0")
    info = devices[str(tpu0.id)]
    assert info["kind"] == "tpu" and info["ordinal"] == 0
    assert info["stats"]["peak_teraflops_per_second"] == 918.0
    assert info["stats"]["peak_hbm_bw_gigabytes_per_second"] == pytest.approx(1637.993152512)
    assert info["stats"]["device_type_string"] == "TPU v6 Lite"
    gpu = trace(MI300)
    g0 = next(s for s in gpu.sections if s.name == "/device:GPU:0")
    stats = gpu.metadata["devices"][str(g0.id)]["stats"]
    assert stats["device_vendor"] == "AMD" and stats["core_count"] == 304
    assert stats["memory_bandwidth"] == 2662400000000
    assert trace(GPU_TF).metadata["hostnames"] == ["34.83.195.179:6003"]
    # JSON-safe: the metadata survives a round trip unchanged.
    assert msgspec.json.decode(msgspec.json.encode(tr.metadata)) == tr.metadata


def test_progress_reports_bytes_read() -> None:
    calls: list[tuple[int, int]] = []
    xplane.read(str(DATA / MI300), fsspec.filesystem("file"), progress=lambda d, t: calls.append((d, t)))
    size = (DATA / MI300).stat().st_size
    assert calls and calls[-1] == (size, size)
    assert all(d <= t for d, t in calls)


def test_progress_rises_while_the_lines_are_read() -> None:
    """Progress is reported as the windows of events are read, not only at the end (what an
    ingest's `trace/meta` shows as `bytes_done`)."""
    calls: list[tuple[int, int]] = []
    path = DATA / MI300
    xplane.read(
        str(path), fsspec.filesystem("file"), progress=lambda d, t: calls.append((d, t)), batch_bytes=1 << 12
    )
    size = path.stat().st_size
    done = [d for d, _ in calls]
    assert len({d for d in done if 0 < d < size}) >= 3, calls
    assert done == sorted(done)


def test_reads_through_any_fsspec_filesystem() -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe("/profiles/mi300.xplane.pb", (DATA / MI300).read_bytes())
    tr = xplane.read("/profiles/mi300.xplane.pb", fs)
    assert tr.num_events == trace(MI300).num_events
    assert tr.source == "/profiles/mi300.xplane.pb" and tr.format == "xplane"


@pytest.mark.parametrize("name", ALL)
def test_trace_survives_the_cache(name: str, tmp_path: Path) -> None:
    from profscope.engine import store

    tr = trace(name)
    reopened = store.open(store.write(tr, str(tmp_path), "k" * 32))
    assert reopened.metadata == tr.metadata
    assert reopened.clock_origin_ns == tr.clock_origin_ns
    assert [t.name for t in reopened.tracks] == [t.name for t in tr.tracks]
    assert np.array_equal(reopened.ev_start_ps, tr.ev_start_ps)
    assert reopened.args_json(tr.num_events // 2) == tr.args_json(tr.num_events // 2)
