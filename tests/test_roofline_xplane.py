"""The roofline on real XPlanes: program rows against figures computed here from the raw op stats and
against XProf's own answers, device peaks and their sources, the not-observed answers, and the
`roofline` route (202 while ingesting, parameter errors, overrides) through TensorBoard's WSGI app."""

from __future__ import annotations

import importlib
import importlib.util
import json
import pathlib
import shutil
import time

import fsspec
import numpy as np
import pytest

from profscope.columns import TraceBuilder
from profscope.formats import xplane
from profscope.tools.roofline import analysis, routes

DATA = pathlib.Path(__file__).parent / "data" / "xplane"
REPO = pathlib.Path(__file__).resolve().parent.parent
CPU_XPLANE = REPO / "demo/logdir/jax_cpu_training/plugins/profile/2026_11_30_00_33_00/vm.xplane.pb"
BASE = "/data/plugin/profscope"
GIB = 2**30

# XProf 2.24.2 `roofline_model`, program row "Total" (include_infeed_outfeed = true), from
# /work/notes/xprof_anchor/<name>.roofline.json made by benchmarks/xprof_roofline.py
# (see /work/notes/xprof_roofline_spec.md §9). Rates in GFLOP/s and GiB/s as XProf gives them.
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
    assert analysis.NO_STEPS in answer.warnings and len(answer.program) == 1


def test_tpu_device_peaks_come_from_the_profile(tpu_trace):
    device = roofline_of(tpu_trace).device
    assert device.name == "TPU v6 Lite" and device.attributes["megacore"] == "no"
    peak = device.flops[device.roof_precision]
    assert peak.value == XPROF_TPU["peak_flop_rate_gflops"] * 1e9 and peak.source == "from the profile"
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


def test_mi300_peaks_computed_and_costs_not_observed(mi300_trace):
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
    assert device.roof_precision == "fp16"
    # The collector's 2662.4 GB/s is half the MI300X datasheet; the parts table's figure is used.
    assert device.bandwidth["hbm"].source.startswith("from the parts table")
    assert any("2662.4 GB/s" in w for w in answer.warnings)
    total = answer.program[0]
    assert total.device_time_ns == pytest.approx(XPROF_MI300["total_time_us"] * 1e3, rel=1e-9)
    assert total.flops is analysis.UNSET and total.figures.flop_rate is analysis.UNSET
    assert (
        total.source == "no cost stats in this profile; HLO cost model not built yet" and total.coverage == 0
    )
    conv = next(op for op in answer.ops if op.name == "cudnn-conv.1")
    assert conv.occurrences == 40, "executions of the HLO op, not its 79 kernel launches (XProf)"
    assert conv.flops is analysis.UNSET and conv.figures.bound_by is analysis.UNSET
    assert conv.source == "no cost stats in this profile; HLO cost model not built yet"


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
        breakdown = bytes([0x08, 0x02, 0x10, 0x01, 0x18]) + _encode_varint(hbm)
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


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


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
    for run, source in (("tpu", DATA / "tpu_v6e_inference.xplane.pb"), ("cpu", CPU_XPLANE)):
        folder = root / run / "plugins" / "profile" / "session"
        folder.mkdir(parents=True)
        shutil.copy(source, folder / "host.xplane.pb")
    routes.clear_caches()
    yield root
    routes.clear_caches()


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
    assert body["device"]["flops"]["peak"]["source"] == "from the profile"
    again = get(client, run="tpu", session="session", host="host", infeed=0)
    assert again.status_code == 200 and again.get_json()["include_infeed"] is False

    cpu, _ = ready(client, run="cpu", session="session", host="host")
    assert cpu.status_code == 200
    body = cpu.get_json()
    assert body["observed"] is False and body["reason"].startswith(
        "no device roofline: device activity not observed"
    )
    assert "device" not in body and body["program"] == []


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"infeed": "2"}, "'infeed' must be 0 or 1"),
        ({"infeed": "yes"}, "'infeed' must be a non-negative integer"),
        ({"step": "-1"}, "'step' must be a non-negative integer"),
        ({"step": "5"}, "no step 5 (steps: none)"),
    ],
)
def test_route_parameter_errors_are_400(plugin_client, logdir, params, message):
    _, client = plugin_client(logdir)
    ready(client, run="tpu", session="session", host="host")
    res = get(client, run="tpu", session="session", host="host", **params)
    assert res.status_code == 400 and message in res.get_data(as_text=True)


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


def test_kineto_host_until_its_costs_are_built(plugin_client, tmp_path):
    shutil.copytree(pathlib.Path(__file__).parent / "data" / "trace" / "logdir", tmp_path / "kineto")
    _, client = plugin_client(tmp_path / "kineto")
    res, _ = ready(client, run="bert", session="pytorch", host="bert_small")
    assert res.status_code == 200
    body = res.get_json()
    spec = importlib.util.find_spec("profscope.tools.roofline.kineto")
    built = spec is not None and hasattr(importlib.import_module(spec.name), "op_costs")
    if not built:
        assert body["observed"] is False and body["reason"].startswith(analysis.KINETO_NOT_BUILT)
        assert body["program"] == [] and body["ops"] == [] and "device" not in body
    else:
        assert body["observed"] and body["program"][0]["step"] == "Total"
