"""Program rows per step of PyTorch (Kineto) traces (`tools/roofline/kineto_steps.py`) on the real
traces of tests/data/kineto and tests/data/overview.

Step times are worked out by hand from the raw JSON (each device event's launch found through its
`correlation` id, its step by the ProfilerStep#N marker containing the launch, exact decimals),
independently of the reader; one step's GEMM FLOPs from the shapes the trace records.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
from decimal import Decimal
from pathlib import Path

import fsspec
import msgspec
import pytest

from profscope.answers import UNSET
from profscope.formats.chrome import reader as chrome_json
from profscope.tools.roofline import analysis, step_windows
from profscope.tools.roofline.answers import RooflineAnswer, RooflineProgramRow
from tests.support import DATA_DIR
from tests.support import overview as overview_support

DATA = DATA_DIR
RESNET = DATA / "kineto/worker0.1623143089861.pt.trace.json.gz"  # V100, ProfilerStep#5–10, shapes
V100_NS = DATA / "kineto/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"  # ProfilerStep#101–105, GPU lags
MI250 = DATA / "kineto/mi250_minitoy.pt.trace.json.gz"  # step 2 runs nothing on the GPU
ALEXNET = DATA / "kineto/alexnet.pt.trace.json.gz"  # no ProfilerStep markers
WITH_SHAPES_AND_STEPS = [
    RESNET,
    DATA / "kineto/bert_small.pt.trace.json.gz",
    DATA / "kineto/rank-0.pt.trace.json.gz",
    DATA / "kineto/rank-1.pt.trace.json.gz",
    MI250,
]
PS_PER_US = 1_000_000


@functools.cache
def _host(path: Path) -> analysis.HostDevices | str:
    return analysis.host_devices(path.name, chrome_json.read(str(path), fsspec.filesystem("file")))


def _answer(path: Path, **options: object) -> RooflineAnswer:
    return analysis.answer(path.name, [_host(path)], analysis.Options(**options), None)  # type: ignore[arg-type]


def _rows(answer: RooflineAnswer) -> dict[str, RooflineProgramRow]:
    return {r.step: r for r in answer.program}


def _flops(row: RooflineProgramRow) -> float:
    assert row.flops is not UNSET, row
    return float(row.flops)  # type: ignore[arg-type]


def _hand_step_times_ps(path: Path) -> dict[int, int]:
    """Per step, by hand: end of its last device event (launched inside its marker) minus the end
    of the previous step's (the first step: minus its first device event's start)."""
    events = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"]
    markers = sorted(
        (e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1]))
        for e in events
        if re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))
        and e["cat"] in ("Operator", "user_annotation")
    )
    launched_at = {
        e["args"]["correlation"]: e["ts"]
        for e in events
        if e.get("cat") in ("Runtime", "cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    spans: dict[int, list[tuple[Decimal, Decimal]]] = {}
    for e in events:
        if e.get("cat") in ("Kernel", "Memcpy", "Memset", "kernel", "gpu_memcpy", "gpu_memset"):
            launch = launched_at.get(e["args"].get("correlation"))
            step = next((n for s, t, n in markers if launch is not None and s <= launch < t), None)
            if step is not None:
                spans.setdefault(step, []).append((e["ts"], e["ts"] + e["dur"]))
    times, previous = {}, None
    for _, _, number in markers:
        first = min(a for a, _ in spans[number])
        last = max(b for _, b in spans[number])
        last = last if previous is None else max(last, previous)
        times[number] = int((last - (first if previous is None else previous)) * PS_PER_US)
        previous = last
    return times


def test_step_rows_of_a_resnet_trace_by_hand() -> None:
    answer = _answer(RESNET)
    assert answer.steps == [5, 6, 7, 8, 9, 10]
    assert answer.step_source == "ProfilerStep#N markers (PyTorch profiler)"
    rows = _rows(answer)
    assert list(rows) == ["Total", "Average step (6 complete)", "5", "6", "7", "8", "9", "10"]
    hand = _hand_step_times_ps(RESNET)
    assert hand[7] == 179_733 * PS_PER_US  # 1623142624003006 − 1623142623823273 µs
    for number, time_ps in hand.items():
        assert rows[str(number)].device_time_ns * 1e3 == time_ps
        assert rows[str(number)].devices == 1
    # step 7's ops: the classifier GEMM once, 2·M·N·K + M·N (bias) = 2·32·1000·2048 + 32·1000 (its
    # shapes in the trace)
    step7 = _answer(RESNET, step=7)
    fc = [op for op in step7.ops if op.name == "aten::addmm(fp32[1000], fp32[32, 2048], fp32[2048, 1000])"]
    assert [(op.occurrences, op.flops) for op in fc] == [(1, 2 * 32 * 1000 * 2048 + 32 * 1000)]
    assert step7.step == 7 and step7.program == answer.program
    # the step's program row sums its counted ops
    counted = sum(op.flops for op in step7.ops if op.in_program and op.flops is not UNSET)  # type: ignore[misc]
    assert _flops(rows["7"]) == pytest.approx(counted, rel=1e-12)
    seven = rows["7"].figures
    assert seven.flop_rate == pytest.approx(_flops(rows["7"]) / (179_733 * 1e-6))


@pytest.mark.parametrize("path", WITH_SHAPES_AND_STEPS, ids=lambda p: p.name)
def test_step_flops_sum_to_the_total(path: Path) -> None:
    """The steps' FLOPs and bytes add up to the Total's less those of the ops outside every step
    window: in these traces only resnet has such an op, by hand from its JSON an aten::zeros →
    aten::zero_ of one fp32 just before each of its 6 markers (no FLOPs, 4 bytes written each), of
    which the 5 after the first lie in the previous step's window (the GPU's work extends it past
    its marker) and only the first is outside; the average step is the complete steps' sum over
    their count."""
    outside_bytes = 4 if path == RESNET else 0
    rows = _rows(_answer(path))
    steps = [r for r in rows.values() if re.fullmatch(r"\d+", r.step)]
    total = rows["Total"]
    assert sum(_flops(r) for r in steps if r.flops is not UNSET) == pytest.approx(_flops(total), rel=1e-12)
    assert sum(r.bytes_by_level.get("hbm", 0.0) for r in steps) + outside_bytes == total.bytes_by_level["hbm"]
    assert sum(r.device_time_ns for r in steps) <= total.device_time_ns
    (average,) = [r for r in rows.values() if r.step.startswith("Average step")]
    complete = [s for s in _host(path).steps if s.complete]  # type: ignore[union-attr]
    assert average.step == f"Average step ({len(complete)} complete)"
    in_average = [rows[str(s.number)] for s in complete]
    assert _flops(average) * len(complete) == pytest.approx(sum(_flops(r) for r in in_average), rel=1e-12)
    assert average.device_time_ns * len(complete) == pytest.approx(sum(r.device_time_ns for r in in_average))


def test_a_gpu_that_lags_the_host_keeps_its_kernels_in_their_step() -> None:
    """In this trace the GPU runs step 101's kernels until well into marker 102 (the host queues a
    whole step ahead): they still count in 101, whose time runs to their end."""
    rows = _rows(_answer(V100_NS))
    hand = _hand_step_times_ps(V100_NS)
    # step 101's device events: 1712195495505582.988 to 1712195495603245.883 µs, while marker 101
    # ends at …537210.434 and marker 102 starts at …537248.299
    assert hand[101] == 97_662_895_000
    assert {n: int(rows[str(n)].device_time_ns * 1e3) for n in hand} == hand
    assert rows["Average step (5 complete)"].device_time_ns * 5 * 1e3 == pytest.approx(sum(hand.values()))


def test_a_step_without_device_activity_is_listed_but_not_averaged() -> None:
    answer = _answer(MI250)
    rows = _rows(answer)
    assert list(rows) == ["Total", "Average step (1 complete)", "1", "2"]
    assert (rows["2"].device_time_ns, rows["2"].devices, rows["2"].flops) == (0.0, 0, UNSET)
    assert rows["Average step (1 complete)"].flops == rows["1"].flops
    assert any(step_windows.NO_ACTIVITY in w and "step 2 (0 of 1)" in w for w in answer.warnings)


def test_a_trace_without_step_markers_says_so() -> None:
    answer = _answer(ALEXNET)
    assert answer.observed and answer.steps == [] and [r.step for r in answer.program] == ["Total"]
    assert analysis.NO_STEPS in answer.warnings and answer.step_source == "no step markers found"
    with pytest.raises(analysis.UnknownStep):
        _answer(ALEXNET, step=1)


def test_infeed_off_removes_each_steps_host_copies_and_their_time() -> None:
    with_copies, without = _rows(_answer(RESNET)), _rows(_answer(RESNET, include_infeed=False))
    step7 = _answer(RESNET, step=7)
    copies = [op for op in step7.ops if op.transfer]
    assert copies, "resnet copies each batch host→device"
    removed_ns = sum(op.total_time_ns for op in copies)
    assert without["7"].device_time_ns == pytest.approx(with_copies["7"].device_time_ns - removed_ns)
    assert not any(op.transfer for op in _answer(RESNET, step=7, include_infeed=False).ops)


def test_cpu_only_traces_with_steps_observe_no_device_roofline() -> None:
    """The overview's captures have ProfilerStep#2–7 but ran on the CPU: no step rows are made up."""
    for name in ("slow_input", "prefetch_input", "repeated_copy"):
        answer = _answer(DATA / f"overview/{name}.pt.trace.json.gz")
        assert not answer.observed and answer.program == [] and answer.steps == []
        assert answer.reason.startswith(analysis.NOT_OBSERVED), answer.reason  # type: ignore[union-attr]


def _launch(ts: int, correlation: int, kernel_ts: int, kernel_dur: int) -> list[dict]:
    return [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": ts,
         "dur": 2, "args": {"correlation": correlation}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": kernel_ts, "dur": kernel_dur,
         "args": {"correlation": correlation, "stream": 7}},
    ]  # fmt: skip


def test_markers_of_one_number_are_one_step(tmp_path: Path) -> None:
    """Edge case (a file stitched from two captures): two ProfilerStep#1 markers are one step, their
    times summed: [130, 150) µs, then 150 → 350 µs (the idle wait for the second marker's kernel);
    their wall times too: each marker's window is its 60 µs."""

    def marker(ts: int) -> dict:
        return {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 10,
                "ts": ts, "dur": 60}  # fmt: skip

    events = [marker(100), *_launch(110, 7, 130, 20), marker(300), *_launch(310, 8, 330, 20)]
    device = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132, "totalGlobalMem": 85018279936}
    path = tmp_path / "stitched.json"
    path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [device], "traceEvents": events}))
    answer = _answer(path)
    rows = _rows(answer)
    assert answer.steps == [1] and rows["1"].device_time_ns == 220_000.0
    assert rows["1"].wall_time_ns == 120_000.0
    assert any("2 step windows carry 1 step numbers" in w for w in answer.warnings)
    assert msgspec.json.decode(msgspec.json.encode(answer))["step_source"].startswith("ProfilerStep#N")


@pytest.mark.parametrize("path", sorted(DATA.glob("kineto/*.json.gz")), ids=lambda p: p.name)
def test_the_roofline_and_the_overview_show_the_same_steps(path: Path) -> None:
    """Both tabs' analyses on one file's classified events: the same step numbers, in the same
    order, with the same wall times (the Overview's step windows), on every corpus Kineto trace.
    The CPU-only capture has no device roofline, so no step rows at all."""
    events = overview_support.host_events(path)
    host = analysis.host_devices(path.name, events.trace, None, lambda: events)
    roofline = analysis.answer(path.name, [host], analysis.Options(), None)
    overview = overview_support.host_result(path).answer.steps
    walls = {int(r.step): r.wall_time_ns for r in roofline.program if r.step.isdigit()}
    if not roofline.observed:
        assert path.name.startswith("rank-34") and walls == {}
        return
    assert roofline.steps == sorted(r.number for r in overview.rows)
    assert roofline.step_source == overview.source
    assert walls == {r.number: r.wall_ns for r in overview.rows}


def test_kernels_launched_before_the_first_step_are_kept_apart(tmp_path: Path) -> None:
    """Edge case: a kernel launched at 10 µs, before ProfilerStep#1 (100–160 µs), runs 90–130 µs,
    into the step's window: the tail of the iteration before the capture. It belongs to no step,
    a warning counts it with its 40 µs, the Total keeps it; the step's device time is its own
    kernel's 140 → 150 µs."""
    marker = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 10, "tid": 10, "ts": 100,
              "dur": 60}  # fmt: skip
    events = [*_launch(10, 6, 90, 40), marker, *_launch(110, 7, 140, 10)]
    device = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132, "totalGlobalMem": 85018279936}
    path = tmp_path / "tail.json"
    path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [device], "traceEvents": events}))
    answer = _answer(path)
    rows = _rows(answer)
    assert rows["1"].device_time_ns == 10_000.0 and rows["1"].wall_time_ns == 60_000.0
    assert rows["Total"].device_time_ns == 60_000.0  # 90 → 150 µs
    (apart,) = [w for w in answer.warnings if "before the first step" in w]
    assert "1 device activity launched before the first step" in apart and "40" in apart, apart
