"""The allocator's own records of one host trace: Kineto `[memory]` instant events, in time order,
as the Memory tab and the Compare tab's memory rows (`analysis.memory_peaks`) both read them.

`analysis.memory` decodes the events (their args, which are kept, their time order per device: what
the Overview's peak reads too); here each device's records get their addresses, sizes, reserved
totals and ops. Each event's op is the innermost host slice enclosing it on its thread
(`analysis.events.enclosing_of_role` with the host roles: framework ops, `record_function` labels,
step markers), or -1 when none encloses it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.analysis import events as host_events
from profscope.analysis import memory
from profscope.analysis.events import HostEvents
from profscope.analysis.memory_xplane import AllocatorStats


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
    stats: AllocatorStats | None = None  # what the allocator says of itself (XPlane), per record

    def __len__(self) -> int:
        return int(self.event.shape[0])

    @property
    def label(self) -> str:
        """The device as the allocator names it: "CPU", "CUDA 0", or an XPlane allocator's name."""
        return self.allocator or memory.device_label(self.device_type, self.device_id)


@dataclasses.dataclass(frozen=True)
class Skipped:
    """`[memory]` events left out, and why (their args could not be read as the allocator's)."""

    unreadable: int = 0
    without_totals: int = 0


def read(events: HostEvents) -> tuple[list[MemoryRecords], Skipped]:
    """The host's `[memory]` events, one `MemoryRecords` per device (ordered by device type and id)."""
    found = memory.find(events.trace)
    if found is None:
        return [], Skipped()
    skipped = Skipped(found.unreadable, found.without_totals)
    parts = found.devices()
    if not parts:
        return [], skipped
    size, reserved, addr = (found.column(field) for field in ("size", "total_reserved", "addr"))
    op = host_events.enclosing_of_role(events, found.event, host_events.HOST_ROLES)
    devices = []
    for part in parts:
        devices.append(
            MemoryRecords(
                device_type=int(found.device_type[part[0]]),
                device_id=int(found.device_id[part[0]]),
                event=found.event[part],
                time_ps=found.time_ps[part],
                addr=addr[part],
                size=size[part],
                allocated=found.allocated[part],
                reserved=reserved[part],
                op=op[part],
            )
        )
    return devices, skipped
