"""The allocators' own records in an XPlane: TensorFlow / XLA runtime `MemoryAllocation` and
`MemoryDeallocation` events, as `MemoryRecords` (the same analysis as Kineto's `[memory]` events).

TensorFlow's allocators (the BFC allocator of a GPU, and of the CPU with
`TF_CPU_ALLOCATOR_USE_BFC=true`; the oneDNN CPU allocator for its few blocks) write one zero-length
TraceMe per allocation and per free while the profiler runs, on the thread that made it, with stats
`allocator_name` (the memory id), `bytes_allocated` (the allocator's bytes in use right after the
event), `bytes_reserved`, `allocation_bytes` (the block's size), `requested_bytes`, `addr`,
`tf_op`, `region_type`, `data_type`, `shape`, `peak_bytes_in_use`, `fragmentation`. Here:
- each `allocator_name` is one allocator (device), labelled by that name;
- size = +allocation_bytes for an allocation, −allocation_bytes for a free (the block's size, as
  XProf's memory_profile counts it);
- Total Allocated = bytes_allocated, Total Reserved = bytes_reserved (-1 when absent);
- events are ordered by time, then by their place in the trace; each event's op is the innermost host
  slice enclosing it (the TensorFlow op's TraceMe), as for Kineto.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profscope.analysis import events as host_events
from profscope.analysis.events import HostEvents
from profscope.tools.memory.records import ABSENT, MemoryRecords, Skipped

ALLOCATION, DEALLOCATION = "MemoryAllocation", "MemoryDeallocation"
NO_DEVICE = -1  # XPlane allocators are named, not numbered by device type


class _XplaneArgs(msgspec.Struct, gc=False):
    allocator_name: str = ""
    bytes_allocated: int = ABSENT
    bytes_reserved: int = ABSENT
    allocation_bytes: int = 0
    addr: int = 0


_decode = msgspec.json.Decoder(_XplaneArgs).decode


def read(events: HostEvents) -> tuple[list[MemoryRecords], Skipped]:
    """The host's allocator events, one `MemoryRecords` per allocator name (in name order)."""
    trace = events.trace
    ids = {name: trace.strings.index(name) for name in (ALLOCATION, DEALLOCATION) if name in trace.strings}
    if not ids:
        return [], Skipped()
    wanted = np.isin(trace.ev_name, list(ids.values()))
    indices = np.flatnonzero(wanted)
    sign = np.where(trace.ev_name[indices] == ids.get(DEALLOCATION, -1), -1, 1)
    rows: list[tuple[str, int, int, int, int, int, int]] = []
    unreadable = without_totals = 0
    for index, direction, raw in zip(indices.tolist(), sign.tolist(), host_events.args_of(trace, indices)):
        try:
            args = _decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            unreadable += 1
            continue
        if args.bytes_allocated == ABSENT:
            without_totals += 1
            continue
        size = direction * args.allocation_bytes
        addr = args.addr & 0xFFFFFFFFFFFFFFFF
        rows.append((args.allocator_name, index, addr, size, args.bytes_allocated, args.bytes_reserved, 0))
    skipped = Skipped(unreadable, without_totals)
    if not rows:
        return [], skipped
    names = sorted({r[0] for r in rows})
    event = np.array([r[1] for r in rows], dtype=np.int64)
    op = host_events.enclosing_of_role(events, event, host_events.HOST_ROLES)
    allocator = np.array([names.index(r[0]) for r in rows], dtype=np.int64)
    time_ps = np.asarray(trace.ev_start_ps[event], dtype=np.int64)
    addr = np.array([r[2] for r in rows], dtype=np.uint64)
    size, allocated, reserved = (np.array([r[k] for r in rows], dtype=np.int64) for k in (3, 4, 5))
    devices = []
    for k, name in enumerate(names):
        mine = np.flatnonzero(allocator == k)
        part = mine[np.lexsort((event[mine], time_ps[mine]))]
        devices.append(
            MemoryRecords(
                device_type=NO_DEVICE,
                device_id=NO_DEVICE,
                event=event[part],
                time_ps=time_ps[part],
                addr=addr[part],
                size=size[part],
                allocated=allocated[part],
                reserved=reserved[part],
                op=op[part],
                allocator=name,
            )
        )
    return devices, skipped
