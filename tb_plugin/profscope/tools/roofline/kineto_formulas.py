"""FLOP and byte formulas of PyTorch (aten) ops from their recorded shapes, for the Kineto roofline.

`kineto.py` decides which occurrences count (the innermost op of a family, parts in their combined
op) and calls these formulas on the `Input Dims`, `Input type` and `Concrete Inputs` of each
distinct signature. A formula input that was not recorded raises `Unknown` naming it.

Formulas, per occurrence (n = elements of the output unless said; s = bytes per element of each
tensor's own dtype; bytes = Σ tensor inputs read + outputs written, each numel × s):
- mm(A[M,K], B[K,N]), bmm(A[b,M,K], B[b,K,N]): FLOPs = 2·b·M·N·K (b = 1 unbatched); bytes = A +
  B + out[b,M,N].
- GEMMs with an epilogue, as cuBLASLt fuses it (modelled): addmm(C, A, B) and baddbmm: 2·b·M·N·K +
  b·M·N (the bias / C add); _addmm_activation(C, A, B, …, use_gelu): 2·M·N·K + 2·M·N (bias add,
  then ReLU or GELU, one FLOP per element each); linear(X[…,K], W[N,K], b) (M = numel(X)/K):
  2·M·N·K, + M·N with a bias; bytes = A + B + C/b + out.
- grouped GEMM, MoE experts (_grouped_mm(A, B, offs, bias), modelled): the groups' GEMMs together,
  by operand ranks (offs splits the summed dimension into the G groups): A[M,K]·B[G,K,N] (offs
  splits M): 2·M·K·N, out [M,N]; A[G,M,K]·B[G,K,N]: 2·G·M·K·N, out [G,M,N]; A[G,M,K]·B[K,N]
  (offs splits N): 2·M·K·N, out [M,N]; A[M,K]·B[K,N] (offs splits K): 2·M·K·N, out [G,M,N] with
  G = numel(offs); bytes = A + B (+ bias) + out at A's element size.
- matmul(A, B): broadcast batch b = Π broadcast(A[:-2], B[:-2]); 1-D operands as [1,K] / [K,1];
  2·b·M·N·K.
- convolution (conv1d/2d/3d, convolution, _convolution, cudnn_/miopen_/mkldnn_convolution):
  out spatial o = ⌊(i + 2p − d·(k−1) − 1)/s⌋ + 1 (stride s, padding p, dilation d from Concrete
  Inputs; "same" → o = i); FLOPs = 2·numel(out)·Π W[1:] (W = [C_out, C_in/groups, k…]).
  Transposed: FLOPs = 2·numel(input)·Π W[1:]. bytes = input + W + bias + out. Without Concrete
  Inputs (no stride or padding) the output shape is the grad_output of the convolution backward
  of the same input and weight shapes in the trace, where exactly one is seen (modelled: resnet's
  2021 trace records its backward with shapes).
- convolution backward (convolution_backward with output_mask; cudnn_/miopen_convolution_backward
  with output_mask or its nested _input/_weight parts): FLOPs = 2·numel(grad_out)·Π W[1:] for each
  of grad_input and grad_weight computed (+ numel(grad_out) for grad_bias); bytes = grad_out +
  (W + grad_input) + (input + grad_weight) + grad_bias, for the gradients computed.
- attention (_scaled_dot_product_flash/efficient/cudnn_attention, scaled_dot_product_attention:
  Q[…,Lq,D], K[…,Lk,D], V[…,Lk,Dv], batch·heads = Π Q[:-2]; _flash/_efficient_attention_forward:
  Q[B,Lq,H,D]): FLOPs = 2·B·H·Lq·Lk·(D + Dv) (QKᵀ and PV); bytes = Q + K + V + out[B,H,Lq,Dv].
  Backward (the `_backward` ops, with grad_out first): 2·B·H·Lq·Lk·(3·D + 2·Dv) (QKᵀ recomputed,
  dV, dP, dQ, dK); bytes = grad_out + out + 2·(Q + K + V). With a causal mask the kernels skip the
  masked half of the Lq·Lk scores: FLOPs ÷ 2 (a causal flash-attention forward with D = Dv is
  4·B·H·S²·D / 2); bytes unchanged. Causal is the op's `is_causal` argument (SDPA: position 5;
  _scaled_dot_product_flash_attention(_for_cpu): 4; _efficient / _cudnn: 6; _flash_attention_forward:
  8; the backwards: 11, the cuDNN one 14, the CPU one 7) or, for _efficient_attention_forward / _backward, a
  non-zero `custom_mask_type` (9 / 14: 1 causal from the top left, 2 from the bottom right), read
  from Concrete Inputs; the flash-attn package's flash_attn::_flash_attn_forward / _backward
  (Q[B,Lq,H,D], `causal` at 5 / 11) likewise. Where they are not recorded, the op's
  FlashAttention-2 kernels' names say it (`flash_kernels.py`: Is_causal is a template flag
  the demangled name carries); where neither does, the mask is not known and the scores count in
  full (as torch.utils.flop_counter counts them: an upper bound).
- softmax / log_softmax (_softmax, _log_softmax): 5·n (max, subtract, exp, sum, divide/log);
  backward (_softmax_backward_data, _log_softmax_backward_data): 4·n; bytes = inputs + out.
- norms (modelled; bytes-bound, so FLOPs are a small constant per element n of the input, each
  count stated): layer norm (native_layer_norm): 6·n (mean 1, variance 3, normalise 2) + n per
  weight and bias given; RMS norm (rms_norm, _fused_rms_norm): 3·n (square 1, sum 1, scale 1) + n
  with a weight; batch norm (batch_norm, native_batch_norm, cudnn_/miopen_batch_norm):
  training 6·n, inference 2·n, + n per weight and bias (the training flag comes from Concrete
  Inputs); bytes = input + weight + bias + running stats + out (saved mean/rstd not counted).
  Backward (native_layer_norm_backward, native_batch_norm_backward, cudnn_/miopen_batch_norm_
  backward): grad_input 10·n (x̂ 2, g·w 1, Σg·w 1, Σg·w·x̂ 2, combine 4), grad_weight 2·n
  (Σ g·x̂), grad_bias 1·n (Σ g), for the gradients its output_mask asks (cuDNN/MIOpen: all
  three; without Concrete Inputs: grad_input, and grad_weight / grad_bias where a weight is
  given); bytes = grad_out + input + weight + saved stats read, grad_input + grad_weight +
  grad_bias written.
- elementwise (add, sub, mul, div, relu, gelu, silu, sigmoid, tanh, exp, log, sqrt, rsqrt, neg,
  abs, pow, clamp(_min), threshold/gelu/silu/sigmoid/tanh _backward, where, native_dropout, and
  in-place `_` forms): 1·n (addcmul/addcdiv/lerp 2·n; copy_/fill_/zero_ 0); out = the broadcast of
  the tensor inputs (the trailing out= tensor, or self for in-place ops), its element size the
  largest of the inputs'; in-place ops read and write self (copy_/fill_/zero_ only write it);
  native_dropout also writes a 1-byte mask per element.
- reductions (sum, mean, amax, amin, max, min, prod: 1·n_in; norm, linalg_vector_norm: 2·n_in;
  var, std: 3·n_in; n_in = input elements; max/min of two tensors are elementwise); output
  elements from the reduced dims in Concrete Inputs (none given = everything reduced).

The roof of an op (`roof_of`, the peak its FLOPs are measured against), from the dtype of its
first tensor argument: matmul, convolution and attention run on the matrix units (tensor / matrix
cores) at their dtype's peak: bf16, fp16, fp8 (every fp8 format), int8, fp32 → fp32_matrix (the
fp32 figure where the part lists no matrix one: TF32 is not assumed, the trace does not record
whether it was allowed, so an fp32 GEMM run as TF32 measures above its roof), fp64 → fp64_matrix.
The other families run on the vector units: fp32, bf16 and fp16 at the fp32 peak (PyTorch's
elementwise and reduction kernels compute 16-bit floats in float, their `opmath_type`), fp64 at
fp64; integer and other dtypes at `<dtype>_vector`, a peak no part lists (not known).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np

# Element size and short name of the dtypes `Input type` names.
DTYPES = {
    "double": ("fp64", 8), "float": ("fp32", 4), "c10::Half": ("fp16", 2), "c10::BFloat16": ("bf16", 2),
    "c10::Float8_e4m3fn": ("fp8e4m3", 1), "c10::Float8_e5m2": ("fp8e5m2", 1),
    "c10::Float8_e4m3fnuz": ("fp8e4m3fnuz", 1), "c10::Float8_e5m2fnuz": ("fp8e5m2fnuz", 1),
    "long int": ("int64", 8), "int": ("int32", 4), "short int": ("int16", 2), "signed char": ("int8", 1),
    "unsigned char": ("uint8", 1), "bool": ("bool", 1), "c10::complex<float>": ("complex64", 8),
    "c10::complex<double>": ("complex128", 16), "c10::complex<c10::Half>": ("complex32", 4),
}  # fmt: skip


class Unknown(Exception):
    """A formula cannot be evaluated: the message says which input was not recorded."""


@dataclasses.dataclass(frozen=True)
class Tensor:
    shape: tuple[int, ...]
    size: int  # bytes per element

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def bytes(self) -> float:
        return float(self.numel * self.size)


class Call:
    """One op's recorded arguments: shapes, dtypes and concrete values by position."""

    def __init__(
        self,
        dims: list[Any],
        types: list[Any],
        concrete: list[Any] | None,
        parts: Any = None,
        output: tuple[int, ...] | None = None,
        kernel_causal: bool | None = None,
    ) -> None:
        self.dims, self.types, self.concrete = dims, types, concrete
        self.parts = parts  # (grad_input, grad_weight) computed by nested backward parts, when known
        self.output = output  # the output shape the trace shows elsewhere (a convolution's backward)
        self.kernel_causal = kernel_causal  # what the op's flash kernels' names say (`flash_kernels`)

    def tensor(self, i: int) -> Tensor | None:
        shape = self.dims[i] if i < len(self.types) and self.types[i] in DTYPES else None
        if not isinstance(shape, list) or not all(isinstance(d, int) for d in shape):
            return None
        return Tensor(tuple(shape), DTYPES[self.types[i]][1])

    def need(self, i: int, what: str = "input") -> Tensor:
        t = self.tensor(i)
        if t is None:
            raise Unknown(f"{what} (argument {i}) is not a recorded tensor")
        return t

    def value(self, i: int, what: str) -> Any:
        """A non-tensor argument's value; Unknown when Concrete Inputs do not give it."""
        if self.concrete is None or i >= len(self.concrete) or self.concrete[i] in ("", None):
            raise Unknown(
                f"{what} not recorded" + (" (needs Concrete Inputs)" if i < len(self.types) else "")
            )
        return parse_concrete(str(self.concrete[i]))


def parse_concrete(text: str) -> Any:
    """A Concrete Inputs entry as a Python value: "[1, 1]" → [1, 1], "True" → True, "0." → 0.0."""
    try:
        return json.loads(text.replace("True", "true").replace("False", "false"))
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text.strip()


Cost = tuple[float, float]  # (FLOPs, bytes) of one occurrence
Formula = Callable[[Call], Cost]


@dataclasses.dataclass(frozen=True)
class Entry:
    """One op's formula: its family, and the families whose nested ops take its count over."""

    family: str
    formula: Formula | None  # None: a part, estimated with its combined op
    also_covered_by: frozenset[str] = frozenset()  # besides its own family
    part_of: str = ""  # combined backward op whose gradient part this is
    modelled: bool = False  # a profscope cost model (epilogues, norms, grouped GEMM): source "modelled"


# -- formulas ----------------------------------------------------------------------------------
def _gemm(a: int, b: int, extra: tuple[int, ...] = (), epilogue: int = 0) -> Formula:
    """A (batched) GEMM; `epilogue`: FLOPs per output element fused after it (bias add, activation)."""

    def cost(call: Call) -> Cost:
        x, w = call.need(a, "first matrix"), call.need(b, "second matrix")
        if len(x.shape) != len(w.shape) or len(x.shape) not in (2, 3):
            raise Unknown(f"operand ranks {len(x.shape)} and {len(w.shape)} are not a (batched) GEMM")
        batch = x.shape[0] if len(x.shape) == 3 else 1
        m, k, n = x.shape[-2], x.shape[-1], w.shape[-1]
        added = sum(t.bytes for t in (call.tensor(i) for i in extra) if t is not None)
        flops = 2.0 * batch * m * n * k + epilogue * batch * m * n
        return flops, x.bytes + w.bytes + added + batch * m * n * x.size

    return cost


def _grouped_mm(call: Call) -> Cost:
    """_grouped_mm(A, B, offs, bias): the groups' GEMMs by operand ranks (module docstring)."""
    x, w = call.need(0, "first matrix"), call.need(1, "second matrix")
    bias = call.tensor(3)
    ranks = (len(x.shape), len(w.shape))
    if ranks == (2, 3):
        m, k, n, out = x.shape[0], x.shape[1], w.shape[2], x.shape[0] * w.shape[2]
    elif ranks == (3, 3):
        m, k, n = x.shape[0] * x.shape[1], x.shape[2], w.shape[2]
        out = m * n
    elif ranks == (3, 2):
        m, k, n, out = x.shape[1], x.shape[2], w.shape[1], x.shape[1] * w.shape[1]
    elif ranks == (2, 2):
        offs = call.need(2, "offs")
        m, k, n = x.shape[0], x.shape[1], w.shape[1]
        out = offs.numel * m * n
    else:
        raise Unknown(f"operand ranks {ranks} are not a grouped GEMM")
    return 2.0 * m * k * n, x.bytes + w.bytes + (bias.bytes if bias else 0.0) + out * x.size


def _matmul(call: Call) -> Cost:
    x, w = call.need(0, "first operand"), call.need(1, "second operand")
    xs = (1, *x.shape) if len(x.shape) == 1 else x.shape
    ws = (*w.shape, 1) if len(w.shape) == 1 else w.shape
    batch = math.prod(np.broadcast_shapes(xs[:-2], ws[:-2]))
    m, k, n = xs[-2], xs[-1], ws[-1]
    return 2.0 * batch * m * n * k, x.bytes + w.bytes + batch * m * n * x.size


def _linear(call: Call) -> Cost:
    x, w, bias = call.need(0), call.need(1, "weight"), call.tensor(2)
    k, n = x.shape[-1], w.shape[0]
    m = x.numel // k if k else 0
    flops = 2.0 * m * n * k + (m * n if bias else 0)
    return flops, x.bytes + w.bytes + (bias.bytes if bias else 0.0) + m * n * x.size


def _per_dim(call: Call, at: int, what: str, dims: int) -> list[int]:
    value = call.value(at, what)
    if isinstance(value, int) and not isinstance(value, bool):
        return [value] * dims
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return value * dims if len(value) == 1 else value
    raise Unknown(f"{what} {value!r} not understood")


@dataclasses.dataclass(frozen=True)
class _Conv:
    """Where a convolution op keeps its arguments (None: it has no such argument)."""

    stride: int
    padding: int
    dilation: int
    bias: int | None = 2
    transposed: int | None = None  # the `transposed` flag; -1: always transposed
    output_padding: int | None = None
    groups: int | None = None

    def __call__(self, call: Call) -> Cost:
        x, w = call.need(0), call.need(1, "weight")
        b = call.tensor(self.bias) if self.bias is not None else None
        flipped = self.transposed == -1 or (
            self.transposed is not None and call.value(self.transposed, "transposed") is True
        )
        if call.concrete is None and call.output is not None and not flipped:
            out = list(call.output[2:])  # stride and padding not recorded: the backward's grad_output
        else:
            out = self._output(call, x.shape, w.shape, flipped)
        groups = int(call.value(self.groups, "groups")) if flipped and self.groups is not None else 1
        out_numel = x.shape[0] * (w.shape[1] * groups if flipped else w.shape[0]) * math.prod(out)
        flops = 2.0 * (x.numel if flipped else out_numel) * math.prod(w.shape[1:])
        return flops, x.bytes + w.bytes + (b.bytes if b else 0.0) + out_numel * x.size

    def _output(self, call: Call, x: tuple[int, ...], w: tuple[int, ...], flipped: bool) -> list[int]:
        """The output's spatial sizes from the recorded stride, padding and dilation."""
        n = len(x) - 2
        pad = call.value(self.padding, "padding")
        if pad == "same":
            return list(x[2:])
        pad = [0] * n if pad == "valid" else _per_dim(call, self.padding, "padding", n)
        step = _per_dim(call, self.stride, "stride", n)
        dil = _per_dim(call, self.dilation, "dilation", n)
        grown = _per_dim(call, self.output_padding, "output_padding", n) if self.output_padding else [0] * n
        sizes = zip(x[2:], step, pad, dil, w[2:], grown)
        if flipped:
            return [(i - 1) * s - 2 * p + d * (k - 1) + e + 1 for i, s, p, d, k, e in sizes]
        return [(i + 2 * p - d * (k - 1) - 1) // s + 1 for i, s, p, d, k, _ in sizes]


def takes_output_shape(entry: Entry) -> bool:
    """Whether the entry's formula uses `Call.output` (a forward convolution's)."""
    return isinstance(entry.formula, _Conv)


def _conv_backward(grad: int, inp: int, weight: int, mask: int, transposed: int | None = None) -> Formula:
    """Convolution backward: the gradients computed come from its nested parts (`Call.parts`)
    or else from the output_mask argument."""

    def cost(call: Call) -> Cost:
        g, x, w = call.need(grad, "grad_output"), call.need(inp), call.need(weight, "weight")
        wanted = list(call.parts) if call.parts is not None else call.value(mask, "output_mask")
        if not isinstance(wanted, list) or len(wanted) < 2:
            raise Unknown(f"output_mask {wanted!r} not understood")
        is_transposed = transposed is not None and call.value(transposed, "transposed") is True
        per_grad = 2.0 * (x.numel if is_transposed else g.numel) * math.prod(w.shape[1:])
        grads = bool(wanted[0]) + bool(wanted[1])
        bias = len(wanted) > 2 and bool(wanted[2])
        moved = g.bytes + grads * (x.bytes + w.bytes) + (w.shape[0] * g.size if bias else 0.0)
        return per_grad * grads + (g.numel if bias else 0.0), moved

    return cost


def _attention(
    q_at: int, layout_bhld: bool, backward: bool, causal_at: int, mask_type: bool = False
) -> Formula:
    """Fused attention (module docstring); `causal_at`: the position of `is_causal` (a bool), or of
    `custom_mask_type` (an int, causal when not 0) with `mask_type`."""

    def causal(call: Call) -> bool:
        try:
            flag = call.value(causal_at, "causal flag")
        except Unknown:
            return bool(call.kernel_causal)
        if mask_type:
            return isinstance(flag, int) and not isinstance(flag, bool) and flag != 0
        return flag is True

    def cost(call: Call) -> Cost:
        q, k, v = call.need(q_at, "query"), call.need(q_at + 1, "key"), call.need(q_at + 2, "value")
        if layout_bhld:
            heads, lq, d, lk, dv = math.prod(q.shape[:-2]), q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
        elif len(q.shape) == 4:
            heads, lq, d, lk, dv = q.shape[0] * q.shape[2], q.shape[1], q.shape[3], k.shape[1], v.shape[3]
        else:
            raise Unknown("variable-length (nested) attention: sequence lengths not recorded")
        out_bytes = heads * lq * dv * q.size
        masked = CAUSAL_SHARE if causal(call) else 1.0
        if not backward:
            return 2.0 * heads * lq * lk * (d + dv) * masked, q.bytes + k.bytes + v.bytes + out_bytes
        grad = call.need(0, "grad_out")
        flops = 2.0 * heads * lq * lk * (3 * d + 2 * dv) * masked
        return flops, grad.bytes + out_bytes + 2 * (q.bytes + k.bytes + v.bytes)

    return cost


def _softmax(per_element: int, inputs: int) -> Formula:
    def cost(call: Call) -> Cost:
        tensors = [call.need(i) for i in range(inputs)]
        return float(per_element * tensors[0].numel), sum(t.bytes for t in tensors) + tensors[0].bytes

    return cost


def _norm(
    affine_at: tuple[int, ...], training_at: int | None, stats_at: tuple[int, ...] = (), statistics: int = 6
) -> Formula:
    """Layer or RMS norm (`training_at` None: statistics always computed, `statistics` FLOPs per
    element) or batch norm."""

    def cost(call: Call) -> Cost:
        x = call.need(0)
        affine = [t for t in (call.tensor(i) for i in affine_at) if t is not None]
        training = training_at is None or call.value(training_at, "training flag") is True
        flops = (statistics if training else 2) * x.numel + len(affine) * x.numel
        stats = sum(t.bytes for t in (call.tensor(i) for i in stats_at) if t is not None)
        return float(flops), 2 * x.bytes + sum(t.bytes for t in affine) + stats

    return cost


def _norm_backward(
    grad: int, inp: int, weight: int, stats_at: tuple[int, ...], mask: int | None, affine_at: tuple[int, ...]
) -> Formula:
    """A norm's backward (module docstring): the gradients from `mask` (output_mask; None: all
    three), else grad_input and the affine gradients whose parameters (`affine_at`) are given."""

    def cost(call: Call) -> Cost:
        g, x = call.need(grad, "grad_out"), call.need(inp)
        w = call.tensor(weight)
        try:
            wanted = [True, True, True] if mask is None else call.value(mask, "output_mask")
        except Unknown:
            wanted = [True, *(call.tensor(i) is not None for i in affine_at)]
        if not isinstance(wanted, list) or len(wanted) != 3:
            raise Unknown(f"output_mask {wanted!r} not understood")
        params = w.bytes if w is not None else 0.0
        flops = (10 * bool(wanted[0]) + 2 * bool(wanted[1]) + bool(wanted[2])) * x.numel
        stats = sum(t.bytes for t in (call.tensor(i) for i in stats_at) if t is not None)
        written = x.bytes * bool(wanted[0]) + params * (bool(wanted[1]) + bool(wanted[2]))
        return float(flops), g.bytes + x.bytes + params + stats + written

    return cost


def _elementwise(
    arity: int, per_element: int = 1, in_place: bool = False, writes_only: bool = False
) -> Formula:
    """`arity` functional arguments; a tensor right after them is the out= tensor. `writes_only`:
    an in-place op that does not read self (copy_, fill_, zero_)."""

    def cost(call: Call) -> Cost:
        inputs = [t for t in map(call.tensor, range(min(arity, len(call.types)))) if t is not None]
        if not inputs:
            raise Unknown("no tensor input recorded")
        out = call.need(0, "self") if in_place else call.tensor(arity)
        if out is None:
            out = Tensor(tuple(np.broadcast_shapes(*(t.shape for t in inputs))), max(t.size for t in inputs))
        read = sum(t.bytes for t in inputs) - (inputs[0].bytes if writes_only else 0.0)
        return float(per_element * out.numel), read + out.bytes

    return cost


def _dropout(call: Call) -> Cost:
    x = call.need(0)
    return float(x.numel), 2 * x.bytes + x.numel  # out, and a bool mask


def _reduction(per_element: int, dim_at: int = 1) -> Formula:
    def cost(call: Call) -> Cost:
        x, out = call.need(0), 1
        if call.tensor(1) is not None:  # max / min of two tensors: elementwise
            return _elementwise(2)(call)
        if dim_at < len(call.types) and call.types[dim_at]:
            dims = call.value(dim_at, "reduced dims")
            dims = [dims] if isinstance(dims, int) else dims
            if not isinstance(dims, list) or not all(isinstance(d, int) for d in dims):
                raise Unknown(f"reduced dims {dims!r} not understood")
            reduced = {d % max(len(x.shape), 1) for d in dims} if dims else set(range(len(x.shape)))
            out = math.prod(size for i, size in enumerate(x.shape) if i not in reduced)
        return float(per_element * x.numel), x.bytes + out * x.size

    return cost


MATMUL, CONV, ATTENTION, SOFTMAX = "matmul", "convolution", "attention", "softmax"
NORM, ELEMENTWISE, REDUCTION = "normalization", "elementwise", "reduction"
UNARY = ("relu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "neg", "abs")
# Elementwise ops: (functional arity, FLOPs per output element).
ELEMENTWISE_OPS = {name: (1, 1) for name in UNARY} | {
    "add": (3, 1), "sub": (3, 1), "mul": (2, 1), "div": (2, 1), "gelu": (2, 1), "pow": (2, 1),
    "clamp": (3, 1), "clamp_min": (2, 1), "addcmul": (4, 2), "addcdiv": (4, 2), "lerp": (3, 2),
}  # fmt: skip
BACKWARD_ELEMENTWISE = {
    "threshold_backward": 3, "gelu_backward": 3, "silu_backward": 2, "sigmoid_backward": 2,
    "tanh_backward": 2, "where": 3,
}  # fmt: skip
# Reductions: FLOPs per input element.
REDUCTIONS = {
    "sum": 1, "mean": 1, "amax": 1, "amin": 1, "max": 1, "min": 1, "prod": 1, "norm": 2,
    "linalg_vector_norm": 2, "var": 3, "std": 3,
}  # fmt: skip
# SDPA ops: (position of is_causal in the forward, in the backward op `<name>_backward`).
SDPA = {
    "_scaled_dot_product_flash_attention": (4, 11), "_scaled_dot_product_efficient_attention": (6, 11),
    "_scaled_dot_product_cudnn_attention": (6, 14), "_scaled_dot_product_flash_attention_for_cpu": (4, 7),
    "scaled_dot_product_attention": (5, 11),
}  # fmt: skip
# The fused kernels: (forward is_causal / custom_mask_type position, backward's, whether it is a
# custom_mask_type).
FUSED_ATTENTION = {"_flash_attention": (8, 11, False), "_efficient_attention": (9, 14, True)}
CAUSAL_SHARE = 0.5  # the scores a causal mask keeps


def _table() -> dict[str, Entry]:
    miopen = _Conv(stride=4, padding=3, dilation=5)
    table = {
        "mm": Entry(MATMUL, _gemm(0, 1)),
        "addmm": Entry(MATMUL, _gemm(1, 2, (0,), epilogue=1), modelled=True),
        "_addmm_activation": Entry(MATMUL, _gemm(1, 2, (0,), epilogue=2), modelled=True),
        "bmm": Entry(MATMUL, _gemm(0, 1)),
        "baddbmm": Entry(MATMUL, _gemm(1, 2, (0,), epilogue=1), modelled=True),
        "matmul": Entry(MATMUL, _matmul),
        "linear": Entry(MATMUL, _linear, modelled=True),
        "_grouped_mm": Entry(MATMUL, _grouped_mm, modelled=True),
        "convolution": Entry(CONV, _Conv(3, 4, 5, transposed=6, output_padding=7, groups=8)),
        "_convolution": Entry(CONV, _Conv(3, 4, 5, transposed=6, output_padding=7, groups=8)),
        "cudnn_convolution": Entry(CONV, _Conv(stride=3, padding=2, dilation=4, bias=None)),
        "cudnn_convolution_transpose": Entry(CONV, _Conv(4, 2, 5, None, -1, output_padding=3, groups=6)),
        "miopen_convolution": Entry(CONV, miopen),
        "miopen_depthwise_convolution": Entry(CONV, miopen),
        "mkldnn_convolution": Entry(CONV, miopen),
        "convolution_backward": Entry(CONV, _conv_backward(0, 1, 2, 10, transposed=7)),
        "cudnn_convolution_backward": Entry(CONV, _conv_backward(1, 0, 2, 10)),
        "miopen_convolution_backward": Entry(CONV, _conv_backward(1, 0, 2, 9)),
        "layer_norm": Entry(NORM, _norm((2, 3), None), modelled=True),
        "native_layer_norm": Entry(NORM, _norm((2, 3), None), modelled=True),
        "rms_norm": Entry(NORM, _norm((2,), None, statistics=3), modelled=True),
        "_fused_rms_norm": Entry(NORM, _norm((2,), None, statistics=3), modelled=True),
        "native_layer_norm_backward": Entry(NORM, _norm_backward(0, 1, 5, (3, 4), 7, (5, 6)), modelled=True),
        "native_batch_norm_backward": Entry(NORM, _norm_backward(0, 1, 2, (5, 6), 9, (2, 2)), modelled=True),
        "cudnn_batch_norm_backward": Entry(NORM, _norm_backward(1, 0, 2, (5, 6), None, ()), modelled=True),
        "miopen_batch_norm_backward": Entry(NORM, _norm_backward(1, 0, 2, (5, 6), None, ()), modelled=True),
        "native_dropout": Entry(ELEMENTWISE, _dropout),
    }
    for d in (1, 2, 3):
        table[f"conv{d}d"] = Entry(CONV, _Conv(3, 4, 5))
        table[f"conv_transpose{d}d"] = Entry(CONV, _Conv(3, 4, 7, transposed=-1, output_padding=5, groups=6))
    for backend, part in itertools.product(("cudnn", "miopen"), ("input", "weight")):
        combined = f"aten::{backend}_convolution_backward"
        table[f"{combined[6:]}_{part}"] = Entry(CONV, None, part_of=combined)
    math_path = frozenset({MATMUL, SOFTMAX})  # SDPA's math path: bmm, softmax, …
    for name, (forward, backward) in SDPA.items():
        table[name] = Entry(ATTENTION, _attention(0, True, False, forward), math_path)
        table[f"{name}_backward"] = Entry(ATTENTION, _attention(1, True, True, backward), math_path)
    for name, (forward, backward, mask_type) in FUSED_ATTENTION.items():
        table[f"{name}_forward"] = Entry(ATTENTION, _attention(0, False, False, forward, mask_type))
        table[f"{name}_backward"] = Entry(ATTENTION, _attention(1, False, True, backward, mask_type))
    for name in ("softmax", "_softmax", "log_softmax", "_log_softmax"):
        table[name] = Entry(SOFTMAX, _softmax(5, 1))
    for name in ("_softmax_backward_data", "_log_softmax_backward_data"):
        table[name] = Entry(SOFTMAX, _softmax(4, 2))
    batch_norms = ("batch_norm", "_batch_norm_impl_index", "native_batch_norm")
    for name in (*batch_norms, "cudnn_batch_norm", "miopen_batch_norm"):
        table[name] = Entry(NORM, _norm((1, 2), 5, (3, 4)), modelled=True)
    for name, (arity, per_element) in ELEMENTWISE_OPS.items():
        table[name] = Entry(ELEMENTWISE, _elementwise(arity, per_element))
        table[f"{name}_"] = Entry(ELEMENTWISE, _elementwise(arity, per_element, in_place=True))
    for name, arity in BACKWARD_ELEMENTWISE.items():
        table[name] = Entry(ELEMENTWISE, _elementwise(arity))
    for name, arity in (("copy_", 3), ("fill_", 2), ("zero_", 1)):
        table[name] = Entry(ELEMENTWISE, _elementwise(arity, 0, in_place=True, writes_only=True))
    for name, per_element in REDUCTIONS.items():
        table[name] = Entry(REDUCTION, _reduction(per_element, 2 if "norm" in name else 1))
    library = {  # the flash-attn package's custom ops: q [B, L, H, D]; causal at 5 / 11
        "flash_attn::_flash_attn_forward": Entry(ATTENTION, _attention(0, False, False, 5)),
        "flash_attn::_flash_attn_backward": Entry(ATTENTION, _attention(1, False, True, 11)),
    }
    return {f"aten::{name}": entry for name, entry in table.items()} | library


FORMULAS: dict[str, Entry] = _table()
FAMILIES = (MATMUL, CONV, ATTENTION, SOFTMAX, NORM, ELEMENTWISE, REDUCTION)
MATRIX_FAMILIES = frozenset({MATMUL, CONV, ATTENTION})
MATRIX_ROOFS = {"fp32": "fp32_matrix", "fp64": "fp64_matrix"}
VECTOR_ROOFS = {"fp32": "fp32", "bf16": "fp32", "fp16": "fp32", "fp64": "fp64"}


def roof_of(family: str, dtype: str) -> str:
    """The roof of an op of `family` computing in `dtype` (a short name of `DTYPES`; module
    docstring)."""
    if family in MATRIX_FAMILIES:
        return "fp8" if dtype.startswith("fp8") else MATRIX_ROOFS.get(dtype, dtype)
    return VECTOR_ROOFS.get(dtype, f"{dtype}_vector")


PART_OF = frozenset(e.part_of for e in FORMULAS.values() if e.part_of)
ENTRIES = tuple(FORMULAS.values())
FAMILY_CODE = {family: i for i, family in enumerate(FAMILIES)}
