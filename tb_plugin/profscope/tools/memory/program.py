"""One XLA program's memory as its compiler planned it: the buffer assignment in its HloProto.

Definitions, for one memory space c (an allocation's and a logical buffer's `color`; 0, the
device's default memory, unless asked), as XProf's memory viewer takes them (docs/MEMORY.md):
- whole-program allocations: those of color c that are an entry parameter, a constant or maybe live
  out; they are held for the whole run and are not in the heap simulation. Thread-local allocations
  (a thread's scratch, on its stack) are neither whole-program nor in the heap: left out, as XProf
  2.24 leaves them out.
  whole_program_bytes = Σ their sizes; each is shown by the largest logical buffer assigned to it (an
  allocation without a non-empty buffer is left out, as XProf leaves it out).
- the heap trace: the heap-simulator trace whose first event's buffer is assigned to a temporary
  allocation of color c; failing that, the trace with the most events on buffers of color c.
- temporary(k) = the bytes the heap holds after its first k events: ALLOC adds the buffer's size;
  FREE drops one reference to the buffer's canonical buffer (the one it shares with, else itself)
  and subtracts the canonical's size when none is left; SHARE_WITH makes the buffer share its
  canonical's bytes, adding the canonical's size back when the canonical held no reference.
- heap(k) = whole_program_bytes + temporary(k), k = 0 … events.
- peak_bytes = max_k heap(k); peak_position = the first k reaching it; the peak instruction is the
  one scheduled at event k − 1. Live at the peak: the whole-program allocations and the canonical
  buffers held after k events; their sizes add up to peak_bytes.
- unpadded(b) = elements × element bytes of b's shape, ignoring the layout's tiling and padding (an
  element's bytes rounded up to whole bytes), 8 bytes per element of a tuple (its pointer table).
  padding_bytes = Σ over the live buffers of (size − unpadded); temporary_padding_bytes the same over
  the heap's buffers only, which is XProf's peak heap − peak unpadded heap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import msgspec
import numpy as np

from profscope.formats.hlo.buffers import (
    ALLOC,
    FREE,
    SHARE_WITH,
    Allocation,
    BufferAssignment,
    HeapTrace,
    buffer_assignment,
)
from profscope.formats.hlo.proto import HloInstruction, HloModule, Shape
from profscope.tools.memory import program_timeline, series
from profscope.tools.memory.answers import ProgramBuffer, ProgramHeap, ProgramMemory, ProgramSummary

TABLE_ROWS = 200
TUPLE_ENTRY_BYTES = 8  # a tuple's buffer is its table of pointers
NO_HEAP_TRACE = "no heap simulation for this memory space: only whole-program allocations are counted"


def kind(allocation: Allocation) -> str:
    """What an allocation holds, in XProf's order of precedence (thread-local ones are never shown)."""
    if allocation.is_entry_computation_parameter:
        return "parameter"
    if allocation.maybe_live_out:
        return "output"
    if allocation.is_constant:
        return "constant"
    return "temporary"


def unpadded_bytes(shape: Shape) -> int:
    """Bytes the shape's data needs without layout padding (module docstring)."""
    if shape.is_tuple:
        return TUPLE_ENTRY_BYTES * len(shape.tuple_shapes)
    return dataclasses.replace(shape, layout=None).byte_size


def _subshape(shape: Shape, index: tuple[int, ...]) -> Shape:
    for i in index:
        if not shape.is_tuple or i >= len(shape.tuple_shapes):
            break
        shape = shape.tuple_shapes[i]
    return shape


@dataclasses.dataclass
class _Heap:
    """The heap simulation's running state: references per canonical buffer, sharing, bytes held.
    `live` maps each canonical buffer holding bytes to the buffer that holds them now (the one
    allocated, or the last to share them back), in the order they were taken. `span` is the
    [first, last] event index of each buffer that took bytes (an ALLOC, or a SHARE_WITH taking back
    bytes no one held), as XProf's allocation timeline draws it (program_timeline.py): the trace's
    last event until the first free that ends it."""

    size: dict[int, int]
    last_event: int = 0
    refs: dict[int, int] = dataclasses.field(default_factory=dict)
    canonical: dict[int, int] = dataclasses.field(default_factory=dict)
    live: dict[int, int] = dataclasses.field(default_factory=dict)
    span: dict[int, list[int]] = dataclasses.field(default_factory=dict)
    closed: set[int] = dataclasses.field(default_factory=set)
    held: int = 0

    def root(self, buffer: int) -> int:
        while buffer in self.canonical:
            buffer = self.canonical[buffer]
        return buffer

    def _close(self, buffer: int, event: int) -> None:
        if buffer in self.span and buffer not in self.closed:
            self.span[buffer][1] = event
            self.closed.add(buffer)

    def apply(self, kind: int, buffer: int, share_with: int, event: int) -> None:
        if kind == ALLOC:
            root = self.root(buffer)
            self.refs[root] = self.refs.get(root, 0) + 1
            self.live[root] = buffer
            self.held += self.size.get(buffer, 0)
            self.span[buffer] = [event, self.last_event]
        elif kind == FREE:
            root = self.root(buffer)
            self.refs[root] = self.refs.get(root, 0) - 1
            if self.refs[root] == 0:
                self.live.pop(root, None)
                self.held -= self.size.get(root, 0)
                self._close(root, event)
            if buffer in self.canonical:
                self._close(buffer, event)
        elif kind == SHARE_WITH and share_with in self.size:
            self.canonical[buffer] = share_with
            root = self.root(share_with)
            self.refs[root] = self.refs.get(root, 0) + 1
            if self.refs[root] == 1:
                self.live[root] = buffer
                self.held += self.size[share_with]
                self.span[buffer] = [event, self.last_event]


def _simulate(trace: HeapTrace, size: dict[int, int], stop: int | None = None) -> tuple[np.ndarray, _Heap]:
    """temporary(k) for k = 0 … `stop` (default: every event), and the heap's state at the end."""
    heap = _Heap(size, last_event=len(trace) - 1)
    count = len(trace) if stop is None else stop
    held = np.zeros(count + 1, dtype=np.int64)
    kinds, buffers, shares = (a[:count].tolist() for a in (trace.kind, trace.buffer_id, trace.share_with))
    for k, (kind_, buffer, share) in enumerate(zip(kinds, buffers, shares), start=1):
        heap.apply(kind_, buffer, share, k - 1)
        held[k] = heap.held
    return held, heap


def _heap_trace(assignment: BufferAssignment, color: int, owner: dict[int, Allocation]) -> HeapTrace | None:
    temporary = {
        a.index
        for a in assignment.allocations
        if a.color == color and not a.lives_whole_program and not a.is_thread_local
    }
    for trace in assignment.traces:
        first = owner.get(int(trace.buffer_id[0])) if len(trace) else None
        if first is not None and first.index in temporary:
            return trace
    colors = dict(zip(assignment.buffers.id.tolist(), assignment.buffers.color.tolist()))
    counts = [sum(1 for b in t.buffer_id.tolist() if colors.get(b) == color) for t in assignment.traces]
    best = int(np.argmax(counts)) if counts and max(counts) > 0 else -1
    return assignment.traces[best] if best >= 0 else None


class _Describe:
    """Rows for logical buffers: the defining instruction, its shape at the buffer's index, its kind."""

    def __init__(self, module: HloModule, assignment: BufferAssignment, owner: dict[int, Allocation]) -> None:
        buffers = assignment.buffers
        self.row = {b: i for i, b in enumerate(buffers.id.tolist())}
        self.buffers = buffers
        self.owner = owner
        self.offset = {
            b: o for a in assignment.allocations for b, o in zip(a.buffer_ids.tolist(), a.offsets.tolist())
        }
        self.instructions: dict[int, HloInstruction] = {i.id: i for i in module.instructions()}

    def shape(self, buffer: int) -> tuple[Shape | None, HloInstruction | None]:
        row = self.row[buffer]
        ins = self.instructions.get(int(self.buffers.instruction_id[row]))
        return (_subshape(ins.shape, self.buffers.shape_index[row]) if ins else None), ins

    def unpadded(self, buffer: int) -> int:
        shape = self.shape(buffer)[0]
        return unpadded_bytes(shape) if shape is not None else int(self.buffers.size[self.row[buffer]])

    def buffer(self, buffer: int, size: int) -> ProgramBuffer:
        shape, ins = self.shape(buffer)
        allocation = self.owner[buffer]
        op_name = ins.metadata.op_name if ins else ""
        return ProgramBuffer(
            buffer_id=buffer,
            size_bytes=size,
            unpadded_bytes=self.unpadded(buffer),
            kind=kind(allocation),
            instruction=ins.name
            if ins
            else f"(instruction {int(self.buffers.instruction_id[self.row[buffer]])})",
            opcode=ins.opcode if ins else "",
            shape=shape.text() if shape else "",
            dtype=shape.element_type if shape else "",
            op_name=op_name or msgspec.UNSET,
            allocation=allocation.index,
            offset_bytes=self.offset.get(buffer, 0),
        )


def _whole_program(
    assignment: BufferAssignment, color: int, size: dict[int, int]
) -> list[tuple[Allocation, int]]:
    """(allocation, its largest buffer) of each whole-program allocation of `color`."""
    out = []
    for allocation in assignment.allocations:
        if allocation.color != color or not allocation.lives_whole_program:
            continue
        best, best_size = -1, 0
        for b in allocation.buffer_ids.tolist():
            if size.get(b, 0) > best_size:
                best, best_size = b, size[b]
        if best >= 0:
            out.append((allocation, best))
    return out


def memory_spaces(assignment: BufferAssignment) -> list[int]:
    return sorted({a.color for a in assignment.allocations})


def peak_bytes(assignment: BufferAssignment, color: int = 0) -> int:
    """The program's peak in memory space `color` (the selector's figure), without describing buffers."""
    owner = _owners(assignment)
    size = dict(zip(assignment.buffers.id.tolist(), assignment.buffers.size.tolist()))
    whole = sum(a.size for a, _ in _whole_program(assignment, color, size))
    trace = _heap_trace(assignment, color, owner)
    return whole + (int(_simulate(trace, size)[0].max()) if trace is not None else 0)


def _owners(assignment: BufferAssignment) -> dict[int, Allocation]:
    return {b: a for a in assignment.allocations for b in a.buffer_ids.tolist()}


def unsigned(program_id: int) -> str:
    """A program's key as events and the `program` parameter write it: unsigned decimal."""
    return str(program_id % (1 << 64))


def summaries(host: str, host_index: int, modules: Mapping[int, HloModule]) -> list[ProgramSummary]:
    """The host's programs with a buffer assignment, largest peak (memory space 0) first."""
    out = []
    for program_id in modules:
        module = modules[program_id]
        assignment = buffer_assignment(module.data)
        if assignment is None:
            continue
        peak = peak_bytes(assignment)
        out.append(
            ProgramSummary(
                host=host,
                host_index=host_index,
                program_id=unsigned(program_id),
                name=module.name,
                peak_bytes=peak,
            )
        )
    return sorted(out, key=lambda s: (-s.peak_bytes, s.name))


def program_memory(
    host: tuple[str, int], program_id: int, module: HloModule, assignment: BufferAssignment, color: int = 0
) -> ProgramMemory:
    """The compiler's view of one program in memory space `color` (module docstring)."""
    owner = _owners(assignment)
    size = dict(zip(assignment.buffers.id.tolist(), assignment.buffers.size.tolist()))
    describe = _Describe(module, assignment, owner)
    whole = _whole_program(assignment, color, size)
    whole_bytes = sum(a.size for a, _ in whole)
    trace = _heap_trace(assignment, color, owner)
    held, final = _simulate(trace, size) if trace is not None else (np.zeros(1, dtype=np.int64), None)
    at = int(np.argmax(held))
    live_heap = list(_simulate(trace, size, at)[1].live.items()) if trace is not None else []
    rows = [describe.buffer(b, a.size) for a, b in whole]
    heap_rows = [describe.buffer(holder, size[root]) for root, holder in live_heap]
    rows += heap_rows
    by_kind: dict[str, int] = {}
    for row in rows:
        by_kind[row.kind] = by_kind.get(row.kind, 0) + row.size_bytes
    temp_padding = sum(size[root] - describe.unpadded(holder) for root, holder in live_heap)
    whole_padding = sum(a.size - describe.unpadded(b) for a, b in whole)
    ordered = sorted(rows, key=lambda r: -r.size_bytes)
    shown = ordered[:TABLE_ROWS]
    boxes = None
    if final is not None:
        holders = {holder for _, holder in live_heap}
        keep = {r.buffer_id for r in shown if r.buffer_id in holders}
        boxes = program_timeline.timeline(assignment, color, owner, final, holders, keep, describe)
    if boxes is not None:
        box_of = {b: i for i, b in enumerate(boxes.buffer_id)}
        for row in heap_rows:
            if row.buffer_id in box_of:
                row.timeline_box = box_of[row.buffer_id]
    mine = [a for a in assignment.allocations if a.color == color]
    return ProgramMemory(
        host=host[0],
        host_index=host[1],
        program_id=unsigned(program_id),
        name=module.name,
        memory_space=color,
        memory_spaces=memory_spaces(assignment),
        peak_bytes=whole_bytes + int(held[at]),
        peak_position=at,
        peak_instruction=trace.instruction[at - 1] if trace is not None and at > 0 else msgspec.UNSET,
        whole_program_bytes=whole_bytes,
        temporary_peak_bytes=int(held[at]),
        padding_bytes=temp_padding + whole_padding,
        temporary_padding_bytes=temp_padding,
        bytes_by_kind=by_kind,
        allocations=len(mine),
        allocation_bytes=sum(a.size for a in mine),
        heap=_heap_series(held + whole_bytes, trace.instruction if trace is not None else []),
        heap_reason=NO_HEAP_TRACE if trace is None else msgspec.UNSET,
        timeline=boxes if boxes is not None else msgspec.UNSET,
        live_at_peak=shown,
        live_at_peak_count=len(rows),
        live_at_peak_bytes=sum(r.size_bytes for r in rows),
    )


def _heap_series(values: np.ndarray, instructions: Iterable[str]) -> ProgramHeap:
    names = list(instructions)
    keep = series.downsample(values).tolist()
    return ProgramHeap(
        position=keep,
        bytes=values[keep].tolist(),
        instruction=[names[k - 1] if k > 0 else "" for k in keep],
        events=int(values.shape[0]) - 1,
    )
