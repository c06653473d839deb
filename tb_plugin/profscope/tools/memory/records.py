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

import msgspec
import numpy as np

from profscope.analysis import events as host_events
from profscope.analysis.events import HostEvents

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


class _MemoryArgs(msgspec.Struct):
    addr: int = msgspec.field(name="Addr", default=0)
    size: int = msgspec.field(name="Bytes", default=0)
    total_allocated: int | None = msgspec.field(name="Total Allocated", default=None)
    total_reserved: int | None = msgspec.field(name="Total Reserved", default=None)
    device_type: int = msgspec.field(name="Device Type", default=0)
    device_id: int = msgspec.field(name="Device Id", default=-1)
    order: int = msgspec.field(name="Ev Idx", default=0)


_decode = msgspec.json.Decoder(_MemoryArgs).decode


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

    def __len__(self) -> int:
        return int(self.event.shape[0])

    @property
    def label(self) -> str:
        """The device as the allocator names it: "CPU", "CUDA 0"."""
        kind = DEVICE_TYPES.get(self.device_type, f"device type {self.device_type}")
        return kind if self.device_id < 0 else f"{kind} {self.device_id}"


@dataclasses.dataclass(frozen=True)
class Skipped:
    """`[memory]` events left out, and why (their args could not be read as the allocator's)."""

    unreadable: int = 0
    without_totals: int = 0


def read(events: HostEvents) -> tuple[list[MemoryRecords], Skipped]:
    """The host's `[memory]` events, one `MemoryRecords` per device (ordered by device type and id)."""
    trace = events.trace
    try:
        name_id = trace.strings.index(MEMORY_EVENT)
    except ValueError:
        return [], Skipped()
    indices = np.flatnonzero(trace.ev_name == name_id)
    rows: list[tuple[int, int, int, int, int, int, int, int]] = []
    unreadable = without_totals = 0
    for index, raw in zip(indices.tolist(), host_events.args_of(trace, indices)):
        try:
            args = _decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            unreadable += 1
            continue
        if args.total_allocated is None:
            without_totals += 1
            continue
        reserved = -1 if args.total_reserved is None else args.total_reserved
        rows.append(
            (
                args.device_type,
                args.device_id,
                index,
                args.order,
                args.addr,
                args.size,
                args.total_allocated,
                reserved,
            )
        )
    skipped = Skipped(unreadable, without_totals)
    if not rows:
        return [], skipped
    table = np.array(rows, dtype=object)
    device_type = table[:, 0].astype(np.int64)
    device_id = table[:, 1].astype(np.int64)
    event = table[:, 2].astype(np.int64)
    time_ps = trace.ev_start_ps[event]
    order = np.lexsort((event, table[:, 3].astype(np.int64), time_ps, device_id, device_type))
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
                time_ps=np.asarray(time_ps[part], dtype=np.int64),
                addr=np.array([int(a) & 0xFFFFFFFFFFFFFFFF for a in table[part, 4]], dtype=np.uint64),
                size=table[part, 5].astype(np.int64),
                allocated=table[part, 6].astype(np.int64),
                reserved=table[part, 7].astype(np.int64),
                op=op[part],
            )
        )
    return devices, skipped
