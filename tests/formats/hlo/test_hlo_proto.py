"""The HloProto decoder and HLO printer (`formats/hlo_proto.py`, `formats/hlo_text.py`) on the modules real XPlanes carry
(MI300 JAX conv, TPU v6e inference, the JAX CPU demo), checked against an independent walk of the
proto's fields and against XLA's own printer, plus synthetic modules built here for ops and sizes
the captures do not have.

Reference texts marked "XLA" were printed by XLA's HloModule::ToString (jaxlib 0.10.2, default
HloPrintOptions) from the same HloModuleProto bytes; the decoder prints them identically.
"""

from __future__ import annotations

import functools
import re

import pytest

from profscope.formats.common import wire
from profscope.formats.hlo.proto import HloModule, HloModules
from profscope.formats.hlo.text import instruction_text
from profscope.formats.xplane.decode import decode_space
from profscope.formats.xplane.hlo import hlo_protos
from tests.support import DATA_DIR, REPO
from tests.support.xplane_messages import field, varint

DATA = DATA_DIR / "xplane"
FILES = {
    "mi300": DATA / "mi300_jax_conv.xplane.pb",
    "tpu": DATA / "tpu_v6e_inference.xplane.pb",
    "cpu": REPO / "demo/logdir/jax_cpu_training/plugins/profile/2026_11_30_00_33_00/vm.xplane.pb",
}
# Instructions per program, over all its computations (fused ones included).
INSTRUCTION_COUNTS = {
    "mi300": {1: 2, 3: 10, 5: 170, 7: 14, 9: 311, 11: 298, 13: 26, 15: 19},
    "tpu": {
        -8800332967749297542: 6,
        -7159309165228431456: 3,
        -6255983156473747731: 31,
        2433868464432466958: 3,
    },
    "cpu": {1: 2, 2: 183, 3: 2, 4: 10, 5: 296, 6: 12, 7: 18, 8: 141},
}
F32, S32, PRED, U8 = 11, 4, 1, 6  # xla.PrimitiveType numbers


@functools.cache
def protos(key: str) -> dict[int, bytes]:
    return hlo_protos(decode_space(FILES[key].read_bytes()))


@functools.cache
def modules(key: str) -> HloModules:
    return HloModules(protos(key))


# -- an independent reading of the proto, field by field ----------------------------------------------
def fields(data: bytes, start: int, end: int) -> dict[int, list[tuple[int, int, int]]]:
    out: dict[int, list[tuple[int, int, int]]] = {}
    for number, wtype, a, b in wire.iter_fields(data, start, end):
        out.setdefault(number, []).append((wtype, a, b))
    return out


def varints(data: bytes, start: int, end: int) -> list[int]:
    values, pos = [], start
    while pos < end:
        value, pos = wire.read_varint(data, pos, end)
        values.append(wire.as_int64(value))
    return values


def raw_computations(data: bytes) -> list[dict]:
    """Each computation's name and its instructions' name, opcode, id, operand and called ids."""
    (_, mod_start, mod_end), *_ = fields(data, 0, len(data))[1]
    out = []
    for _, comp_start, comp_end in fields(data, mod_start, mod_end)[3]:
        comp = fields(data, comp_start, comp_end)
        instructions = []
        for _, ins_start, ins_end in comp.get(2, []):
            ins = fields(data, ins_start, ins_end)
            text = {n: data[ins[n][-1][1] : ins[n][-1][2]].decode() for n in (1, 2)}
            ids = {n: [v for _, a, b in ins.get(n, []) for v in varints(data, a, b)] for n in (36, 38)}
            record = {"name": text[1], "opcode": text[2], "id": wire.as_int64(ins[35][-1][1])}
            instructions.append(record | {"operands": ids[36], "called": ids[38]})
        name = data[comp[1][-1][1] : comp[1][-1][2]].decode()
        out.append({"name": name, "instructions": instructions})
    return out


# -- synthetic modules (test_hlo_cost uses them too), on the tests' one protobuf encoder ------------
def packed(values: list[int] | tuple[int, ...]) -> bytes:
    return b"".join(varint(v) for v in values)


def shape(kind: int, dims: tuple[int, ...] = (), tuple_of: tuple[bytes, ...] = ()) -> bytes:
    """A ShapeProto with the default (major-to-minor) layout; `tuple_of` makes a tuple."""
    if tuple_of:
        return field(2, 13) + b"".join(field(4, s) for s in tuple_of)
    layout = field(5, field(1, packed(tuple(reversed(range(len(dims)))))))
    return field(2, kind) + (field(3, packed(dims)) if dims else b"") + layout


def instruction(
    name: str, opcode: str, shape_bytes: bytes, uid: int, operands=(), called=(), extra=b""
) -> bytes:
    body = field(1, name.encode()) + field(2, opcode.encode()) + field(3, shape_bytes) + field(35, uid)
    body += field(36, packed(operands)) if operands else b""
    return body + (field(38, packed(called)) if called else b"") + extra


def computation(name: str, uid: int, instructions: list[bytes], root: int, fusion: bool = False) -> bytes:
    body = field(1, name.encode()) + b"".join(field(2, i) for i in instructions)
    return body + field(5, uid) + field(6, root) + (field(7, 1) if fusion else b"")


def hlo_proto(computations: list[bytes], entry: int, name: str = "synthetic") -> bytes:
    """A serialized HloProto (callees before callers, as XLA writes them)."""
    module = field(1, name.encode()) + b"".join(field(3, c) for c in computations)
    return field(1, module + field(5, 1) + field(6, entry))


def scalar_add(uid: int) -> bytes:
    """The reducer `add(f32[] p0, f32[] p1)` as computation `uid` (instruction ids uid*10+…)."""
    scalar = shape(F32)
    p0 = instruction("x", "parameter", scalar, uid * 10)
    p1 = instruction("y", "parameter", scalar, uid * 10 + 1, extra=field(9, 1))
    return computation(
        "add",
        uid,
        [p0, p1, instruction("s", "add", scalar, uid * 10 + 2, [uid * 10, uid * 10 + 1])],
        uid * 10 + 2,
    )


def window(*dims: tuple[int, int, int, int]) -> bytes:
    """Window field (15) from (size, stride, padding_low, padding_high) per dimension."""
    entries = [field(1, size) + field(2, stride) + field(3, lo) + field(4, hi) + field(5, 1) + field(6, 1) for size, stride, lo, hi in dims]  # fmt: skip
    return field(15, b"".join(field(1, e) for e in entries))


def synthetic_ops() -> bytes:
    """Ops the captures lack: dot with batch dims, a padded strided convolution, strided slice, pad
    with interior padding, compare, a variadic sort-free reduce and a reduce-window."""
    a, b = shape(F32, (4, 32, 64)), shape(F32, (4, 64, 16))
    dot_dims = field(
        30, field(1, packed([2])) + field(2, packed([1])) + field(3, packed([0])) + field(4, packed([0]))
    )
    image, kernel = shape(F32, (2, 17, 19, 6)), shape(F32, (3, 3, 6, 8))
    conv_dims = field(7, 0) + field(8, 3) + field(11, packed([1, 2])) + field(3, 2) + field(4, 3)
    conv_dims += field(6, packed([0, 1])) + field(9, 0) + field(10, 3) + field(12, packed([1, 2]))
    slice_dims = field(17, field(1, 0) + field(2, 100) + field(3, 2)) + field(
        17, field(1, 0) + field(2, 16) + field(3, 1)
    )
    pad_dims = field(21, field(1, field(1, 1) + field(2, 2) + field(3, 1)) + field(1, b""))
    ins = [
        instruction("a", "parameter", a, 100),
        instruction("b", "parameter", b, 101, extra=field(9, 1)),
        instruction("dot.1", "dot", shape(F32, (4, 32, 16)), 102, [100, 101], extra=dot_dims),
        instruction("image", "parameter", image, 103, extra=field(9, 2)),
        instruction("kernel", "parameter", kernel, 104, extra=field(9, 3)),
        instruction(
            "conv.1",
            "convolution",
            shape(F32, (2, 9, 11, 8)),
            105,
            [103, 104],
            extra=window((3, 2, 1, 1), (3, 2, 2, 2)) + field(16, conv_dims),
        ),  # fmt: skip
        instruction("wide", "parameter", shape(F32, (100, 32)), 106, extra=field(9, 4)),
        instruction("slice.1", "slice", shape(F32, (50, 16)), 107, [106], extra=slice_dims),
        instruction(
            "zero", "constant", shape(F32), 108, extra=field(8, field(1, shape(F32)) + field(8, b"\0\0\0\0"))
        ),
        instruction("pad.1", "pad", shape(F32, (202, 32)), 109, [106, 108], extra=pad_dims),
        instruction(
            "less.1",
            "compare",
            shape(PRED, (100, 32)),
            110,
            [106, 106],
            extra=field(63, b"LT") + field(72, b"TOTALORDER"),
        ),
        instruction(
            "sum.1", "reduce", shape(F32, (100,)), 111, [106, 108], [1], extra=field(14, packed([1]))
        ),
        instruction(
            "cumsum.1",
            "reduce-window",
            shape(F32, (100, 32)),
            112,
            [106, 108],
            [1],
            extra=window((1, 1, 0, 0), (63, 1, 31, 31)),
        ),  # fmt: skip
    ]
    root = instruction(
        "out",
        "tuple",
        shape(0, tuple_of=(shape(F32, (4, 32, 16)), shape(F32, (2, 9, 11, 8)))),
        113,
        [102, 105],
    )
    return hlo_proto([scalar_add(1), computation("main", 2, [*ins, root], 113)], entry=2)


def unannotated(text: str) -> str:
    """Without XLA's `/*index=N*/` notes (every fifth tuple element and operand)."""
    return re.sub(r"/\*index=\d+\*/", "", text)


# -- tests ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", sorted(FILES))
def test_instruction_counts_match_the_proto(key: str) -> None:
    assert {
        p: sum(len(c.instructions) for c in modules(key)[p].computations.values()) for p in protos(key)
    } == (INSTRUCTION_COUNTS[key])
    for program, data in protos(key).items():
        raw = raw_computations(data)
        decoded = modules(key)[program].computations.values()
        assert [(c["name"], len(c["instructions"])) for c in raw] == [
            (c.name, len(c.instructions)) for c in decoded
        ]


@pytest.mark.parametrize("key", sorted(FILES))
def test_names_opcodes_ids_and_edges_match_the_proto(key: str) -> None:
    for program, data in protos(key).items():
        module = modules(key)[program]
        for raw, comp in zip(raw_computations(data), module.computations.values(), strict=True):
            for record, ins in zip(raw["instructions"], comp.instructions, strict=True):
                assert (ins.name, ins.opcode, ins.id) == (record["name"], record["opcode"], record["id"])
                assert list(ins.operand_ids) == record["operands"]
                assert list(ins.called_computation_ids) == record["called"]
                assert [o.id for o in ins.operands] == record[
                    "operands"
                ]  # operands live in the same computation
                for operand in ins.operands:
                    assert ins in operand.users
                for user in ins.users:
                    assert ins.id in user.operand_ids
                assert all(c.id in module.computations for c in ins.called_computations)
            assert comp.root is not None and comp.root.is_root
            assert [p.parameter_number for p in comp.parameters] == list(range(len(comp.parameters)))
        assert module.entry is not None and module.entry.name == module.entry_computation_name


@pytest.mark.parametrize("key", sorted(FILES))
def test_text_shows_each_instructions_shape_opcode_and_operands(key: str) -> None:
    for module in modules(key).values():
        for ins in module.instructions():
            text = instruction_text(module, ins)
            assert text.startswith(f"%{ins.name} = {ins.shape.text()} ")
            if ins.opcode not in ("parameter", "constant") and not ins.opcode.startswith("async-"):
                operands = ", ".join(f"{o.shape.text()} %{o.name}" for o in ins.operands)
                assert unannotated(f" {ins.opcode}({operands})") in unannotated(text)


@pytest.mark.parametrize(
    ("key", "program", "name", "expected"),
    [
        ("tpu", -7159309165228431456, "copy", "%copy = f32[]{:T(128)S(6)} copy(f32[]{:T(128)} %Arg_0.1)"),
        (
            "tpu",
            -6255983156473747731,
            "copy-start",
            "%copy-start = (f32[5,1024,1024,256]{3,2,1,0:T(8,128)}, f32[5,1024,1024,256]{3,2,1,0:T(8,128)S(5)}, "
            "u32[]{:S(2)}) copy-start(f32[5,1024,1024,256]{3,2,1,0:T(8,128)S(5)} %param)",
        ),
        (
            "cpu",
            5,
            "while.24",
            "%while.24 = (s32[], u32[64,64]{1,0}, u32[64,64]{1,0}, u32[], u32[], /*index=5*/u32[], u32[4]{0}, "
            "u32[4]{0}) while((s32[], u32[64,64]{1,0}, u32[64,64]{1,0}, u32[], u32[], /*index=5*/u32[], "
            "u32[4]{0}, u32[4]{0}) %tuple.16), condition=%region_1.3.clone.clone, "
            'body=%region_0.2.clone.clone.clone, metadata={op_name="jit(_normal)/jit(_normal_real)/jit(_uniform)'
            '/while" stack_frame_id=4}, backend_config={"known_trip_count":{"n":"5"},"known_init_step":'
            '{"init":"0","step":"1"},"known_induction_variable":{"tuple_index":"0"},"dynamic_variables":[]}',
        ),
        (
            "cpu",
            4,
            "concatenate.0",
            "%concatenate.0 = u32[2]{0} concatenate(u32[1]{0} %bitcast.3, u32[1]{0} %bitcast.2), dimensions={0}, "
            'metadata={op_name="jit(_threefry_seed)/concatenate" stack_frame_id=2}',
        ),
        (
            "mi300",
            9,
            "constant_141_2",
            '%constant_141_2 = bf16[] constant(-0.9961), metadata={op_name="jit(_normal)/jit(_normal_real)/'
            'jit(_uniform)/max" source_file="/workspace/traces/generate_conv_trace.py" source_line=70 '
            "source_end_line=70 source_column=8 source_end_column=88 stack_frame_id=2}",
        ),
        (
            "mi300",
            9,
            "iota.54",
            "%iota.54 = u64[8,32,60,104,16]{4,3,2,1,0} iota(), iota_dimension=4, metadata={op_name="
            '"jit(_normal)/jit(_normal_real)/jit(_uniform)/iota_2x32_shape" source_file="/workspace/traces/'
            'generate_conv_trace.py" source_line=70 source_end_line=70 source_column=8 source_end_column=88 '
            "stack_frame_id=2}",
        ),
        (
            "mi300",
            15,
            "get-tuple-element.2.0",
            "%get-tuple-element.2.0 = bf16[1,5120,34,31,53]{4,3,2,1,0} get-tuple-element((bf16[1,5120,34,31,53]"
            "{4,3,2,1,0}, u8[7150336]{0}) %cudnn-conv.1), index=0",
        ),
    ],
)
def test_text_is_what_xla_prints(key: str, program: int, name: str, expected: str) -> None:
    module = modules(key)[program]
    assert instruction_text(module, module.instruction(name)) == expected  # XLA


def test_the_mi300_convolution_custom_call_decodes_in_full() -> None:
    module = modules("mi300")[15]
    conv = module.instruction("cudnn-conv.1")
    assert conv.shape.is_tuple and [s.text() for s in conv.shape.tuple_shapes] == [
        "bf16[1,5120,34,31,53]{4,3,2,1,0}",
        "u8[7150336]{0}",
    ]
    assert conv.shape.tuple_shapes[0].byte_size == 2 * 5120 * 34 * 31 * 53
    assert conv.shape.byte_size == 2 * 5120 * 34 * 31 * 53 + 7150336
    assert conv.custom_call_target == "__cudnn$convForward"
    assert [o.name for o in conv.operands] == ["bitcast.12.0", "bitcast.14.0"]
    assert [(d.size, d.stride, d.padding_low, d.padding_high) for d in conv.window] == [
        (1, 1, 1, 1),
        (2, 2, 1, 1),
        (2, 2, 1, 1),
    ]
    dnums = conv.convolution_dimension_numbers
    assert dnums is not None and (dnums.input_batch, dnums.input_feature, dnums.input_spatial) == (
        0,
        1,
        (2, 3, 4),
    )
    assert (dnums.kernel_output_feature, dnums.kernel_input_feature, dnums.kernel_spatial) == (
        0,
        1,
        (2, 3, 4),
    )
    assert (conv.feature_group_count, conv.batch_group_count) == (1, 1)
    assert '"workspace_size":"7150336"' in conv.backend_config
    meta = conv.metadata
    assert (meta.op_name, meta.source_file, meta.source_line) == (
        "jit(forward_3d_conv)/conv_general_dilated",
        "/workspace/traces/generate_conv_trace.py",
        23,
    )
    text = instruction_text(module, conv)
    assert ", window={size=1x2x2 stride=1x2x2 pad=1_1x1_1x1_1}, dim_labels=bf012_oi012->bf012, " in text
    fusion = module.instruction("input_transpose_fusion")
    assert (fusion.fusion_kind, fusion.fused_computation.name) == ("kInput", "fused_transpose")
    assert fusion.fused_computation.is_fusion and fusion.fused_computation.root.opcode == "transpose"
    assert module.instruction("transpose.5.1").dimensions == (1, 0)


def test_layouts_tiles_and_memory_spaces() -> None:
    copy_start = modules("tpu")[-6255983156473747731].instruction("copy-start")
    dest, source, context = copy_start.shape.tuple_shapes
    assert dest.layout.minor_to_major == (3, 2, 1, 0) and dest.layout.tiles == ((8, 128),)
    assert (source.layout.memory_space, context.layout.memory_space, context.element_type) == (5, 2, "u32")


def test_constants_literals() -> None:
    assert modules("cpu")[4].instruction("constant.0").literal[1] == [32]
    assert modules("mi300")[9].instruction("constant_141_2").literal[1] == [-0.99609375]  # bf16
    big = [i for i in modules("mi300")[9].instructions() if i.opcode == "constant" and i.shape.elements > 10]
    assert all(i.literal is None and "constant({...})" in instruction_text(i.module, i) for i in big)


def test_synthetic_ops_print_as_xla_does() -> None:
    module = HloModule(synthetic_ops())
    text = {i.name: instruction_text(module, i) for i in module.instructions()}
    assert text["dot.1"] == (  # XLA
        "%dot.1 = f32[4,32,16]{2,1,0} dot(f32[4,32,64]{2,1,0} %a, f32[4,64,16]{2,1,0} %b), lhs_batch_dims={0}, "
        "lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"
    )
    assert text["conv.1"] == (  # XLA
        "%conv.1 = f32[2,9,11,8]{3,2,1,0} convolution(f32[2,17,19,6]{3,2,1,0} %image, f32[3,3,6,8]{3,2,1,0} "
        "%kernel), window={size=3x3 stride=2x2 pad=1_1x2_2}, dim_labels=b01f_01io->b01f"
    )
    assert (
        text["slice.1"]
        == "%slice.1 = f32[50,16]{1,0} slice(f32[100,32]{1,0} %wide), slice={[0:100:2], [0:16:1]}"
    )
    assert text["zero"] == "%zero = f32[] constant(0)"
    assert (
        text["pad.1"]
        == "%pad.1 = f32[202,32]{1,0} pad(f32[100,32]{1,0} %wide, f32[] %zero), padding=1_2_1x0_0_0"
    )
    assert text["less.1"] == (
        "%less.1 = pred[100,32]{1,0} compare(f32[100,32]{1,0} %wide, f32[100,32]{1,0} %wide), direction=LT, type=TOTALORDER"
    )
    assert text["sum.1"] == (
        "%sum.1 = f32[100]{0} reduce(f32[100,32]{1,0} %wide, f32[] %zero), dimensions={1}, to_apply=%add"
    )
    assert text["cumsum.1"] == (
        "%cumsum.1 = f32[100,32]{1,0} reduce-window(f32[100,32]{1,0} %wide, f32[] %zero), "
        "window={size=1x63 pad=0_0x31_31}, to_apply=%add"
    )


def test_modules_decode_lazily_and_once() -> None:
    table = modules("mi300")
    assert (
        table[15] is table[15] and len(table) == len(protos("mi300")) and set(table) == set(protos("mi300"))
    )
    module = HloModule(protos("mi300")[15])
    assert module.name == "jit_forward_3d_conv" and module.entry_computation_name == "main.0_spmd"
    pending = [c for c in module.computations.values() if c._instructions is None]
    assert len(pending) == len(module.computations)  # the header read no instruction
    fused = module.computations[4]
    assert [i.opcode for i in fused.instructions] == ["parameter", "bitcast", "transpose"]
    assert [c.id for c in module.computations.values() if c._instructions is None] == [5, 6, 3]
    assert (
        module.instruction("cudnn-conv.1").shape
        is module.instruction("get-tuple-element.2.0").operands[0].shape
    )


def test_damaged_or_foreign_bytes_decode_to_what_is_readable() -> None:
    data = protos("mi300")[15]
    assert HloModule(data[: len(data) // 2]).computations == {}  # the module message is cut short
    assert HloModule(b"\xff\xff\xff").computations == {}
    empty = HloModule(hlo_proto([], entry=0))
    assert (empty.computations, empty.entry, empty.instruction("x")) == ({}, None, None)


def test_a_module_of_100k_instructions_decodes_whole() -> None:
    """Its speed is measured by benchmarks/bench_hlo.py, not here (no timed unit tests)."""
    count, f32 = 100_000, shape(F32, (128, 128))
    meta = field(7, field(1, b"add") + field(2, b"jit(f)/add") + field(3, b"/x.py") + field(4, 3))
    body = [instruction("p0", "parameter", f32, 0)]
    body += [
        instruction(f"add.{i}", "add", f32, i, [i - 1, max(i - 2, 0)], extra=meta) for i in range(1, count)
    ]
    data = hlo_proto([computation("main", 1, body, count - 1)], entry=1)
    module = HloModule(data)
    module.load_all()
    elements = sum(i.shape.elements for i in module.entry.instructions)
    edges = sum(len(i.operands) for i in module.entry.instructions)
    assert (elements, edges) == (count * 128 * 128, 2 * (count - 1))
    assert instruction_text(module, module.instruction("add.7")).startswith(
        "%add.7 = f32[128,128]{1,0} add(f32[128,128]{1,0} %add.6, f32[128,128]{1,0} %add.5), metadata={op_type"
    )


def test_threads_sharing_a_module_see_one_complete_decoding() -> None:
    """The server's request threads share modules: each computation is decoded once, and no thread
    sees a computation whose instructions are set but whose id table is not yet."""
    import sys
    import threading

    module = HloModule(protos("mi300")[9])
    names = [ins.name for ins in HloModule(protos("mi300")[9]).instructions()]
    barrier = threading.Barrier(8)
    seen: list[list[int]] = []

    def look() -> None:
        barrier.wait()
        found = [module.instruction(name) for name in names]
        assert None not in found
        by_id = [len(c.by_id) == len(c.instructions) for c in module.computations.values()]
        assert all(by_id)
        seen.append([id(ins) for ins in found])

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=look) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert len(seen) == 8 and all(s == seen[0] for s in seen)
