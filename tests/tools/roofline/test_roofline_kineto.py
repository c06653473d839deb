"""Roofline costs of Kineto traces (`tools/roofline/kineto.py`) on the real corpus traces.

The FLOP and byte figures are worked out by hand from the shapes the traces record (the dims are
copied from the trace into each test), and one op's device time is summed by hand from the raw
JSON, independently of the reader.
"""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

import fsspec
import pytest

from profscope.formats.chrome import reader as chrome_json
from profscope.model.columns import Trace
from profscope.tools.roofline import kineto
from profscope.tools.roofline.model import COST_FROM_PROFILE, COST_FROM_SHAPES, COST_MODELLED, OpCost
from tests.support import DATA_DIR

DATA = DATA_DIR / "kineto"
BERT = "bert_small.pt.trace.json.gz"  # H100, record_shapes with Concrete Inputs
RESNET = "worker0.1623143089861.pt.trace.json.gz"  # V100, 2021 Kineto, shapes without Concrete Inputs
ALEXNET = "alexnet.pt.trace.json.gz"  # A100, no shapes
CPU_ONLY = "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
RANK1 = "rank-1.pt.trace.json.gz"  # V100 rank of a 128-rank job, shapes
PS_PER_US = 1_000_000


@functools.cache
def _trace(name: str) -> Trace:
    return chrome_json.read(str(DATA / name), fsspec.filesystem("file"))


@functools.cache
def _costs(name: str) -> tuple[OpCost, ...]:
    return tuple(kineto.op_costs(_trace(name)))


def _row(name: str, op: str) -> OpCost:
    found = [c for c in _costs(name) if c.name == op]
    assert len(found) == 1, f"{op}: {len(found)} rows"
    return found[0]


def test_gemm_flops_and_bytes_by_hand() -> None:
    # bert_small: aten::addmm Input Dims [[512], [141, 512], [512, 512]], c10::BFloat16 (2 bytes),
    # called 17 times: M = 141, K = 512, N = 512; the GEMM 2·M·N·K and its bias-add epilogue M·N.
    qkv = _row(BERT, "aten::addmm(bf16[512], bf16[141, 512], bf16[512, 512])")
    assert qkv.occurrences == 17
    assert qkv.flops == 17 * (2 * 141 * 512 * 512 + 141 * 512) == 1_257_945_600
    # bytes = (bias 512 + A 141·512 + B 512·512 + out 141·512) · 2 = 407_040 · 2 = 814_080 per call
    assert qkv.bytes_by_level == {"hbm": 17 * 814_080}
    assert qkv.source == COST_MODELLED
    # the vocabulary projection: [[30522], [141, 512], [512, 30522]] once: 2·141·512·30522 + 141·30522
    vocab = _row(BERT, "aten::addmm(bf16[30522], bf16[141, 512], bf16[512, 30522])")
    assert vocab.flops == 2 * 141 * 512 * 30522 + 141 * 30522 == 4_411_192_050
    # resnet50 (fp32): aten::addmm [[1000], [32, 2048], [2048, 1000]] ×6: 2·32·1000·2048 + 32·1000
    # = 131_104_000; the backward aten::mm [[32, 1000], [1000, 2048]] ×6, no epilogue: 131_072_000.
    assert _row(RESNET, "aten::addmm(fp32[1000], fp32[32, 2048], fp32[2048, 1000])").flops == 6 * 131_104_000
    grad_input = _row(RESNET, "aten::mm(fp32[32, 1000], fp32[1000, 2048])")
    assert grad_input.flops == 6 * 131_072_000
    # bytes = (A 32·1000 + B 1000·2048 + out 32·2048) · 4 = 2_145_536 · 4 = 8_582_144 per call, ×6
    assert grad_input.bytes_by_level == {"hbm": 6 * 8_582_144}
    # rank-1: aten::mm [[8192, 512], [512, 8192]] twice: 2·8192·8192·512 = 68_719_476_736 each
    assert _row(RANK1, "aten::mm(fp32[8192, 512], fp32[512, 8192])").flops == 2 * 68_719_476_736
    # and a batched one: aten::bmm [[2048, 606, 160], [2048, 160, 20]] ×4: 2·2048·606·20·160
    assert (
        _row(RANK1, "aten::bmm(fp32[2048, 606, 160], fp32[2048, 160, 20])").flops
        == 4 * 2 * 2048 * 606 * 20 * 160
    )


def test_attention_and_convolution_backward_by_hand() -> None:
    # aten::_flash_attention_forward Q, K, V [[1, 141, 8, 64]] ×3 (layout B, L, H, D), 4 calls:
    # QKᵀ and PV = 2·B·H·Lq·Lk·(D + Dv) = 2·1·8·141·141·128 = 40_716_288 per call.
    flash = _row(
        BERT, "aten::_flash_attention_forward(bf16[1, 141, 8, 64], bf16[1, 141, 8, 64], bf16[1, 141, 8, 64])"
    )
    assert flash.flops == 4 * 40_716_288
    # resnet50 (2021, no Concrete Inputs): aten::cudnn_convolution_backward with input [32, 256, 14, 14],
    # grad_output [32, 1024, 14, 14], weight [1024, 256, 1, 1], 36 calls; its nested parts
    # cudnn_convolution_backward_input and _weight say both gradients were computed:
    # 2 gradients × 2·numel(grad_out)·Π W[1:] = 2 · 2·(32·1024·14·14)·256 = 6_576_668_672 per call.
    combined = _row(
        RESNET,
        "aten::cudnn_convolution_backward(fp32[32, 256, 14, 14], fp32[32, 1024, 14, 14], "
        "fp32[1024, 256, 1, 1])",
    )
    assert combined.flops == 36 * 2 * 2 * (32 * 1024 * 14 * 14) * 256
    part = _row(
        RESNET, "aten::cudnn_convolution_backward_input(fp32[32, 1024, 14, 14], fp32[1024, 256, 1, 1])"
    )
    assert (part.flops, part.source, part.in_program) == (
        None,
        "counted in aten::cudnn_convolution_backward",
        False,
    )
    assert combined.total_time_ps >= part.total_time_ps > 0


def test_nested_ops_count_once_at_the_innermost_formula_op() -> None:
    linear = _row(BERT, "aten::linear(bf16[1, 141, 512], bf16[512, 512], bf16[512])")
    assert (linear.flops, linear.bytes_by_level) == (None, None)
    assert linear.source == "counted in nested aten::addmm"
    assert not linear.in_program
    # the composite's device time is its addmm's kernels
    assert (
        linear.total_time_ps
        == _row(BERT, "aten::addmm(bf16[512], bf16[141, 512], bf16[512, 512])").total_time_ps
    )
    sdpa = [c for c in _costs(BERT) if c.search == "aten::scaled_dot_product_attention"]
    assert [c.source for c in sdpa] == ["counted in nested aten::_flash_attention_forward"]
    # conv2d → convolution → _convolution → cudnn_convolution: only the innermost counts; this 2021
    # trace records no stride or padding, so its output shape is its backward's grad_output:
    # [32, 256, 14, 14] * [1024, 256, 1, 1] → grad_output [32, 1024, 14, 14] in
    # cudnn_convolution_backward, 2·32·1024·14·14·256·1·1 FLOPs per call, 36 calls
    conv = [c for c in _costs(RESNET) if c.search == "aten::cudnn_convolution"]
    assert conv and all(c.flops is not None and c.source == COST_MODELLED for c in conv)
    assert sum(c.occurrences for c in conv) == 318
    one = _row(RESNET, "aten::cudnn_convolution(fp32[32, 256, 14, 14], fp32[1024, 256, 1, 1])")
    assert one.flops == 36 * 2 * 32 * 1024 * 14 * 14 * 256 == 118_380_036_096
    assert {c.source for c in _costs(RESNET) if c.search == "aten::conv2d"} == {
        "counted in nested aten::cudnn_convolution"
    }
    # an elementwise op inside a composite of its family: relu_ → clamp_min_ → clamp_min (out=)
    relu = _row(RESNET, "aten::relu_(fp32[32, 64, 112, 112])")
    assert relu.source == "counted in nested aten::clamp_min"
    assert (
        _row(RESNET, "aten::clamp_min(fp32[32, 64, 112, 112], fp32[32, 64, 112, 112])").flops
        == 6 * 32 * 64 * 112 * 112
    )


def test_device_time_is_the_union_of_the_launched_kernels() -> None:
    """By hand from the raw JSON: the kernels whose `external id` is one of the op's."""
    events = json.loads(gzip.decompress((DATA / RESNET).read_bytes()))["traceEvents"]
    dims = [[32, 1024, 14, 14], [1024, 256, 1, 1]]
    ops = [
        e
        for e in events
        if e.get("cat") == "Operator"
        and e["name"] == "aten::cudnn_convolution_backward_input"
        and e["args"]["Input Dims"][1:3] == dims
    ]
    ids = {e["args"]["External id"] for e in ops}
    kernels = [
        e
        for e in events
        if e.get("cat") in ("Kernel", "Memset", "Memcpy") and e["args"].get("external id") in ids
    ]
    assert (len(ops), len(kernels)) == (36, 72)  # a dgrad and a scale kernel each, one stream
    hand_sum_us = sum(e["dur"] for e in kernels)
    assert hand_sum_us == 15448
    row = _row(
        RESNET, "aten::cudnn_convolution_backward_input(fp32[32, 1024, 14, 14], fp32[1024, 256, 1, 1])"
    )
    assert row.self_time_ps == row.total_time_ps == hand_sum_us * PS_PER_US


def _write_trace(path: Path, events: list[dict]) -> Trace:
    device = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132, "totalGlobalMem": 85018279936}
    path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [device], "traceEvents": events}))
    return chrome_json.read(str(path), fsspec.filesystem("file"))


def _launch(ts: int, correlation: int, stream: int, kernel_ts: int, kernel_dur: int) -> list[dict]:
    runtime = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10}
    kernel = {"ph": "X", "cat": "kernel", "name": f"k{correlation}", "pid": 0, "tid": stream}
    return [
        {**runtime, "ts": ts, "dur": 2, "args": {"correlation": correlation}},
        {
            **kernel,
            "ts": kernel_ts,
            "dur": kernel_dur,
            "args": {"correlation": correlation, "stream": stream},
        },
    ]


def _op(name: str, ts: int, dur: int, **args: object) -> dict:
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": 10,
        "tid": 10,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def test_overlapping_kernels_count_once(tmp_path: Path) -> None:
    # One mm launching two kernels on two streams: [130, 150) and [140, 160) µs → busy 30 µs, not 40.
    events = [_op("aten::mm", 100, 50, **{"Input Dims": [[4, 8], [8, 2]], "Input type": ["float", "float"]})]
    events += _launch(110, 7, 7, 130, 20) + _launch(120, 8, 8, 140, 20)
    (mm,) = kineto.op_costs(_write_trace(tmp_path / "t.json", events))
    assert (mm.total_time_ps, mm.self_time_ps) == (30 * PS_PER_US, 30 * PS_PER_US)
    assert mm.flops == 2 * 4 * 2 * 8


def test_recorded_flops_count_whole(tmp_path: Path) -> None:
    dims = {"Input Dims": [[1, 3, 8, 8], [4, 3, 3, 3]], "Input type": ["float", "float"]}
    events = [
        _op("aten::conv2d", 100, 50, flops=1000, **dims),
        _op("aten::cudnn_convolution", 105, 40, **dims),
    ]
    events += _launch(110, 7, 7, 130, 20)
    rows = {c.search: c for c in kineto.op_costs(_write_trace(tmp_path / "t.json", events))}
    assert (rows["aten::conv2d"].flops, rows["aten::conv2d"].source) == (1000.0, COST_FROM_PROFILE)
    inner = rows["aten::cudnn_convolution"]
    assert (inner.flops, inner.source) == (None, "counted in aten::conv2d (FLOPs from the profile)")
    assert rows["aten::conv2d"].total_time_ps == inner.self_time_ps == 20 * PS_PER_US


def test_ops_without_shapes_say_so() -> None:
    addmm = _row(ALEXNET, "aten::addmm")
    assert (addmm.flops, addmm.bytes_by_level, addmm.source) == (
        None,
        None,
        "no shapes recorded (record_shapes=True)",
    )
    assert addmm.self_time_ps > 0
    assert _row(ALEXNET, "aten::linear").source == "counted in nested aten::addmm"
    assert _row(ALEXNET, "aten::t").source == "no FLOP formula for this op"


def test_cpu_only_trace_observes_no_device_time() -> None:
    trace = _trace(CPU_ONLY)
    assert not kineto.device_time_observed(trace)
    assert kineto.device_time_observed(_trace(BERT))
    costs = _costs(CPU_ONLY)
    assert costs and all(c.total_time_ps == 0 and c.self_time_ps == 0 for c in costs)


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.json.gz")))
def test_every_corpus_trace_gives_consistent_rows(name: str) -> None:
    trace = _trace(name)
    costs = _costs(name)
    op_ids = [trace.strings.index(c) for c in kineto.OP_CATEGORIES if c in trace.strings]
    on_cpu = {t.id for t in trace.tracks if trace.sections[t.section].kind == "cpu"}
    ops = sum(
        1
        for cat, track in zip(trace.ev_cat.tolist(), trace.ev_track.tolist())
        if cat in op_ids and track in on_cpu
    )
    assert sum(c.occurrences for c in costs) == ops
    for c in costs:
        known = c.source in (COST_FROM_SHAPES, COST_MODELLED, COST_FROM_PROFILE)
        assert (c.flops is not None) == known, c
        assert c.flops is None or c.flops >= 0
        assert 0 <= c.self_time_ps <= c.total_time_ps
        assert c.search and c.name.startswith(c.search)


def test_which_corpus_traces_record_shapes() -> None:
    """Shapes (Input Dims) of formula ops in bert_small, resnet50, MI250 and the multi-rank traces
    (the CPU-only trace has shapes too, of aten::empty only); none in alexnet and the ns-resolution
    V100 trace; no trace has a recorded `flops` arg."""
    with_estimates = {
        name
        for name in (p.name for p in DATA.glob("*.json.gz"))
        if any(c.source in (COST_FROM_SHAPES, COST_MODELLED) for c in _costs(name))
    }
    assert with_estimates == {
        BERT,
        RESNET,
        RANK1,
        "mi250_minitoy.pt.trace.json.gz",
        "rank-0.pt.trace.json.gz",
    }
    for name in (ALEXNET, "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"):
        formula_rows = [c for c in _costs(name) if c.search in kineto.FORMULAS]
        assert formula_rows and all(
            c.source in ("no shapes recorded (record_shapes=True)",) or c.source.startswith("counted in")
            for c in formula_rows
        )
    assert not any(c.source == COST_FROM_PROFILE for name in (BERT, RESNET, RANK1) for c in _costs(name))


def test_args_read_in_small_chunks_give_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The args are gathered and decoded in chunks, chunks without any field read are skipped: with a
    chunk of one record, records with and without shapes alternate from chunk to chunk."""
    shapes = {"Input Dims": [[4, 8], [8, 2]], "Input type": ["float", "float"]}
    events = [_op("aten::mm", 100 * k, 50, **(shapes if k % 2 else {})) for k in range(1, 7)]
    synthetic = _write_trace(tmp_path / "t.json", events)
    whole = [kineto.op_costs(_trace(RESNET)), kineto.op_costs(synthetic)]
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 1)
    assert [kineto.op_costs(_trace(RESNET)), kineto.op_costs(synthetic)] == whole
    rows = {c.name: c for c in whole[1]}
    assert rows["aten::mm(fp32[4, 8], fp32[8, 2])"].occurrences == 3
    assert (rows["aten::mm"].occurrences, rows["aten::mm"].source) == (
        3,
        "no shapes recorded (record_shapes=True)",
    )
