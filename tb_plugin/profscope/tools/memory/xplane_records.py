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
- events are ordered by time, then by their place in the trace;
- each event's op is its own `tf_op` (the TensorFlow op's full name, as XProf's memory_profile names
  it), else the innermost host slice enclosing it (the op's TraceMe), as for Kineto; its shape is its
  `shape`, its dtype its `data_type` (TensorFlow's `DataType` enum, named as TensorFlow prints it;
  0, DT_INVALID, which frees carry, is no dtype) and its region its `region_type`; an empty text is
  none.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profscope.analysis import events as host_events
from profscope.analysis.events import HostEvents
from profscope.analysis.memory import ABSENT
from profscope.tools.memory.records import MemoryRecords, OwnStats, Skipped

ALLOCATION, DEALLOCATION = "MemoryAllocation", "MemoryDeallocation"
NO_DEVICE = -1  # XPlane allocators are named, not numbered by device type
# tensorflow/core/framework/types.proto `DataType` values as TensorFlow's DataTypeString prints them.
DATA_TYPES = (
    "",
    "float",
    "double",
    "int32",
    "uint8",
    "int16",
    "int8",
    "string",
    "complex64",
    "int64",
    "bool",
    "qint8",
    "quint8",
    "qint32",
    "bfloat16",
    "qint16",
    "quint16",
    "uint16",
    "complex128",
    "half",
    "resource",
    "variant",
    "uint32",
    "uint64",
)


class _XplaneArgs(msgspec.Struct, gc=False):
    allocator_name: str = ""
    bytes_allocated: int = ABSENT
    bytes_reserved: int = ABSENT
    allocation_bytes: int = 0
    addr: int = 0
    tf_op: str = ""
    shape: str = ""
    data_type: int = 0
    region_type: str = ""


def dtype_name(value: int) -> str:
    """TensorFlow's name of a `DataType` value ("" for DT_INVALID: no dtype)."""
    if 0 <= value < len(DATA_TYPES):
        return DATA_TYPES[value]
    return f"DataType {value}"


class _Strings:
    """A string table: each distinct text once; "" is none (-1)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def code(self, text: str) -> int:
        return self.codes.setdefault(text, len(self.codes)) if text else -1


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
    rows: list[tuple[str, int, int, int, int, int, int, int, int, int]] = []
    strings = _Strings()
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
        own = (
            strings.code(args.tf_op),
            strings.code(args.shape),
            strings.code(dtype_name(args.data_type)),
            strings.code(args.region_type),
        )
        rows.append((args.allocator_name, index, addr, size, args.bytes_allocated, args.bytes_reserved, *own))
    skipped = Skipped(unreadable, without_totals)
    if not rows:
        return [], skipped
    names = sorted({r[0] for r in rows})
    event = np.array([r[1] for r in rows], dtype=np.int64)
    op = host_events.enclosing_of_role(events, event, host_events.HOST_ROLES)
    allocator = np.array([names.index(r[0]) for r in rows], dtype=np.int64)
    time_ps = np.asarray(trace.ev_start_ps[event], dtype=np.int64)
    addr = np.array([r[2] for r in rows], dtype=np.uint64)
    size, allocated, reserved, own_op, shape, dtype, region = (
        np.array([r[k] for r in rows], dtype=np.int64) for k in range(3, 10)
    )
    own = OwnStats(tuple(strings.codes), own_op, shape, dtype, region)
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
                own=own.take(part),
            )
        )
    return devices, skipped
