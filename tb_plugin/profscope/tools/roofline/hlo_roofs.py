"""The compute roof of each HLO instruction of a GPU or TPU program: the unit and number format its
FLOPs run in, from the element types of its operands and result in the HLO module, so each XLA op
is placed against the peak of the compute it uses (`DevicePeaks.compute_roof`), as a PyTorch op is
by its dtype (`kineto_formulas.roof_of`).

GPU (`instruction_roofs`):

- Matrix instructions run on the tensor / matrix units: dot, convolution, the gemm, convolution and
  fused-attention custom calls `hlo_cost` prices, and a fusion whose fused computation (nested
  fusions and calls included) holds one (its epilogue runs in the matmul's shadow). The roof is that
  of the matrix instruction's lhs (operand 0) element type:
      bf16 → bf16, f16 → fp16, every f8 format → fp8, s8 / u8 → int8,
      f32 → fp32_matrix, f64 → fp64_matrix (the fp32 / fp64 figure where the part lists no matrix
      one: XLA may run an f32 dot as TF32, but the profile does not say so, so TF32 is not assumed)
      any other type t → t_matrix (no datasheet figure: not known).
- Every other instruction runs on the vector units, at the element type of its result (its first
  array leaf):
      f32, bf16, f16 → fp32 (XLA's GPU emitters compute 16-bit elementwise math and reductions in
      f32), f64 → fp64, integers and pred → int32, uint8, bool, … + "_vector" (no datasheet gives
      those: not known).
An instruction without a FLOP-bearing array type (tokens, tuples of nothing) keeps the device's
compute roof (""). A roof the device has no peak for is "not known": the op has no FLOP
utilization and the view says so (`DevicePeaks.compute_roof`, `rows.py`).

TPU (`tpu_instruction_roofs`). A TensorCore multiplies matrices on its MXUs and does everything else
on its vector unit (VPU) (Cloud TPU docs, "TPU v6e" / "TPU v5e" system architecture: "Each
TensorCore contains two 256x256 matrix-multiply units (MXU), a 128x8 vector processing unit (VPU)…").
The MXU multiplies bf16 (and int8 where the chip lists an int8 peak). An f32 matrix instruction
runs as bf16 passes set by its PrecisionConfig `operand_precision` (jax.lax.Precision, docs.jax.dev
jax.lax: "DEFAULT: … On TPU: performs float32 computations in bfloat16"; "HIGH: … On TPU: performs
float32 computations in 3 bfloat16 passes"; "HIGHEST: … On TPU: performs float32 computations in 6
bfloat16"; enum DEFAULT = 0, HIGH = 1, HIGHEST = 2; no precision given = DEFAULT):
    matrix instruction (as on GPU: dot, convolution, a fusion or call holding one), by its lhs type:
      bf16 → bf16, s8 / u8 → int8, every f8 format → fp8,
      f32 → bf16 (DEFAULT: one pass), "bf16_3x (modelled)" (HIGH), "bf16_6x (modelled)" (HIGHEST),
        whose peaks are modelled as bf16 peak ÷ passes (`peaks.with_tpu_units`);
        f32 whose operands name different precisions, or whose PrecisionConfig names an
        `algorithm` (field 2), or a precision beyond HIGHEST → f32_matrix (passes not known);
      any other type t → t_matrix (not known).
    every other instruction with an array result → "vector (MXU bf16 peak)": no VPU peak is
      published for any Cloud TPU, so vector work is measured against the MXU's bf16 peak, as
      XProf measures every TPU op, and the roof's name says so (`peaks.with_tpu_units`).
"""

from __future__ import annotations

from collections.abc import Callable

from profscope.formats.hlo.proto import HloComputation, HloInstruction, HloModule, Shape
from profscope.tools.roofline.hlo_cost import CONV_TARGETS, FMHA_PREFIX, GEMM_TARGETS, TE_ATTENTION_TARGETS

MATRIX_OPCODES = frozenset({"dot", "convolution"})
MATRIX_ROOFS = {"bf16": "bf16", "f16": "fp16", "s8": "int8", "u8": "int8", "f32": "fp32_matrix"}
MATRIX_ROOFS["f64"] = "fp64_matrix"
VECTOR_ROOFS = {"f32": "fp32", "bf16": "fp32", "f16": "fp32", "f64": "fp64"}
# XLA's element types by the names the PyTorch side gives the same types (`kineto_formulas.DTYPES`).
TYPE_NAMES = {"s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64", "u8": "uint8", "pred": "bool"}
TYPE_NAMES |= {"u16": "uint16", "u32": "uint32", "u64": "uint64", "c64": "complex64", "c128": "complex128"}
# TPU roofs (module docstring): bf16 passes of an f32 matrix instruction by PrecisionConfig.Precision.
TPU_PASSES = {0: 1, 1: 3, 2: 6}
TPU_MATRIX_ROOFS = {"bf16": "bf16", "s8": "int8", "u8": "int8"}
TPU_VECTOR = "vector (MXU bf16 peak)"
PRECISION_CONFIG, OPERAND_PRECISION, ALGORITHM = 51, 1, 2  # HloInstructionProto / PrecisionConfig fields


def modelled_passes_roof(passes: int) -> str:
    """The roof of an f32 TPU matrix instruction run as `passes` (> 1) bf16 passes."""
    return f"bf16_{passes}x (modelled)"


def instruction_roofs(module: HloModule) -> dict[str, str]:
    """The GPU roof of every instruction of the module, by instruction name (module docstring)."""
    return _roofs(module, roof_of)


def tpu_instruction_roofs(module: HloModule) -> dict[str, str]:
    """The TPU roof of every instruction of the module, by instruction name (module docstring)."""
    return _roofs(module, tpu_roof_of)


def _roofs(module: HloModule, roof: Callable[[HloInstruction], str]) -> dict[str, str]:
    module.load_all()
    out: dict[str, str] = {}
    for computation in module.computations.values():
        for instruction in computation.instructions:
            out.setdefault(instruction.name, roof(instruction))
    return out


def tpu_roof_of(ins: HloInstruction) -> str:
    """One instruction's roof on a TPU (module docstring)."""
    matrix = _matrix_instruction(ins, set())
    if matrix is None:
        return "" if _first_array_type(ins.shape) is None else TPU_VECTOR
    operands = matrix.operands
    kind = operands[0].shape.element_type if operands else matrix.shape.element_type
    if kind.startswith("f8"):
        return "fp8"
    if kind != "f32":
        return TPU_MATRIX_ROOFS.get(kind, f"{TYPE_NAMES.get(kind, kind)}_matrix")
    config = matrix.fields.message(PRECISION_CONFIG)
    precisions = set(config.ints(OPERAND_PRECISION)) or {0}
    passes = TPU_PASSES.get(precisions.pop()) if len(precisions) == 1 else None
    if passes is None or config.int(ALGORITHM):
        return "f32_matrix"
    return "bf16" if passes == 1 else modelled_passes_roof(passes)


def roof_of(ins: HloInstruction) -> str:
    """One instruction's roof (module docstring)."""
    matrix = _matrix_instruction(ins, set())
    if matrix is not None:
        operands = matrix.operands
        kind = operands[0].shape.element_type if operands else matrix.shape.element_type
        if kind.startswith("f8"):
            return "fp8"
        return MATRIX_ROOFS.get(kind, f"{TYPE_NAMES.get(kind, kind)}_matrix")
    kind = _first_array_type(ins.shape)
    if kind is None:
        return ""
    return VECTOR_ROOFS.get(kind, f"{TYPE_NAMES.get(kind, kind)}_vector")


def _is_matrix(ins: HloInstruction) -> bool:
    if ins.opcode in MATRIX_OPCODES:
        return True
    if ins.opcode != "custom-call":
        return False
    target = ins.custom_call_target or ""
    known = GEMM_TARGETS | CONV_TARGETS | TE_ATTENTION_TARGETS
    return target in known or target.startswith(FMHA_PREFIX)


def _matrix_instruction(ins: HloInstruction, seen: set[int]) -> HloInstruction | None:
    """`ins` when it is a matrix instruction, else the first one its fused or called computations
    hold (a fusion's, a call's), else None."""
    if _is_matrix(ins):
        return ins
    if ins.opcode not in ("fusion", "call"):
        return None
    for computation in ins.called_computations:
        found = _in_computation(computation, seen)
        if found is not None:
            return found
    return None


def _in_computation(computation: HloComputation, seen: set[int]) -> HloInstruction | None:
    if id(computation) in seen:
        return None
    seen.add(id(computation))
    for instruction in computation.instructions:
        found = _matrix_instruction(instruction, seen)
        if found is not None:
            return found
    return None


def _first_array_type(shape: Shape) -> str | None:
    """The element type of the shape's first array leaf, None when it has none."""
    if shape.is_tuple:
        for leaf in shape.tuple_shapes:
            kind = _first_array_type(leaf)
            if kind is not None:
                return kind
        return None
    return shape.element_type if shape.is_array else None
