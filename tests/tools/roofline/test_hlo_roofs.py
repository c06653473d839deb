"""The compute roof of each HLO instruction (`tools/roofline/hlo_roofs.py`): on the real programs of
the MI300, TPU and JAX CPU XPlanes, and on synthetic ones for the element types no capture has
(fp8, int8, f16 gemm, f64) and for the TPU's matrix work (bf16, int8, f32 dots at each precision),
written with the HloProto helpers of the proto tests; the TPU's peaks per unit (`peaks.py`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from profscope.formats.hlo.proto import HloModule
from profscope.tools.roofline import analysis, peaks, rows
from profscope.tools.roofline.answers import RooflineAnswer
from profscope.tools.roofline.hlo_roofs import TPU_VECTOR, instruction_roofs, tpu_instruction_roofs
from profscope.tools.roofline.model import OpCost
from tests.formats.hlo.test_hlo_proto import (
    F32,
    PRED,
    S32,
    computation,
    hlo_proto,
    instruction,
    modules,
    packed,
    shape,
)
from tests.support import overview as overview_support
from tests.support.xplane_messages import field

BF16, F16, F64, S8, F8E4M3FN = 16, 10, 12, 2, 20  # xla.PrimitiveType numbers
DOT_DIMS = field(30, field(1, bytes([1])) + field(2, bytes([0])))  # lhs contracting {1}, rhs {0}


def test_real_programs() -> None:
    """MI300 program 15: the cuDNN convolution's operands are bf16 (tensor cores at bf16); its
    bf16 transposes run on the vector units, at the fp32 rate. The JAX CPU program 8's f32 dots:
    the fp32 matrix roof. TPU: the f32 add fusion, fp32; an s32 and a pred result: integer and
    bool vector roofs, which no datasheet gives."""
    mi300 = modules("mi300")[15]
    roofs = instruction_roofs(mi300)
    conv = mi300.instruction("cudnn-conv.1")
    assert {o.shape.element_type for o in conv.operands} == {"bf16"} and roofs["cudnn-conv.1"] == "bf16"
    assert mi300.instruction("input_transpose_fusion").shape.element_type == "bf16"
    assert roofs["input_transpose_fusion"] == "fp32"
    cpu = modules("cpu")[8]
    dots = [i for i in cpu.instructions() if i.opcode == "dot"]
    assert dots and {i.operands[0].shape.element_type for i in dots} == {"f32"}
    assert {instruction_roofs(cpu)[i.name] for i in dots} == {"fp32_matrix"}
    tpu = modules("tpu")[-6255983156473747731]
    assert instruction_roofs(tpu)["broadcast_add_fusion"] == "fp32"
    by_type = {
        i.shape.element_type: instruction_roofs(i.module)[i.name]
        for m in modules("cpu").values()
        for i in m.instructions()
    }
    assert by_type["s32"] == "int32_vector" and by_type["pred"] == "bool_vector"


def _module() -> HloModule:
    """A fusion whose fused computation holds an fp8 dot (the fusion's roof: fp8), an s8 dot, an
    f16 cuBLAS gemm custom call, an f64 add, a compare (pred) and a tuple of the results."""

    def dot_fusion() -> bytes:
        lhs, rhs = shape(F8E4M3FN, (64, 32)), shape(F8E4M3FN, (32, 16))
        body = [
            instruction("fp0", "parameter", lhs, 10),
            instruction("fp1", "parameter", rhs, 11, extra=field(9, 1)),
            instruction("fdot", "dot", shape(F32, (64, 16)), 12, [10, 11], extra=DOT_DIMS),
            instruction("fscale", "multiply", shape(F32, (64, 16)), 13, [12, 12]),
        ]
        return computation("fused_fp8_gemm", 1, body, 13, fusion=True)

    ins = [
        instruction("a8", "parameter", shape(F8E4M3FN, (64, 32)), 20),
        instruction("b8", "parameter", shape(F8E4M3FN, (32, 16)), 21, extra=field(9, 1)),
        instruction("gemm_fusion", "fusion", shape(F32, (64, 16)), 22, [20, 21], [1]),
        instruction("i8", "parameter", shape(S8, (64, 32)), 23, extra=field(9, 2)),
        instruction("j8", "parameter", shape(S8, (32, 16)), 24, extra=field(9, 3)),
        instruction("int_dot", "dot", shape(S32, (64, 16)), 25, [23, 24], extra=DOT_DIMS),
        instruction("h", "parameter", shape(F16, (64, 32)), 26, extra=field(9, 4)),
        instruction("g", "parameter", shape(F16, (32, 16)), 27, extra=field(9, 5)),
        instruction("half_gemm", "custom-call", shape(F16, (64, 16)), 28, [26, 27], extra=field(28, b"__cublas$gemm")),
        instruction("d", "parameter", shape(F64, (8,)), 29, extra=field(9, 6)),
        instruction("double_add", "add", shape(F64, (8,)), 30, [29, 29]),
        instruction("mask", "compare", shape(PRED, (8,)), 31, [29, 29], extra=field(63, b"LT")),
        instruction("out", "tuple", shape(0, tuple_of=(shape(F32, (64, 16)), shape(S32, (64, 16)))), 32, [22, 25]),
    ]  # fmt: skip
    return HloModule(hlo_proto([dot_fusion(), computation("main", 2, ins, 32)], entry=2))


def test_element_types_no_capture_has() -> None:
    roofs = instruction_roofs(_module())
    assert roofs["fdot"] == roofs["gemm_fusion"] == "fp8"  # the fusion holds an fp8 dot
    assert roofs["fscale"] == "fp32"  # its f32 epilogue alone is vector work
    assert roofs["int_dot"] == "int8" and roofs["half_gemm"] == "fp16"
    assert roofs["double_add"] == "fp64" and roofs["mask"] == "bool_vector"
    assert roofs["out"] == "fp32"  # a tuple: its first array leaf
    assert roofs["d"] == "fp64"


def test_xplane_op_rows_say_their_roof() -> None:
    """In the answer: the MI300 convolution against bf16 (the profile's 1307.4 TFLOP/s: the datasheet
    gives bf16 the fp16 rate), its transposes against fp32 (no FLOPs: utilization 0), the program row
    against bf16; the TPU's ops all against its one unnamed peak, with a warning that says why."""
    mi300 = _answer(overview_support.MI300)
    ops = {op.name: op for op in mi300.ops}
    conv = ops["cudnn-conv.1"]
    assert conv.figures.roof == "bf16"
    assert conv.figures.flop_utilization == conv.figures.flop_rate / (304 * 2048 * 2.1e9)
    assert ops["input_transpose_fusion"].figures.roof == "fp32"
    assert mi300.program[0].figures.roof == "bf16" and mi300.program[0].flops_by_roof == {"bf16": conv.flops}
    # TPU: every op of its programs is vector work (f32 adds, an all-reduce, copies): against the MXU's
    # bf16 peak, the profile's 918 TFLOP/s, under a roof whose name says so.
    tpu = _answer(overview_support.TPU)
    assert {op.figures.roof for op in tpu.ops if op.flops} == {
        TPU_VECTOR
    } and peaks.TPU_NO_VPU_PEAK in tpu.warnings
    fusion = next(op for op in tpu.ops if op.name == "broadcast_add_fusion.1")
    assert fusion.figures.flop_utilization == pytest.approx(fusion.figures.flop_rate / 918e12, rel=1e-12)
    assert tpu.program[0].figures.roof == TPU_VECTOR and peaks.TPU_ONE_PEAK not in tpu.warnings


def _answer(path: Path) -> RooflineAnswer:
    host = analysis.host_devices(path.name, overview_support.trace_of(path))
    return analysis.answer(path.name, [host], analysis.Options(), None)


BF16_3X, BF16_6X = "bf16_3x (modelled)", "bf16_6x (modelled)"
DEFAULT, HIGH, HIGHEST = 0, 1, 2  # PrecisionConfig.Precision


def _precision(*operands: int, algorithm: int = 0) -> bytes:
    """HloInstructionProto field 51, PrecisionConfig: operand_precision (1), algorithm (2)."""
    return field(51, field(1, packed(operands)) + (field(2, algorithm) if algorithm else b""))


def _tpu_module() -> HloModule:
    """Dots of every TPU case: bf16, s8, f32 without a precision (DEFAULT), at HIGH, at HIGHEST, with
    operands of different precisions, with an algorithm named; a fusion holding an f32 HIGHEST dot and
    its multiply epilogue; an f32 add and a tuple."""

    def dot_fusion() -> bytes:
        body = [
            instruction("fp0", "parameter", shape(F32, (64, 32)), 10),
            instruction("fp1", "parameter", shape(F32, (32, 16)), 11, extra=field(9, 1)),
            instruction("fdot", "dot", shape(F32, (64, 16)), 12, [10, 11], extra=DOT_DIMS + _precision(2, 2)),
            instruction("fscale", "multiply", shape(F32, (64, 16)), 13, [12, 12]),
        ]
        return computation("fused_highest", 1, body, 13, fusion=True)

    f32_dot = DOT_DIMS  # every f32 dot: x[64,32]·y[32,16]
    ins = [
        instruction("a", "parameter", shape(BF16, (64, 32)), 20),
        instruction("b", "parameter", shape(BF16, (32, 16)), 21, extra=field(9, 1)),
        instruction("bf16_dot", "dot", shape(F32, (64, 16)), 22, [20, 21], extra=DOT_DIMS),
        instruction("i", "parameter", shape(S8, (64, 32)), 23, extra=field(9, 2)),
        instruction("j", "parameter", shape(S8, (32, 16)), 24, extra=field(9, 3)),
        instruction("int8_dot", "dot", shape(S32, (64, 16)), 25, [23, 24], extra=DOT_DIMS),
        instruction("x", "parameter", shape(F32, (64, 32)), 26, extra=field(9, 4)),
        instruction("y", "parameter", shape(F32, (32, 16)), 27, extra=field(9, 5)),
        instruction("default_dot", "dot", shape(F32, (64, 16)), 28, [26, 27], extra=f32_dot),
        instruction("high_dot", "dot", shape(F32, (64, 16)), 29, [26, 27], extra=f32_dot + _precision(1, 1)),
        instruction("highest_dot", "dot", shape(F32, (64, 16)), 30, [26, 27], extra=f32_dot + _precision(2, 2)),
        instruction("mixed_dot", "dot", shape(F32, (64, 16)), 31, [26, 27], extra=f32_dot + _precision(0, 2)),
        instruction("algorithm_dot", "dot", shape(F32, (64, 16)), 32, [26, 27], extra=f32_dot + _precision(0, 0, algorithm=7)),
        instruction("highest_fusion", "fusion", shape(F32, (64, 16)), 33, [26, 27], [1]),
        instruction("sum", "add", shape(F32, (64, 16)), 34, [28, 29]),
        instruction("out", "tuple", shape(0, tuple_of=(shape(F32, (64, 16)), shape(S32, (64, 16)))), 35, [34, 25]),
    ]  # fmt: skip
    return HloModule(hlo_proto([dot_fusion(), computation("main", 2, ins, 35)], entry=2))


def test_tpu_roofs_by_unit_type_and_precision() -> None:
    """The MXU at bf16 or int8 by the dot's operands; an f32 dot as one bf16 pass (DEFAULT, also when
    no precision is given), 3 (HIGH) or 6 (HIGHEST); not known where its operands disagree or an
    algorithm is named; a fusion at its dot's roof, its epilogue and every other op vector work."""
    roofs = tpu_instruction_roofs(_tpu_module())
    assert roofs["bf16_dot"] == roofs["default_dot"] == "bf16" and roofs["int8_dot"] == "int8"
    assert roofs["high_dot"] == BF16_3X and roofs["highest_dot"] == roofs["highest_fusion"] == BF16_6X
    assert roofs["mixed_dot"] == roofs["algorithm_dot"] == "f32_matrix"
    assert roofs["fscale"] == roofs["sum"] == roofs["out"] == roofs["x"] == TPU_VECTOR
    # The same module on a GPU: its units, not the TPU's (f32 dots at the fp32 matrix roof).
    assert instruction_roofs(_tpu_module())["highest_dot"] == "fp32_matrix"


def _v6e_stats() -> dict:
    trace = overview_support.trace_of(overview_support.TPU)
    return next(d["stats"] for d in trace.metadata["devices"].values() if d.get("kind") == "tpu")


def test_tpu_peaks_per_unit() -> None:
    """v6e: the profile's 918 TFLOP/s is the datasheet's bf16 peak, so it is named bf16; int8 is the
    datasheet's 1836 TOP/s; HIGH and HIGHEST f32 work has modelled peaks of 918 ÷ 3 and ÷ 6; vector
    work the MXU figure under its own name. A chip the parts table does not know keeps one peak."""
    stats = _v6e_stats()
    device = peaks.with_tpu_units(peaks.tpu_peaks(stats), stats)
    flops = {k: p.value for k, p in device.flops.items()}
    assert flops == {"bf16": 918e12, "int8": 1836e12, TPU_VECTOR: 918e12, BF16_3X: 306e12, BF16_6X: 153e12}
    assert device.flops["bf16"].source.startswith("from the profile;")
    assert device.flops["int8"].source.startswith("from the parts table")
    assert all(device.flops[k].source.startswith("modelled:") for k in (BF16_3X, BF16_6X))
    assert device.roof_precision == "bf16" and peaks.TPU_NO_VPU_PEAK in device.notes
    unknown = {**stats, "device_type_string": "TPU v99"}
    one = peaks.with_tpu_units(peaks.tpu_peaks(unknown), unknown)
    assert set(one.flops) == {"peak"} and peaks.TPU_ONE_PEAK in one.notes


def test_tpu_program_row_sums_each_roof() -> None:
    """A program of a bf16 dot (6 GFLOP), a HIGH f32 dot (1.2 GFLOP) and vector work (0.9 GFLOP) in
    1 ms on a v6e: FLOP utilization = (6e9 ÷ 918e12 + 1.2e9 ÷ 306e12 + 0.9e9 ÷ 918e12) ÷ 1e-3 s
    = (6 + 3.6 + 0.9)e9 ÷ 918e12 ÷ 1e-3 = 0.0114379…; the row names its roofs, most FLOPs first."""
    stats = _v6e_stats()
    device = peaks.with_tpu_units(peaks.tpu_peaks(stats), stats)
    costs = [
        OpCost("dot", "dot", 1, 10**8, 10**8, 6e9, {"hbm": 1e6}, "profile", "dot", roof="bf16"),
        OpCost("dot.1", "dot", 1, 10**8, 10**8, 1.2e9, {"hbm": 1e6}, "profile", "dot.1", roof=BF16_3X),
        OpCost("add", "add", 1, 10**8, 10**8, 0.9e9, {"hbm": 1e6}, "profile", "add", roof=TPU_VECTOR),
    ]
    row = rows.program_row("Total", costs, 10**9, 1, device)
    assert row.figures.roof == f"bf16 + {BF16_3X} + {TPU_VECTOR}"
    assert row.figures.flop_utilization == pytest.approx(10.5e9 / 918e12 / 1e-3, rel=1e-12)
    assert row.flops_by_roof == {"bf16": 6e9, BF16_3X: 1.2e9, TPU_VECTOR: 0.9e9}


def test_tpu_override_moves_the_modelled_roofs() -> None:
    """A user's bf16 figure in roofline.json: the modelled HIGH / HIGHEST and vector roofs follow it."""
    host = analysis.host_devices("tpu", overview_support.trace_of(overview_support.TPU))
    answer = analysis.answer("tpu", [host], analysis.Options(), {"flops": {"bf16": 9e14}})
    flops = answer.device.flops
    assert flops["bf16"].source == "user override" and flops[BF16_3X].value == 3e14
    assert flops[TPU_VECTOR].value == 9e14 and flops[BF16_6X].value == 1.5e14
    assert peaks.TPU_NO_VPU_PEAK in answer.warnings, "still true with the user's bf16 figure"


def test_tpu_without_a_named_peak_keeps_every_op_on_it() -> None:
    """The same capture as if from a chip the parts table does not know: one unnamed peak, every op
    against it, and the warning says why."""
    trace = overview_support.trace_of(overview_support.TPU)
    devices = {
        sid: {**d, "stats": {**d["stats"], "device_type_string": "TPU v99"}} if d.get("kind") == "tpu" else d
        for sid, d in trace.metadata["devices"].items()
    }
    unknown = dataclasses.replace(trace, metadata={**trace.metadata, "devices": devices})
    answer = _answer_of(unknown)
    assert {op.figures.roof for op in answer.ops if op.flops} == {
        "peak"
    } and peaks.TPU_ONE_PEAK in answer.warnings


def _answer_of(trace) -> RooflineAnswer:
    return analysis.answer("tpu", [analysis.host_devices("tpu", trace)], analysis.Options(), None)
