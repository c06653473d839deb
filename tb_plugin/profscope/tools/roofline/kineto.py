"""Per-op FLOPs, bytes and device time of a PyTorch profiler (Kineto) trace, for the roofline.

One `OpCost` per CPU op (`cpu_op`, old `Operator` events) summed over its occurrences, per input
signature (name, shapes, dtypes) for ops with a formula and recorded shapes.

Device time. A GPU activity (kernel, memcpy, memset) belongs to the op that launched it: its
launch flow (the reader rebuilds Kineto's `ac2g` flows from `correlation` ids) leads to the runtime
call (cudaLaunchKernel, hipLaunchKernel, …), which belongs to the innermost op open on its thread.
    total_time_ps = busy time (union of [start, end)) of the activities launched by the row's ops
                    or by ops nested in them; self_time_ps = those launched by the row's ops.
A union, so kernels overlapping on several streams and recursive ops count once. A trace without
GPU activity (CPU-only) observes no device time: times are 0 and `device_time_observed` is False.

FLOPs and bytes: a `flops` arg recorded with `with_flops=True` (some PyTorch versions write it; no
corpus trace has one) gives source "profile" (bytes still from shapes); otherwise the formulas
below, from `Input Dims`, `Input type` and `Concrete Inputs`, give "estimated from shapes". A
formula op without shapes: flops None, "no shapes recorded (record_shapes=True)"; a formula input
not recorded (a convolution's stride in a trace without Concrete Inputs) is named; ops without
formula: None, "no FLOP formula for this op". Never 0 for unknown.

Which level counts, so nested ops count once: the op that does the work. Kernel-level ops (mm,
addmm, cudnn_convolution, convolution_backward, _flash_attention_forward, native_layer_norm,
_softmax, add, …) always; composite ops (linear, matmul, conv2d, convolution, layer_norm,
batch_norm, scaled_dot_product_attention, softmax, …) only when no op of their family is nested
in them (the innermost op with a formula of the family; SDPA's math path: matmul and softmax). An
elementwise op nested in a GEMM (a bias add, a copy) counts for itself and does not hide it. An op
with recorded `flops` counts whole, ops nested in it do not. `cudnn_/miopen_convolution_backward_
input/_weight` count in their combined `*_convolution_backward` parent, which learns from them
which gradients were computed. Rows counted below say "counted in nested …"; they and wrapper ops
(ProfilerStep#, autograd nodes) around counted ops have `in_program` False.

Formulas, per occurrence (n = elements of the output unless said; s = bytes per element of each
tensor's own dtype; bytes = Σ tensor inputs read + outputs written, each numel × s):
- mm(A[M,K], B[K,N]), addmm(C, A, B), _addmm_activation, linear(X[…,K], W[N,K], b)
  (M = numel(X)/K): FLOPs = 2·M·N·K (bias add not counted); bytes = A + B (+ C/b) + out[M,N].
- bmm(A[b,M,K], B[b,K,N]), baddbmm(C, A, B): 2·b·M·N·K; bytes = A + B (+ C) + out[b,M,N].
- matmul(A, B): broadcast batch b = Π broadcast(A[:-2], B[:-2]); 1-D operands as [1,K] / [K,1];
  2·b·M·N·K.
- convolution (conv1d/2d/3d, convolution, _convolution, cudnn_/miopen_/mkldnn_convolution):
  out spatial o = ⌊(i + 2p − d·(k−1) − 1)/s⌋ + 1 (stride s, padding p, dilation d from Concrete
  Inputs; "same" → o = i); FLOPs = 2·numel(out)·Π W[1:] (W = [C_out, C_in/groups, k…]).
  Transposed: FLOPs = 2·numel(input)·Π W[1:]. bytes = input + W + bias + out.
- convolution backward (convolution_backward with output_mask; cudnn_/miopen_convolution_backward
  with output_mask or its nested _input/_weight parts): FLOPs = 2·numel(grad_out)·Π W[1:] for each
  of grad_input and grad_weight computed (+ numel(grad_out) for grad_bias); bytes = grad_out +
  (W + grad_input) + (input + grad_weight) + grad_bias, for the gradients computed.
- attention (_scaled_dot_product_flash/efficient/cudnn_attention, scaled_dot_product_attention:
  Q[…,Lq,D], K[…,Lk,D], V[…,Lk,Dv], batch·heads = Π Q[:-2]; _flash/_efficient_attention_forward:
  Q[B,Lq,H,D]): FLOPs = 2·B·H·Lq·Lk·(D + Dv) (QKᵀ and PV; causal masking not discounted, as
  torch.utils.flop_counter counts it); bytes = Q + K + V + out[B,H,Lq,Dv]. Backward (the `_backward`
  ops, with grad_out first): 2·B·H·Lq·Lk·(3·D + 2·Dv) (QKᵀ recomputed, dV, dP, dQ, dK); bytes =
  grad_out + out + 2·(Q + K + V).
- softmax / log_softmax (_softmax, _log_softmax): 5·n (max, subtract, exp, sum, divide/log);
  backward (_softmax_backward_data, _log_softmax_backward_data): 4·n; bytes = inputs + out.
- layer norm (native_layer_norm): 6·n (mean 1, variance 3, normalise 2) + n per weight and bias
  given; batch norm (batch_norm, native_batch_norm, cudnn_/miopen_batch_norm):
  training 6·n, inference 2·n, + n per weight and bias (the training flag comes from Concrete
  Inputs); bytes = input + weight + bias + running stats + out (saved mean/rstd not counted).
- elementwise (add, sub, mul, div, relu, gelu, silu, sigmoid, tanh, exp, log, sqrt, rsqrt, neg,
  abs, pow, clamp(_min), threshold/gelu/silu/sigmoid/tanh _backward, where, native_dropout, and
  in-place `_` forms): 1·n (addcmul/addcdiv/lerp 2·n; copy_/fill_/zero_ 0); out = the broadcast of
  the tensor inputs (the trailing out= tensor, or self for in-place ops), its element size the
  largest of the inputs'; in-place ops read and write self (copy_/fill_/zero_ only write it);
  native_dropout also writes a 1-byte mask per element.
- reductions (sum, mean, amax, amin, max, min, prod: 1·n_in; norm, linalg_vector_norm: 2·n_in;
  var, std: 3·n_in; n_in = input elements; max/min of two tensors are elementwise); output
  elements from the reduced dims in Concrete Inputs (none given = everything reduced).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np

from profscope.columns import Trace
from profscope.tools.roofline.model import COST_FROM_PROFILE, COST_FROM_SHAPES, OpCost

OP_CATEGORIES = frozenset({"cpu_op", "Operator"})
DEVICE_CATEGORIES = frozenset({"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"})
COPY_CATEGORIES = frozenset({"gpu_memcpy", "Memcpy"})
HOST_COPY = re.compile(r"HtoD|DtoH|H2D|D2H|Host", re.IGNORECASE)
NO_SHAPES = "no shapes recorded (record_shapes=True)"
NO_FORMULA = "no FLOP formula for this op"
NO_DEVICE_TIME = "no GPU activity in this trace: device time not observed"
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
        self, dims: list[Any], types: list[Any], concrete: list[Any] | None, parts: Any = None
    ) -> None:
        self.dims, self.types, self.concrete = dims, types, concrete
        self.parts = parts  # (grad_input, grad_weight) computed by nested backward parts, when known

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


# -- formulas ----------------------------------------------------------------------------------
def _gemm(a: int, b: int, extra: tuple[int, ...] = ()) -> Formula:
    def cost(call: Call) -> Cost:
        x, w = call.need(a, "first matrix"), call.need(b, "second matrix")
        if len(x.shape) != len(w.shape) or len(x.shape) not in (2, 3):
            raise Unknown(f"operand ranks {len(x.shape)} and {len(w.shape)} are not a (batched) GEMM")
        batch = x.shape[0] if len(x.shape) == 3 else 1
        m, k, n = x.shape[-2], x.shape[-1], w.shape[-1]
        added = sum(t.bytes for t in (call.tensor(i) for i in extra) if t is not None)
        return 2.0 * batch * m * n * k, x.bytes + w.bytes + added + batch * m * n * x.size

    return cost


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
    return 2.0 * m * n * k, x.bytes + w.bytes + (bias.bytes if bias else 0.0) + m * n * x.size


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
        b, n = call.tensor(self.bias) if self.bias is not None else None, len(x.shape) - 2
        flipped = self.transposed == -1 or (
            self.transposed is not None and call.value(self.transposed, "transposed") is True
        )
        pad = call.value(self.padding, "padding")
        if pad == "same":
            out = list(x.shape[2:])
        else:
            pad = [0] * n if pad == "valid" else _per_dim(call, self.padding, "padding", n)
            step = _per_dim(call, self.stride, "stride", n)
            dil = _per_dim(call, self.dilation, "dilation", n)
            grown = (
                _per_dim(call, self.output_padding, "output_padding", n) if self.output_padding else [0] * n
            )
            sizes = zip(x.shape[2:], step, pad, dil, w.shape[2:], grown)
            if flipped:
                out = [(i - 1) * s - 2 * p + d * (k - 1) + e + 1 for i, s, p, d, k, e in sizes]
            else:
                out = [(i + 2 * p - d * (k - 1) - 1) // s + 1 for i, s, p, d, k, _ in sizes]
        groups = int(call.value(self.groups, "groups")) if flipped and self.groups is not None else 1
        out_numel = x.shape[0] * (w.shape[1] * groups if flipped else w.shape[0]) * math.prod(out)
        flops = 2.0 * (x.numel if flipped else out_numel) * math.prod(w.shape[1:])
        return flops, x.bytes + w.bytes + (b.bytes if b else 0.0) + out_numel * x.size


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


def _attention(q_at: int, layout_bhld: bool, backward: bool) -> Formula:
    def cost(call: Call) -> Cost:
        q, k, v = call.need(q_at, "query"), call.need(q_at + 1, "key"), call.need(q_at + 2, "value")
        if layout_bhld:
            heads, lq, d, lk, dv = math.prod(q.shape[:-2]), q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
        elif len(q.shape) == 4:
            heads, lq, d, lk, dv = q.shape[0] * q.shape[2], q.shape[1], q.shape[3], k.shape[1], v.shape[3]
        else:
            raise Unknown("variable-length (nested) attention: sequence lengths not recorded")
        out_bytes = heads * lq * dv * q.size
        if not backward:
            return 2.0 * heads * lq * lk * (d + dv), q.bytes + k.bytes + v.bytes + out_bytes
        grad = call.need(0, "grad_out")
        flops = 2.0 * heads * lq * lk * (3 * d + 2 * dv)
        return flops, grad.bytes + out_bytes + 2 * (q.bytes + k.bytes + v.bytes)

    return cost


def _softmax(per_element: int, inputs: int) -> Formula:
    def cost(call: Call) -> Cost:
        tensors = [call.need(i) for i in range(inputs)]
        return float(per_element * tensors[0].numel), sum(t.bytes for t in tensors) + tensors[0].bytes

    return cost


def _norm(affine_at: tuple[int, int], training_at: int | None, stats_at: tuple[int, ...] = ()) -> Formula:
    """Layer norm (`training_at` None: statistics always computed) or batch norm."""

    def cost(call: Call) -> Cost:
        x = call.need(0)
        affine = [t for t in (call.tensor(i) for i in affine_at) if t is not None]
        training = training_at is None or call.value(training_at, "training flag") is True
        flops = (6 if training else 2) * x.numel + len(affine) * x.numel
        stats = sum(t.bytes for t in (call.tensor(i) for i in stats_at) if t is not None)
        return float(flops), 2 * x.bytes + sum(t.bytes for t in affine) + stats

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
SDPA = (
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu",
    "scaled_dot_product_attention",
)  # fmt: skip


def _table() -> dict[str, Entry]:
    miopen = _Conv(stride=4, padding=3, dilation=5)
    table = {
        "mm": Entry(MATMUL, _gemm(0, 1)),
        "addmm": Entry(MATMUL, _gemm(1, 2, (0,))),
        "_addmm_activation": Entry(MATMUL, _gemm(1, 2, (0,))),
        "bmm": Entry(MATMUL, _gemm(0, 1)),
        "baddbmm": Entry(MATMUL, _gemm(1, 2, (0,))),
        "matmul": Entry(MATMUL, _matmul),
        "linear": Entry(MATMUL, _linear),
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
        "layer_norm": Entry(NORM, _norm((2, 3), None)),
        "native_layer_norm": Entry(NORM, _norm((2, 3), None)),
        "native_dropout": Entry(ELEMENTWISE, _dropout),
    }
    for d in (1, 2, 3):
        table[f"conv{d}d"] = Entry(CONV, _Conv(3, 4, 5))
        table[f"conv_transpose{d}d"] = Entry(CONV, _Conv(3, 4, 7, transposed=-1, output_padding=5, groups=6))
    for backend, part in itertools.product(("cudnn", "miopen"), ("input", "weight")):
        combined = f"aten::{backend}_convolution_backward"
        table[f"{combined[6:]}_{part}"] = Entry(CONV, None, part_of=combined)
    math_path = frozenset({MATMUL, SOFTMAX})  # SDPA's math path: bmm, softmax, …
    for name in SDPA:
        table[name] = Entry(ATTENTION, _attention(0, True, False), math_path)
        table[f"{name}_backward"] = Entry(ATTENTION, _attention(1, True, True), math_path)
    for name in ("_flash_attention", "_efficient_attention"):
        table[f"{name}_forward"] = Entry(ATTENTION, _attention(0, False, False))
        table[f"{name}_backward"] = Entry(ATTENTION, _attention(1, False, True))
    for name in ("softmax", "_softmax", "log_softmax", "_log_softmax"):
        table[name] = Entry(SOFTMAX, _softmax(5, 1))
    for name in ("_softmax_backward_data", "_log_softmax_backward_data"):
        table[name] = Entry(SOFTMAX, _softmax(4, 2))
    batch_norms = ("batch_norm", "_batch_norm_impl_index", "native_batch_norm")
    for name in (*batch_norms, "cudnn_batch_norm", "miopen_batch_norm"):
        table[name] = Entry(NORM, _norm((1, 2), 5, (3, 4)))
    for name, (arity, per_element) in ELEMENTWISE_OPS.items():
        table[name] = Entry(ELEMENTWISE, _elementwise(arity, per_element))
        table[f"{name}_"] = Entry(ELEMENTWISE, _elementwise(arity, per_element, in_place=True))
    for name, arity in BACKWARD_ELEMENTWISE.items():
        table[name] = Entry(ELEMENTWISE, _elementwise(arity))
    for name, arity in (("copy_", 3), ("fill_", 2), ("zero_", 1)):
        table[name] = Entry(ELEMENTWISE, _elementwise(arity, 0, in_place=True, writes_only=True))
    for name, per_element in REDUCTIONS.items():
        table[name] = Entry(REDUCTION, _reduction(per_element, 2 if "norm" in name else 1))
    return {f"aten::{name}": entry for name, entry in table.items()}


FORMULAS: dict[str, Entry] = _table()
FAMILIES = (MATMUL, CONV, ATTENTION, SOFTMAX, NORM, ELEMENTWISE, REDUCTION)
PART_OF = frozenset(e.part_of for e in FORMULAS.values() if e.part_of)
ENTRIES = tuple(FORMULAS.values())
FAMILY_CODE = {family: i for i, family in enumerate(FAMILIES)}


class _Args(msgspec.Struct):
    """The args an estimate reads, left as raw JSON (decoded once per distinct text)."""

    dims: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Input Dims")
    types: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Input type")
    concrete: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Concrete Inputs")
    flops: float | None = None


_ARGS = msgspec.json.Decoder(_Args)
# What an op occurrence is for the count: its own FLOPs, counted in nested ops, counted in an
# enclosing op with recorded FLOPs, a part counted in its combined op, or an op without formula.
COUNTED, COVERED, UNDER_PROFILED, PART, OTHER = range(5)


def device_time_observed(trace: Trace) -> bool:
    """Whether the trace holds GPU activity (kernels, memcpys, memsets), so op device times mean
    something; False for a CPU-only trace (see `NO_DEVICE_TIME`)."""
    return bool(np.isin(trace.ev_cat, _string_ids(trace, DEVICE_CATEGORIES)).any())


def op_costs(trace: Trace) -> list[OpCost]:
    """One `OpCost` per CPU op name (per input signature where a formula applies), by device time."""
    n = trace.num_events
    on_cpu = np.isin(trace.ev_track, [t.id for t in trace.tracks if trace.sections[t.section].kind == "cpu"])
    is_op = on_cpu & np.isin(trace.ev_cat, _string_ids(trace, OP_CATEGORIES))
    ops = np.flatnonzero(is_op)
    if ops.shape[0] == 0:
        return []
    nearest = _enclosing_ops(trace, on_cpu, is_op)
    position = {name: i for i, name in enumerate(FORMULAS)}
    code = np.array([position.get(text, -1) for text in trace.strings], dtype=np.int64)
    name_ids = {text: i for i, text in enumerate(trace.strings) if code[i] >= 0 or text in PART_OF}
    op_code = np.full(n, -1, dtype=np.int64)
    op_code[ops] = code[trace.ev_name[ops]]
    parsed = ops if trace.metadata.get("with_flops") else ops[op_code[ops] >= 0]
    args = _read_args(trace, parsed)
    recorded = np.full(n, np.nan)
    recorded[parsed] = [a.flops if a.flops is not None and a.flops > 0 else np.nan for a in args]
    has_profile = ~np.isnan(recorded)
    bits, members = _parts(trace, nearest, op_code, name_ids)
    costed = (op_code >= 0) | has_profile
    costed[members] = False
    covered, wraps, under, covering = _covering(trace, nearest, op_code, costed, has_profile)
    status = np.where((op_code >= 0) | has_profile, COUNTED, OTHER)
    status[covered & ~has_profile] = COVERED
    status[members] = PART
    status[is_op & (under >= 0)] = UNDER_PROFILED
    keep = (op_code[parsed] >= 0) | has_profile[parsed]
    detailed = parsed[keep]
    rows = _Rows(trace, op_code, status)
    rows.add_detailed(detailed, [a for a, k in zip(args, keep.tolist()) if k], recorded, bits, under)
    rows.add_others(np.setdiff1d(ops, detailed, assume_unique=True), wraps)
    return rows.finish(nearest, covering)


def _string_ids(trace: Trace, texts: frozenset[str]) -> np.ndarray:
    return np.array([i for i, s in enumerate(trace.strings) if s in texts], dtype=np.int64)


def _read_args(trace: Trace, events: np.ndarray) -> list[_Args]:
    """The estimate's args of each event (empty where the event has none or bad JSON)."""
    blob = memoryview(trace.args_blob)
    records = trace.ev_args[events]
    empty, out = _Args(), []
    for lo, hi in zip(trace.args_off[records].tolist(), trace.args_off[records + 1].tolist()):
        try:
            out.append(_ARGS.decode(blob[lo:hi]) if hi > lo else empty)
        except msgspec.DecodeError:
            out.append(empty)
    return out


def _enclosing_ops(trace: Trace, on_cpu: np.ndarray, is_op: np.ndarray) -> np.ndarray:
    """Per event, the innermost op that encloses it on its thread (-1 when none): the parent at row
    d is the last event before it (track, start order) at row d-1 of its track if that still covers
    its start; enclosing ops then follow row by row, shallow rows first."""
    n = trace.num_events
    nearest = np.full(n, -1, dtype=np.int64)
    events = np.flatnonzero(on_cpu)
    if events.shape[0] == 0:
        return nearest
    depth = trace.ev_depth[events].astype(np.int64)
    order = np.argsort(depth, kind="stable")
    events, depth = events[order], depth[order]
    child = np.flatnonzero(depth > 0)
    query, level = events[child], depth[child]
    at = np.maximum(np.searchsorted(depth * n + events, (level - 1) * n + query) - 1, 0)
    candidate = events[at]
    start = trace.ev_start_ps
    end = start[candidate] + trace.ev_dur_ps[candidate]
    same_track = (depth[at] == level - 1) & (trace.ev_track[candidate] == trace.ev_track[query])
    valid = same_track & ((start[query] < end) | (start[query] == start[candidate]))
    parent = np.full(n, -1, dtype=np.int64)
    parent[query[valid]] = candidate[valid]
    bounds = np.searchsorted(depth, np.arange(1, int(depth[-1]) + 2))
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        row = events[lo:hi]
        up = parent[row]
        row, up = row[up >= 0], up[up >= 0]
        nearest[row] = np.where(is_op[up], up, nearest[up])
    return nearest


def _ancestors(nearest: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position in `start`, enclosing op) for every op enclosing each of `start`, innermost first."""
    origins, found = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    origin, current = np.arange(start.shape[0]), nearest[start]
    while current.shape[0]:
        keep = current >= 0
        origin, current = origin[keep], current[keep]
        origins.append(origin)
        found.append(current)
        current = nearest[current]
    return np.concatenate(origins), np.concatenate(found)


def _parts(
    trace: Trace, nearest: np.ndarray, op_code: np.ndarray, name_ids: dict[str, int]
) -> tuple[dict[int, tuple[bool, bool]], np.ndarray]:
    """Gradient parts nested directly in their combined backward op: what each combined op
    computed {event: (grad_input, grad_weight)}, and the part events."""
    bits: dict[int, tuple[bool, bool]] = {}
    members = [np.zeros(0, dtype=np.int64)]
    for index, (name, entry) in enumerate(FORMULAS.items()):
        if entry.part_of:
            parts = np.flatnonzero(op_code == index)
            parents = nearest[parts]
            combined = name_ids.get(entry.part_of, -1)
            inside = (parents >= 0) & (trace.ev_name[np.maximum(parents, 0)] == combined)
            members.append(parts[inside])
            for parent in parents[inside].tolist():
                has = bits.get(parent, (False, False))
                bits[parent] = (has[0] or name.endswith("_input"), has[1] or name.endswith("_weight"))
    return bits, np.concatenate(members)


def _covering(
    trace: Trace, nearest: np.ndarray, op_code: np.ndarray, costed: np.ndarray, has_profile: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """From the ops enclosing each costed op (parts excluded): the formula ops a nested op of a
    taking-over family covers, the ops that wrap any costed op, per costed op the outermost
    enclosing op with recorded FLOPs (-1: none), and the (covered op, nested op) pairs."""
    n = trace.num_events
    takes_over = np.zeros((len(FORMULAS) + 1, len(FAMILIES)), dtype=bool)  # row -1: no formula
    for index, entry in enumerate(ENTRIES):
        takes_over[index, [FAMILY_CODE[f] for f in {entry.family, *entry.also_covered_by}]] = True
    family = np.array([FAMILY_CODE[e.family] for e in ENTRIES] + [0], dtype=np.int64)[op_code]
    nested = np.flatnonzero(costed)
    origin, ancestor = _ancestors(nearest, nested)
    wraps, covered = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    wraps[ancestor] = True
    hit = takes_over[op_code[ancestor], family[nested[origin]]]
    covered[ancestor[hit]] = True
    under = np.full(n, -1, dtype=np.int64)
    profiled = has_profile[ancestor]
    under[nested[origin[profiled]]] = ancestor[profiled]  # innermost first: the last write is the outermost
    return covered, wraps, under, (ancestor[hit], nested[origin[hit]])


@dataclasses.dataclass
class _Row:
    name: str
    search: str
    category: str
    status: int
    source: str
    in_program: bool


class _Rows:
    """Op occurrences grouped into rows: formula ops by (name, status, shapes, source), others by name."""

    def __init__(self, trace: Trace, op_code: np.ndarray, status: np.ndarray) -> None:
        self.trace, self.op_code, self.status = trace, op_code, status
        self.group = np.full(trace.num_events, -1, dtype=np.int64)
        self.rows: list[_Row] = []
        self.flops, self.bytes = np.zeros(0), np.zeros(0)

    def add_detailed(
        self,
        events: np.ndarray,
        args: list[_Args],
        recorded: np.ndarray,
        bits: dict[int, Any],
        under: np.ndarray,
    ) -> None:
        """Formula ops (and ops with recorded FLOPs): estimated once per distinct recorded input."""
        strings, names = self.trace.strings, self.trace.ev_name
        anchor = np.where(under[events] >= 0, names[np.maximum(under[events], 0)], -1).tolist()
        profiled = (~np.isnan(recorded[events])).tolist()
        keys: dict[tuple[Any, ...], int] = {}
        which = np.empty(events.shape[0], dtype=np.int64)
        for i, (event, a, name_id, status, up, prof) in enumerate(
            zip(events.tolist(), args, names[events].tolist(), self.status[events].tolist(), anchor, profiled)
        ):
            concrete = bytes(a.concrete) if status == COUNTED else b""
            key = (name_id, status, bytes(a.dims), bytes(a.types), concrete, bits.get(event), up, prof)
            which[i] = keys.setdefault(key, len(keys))
        groups: dict[tuple[Any, ...], int] = {}
        key_group, key_flops, key_bytes = [], [], []
        for key, first in zip(keys, np.unique(which, return_index=True)[1].tolist()):
            name_id, status, dims, types, _, part_bits, up, prof = key
            code = self.op_code[events[first]]
            entry = ENTRIES[code] if code >= 0 else None
            flops = moved = None
            if status == COUNTED:
                flops, moved, source = _estimate(entry, args[first], part_bits)
                source = COST_FROM_PROFILE if prof else source
            elif status == PART:
                source = f"counted in {entry.part_of if entry else ''}"
            elif status == UNDER_PROFILED:
                source = f"counted in {strings[up]} (FLOPs from the profile)"
            else:
                source = ""  # COVERED: `finish` names the nested ops
            if (name_id, status, dims, types, source) not in groups:
                groups[name_id, status, dims, types, source] = len(self.rows)
                category = entry.family if entry else strings[int(self.trace.ev_cat[events[first]])]
                name = strings[name_id]
                self.rows.append(
                    _Row(name + _signature(args[first]), name, category, status, source, status == COUNTED)
                )
            key_group.append(groups[name_id, status, dims, types, source])
            key_flops.append(np.nan if flops is None else flops)
            key_bytes.append(np.nan if moved is None else moved)
        gid = np.array(key_group, dtype=np.int64)[which]
        self.group[events] = gid
        flops = np.where(np.isnan(recorded[events]), np.array(key_flops)[which], recorded[events])
        self.flops = _sum_known(gid, flops, len(self.rows))
        self.bytes = _sum_known(gid, np.array(key_bytes)[which], len(self.rows))

    def add_others(self, events: np.ndarray, wraps: np.ndarray) -> None:
        """Ops without formula, one row per name; not in the program when they wrap counted ops."""
        names, firsts, inverse = np.unique(self.trace.ev_name[events], return_index=True, return_inverse=True)
        self.group[events] = len(self.rows) + inverse.ravel()
        wrapping = np.bincount(inverse.ravel(), weights=wraps[events], minlength=names.shape[0]) > 0
        for name_id, first, wrapper in zip(names.tolist(), events[firsts].tolist(), wrapping.tolist()):
            name, category = self.trace.strings[name_id], self.trace.strings[int(self.trace.ev_cat[first])]
            self.rows.append(_Row(name, name, category, OTHER, NO_FORMULA, not wrapper))
        unknown = np.full(names.shape[0], np.nan)
        self.flops, self.bytes = np.concatenate((self.flops, unknown)), np.concatenate((self.bytes, unknown))

    def finish(self, nearest: np.ndarray, covering: tuple[np.ndarray, np.ndarray]) -> list[OpCost]:
        trace, rows = self.trace, len(self.rows)
        total, own, copies, launched = _device_times(trace, nearest, self.group, rows)
        occurrences = np.bincount(self.group[self.group >= 0], minlength=rows)
        nested: dict[int, set[str]] = {}
        counting = self.status[covering[1]] == COUNTED  # name the nested ops that count, not composites
        pairs = np.stack((self.group[covering[0][counting]], trace.ev_name[covering[1][counting]]))
        for gid, name_id in np.unique(pairs, axis=1).T.tolist():
            nested.setdefault(gid, set()).add(trace.strings[name_id])
        out = []
        for gid, row in enumerate(self.rows):
            if row.status == COVERED:
                row.source = "counted in nested " + ", ".join(sorted(nested.get(gid, ())))
            known = row.source in (COST_FROM_SHAPES, COST_FROM_PROFILE)
            flops = float(self.flops[gid]) if known and not np.isnan(self.flops[gid]) else None
            levels = {"hbm": float(self.bytes[gid])} if known and not np.isnan(self.bytes[gid]) else None
            times = int(occurrences[gid]), int(total[gid]), int(own[gid])
            transfer = bool(launched[gid] and copies[gid] == launched[gid])
            out.append(OpCost(row.name, row.category, *times, flops, levels, row.source, row.search,
                              in_program=row.in_program, transfer=transfer))  # fmt: skip
        out.sort(key=lambda c: (-c.total_time_ps, -c.self_time_ps, c.name))
        return out


def _sum_known(group: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    """Per group, the sum of `values`; NaN (unknown) when any member is NaN."""
    unknown = np.bincount(group, weights=np.isnan(values), minlength=count) > 0
    return np.where(unknown, np.nan, np.bincount(group, weights=np.nan_to_num(values), minlength=count))


def _estimate(entry: Entry | None, args: _Args, bits: tuple[bool, bool] | None) -> tuple[Any, Any, str]:
    """(FLOPs, bytes, source) of one occurrence from its recorded shapes."""
    if entry is None or entry.formula is None:
        reason = f"a gradient part of {entry.part_of} recorded outside it" if entry else NO_FORMULA
        return None, None, reason
    if not len(args.dims) or not len(args.types):
        return None, None, NO_SHAPES
    try:
        concrete = msgspec.json.decode(args.concrete) if len(args.concrete) else None
        flops, moved = entry.formula(
            Call(msgspec.json.decode(args.dims), msgspec.json.decode(args.types), concrete, bits)
        )
    except Unknown as e:
        return None, None, str(e)
    except (IndexError, TypeError, ValueError, ZeroDivisionError, msgspec.DecodeError) as e:
        return None, None, f"recorded shapes not understood ({type(e).__name__})"
    return flops, moved, COST_FROM_SHAPES


def _signature(args: _Args) -> str:
    """ "(bf16[141, 512], bf16[512, 512])": the tensor arguments, "" when none were recorded."""
    if not len(args.dims) or not len(args.types):
        return ""
    call = Call(msgspec.json.decode(args.dims), msgspec.json.decode(args.types), None)
    shown = [
        f"{DTYPES[call.types[i]][0]}{list(t.shape)}" for i in range(len(call.types)) if (t := call.tensor(i))
    ]
    return f"({', '.join(shown)})" if shown else ""


def _device_times(
    trace: Trace, nearest: np.ndarray, group: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row: busy time of the GPU activity its ops and the ops nested in them launched (total),
    of what its ops launched directly (self), and how many self activities are host copies / all."""
    device = np.isin(trace.ev_cat, _string_ids(trace, DEVICE_CATEGORIES))
    src, dst = trace.flow_src, trace.flow_dst
    by = np.where(group[src] >= 0, src, nearest[src])
    link = device[dst] & (by >= 0)
    targets = dst[link]
    first = np.argsort(targets, kind="stable")
    first = first[_new_values(targets[first])]  # one launch per activity
    activity, launcher = targets[first], by[link][first]
    start = trace.ev_start_ps[activity]
    end = start + trace.ev_dur_ps[activity]
    own = _busy(group[launcher], start, end, count)
    origin, ancestor = _ancestors(nearest, launcher)
    width = max(activity.shape[0], 1)
    pairs = np.sort(
        np.concatenate((group[launcher] * width + np.arange(width), group[ancestor] * width + origin))
    )
    pairs = pairs[_new_values(pairs)]  # a nested op of the same row adds its activities once
    total = _busy(pairs // width, start[pairs % width], end[pairs % width], count)
    host = np.isin(trace.ev_name[activity], [i for i, s in enumerate(trace.strings) if HOST_COPY.search(s)])
    copy = np.isin(trace.ev_cat[activity], _string_ids(trace, COPY_CATEGORIES))
    copies = np.bincount(group[launcher], weights=host & copy, minlength=count)
    return total, own, copies, np.bincount(group[launcher], minlength=count)


def _new_values(ordered: np.ndarray) -> np.ndarray:
    """Mask of the first of each run of equal values in a sorted array."""
    return np.concatenate(([True], ordered[1:] != ordered[:-1])) if ordered.shape[0] else ordered.astype(bool)


def _busy(groups: np.ndarray, start: np.ndarray, end: np.ndarray, count: int) -> np.ndarray:
    """Per group, the length of the union of its [start, end) intervals: sorted by (group, start), a
    running maximum of the end (time ranks offset per group, so one accumulate serves all groups)
    shows where each busy stretch begins and how far it reaches."""
    busy = np.zeros(count, dtype=np.int64)
    if groups.shape[0] == 0:
        return busy
    order = np.lexsort((start, groups))
    g, s, e = groups[order], start[order], end[order]
    times = np.sort(np.concatenate((s, e)))  # rank = number of smaller times: monotone, invertible
    span = times.shape[0] + 1
    reach = np.maximum.accumulate(g * span + np.searchsorted(times, e))
    before = np.concatenate(([-1], reach[:-1]))
    first = np.flatnonzero(g * span + np.searchsorted(times, s) >= before)
    stretch_end = times[np.maximum.reduceat(reach, first) - g[first] * span]
    np.add.at(busy, g[first], stretch_end - s[first])
    return busy
