"""The allocators' own records in an XPlane as the Overview and the Memory tab both read them:
TensorFlow / XLA runtime `MemoryAllocation` and `MemoryDeallocation` events, decoded once per request
and put in time order per allocator (`find`), and the allocators' peak the Overview shows (`peak`).

TensorFlow's allocators (the BFC allocator of a GPU, and of the CPU with
`TF_CPU_ALLOCATOR_USE_BFC=true`; the oneDNN CPU allocator for its few blocks) write one zero-length
TraceMe per allocation and per free while the profiler runs, on the thread that made it, with stats
`allocator_name` (the memory id), `bytes_allocated` (the allocator's bytes in use right after the
event), `bytes_reserved`, `allocation_bytes` (the block's size), `requested_bytes`, `addr`,
`tf_op`, `region_type`, `data_type`, `shape`, `peak_bytes_in_use`, `fragmentation`. Here:
- each `allocator_name` is one allocator (device), labelled by that name; events without one (XLA's
  TPU runtime) name their device by number, `index_on_host` or `device_ordinal`: each number is one
  allocator, labelled "device N" (XProf's memory id "N");
- size = +allocation_bytes for an allocation, −allocation_bytes for a free (the block's size, as
  XProf's memory_profile counts it); a free without `allocation_bytes` (the TPU runtime's) frees
  the block of the latest allocation before it at its address, and takes that block's size (0, and
  so neither allocation nor free, when there is none);
- Total Allocated = bytes_allocated, Total Reserved = bytes_reserved (-1 when absent); an event
  without `bytes_allocated` is left out (counted in `without_totals`);
- events are ordered by time, then by their place in the trace;
- each event's own op is its `tf_op` (the TensorFlow op's full name, as XProf's memory_profile names
  it), its shape its `shape`, its dtype its `data_type` (TensorFlow's `DataType` enum, named as
  TensorFlow prints it; 0, DT_INVALID, which frees carry, is no dtype) and its region its
  `region_type`; an empty text is none. Where an event names no op, the op is the innermost host
  slice enclosing it (the op's TraceMe), as for Kineto;
- what the allocator says of itself after each event (`AllocatorStats`): `bytes_available` (its free
  bytes: its limit minus what it holds), `fragmentation` (the BFC allocator's 1 − largest free chunk
  ÷ free bytes, a fraction) and `peak_bytes_in_use` (its high-water mark since it was created, which
  may lie before the capture).
"""

from __future__ import annotations

import dataclasses
import math

import msgspec
import numpy as np

from profscope.analysis import events as host_events
from profscope.analysis import memory
from profscope.analysis.answers import OverviewMemoryPeak
from profscope.analysis.events import HostEvents
from profscope.analysis.memory import ABSENT
from profscope.analysis.steps import Steps
from profscope.model.columns import Trace

ALLOCATION, DEALLOCATION = "MemoryAllocation", "MemoryDeallocation"
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
    index_on_host: int | None = None
    device_ordinal: int | None = None
    bytes_allocated: int = ABSENT
    bytes_reserved: int = ABSENT
    bytes_available: int = ABSENT
    peak_bytes_in_use: int = ABSENT
    fragmentation: float = math.nan
    allocation_bytes: int = ABSENT
    addr: int = 0
    tf_op: str = ""
    shape: str = ""
    data_type: int = 0
    region_type: str = ""


_decode = msgspec.json.Decoder(_XplaneArgs).decode


def memory_id(args: _XplaneArgs) -> str:
    """The allocator an event belongs to: its `allocator_name`, else the device it names by number."""
    if args.allocator_name:
        return args.allocator_name
    number = args.index_on_host if args.index_on_host is not None else args.device_ordinal
    return f"device {number}" if number is not None else ""


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


@dataclasses.dataclass(frozen=True)
class AllocatorStats:
    """What the allocator says of itself after each event beyond its totals (per record): its free
    bytes, its fragmentation and its high-water mark since it was created."""

    available: np.ndarray  # int64 `bytes_available`, -1 when absent
    fragmentation: np.ndarray  # float64 `fragmentation` (a fraction), NaN when absent
    lifetime_peak: np.ndarray  # int64 `peak_bytes_in_use`, -1 when absent

    def take(self, part: np.ndarray) -> AllocatorStats:
        return AllocatorStats(self.available[part], self.fragmentation[part], self.lifetime_peak[part])


@dataclasses.dataclass(frozen=True)
class AllocatorEvents:
    """The kept allocator events of one host (readable, with `bytes_allocated`), in trace order:
    their columns, the allocator of each (an index into `names`, sorted) and the texts each names
    itself (indices into `strings`, -1 where the event says nothing)."""

    names: list[str]
    unreadable: int
    without_totals: int
    allocator: np.ndarray  # int64 index into names
    event: np.ndarray  # int64 event index in the host's trace
    time_ps: np.ndarray  # int64, host-local
    addr: np.ndarray  # uint64
    size: np.ndarray  # int64, signed: > 0 allocates, < 0 frees
    allocated: np.ndarray  # int64 bytes_allocated after the event
    reserved: np.ndarray  # int64 bytes_reserved after the event (-1 when absent)
    strings: tuple[str, ...]
    own_op: np.ndarray  # int64 code of `tf_op`
    shape: np.ndarray  # int64 code of `shape`
    dtype: np.ndarray  # int64 code of the `data_type`'s name
    region: np.ndarray  # int64 code of `region_type`
    stats: AllocatorStats

    def allocators(self) -> list[np.ndarray]:
        """The kept events of each allocator of `names`, in time order (ties: trace order)."""
        parts = []
        for k in range(len(self.names)):
            mine = np.flatnonzero(self.allocator == k)
            parts.append(mine[np.lexsort((self.event[mine], self.time_ps[mine]))])
        return parts

    def text(self, column: np.ndarray, at: int) -> str | None:
        code = int(column[at])
        return self.strings[code] if code >= 0 else None


def find(trace: Trace) -> AllocatorEvents | None:
    """The host's allocator events, or None when the trace has none (then only the names were looked
    up). When none is readable with its totals, `names` is empty and the skipped counts say why."""
    ids = {name: trace.strings.index(name) for name in (ALLOCATION, DEALLOCATION) if name in trace.strings}
    if not ids:
        return None
    indices = np.flatnonzero(np.isin(trace.ev_name, list(ids.values())))
    sign = np.where(trace.ev_name[indices] == ids.get(DEALLOCATION, -1), -1, 1)
    rows: list[tuple[str, int, int, int, int, int, int, int, int, int, int, int, float]] = []
    strings = _Strings()
    unreadable = without_totals = 0
    unsized_frees: list[int] = []  # rows of frees that do not say their block's size
    for index, direction, raw in zip(indices.tolist(), sign.tolist(), host_events.args_of(trace, indices)):
        try:
            args = _decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            unreadable += 1
            continue
        if args.bytes_allocated == ABSENT:
            without_totals += 1
            continue
        if direction < 0 and args.allocation_bytes == ABSENT:
            unsized_frees.append(len(rows))
        rows.append(
            (
                memory_id(args),
                index,
                args.addr & 0xFFFFFFFFFFFFFFFF,
                direction * max(args.allocation_bytes, 0),
                args.bytes_allocated,
                args.bytes_reserved,
                strings.code(args.tf_op),
                strings.code(args.shape),
                strings.code(dtype_name(args.data_type)),
                strings.code(args.region_type),
                args.bytes_available,
                args.peak_bytes_in_use,
                args.fragmentation,
            )
        )
    names = sorted({r[0] for r in rows})
    code_of = {name: k for k, name in enumerate(names)}
    event = np.array([r[1] for r in rows], dtype=np.int64)
    size, allocated, reserved, own_op, shape, dtype, region, available, lifetime_peak = (
        np.array([r[k] for r in rows], dtype=np.int64) for k in range(3, 12)
    )
    fragmentation = np.array([r[12] for r in rows], dtype=np.float64)
    found = AllocatorEvents(
        names=names,
        unreadable=unreadable,
        without_totals=without_totals,
        allocator=np.array([code_of[r[0]] for r in rows], dtype=np.int64),
        event=event,
        time_ps=np.asarray(trace.ev_start_ps[event], dtype=np.int64),
        addr=np.array([r[2] for r in rows], dtype=np.uint64),
        size=size,
        allocated=allocated,
        reserved=reserved,
        strings=tuple(strings.codes),
        own_op=own_op,
        shape=shape,
        dtype=dtype,
        region=region,
        stats=AllocatorStats(available, fragmentation, lifetime_peak),
    )
    if unsized_frees:
        found = dataclasses.replace(found, size=_sized_frees(found, np.array(unsized_frees, dtype=np.int64)))
    return found


def _sized_frees(found: AllocatorEvents, unsized: np.ndarray) -> np.ndarray:
    """The sizes with each free that does not say its size (`unsized`, rows) given the size of the
    block it frees: the latest allocation before it at its address in its allocator (0 when none)."""
    is_unsized = np.zeros(found.size.shape[0], dtype=bool)
    is_unsized[unsized] = True
    size = found.size.copy()
    for part in found.allocators():
        if not is_unsized[part].any():
            continue
        open_size: dict[int, int] = {}
        for row, addr, block, free in zip(
            part.tolist(), found.addr[part].tolist(), found.size[part].tolist(), is_unsized[part].tolist()
        ):
            if block > 0:
                open_size[addr] = block
            elif free:
                size[row] = -open_size.pop(addr, 0)
            else:
                open_size.pop(addr, None)
    return size


def peak(events: HostEvents, steps: Steps) -> OverviewMemoryPeak | None:
    """The highest `bytes_allocated` over the host's allocators: on its allocator, the first event that
    reaches it (the Memory tab's peak of that allocator), its step in `steps` and its op (the event's
    own `tf_op`, else the innermost host op enclosing it); None when the XPlane has no allocator event
    with totals. Allocators tie to the first by name."""
    found = find(events.trace)
    if found is None:
        return None
    best = -1
    for part in found.allocators():
        at = int(part[np.argmax(found.allocated[part])])
        if best < 0 or found.allocated[at] > found.allocated[best]:
            best = at
    if best < 0:
        return None
    return memory.overview_peak(
        events,
        steps,
        allocated_bytes=int(found.allocated[best]),
        device=found.names[int(found.allocator[best])],
        event=int(found.event[best]),
        own_op=found.text(found.own_op, best),
    )
