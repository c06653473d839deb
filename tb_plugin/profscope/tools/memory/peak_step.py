"""The peak's step of an XPlane allocator as XProf's memory_profile breaks it down.

XProf (`ProcessActiveAllocations` in xprof/convert/xplane_to_memory_profile.cc) lists, for each
allocator, only the blocks allocated in the step of the peak and still held there, and one row for
the rest. The same here, over the Memory tab's records and pairs (docs/MEMORY.md, "The peak's
step"):

- **step** of an event = its `group_id` stat (the step the profiler's grouping put it in); an event
  without one takes the step after the last one named before it (0 before any), as XProf's
  `UpdateStepId` does. An allocator none of whose events names a `group_id` has no breakdown: XProf
  then groups the events itself from the host's TraceMe tree (not reproduced; PEAK_STEP_UNNAMED).
- **peak step** = the step of the Memory tab's peak event (the first reaching the highest
  allocated bytes; XProf takes the last event reaching its highest allocated + reserved).
- **rows**: the allocations of the peak step at or before the peak event whose free comes after it
  (or never), merged when size, op, shape, dtype and region are the same (the event's own texts, as
  XProf merges them; it also compares requested bytes, which are not read here), largest size first,
  then op, region, dtype, shape; at most TABLE_ROWS, `count` and `bytes` over all of them.
- **before_step_bytes** = the peak's allocated bytes − the rows' bytes: what was allocated before
  the step (or in another) and still held, which XProf names "unused preallocated device memory"
  and computes the same way (its allocations minus its frees within the step, unmatched frees
  counted back).
"""

from __future__ import annotations

from collections import defaultdict

import msgspec
import numpy as np

from profscope.analysis import events as host_events
from profscope.analysis.events import HostEvents
from profscope.analysis.memory_pairing import Pairs
from profscope.analysis.memory_records import MemoryRecords
from profscope.tools.memory.answers import MemoryPeakStep, MemoryPeakStepRow

TABLE_ROWS = 200
NO_GROUP = -1
PEAK_STEP_UNNAMED = (
    "no event of this allocator names its step (group_id): XProf then groups the events itself from "
    "the host's TraceMe tree, which profscope does not reproduce"
)


class _Group(msgspec.Struct, gc=False):
    group_id: int = NO_GROUP


_decode_group = msgspec.json.Decoder(_Group).decode


def steps(events: HostEvents, records: MemoryRecords) -> np.ndarray | None:
    """Each record's step (module docstring), or None when no record names one."""
    named = []
    for raw in host_events.args_of(events.trace, records.event):
        try:
            named.append(_decode_group(raw).group_id)
        except (msgspec.DecodeError, msgspec.ValidationError):
            named.append(NO_GROUP)
    group = np.asarray(named, dtype=np.int64)
    if not (group >= 0).any():
        return None
    last = np.maximum.accumulate(np.where(group >= 0, np.arange(group.shape[0]), -1))
    before = np.where(last >= 0, group[np.maximum(last, 0)], NO_GROUP)
    previous = np.concatenate(([NO_GROUP], before[:-1]))  # the last step named before each record
    return np.where(group >= 0, group, previous + 1)


def breakdown(
    events: HostEvents, records: MemoryRecords, pairs: Pairs, peak_at: int
) -> MemoryPeakStep | str | None:
    """XProf's breakdown of the peak's step; its reason when the events name no step; None for an
    allocator that is not an XPlane one (Kineto's `[memory]` events have no steps of their own)."""
    own = records.own
    if own is None:
        return None
    step = steps(events, records)
    if step is None:
        return PEAK_STEP_UNNAMED
    peak_step = int(step[peak_at])
    mine = pairs.alloc[pairs.live_at(peak_at) & (step[pairs.alloc] == peak_step)]
    groups: dict[tuple[int, str, str, str, str], int] = defaultdict(int)
    for record in mine.tolist():
        texts = (own.text(column, record) or "" for column in (own.op, own.region, own.dtype, own.shape))
        groups[(int(records.size[record]), *texts)] += 1  # type: ignore[arg-type]
    ordered = sorted(groups.items(), key=lambda item: (-item[0][0], *item[0][1:]))
    rows = [
        MemoryPeakStepRow(
            size_bytes=size,
            count=count,
            bytes=size * count,
            op=op or msgspec.UNSET,
            shape=shape or msgspec.UNSET,
            dtype=dtype or msgspec.UNSET,
            region=region or msgspec.UNSET,
        )
        for (size, op, region, dtype, shape), count in ordered[:TABLE_ROWS]
    ]
    held = int(records.size[mine].sum())
    return MemoryPeakStep(
        step=peak_step,
        rows=rows,
        count=int(mine.shape[0]),
        bytes=held,
        before_step_bytes=int(records.allocated[peak_at]) - held,
    )
