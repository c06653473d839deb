"""XProf's allocation timeline of one XLA program: the heap's buffers as boxes over program order.

XProf's memory_viewer (`ConvertAllocationTimeline` in xprof/convert/
hlo_proto_to_memory_visualization_utils.cc; its answer's `bufferBlocks`) draws, for memory space c,
each temporary allocation that owns a heap-simulator trace as a band, and in it each buffer of the
heap simulation as a box. The same here, from the simulation program.py runs (docs/MEMORY.md,
"Allocation timeline"), equal to xprof 2.24.2's `bufferBlocks` on every program checked:

- **bands**: the allocations of color c that are neither whole-program (parameter, output, constant)
  nor thread-local and own a trace (the trace whose first event's buffer they hold; a later trace
  wins, as in XProf), in allocation order, stacked: base(a) = Σ sizes of the bands before it. The x
  range is 0 … events, events = the most events of their traces.
- **span** of a buffer, in event indices of the simulated trace (program.py's `_Heap.span`): a
  buffer that takes bytes at event i (an ALLOC, or a SHARE_WITH taking back bytes no buffer holds)
  spans [i, last event] until the first free that ends it: the FREE dropping the canonical
  buffer's last reference ends the canonical's span, a sharer's own FREE ends the sharer's.
- **boxes**: the buffers assigned to a band that have a span, in the band's assignment order.
  x = [span start, span end], y = base(band) + the buffer's offset in its allocation, height = the
  logical buffer's size. A box is **at the peak** when its buffer holds the bytes of a canonical
  buffer live after the peak's event (program.py's live rows); those add up to the temporary peak.
- **bound**: at most TIMELINE_BOXES boxes: those of the live table's rows, then the largest by
  drawn area (size × max(1, span width)), earlier first on ties; `boxes` counts all and
  `left_out_bytes` sums the sizes of the boxes not listed.

XProf's source as of August 2026 reads otherwise in two places: it skips sharers' boxes and lets a
later free stretch the canonical's box over the time another buffer held its bytes. xprof 2.24.2's
answers (tests/data/memory/xprof) draw the sharers and end the canonical at its first free; we
follow the answers. Their boxes over an event add up to the heap after it except where a sharer's
own free ends its box while another sharer still holds the bytes (a few events of the JAX
programs' loops, 16 bytes; never at a peak checked). XProf walks the allocations in a hash map's order
and indexes its stacked bases by every temporary allocation, with or without a trace (misplacing
the bands after one without); we stack only bands, in index order. Its canvas draws every box.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from profscope.formats.hlo.buffers import Allocation, BufferAssignment, HeapTrace, LogicalBuffers
from profscope.tools.memory.answers import ProgramTimeline, TimelineBand

if TYPE_CHECKING:
    from profscope.formats.hlo.proto import HloInstruction, Shape


class _Heap(Protocol):
    """What the timeline reads of the heap simulation's final state (program.py `_Heap`)."""

    size: dict[int, int]
    span: dict[int, list[int]]


class _Describe(Protocol):
    """What the timeline reads of program.py's buffer rows (`_Describe`)."""

    buffers: LogicalBuffers
    row: dict[int, int]

    def shape(self, buffer: int) -> tuple[Shape | None, HloInstruction | None]: ...

    def unpadded(self, buffer: int) -> int: ...


TIMELINE_BOXES = 2000


def bands(
    assignment: BufferAssignment, color: int, owner: dict[int, Allocation]
) -> list[tuple[Allocation, HeapTrace]]:
    """The temporary allocations of `color` that own a heap-simulator trace, with it, by index."""
    own: dict[int, HeapTrace] = {}
    for trace in assignment.traces:
        first = owner.get(int(trace.buffer_id[0])) if len(trace) else None
        if first is not None:
            own[first.index] = trace
    return [
        (a, own[a.index])
        for a in sorted(assignment.allocations, key=lambda a: a.index)
        if a.color == color and not a.lives_whole_program and not a.is_thread_local and a.index in own
    ]


def timeline(
    assignment: BufferAssignment,
    color: int,
    owner: dict[int, Allocation],
    heap: _Heap,
    at_peak: set[int],
    keep: set[int],
    describe: _Describe,
) -> ProgramTimeline | None:
    """The boxes of the simulated trace's buffers (`heap`: its state after the last event), or None
    when no band owns a trace. `at_peak`: the buffers holding a canonical buffer's bytes at the peak
    (the live rows'); `keep`: buffers kept whatever the bound (the live table's)."""
    found = bands(assignment, color, owner)
    if not found:
        return None
    base = 0
    placed: list[TimelineBand] = []
    boxes: list[tuple[int, int, int, int]] = []  # buffer, band, offset, size
    for allocation, _ in found:
        placed.append(TimelineBand(allocation=allocation.index, base_bytes=base, size_bytes=allocation.size))
        for buffer, offset in zip(allocation.buffer_ids.tolist(), allocation.offsets.tolist()):
            if buffer in heap.span:
                boxes.append((buffer, len(placed) - 1, offset, heap.size[buffer]))
        base += allocation.size
    kept = _bounded(boxes, heap, keep)
    shown = [box for i, box in enumerate(boxes) if i in kept]
    described = [describe.shape(buffer) for buffer, *_ in shown]
    indices = [describe.buffers.shape_index[describe.row[buffer]] for buffer, *_ in shown]
    return ProgramTimeline(
        events=max(len(trace) for _, trace in found),
        bands=placed,
        height_bytes=base,
        boxes=len(boxes),
        left_out_bytes=sum(b[3] for b in boxes) - sum(b[3] for b in shown),
        buffer_id=[b[0] for b in shown],
        band=[b[1] for b in shown],
        offset_bytes=[b[2] for b in shown],
        size_bytes=[b[3] for b in shown],
        unpadded_bytes=[describe.unpadded(b[0]) for b in shown],
        start=[heap.span[b[0]][0] for b in shown],
        end=[heap.span[b[0]][1] for b in shown],
        at_peak=[b[0] in at_peak for b in shown],
        instruction=[
            _name(describe, b[0], ins, index) for b, (_, ins), index in zip(shown, described, indices)
        ],
        shape=[shape.text() if shape else "" for shape, _ in described],
        dtype=[shape.element_type if shape else "" for shape, _ in described],
        op_name=[ins.metadata.op_name if ins else "" for _, ins in described],
    )


def _name(describe: _Describe, buffer: int, ins: HloInstruction | None, index: tuple[int, ...]) -> str:
    """The defining instruction with the buffer's shape index, as XProf names a box (`fusion{0}`)."""
    name = ins.name if ins else f"(instruction {int(describe.buffers.instruction_id[describe.row[buffer]])})"
    return name + ("{" + ",".join(map(str, index)) + "}" if index else "")


def _bounded(boxes: list[tuple[int, int, int, int]], heap: _Heap, keep: set[int]) -> set[int]:
    """Indices of the boxes shown (module docstring: the kept ones, then the largest drawn area)."""
    if len(boxes) <= TIMELINE_BOXES:
        return set(range(len(boxes)))
    shown = {i for i, b in enumerate(boxes) if b[0] in keep}

    def area(i: int) -> int:
        start, end = heap.span[boxes[i][0]]
        return boxes[i][3] * max(1, end - start)

    rest = sorted((i for i in range(len(boxes)) if i not in shown), key=lambda i: (-area(i), i))
    return shown | set(rest[: max(0, TIMELINE_BOXES - len(shown))])
