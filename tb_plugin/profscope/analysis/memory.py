"""The allocator's records of one host trace as the Overview and the Memory tab both read them:
Kineto `[memory]` instant events, decoded once per request and put in time order per device, and
the allocator's peak the Overview shows (`peak`, its line built by `overview_peak`, which the
XPlane allocators' peak of `analysis.memory_xplane` shares; the Memory tab builds its records on
`find`).

With `profile_memory=True` the PyTorch profiler writes one instant event named `[memory]` per
allocation and per free, on the thread that made it, with args `Addr` (the block's address),
`Bytes` (positive: allocated, negative: freed), `Total Allocated` and `Total Reserved` (the device
allocator's totals right after the event), `Device Type` (c10's `DeviceType`: 0 CPU, 1 CUDA, …) and
`Device Id` (-1 for the CPU). The events are ordered by time, ties by the profiler's `Ev Idx`, then by
their place in the trace. An event's op is the innermost host slice enclosing it on its thread
(`events.enclosing_of_role` with the host roles: framework ops, `record_function` labels, step
markers). A trace recorded without memory events costs one look-up of the name.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter

import msgspec
import numpy as np
from msgspec.structs import astuple

from profscope.analysis import events as host_events
from profscope.analysis.answers import OverviewMemoryPeak
from profscope.analysis.events import HostEvents
from profscope.analysis.steps import Steps
from profscope.model import args as model_args
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


class MemoryArgs(msgspec.Struct, gc=False):
    """The args of one `[memory]` event (module docstring)."""

    addr: int = msgspec.field(name="Addr", default=0)
    size: int = msgspec.field(name="Bytes", default=0)
    total_allocated: int = msgspec.field(name="Total Allocated", default=ABSENT)
    total_reserved: int = msgspec.field(name="Total Reserved", default=ABSENT)
    device_type: int = msgspec.field(name="Device Type", default=0)
    device_id: int = msgspec.field(name="Device Id", default=-1)
    order: int = msgspec.field(name="Ev Idx", default=0)


_decoder = msgspec.json.Decoder(MemoryArgs)
# The args as int64 columns, one record each: `Addr` stays a 64-bit pattern (read as uint64).
_FIELDS = tuple(MemoryArgs.__struct_fields__)
_COLUMNS = np.dtype([(field, np.int64) for field in _FIELDS])


def device_label(device_type: int, device_id: int) -> str:
    """A device as the allocator names it: "CPU", "CUDA 0"."""
    kind = DEVICE_TYPES.get(device_type, f"device type {device_type}")
    return kind if device_id < 0 else f"{kind} {device_id}"


def _decode_all(trace: Trace, records: np.ndarray) -> tuple[list[MemoryArgs], np.ndarray]:
    """Every record's args and which could not be read (an unreadable one stands as empty args).

    The records' texts, gathered into one buffer (Kineto writes the `[memory]` events together, so
    their args lie in a few runs of the blob), are decoded in one call as whitespace-separated JSON
    values (`decode_lines`, which needs no separator between objects; were one needed, the decode
    would fail and take the slow way): no per-event slice, no comma put between records. The reader
    keeps each record as exactly one JSON object or as empty text, so with no empty record, n values
    decoded are the n records in order; otherwise, or when one does not decode, each record is
    decoded on its own."""
    n = records.shape[0]
    offsets, text = model_args.record_texts(trace, records)
    if bool(np.all(offsets[1:] > offsets[:-1])):
        try:
            decoded = _decoder.decode_lines(text)
        except (msgspec.DecodeError, msgspec.ValidationError):
            decoded = []
        if len(decoded) == n:
            return decoded, np.zeros(n, dtype=bool)
    out: list[MemoryArgs] = []
    unreadable = np.zeros(n, dtype=bool)
    blob = memoryview(text)
    for k in range(n):
        try:
            out.append(_decoder.decode(blob[offsets[k] : offsets[k + 1]]))
        except (msgspec.DecodeError, msgspec.ValidationError):
            out.append(MemoryArgs())
            unreadable[k] = True
    return out, unreadable


def _columns(decoded: list[MemoryArgs]) -> dict[str, np.ndarray]:
    """The args as one int64 column per field (`addr` as uint64), in one pass over the structs
    (`astuple` into a structured array: faster than a pass per field). An address past 2**63, or a
    negative one, is kept as its 64-bit pattern; another value out of int64 raises OverflowError."""
    try:
        table = np.fromiter(map(astuple, decoded), dtype=_COLUMNS, count=len(decoded))
        columns = {field: table[field] for field in _FIELDS}
    except OverflowError:
        columns = {field: column(decoded, field) for field in _FIELDS if field != "addr"}
        masked = (a.addr & 0xFFFFFFFFFFFFFFFF for a in decoded)
        columns["addr"] = np.fromiter(masked, dtype=np.uint64, count=len(decoded))
        return columns
    columns["addr"] = columns["addr"].view(np.uint64)
    return columns


def column(decoded: list[MemoryArgs], field: str) -> np.ndarray:
    """One int64 column of the args (`map` over an attrgetter: about twice as fast as a generator)."""
    return np.fromiter(map(attrgetter(field), decoded), dtype=np.int64, count=len(decoded))


@dataclasses.dataclass(frozen=True)
class MemoryEvents:
    """The `[memory]` events of one host: every one's args (`args`, a column per `MemoryArgs`
    field, by args record), which of them are kept (readable, with a `Total Allocated`), and the
    kept ones' columns."""

    args: dict[str, np.ndarray]
    kept: np.ndarray  # bool per args record
    unreadable: int
    without_totals: int
    event: np.ndarray  # int64 event index in the host's trace, per kept event
    time_ps: np.ndarray  # int64, host-local
    allocated: np.ndarray  # int64 `Total Allocated` after the event
    device_type: np.ndarray  # int64
    device_id: np.ndarray  # int64
    order: np.ndarray  # kept events by (device type, device id, time, `Ev Idx`, event)

    def column(self, field: str) -> np.ndarray:
        """Another arg of the kept events (int64; `addr` uint64)."""
        return self.args[field][self.kept]

    def devices(self) -> list[np.ndarray]:
        """`order` cut into one part per device, each in time order (none when nothing is kept)."""
        if not self.order.shape[0]:
            return []
        keys = np.stack((self.device_type[self.order], self.device_id[self.order]), axis=1)
        cuts = np.flatnonzero(np.any(keys[1:] != keys[:-1], axis=1)) + 1
        return np.split(self.order, cuts)


def find(trace: Trace) -> MemoryEvents | None:
    """The host's `[memory]` events, or None when the trace has none (then only the name was looked up)."""
    try:
        name_id = trace.strings.index(MEMORY_EVENT)
    except ValueError:
        return None
    indices = np.flatnonzero(trace.ev_name == name_id)
    if not indices.shape[0]:
        return None
    records = model_args.records_of(trace, indices)
    by_record = np.argsort(records, kind="stable")
    indices, records = indices[by_record], records[by_record]
    decoded, unreadable = _decode_all(trace, records)
    args = _columns(decoded)
    allocated = args["total_allocated"]
    kept = ~unreadable & (allocated != ABSENT)
    event = indices[kept].astype(np.int64)
    device_type, device_id, order_in_profiler = (
        args[field][kept] for field in ("device_type", "device_id", "order")
    )
    time_ps = np.asarray(trace.ev_start_ps[event], dtype=np.int64)
    return MemoryEvents(
        args=args,
        kept=kept,
        unreadable=int(unreadable.sum()),
        without_totals=int((~unreadable & ~kept).sum()),
        event=event,
        time_ps=time_ps,
        allocated=allocated[kept],
        device_type=device_type,
        device_id=device_id,
        order=np.lexsort((event, order_in_profiler, time_ps, device_id, device_type)),
    )


def step_at(steps: Steps, time_ps: np.ndarray) -> np.ndarray:
    """The step (index into `steps`) whose window holds each time, -1 outside every step."""
    if not len(steps):
        return np.full(time_ps.shape[0], -1, dtype=np.int64)
    k = np.searchsorted(steps.start_ps, time_ps, side="right") - 1
    inside = (k >= 0) & (time_ps < steps.end_ps[np.maximum(k, 0)])
    return np.where(inside, k, -1)


def peak(events: HostEvents, steps: Steps) -> OverviewMemoryPeak | None:
    """The highest `Total Allocated` over the host's devices: on its device, the first event that
    reaches it (the Memory tab's peak of that device), its step in `steps` and its op; None when the
    trace has no `[memory]` event with a total (never a peak of 0). Devices tie to the first in
    (type, id) order."""
    found = find(events.trace)
    if found is None:
        return None
    best = -1
    for part in found.devices():
        at = int(part[np.argmax(found.allocated[part])])
        if best < 0 or found.allocated[at] > found.allocated[best]:
            best = at
    if best < 0:
        return None
    return overview_peak(
        events,
        steps,
        allocated_bytes=int(found.allocated[best]),
        device=device_label(int(found.device_type[best]), int(found.device_id[best])),
        event=int(found.event[best]),
        own_op=None,
    )


def overview_peak(
    events: HostEvents, steps: Steps, allocated_bytes: int, device: str, event: int, own_op: str | None
) -> OverviewMemoryPeak:
    """The Overview's line of a peak reached at `event` (an allocator event of the host's trace): its
    step in `steps` and its op, the op the event names itself (`own_op`: an XPlane event's `tf_op`),
    else the innermost host op enclosing it."""
    trace = events.trace
    out = OverviewMemoryPeak(allocated_bytes=allocated_bytes, device=device)
    step = int(step_at(steps, np.asarray(trace.ev_start_ps[event : event + 1], dtype=np.int64))[0])
    if step >= 0:
        out.step, out.step_number = steps.names[step], int(steps.numbers[step])
    if own_op:
        out.op = own_op
        return out
    op = int(host_events.enclosing_of_role(events, np.array([event]), host_events.HOST_ROLES)[0])
    name = trace.strings[trace.ev_name[op]] if op >= 0 else ""
    if name:
        out.op = name
    return out
