"""The buffer assignment an HloProto carries: where XLA put every buffer of one program.

XLA's `BufferAssignment` of a compiled program, serialized beside its module (HloProto field 3), is
what XProf's memory viewer reads; we decode the same fields, in bulk with `common.wire.scan`
(field numbers from XLA's `xla/service/hlo.proto`):

- BufferAssignmentProto: 1 logical_buffers, 2 buffer_aliases, 3 buffer_allocations,
  4 heap_simulator_traces.
- LogicalBufferProto: 1 id, 2 size, 3 defined_at, 4 color. Location: 4 instruction_id,
  3 shape_index (packed), 2 instruction_name (deprecated: the id is read).
- BufferAllocationProto: 1 index, 2 size, 3 is_thread_local, 11 is_tuple,
  5 is_entry_computation_parameter, 12 is_constant, 6 parameter_number, 7 maybe_live_out,
  8 color, 9 assigned. Assigned: 1 logical_buffer_id, 2 offset, 3 size.
- HeapSimulatorTrace: 1 events, 2 whole_module_simulation, 3 buffer_allocation_index.
  Event: 1 kind (0 ALLOC, 1 FREE, 2 SHARE_WITH), 2 buffer_id, 3 computation_name,
  4 instruction_name, 5 share_with_canonical_id.

A logical buffer is one value an instruction defines (one leaf of its shape, named by the shape
index); an allocation is one contiguous block the runtime reserves, holding the logical buffers
assigned to it at offsets; a heap simulator trace is the order in which the buffers of the
temporary allocations are allocated and freed as the program runs (its events are in program
order: the schedule of the instructions).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.formats.common import wire

ALLOC, FREE, SHARE_WITH = 0, 1, 2
_V, _L = wire.VARINT, wire.LEN


@dataclasses.dataclass(frozen=True)
class LogicalBuffers:
    """Every logical buffer of the program, as columns (one row per buffer, in proto order)."""

    id: np.ndarray  # int64
    size: np.ndarray  # int64 bytes, as assigned (layout padding included)
    color: np.ndarray  # int64 memory space (0: the device's default memory)
    instruction_id: np.ndarray  # int64 id of the HLO instruction that defines it
    shape_index: list[tuple[int, ...]]  # where in that instruction's (tuple) shape it sits

    def __len__(self) -> int:
        return int(self.id.shape[0])


@dataclasses.dataclass(frozen=True)
class Allocation:
    """One buffer allocation and the logical buffers assigned to it (`buffer_ids`, `offsets`)."""

    index: int
    size: int
    color: int
    is_thread_local: bool
    is_tuple: bool
    is_entry_computation_parameter: bool
    is_constant: bool
    maybe_live_out: bool
    parameter_number: int
    buffer_ids: np.ndarray  # int64
    offsets: np.ndarray  # int64

    @property
    def lives_whole_program(self) -> bool:
        """Held for the whole run (parameters, outputs, constants): its buffers are not in the heap
        simulation. Thread-local allocations are neither: each thread's scratch (on its stack), not
        the program's heap."""
        return self.is_entry_computation_parameter or self.is_constant or self.maybe_live_out


@dataclasses.dataclass(frozen=True)
class HeapTrace:
    """One heap simulation: its events in program order, as columns."""

    kind: np.ndarray  # int64 ALLOC / FREE / SHARE_WITH
    buffer_id: np.ndarray  # int64
    share_with: np.ndarray  # int64 canonical buffer of a SHARE_WITH, else 0
    instruction: list[str]  # the instruction being scheduled at that event
    allocation_index: int

    def __len__(self) -> int:
        return int(self.kind.shape[0])


@dataclasses.dataclass(frozen=True)
class BufferAssignment:
    buffers: LogicalBuffers
    allocations: list[Allocation]
    traces: list[HeapTrace]


def _children(buf: np.ndarray, start: int, end: int, numbers: tuple[int, ...]) -> dict[int, tuple]:
    """(start, end) arrays of every occurrence of the given LEN fields of one message."""
    scan = wire.scan(buf, np.array([start]), np.array([end]), {n: _L for n in numbers}, repeated=numbers)
    return {n: (scan.blocks[n][1], scan.blocks[n][1] + scan.blocks[n][2]) for n in numbers}


def _texts(data: bytes, starts: np.ndarray, lengths: np.ndarray) -> list[str]:
    cache: dict[bytes, str] = {}
    out = []
    for s, n in zip(starts.tolist(), lengths.tolist()):
        raw = data[s : s + n] if n > 0 else b""
        if raw not in cache:
            cache[raw] = raw.decode("utf-8", "replace")
        out.append(cache[raw])
    return out


def _packed(data: bytes, start: int, length: int) -> tuple[int, ...]:
    out, pos, end = [], start, start + max(length, 0)
    while pos < end:
        value, pos = wire.read_varint(data, pos, end)
        out.append(wire.as_int64(value))
    return tuple(out)


def _logical_buffers(data: bytes, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> LogicalBuffers:
    scan = wire.scan(buf, starts, ends, {1: _V, 2: _V, 3: _L, 4: _V})
    loc_start, loc_len = scan.text_range(3)
    where = wire.scan(buf, loc_start, loc_start + np.maximum(loc_len, 0), {4: _V, 3: _L})
    index_start, index_len = where.text_range(3)
    shape_index = [
        _packed(data, s, n) if n > 0 else () for s, n in zip(index_start.tolist(), index_len.tolist())
    ]
    return LogicalBuffers(scan.signed(1), scan.signed(2), scan.signed(4), where.signed(4), shape_index)


def _allocations(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[Allocation]:
    fields = {1: _V, 2: _V, 3: _V, 5: _V, 6: _V, 7: _V, 8: _V, 11: _V, 12: _V, 9: _L}
    scan = wire.scan(buf, starts, ends, fields, repeated=(9,))
    owner, a_start, a_len = scan.blocks[9]
    assigned = wire.scan(buf, a_start, a_start + a_len, {1: _V, 2: _V})
    ids, offsets = assigned.signed(1), assigned.signed(2)
    cols = {n: scan.signed(n).tolist() for n in fields if n != 9}
    out = []
    for i in range(scan.count):
        mine = owner == i
        out.append(
            Allocation(
                index=cols[1][i],
                size=cols[2][i],
                color=cols[8][i],
                is_thread_local=bool(cols[3][i]),
                is_tuple=bool(cols[11][i]),
                is_entry_computation_parameter=bool(cols[5][i]),
                is_constant=bool(cols[12][i]),
                maybe_live_out=bool(cols[7][i]),
                parameter_number=cols[6][i],
                buffer_ids=ids[mine],
                offsets=offsets[mine],
            )
        )
    return out


def _traces(data: bytes, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[HeapTrace]:
    scan = wire.scan(buf, starts, ends, {1: _L, 3: _V}, repeated=(1,))
    owner, e_start, e_len = scan.blocks[1]
    events = wire.scan(buf, e_start, e_start + e_len, {1: _V, 2: _V, 4: _L, 5: _V})
    kind, buffer_id, share = events.signed(1), events.signed(2), events.signed(5)
    names = _texts(data, *events.text_range(4))
    allocation = scan.signed(3, default=-1).tolist()
    out = []
    for i in range(scan.count):
        mine = np.flatnonzero(owner == i)
        out.append(
            HeapTrace(
                kind[mine], buffer_id[mine], share[mine], [names[j] for j in mine.tolist()], allocation[i]
            )
        )
    return out


def buffer_assignment(data: bytes) -> BufferAssignment | None:
    """The buffer assignment of a serialized HloProto; None when it carries none."""
    buf = wire.padded(data)
    start, length = (
        int(a[0]) for a in wire.scan(buf, np.array([0]), np.array([len(data)]), {3: _L}).text_range(3)
    )
    if length < 0:
        return None
    parts = _children(buf, start, start + length, (1, 3, 4))
    return BufferAssignment(
        buffers=_logical_buffers(data, buf, *parts[1]),
        allocations=_allocations(buf, *parts[3]),
        traces=_traces(data, buf, *parts[4]),
    )
