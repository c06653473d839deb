"""A compute roof per dtype and unit (`kineto_formulas.roof_of`, `DevicePeaks.compute_roof`,
`rows.figures`): each op against the peak of the compute it uses, on the corpus traces.

The peaks are the parts table's datasheet figures (H100 SXM: bf16 1979/2 TFLOP/s dense, fp32 67;
V100 SXM2: fp32 15.7, no bf16 figure); the rates and FLOPs are the answer's own, each utilization
checked against the peak the op's dtype and family name.
"""

from __future__ import annotations

import functools
from pathlib import Path

import fsspec
import pytest

from profscope.answers import UNSET
from profscope.formats.chrome import reader as chrome_json
from profscope.tools.roofline import analysis, kineto_formulas, parts
from profscope.tools.roofline.answers import RooflineAnswer
from profscope.tools.roofline.model import DevicePeaks
from tests.support import DATA_DIR

BERT = DATA_DIR / "kineto/bert_small.pt.trace.json.gz"  # H100, bf16 model with shapes
RESNET = DATA_DIR / "kineto/worker0.1623143089861.pt.trace.json.gz"  # V100, fp32 model with shapes
H100_BF16 = 1979e12 / 2
H100_FP32 = 67e12
V100_FP32 = 15.7e12


@functools.cache
def _answer(path: Path) -> RooflineAnswer:
    host = analysis.host_devices(path.name, chrome_json.read(str(path), fsspec.filesystem("file")))
    return analysis.answer(path.name, [host], analysis.Options(), None)  # type: ignore[list-item]


def test_roof_by_family_and_dtype() -> None:
    roof = kineto_formulas.roof_of
    assert [roof("matmul", d) for d in ("bf16", "fp16", "fp32", "fp64", "fp8e4m3", "int8")] == [
        "bf16", "fp16", "fp32_matrix", "fp64_matrix", "fp8", "int8",
    ]  # fmt: skip
    # vector units: 16-bit floats are computed in fp32 (PyTorch's opmath_type)
    assert [roof("elementwise", d) for d in ("bf16", "fp16", "fp32", "fp64", "int64")] == [
        "fp32", "fp32", "fp32", "fp64", "int64_vector",
    ]  # fmt: skip


def test_a_peak_the_part_does_not_list_is_not_known() -> None:
    v100, mi250 = (
        next(p for p in parts.PARTS if p.key == key).peaks() for key in ("v100-sxm2-32gb", "mi250-gcd")
    )
    assert v100.compute_roof("bf16") is None  # the V100 datasheet lists no bf16
    assert v100.compute_roof("int64_vector") is None
    # an fp32 GEMM: the matrix figure where the part lists one (AMD), else the fp32 rate (Nvidia:
    # TF32 not assumed)
    assert v100.compute_roof("fp32_matrix") == ("fp32", v100.flops["fp32"])
    assert mi250.compute_roof("fp32_matrix") == ("fp32_matrix", mi250.flops["fp32_matrix"])
    # "": the device's compute roof
    assert DevicePeaks("x", roof_precision=None).compute_roof("") is None
    assert v100.compute_roof("") == v100.flop_roof()


def test_a_bf16_model_on_an_h100_is_measured_against_bf16_and_fp32() -> None:
    """bert_small: its GEMMs and attention run in bf16 on the tensor cores (989.5 TFLOP/s), its
    layer norms, GELUs and adds on the vector units at the fp32 rate (67 TFLOP/s)."""
    answer = _answer(BERT)
    assert answer.device.roof_precision == "bf16"  # type: ignore[union-attr]
    assert answer.device.roofs == ["bf16", "fp32"]  # type: ignore[union-attr]
    ops = {o.name: o for o in answer.ops}
    gemm = ops["aten::addmm(bf16[512], bf16[141, 512], bf16[512, 512])"]
    add = ops["aten::add(bf16[1, 141, 512], bf16[1, 141, 512])"]
    norm = ops["aten::native_layer_norm(bf16[1, 141, 512], bf16[512], bf16[512])"]
    assert gemm.figures.roof == "bf16"
    assert gemm.figures.flop_utilization == gemm.figures.flop_rate / H100_BF16  # type: ignore[operator]
    for vector in (add, norm):
        assert vector.figures.roof == "fp32"
        assert vector.figures.flop_utilization == vector.figures.flop_rate / H100_FP32  # type: ignore[operator]
    for op in answer.ops:
        if op.flops is not UNSET and op.flops > 0:  # type: ignore[operator]
            expected = "bf16" if op.category in ("matmul", "attention") else "fp32"
            assert op.figures.roof == expected, op.name
    # the program: Σ FLOPs at each roof ÷ its peak, ÷ the device time
    total = answer.program[0]
    assert total.figures.roof == "bf16 + fp32"
    assert list(total.flops_by_roof) == ["bf16", "fp32"]
    assert sum(total.flops_by_roof.values()) == pytest.approx(total.flops, rel=1e-12)
    seconds = total.device_time_ns * 1e-9
    expected = (total.flops_by_roof["bf16"] / H100_BF16 + total.flops_by_roof["fp32"] / H100_FP32) / seconds
    assert total.figures.flop_utilization == pytest.approx(expected, rel=1e-12)


def test_an_fp32_model_on_a_v100_is_measured_against_fp32() -> None:
    """resnet50 in fp32 on a V100: convolutions and GEMMs at the fp32 rate (15.7 TFLOP/s), not the
    125 TFLOP/s fp16 tensor-core figure. Its batch-norm step counter, an aten::add of two int64
    scalars (318 FLOPs in all), runs at an int64 vector rate no datasheet gives: named, not
    priced; the uint8 copies have no FLOPs, so no roof."""
    answer = _answer(RESNET)
    assert answer.device.roof_precision == "fp32"  # type: ignore[union-attr]
    assert answer.device.roofs == ["fp32", "int64_vector"]  # type: ignore[union-attr]
    counter = next(o for o in answer.ops if o.name == "aten::add(int64[], int64[])")
    assert (counter.flops, counter.figures.roof, counter.figures.flop_utilization) == (
        318.0,
        "int64_vector",
        UNSET,
    )
    total = answer.program[0]
    assert total.figures.roof == "fp32 + int64_vector"
    assert total.flops_by_roof["int64_vector"] == 318.0
    seconds = total.device_time_ns * 1e-9
    expected = total.flops_by_roof["fp32"] / V100_FP32 / seconds
    assert total.figures.flop_utilization == pytest.approx(expected, rel=1e-12)
