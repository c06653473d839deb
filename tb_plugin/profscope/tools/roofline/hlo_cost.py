"""FLOPs, transcendentals and bytes accessed of each HLO instruction, counted as XLA's HloCostAnalysis.

`instruction_costs(module)` gives a `Cost` per instruction name (XLA names are unique in a module)
for every computation, fused ones included: the cost of one execution. GPU kernels name their HLO
instruction in the `hlo_op` stat and its module in `program_id`, so a kernel's cost is
`instruction_costs(modules[program_id])[hlo_op]`. Unknown is None with a note, never 0.

Sizes: size(s) = elements × ceil(bits/8) bytes for an array (element_size_in_bits × elements / 8,
rounded up, when the layout packs sub-byte types); a tuple is the sum of its leaves, except for the
ops whose tuples only hold aliases of buffers counted elsewhere (copy-start/done, async-update/done,
send/recv and their done ops, all-gather-start/done, all-reduce-done, collective-permute-start/done),
where a tuple is its index table, 8 bytes per element, as in XLA; tokens and opaque values are 0. E(s) = elements of an array (1 for a scalar); out = the result shape;
in_i = operand i; default bytes B = Σ size(in_i) + size(out). Per opcode (XLA handler in brackets):

- Elementwise [HandleElementwiseOp]: 1 FLOP per element of out, or 1 transcendental instead for
  exponential, exponential-minus-one, log, log-plus-one, logistic, power, sqrt, cbrt, rsqrt, tanh,
  tan, sine, cosine, atan2, erf. Elementwise: abs, add, and, atan2, bitcast-convert, cbrt, ceil,
  clamp, compare, complex, convert, cosine, count-leading-zeros, divide, erf, exponential(-minus-one),
  floor, imag, is-finite, log(-plus-one), logistic, maximum, minimum, multiply, negate, not, or,
  popcnt, power, real, reduce-precision, remainder, round-nearest-afz/even, rsqrt, select,
  shift-left, shift-right-arithmetic/logical, sign, sine, sqrt, stochastic-convert, subtract, tan,
  tanh, xor. Bytes B.
- dot: FLOPs = 2 × E(out) × Π in_0.dims[lhs_contracting]. Bytes B.
- convolution: FLOPs = 2 × (in_0[feature] / feature_group_count) × out[feature] ×
  (in_0[batch] / batch_group_count) × Π_spatial valid(d), where valid(d) counts the (kernel k,
  output o) pairs whose input index (o·stride − pad_low + k·window_dilation) lands on a real
  (undilated, in-bounds) input element: padding and base dilation holes do not count. Bytes B.
- fft: FLOPs = 2 × 4 × Π floor(log2(fft_length)) × E(in_0).
- reduce: FLOPs = F(to_apply) × (E(in_0) − E(out_0)) (the reducer's FLOPs per application; the
  same for transcendentals). reduce-window: F(to_apply) × (Π window − 1) × E(out_0), or, for a
  window that reduces one padded dimension of size n and broadcasts it back, (E(out)/n + n − 1).
  select-and-scatter: F(select) × E(in_1) × (Π window − 1) + F(scatter) × E(in_1).
  map: F(to_apply) × E(out). sort: E(in_0) × ceil(log2 E(in_0)). Bytes B.
- all-reduce(-start): FLOPs = Σ E over the array leaves of out. Bytes B.
- rng: transcendentals = E(out); rng-bit-generator: transcendentals = Σ E(leaves of out).
- triangular-solve: FLOPs = 2 × in_0.dims[-1] × E(in_1); bytes = size(out) + size(in_0)/2 +
  size(in_1). cholesky: FLOPs = in_0.dims[-1] × E(in_0) / 3 (integer); bytes = size(in_0).
- slice: bytes = 2 × size(out). dynamic-slice: 2 × size(out) + size(in_1). dynamic-update-slice:
  2 × size(in_1) + size(in_2) (operand 0 aliases the output). gather: 2 × size(out) + size(in_1).
  scatter (n operands, indices, n updates): bytes = 3 × Σ size(updates) + size(indices), FLOPs =
  F(to_apply) × E(updates_0).
- No data moved, bytes 0: parameter, constant, get-tuple-element, bitcast, transpose that is a
  bitcast (its permutation maps the output layout onto the input layout), after-all,
  add-dependency, domain, opt-barrier. tuple: 8 bytes per element (its index table).
- fusion [HandleFusion]: FLOPs and transcendentals = Σ over the fused computation. Bytes at the
  boundary only: each output leaf (a dynamic-update-slice root, or root-tuple element, counts only
  its update), plus every fused constant of more than one element, plus per fused parameter the
  bytes its users read (FusionParameterReadBytes): a slice user reads its output, a dynamic-slice
  user its output when the parameter is the sliced operand, a dynamic-update-slice user nothing when
  the parameter is the updated operand, each broadcast or reshape user the whole parameter, all
  other users the whole parameter once; a nested fusion user what its own parameter reads.
  kCustom fusions holding a gather or scatter cost that gather or scatter.
- call: the callee's sums. while: body + condition sums (one iteration). conditional: the maximum
  of each property over the branches. async-start: the wrapped computation's sums.
- custom-call: cuBLAS/hipBLAS gemm (`__cublas$gemm`, `__cublas$lt$matmul`, `…$f8`): the dot
  formula with the backend_config's gemm dot_dimension_numbers and out = result (tuple element 0);
  cuDNN/MIOpen convolutions (`__cudnn$conv…`): the convolution formula with the call's window and
  dim labels, out = tuple element 0 (the scratch buffer is neither FLOPs nor bytes), as
  GpuHloCostAnalysis. cuDNN fused attention (`__cudnn$fmha…`, flash attention), which XLA's cost
  model does not price, is modelled from its shapes (note "modelled: …"):
      forward  FLOPs = 4·B·H·Sq·Sk·D   (Q·Kᵀ: 2·B·H·Sq·Sk·D, P·V: 2·B·H·Sq·Sk·Dv, with Dv = D)
                       ÷ 2 with a causal mask (mask_type CAUSAL / PADDING_CAUSAL: half the scores)
      backward FLOPs = 2.5 × forward   (`…Backward` targets: Q·Kᵀ recomputed, dV, dP, dQ, dK: five
                       products for the forward's two)
  B·H·Sq·Sk from the backend_config's `intermediate_tensor_shape` (the score matrix), D = the
  query's (operand 0) `bmm1_dot_dimension_numbers` contracting dimension, else its last one; bytes =
  the operands + every result array but the u8 scratch. Transformer Engine's fused attention
  (`te_fused_attn_forward_ffi`, `te_fused_attn_backward_ffi`, XLA FFI calls whose backend_config
  holds their attributes as XLA prints them, `{name = value : type, …}`) likewise, with
  B = input_batch, H = attn_heads (the query's heads: GQA shares K/V heads, not the work),
  Sq = q_max_seqlen, Sk = kv_max_seqlen, D = head_dim, causal for mask_type 2–5 (NVTE causal,
  padding-causal and their bottom-right forms); a sliding window (window_size_left/right ≠ −1)
  is not modelled (unknown). Transcendentals (the softmax's exp) are not counted. Any other
  target: FLOPs, transcendentals and bytes unknown (None).
- Every other known opcode (copy, broadcast, reshape, transpose, pad, concatenate, reverse, iota,
  collectives other than all-reduce, send/recv, copy-start/done, infeed/outfeed, …): FLOPs 0,
  bytes B. Opcodes not listed here: unknown.

Differences from XLA: XLA sizes every tuple-shaped operand or result as its index table
(ShapeUtil::ByteSizeOf) where we sum the leaves of value tuples, e.g. for variadic reduce and sort,
rng-bit-generator, and gemm custom calls with a workspace (XLA counts 16 bytes of output, we the
result); XLA's float32 sums round large totals (we keep doubles); it also counts shapes
without a layout as 0 bytes (we count them); a nested fusion parameter reads what the nested
parameter reads (XLA ≥ 2024 looks at the nested fusion's users instead); opt-barrier moves 0 bytes
(XLA counts its index tables). GpuHloCostAnalysis (what XProf runs on GPU) also differs: it prices
elementwise ops by a per-GPU table of cycles per element (3 when absent), concatenate at 6 FLOPs
per element, and weighs fused instructions and parameter reads by their utilization; XProf's
"device" FLOPs then halve (8-bit) or quarter (4-bit) these. We keep HloCostAnalysis's counts.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterable

import numpy as np

from profscope.formats.hlo.proto import HloComputation, HloInstruction, HloModule, Shape

TRANSCENDENTAL = frozenset(
    {"exponential", "exponential-minus-one", "log", "log-plus-one", "logistic", "power", "sqrt", "cbrt"}
    | {"rsqrt", "tanh", "tan", "sine", "cosine", "atan2", "erf"}
)
ELEMENTWISE = TRANSCENDENTAL | {
    "abs", "add", "and", "bitcast-convert", "ceil", "clamp", "compare", "complex", "convert",
    "count-leading-zeros", "divide", "floor", "imag", "is-finite", "maximum", "minimum", "multiply",
    "negate", "not", "or", "popcnt", "real", "reduce-precision", "remainder", "round-nearest-afz",
    "round-nearest-even", "select", "shift-left", "shift-right-arithmetic", "shift-right-logical",
    "sign", "stochastic-convert", "subtract", "xor",
}  # fmt: skip
NO_BYTES = frozenset({"parameter", "constant", "get-tuple-element", "bitcast", "after-all", "add-dependency"})
NO_BYTES |= {"domain", "opt-barrier"}
# Opcodes with no FLOPs whose bytes are the default (operands + result).
DATA_MOVEMENT = frozenset({
    "copy", "broadcast", "reshape", "dynamic-reshape", "transpose", "pad", "concatenate", "reverse",
    "iota", "all-gather", "all-gather-start", "all-gather-done", "all-reduce-done", "reduce-scatter",
    "all-to-all", "ragged-all-to-all", "collective-permute", "collective-permute-start",
    "collective-permute-done", "collective-broadcast", "send", "send-done", "recv", "recv-done",
    "copy-start", "copy-done", "async-update", "async-done", "partition-id", "replica-id",
    "get-dimension-size", "set-dimension-size", "rng-get-and-update-state", "infeed", "outfeed",
    "batch-norm-training", "batch-norm-inference", "batch-norm-grad", "topk",
})  # fmt: skip
GEMM_TARGETS = frozenset({"__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8"})
CONV_TARGETS = frozenset(
    {"__cudnn$convForward", "__cudnn$convBackwardInput", "__cudnn$convBackwardFilter"}
    | {"__cudnn$convBiasActivationForward", "__cudnn$convForwardGraph"}
)
# Ops whose tuple operands or results hold aliases of buffers counted where they are produced: their
# tuples count as index tables, as in XLA.
ALIASING = frozenset({
    "copy-start", "copy-done", "async-update", "async-done", "send", "send-done", "recv", "recv-done",
    "all-gather-start", "all-gather-done", "all-reduce-done", "collective-permute-start",
    "collective-permute-done",
})  # fmt: skip
FMA_FLOPS = 2
POINTER_BYTES = 8
FMHA_PREFIX = "__cudnn$fmha"
FMHA_CAUSAL = frozenset({"CAUSAL", "PADDING_CAUSAL"})
FMHA_FORWARD_FLOPS = 4  # per B·H·Sq·Sk·D: two products of 2 FLOPs per multiply-add
FMHA_BACKWARD_FACTOR = 2.5
MODELLED = "modelled"
TE_ATTENTION_TARGETS = frozenset({"te_fused_attn_forward_ffi", "te_fused_attn_backward_ffi"})
TE_CAUSAL_MASKS = frozenset(
    {2.0, 3.0, 4.0, 5.0}
)  # NVTE_Mask_Type: causal, padding-causal, bottom-right forms
# One `name = value` of an FFI call's printed attribute dictionary (numbers and booleans as 0/1 numbers).
FFI_ATTRIBUTE = re.compile(r"(\w+)\s*=\s*(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")


@dataclasses.dataclass(frozen=True)
class Cost:
    """One execution of an instruction. None = unknown (`note` says why); `note` also says where a
    number comes from when that is not the plain formula (a custom call's backend_config)."""

    flops: float | None
    bytes_accessed: float | None
    transcendentals: float | None = 0.0
    note: str = ""


def instruction_costs(module: HloModule) -> dict[str, Cost]:
    """Cost of one execution of every instruction of the module, by instruction name."""
    model = _Model(module)
    module.load_all()
    out: dict[str, Cost] = {}
    for computation in module.computations.values():
        for instruction in computation.instructions:
            out.setdefault(instruction.name, model.cost(instruction))
    return out


def size(shape: Shape) -> int:
    """Bytes of a shape's data (tuples: the sum of their leaves)."""
    return shape.byte_size


def _index_table_size(shape: Shape) -> int:
    """XLA's size of a tuple (its index table, 8 bytes per element); an array's size otherwise."""
    return POINTER_BYTES * len(shape.tuple_shapes) if shape.is_tuple else size(shape)


def _result(shape: Shape) -> Shape:
    """The first array of a tuple result (a conv or gemm custom call's output), else the shape."""
    return shape.tuple_shapes[0] if shape.is_tuple and shape.tuple_shapes else shape


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


@dataclasses.dataclass
class _Totals:
    """A computation's sums, as XLA's ProcessSubcomputation returns them."""

    flops: float | None = 0.0
    transcendentals: float | None = 0.0
    bytes_accessed: float | None = 0.0
    note: str = ""

    def add(self, cost: Cost) -> None:
        self.flops = _add(self.flops, cost.flops)
        self.transcendentals = _add(self.transcendentals, cost.transcendentals)
        self.bytes_accessed = _add(self.bytes_accessed, cost.bytes_accessed)
        self.note = self.note or cost.note


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


class _Model:
    """Memoized per-instruction costs and per-computation sums of one module."""

    def __init__(self, module: HloModule) -> None:
        self.module = module
        self.costs: dict[tuple[int, int], Cost] = {}
        self.totals: dict[int, _Totals] = {}

    def cost(self, ins: HloInstruction) -> Cost:
        key = (ins.computation.id, ins.id)
        if key not in self.costs:
            try:
                cost = self._compute(ins)
            except (IndexError, KeyError, ZeroDivisionError) as exc:  # dimension numbers that do not fit
                cost = Cost(None, None, None, f"malformed {ins.opcode} ({type(exc).__name__})")
            numbers = (cost.flops, cost.bytes_accessed, cost.transcendentals)
            self.costs[key] = Cost(*(None if v is None else float(v) for v in numbers), cost.note)
        return self.costs[key]

    def sums(self, computation: HloComputation | None) -> _Totals:
        if computation is None:
            return _Totals(None, None, None, "a called computation is missing from the module")
        if computation.id not in self.totals:
            totals = _Totals()
            for ins in computation.instructions:
                totals.add(self.cost(ins))
            self.totals[computation.id] = totals
        return self.totals[computation.id]

    def called(self, ins: HloInstruction, index: int = 0) -> HloComputation | None:
        ids = ins.called_computation_ids
        return self.module.computations.get(ids[index]) if index < len(ids) else None

    def _compute(self, ins: HloInstruction) -> Cost:
        op = ins.opcode
        sized = _index_table_size if op in ALIASING else size
        default_bytes = sum(sized(o.shape) for o in ins.operands) + sized(ins.shape)
        if op in ELEMENTWISE:
            count = ins.shape.elements
            trans = op in TRANSCENDENTAL
            return Cost(0.0 if trans else float(count), default_bytes, float(count) if trans else 0.0)
        handler = _HANDLERS.get(op)
        if handler is not None:
            return handler(self, ins, default_bytes)
        if op in NO_BYTES or (op == "transpose" and _transpose_is_bitcast(ins)):
            return Cost(0.0, 0.0)
        if op in DATA_MOVEMENT:
            return Cost(0.0, default_bytes)
        return Cost(None, None, None, f"opcode {op!r} is not in the cost model")


def _dot(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    dims = ins.dot_dimension_numbers
    if dims is None or not ins.operand_ids:
        return Cost(None, default_bytes, 0.0, "dot without dimension numbers")
    return Cost(dot_flops(ins.operands[0].shape, ins.shape, dims.lhs_contracting), default_bytes)


def dot_flops(lhs: Shape, result: Shape, lhs_contracting: Iterable[int]) -> float:
    """2 × output elements × the product of the lhs contracting dimensions."""
    width = math.prod(lhs.dimensions[d] for d in lhs_contracting)
    return float(FMA_FLOPS * result.elements * width)


def convolution_flops(ins: HloInstruction, lhs: Shape, rhs: Shape, result: Shape) -> float | None:
    """XLA's GetConvolutionFlops: 2 × FMAs over the valid (kernel, output) positions; None when
    the dimension numbers are missing."""
    dnums = ins.convolution_dimension_numbers
    if dnums is None:
        return None
    window = ins.window
    valid = 1
    for i, dim in enumerate(window):
        kernel = rhs.dimensions[dnums.kernel_spatial[i]]
        output = result.dimensions[dnums.output_spatial[i]]
        base = lhs.dimensions[dnums.input_spatial[i]]
        k = np.arange(kernel, dtype=np.int64)[:, None]
        o = np.arange(output, dtype=np.int64)[None, :]
        index = o * dim.stride - dim.padding_low + k * dim.window_dilation
        dilation = max(dim.base_dilation, 1)
        lands = (index % dilation == 0) & (index >= 0) & (index // dilation < base)
        valid *= int(np.count_nonzero(lands))
    features = lhs.dimensions[dnums.input_feature] // ins.feature_group_count
    batch = lhs.dimensions[dnums.input_batch] // ins.batch_group_count
    return float(FMA_FLOPS * features * result.dimensions[dnums.output_feature] * batch * valid)


def _convolution(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    lhs, rhs = (o.shape for o in ins.operands[:2])
    flops = convolution_flops(ins, lhs, rhs, ins.shape)
    return Cost(
        flops, default_bytes, 0.0, "" if flops is not None else "convolution without dimension numbers"
    )


def _custom_call(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    target, operands = ins.custom_call_target, ins.operands
    result = _result(ins.shape)
    bytes_accessed = sum(size(o.shape) for o in operands) + size(result)
    if target in CONV_TARGETS and len(operands) > 1:
        flops = convolution_flops(ins, operands[0].shape, operands[1].shape, result)
        if flops is not None:
            return Cost(
                flops, bytes_accessed, 0.0, f"{target}: convolution FLOPs from its window and dim_labels"
            )
    if target in GEMM_TARGETS and operands:
        contracting = _gemm_contracting(ins.backend_config)
        if contracting is not None:
            note = f"{target}: dot FLOPs from backend_config gemm dot_dimension_numbers"
            return Cost(dot_flops(operands[0].shape, result, contracting), bytes_accessed, 0.0, note)
    if target.startswith(FMHA_PREFIX) and operands:
        modelled = _fused_attention(ins)
        if modelled is not None:
            return modelled
    if target in TE_ATTENTION_TARGETS:
        modelled = _te_fused_attention(ins)
        if modelled is not None:
            return modelled
    return Cost(None, None, None, f"custom call {target!r}: its cost is unknown to XLA's cost model")


def _fused_attention(ins: HloInstruction) -> Cost | None:
    """A cuDNN fused attention call modelled from its shapes (module docstring), None when its
    backend_config does not give the score matrix's shape."""
    try:
        config = json.loads(ins.backend_config)["cudnn_fmha_backend_config"]
        scores = math.prod(int(d) for d in config["intermediate_tensor_shape"]["dimensions"])
        contracting = config.get("bmm1_dot_dimension_numbers", {}).get("lhs_contracting_dimensions")
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    query = ins.operands[0].shape.dimensions
    if not query:
        return None
    head = query[int(contracting[0])] if contracting else query[-1]
    flops = float(FMHA_FORWARD_FLOPS * scores * head)
    causal = config.get("mask_type") in FMHA_CAUSAL
    backward = "Backward" in ins.custom_call_target
    flops = flops / (2 if causal else 1) * (FMHA_BACKWARD_FACTOR if backward else 1)
    written = sum(size(leaf) for leaf in ins.shape.leaves() if leaf.element_type != "u8")
    read = sum(size(o.shape) for o in ins.operands)
    how = f"{'2.5 × ' if backward else ''}4·B·H·Sq·Sk·D{' ÷ 2 (causal)' if causal else ''}"
    return Cost(flops, float(read + written), None, f"{MODELLED}: flash attention {how} from its shapes")


def _te_fused_attention(ins: HloInstruction) -> Cost | None:
    """A Transformer Engine fused attention call modelled from its attributes (module docstring),
    None when they do not give its shapes or it has a sliding window."""
    attributes = {k: float(v) for k, v in FFI_ATTRIBUTE.findall(ins.backend_config or "")}
    try:
        batch, heads, head_dim = (attributes[k] for k in ("input_batch", "attn_heads", "head_dim"))
        queries, keys = attributes["q_max_seqlen"], attributes["kv_max_seqlen"]
    except KeyError:
        return None
    if any(attributes.get(k, -1) != -1 for k in ("window_size_left", "window_size_right")):
        return None
    causal = attributes.get("mask_type") in TE_CAUSAL_MASKS
    backward = "backward" in ins.custom_call_target
    flops = FMHA_FORWARD_FLOPS * batch * heads * queries * keys * head_dim
    flops = flops / (2 if causal else 1) * (FMHA_BACKWARD_FACTOR if backward else 1)
    written = sum(size(leaf) for leaf in ins.shape.leaves() if leaf.element_type != "u8")
    read = sum(size(o.shape) for o in ins.operands)
    how = f"{'2.5 × ' if backward else ''}4·B·H·Sq·Sk·D{' ÷ 2 (causal)' if causal else ''}"
    return Cost(flops, float(read + written), None, f"{MODELLED}: Transformer Engine fused attention {how}")


def _gemm_contracting(backend_config: str) -> tuple[int, ...] | None:
    """The lhs contracting dimensions of a gemm backend_config (GpuBackendConfig JSON or, in older
    XLA, the GemmBackendConfig itself); None when it does not say."""
    try:
        config = json.loads(backend_config)
        gemm = config.get("gemm_backend_config", config)
        dims = gemm["dot_dimension_numbers"]["lhs_contracting_dimensions"]
        return tuple(int(d) for d in dims)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _sub_cost(
    model: _Model, computation: HloComputation | None, factor: float, bytes_accessed: float
) -> Cost:
    """A handler's cost that applies a called computation `factor` times (its bytes not copied)."""
    sums = model.sums(computation)
    return Cost(_scaled(sums.flops, factor), bytes_accessed, _scaled(sums.transcendentals, factor), sums.note)


def _reduce(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    count = ins.operands[0].shape.elements - _result(ins.shape).elements if ins.operand_ids else 0
    return _sub_cost(model, model.called(ins), count, default_bytes)


def _reduce_window(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    window, out = ins.window, _result(ins.shape)
    count = (math.prod(d.size for d in window) - 1) * out.elements
    reduced = [i for i, d in enumerate(window) if d.size != 1]
    padded = [d for d in window if d.padding_low or d.padding_high]
    if len(reduced) == 1 and len(padded) == 1 and not ins.shape.is_tuple:
        d, span = window[reduced[0]], ins.shape.dimensions[reduced[0]]
        if d.padding_low == d.padding_high == span - 1 and d.size == 2 * d.padding_low + 1:
            count = out.elements // span + span - 1
    return _sub_cost(model, model.called(ins), count, default_bytes)


def _select_and_scatter(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    source = ins.operands[1].shape.elements if len(ins.operand_ids) > 1 else 0
    select = _sub_cost(model, model.called(ins, 0), source * (math.prod(d.size for d in ins.window) - 1), 0)
    scatter = _sub_cost(model, model.called(ins, 1), source, 0)
    note = select.note or scatter.note
    return Cost(
        _add(select.flops, scatter.flops),
        default_bytes,
        _add(select.transcendentals, scatter.transcendentals),
        note,
    )


def _map(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    return _sub_cost(model, model.called(ins), ins.shape.elements, default_bytes)


def _sort(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    n = ins.operands[0].shape.elements if ins.operand_ids else 0
    return Cost(float(n * (n - 1).bit_length()) if n > 1 else 0.0, default_bytes)


def _fft(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    factors = math.prod(int(math.log2(n)) if n > 0 else 0 for n in ins.fft_length)
    elements = _result(ins.operands[0].shape).elements if ins.operand_ids else 0
    return Cost(float(FMA_FLOPS * 4 * factors * elements), default_bytes)


def _all_reduce(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    return Cost(float(sum(leaf.elements for leaf in ins.shape.leaves())), default_bytes)


def _rng(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    return Cost(0.0, default_bytes, float(sum(leaf.elements for leaf in ins.shape.leaves())))


def _triangular_solve(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    a, b = ins.operands[0].shape, ins.operands[1].shape
    return Cost(float(FMA_FLOPS * a.dimensions[-1] * b.elements), size(ins.shape) + size(a) / 2 + size(b))


def _cholesky(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    a = ins.operands[0].shape
    return Cost(float(a.dimensions[-1] * a.elements // 3), float(size(a)))


def _slice(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    return Cost(0.0, 2 * size(ins.shape))


def _dynamic_slice(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    indices = size(ins.operands[1].shape) if len(ins.operand_ids) > 1 else 0
    return Cost(0.0, 2 * size(ins.shape) + indices)


def _dynamic_update_slice(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    operands = ins.operands
    update = size(operands[1].shape) if len(operands) > 1 else 0
    return Cost(0.0, 2 * update + (size(operands[2].shape) if len(operands) > 2 else 0))


def _gather(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    indices = size(ins.operands[1].shape) if len(ins.operand_ids) > 1 else 0
    return Cost(0.0, 2 * size(ins.shape) + indices)


def _scatter(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    operands = ins.operands
    n = (len(operands) - 1) // 2
    updates = operands[n + 1 :]
    bytes_accessed = 3 * sum(size(u.shape) for u in updates) + (
        size(operands[n].shape) if n < len(operands) else 0
    )
    return _sub_cost(model, model.called(ins), updates[0].shape.elements if updates else 0, bytes_accessed)


def _tuple(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    return Cost(0.0, float(POINTER_BYTES * len(ins.shape.tuple_shapes)))


def _call(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    sums = model.sums(model.called(ins))
    return Cost(sums.flops, sums.bytes_accessed, sums.transcendentals, sums.note)


def _while(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    body, condition = model.sums(model.called(ins, 0)), model.sums(model.called(ins, 1))
    flops, trans = _add(body.flops, condition.flops), _add(body.transcendentals, condition.transcendentals)
    note = "one iteration of the loop" + (
        f"; {body.note or condition.note}" if body.note or condition.note else ""
    )
    return Cost(flops, _add(body.bytes_accessed, condition.bytes_accessed), trans, note)


def _conditional(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    branches = [model.sums(model.called(ins, i)) for i in range(len(ins.called_computation_ids))]

    def most(values: list[float | None]) -> float | None:
        return (
            None if any(v is None for v in values) else max((v for v in values if v is not None), default=0.0)
        )

    note = next((b.note for b in branches if b.note), "")
    flops = most([b.flops for b in branches])
    return Cost(
        flops, most([b.bytes_accessed for b in branches]), most([b.transcendentals for b in branches]), note
    )


def _fusion(model: _Model, ins: HloInstruction, default_bytes: int) -> Cost:
    fused = ins.fused_computation
    if fused is None:
        return Cost(None, None, None, "fusion without its fused computation")
    if ins.fusion_kind == "kCustom":
        for inner in fused.instructions:
            if inner.opcode in ("gather", "scatter"):
                return model.cost(inner)
    sums = model.sums(fused)
    bytes_accessed = _fusion_output_bytes(ins, fused)
    bytes_accessed += sum(
        size(c.shape) for c in fused.instructions if c.opcode == "constant" and c.shape.elements > 1
    )
    for parameter in fused.parameters:
        bytes_accessed += _parameter_read_bytes(parameter)
    return Cost(sums.flops, float(bytes_accessed), sums.transcendentals, sums.note)


def _fusion_output_bytes(ins: HloInstruction, fused: HloComputation) -> int:
    """Output bytes at the fusion boundary; an in-place dynamic-update-slice writes only its update."""
    root = fused.root

    def written(shape: Shape, producer: HloInstruction | None) -> int:
        if (
            producer is not None
            and producer.opcode == "dynamic-update-slice"
            and len(producer.operand_ids) > 1
        ):
            return size(producer.operands[1].shape)
        return size(shape)

    if not ins.shape.is_tuple:
        return written(ins.shape, root)
    parts = root.operands if root is not None and root.opcode == "tuple" else []
    return sum(
        written(sub, parts[i] if i < len(parts) else None) if sub.is_array else size(sub)
        for i, sub in enumerate(ins.shape.tuple_shapes)
    )


def _parameter_read_bytes(parameter: HloInstruction) -> int:
    """XLA's FusionParameterReadBytes for a fused parameter (tuple parameters through their
    get-tuple-element users, leaf by leaf)."""
    if parameter.shape.is_tuple:
        total = 0
        for index, leaf in enumerate(parameter.shape.tuple_shapes):
            gte = next(
                (u for u in parameter.users if u.opcode == "get-tuple-element" and u.tuple_index == index),
                None,
            )
            total += _read_bytes(gte) if gte is not None else size(leaf)
        return total
    return _read_bytes(parameter)


def _read_bytes(value: HloInstruction) -> int:
    whole, total, shared = size(value.shape), 0, False
    for user in value.users:
        op, first = user.opcode, bool(user.operand_ids) and user.operand_ids[0] == value.id
        if op == "fusion" and user.fused_computation is not None:
            nested = user.fused_computation.parameters
            total += sum(
                _read_bytes(nested[i])
                for i, o in enumerate(user.operand_ids)
                if o == value.id and i < len(nested)
            )
        elif op == "slice" or (op == "dynamic-slice" and first):
            total += size(user.shape)
        elif op in ("broadcast", "reshape"):
            total += whole
        elif not shared and not (op == "dynamic-update-slice" and first):
            shared, total = True, total + whole
    return total


def _transpose_is_bitcast(ins: HloInstruction) -> bool:
    """ShapeUtil::TransposeIsBitcast: the permutation maps the output layout onto the input's."""
    if not ins.operand_ids:
        return False
    source, target = ins.operands[0].shape.layout, ins.shape.layout
    if source is None or target is None:
        return False
    dims = ins.dimensions
    mapped = [dims[m] for m in target.minor_to_major if m < len(dims)]
    return mapped == list(source.minor_to_major)


_HANDLERS = {
    "dot": _dot, "convolution": _convolution, "custom-call": _custom_call, "reduce": _reduce,
    "reduce-window": _reduce_window, "select-and-scatter": _select_and_scatter, "map": _map,
    "sort": _sort, "fft": _fft, "all-reduce": _all_reduce, "all-reduce-start": _all_reduce,
    "rng": _rng, "rng-bit-generator": _rng, "triangular-solve": _triangular_solve,
    "cholesky": _cholesky, "slice": _slice, "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice, "gather": _gather, "scatter": _scatter,
    "tuple": _tuple, "call": _call, "while": _while, "conditional": _conditional, "fusion": _fusion,
    "async-start": _call,
}  # fmt: skip
