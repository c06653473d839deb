"""What an XPlane allocator says of itself, summarised as XProf's memory_profile does (its summary
card and the fragmentation curve of its timeline graph), from the stats each `MemoryAllocation` /
`MemoryDeallocation` event carries (`analysis.memory_xplane.AllocatorStats`).

Definitions, per allocator (records in time order; "the peak event" is the Memory tab's peak, the
first event at which `bytes_allocated` reaches its maximum over the capture):
- capacity = bytes_allocated + bytes_reserved + bytes_available at the peak event (a BFC allocator's
  memory limit: the same after every event of the real captures);
- free at peak = bytes_available at the peak event; fragmentation at peak = its `fragmentation`;
- peak fragmentation = the highest `fragmentation` over the capture, first reached at its time;
- lifetime peak = the highest `peak_bytes_in_use` (the allocator's high-water mark since it was
  created, which only grows, so the value after the last event);
- peak in use = the highest bytes_allocated + bytes_reserved (XProf's "stack + heap"; the heap's
  peak when nothing is reserved), first reached at its time;
- the fragmentation curve: `fragmentation` after each event, a step function, downsampled as the
  byte curves (`series`), its maximum kept.
A stat no event reports leaves its figures out; events without a stat are skipped for its figures.

Where XProf (2.24.2, `xprof/convert/xplane_to_memory_profile.cc`) differs, on purpose:
- XProf takes its figures at the peak at the *last* event reaching the highest stack + heap, in the
  XPlane's line order, not in time order; with several events at the peak, which one it picks
  depends on which thread wrote them. We take the first in time (the Memory tab's peak event).
- XProf's lifetime peak is the `peak_bytes_in_use` of the last event in line order, which need not
  be the last in time: on the 8-GPU TensorFlow capture it shows GPU_4_bfc's lifetime peak as
  5,006,386,688 B, below the 6,208,853,760 B that allocator holds inside the capture. We take the
  highest.
- XProf counts allocations and frees on its timeline sampled to 1,000 points; the Memory tab counts
  every event.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from profscope.analysis.memory_records import MemoryRecords
from profscope.tools.memory import series
from profscope.tools.memory.answers import MemoryAllocatorStats, MemoryFractionSeries


def summary(
    records: MemoryRecords, peak_at: int, ns: Callable[[int | float], float]
) -> MemoryAllocatorStats | None:
    """The allocator's own figures (module docstring), None for records without them (Kineto's);
    `ns` turns a host-local time in ps into session ns."""
    stats = records.stats
    if stats is None:
        return None
    time_ps = records.time_ps
    in_use = records.allocated + np.maximum(records.reserved, 0)
    top = int(np.argmax(in_use))
    out = MemoryAllocatorStats(peak_in_use_bytes=int(in_use[top]), peak_in_use_ns=ns(time_ps[top]))
    free = int(stats.available[peak_at])
    if free >= 0:
        out.free_at_peak_bytes = free
        out.capacity_bytes = int(in_use[peak_at]) + free
    lifetime = stats.lifetime_peak[stats.lifetime_peak >= 0]
    if lifetime.shape[0]:
        out.lifetime_peak_bytes = int(lifetime.max())
    known = np.flatnonzero(~np.isnan(stats.fragmentation))
    if known.shape[0]:
        fraction = stats.fragmentation[known]
        highest = int(np.argmax(fraction))
        out.peak_fragmentation = float(fraction[highest])
        out.peak_fragmentation_ns = ns(time_ps[known[highest]])
        at_peak = float(stats.fragmentation[peak_at])
        if not np.isnan(at_peak):
            out.fragmentation_at_peak = at_peak
        keep = series.downsample(fraction)
        out.fragmentation = MemoryFractionSeries(
            time_ns=[ns(t) for t in time_ps[known[keep]].tolist()],
            fraction=fraction[keep].tolist(),
            events=int(known.shape[0]),
        )
    return out
