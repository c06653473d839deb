"""Whether a FlashAttention-2 kernel ran with a causal mask, read from its name, for attention ops
whose recorded inputs do not say (a Kineto trace without `Concrete Inputs`).

FlashAttention-2's CUDA kernels are templates whose boolean parameters follow the kernel traits,
and the profiler records the demangled name with their values, e.g. (PyTorch's vendored copy, the
H100 BERT trace of tests/data):
    void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false,
    false, cutlass::bfloat16_t, …>, false, false, false, false, false, true, false>(…Flash_fwd_params)
The parameter order, in Dao-AILab/flash-attention csrc/flash_attn/src/flash_fwd_launch_template.h
and flash_bwd_launch_template.h (every version from the FlashAttention-2 release of 2023-07-17 to
2026-06) and PyTorch's aten/src/ATen/native/transformers/cuda/flash_attn/flash_fwd_launch_template.h:
    flash_fwd_kernel<Flash_fwd_kernel_traits, Is_dropout, Is_causal, [Is_local, [Has_alibi,]]
        Is_even_MN (Is_even_N in 2.0), Is_even_K, [Is_softcap,] Return_softmax>   5 to 8 flags
    flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits, Is_causal, [Is_local, [Has_alibi,]]
        Is_even_MN, Is_even_K, [Is_softcap,] [Split, Append_KV]>                  3, 5 to 8 flags
    flash_bwd_dq_dk_dv_loop_kernel, …_seqk_parallel_kernel, …_seqq_parallel_kernel
        <Flash_bwd_kernel_traits, Is_dropout, Is_causal, [Is_local,] [Has_alibi,] Is_even_M / _MN /
        _N, Is_even_K, [Is_softcap]>                                                4 to 7 flags
so Is_causal is the first flag of the split-KV forward kernel and the second of the others, in every
version. The flag is read only where the name has exactly that shape: one of these kernel names (not
the split-KV combine kernel, nor the backward's dot_do_o / convert_dq kernels), a first template
argument that is the traits type of its direction, then only `true` / `false` values, as many as some
version has. Any other name (FlashAttention-3's, cuDNN's, a name cut short) says nothing. An op
whose kernels disagree is not known either. `Is_local` (a sliding window) is not causal: its scores
count in full (an upper bound, as before).
"""

from __future__ import annotations

import re

import numpy as np

from profscope.model.columns import Trace

FORWARD, BACKWARD = "Flash_fwd_kernel_traits", "Flash_bwd_kernel_traits"
_BWD = ({4, 5, 6, 7}, 1, BACKWARD)
# kernel → (numbers of flags some version has, position of Is_causal among the flags, traits type)
KERNELS = {
    "flash_fwd_kernel": ({5, 6, 7, 8}, 1, FORWARD),
    "flash_fwd_splitkv_kernel": ({3, 5, 6, 7, 8}, 0, FORWARD),
    "flash_bwd_dq_dk_dv_loop_kernel": _BWD,
    "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel": _BWD,
    "flash_bwd_dq_dk_dv_loop_seqq_parallel_kernel": _BWD,
}
_KERNEL = re.compile(r"(?:^|[\s:])(" + "|".join(KERNELS) + r")<")
NOT_KNOWN, NOT_CAUSAL, CAUSAL = -1, 0, 1


def causal_flag(name: str) -> bool | None:
    """Is_causal of a FlashAttention-2 kernel name (module docstring), None when the name does not
    have the expected shape."""
    match = _KERNEL.search(name)
    if match is None:
        return None
    arguments = _template_arguments(name, match.end())
    counts, at, traits = KERNELS[match.group(1)]
    if arguments is None or len(arguments) < 2 or not _is_traits(arguments[0], traits):
        return None
    flags = arguments[1:]
    if len(flags) not in counts or any(f not in ("true", "false") for f in flags):
        return None
    return flags[at] == "true"


def _is_traits(argument: str, traits: str) -> bool:
    """Whether a template argument is the `traits<…>` type (any namespace)."""
    head, opened, _ = argument.partition("<")
    return bool(opened) and head.rsplit("::", 1)[-1] == traits


def _template_arguments(name: str, start: int) -> list[str] | None:
    """The top-level arguments of the template argument list opening at `start` (after its "<"),
    None when it is not closed."""
    depth, out, begin = 0, [], start
    for i in range(start, len(name)):
        char = name[i]
        if char in "<(":
            depth += 1
        elif char in ">)":
            if depth == 0:
                out.append(name[begin:i].strip())
                return out
            depth -= 1
        elif char == "," and depth == 0:
            out.append(name[begin:i].strip())
            begin = i + 1
    return None


def causal_by_op(trace: Trace, launcher: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Per event of the trace, what the FlashAttention-2 kernels it launched say (`CAUSAL`,
    `NOT_CAUSAL`, or `NOT_KNOWN` for events that launched none, or kernels that disagree); `launcher`
    [i] is the op that launched activity `kernel`[i]."""
    out = np.full(trace.num_events, NOT_KNOWN, dtype=np.int8)
    flags = {i: causal_flag(s) for i, s in enumerate(trace.strings) if "flash_" in s}
    known = {i: flag for i, flag in flags.items() if flag is not None}
    if not known:
        return out
    ids = np.array(sorted(known), dtype=np.int64)
    names = trace.ev_name[kernel]
    hit = np.isin(names, ids)
    value = np.array([known[i] for i in ids.tolist()], dtype=np.int8)[np.searchsorted(ids, names[hit])]
    ops = launcher[hit]
    low = np.full(trace.num_events, CAUSAL + 1, dtype=np.int8)
    high = np.full(trace.num_events, NOT_KNOWN, dtype=np.int8)
    np.minimum.at(low, ops, value)
    np.maximum.at(high, ops, value)
    agree = (low == high) & (high != NOT_KNOWN)
    out[agree] = high[agree]
    return out
