"""A lazy, typed view of the serialized `HloProto` an XSpace carries for each XLA program.

`HloModules(xplane.hlo.hlo_protos(raw))[program_id]` (or `HloModule(data)`) reads the header and
where each computation's instructions are; a computation's instructions decode on first use
(`load_all()` decodes all pending ones in one numpy batch), attributes when asked for, each distinct
shape encoding once. Operand and called-computation ids are read packed, as protobuf writes them.
No protobuf runtime: `common.wire` and these field numbers of XLA's `xla/service/hlo.proto` and
`xla/xla_data.proto`:

- HloProto 1 hlo_module. HloModuleProto: 1 name, 2 entry_computation_name, 3 computations, 5 id,
  6 entry_computation_id. HloComputationProto: 1 name, 2 instructions, 5 id, 6 root_id,
  7 is_fusion_computation, 8 execution_thread.
- HloInstructionProto: 1 name, 2 opcode, 3 shape, 7 metadata, 8 literal, 9 parameter_number,
  11 fusion_kind, 13 tuple_index, 14 dimensions, 15 window, 16 convolution_dimension_numbers,
  17 slice_dimensions, 20 dynamic_slice_sizes, 21 padding_config, 26 channel_id, 28 custom_call_target,
  30 dot_dimension_numbers, 31 fft_type, 32 fft_length, 33 gather_dimension_numbers,
  34 gather_slice_sizes, 35 id, 36 operand_ids, 37 control_predecessor_ids, 38 called_computation_ids,
  43 backend_config, 48 scatter_dimension_numbers, 49 replica_groups, 50 feature_group_count,
  51 precision_config, 52 source_target_pairs, 58 batch_group_count, 60 is_stable,
  63 comparison_direction, 65 custom_call_has_side_effect, 67 indices_are_sorted,
  68 frontend_attributes, 69 unique_indices, 70 rng_algorithm, 71 use_global_device_ids,
  72 comparison_type, 77 custom_call_api_version, 87 collective_device_list.
- ShapeProto: 2 element_type, 3 dimensions, 4 tuple_shapes, 5 layout, 6 is_dynamic_dimension.
  LayoutProto: 1 minor_to_major, 6 tiles (TileProto 1 dimensions), 7 element_size_in_bits, 8 memory_space.
- OpMetadata: 1 op_type, 2 op_name, 3 source_file, 4 source_line, 12 deduplicated_name,
  15 stack_frame_id, 16 scheduling_name, 17 source_end_line, 18 source_column, 19 source_end_column.
- LiteralProto: 2 preds, 3 u8s, 4 s32s, 5 s64s, 6 u32s, 7 u64s, 8 f32s, 9 f64s, 11 f16s, 13 bf16s,
  15 s8s, 16 u16s, 17 s16s (complex, f8, sub-byte and tuple literals are not decoded).
- Window 1 dimensions. WindowDimension: 1 size, 2 stride, 3 padding_low, 4 padding_high,
  5 window_dilation, 6 base_dilation, 7 window_reversal. SliceDimensions: 1 start, 2 limit, 3 stride.
  PaddingConfig 1 dimensions: 1 edge_padding_low, 2 edge_padding_high, 3 interior_padding.
- ConvolutionDimensionNumbers (…_dimension(s)): 7 input_batch, 8 input_feature, 11 input_spatial,
  3 kernel_input_feature, 4 kernel_output_feature, 6 kernel_spatial, 9 output_batch, 10 output_feature,
  12 output_spatial. DotDimensionNumbers (…_dimensions): 1 lhs_contracting, 2 rhs_contracting,
  3 lhs_batch, 4 rhs_batch.
- GatherDimensionNumbers: 1 offset_dims, 2 collapsed_slice_dims, 3 start_index_map, 4 index_vector_dim,
  5 operand_batching_dims, 6 start_indices_batching_dims. ScatterDimensionNumbers: 1 update_window_dims,
  2 inserted_window_dims, 3 scatter_dims_to_operand_dims, 4 index_vector_dim, 5 input_batching_dims,
  6 scatter_indices_batching_dims.
- PrecisionConfig 1 operand_precision. ReplicaGroup 1 replica_ids. CollectiveDeviceListProto:
  1 replica_groups, 2 iota list (1 num_replica_groups, 2 num_devices_per_group, 3 iota_reshape_dims,
  4 iota_transpose_perm). SourceTarget: 1 source, 2 target. FrontendAttributes 1 map (1 key, 2 value).

The HLO text printer is `text.instruction_text`.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

import numpy as np

from profscope.formats.common import wire

_TYPE_NAMES = {
    1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32", 9: "u64",
    10: "f16", 11: "f32", 12: "f64", 13: "tuple", 14: "opaque", 15: "c64", 16: "bf16", 17: "token",
    18: "c128", 19: "f8e5m2", 20: "f8e4m3fn", 21: "s4", 22: "u4", 23: "f8e4m3b11fnuz",
    24: "f8e5m2fnuz", 25: "f8e4m3fnuz", 26: "s2", 27: "u2", 28: "f8e4m3", 29: "f8e3m4", 30: "s1",
    31: "u1", 32: "f4e2m1fn", 33: "f8e8m0fnu", 34: "buffer",
}  # fmt: skip
# Storage bits per element (XLA's primitive_util::BitWidth; every f8 type is 8).
BIT_WIDTHS = {"pred": 8, "c64": 64, "c128": 128, "s1": 1, "u1": 1, "s2": 2, "u2": 2, "s4": 4, "u4": 4}
BIT_WIDTHS.update({"f4e2m1fn": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "f16": 16, "bf16": 16})
BIT_WIDTHS.update({"s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64, "f64": 64})
BIT_WIDTHS.update({name: 8 for name in _TYPE_NAMES.values() if name.startswith("f8")})
NOT_ARRAYS = frozenset({"tuple", "opaque", "token", "buffer", "invalid"})


@dataclasses.dataclass(frozen=True)
class Layout:
    minor_to_major: tuple[int, ...]
    tiles: tuple[tuple[int, ...], ...] = ()
    element_size_in_bits: int = 0
    memory_space: int = 0


@dataclasses.dataclass(frozen=True)
class Shape:
    """An array (element type, dimensions, optional layout) or a tuple of shapes."""

    element_type: str
    dimensions: tuple[int, ...] = ()
    tuple_shapes: tuple[Shape, ...] = ()
    layout: Layout | None = None
    dynamic: tuple[bool, ...] = ()

    @property
    def is_tuple(self) -> bool:
        return self.element_type == "tuple"

    @property
    def is_array(self) -> bool:
        return self.element_type not in NOT_ARRAYS

    @property
    def elements(self) -> int:
        """Element count of an array (1 for a scalar), 0 for anything else."""
        return math.prod(self.dimensions) if self.is_array else 0

    def leaves(self) -> Iterator[Shape]:
        """The non-tuple shapes inside, depth first (the shape itself when it is no tuple)."""
        if not self.is_tuple:
            yield self
        for sub in self.tuple_shapes:
            yield from sub.leaves()

    @property
    def byte_size(self) -> int:
        """Data bytes: XLA's ByteSizeOfElements for an array, a tuple's leaves summed, else 0."""
        if self.is_tuple:
            return sum(leaf.byte_size for leaf in self.leaves())
        packed = self.layout.element_size_in_bits if self.layout else 0
        bits = packed or -(-BIT_WIDTHS.get(self.element_type, 0) // 8) * 8
        return -(-self.elements * bits // 8)

    def text(self, layout: bool = True) -> str:
        """XLA's ShapeUtil::HumanString(WithLayout): `f32[8,128]{1,0}`, `(f32[2]{0}, s32[])`."""
        if self.is_tuple:
            return (
                "(" + ", ".join(index_note(i) + s.text(layout) for i, s in enumerate(self.tuple_shapes)) + ")"
            )
        if not self.is_array:
            return f"{self.element_type}[]"
        dynamic = self.dynamic + (False,) * len(self.dimensions)
        dims = ",".join(("<=" if dynamic[i] else "") + str(d) for i, d in enumerate(self.dimensions))
        lay = self.layout
        if not layout or lay is None:
            return f"{self.element_type}[{dims}]"
        extra = "".join("T(" + ",".join(map(str, t)) + ")" for t in lay.tiles)
        extra += f"E({lay.element_size_in_bits})" if lay.element_size_in_bits else ""
        extra += f"S({lay.memory_space})" if lay.memory_space else ""
        order = ",".join(map(str, lay.minor_to_major)) + (":" + extra if extra else "")
        return f"{self.element_type}[{dims}]" + (f"{{{order}}}" if order else "")


@dataclasses.dataclass(frozen=True)
class OpMetadata:
    op_type: str = ""
    op_name: str = ""
    source_file: str = ""
    source_line: int = 0
    source_end_line: int = 0
    source_column: int = 0
    source_end_column: int = 0
    deduplicated_name: str = ""
    scheduling_name: str = ""
    stack_frame_id: int = 0


@dataclasses.dataclass(frozen=True)
class WindowDimension:
    size: int
    stride: int
    padding_low: int
    padding_high: int
    window_dilation: int
    base_dilation: int
    window_reversal: bool


@dataclasses.dataclass(frozen=True)
class ConvolutionDimensionNumbers:
    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class DotDimensionNumbers:
    lhs_contracting: tuple[int, ...] = ()
    rhs_contracting: tuple[int, ...] = ()
    lhs_batch: tuple[int, ...] = ()
    rhs_batch: tuple[int, ...] = ()


# The field number of each record field, in declaration order.
_RECORD_FIELDS: dict[type, tuple[int, ...]] = {
    OpMetadata: (1, 2, 3, 4, 17, 18, 19, 12, 16, 15),
    WindowDimension: (1, 2, 3, 4, 5, 6, 7),
    ConvolutionDimensionNumbers: (7, 8, 11, 3, 4, 6, 9, 10, 12),
    DotDimensionNumbers: (1, 2, 3, 4),
}
_R = TypeVar("_R")
_T = TypeVar("_T")


class Fields:
    """A message's fields by number, as (wire type, a, b) (iter_fields); damage ends it quietly."""

    __slots__ = ("data", "entries")

    def __init__(self, data: bytes, start: int, end: int) -> None:
        self.data = data
        self.entries: dict[int, list[tuple[int, int, int]]] = {}
        try:
            for number, wtype, a, b in wire.iter_fields(data, start, end):
                self.entries.setdefault(number, []).append((wtype, a, b))
        except wire.WireError:
            pass

    def _last(self, number: int, wtype: int) -> tuple[int, int] | None:
        found = [(a, b) for wt, a, b in self.entries.get(number, ()) if wt == wtype]
        return found[-1] if found else None

    def int(self, number: int, default: int = 0) -> int:
        found = self._last(number, wire.VARINT)
        return wire.as_int64(found[0]) if found else default

    def ints(self, number: int) -> tuple[int, ...]:
        """A repeated integer field, packed or not."""
        out: list[int] = []
        for wt, pos, end in self.entries.get(number, ()):
            if wt == wire.VARINT:
                out.append(wire.as_int64(pos))
            while wt == wire.LEN and pos < end:
                try:
                    value, pos = wire.read_varint(self.data, pos, end)
                except wire.WireError:
                    break
                out.append(wire.as_int64(value))
        return tuple(out)

    def raw(self, number: int) -> bytes:
        found = self._last(number, wire.LEN)
        return self.data[found[0] : found[1]] if found else b""

    def text(self, number: int) -> str:
        return self.raw(number).decode("utf-8", "replace")

    def __bool__(self) -> bool:
        return bool(self.entries)

    def message(self, number: int) -> Fields:
        """The last occurrence of a message field; an empty (false) one when absent."""
        found = self._last(number, wire.LEN)
        return Fields(self.data, *found) if found else Fields(b"", 0, 0)

    def messages(self, number: int) -> list[Fields]:
        return [Fields(self.data, a, b) for wt, a, b in self.entries.get(number, ()) if wt == wire.LEN]

    def optional(self, number: int, cls: type[_R]) -> _R | None:
        """The record in message field `number`, None when absent."""
        found = self.message(number)
        return found.record(cls) if found else None

    def record(self, cls: type[_R]) -> _R:
        """A record dataclass filled from its `_RECORD_FIELDS`, each read as its declared type."""
        read = {"int": self.int, "str": self.text, "tuple[int, ...]": self.ints}
        read["bool"] = lambda n: bool(self.int(n))
        return cls(*(read[str(f.type)](n) for f, n in zip(dataclasses.fields(cls), _RECORD_FIELDS[cls])))


def _packed_ids(buf: np.ndarray, blocks: tuple[np.ndarray, ...], count: int) -> list:
    """The packed varints of (owner, start, length) byte blocks decoded at once: a tuple per owner."""
    out: list[tuple[int, ...]] = [()] * count
    owner, start, length = blocks
    keep = length > 0
    order = np.argsort(owner[keep], kind="stable")
    owner, start, length = owner[keep][order], start[keep][order], length[keep][order]
    total = int(length.sum())
    if not total:
        return out
    block = np.repeat(np.arange(owner.shape[0]), length)
    block_end = np.cumsum(length)
    byte = buf[start[block] + (np.arange(total) - (block_end - length)[block])].astype(np.uint64)
    last = byte < 0x80
    last[block_end - 1] = True
    first = np.flatnonzero(np.concatenate(([True], last[:-1])))
    varint = np.cumsum(np.concatenate(([0], last[:-1].astype(np.int64))))
    shift = (np.arange(total) - first[varint]).astype(np.uint64) * np.uint64(7)
    values = np.bitwise_or.reduceat((byte & np.uint64(0x7F)) << shift, first).view(np.int64).tolist()
    pos = 0
    for i, n in enumerate(np.bincount(owner[block[first]], minlength=count).tolist()):
        out[i], pos = (tuple(values[pos : pos + n]), pos + n) if n else ((), pos)
    return out


def _decode_shape(fields: Fields) -> Shape:
    lay = fields.message(5)
    tiles = tuple(t.ints(1) for t in lay.messages(6)) if lay else ()
    layout = Layout(lay.ints(1), tiles, lay.int(7), lay.int(8)) if lay else None
    subs = tuple(_decode_shape(sub) for sub in fields.messages(4))
    kind = _TYPE_NAMES.get(fields.int(2), "invalid")
    return Shape(kind, fields.ints(3), subs, layout, tuple(bool(d) for d in fields.ints(6)))


class _Attr(Generic[_T]):
    """An instruction attribute read from one field of the instruction message on access."""

    def __init__(self, number: int, read: Callable[[Fields, int], _T]) -> None:
        self.number, self.read = number, read

    def __get__(self, ins: HloInstruction, owner: type | None = None) -> _T:
        return self.read(ins.fields, self.number)


class HloInstruction:
    """One instruction: ids, name and opcode decoded with its computation, the rest on access."""

    __slots__ = ("computation", "index", "id", "name", "opcode", "operand_ids", "called_computation_ids")
    __slots__ += ("_range", "_shape_range", "_shape", "_fields")
    parameter_number = _Attr(9, Fields.int)
    tuple_index = _Attr(13, Fields.int)
    fusion_kind = _Attr(11, Fields.text)  # "kLoop", "kInput", "kOutput", "kCustom"
    dimensions = _Attr(14, Fields.ints)  # reduce, broadcast, transpose, reverse, concatenate, sort…
    feature_group_count = _Attr(50, lambda f, n: f.int(n) or 1)  # absent means 1
    batch_group_count = _Attr(58, lambda f, n: f.int(n) or 1)
    dynamic_slice_sizes = _Attr(20, Fields.ints)
    custom_call_target = _Attr(28, Fields.text)
    backend_config = _Attr(43, Fields.text)
    comparison_direction = _Attr(63, Fields.text)
    comparison_type = _Attr(72, Fields.text)
    fft_length = _Attr(32, Fields.ints)
    gather_slice_sizes = _Attr(34, Fields.ints)
    control_predecessor_ids = _Attr(37, Fields.ints)
    metadata = _Attr(7, lambda f, n: f.message(n).record(OpMetadata))
    window = _Attr(15, lambda f, n: tuple(d.record(WindowDimension) for d in f.message(n).messages(1)))
    convolution_dimension_numbers = _Attr(16, lambda f, n: f.optional(n, ConvolutionDimensionNumbers))
    dot_dimension_numbers = _Attr(30, lambda f, n: f.optional(n, DotDimensionNumbers))
    # (start, limit, stride) and (edge low, edge high, interior) per dimension.
    slice_dimensions = _Attr(17, lambda f, n: tuple((s.int(1), s.int(2), s.int(3)) for s in f.messages(n)))
    padding_config = _Attr(
        21, lambda f, n: tuple((p.int(1), p.int(2), p.int(3)) for p in f.message(n).messages(1))
    )

    def __init__(self, computation: HloComputation, index: int, values: tuple) -> None:
        self.computation = computation
        self.index = index  # position in the computation (a dependency order)
        self.id, self.name, self.opcode, self.operand_ids, self.called_computation_ids = values[:5]
        self._range, self._shape_range = values[5], values[6]
        self._shape: Shape | None = None
        self._fields: Fields | None = None

    @property
    def module(self) -> HloModule:
        return self.computation.module

    @property
    def shape(self) -> Shape:
        if self._shape is None:
            self._shape = self.module.shape_at(*self._shape_range)
        return self._shape

    @property
    def fields(self) -> Fields:
        """Every field of the instruction message, for attributes without a property here."""
        if self._fields is None:
            self._fields = Fields(self.module.data, *self._range)
        return self._fields

    @property
    def operands(self) -> list[HloInstruction]:
        by_id = self.computation.by_id
        return [by_id[i] for i in self.operand_ids]

    @property
    def users(self) -> list[HloInstruction]:
        return self.computation.users(self)

    @property
    def called_computations(self) -> list[HloComputation]:
        known = self.module.computations
        return [known[i] for i in self.called_computation_ids if i in known]

    @property
    def fused_computation(self) -> HloComputation | None:
        """A fusion's fused computation (its one called computation); None for other opcodes."""
        called = self.called_computations if self.opcode == "fusion" else []
        return called[0] if called else None

    @property
    def is_root(self) -> bool:
        return self.computation.root_id == self.id

    @property
    def literal(self) -> tuple[Shape, list] | None:
        """(shape, values in row-major order) of an array constant of at most 10 elements, else None."""
        found, shape = self.fields.message(8), self.shape
        return _literal_values(found, shape) if found and shape.is_array and shape.elements <= 10 else None


# LiteralProto field and, for the ones stored as bytes or fixed-size numbers, the numpy dtype.
_LITERALS = {"pred": (2, ""), "s32": (4, ""), "s64": (5, ""), "u32": (6, ""), "u64": (7, ""), "u8": (3, "u1")}
_LITERALS.update({"f32": (8, "<f4"), "f64": (9, "<f8"), "f16": (11, "<f2"), "bf16": (13, "<u2")})
_LITERALS.update({"s8": (15, "i1"), "s16": (17, "<i2"), "u16": (16, "<u2")})


def _literal_values(lit: Fields, shape: Shape) -> tuple[Shape, list] | None:
    kind = shape.element_type
    number, dtype = _LITERALS.get(kind, (0, ""))
    if dtype:
        raw = lit.raw(number)
        array = np.frombuffer(raw[: len(raw) - len(raw) % np.dtype(dtype).itemsize], dtype=dtype)
        values = (array.astype(np.uint32) << np.uint32(16)).view(np.float32) if kind == "bf16" else array
        values = values.tolist()
    else:
        convert = {"pred": bool, "u64": lambda v: v % (1 << 64)}.get(kind, int)
        values = [convert(v) for v in lit.ints(number)]
    return (shape, values) if number and len(values) == shape.elements else None


class HloComputation:
    """A computation: its header is read with the module, its instructions on first use."""

    def __init__(self, module: HloModule, header: tuple, ranges: tuple[np.ndarray, np.ndarray]) -> None:
        self.module = module
        self.name, self.id, self.root_id, self.is_fusion, self.execution_thread = header
        self._ranges = ranges  # (start, end) of each instruction message
        self._instructions: list[HloInstruction] | None = None
        self._by_id: dict[int, HloInstruction] = {}
        self._users: dict[int, list[HloInstruction]] | None = None

    @property
    def instructions(self) -> list[HloInstruction]:
        """In the proto's order, which is a dependency order (operands before users)."""
        if self._instructions is None:
            self.module.load([self])
        return self._instructions or []

    @property
    def by_id(self) -> dict[int, HloInstruction]:
        if self._instructions is None:
            self.module.load([self])
        return self._by_id

    @property
    def root(self) -> HloInstruction | None:
        return self.by_id.get(self.root_id)

    @property
    def parameters(self) -> list[HloInstruction]:
        """Parameter instructions by parameter number."""
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda i: i.parameter_number)

    def users(self, instruction: HloInstruction) -> list[HloInstruction]:
        """Instructions of this computation that use `instruction`, each once, in order."""
        if self._users is None:
            users: dict[int, list[HloInstruction]] = {}
            for user in self.instructions:
                for operand in dict.fromkeys(user.operand_ids):
                    users.setdefault(operand, []).append(user)
            self._users = users
        return self._users.get(instruction.id, [])


_INSTRUCTION_FIELDS = {1: wire.LEN, 2: wire.LEN, 3: wire.LEN, 35: wire.VARINT, 36: wire.LEN, 38: wire.LEN}
_COMPUTATION_FIELDS = {1: wire.LEN, 2: wire.LEN, 5: wire.VARINT, 6: wire.VARINT, 7: wire.VARINT, 8: wire.LEN}


class HloModule:
    """One program's module: name, entry computation and computations by id (in proto order).

    A module is shared by the server's request threads: decoding on first use happens under a lock,
    and each lazily built table is assigned only once complete, so a reader never sees half of one.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._lock = threading.Lock()
        self._buf = wire.padded(data)
        self._shapes: dict[bytes, Shape] = {}
        self._by_name: dict[str, HloInstruction] | None = None
        header = Fields(data, 0, len(data)).message(1)  # HloProto.hlo_module
        self.name, self.entry_computation_name = header.text(1), header.text(2)
        self.id, self.entry_computation_id = header.int(5), header.int(6)
        self.computations: dict[int, HloComputation] = {}
        spans = [(a, b) for wt, a, b in header.entries.get(3, ()) if wt == wire.LEN]
        ranges = np.array(spans, dtype=np.int64).reshape(-1, 2)
        scan = wire.scan(self._buf, ranges[:, 0], ranges[:, 1], _COMPUTATION_FIELDS, repeated=(2,))
        names, threads = self._texts(*scan.text_range(1)), self._texts(*scan.text_range(8))
        ids, roots, fusion = scan.signed(5).tolist(), scan.signed(6).tolist(), scan.signed(7).tolist()
        owner, ins_start, ins_len = scan.blocks[2]
        order = np.argsort(owner, kind="stable")
        owner, ins_start, ins_end = owner[order], ins_start[order], (ins_start + ins_len)[order]
        bounds = np.searchsorted(owner, np.arange(ranges.shape[0] + 1)).tolist()
        for c, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
            head = (names[c], ids[c], roots[c], bool(fusion[c]), threads[c])
            self.computations[ids[c]] = HloComputation(self, head, (ins_start[lo:hi], ins_end[lo:hi]))

    def _texts(self, starts: np.ndarray, lengths: np.ndarray) -> list[str]:
        spans = zip(starts.tolist(), np.maximum(lengths, 0).tolist())
        return [self.data[s : s + n].decode("utf-8", "replace") for s, n in spans]

    @property
    def entry(self) -> HloComputation | None:
        return self.computations.get(self.entry_computation_id)

    def shape_at(self, start: int, end: int) -> Shape:
        """The shape encoded at data[start:end], decoded once per distinct encoding."""
        key = self.data[start:end]
        if key not in self._shapes:
            self._shapes[key] = _decode_shape(Fields(self.data, start, end))
        return self._shapes[key]

    def load_all(self) -> None:
        """Decode the instructions of every computation not decoded yet, in one batch."""
        self.load(list(self.computations.values()))

    def load(self, computations: list[HloComputation]) -> None:
        """Decode the instructions of the given computations (those not decoded yet) in one batch."""
        if all(c._instructions is not None for c in computations):
            return
        with self._lock:
            self._load_locked([c for c in computations if c._instructions is None])

    def _load_locked(self, pending: list[HloComputation]) -> None:
        if not pending:
            return
        starts = np.concatenate([c._ranges[0] for c in pending])
        ends = np.concatenate([c._ranges[1] for c in pending])
        scan = wire.scan(self._buf, starts, ends, _INSTRUCTION_FIELDS, repeated=(36, 38))
        operands = _packed_ids(self._buf, scan.blocks[36], starts.shape[0])
        called = _packed_ids(self._buf, scan.blocks[38], starts.shape[0])
        names, opcodes = self._texts(*scan.text_range(1)), self._texts(*scan.text_range(2))
        shape_s, shape_l = (a.tolist() for a in scan.text_range(3))
        ids, spans = scan.signed(35).tolist(), list(zip(starts.tolist(), ends.tolist()))
        row = 0
        for comp in pending:
            made: list[HloInstruction] = []
            for index in range(len(comp._ranges[0])):
                shape_span = (shape_s[row], shape_s[row] + max(shape_l[row], 0))
                decoded = (ids[row], names[row], opcodes[row], operands[row], called[row], spans[row])
                made.append(HloInstruction(comp, index, (*decoded, shape_span)))
                row += 1
            comp._by_id = {i.id: i for i in made}
            comp._instructions = made

    def instructions(self) -> Iterator[HloInstruction]:
        """Every instruction of every computation (decoding all of them)."""
        self.load_all()
        for comp in self.computations.values():
            yield from comp.instructions

    def instruction(self, name: str) -> HloInstruction | None:
        """The instruction of this name in any computation (XLA names are unique in a module)."""
        if self._by_name is None:
            by_name: dict[str, HloInstruction] = {}
            for ins in self.instructions():
                by_name.setdefault(ins.name, ins)
            self._by_name = by_name
        return self._by_name.get(name)


class HloModules(Mapping[int, HloModule]):
    """Serialized HloProtos by program id, each decoded on first lookup and kept."""

    def __init__(self, protos: Mapping[int, bytes]) -> None:
        self._protos = protos
        self._modules: dict[int, HloModule] = {}
        self._lock = threading.Lock()

    def __getitem__(self, program_id: int) -> HloModule:
        module = self._modules.get(program_id)
        if module is None:
            with self._lock:
                module = self._modules.get(program_id)
                if module is None:
                    module = self._modules[program_id] = HloModule(self._protos[program_id])
        return module

    def __iter__(self) -> Iterator[int]:
        return iter(self._protos)

    def __len__(self) -> int:
        return len(self._protos)


def index_note(position: int) -> str:
    """XLA's `/*index=N*/` before every fifth tuple element and operand."""
    return f"/*index={position}*/" if position and position % 5 == 0 else ""
