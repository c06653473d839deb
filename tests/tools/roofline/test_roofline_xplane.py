"""The roofline on real XPlanes: program rows against figures computed here from the raw op stats and
against XProf's own answers, device peaks and their sources, the not-observed answers, and the
`roofline` route (202 while ingesting, parameter errors, overrides) through TensorBoard's WSGI app."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time

import fsspec
import numpy as np
import pytest

from profscope.formats.xplane import reader as xplane
from profscope.model.columns import TraceBuilder
from profscope.tools.roofline import analysis, peaks
from tests.support import DATA_DIR, REPO
from tests.support.xplane_messages import varint

DATA = DATA_DIR / "xplane"
CPU_XPLANE = REPO / "demo/logdir/jax_cpu_training/plugins/profile/2026_11_30_00_33_00/vm.xplane.pb"
BASE = "/data/plugin/profscope"
GIB = 2**30

# XProf 2.24.2 `roofline_model`, program row "Total" (include_infeed_outfeed = true), from
# tests/data/xprof/<name>.roofline.json made by benchmarks/xprof_roofline.py
# (see tests/data/xprof/README.md). Rates in GFLOP/s and GiB/s as XProf gives them.
XPROF_TPU = {
    "total_time_us": 363729698.76875,
    "total_time_per_core_us": 90932424.6921875,
    "measured_flop_rate_gflops": 4.472328954348669,
    "hbm_bw_gibs": 66.3267258122303,
    "hbm_operational_intensity": 0.0627979274611399,
    "bound_by": "HBM",
    "roofline_efficiency": 0.04347867965403494,
    "compute_efficiency": 4.871818033059552e-06,
    "peak_flop_rate_gflops": 918000.0,
    "peak_hbm_gbs": 1637.993152512,
}
XPROF_MI300 = {"total_time_us": 832149.873, "peak_flop_rate_gflops": 1307443.2, "shm_gbs": 81715.2}
XPROF_MI300.update(measured_flop_rate_gflops=3105.846925725602, hbm_bw_gibs=52.4552928498772, bound_by="HBM")
# Its op rows (same file, same row set): (occurrences, total time µs, GFLOP/s, Memory BW GiB/s, HBM GiB/s,
# bound by). Occurrences are kernel launches, and the cost of one execution is charged per launch (Q6);
# the HBM bytes of a custom call are its operands only, its Memory BW holds all its bytes (Q3).
XPROF_MI300_OPS = {
    "input_transpose_fusion": (40, 14344.14, 0.0, 2971.2010431067147, 2971.2010431067147, "HBM"),
    "cudnn-conv.1": (79, 12531.616, 206240.7693309466, 3399.7948268037426, 41.362667388876666, "Compute"),
    "input_transpose_fusion.1": (39, 481.4, 0.0, 964.213467555567, 964.213467555567, "HBM"),
    "loop_transpose_fusion": (40, 193.52, 0.0, 252.31565212897888, 252.31565212897888, "HBM"),
}
MI300_HBM_PEAK = 5.3e12  # the parts table's MI300X figure (Q5: the collector's is 2662.4 GB/s)


@pytest.fixture(scope="module")
def tpu_trace():
    return xplane.read(str(DATA / "tpu_v6e_inference.xplane.pb"), fsspec.filesystem("file"))


@pytest.fixture(scope="module")
def mi300_trace():
    return xplane.read(str(DATA / "mi300_jax_conv.xplane.pb"), fsspec.filesystem("file"))


def roofline_of(trace, options: analysis.Options | None = None):
    host = analysis.host_devices("host", trace)
    return analysis.answer("test", [host], options or analysis.Options(), None)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        value |= (data[pos] & 0x7F) << shift
        pos += 1
        if data[pos - 1] < 0x80:
            return value, pos
        shift += 7


def _hbm_bytes(breakdown_hex: str) -> int:
    """HBM bytes (memory space 1) of a serialized MemoryAccessBreakdown, parsed here on its own."""
    data, pos, total = bytes.fromhex(breakdown_hex), 0, 0
    while pos < len(data):
        _, pos = _varint(data, pos)  # tag of `memory_accessed` (field 1, length-delimited)
        length, pos = _varint(data, pos)
        inner, pos = data[pos : pos + length], pos + length
        fields, i = {}, 0
        while i < len(inner):
            tag, i = _varint(inner, i)
            fields[tag >> 3], i = _varint(inner, i)
        if fields.get(2) == 1:
            total += fields.get(3, 0)
    return total


def raw_program_figures(trace) -> dict[str, float]:
    """The TPU program row from the XLA Ops events' own stats: Σ flops, Σ HBM breakdown bytes, and
    Σ per-core (last op end − first op start) on the device clock."""
    flops = hbm = device_time_ps = 0
    for section in trace.sections:
        tracks = [t.id for t in trace.tracks if t.section == section.id and t.name == "XLA Ops"]
        if section.kind != "tpu" or not tracks:
            continue
        starts, ends = [], []
        for i in np.flatnonzero(np.isin(trace.ev_track, tracks)).tolist():
            stats = json.loads(trace.args_json(i))
            flops += stats["flops"]
            hbm += _hbm_bytes(stats["memory_access_breakdown"]) if stats["memory_access_breakdown"] else 0
            starts.append(stats["device_offset_ps"])
            ends.append(stats["device_offset_ps"] + stats["device_duration_ps"])
        device_time_ps += max(ends) - min(starts)
    seconds = device_time_ps * 1e-12
    return {
        "device_time_ps": device_time_ps,
        "flop_rate": flops / seconds,
        "hbm_bw": hbm / seconds,
        "hbm_oi": flops / hbm,
    }


def test_tpu_program_row_matches_the_raw_stats_and_xprof(tpu_trace):
    answer = roofline_of(tpu_trace)
    assert answer.observed and answer.device.kind == "tpu" and answer.device.devices == 4
    total = answer.program[0]
    assert total.step == "Total" and total.coverage == 1.0
    raw = raw_program_figures(tpu_trace)
    assert total.device_time_ns == pytest.approx(raw["device_time_ps"] / 1e3, rel=1e-12)
    assert total.figures.flop_rate == pytest.approx(raw["flop_rate"], rel=1e-9)
    assert total.figures.bandwidth["hbm"] == pytest.approx(raw["hbm_bw"], rel=1e-9)
    assert total.figures.intensity["hbm"] == pytest.approx(raw["hbm_oi"], rel=1e-9)

    assert total.device_time_ns == pytest.approx(XPROF_TPU["total_time_us"] * 1e3, rel=1e-9)
    assert total.time_per_device_ns == pytest.approx(XPROF_TPU["total_time_per_core_us"] * 1e3, rel=1e-9)
    assert total.figures.flop_rate == pytest.approx(XPROF_TPU["measured_flop_rate_gflops"] * 1e9, rel=0.01)
    assert total.figures.bandwidth["hbm"] == pytest.approx(XPROF_TPU["hbm_bw_gibs"] * GIB, rel=0.01)
    assert total.figures.intensity["hbm"] == pytest.approx(XPROF_TPU["hbm_operational_intensity"], rel=0.01)
    assert total.figures.bound_by == "hbm"
    assert total.figures.roofline_efficiency == pytest.approx(XPROF_TPU["roofline_efficiency"], rel=0.01)
    assert total.figures.flop_utilization == pytest.approx(XPROF_TPU["compute_efficiency"], rel=0.01)
    # no step marker: the Overview's steps, inferred from the 102 executions of the jitted program
    assert answer.steps == list(range(1, 103)) and answer.step_source.startswith(
        "inferred from 102 executions"
    )


def test_tpu_device_peaks_come_from_the_profile(tpu_trace):
    device = roofline_of(tpu_trace).device
    assert device.name == "TPU v6 Lite" and device.attributes["megacore"] == "no"
    # The profile's one peak is the datasheet's v6e bf16 figure: named bf16, still the profile's value.
    peak = device.flops["bf16"]
    assert peak.value == XPROF_TPU["peak_flop_rate_gflops"] * 1e9 and peak.source.startswith(
        "from the profile;"
    )
    # Every op of this program is vector work, measured against that same MXU figure (as XProf).
    assert device.roof_precision == "vector (MXU bf16 peak)" and device.roofs == [device.roof_precision]
    assert device.flops[device.roof_precision].value == peak.value
    assert device.bandwidth["hbm"].value == pytest.approx(XPROF_TPU["peak_hbm_gbs"] * 1e9)
    assert {"vmem_read", "vmem_write"} <= set(device.bandwidth)
    assert "cmem_read" not in device.bandwidth, "a level whose peak is 0 gets no roof"
    assert device.ridge_points["hbm"] == pytest.approx(560.442, rel=1e-5)


def test_tpu_op_rows(tpu_trace):
    answer = roofline_of(tpu_trace)
    assert answer.ops_total == len(answer.ops) == 17
    ops = {op.name: op for op in answer.ops}
    fusion = ops["broadcast_add_fusion.1"]
    # XProf: 400 occurrences, self 3262107.41375 µs, 164.578 GFLOP/s, 1226.201 GiB/s, efficiency 0.803803.
    assert fusion.occurrences == 400 and fusion.self_time_ns == pytest.approx(3262107.41375e3)
    assert fusion.figures.flop_rate == pytest.approx(164.578e9, rel=1e-5)
    assert fusion.figures.bandwidth["hbm"] == pytest.approx(1226.201 * GIB, rel=1e-5)
    assert fusion.figures.bound_by == "hbm" and fusion.figures.roofline_efficiency == pytest.approx(
        0.803803, rel=1e-5
    )
    assert fusion.search == "broadcast_add_fusion.1" and fusion.source == "profile"
    # An async start op "moves" 5 GB in 0.7 µs: the rate is reported, the efficiency is not.
    start = ops["copy-start.3"]
    assert start.figures.bandwidth_utilization["hbm"] > 1
    assert start.figures.roofline_efficiency is analysis.UNSET and "asynchronous" in start.figures.anomaly
    # No breakdown: the bytes are kept but in no level (here host memory of an offloading copy).
    done = ops["copy-done.5"]
    assert done.bytes_accessed == 400 * 5368709120 and done.bytes_by_level == {}
    assert "breakdown" in done.note and done.figures.bound_by is analysis.UNSET
    ranks = [op.rank for op in answer.ops]
    assert ranks == list(range(1, 18))
    assert [op.self_time_ns for op in answer.ops] == sorted(
        (op.self_time_ns for op in answer.ops), reverse=True
    )
    assert answer.ops[-1].cumulative_time_fraction == pytest.approx(
        sum(op.time_fraction for op in answer.ops)
    )


def test_mi300_peaks_computed(mi300_trace):
    answer = roofline_of(mi300_trace)
    device = answer.device
    assert device.kind == "gpu" and device.devices == 8 and device.device_planes == 8
    fp16 = device.flops["fp16"]
    assert (
        fp16.value
        == pytest.approx(304 * 2048 * 2.1e9)
        == pytest.approx(XPROF_MI300["peak_flop_rate_gflops"] * 1e9)
    )
    assert fp16.source.startswith("from the profile, computed")
    assert device.bandwidth["shm_l1"].value == pytest.approx(XPROF_MI300["shm_gbs"] * 1e9)
    # the convolution's FLOPs are bf16 (its operands' type): the roof drawn is bf16, which the
    # datasheet gives the fp16 rate, so it is the profile's figure, XProf's peak
    assert device.roof_precision == "bf16" and device.roofs == ["bf16"]
    bf16 = device.flops["bf16"]
    assert bf16.value == fp16.value and bf16.source.endswith(peaks.BF16_AT_FP16)
    # The collector's 2662.4 GB/s is half the MI300X datasheet; the parts table's figure is used.
    assert device.bandwidth["hbm"].source.startswith("from the parts table")
    assert device.bandwidth["hbm"].value == MI300_HBM_PEAK
    assert any("2662.4 GB/s" in w for w in answer.warnings)


def _xprof_mi300_op(name: str, executions: int) -> tuple[float, float]:
    """(FLOPs, HBM bytes) of XProf's op row over all executions, corrected for Q6 (its totals ×
    executions ÷ launches) and, for the custom call, Q3 (all its bytes, from its Memory BW)."""
    launches, time_us, gflops, memory_bw, hbm_bw, _ = XPROF_MI300_OPS[name]
    seconds, ratio = time_us * 1e-6, executions / launches
    hbm = memory_bw if name.startswith("cudnn") else hbm_bw
    return gflops * 1e9 * seconds * ratio, hbm * GIB * seconds * ratio


def test_mi300_costs_from_the_hlo_cost_model_match_xprof(mi300_trace):
    answer = roofline_of(mi300_trace)
    ops = {op.name: op for op in answer.ops}
    assert set(XPROF_MI300_OPS) <= set(ops)
    for name, (_, time_us, _, _, hbm_bw, bound) in XPROF_MI300_OPS.items():
        op = ops[name]
        assert op.source == "HLO cost model (profscope)" and op.program == "15", name
        assert op.total_time_ns == pytest.approx(time_us * 1e3, rel=1e-9), name
        flops, hbm = _xprof_mi300_op(name, op.occurrences)
        seconds = time_us * 1e-6
        assert op.figures.flop_rate == pytest.approx(flops / seconds, rel=1e-9, abs=0), name
        assert op.figures.bandwidth["hbm"] == pytest.approx(hbm / seconds, rel=1e-9), name
        assert op.figures.bound_by == "hbm", name
        assert op.figures.roofline_efficiency == pytest.approx(hbm / seconds / MI300_HBM_PEAK, rel=1e-9)
        if not name.startswith("cudnn"):  # no FLOPs, one kernel per execution: as XProf
            assert op.figures.bandwidth["hbm"] == pytest.approx(hbm_bw * GIB, rel=1e-9) and bound == "HBM"
    conv = ops["cudnn-conv.1"]
    assert conv.occurrences == 40, "executions of the HLO op, not its 79 kernel launches (XProf)"
    # One execution: 2 × 1·16·5120 × 34·31·53 × 2·2 (valid window positions) FLOPs; XProf charges it
    # 79 times. Its HBM bytes: operands 7 045 120 + result 572 026 880; XProf's HBM counts the operands
    # only (41.36 GiB/s over 79 launches), so it finds the conv compute-bound.
    assert conv.flops == 40 * 32715571200
    assert conv.bytes_by_level == {"hbm": 40 * 579072000.0}
    assert XPROF_MI300_OPS["cudnn-conv.1"][4] * GIB * 12531.616e-6 / 79 == pytest.approx(7045120, rel=1e-6)
    assert conv.figures.intensity["hbm"] == pytest.approx(32715571200 / 579072000)
    # input_transpose_fusion at 3.19 TB/s: 60 % of the datasheet HBM, "119.8 %" of XProf's halved peak.
    fusion = ops["input_transpose_fusion"]
    assert fusion.figures.roofline_efficiency == pytest.approx(0.601944, rel=1e-5)

    total = answer.program[0]
    assert total.source == "HLO cost model (profscope)"
    # Kernels that name no HLO op (a ROCm buffer copy, one conv and one fusion kernel XProf does not
    # attribute either) have no cost: the program figures are lower bounds by their time.
    unattributed = [op for op in answer.ops if op.source.startswith("not an XLA op")]
    assert sorted(op.name for op in unattributed) == [
        "Im3d2Col.kd",
        "__amd_rocclr_copyBuffer.kd",
        "input_transpose_fusion_1.kd",
    ]
    modeled_ns = sum(ops[name].total_time_ns for name in XPROF_MI300_OPS)
    unattributed_ns = sum(op.total_time_ns for op in unattributed)
    assert total.coverage == pytest.approx(modeled_ns / (modeled_ns + unattributed_ns), rel=1e-12)
    assert total.device_time_ns == pytest.approx(XPROF_MI300["total_time_us"] * 1e3, rel=1e-9)
    seconds = XPROF_MI300["total_time_us"] * 1e-6
    flops = sum(_xprof_mi300_op(name, ops[name].occurrences)[0] for name in XPROF_MI300_OPS)
    hbm = sum(_xprof_mi300_op(name, ops[name].occurrences)[1] for name in XPROF_MI300_OPS)
    # XProf's program FLOP rate counts the conv 79 times: ours is 40/79 of it.
    assert flops / seconds == pytest.approx(
        XPROF_MI300["measured_flop_rate_gflops"] * 1e9 * 40 / 79, rel=1e-9
    )
    assert total.figures.flop_rate == pytest.approx(flops / seconds, rel=1e-9)
    assert total.figures.bandwidth["hbm"] == pytest.approx(hbm / seconds, rel=1e-9)
    assert total.figures.intensity["hbm"] == pytest.approx(flops / hbm, rel=1e-9)
    assert total.figures.bound_by == "hbm" and XPROF_MI300["bound_by"] == "HBM"
    assert total.figures.roofline_efficiency == pytest.approx(hbm / seconds / MI300_HBM_PEAK, rel=1e-9)


def synthetic_gpu(kernels: list[tuple[str, str | None, int | None, int, dict]]):
    """A one-GPU trace on one stream: (kernel, hlo_op, program id, duration ps, other stats), back
    to back, with the MI300 XPlane's HloProto of program 15 attached."""
    b = TraceBuilder("synthetic", xplane.FORMAT)
    sid = b.section("/device:GPU:0", "gpu")
    track = b.track(sid, "Stream #1(Compute)", "stream")
    starts = np.cumsum([0] + [k[3] for k in kernels[:-1]]).tolist()
    args = []
    for _, hlo_op, program, _, stats in kernels:
        record = dict(stats, group_id=0)
        if hlo_op is not None:
            record.update(hlo_op=hlo_op, program_id=program)
        args.append(json.dumps(record).encode())
    b.add_events(track, starts, [k[3] for k in kernels], [b.intern(k[0]) for k in kernels], args=args)
    b.metadata["devices"] = {str(sid): {"stats": {}}}
    b.metadata["planes"] = [{"name": "/device:GPU:0"}]
    mi300 = xplane.read(str(DATA / "mi300_jax_conv.xplane.pb"), fsspec.filesystem("file"))
    b.attach("hlo/15.pb", mi300.attachments["hlo/15.pb"])
    return b.finalize()


def test_gpu_costs_are_per_execution_stats_first_and_say_why_when_unknown():
    trace = synthetic_gpu(
        [
            ("Im3d2Col", "cudnn-conv.1", 15, 1_000_000, {}),
            ("Cijk_gemm", "cudnn-conv.1", 15, 3_000_000, {}),  # the same execution
            ("transpose_kernel", "loop_transpose_fusion", 15, 1_000_000, {}),
            ("Im3d2Col", "cudnn-conv.1", 15, 2_000_000, {}),  # the next execution
            ("stat_kernel", "input_transpose_fusion", 15, 1_000_000, {"flops": 7.0, "bytes_accessed": 9.0}),
            ("other", "fusion.3", 2**64 - 5, 1_000_000, {}),
            ("missing", "no-such-op", 15, 1_000_000, {}),
        ]
    )
    answer = roofline_of(trace)
    ops = {op.name: op for op in answer.ops}
    conv = ops["cudnn-conv.1"]
    assert conv.occurrences == 2 and conv.total_time_ns == 6000.0
    assert conv.flops == 2 * 32715571200 and conv.bytes_by_level == {"hbm": 2 * 579072000.0}
    assert conv.source == "HLO cost model (profscope)"
    assert ops["loop_transpose_fusion"].bytes_by_level == {"hbm": 1310720.0}
    stats = ops["input_transpose_fusion"]
    assert stats.flops == 7.0 and stats.bytes_by_level == {"hbm": 9.0} and stats.source == "profile"
    assert ops["fusion.3"].source == "no HloProto of program -5 in this profile"
    assert ops["fusion.3"].flops is analysis.UNSET
    assert ops["no-such-op"].source == "no-such-op is not an instruction of the HloProto of program 15"
    total = answer.program[0]
    assert total.flops == 2 * 32715571200 + 7.0
    assert total.coverage == pytest.approx(8 / 10)  # 2 of the 10 µs have no cost

    bare = dataclasses.replace(trace, attachments={})
    answer = roofline_of(bare)
    sources = {op.name: op.source for op in answer.ops}
    assert sources.pop("input_transpose_fusion") == "profile"
    assert set(sources.values()) == {"no cost stats and no HloProto in this profile"}


def test_cpu_only_capture_is_not_observed():
    trace = xplane.read(str(CPU_XPLANE), fsspec.filesystem("file"))
    answer = roofline_of(trace)
    assert not answer.observed and answer.device is analysis.UNSET
    assert answer.reason.startswith("no device roofline: device activity not observed")
    assert "/host:CPU" in answer.reason
    assert answer.program == [] and answer.ops == []


def test_gpu_steps_give_step_and_average_rows():
    trace = xplane.read(str(DATA / "gpu_8x_tf_training.xplane.pb"), fsspec.filesystem("file"))
    answer = roofline_of(trace)
    assert answer.steps == [0]
    assert [row.step for row in answer.program] == ["Total", "Average step (1 complete)", "0"]
    # No vendor stat: no FLOP peak from the profile (XProf draws 0); the parts table knows the V100.
    assert answer.device.flops["fp16"].source.startswith("from the parts table")
    assert answer.device.bandwidth["hbm"].source == "from the profile"
    step = roofline_of(trace, analysis.Options(step=0))
    assert (
        step.step == 0
        and step.ops
        and sum(op.occurrences for op in step.ops) <= sum(op.occurrences for op in answer.ops)
    )


def synthetic_tpu(ops: list[tuple[str, str, int, int, float, int]]):
    """A one-core TPU trace: (name, category, start ps, duration ps, flops, HBM bytes written)."""
    b = TraceBuilder("synthetic", xplane.FORMAT)
    sid = b.section("/device:TPU:0", "tpu")
    track = b.track(sid, "XLA Ops", "line")
    args = []
    for _name, category, start, dur, flops, hbm in ops:
        breakdown = bytes([0x08, 0x02, 0x10, 0x01, 0x18]) + varint(hbm)
        message = bytes([0x0A, len(breakdown)]) + breakdown
        stats = {"hlo_category": category, "program_id": 7, "flops": flops, "bytes_accessed": hbm}
        stats.update(memory_access_breakdown=message.hex(), device_offset_ps=start, device_duration_ps=dur)
        args.append(json.dumps(stats).encode())
    b.add_events(
        track,
        [o[2] for o in ops],
        [o[3] for o in ops],
        [b.intern(o[0]) for o in ops],
        args=args,
    )
    b.metadata["devices"] = {
        str(sid): {"stats": {"peak_teraflops_per_second": 100.0, "peak_hbm_bw_gigabytes_per_second": 1000.0}}
    }
    b.metadata["planes"] = [{"name": "/device:TPU:0"}]
    return b.finalize()


def test_infeed_excluded_with_its_time_and_wrappers_not_double_counted():
    trace = synthetic_tpu(
        [
            ("infeed", "infeed", 0, 1_000_000, 0.0, 4_000),
            ("while", "while", 1_000_000, 3_000_000, 9e9, 9_000),
            ("fusion", "loop fusion", 1_000_000, 1_000_000, 2e6, 1_000),
            ("dot", "convolution", 2_000_000, 2_000_000, 8e6, 1_000),
        ]
    )
    both = roofline_of(trace)
    total = both.program[0]
    assert total.device_time_ns == 4000.0
    assert total.flops == 10e6, "the while wraps the fusion and the dot: only they count"
    assert total.bytes_by_level == {"hbm": 6_000.0}
    assert total.figures.flop_rate == pytest.approx(10e6 / 4e-6)
    ops = {op.name: op for op in both.ops}
    assert ops["while"].self_time_ns == 0.0 and not ops["while"].in_program
    assert ops["infeed"].transfer and ops["infeed"].time_fraction == pytest.approx(0.25)

    without = roofline_of(trace, analysis.Options(include_infeed=False))
    total = without.program[0]
    assert total.device_time_ns == 3000.0 and total.bytes_by_level == {"hbm": 2_000.0}
    assert total.figures.bandwidth["hbm"] == pytest.approx(2_000 / 3e-6)
    assert "infeed" not in {op.name for op in without.ops} and not without.include_infeed


# -- the route ---------------------------------------------------------------------------------
@pytest.fixture
def logdir(tmp_path):
    root = tmp_path / "logdir"
    runs = {
        "tpu": DATA / "tpu_v6e_inference.xplane.pb",
        "cpu": CPU_XPLANE,
        "mi300": DATA / "mi300_jax_conv.xplane.pb",
    }
    for run, source in runs.items():
        folder = root / run / "plugins" / "profile" / "session"
        folder.mkdir(parents=True)
        shutil.copy(source, folder / "host.xplane.pb")
    yield root


def get(client, **params):
    return client.get(f"{BASE}/roofline?" + "&".join(f"{k}={v}" for k, v in params.items()))


def ready(client, timeout_s=120, **params):
    deadline, seen_202 = time.monotonic() + timeout_s, False
    while True:
        res = get(client, **params)
        if res.status_code != 202:
            return res, seen_202
        assert res.get_json()["state"] == "ingesting"
        seen_202 = True
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_route_answers_202_then_the_roofline(plugin_client, logdir):
    _, client = plugin_client(logdir)
    res, seen_202 = ready(client, run="tpu", session="session", host="host")
    assert seen_202, "the first request answers 202 while the trace is ingested"
    assert res.status_code == 200
    body = res.get_json()
    assert body["observed"] and body["include_infeed"] and body["ops_total"] == 17
    total = body["program"][0]
    assert total["figures"]["bound_by"] == "hbm"
    assert total["figures"]["flop_rate"] == pytest.approx(
        XPROF_TPU["measured_flop_rate_gflops"] * 1e9, rel=0.01
    )
    assert body["device"]["flops"]["bf16"]["source"].startswith("from the profile;")
    assert total["figures"]["roof"] == "vector (MXU bf16 peak)"
    again = get(client, run="tpu", session="session", host="host", infeed=0)
    assert again.status_code == 200 and again.get_json()["include_infeed"] is False

    cpu, _ = ready(client, run="cpu", session="session", host="host")
    assert cpu.status_code == 200
    body = cpu.get_json()
    assert body["observed"] is False and body["reason"].startswith(
        "no device roofline: device activity not observed"
    )
    assert "device" not in body and body["program"] == []


def test_route_costs_gpu_ops_from_the_hloprotos_of_the_cache_entry(plugin_client, logdir):
    _, client = plugin_client(logdir)
    res, _ = ready(client, run="mi300", session="session", host="host")
    assert res.status_code == 200
    body = res.get_json()
    conv = next(op for op in body["ops"] if op["name"] == "cudnn-conv.1")
    assert conv["source"] == "HLO cost model (profscope)" and conv["flops"] == 40 * 32715571200
    assert body["program"][0]["figures"]["bound_by"] == "hbm"


PARAMETER_ERRORS = [
    ({"infeed": "2"}, "'infeed' must be 0 or 1"),
    ({"infeed": "yes"}, "'infeed' must be a non-negative integer"),
    ({"step": "-1"}, "'step' must be a non-negative integer"),
    ({"step": "103"}, "no step 103 (steps: 1, 2, 3,"),
]


def test_route_parameter_errors_are_400(plugin_client, logdir):
    """One plugin answers every bad parameter (one ingest, not one per case)."""
    _, client = plugin_client(logdir)
    ready(client, run="tpu", session="session", host="host")
    for params, message in PARAMETER_ERRORS:
        res = get(client, run="tpu", session="session", host="host", **params)
        assert res.status_code == 400 and message in res.get_data(as_text=True), params


def test_route_reads_peak_overrides_from_the_run_folder(plugin_client, logdir):
    override = {
        "name": "TPU v6e (override)",
        "flops": {"bf16": 2e15},
        "bandwidth": {"hbm": 3.2e12},
        "roof_precision": "bf16",
    }
    (logdir / "tpu" / "roofline.json").write_text(json.dumps(override))
    _, client = plugin_client(logdir)
    res, _ = ready(client, run="tpu", session="session", host="host")
    device = res.get_json()["device"]
    assert device["name"] == "TPU v6e (override)" and device["roof_precision"] == "bf16"
    assert device["flops"]["bf16"] == {"value": 2e15, "unit": "FLOP/s", "source": "user override"}
    assert device["bandwidth"]["hbm"]["source"] == "user override"
    assert device["bandwidth"]["vmem_read"]["source"] == "from the profile"
    total = res.get_json()["program"][0]["figures"]
    assert total["bandwidth_utilization"]["hbm"] == pytest.approx(
        XPROF_TPU["hbm_bw_gibs"] * GIB / 3.2e12, rel=0.01
    )

    (logdir / "tpu" / "roofline.json").write_text('{"bandwidth": {"l7": 1}}')
    res = get(client, run="tpu", session="session", host="host")
    body = res.get_json()
    assert res.status_code == 200 and body["device"]["bandwidth"]["hbm"]["source"] == "from the profile"
    assert any("roofline.json: unknown memory levels ['l7']" in w for w in body["warnings"])


def test_kineto_route_has_step_rows_and_step_ops(plugin_client, tmp_path):
    shutil.copytree(DATA_DIR / "trace" / "logdir", tmp_path / "kineto")
    _, client = plugin_client(tmp_path / "kineto")
    subject = {"run": "bert", "session": "pytorch", "host": "bert_small"}
    res, _ = ready(client, **subject)
    assert res.status_code == 200
    body = res.get_json()
    assert body["observed"] and body["steps"] == [6]
    assert body["step_source"] == "ProfilerStep#N markers (PyTorch profiler)"
    assert [r["step"] for r in body["program"]] == ["Total", "Average step (1 complete)", "6"]
    step = get(client, **subject, step=6).get_json()
    assert step["step"] == 6 and step["program"] == body["program"]
    assert sum(op["occurrences"] for op in step["ops"]) <= sum(op["occurrences"] for op in body["ops"])
    missing = get(client, **subject, step=7)
    assert missing.status_code == 400 and "no step 7 (steps: 6)" in missing.get_data(as_text=True)
