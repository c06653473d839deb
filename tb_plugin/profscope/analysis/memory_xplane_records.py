"""The allocators' own records in an XPlane, TensorFlow / XLA runtime `MemoryAllocation` and
`MemoryDeallocation` events, as `MemoryRecords` (the same analysis as Kineto's `[memory]` events; the
Memory tab and the Compare tab's memory rows both read them).

`analysis.memory_xplane` decodes the events (what the Overview's peak reads too; its docstring says
how each stat is read); here each allocator's records get their ops: the op the event names itself
(`tf_op`, kept in `OwnStats` with its shape, dtype and region), else the innermost host slice
enclosing it (the op's TraceMe), as for Kineto.
"""

from __future__ import annotations

from profscope.analysis import events as host_events
from profscope.analysis import memory_xplane
from profscope.analysis.events import HostEvents
from profscope.analysis.memory_records import MemoryRecords, OwnStats, Skipped

NO_DEVICE = -1  # XPlane allocators are named, not numbered by device type


def read(events: HostEvents) -> tuple[list[MemoryRecords], Skipped]:
    """The host's allocator events, one `MemoryRecords` per allocator name (in name order)."""
    found = memory_xplane.find(events.trace)
    if found is None:
        return [], Skipped()
    skipped = Skipped(found.unreadable, found.without_totals)
    if not found.names:
        return [], skipped
    op = host_events.enclosing_of_role(events, found.event, host_events.HOST_ROLES)
    own = OwnStats(found.strings, found.own_op, found.shape, found.dtype, found.region)
    devices = []
    for name, part in zip(found.names, found.allocators()):
        devices.append(
            MemoryRecords(
                device_type=NO_DEVICE,
                device_id=NO_DEVICE,
                event=found.event[part],
                time_ps=found.time_ps[part],
                addr=found.addr[part],
                size=found.size[part],
                allocated=found.allocated[part],
                reserved=found.reserved[part],
                op=op[part],
                allocator=name,
                own=own.take(part),
                stats=found.stats.take(part),
            )
        )
    return devices, skipped
