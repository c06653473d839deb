"""The HLO cost model (`tools/roofline/hlo_cost.py`): formulas recomputed here by hand from shapes and
dimension numbers, fusions against their parts, and the per-op figures of XProf (MI300: its
GpuHloCostAnalysis; TPU: libtpu's own cost stats) and of XLA's HloCostAnalysis itself."""

from __future__ import annotations

import json
import math

import pytest

from profscope.formats.hlo.proto import HloModule
from profscope.tools.roofline.hlo_cost import ELEMENTWISE, Cost, instruction_costs
from profscope.tools.roofline.hlo_roofs import instruction_roofs
from tests.formats.hlo.test_hlo_proto import (
    F32,
    S32,
    computation,
    hlo_proto,
    instruction,
    modules,
    shape,
    synthetic_ops,
)
from tests.support.xplane_messages import field

# XProf 2.24.2 `roofline_model` for tests/data/xplane/mi300_jax_conv.xplane.pb, "Total" op rows
# (include_infeed_outfeed = true), saved in tests/data/xprof/mi300_jax_conv.roofline.json by
# benchmarks/xprof_roofline.py: FLOPs = measured_flop_rate × total_time, bytes = Memory BW × 2^30/10^9
# × total_time, divided by occurrences. XProf charges the per-HLO cost once per kernel launch (its
# quirk Q6: the conv runs 2 kernels, so 79 "occurrences" for 40 executions), which makes its
# per-occurrence figure exactly the cost of one execution: ours must equal it.
# name: (occurrences, FLOPs per occurrence, bytes per occurrence); program id 15.
XPROF_MI300 = {
    "cudnn-conv.1": (79, 32715571200, 579072000),
    "input_transpose_fusion": (40, 0, 1144053760),
    "input_transpose_fusion.1": (39, 0, 12779520),
    "loop_transpose_fusion": (40, 0, 1310720),
}
# Same source for tpu_v6e_inference.xplane.pb: these TPU rows carry libtpu's own cost model
# (`flops` / `bytes_accessed` stats), not XLA's; program ids as signed int64.
XPROF_TPU = {
    (-6255983156473747731, "broadcast_add_fusion"): (1342177280, 10737418240),
    (-6255983156473747731, "broadcast_add_fusion.1"): (1342177280, 10737418240),
    (-6255983156473747731, "copy-start"): (0, 5368709120),
    (-6255983156473747731, "copy-done"): (0, 5368709120),
    (-8800332967749297542, "all-reduce"): (1342177280, 10737418240),
    (-7159309165228431456, "broadcast.2"): (0, 5368709120),
}
# The difference allowed against libtpu: our copy-start/done count their tuples' 24-byte index tables
# and the broadcast its 4-byte scalar operand, which libtpu leaves out (< 1e-8 of the bytes).
TPU_TOLERANCE = 1e-8
# XLA's HloCostAnalysis on the same HloModuleProtos (jaxlib 0.10.2, `hlo_module_cost_analysis` with
# the CPU client), summed over the entry computation: (flops, transcendentals, bytes accessed).
# XLA sums in float32, so large totals are rounded (mi300 program 9: 4421714130 → 4421713920).
XLA_TOTALS = {
    ("cpu", 8): (2959360, 8192, 753728),
    ("cpu", 5): (376973, 8192, 246241),
    ("cpu", 2): (189, 0, 737),
    ("cpu", 6): (4097, 0, 32784),
    ("mi300", 5): (362, 0, 32),
    ("mi300", 9): (4421713920, 51118080, 51118104),
    ("mi300", 13): (0, 0, 102236224),
    ("tpu", -8800332967749297542): (1342177280, 0, 10737418240),
}
FLOAT32_SUMS = 1e-7
# XLA on `synthetic_ops()` written as HLO text (same jaxlib): the module's sums.
XLA_SYNTHETIC = (407775, 0, 193596)


def costs_of(key: str, program: int) -> dict[str, Cost]:
    return instruction_costs(modules(key)[program])


def elements(dims) -> int:
    return math.prod(dims)


def test_every_instruction_has_a_cost_and_unknown_is_never_zero() -> None:
    for key in ("mi300", "tpu", "cpu"):
        for module in modules(key).values():
            costs = instruction_costs(module)
            assert set(costs) == {i.name for i in module.instructions()}
            for cost in costs.values():
                known = [v for v in (cost.flops, cost.bytes_accessed, cost.transcendentals) if v is not None]
                assert all(v >= 0 for v in known)
                assert len(known) == 3 or cost.note


def test_dot_flops_and_bytes_by_hand() -> None:
    dots = [i for i in modules("cpu")[8].instructions() if i.opcode == "dot"]
    assert len(dots) == 11
    module = HloModule(synthetic_ops())
    for ins in [*dots, module.instruction("dot.1")]:
        lhs, rhs = (o.shape for o in ins.operands)
        dnums = ins.dot_dimension_numbers
        width = elements(lhs.dimensions[d] for d in dnums.lhs_contracting)
        assert width == elements(rhs.dimensions[d] for d in dnums.rhs_contracting)
        cost = instruction_costs(ins.module)[ins.name]
        assert cost.flops == 2 * elements(ins.shape.dimensions) * width
        assert cost.bytes_accessed == 4 * (
            elements(lhs.dimensions) + elements(rhs.dimensions) + elements(ins.shape.dimensions)
        )
    batched = instruction_costs(module)["dot.1"]
    assert batched.flops == 2 * (4 * 32 * 16) * 64


def valid_positions(size: int, kernel: int, output: int, stride: int, low: int) -> int:
    """(kernel tap, output position) pairs that read a real input element: no padding."""
    return sum(0 <= o * stride - low + k < size for k in range(kernel) for o in range(output))


def test_convolution_flops_by_hand() -> None:
    # f32[2,17,19,6] ⊛ f32[3,3,6,8] → f32[2,9,11,8], stride 2, padding 1_1 and 2_2 (b01f_01io->b01f).
    module = HloModule(synthetic_ops())
    conv = instruction_costs(module)["conv.1"]
    taps = valid_positions(17, 3, 9, 2, 1) * valid_positions(19, 3, 11, 2, 2)
    assert taps == 25 * 29  # 27 and 33 pairs minus those that land in the padding
    assert conv.flops == 2 * 6 * 8 * 2 * taps == 139200  # XLA: 139200
    assert conv.bytes_accessed == 4 * (2 * 17 * 19 * 6 + 3 * 3 * 6 * 8 + 2 * 9 * 11 * 8)
    # The MI300 cuDNN/MIOpen conv: bf16[1,16,32,60,104] ⊛ bf16[5120,16,1,2,2] → bf16[1,5120,34,31,53];
    # window 1x2x2, stride 1x2x2, padding 1 everywhere: every input element is read by exactly one
    # (tap, output) pair per spatial dimension, so the valid positions are the input's 32 × 60 × 104.
    cudnn = costs_of("mi300", 15)["cudnn-conv.1"]
    spatial = (
        valid_positions(32, 1, 34, 1, 1)
        * valid_positions(60, 2, 31, 2, 1)
        * valid_positions(104, 2, 53, 2, 1)
    )
    assert spatial == 32 * 60 * 104
    assert cudnn.flops == 2 * 16 * 5120 * 1 * spatial
    # Bytes: both operands and the result, not the u8[7150336] scratch buffer of the tuple.
    assert cudnn.bytes_accessed == 2 * (16 * 32 * 60 * 104 + 5120 * 16 * 4 + 5120 * 34 * 31 * 53)
    assert "window" in cudnn.note


@pytest.mark.parametrize("key", ["mi300", "tpu", "cpu"])
def test_a_fusion_costs_the_sum_of_its_fused_instructions(key: str) -> None:
    checked = 0
    for module in modules(key).values():
        costs = instruction_costs(module)
        for fusion in (i for i in module.instructions() if i.opcode == "fusion"):
            parts = [costs[i.name] for i in fusion.fused_computation.instructions]
            assert costs[fusion.name].flops == sum(p.flops for p in parts)
            assert costs[fusion.name].transcendentals == sum(p.transcendentals for p in parts)
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("key", ["mi300", "tpu", "cpu"])
def test_fusion_bytes_are_its_operands_and_outputs(key: str) -> None:
    """For fusions whose parameters are read whole (no slicing or re-reading users, no in-place
    root, no big constants) the boundary bytes are the operands plus the outputs."""
    plain = 0
    for module in modules(key).values():
        costs = instruction_costs(module)
        for fusion in (i for i in module.instructions() if i.opcode == "fusion"):
            inner = fusion.fused_computation
            users = {u.opcode for p in inner.parameters for u in p.users}
            constants = any(i.opcode == "constant" and i.shape.elements > 1 for i in inner.instructions)
            special = {
                "slice",
                "dynamic-slice",
                "dynamic-update-slice",
                "broadcast",
                "reshape",
                "fusion",
                "gather",
            }
            if (
                users & special
                or constants
                or inner.root.opcode == "dynamic-update-slice"
                or fusion.fusion_kind == "kCustom"
            ):
                continue
            expected = sum(o.shape.byte_size for o in fusion.operands) + fusion.shape.byte_size
            assert costs[fusion.name].bytes_accessed == expected, fusion.name
            plain += 1
    assert plain >= 1


def test_other_instructions_read_their_operands_and_write_their_result() -> None:
    checked = 0
    for key in ("mi300", "cpu"):
        for module in modules(key).values():
            costs = instruction_costs(module)
            for ins in module.instructions():
                if ins.opcode in ELEMENTWISE or ins.opcode in (
                    "dot",
                    "reduce",
                    "copy",
                    "concatenate",
                    "iota",
                ):
                    expected = sum(o.shape.byte_size for o in ins.operands) + ins.shape.byte_size
                    assert costs[ins.name].bytes_accessed == expected, ins.name
                    if ins.opcode in ELEMENTWISE:
                        counted = costs[ins.name].flops + costs[ins.name].transcendentals
                        assert counted == ins.shape.elements
                    checked += 1
    assert checked > 500


def dus_and_slice_fusions() -> bytes:
    """fusion(exp → dynamic-update-slice into p0) feeding fusion(slice → × 2 → tanh → + constant)."""
    big, small, index, scalar = shape(F32, (100, 32)), shape(F32, (10, 32)), shape(S32), shape(F32)
    slice_dims = field(17, field(1, 0) + field(2, 10) + field(3, 1)) + field(
        17, field(1, 0) + field(2, 32) + field(3, 1)
    )
    dus = computation("fused_dus", 1, [
        instruction("p0", "parameter", big, 10),
        instruction("p1", "parameter", small, 11, extra=field(9, 1)),
        instruction("p2", "parameter", index, 12, extra=field(9, 2)),
        instruction("e", "exponential", small, 13, [11]),
        instruction("d", "dynamic-update-slice", big, 14, [10, 13, 12, 12]),
    ], 14, fusion=True)  # fmt: skip
    sliced = computation("fused_slice", 2, [
        instruction("q0", "parameter", big, 20),
        instruction("s", "slice", small, 21, [20], extra=slice_dims),
        instruction("two", "constant", scalar, 22),
        instruction("b", "broadcast", small, 23, [22]),
        instruction("m", "multiply", small, 24, [21, 23]),
        instruction("t", "tanh", small, 25, [24]),
        instruction("c", "constant", small, 26),
        instruction("r", "add", small, 27, [25, 26]),
    ], 27, fusion=True)  # fmt: skip
    entry = computation("main", 3, [
        instruction("a", "parameter", big, 30),
        instruction("u", "parameter", small, 31, extra=field(9, 1)),
        instruction("j", "parameter", index, 32, extra=field(9, 2)),
        instruction("f1", "fusion", big, 33, [30, 31, 32], [1], extra=field(11, b"kLoop")),
        instruction("f2", "fusion", small, 34, [33], [2], extra=field(11, b"kLoop")),
    ], 34)  # fmt: skip
    return hlo_proto([dus, sliced, entry], entry=3)


def test_fusion_boundary_bytes_follow_xlas_special_cases() -> None:
    costs = instruction_costs(HloModule(dus_and_slice_fusions()))
    small = 10 * 32 * 4
    # In place: the output counts only the update; p0 (the updated operand) is not read, the update
    # source is read whole, the index once.
    assert costs["f1"] == Cost(0.0, small + small + 4, 10 * 32)
    # The parameter is only read through a slice; the f32[10,32] constant is read too.
    assert costs["f2"] == Cost(2 * 10 * 32, small + small + small, 10 * 32)
    totals = [
        sum(getattr(costs[n], k) for n in ("f1", "f2"))
        for k in ("flops", "transcendentals", "bytes_accessed")
    ]
    assert totals == [640, 640, 6404]  # XLA, on the same module written as HLO text


def test_mi300_ops_match_xprof_per_execution() -> None:
    costs = costs_of("mi300", 15)
    program_flops = 0.0
    for name, (occurrences, flops, bytes_accessed) in XPROF_MI300.items():
        assert costs[name].flops == pytest.approx(flops, rel=1e-12, abs=0), name
        assert costs[name].bytes_accessed == pytest.approx(bytes_accessed, rel=1e-12), name
        program_flops += costs[name].flops * occurrences
    assert program_flops == pytest.approx(2.58453e12, rel=1e-5)  # XProf's program row: cost × kernel launches


def test_tpu_ops_match_libtpus_cost_stats() -> None:
    for (program, name), (flops, bytes_accessed) in XPROF_TPU.items():
        ours = costs_of("tpu", program)[name]
        assert ours.flops == flops
        assert ours.bytes_accessed == pytest.approx(bytes_accessed, rel=TPU_TOLERANCE)


@pytest.mark.parametrize(("key", "program"), sorted(XLA_TOTALS))
def test_module_sums_match_xlas_cost_analysis(key: str, program: int) -> None:
    module = modules(key)[program]
    costs = instruction_costs(module)
    entry = [costs[i.name] for i in module.entry.instructions]
    sums = (
        sum(c.flops for c in entry),
        sum(c.transcendentals for c in entry),
        sum(c.bytes_accessed for c in entry),
    )
    assert sums == pytest.approx(XLA_TOTALS[key, program], rel=FLOAT32_SUMS)


def test_synthetic_ops_match_xlas_cost_analysis() -> None:
    module = HloModule(synthetic_ops())
    costs = instruction_costs(module)
    entry = [costs[i.name] for i in module.entry.instructions]
    sums = (
        sum(c.flops for c in entry),
        sum(c.transcendentals for c in entry),
        sum(c.bytes_accessed for c in entry),
    )
    assert sums == XLA_SYNTHETIC
    assert costs["slice.1"].bytes_accessed == 2 * 50 * 16 * 4
    assert costs["sum.1"].flops == 100 * 32 - 100  # the reducer's add per reduced element
    # A reduce-window that sums a whole padded dimension and broadcasts it back: XLA's
    # "reduce then broadcast" count, n/32 + 31, not (63 − 1) × 3200.
    assert costs["cumsum.1"].flops == 3200 // 32 + 31
    assert costs["out"].bytes_accessed == 16  # a tuple writes its index table


def custom_calls(config: dict) -> HloModule:
    lhs, rhs, out = shape(F32, (64, 32)), shape(F32, (32, 16)), shape(F32, (64, 16))
    result = shape(0, tuple_of=(out, shape(6, (1024,))))
    calls = [
        instruction("x", "parameter", lhs, 1),
        instruction("y", "parameter", rhs, 2, extra=field(9, 1)),
        instruction(
            "gemm",
            "custom-call",
            result,
            3,
            [1, 2],
            extra=field(28, b"__cublas$gemm") + field(43, json.dumps(config).encode()),
        ),  # fmt: skip
        instruction("kernel", "custom-call", out, 4, [1, 2], extra=field(28, b"my_pallas_kernel")),
        instruction("future", "ragged-all-to-all-v9", out, 5, [1]),
    ]
    return HloModule(hlo_proto([computation("main", 1, calls, 4)], entry=1))


def test_custom_calls_known_from_their_config_else_unknown() -> None:
    dims = {"lhs_contracting_dimensions": ["1"], "rhs_contracting_dimensions": ["0"]}
    costs = instruction_costs(custom_calls({"gemm_backend_config": {"dot_dimension_numbers": dims}}))
    assert costs["gemm"].flops == 2 * 64 * 16 * 32
    assert costs["gemm"].bytes_accessed == 4 * (64 * 32 + 32 * 16 + 64 * 16)  # not the workspace
    assert "backend_config" in costs["gemm"].note
    unknown = costs["kernel"]
    assert (unknown.flops, unknown.bytes_accessed, unknown.transcendentals) == (None, None, None)
    assert "my_pallas_kernel" in unknown.note
    assert costs["future"].flops is None and "not in the cost model" in costs["future"].note
    assert instruction_costs(custom_calls({"gemm_backend_config": {}}))["gemm"].flops is None


def test_control_flow_costs_its_computations() -> None:
    module = modules("cpu")[5]
    costs = instruction_costs(module)
    loop = module.instruction("while.24")
    body, condition = loop.called_computations
    parts = [costs[i.name] for c in (body, condition) for i in c.instructions]
    assert costs[loop.name].flops == sum(p.flops for p in parts)
    assert costs[loop.name].bytes_accessed == sum(p.bytes_accessed for p in parts)
    assert "one iteration" in costs[loop.name].note
    call = next(i for i in modules("cpu")[2].instructions() if i.opcode == "call")
    callee = instruction_costs(call.module)
    assert callee[call.name].flops == sum(
        callee[i.name].flops for i in call.called_computations[0].instructions
    )


def test_bitcasts_and_layout_only_transposes_move_no_bytes() -> None:
    costs = costs_of("mi300", 15)
    assert costs["bitcast.12.0"] == Cost(0.0, 0.0, 0.0)
    assert costs["get-tuple-element.2.0"] == Cost(0.0, 0.0, 0.0)
    transpose = costs["transpose.5.1"]  # bf16[5120,55862]{1,0} → [55862,5120]{1,0}: a real transpose
    assert transpose.bytes_accessed == 2 * 2 * 5120 * 55862


BF16, U8 = 16, 6


def fused_attention(target: str, config: dict) -> HloModule:
    """A cuDNN flash attention call as XLA writes it: Q, K, V bf16[2, 6, 2048, 128] (B, H, S, D),
    result (out bf16[2, 6, 2048, 128], u8[0] scratch)."""
    qkv = shape(BF16, (2, 6, 2048, 128))
    result = shape(0, tuple_of=(qkv, shape(U8, (0,))))
    calls = [
        instruction("q", "parameter", qkv, 1),
        instruction("k", "parameter", qkv, 2, extra=field(9, 1)),
        instruction("v", "parameter", qkv, 3, extra=field(9, 2)),
        instruction(
            "fmha",
            "custom-call",
            result,
            4,
            [1, 2, 3],
            extra=field(28, target.encode()) + field(43, json.dumps(config).encode()),
        ),  # fmt: skip
    ]
    return HloModule(hlo_proto([computation("main", 1, calls, 4)], entry=1))


def test_flash_attention_custom_calls_are_modelled_from_their_shapes() -> None:
    """Forward 4·B·H·Sq·Sk·D = 4·2·6·2048·2048·128 (the score matrix's shape from the config, D the
    query's contracting dimension), halved with a causal mask; the backward 2.5× that."""
    scores = {"element_type": "BF16", "dimensions": ["2", "6", "2048", "2048"]}
    dims = {"lhs_contracting_dimensions": ["3"], "rhs_contracting_dimensions": ["3"]}
    config = {"intermediate_tensor_shape": scores, "bmm1_dot_dimension_numbers": dims}
    forward = instruction_costs(
        fused_attention("__cudnn$fmhaSoftmax", {"cudnn_fmha_backend_config": config})
    )["fmha"]
    assert forward.flops == 4 * 2 * 6 * 2048 * 2048 * 128 == 25_769_803_776
    assert forward.bytes_accessed == 4 * (2 * 6 * 2048 * 128 * 2)  # Q, K, V read, out written; no scratch
    assert forward.note == "modelled: flash attention 4·B·H·Sq·Sk·D from its shapes"
    causal = {"cudnn_fmha_backend_config": {**config, "mask_type": "CAUSAL"}}
    backward = instruction_costs(fused_attention("__cudnn$fmhaSoftmaxBackward", causal))["fmha"]
    assert backward.flops == 2.5 * 25_769_803_776 / 2
    assert backward.note == "modelled: flash attention 2.5 × 4·B·H·Sq·Sk·D ÷ 2 (causal) from its shapes"
    # without the score matrix's shape: unknown, never guessed
    unknown = instruction_costs(fused_attention("__cudnn$fmhaSoftmax", {"cudnn_fmha_backend_config": {}}))[
        "fmha"
    ]
    assert unknown.flops is None and "__cudnn$fmhaSoftmax" in unknown.note


def te_attention(target: str, attributes: str) -> HloModule:
    """Transformer Engine's fused attention as JAX writes it, an XLA FFI call whose backend_config
    is its attribute dictionary as XLA prints it (synthetic: no corpus XPlane has one): Q, K, V
    bf16[2, 2048, 16, 128] (B, S, H, D), result (out, softmax stats f32, rng state u8 workspace)."""
    qkv = shape(BF16, (2, 2048, 16, 128))
    result = shape(0, tuple_of=(qkv, shape(F32, (2, 16, 2048, 1)), shape(U8, (64,))))
    calls = [
        instruction("q", "parameter", qkv, 1),
        instruction("k", "parameter", qkv, 2, extra=field(9, 1)),
        instruction("v", "parameter", qkv, 3, extra=field(9, 2)),
        instruction("attn", "custom-call", result, 4, [1, 2, 3], extra=field(28, target.encode()) + field(43, attributes.encode())),
    ]  # fmt: skip
    return HloModule(hlo_proto([computation("main", 1, calls, 4)], entry=1))


def test_transformer_engine_attention_is_modelled_from_its_attributes() -> None:
    """Forward 4·B·H·Sq·Sk·D = 4·2·16·2048·2048·128 with B, H, Sq, Sk, D from the attributes;
    mask_type 2 (NVTE causal) halves it, the backward is 2.5× the forward; a sliding window or a
    missing attribute leaves it unknown."""
    base = (
        "{attn_heads = 16 : i64, bias_batch = 0 : i64, deterministic = false, dropout_probability = 0.000000e+00 : f64, "
        "head_dim = 128 : i64, input_batch = 2 : i64, is_training = true, kv_max_seqlen = 2048 : i64, "
        "mask_type = MASK : i64, num_gqa_groups = 4 : i64, q_max_seqlen = 2048 : i64, "
        "scaling_factor = 0.0883883461 : f64, window_size_left = -1 : i64, window_size_right = -1 : i64}"
    )
    module = te_attention("te_fused_attn_forward_ffi", base.replace("MASK", "0"))
    assert instruction_roofs(module)["attn"] == "bf16"  # tensor cores at its operands' type
    forward = instruction_costs(module)["attn"]
    assert forward.flops == 4 * 2 * 16 * 2048 * 2048 * 128 == 68_719_476_736
    assert forward.note == "modelled: Transformer Engine fused attention 4·B·H·Sq·Sk·D"
    # Q, K, V read, out and the f32 softmax stats written; not the u8 workspace
    assert forward.bytes_accessed == 4 * (2 * 2048 * 16 * 128 * 2) + 2 * 16 * 2048 * 4
    causal = instruction_costs(te_attention("te_fused_attn_backward_ffi", base.replace("MASK", "2")))["attn"]
    assert causal.flops == 2.5 * 68_719_476_736 / 2
    window = base.replace("MASK", "2").replace("window_size_left = -1", "window_size_left = 128")
    assert instruction_costs(te_attention("te_fused_attn_forward_ffi", window))["attn"].flops is None
    missing = base.replace("MASK", "0").replace("head_dim = 128 : i64, ", "")
    assert instruction_costs(te_attention("te_fused_attn_forward_ffi", missing))["attn"].flops is None
