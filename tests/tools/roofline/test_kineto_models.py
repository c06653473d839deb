"""Cost models of PyTorch ops (`kineto_formulas.py`): causal attention, GEMM epilogues, norms
and their backwards, grouped GEMM, worked out by hand. Each test names the real trace its op comes
from (tests/data/kineto), or says that its arguments are synthetic because no corpus trace holds
the op (they are then written as PyTorch's profiler records them: `Input Dims`, `Input type`,
`Concrete Inputs`)."""

from __future__ import annotations

import functools
import gzip
import json
import math
import types
from pathlib import Path

import fsspec
import numpy as np
import pytest

from profscope.answers import UNSET
from profscope.formats.chrome import reader as chrome_json
from profscope.tools.roofline import analysis, flash_kernels, kineto
from profscope.tools.roofline.kineto_formulas import FORMULAS, Call
from profscope.tools.roofline.model import COST_MODELLED, OpCost
from tests.support import DATA_DIR

BF16 = "c10::BFloat16"
# aten::_flash_attention_forward as the H100 bert trace (bert_small) records it: Q, K, V
# [1, 141, 8, 64] (B, L, H, D), max_q = max_k = 141, dropout 0, is_causal False (position 8).
BERT_FLASH = (
    [[1, 141, 8, 64]] * 3 + [[]] * 12,
    [BF16] * 3 + ["", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "", "", ""],
    ["", "", "", "", "", "141", "141", "0.", "False", "False", "0.125", "", "", "", ""],
)
UNMASKED = 2 * 1 * 8 * 141 * 141 * (64 + 64)  # 2·B·H·Lq·Lk·(D + Dv) = 40_716_288


def _cost(op: str, dims: list, types: list, concrete: list | None) -> tuple[float, float]:
    formula = FORMULAS[op].formula
    assert formula is not None
    return formula(Call(dims, types, concrete))


def test_a_causal_mask_halves_the_attention_flops() -> None:
    """bert_small's flash attention is not causal: 40_716_288 FLOPs. The same call with is_causal
    True (synthetic: no corpus trace has a causal one) skips half the scores: 20_358_144, the
    issue's 4·B·H·S²·D / 2; its bytes do not change."""
    dims, types, concrete = BERT_FLASH
    flops, bytes_moved = _cost("aten::_flash_attention_forward", dims, types, concrete)
    assert flops == UNMASKED == 40_716_288
    causal = [*concrete[:8], "True", *concrete[9:]]
    assert _cost("aten::_flash_attention_forward", dims, types, causal) == (
        4 * 1 * 8 * 141**2 * 64 / 2,
        bytes_moved,
    )
    # without Concrete Inputs the mask is not known: the scores count in full (an upper bound)
    assert _cost("aten::_flash_attention_forward", dims, types, None)[0] == UNMASKED


@pytest.mark.parametrize(
    ("op", "at", "flag"),
    [
        ("aten::scaled_dot_product_attention", 5, "True"),
        ("aten::_scaled_dot_product_flash_attention", 4, "True"),
        ("aten::_scaled_dot_product_efficient_attention", 6, "True"),
        ("aten::_scaled_dot_product_cudnn_attention", 6, "True"),
    ],
)
def test_sdpa_reads_is_causal_where_its_signature_puts_it(op: str, at: int, flag: str) -> None:
    """SDPA layout Q, K, V [B, H, L, D] = [1, 8, 141, 64] (bert_small's SDPA shapes); synthetic
    Concrete Inputs with `flag` at the op's is_causal position and False elsewhere."""
    dims = [[1, 8, 141, 64]] * 3 + [[]] * 6
    types = [BF16] * 3 + ["Scalar"] * 6
    concrete = ["", "", "", *["False"] * 6]
    assert _cost(op, dims, types, concrete)[0] == UNMASKED
    concrete[at] = flag
    assert _cost(op, dims, types, concrete)[0] == UNMASKED / 2


def test_efficient_attention_reads_its_custom_mask_type() -> None:
    """aten::_efficient_attention_forward (synthetic): custom_mask_type (position 9) 0 = no mask,
    1 = causal from the top left, 2 = from the bottom right."""
    dims = [[1, 141, 8, 64]] * 3 + [[]] * 8
    types = [BF16] * 3 + [""] * 3 + ["Scalar"] * 5
    for mask, share in (("0", 1.0), ("1", 0.5), ("2", 0.5)):
        concrete = ["", "", "", "", "", "", "141", "141", "0.", mask, "False"]
        assert _cost("aten::_efficient_attention_forward", dims, types, concrete)[0] == UNMASKED * share


@functools.cache
def _costs(name: str) -> tuple[OpCost, ...]:
    trace = chrome_json.read(str(DATA_DIR / "kineto" / name), fsspec.filesystem("file"))
    return tuple(kineto.op_costs(trace))


def _row(name: str, op: str) -> OpCost:
    (row,) = [c for c in _costs(name) if c.name == op]
    return row


def test_layer_norm_backward_of_a_real_trace() -> None:
    """rank-0.pt.trace.json.gz: aten::native_layer_norm_backward(grad_out, input fp32[2048, 125],
    mean, rstd fp32[2048, 1], weight, bias fp32[125]) ×7, no Concrete Inputs: with a weight and a
    bias all three gradients, 10·n + 2·n + 1·n with n = 2048·125 = 256_000: 3_328_000 per call.
    Bytes: grad_out, input 1_024_000 each, weight 500, mean and rstd 8_192 each read; grad_input
    1_024_000, grad_weight and grad_bias 500 each written: 3_089_884 per call."""
    op = (
        "aten::native_layer_norm_backward(fp32[2048, 125], fp32[2048, 125], fp32[2048, 1], "
        "fp32[2048, 1], fp32[125], fp32[125])"
    )
    row = _row("rank-0.pt.trace.json.gz", op)
    assert row.occurrences == 7 and row.source == COST_MODELLED
    assert row.flops == 7 * 13 * 256_000 == 23_296_000
    assert row.bytes_by_level == {"hbm": 7 * 3_089_884}


def test_batch_norm_backward_of_a_real_trace() -> None:
    """worker0.1623143089861 (resnet50, V100): aten::cudnn_batch_norm_backward(input, grad_output
    fp32[32, 256, 56, 56], weight, running and saved stats fp32[256], epsilon, reserve space uint8[0]) ×24: cuDNN computes all three
    gradients: 13·n, n = 32·256·56·56 = 25_690_112."""
    op = (
        "aten::cudnn_batch_norm_backward(fp32[32, 256, 56, 56], fp32[32, 256, 56, 56], fp32[256], "
        "fp32[256], fp32[256], fp32[256], fp32[256], uint8[0])"
    )
    row = _row("worker0.1623143089861.pt.trace.json.gz", op)
    assert row.occurrences == 24 and row.flops == 24 * 13 * 25_690_112


def test_gemm_epilogues() -> None:
    """Synthetic (no corpus trace has them): aten::_addmm_activation(bias bf16[512], A [141, 512],
    B [512, 2048], beta, alpha, use_gelu) = 2·M·N·K + 2·M·N (bias add, GELU); aten::linear with a
    bias 2·M·N·K + M·N, without one 2·M·N·K (M = 1·141, K = 512, N = 2048)."""
    gemm = 2 * 141 * 2048 * 512
    dims = [[2048], [141, 512], [512, 2048], [], [], []]
    types = [BF16] * 3 + ["Scalar"] * 3
    flops, _ = _cost("aten::_addmm_activation", dims, types, ["", "", "", "1", "1", "True"])
    assert flops == gemm + 2 * 141 * 2048
    linear = [[1, 141, 512], [2048, 512], [2048]]
    assert _cost("aten::linear", linear, [BF16] * 3, None)[0] == gemm + 141 * 2048
    assert _cost("aten::linear", [*linear[:2], []], [BF16, BF16, ""], None)[0] == gemm


def test_rms_norm() -> None:
    """Synthetic: aten::rms_norm(x bf16[4, 1024, 4096], normalized_shape, weight [4096], eps): square,
    sum, scale 3·n + weight n; bytes x read and out written (2 bytes each) + the weight."""
    n = 4 * 1024 * 4096
    dims, types = [[4, 1024, 4096], [], [4096], []], [BF16, "", BF16, "Scalar"]
    assert _cost("aten::rms_norm", dims, types, None) == (4.0 * n, 2 * 2 * n + 2 * 4096)


@pytest.mark.parametrize(
    ("a", "b", "offs", "flops", "out"),
    [
        (
            [4096, 1024],
            [8, 1024, 2816],
            [8],
            2 * 4096 * 1024 * 2816,
            4096 * 2816,
        ),  # MoE: tokens split by expert
        ([8, 512, 1024], [8, 1024, 2816], [], 2 * 8 * 512 * 1024 * 2816, 8 * 512 * 2816),
        ([8, 512, 1024], [1024, 2816], [8], 2 * 512 * 1024 * 2816, 512 * 2816),
        ([512, 8192], [8192, 2816], [8], 2 * 512 * 8192 * 2816, 8 * 512 * 2816),  # grouped weight gradient
    ],
)
def test_grouped_gemm(a: list[int], b: list[int], offs: list[int], flops: int, out: int) -> None:
    """Synthetic: aten::_grouped_mm(A, B, offs int32[G], bias, out_dtype) in bf16, each rank pair:
    FLOPs 2·(Σ over groups of M·K·N), bytes A + B + out, 2 bytes each."""
    dims = [a, b, offs, [], []]
    types = [BF16, BF16, "int" if offs else "", "", "Scalar"]
    assert _cost("aten::_grouped_mm", dims, types, None) == (
        float(flops),
        2.0 * (math.prod(a) + math.prod(b) + out),
    )


def test_the_flash_attn_packages_causal_forward() -> None:
    """Synthetic: flash_attn::_flash_attn_forward(q, k, v bf16[2, 2048, 16, 128], dropout_p,
    softmax_scale, causal=True, …) = 4·B·H·S²·D / 2."""
    dims = [[2, 2048, 16, 128]] * 3 + [[]] * 8
    types = [BF16] * 3 + ["Scalar"] * 8
    concrete = ["", "", "", "0.", "0.088", "True", "-1", "-1", "0.", "", "False"]
    assert (
        _cost("flash_attn::_flash_attn_forward", dims, types, concrete)[0] == 4 * 2 * 16 * 2048**2 * 128 / 2
    )


def test_triton_kernels_are_left_uncosted_and_counted(tmp_path: Path) -> None:
    """Synthetic (the corpus' torch.compile capture ran on the CPU): a CompiledFunction op launches
    two Inductor kernels, 10 µs and 30 µs, overlapping for 5 µs: 35 µs busy. Their op has no cost,
    and a warning counts them."""
    op = {"ph": "X", "cat": "cpu_op", "name": "CompiledFunction", "pid": 10, "tid": 10, "ts": 100, "dur": 50,
          "args": {"Input Dims": [[64, 64]], "Input type": ["float"]}}  # fmt: skip

    def launch(ts: int, correlation: int, name: str, kernel_ts: int, dur: int) -> list[dict]:
        return [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": ts,
             "dur": 2, "args": {"correlation": correlation}},
            {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": kernel_ts, "dur": dur,
             "args": {"correlation": correlation, "stream": 7}},
        ]  # fmt: skip

    events = [
        op,
        *launch(110, 1, "triton_poi_fused_add_0", 200, 10),
        *launch(120, 2, "triton_red_fused_sum_1", 205, 30),
    ]
    device = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132, "totalGlobalMem": 85018279936}
    path = tmp_path / "compiled.json"
    path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [device], "traceEvents": events}))
    trace = chrome_json.read(str(path), fsspec.filesystem("file"))
    assert kineto.triton_kernels(trace) == (2, 35_000_000)
    answer = analysis.answer("t", [analysis.host_devices("t", trace)], analysis.Options(), None)
    (compiled,) = [o for o in answer.ops if o.name == "CompiledFunction"]
    assert compiled.flops is UNSET and compiled.source == "no FLOP formula for this op"
    assert any("2 Triton kernels of torch.compile, 35 µs busy, left uncosted" in w for w in answer.warnings)


def test_cudnn_convolution_forward() -> None:
    """Synthetic (resnet's 2021 trace records no stride or padding, so its forward convolutions stay
    uncosted): aten::cudnn_convolution(input fp32[32, 64, 56, 56], weight [128, 64, 3, 3], padding
    [1, 1], stride [2, 2], dilation [1, 1], groups 1, …): P = Q = ⌊(56 + 2 − 2 − 1) / 2⌋ + 1 = 28,
    FLOPs 2·N·K·C·R·S·P·Q; bytes input + weight + out [32, 128, 28, 28], 4 bytes each."""
    dims = [[32, 64, 56, 56], [128, 64, 3, 3], [], [], [], [], [], [], []]
    types = [
        "float",
        "float",
        "ScalarList",
        "ScalarList",
        "ScalarList",
        "Scalar",
        "Scalar",
        "Scalar",
        "Scalar",
    ]
    concrete = ["", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"]
    flops, moved = _cost("aten::cudnn_convolution", dims, types, concrete)
    assert flops == 2 * 32 * 128 * 64 * 3 * 3 * 28 * 28 == 3_699_376_128
    assert moved == 4 * (32 * 64 * 56 * 56 + 128 * 64 * 3 * 3 + 32 * 128 * 28 * 28)


# bert_small's flash forward kernel, as Kineto records it (PyTorch's vendored FlashAttention-2, 7 flags:
# Is_dropout, Is_causal, Is_local, Has_alibi, Is_even_MN, Is_even_K, Return_softmax).
BERT_KERNEL = (
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, "
    "false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, "
    "false, false, false, false, false, true, false>(pytorch_flash::Flash_fwd_params)"
)
CAUSAL_KERNEL = BERT_KERNEL.replace("> >, false, false,", "> >, false, true,")


def test_flash_kernel_names_say_causal_only_in_their_known_shapes() -> None:
    """Is_causal: the 2nd flag of flash_fwd_kernel (5 to 8 flags, every FlashAttention-2 version),
    the 1st of flash_fwd_splitkv_kernel, the 2nd of the backward dq_dk_dv kernels (4 to 7); any
    other shape says nothing."""
    traits = "flash::Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>"
    assert (
        flash_kernels.causal_flag(BERT_KERNEL) is False and flash_kernels.causal_flag(CAUSAL_KERNEL) is True
    )
    upstream = f"void flash::flash_fwd_kernel<{traits}, false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)"
    release = f"void flash_fwd_kernel<{traits}, false, true, true, true, false>(Flash_fwd_params)"
    split = f"void flash::flash_fwd_splitkv_kernel<{traits}, true, false, false, true, true, false, false, false>(p)"
    assert flash_kernels.causal_flag(upstream) is flash_kernels.causal_flag(release) is True
    assert flash_kernels.causal_flag(split) is True
    # backward (synthetic names of the upstream templates: no corpus trace has a flash backward)
    bwd = "flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 4, 4, false, false, cutlass::bfloat16_t>"
    seqk = f"void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<{bwd}, false, true, false, false, true, true, false>(p)"
    loop = f"void flash_bwd_dq_dk_dv_loop_kernel<{bwd}, true, false, false, true>(Flash_bwd_params)"
    assert flash_kernels.causal_flag(seqk) is True and flash_kernels.causal_flag(loop) is False
    unknown = [
        f"void flash::flash_fwd_splitkv_combine_kernel<{traits}, 4, 1, true>(p)",  # not the kernel
        f"void flash::flash_bwd_dot_do_o_kernel<true, {bwd}>(p)",  # the backward's other kernels
        f"void flash::flash_bwd_dq_dk_dv_loop_kernel<{traits}, false, true, false, true>(p)",  # fwd traits
        f"void flash::flash_bwd_dq_dk_dv_loop_kernel<{bwd}, false, true, false>(p)",  # 3 flags: no version
        f"void flash::flash_fwd_kernel<{traits}, false, true, false, true>(p)",  # 4 flags: no version
        "void flash::flash_fwd_kernel<Kernel_traits, false, true, false, false, true, true, false>(p)",
        f"void flash::flash_fwd_kernel<{traits}, false, true, false, false, true, Is_even",  # cut short
        f"void flash::flash_fwd_kernel<{traits}, 0, 1, 0, 0, 1, 1, 0>(p)",  # not true/false
    ]
    assert [flash_kernels.causal_flag(name) for name in unknown] == [None] * len(unknown)


def _bert_copy(tmp_path: Path, concrete: bool, kernel: str) -> list[OpCost]:
    """bert_small's op costs from a copy of the trace written here: its Concrete Inputs kept or
    dropped, and its flash forward kernel named `kernel`."""
    with gzip.open(DATA_DIR / "kineto" / "bert_small.pt.trace.json.gz", "rt") as f:
        data = json.load(f)
    for event in data["traceEvents"]:
        if not concrete:
            event.get("args", {}).pop("Concrete Inputs", None)
        if event.get("name") == BERT_KERNEL:
            event["name"] = kernel
    path = tmp_path / "bert.pt.trace.json"
    path.write_text(json.dumps(data))
    return kineto.op_costs(chrome_json.read(str(path), fsspec.filesystem("file")))


@pytest.mark.parametrize(
    ("concrete", "kernel", "flops"),
    [
        (True, BERT_KERNEL, 4 * UNMASKED),  # as recorded: is_causal False
        (False, BERT_KERNEL, 4 * UNMASKED),  # no inputs: the kernel says not causal
        (False, CAUSAL_KERNEL, 4 * UNMASKED / 2),  # no inputs: the kernel says causal
        (True, CAUSAL_KERNEL, 4 * UNMASKED),  # the inputs say not causal: they win
    ],
)
def test_causal_from_the_flash_kernel_name(tmp_path: Path, concrete: bool, kernel: str, flops: float) -> None:
    """bert_small's 4 flash attention forwards, Q, K, V [1, 141, 8, 64]: 4 × 2·8·141·141·128 =
    162_865_152 FLOPs unmasked, 81_432_576 causal; the kernel's name counts only where the op's
    Concrete Inputs do not give is_causal."""
    (row,) = [
        c
        for c in _bert_copy(tmp_path, concrete, kernel)
        if c.name.startswith("aten::_flash_attention_forward")
    ]
    assert row.occurrences == 4 and row.flops == flops


def test_an_op_whose_flash_kernels_disagree_is_not_known() -> None:
    """`causal_by_op` over launches (op → kernel): one causal and one non-causal kernel from the same
    op say nothing; two causal ones say causal; a kernel of another library says nothing. The trace
    is a stand-in with only the columns the function reads (events 0–3 ops, 4–9 kernels)."""
    strings = [BERT_KERNEL, CAUSAL_KERNEL, "volta_sgemm_128x64_nn", "aten::_flash_attention_forward"]
    names = np.array([3, 3, 3, 3, 0, 1, 1, 1, 2, 0], dtype=np.int64)
    trace = types.SimpleNamespace(num_events=10, strings=strings, ev_name=names)
    launcher = np.array([1, 1, 2, 2, 3, 0])
    kernel = np.array([4, 5, 6, 7, 8, 9])
    out = flash_kernels.causal_by_op(trace, launcher, kernel)  # type: ignore[arg-type]
    assert out[:4].tolist() == [
        flash_kernels.NOT_CAUSAL,
        flash_kernels.NOT_KNOWN,
        flash_kernels.CAUSAL,
        flash_kernels.NOT_KNOWN,
    ]
    assert (out[4:] == flash_kernels.NOT_KNOWN).all()
