"""Each allocator's peak of one host and the ops that hold it, as the Compare tab sets two runs side
by side (the same figures as the Memory tab's, from the same records: `memory_records` for Kineto's
`[memory]` events, `memory_xplane_records` for an XPlane's allocator events, `memory_pairing`).

Per allocator (device):
- peak = the highest `Total Allocated` (`bytes_allocated`), first reached at the peak event; its step
  is the step whose window holds that event, its op the op the event names itself, else the
  innermost host op enclosing it (the Memory tab's `peak`);
- peak reserved = the highest `Total Reserved` over the capture; absent ("not observed") when an
  event lacks it or every event reports 0 (the Memory tab's rule for drawing reserved);
- the ops holding the peak: the allocations of the capture live at the peak event (allocated at or
  before it, freed after it or never), summed by their op's name (the Memory tab's op table's
  `peak_bytes`), the `TOP_OPS` largest; `before_capture_bytes` = peak − the live blocks' bytes (blocks
  allocated before the capture started).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import numpy as np

from profscope.analysis import memory, memory_pairing, memory_records, memory_xplane_records
from profscope.analysis.events import HostEvents
from profscope.analysis.memory_records import MemoryRecords
from profscope.analysis.steps import Steps

TOP_OPS = 10
NO_OP = "(no enclosing host op)"


@dataclasses.dataclass(frozen=True)
class OpHolding:
    """An op's blocks live at the peak: their bytes and how many."""

    op: str
    bytes: int
    count: int


@dataclasses.dataclass(frozen=True)
class DevicePeak:
    """One allocator's peak (module docstring)."""

    device: str
    allocated_bytes: int
    reserved_bytes: int | None  # the highest reserved over the capture; None: not observed
    step: str | None
    op: str | None
    live_bytes: int
    before_capture_bytes: int
    ops: list[OpHolding]


def op_name(events: HostEvents, records: MemoryRecords, record: int) -> str | None:
    """The op of a record: the one the event names itself (an XPlane `tf_op`), else the innermost host
    op enclosing it, None when neither."""
    if records.own is not None:
        own = records.own.text(records.own.op, record)
        if own is not None:
            return own
    op = int(records.op[record])
    if op < 0:
        return None
    trace = events.trace
    return trace.strings[trace.ev_name[op]]


def reserved_observed(records: MemoryRecords) -> bool:
    """Whether the records report reserved bytes: every event gives them and some are not 0."""
    return not (records.reserved < 0).any() and bool(records.reserved.any())


def device_peak(events: HostEvents, steps: Steps, records: MemoryRecords) -> DevicePeak:
    """The peak of one allocator's records (module docstring)."""
    pairs = memory_pairing.pair(records)
    at = int(np.argmax(records.allocated))
    live = pairs.alloc[pairs.live_at(at)]
    held: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for record, size in zip(live.tolist(), records.size[live].tolist()):
        entry = held[op_name(events, records, record) or NO_OP]
        entry[0] += int(size)
        entry[1] += 1
    ops = sorted((OpHolding(op, b, c) for op, (b, c) in held.items()), key=lambda o: (-o.bytes, o.op))
    live_bytes = int(records.size[live].sum())
    step = int(memory.step_at(steps, records.time_ps[at : at + 1])[0])
    return DevicePeak(
        device=records.label,
        allocated_bytes=int(records.allocated[at]),
        reserved_bytes=int(records.reserved.max()) if reserved_observed(records) else None,
        step=steps.names[step] if step >= 0 else None,
        op=op_name(events, records, at),
        live_bytes=live_bytes,
        before_capture_bytes=int(records.allocated[at]) - live_bytes,
        ops=ops[:TOP_OPS],
    )


def device_peaks(events: HostEvents, steps: Steps) -> list[DevicePeak]:
    """Every allocator of the host, Kineto devices (by type and id) then XPlane allocators (by name);
    none when the trace has no allocator event with totals."""
    found, _ = memory_records.read(events)
    from_xplane, _ = memory_xplane_records.read(events)
    return [device_peak(events, steps, records) for records in found + from_xplane]
