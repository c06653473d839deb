"""The allocator's own records of one host trace: Kineto `[memory]` instant events, in time order.

With `profile_memory=True` the PyTorch profiler writes one instant event named `[memory]` per
allocation and per free, on the thread that made it, with args `Addr` (the block's address),
`Bytes` (positive: allocated, negative: freed), `Total Allocated` and `Total Reserved` (the device
allocator's totals right after the event), `Device Type` (c10's `DeviceType`: 0 CPU, 1 CUDA, …) and
`Device Id` (-1 for the CPU). The events are ordered by time, ties by the profiler's `Ev Idx`, then by
their place in the trace. Each event's op is the innermost host slice enclosing it on its thread
(`analysis.events.enclosing_of_role` with the host roles: framework ops, `record_function` labels,
step markers), or -1 when none encloses it.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter

import msgspec
import numpy as np

from profscope.analysis import events as host_events
from profscope.analysis.events import HostEvents
from profscope.model.columns import Trace

MEMORY_EVENT = "[memory]"
# c10::DeviceType, as the `Device Type` arg numbers them.
DEVICE_TYPES = {
    0: "CPU",
    1: "CUDA",
    2: "MKLDNN",
    3: "OpenGL",
    4: "OpenCL",
    5: "IDEEP",
    6: "HIP",
    7: "FPGA",
    8: "MAIA",
    9: "XLA",
    10: "Vulkan",
    11: "Metal",
    12: "XPU",
    13: "MPS",
    14: "Meta",
    15: "HPU",
    16: "VE",
    17: "Lazy",
    18: "IPU",
    19: "MTIA",
    20: "PrivateUse1",
}


ABSENT = -1  # a total the event does not give (the allocator's totals are never negative)


class _MemoryArgs(msgspec.Struct, gc=False):
    addr: int = msgspec.field(name="Addr", default=0)
    size: int = msgspec.field(name="Bytes", default=0)
    total_allocated: int = msgspec.field(name="Total Allocated", default=ABSENT)
    total_reserved: int = msgspec.field(name="Total Reserved", default=ABSENT)
    device_type: int = msgspec.field(name="Device Type", default=0)
    device_id: int = msgspec.field(name="Device Id", default=-1)
    order: int = msgspec.field(name="Ev Idx", default=0)


_decode = msgspec.json.Decoder(_MemoryArgs).decode
_decode_list = msgspec.json.Decoder(list[_MemoryArgs]).decode


def _array_text(trace: Trace, records: np.ndarray) -> bytes | None:
    """The args JSON of `records` (ascending record ids) as one JSON array, without a slice per
    event: Kineto writes the `[memory]` events together, so their args lie in runs of the blob, one
    after the other; the runs are joined and a comma is put at every `}{` (one pass in C). The flat
    numeric args of a `[memory]` event never hold `}{`, which is checked: one boundary per record,
    else None (the caller decodes them one by one)."""
    offsets = np.asarray(trace.args_off)
    lo, hi = offsets[records].astype(np.int64), offsets[records + 1].astype(np.int64)
    blob = memoryview(np.asarray(trace.args_blob))
    breaks = np.flatnonzero(lo[1:] != hi[:-1]) + 1
    firsts = np.concatenate(([0], breaks)).tolist()
    lasts = np.concatenate((breaks, [lo.shape[0]])).tolist()
    joined = b"".join(blob[lo[f] : hi[last - 1]] for f, last in zip(firsts, lasts))
    if joined.count(b"}{") != records.shape[0] - 1:
        return None
    return b"[" + joined.replace(b"}{", b"},{") + b"]"


def _decode_all(trace: Trace, records: np.ndarray) -> tuple[list[_MemoryArgs], np.ndarray]:
    """Every record's args, in one decode of them all as a JSON array (a million events in a fraction
    of a second), and which could not be read (then each is decoded on its own, an unreadable one
    standing as empty args)."""
    text = _array_text(trace, records)
    try:
        if text is not None:
            return _decode_list(text), np.zeros(records.shape[0], dtype=bool)
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    out: list[_MemoryArgs] = []
    unreadable = np.zeros(records.shape[0], dtype=bool)
    offsets, blob = np.asarray(trace.args_off), memoryview(np.asarray(trace.args_blob))
    for k, record in enumerate(records.tolist()):
        try:
            out.append(_decode(blob[offsets[record] : offsets[record + 1]]))
        except (msgspec.DecodeError, msgspec.ValidationError):
            out.append(_MemoryArgs())
            unreadable[k] = True
    return out, unreadable


@dataclasses.dataclass(frozen=True)
class OwnStats:
    """What each allocator event says of its block itself (XPlane stats; Kineto's `[memory]` events
    say none of it): indices into `strings` per record, -1 where the event says nothing."""

    strings: tuple[str, ...]
    op: np.ndarray  # int64: the op the event names (`tf_op`)
    shape: np.ndarray  # int64: the tensor's shape (`shape`, e.g. "[32,128]")
    dtype: np.ndarray  # int64: the tensor's element type ("float")
    region: np.ndarray  # int64: the allocator's region type ("persist", "dynamic", …)

    def text(self, column: np.ndarray, record: int) -> str | None:
        code = int(column[record])
        return self.strings[code] if code >= 0 else None

    def take(self, part: np.ndarray) -> OwnStats:
        return OwnStats(self.strings, self.op[part], self.shape[part], self.dtype[part], self.region[part])


@dataclasses.dataclass(frozen=True)
class MemoryRecords:
    """The `[memory]` events of one device of one host, sorted in time order (arrays by record)."""

    device_type: int
    device_id: int
    event: np.ndarray  # int64 event index in the host's trace
    time_ps: np.ndarray  # int64, host-local
    addr: np.ndarray  # uint64
    size: np.ndarray  # int64, signed: > 0 allocates, < 0 frees
    allocated: np.ndarray  # int64 `Total Allocated` after the event
    reserved: np.ndarray  # int64 `Total Reserved` after the event
    op: np.ndarray  # int64 innermost enclosing host slice, -1 when none
    allocator: str = ""  # the allocator's own name (XPlane memory ids), empty for Kineto devices
    own: OwnStats | None = None  # the events' own op, shape, dtype and region, when they give them

    def __len__(self) -> int:
        return int(self.event.shape[0])

    @property
    def label(self) -> str:
        """The device as the allocator names it: "CPU", "CUDA 0", or an XPlane allocator's name."""
        if self.allocator:
            return self.allocator
        kind = DEVICE_TYPES.get(self.device_type, f"device type {self.device_type}")
        return kind if self.device_id < 0 else f"{kind} {self.device_id}"


@dataclasses.dataclass(frozen=True)
class Skipped:
    """`[memory]` events left out, and why (their args could not be read as the allocator's)."""

    unreadable: int = 0
    without_totals: int = 0


def _column(decoded: list[_MemoryArgs], field: str) -> np.ndarray:
    """One int64 column of the args (`map` over an attrgetter: about twice as fast as a generator)."""
    return np.fromiter(map(attrgetter(field), decoded), dtype=np.int64, count=len(decoded))


def _addresses(decoded: list[_MemoryArgs]) -> np.ndarray:
    """The addresses as uint64 (one past 2**63, or a negative one, kept as its 64-bit pattern)."""
    try:
        return _column(decoded, "addr").view(np.uint64)
    except OverflowError:
        masked = (a.addr & 0xFFFFFFFFFFFFFFFF for a in decoded)
        return np.fromiter(masked, dtype=np.uint64, count=len(decoded))


def read(events: HostEvents) -> tuple[list[MemoryRecords], Skipped]:
    """The host's `[memory]` events, one `MemoryRecords` per device (ordered by device type and id)."""
    trace = events.trace
    try:
        name_id = trace.strings.index(MEMORY_EVENT)
    except ValueError:
        return [], Skipped()
    indices = np.flatnonzero(trace.ev_name == name_id)
    records = np.asarray(trace.ev_args)[indices]
    by_record = np.argsort(records, kind="stable")
    indices, records = indices[by_record], records[by_record]
    decoded, unreadable = _decode_all(trace, records)
    allocated = _column(decoded, "total_allocated")
    kept = ~unreadable & (allocated != ABSENT)
    skipped = Skipped(int(unreadable.sum()), int((~unreadable & ~kept).sum()))
    if not kept.any():
        return [], skipped
    event = indices[kept].astype(np.int64)
    allocated = allocated[kept]
    device_type, device_id, order_in_profiler, size, reserved = (
        _column(decoded, field)[kept]
        for field in ("device_type", "device_id", "order", "size", "total_reserved")
    )
    addr = _addresses(decoded)[kept]
    time_ps = np.asarray(trace.ev_start_ps[event], dtype=np.int64)
    order = np.lexsort((event, order_in_profiler, time_ps, device_id, device_type))
    op = host_events.enclosing_of_role(events, event, host_events.HOST_ROLES)
    devices = []
    keys = np.stack((device_type[order], device_id[order]), axis=1)
    cuts = np.flatnonzero(np.any(keys[1:] != keys[:-1], axis=1)) + 1
    for part in np.split(order, cuts):
        devices.append(
            MemoryRecords(
                device_type=int(device_type[part[0]]),
                device_id=int(device_id[part[0]]),
                event=event[part],
                time_ps=time_ps[part],
                addr=addr[part],
                size=size[part],
                allocated=allocated[part],
                reserved=reserved[part],
                op=op[part],
            )
        )
    return devices, skipped
