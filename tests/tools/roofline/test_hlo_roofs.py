"""The compute roof of each HLO instruction (`tools/roofline/hlo_roofs.py`): on the real programs of
the MI300, TPU and JAX CPU XPlanes, and on synthetic ones for the element types no capture has
(fp8, int8, f16 gemm, f64), written with the HloProto helpers of the proto tests."""

from __future__ import annotations

from pathlib import Path

from profscope.formats.hlo.proto import HloModule
from profscope.tools.roofline import analysis, peaks
from profscope.tools.roofline.answers import RooflineAnswer
from profscope.tools.roofline.hlo_roofs import instruction_roofs
from tests.formats.hlo.test_hlo_proto import (
    F32,
    PRED,
    S32,
    computation,
    hlo_proto,
    instruction,
    modules,
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
    tpu = _answer(overview_support.TPU)
    assert {op.figures.roof for op in tpu.ops if op.flops} == {"peak"} and peaks.TPU_ONE_PEAK in tpu.warnings


def _answer(path: Path) -> RooflineAnswer:
    host = analysis.host_devices(path.name, overview_support.trace_of(path))
    return analysis.answer(path.name, [host], analysis.Options(), None)
