"""One host's allocators as the Memory tab shows them.

Definitions (docs/MEMORY.md has them with the reasons):
- allocated(t), reserved(t): the `Total Allocated` / `Total Reserved` of the last `[memory]` event
  at or before t; before the first event, the first event's total minus its own bytes.
- peak: the first event where allocated reaches its maximum over the capture; its step is the step
  whose window holds its time, its op the op the event names itself (an XPlane event's `tf_op`),
  else the innermost host op enclosing it (`analysis.memory_records`, `analysis.memory_xplane_records`).
- live at the peak: allocations at or before the peak event whose free comes after it or never;
  before_capture_bytes = peak allocated − their bytes (blocks allocated before the capture).
- lifetime = free time − allocation time; an allocation without a free was never freed in the capture.
- an op's peak_bytes: its blocks live at the peak; the rows sum to live_at_peak_bytes.
- an XPlane allocator's own figures (capacity, free and fragmentation at the peak, the fragmentation
  curve, its lifetime peak): `allocator_stats`.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import msgspec
import numpy as np

from profscope.analysis import memory_pairing
from profscope.analysis.events import HostEvents
from profscope.analysis.memory import step_at
from profscope.analysis.memory_peaks import NO_OP, op_name
from profscope.analysis.memory_records import MemoryRecords
from profscope.analysis.steps import Steps
from profscope.tools.memory import allocator_stats, series
from profscope.tools.memory import peak_step as _peak_step
from profscope.tools.memory.answers import (
    MemoryAllocation,
    MemoryDevice,
    MemoryLiveGroup,
    MemoryOpRow,
    MemoryPeak,
    MemoryPeakStep,
    MemorySeries,
    MemoryStep,
)
from profscope.units import format_bytes, format_count

TABLE_ROWS = 200
# How much trace the peak's link shows around its op: the op's own duration on each side, at least this.
MIN_TRACE_PAD_PS = 1_000_000
RESERVED_ZERO = (
    "reserved not observed: every allocator event reports 0 reserved bytes (a CPU allocator keeps no "
    "cache of its own)"
)
RESERVED_MISSING = "reserved not observed: the [memory] events carry no Total Reserved"
RESERVED_ZERO_XPLANE = (
    "reserved not observed: every allocator event reports 0 bytes_reserved (the figure XProf shows as "
    "stack reserved bytes)"
)


class _OpShapes(msgspec.Struct):
    input_dims: list[list[int]] | None = msgspec.field(name="Input Dims", default=None)
    input_types: list[str] | None = msgspec.field(name="Input type", default=None)
    concrete: list[str] | None = msgspec.field(name="Concrete Inputs", default=None)


_decode_shapes = msgspec.json.Decoder(_OpShapes).decode


@dataclasses.dataclass(frozen=True)
class HostClock:
    """Where a host sits on the session timeline, and its global event ids."""

    name: str
    offset_ps: int
    host_index: int

    def ns(self, ps: int | float) -> float:
        return (int(ps) + self.offset_ps) / 1000

    def event_id(self, index: int) -> int:
        return (self.host_index << 32) + int(index)


class _Names:
    """Op names, paths and shapes of one host's events, each worked out once."""

    def __init__(self, events: HostEvents) -> None:
        self.events = events
        self._shapes: dict[int, str | None] = {}

    def name(self, op: int) -> str:
        trace = self.events.trace
        return NO_OP if op < 0 else trace.strings[trace.ev_name[op]]

    def path(self, op: int) -> list[str]:
        """The op and the slices enclosing it, outermost first."""
        chain = []
        while op >= 0:
            chain.append(self.name(op))
            op = int(self.events.parent[op])
        return chain[::-1]

    def op_of(self, records: MemoryRecords, record: int) -> str | None:
        """A record's op: the event's own (`tf_op`), else the innermost host slice enclosing it."""
        return op_name(self.events, records, record)

    def shape_of(self, records: MemoryRecords, record: int) -> str | None:
        """A record's shape: the event's own, else its enclosing op's input shapes."""
        own = records.own.text(records.own.shape, record) if records.own is not None else None
        return own if own is not None else self.shape(int(records.op[record]))

    def shape(self, op: int) -> str | None:
        """The op's input shapes when `record_shapes` gave them: its non-empty `Input Dims`, else the
        size lists among its `Concrete Inputs` (`aten::empty([4194304])` has no tensor inputs)."""
        if op < 0:
            return None
        if op not in self._shapes:
            self._shapes[op] = _shape_text(self.events.trace.args_json(op))
        return self._shapes[op]


def _shape_text(raw: bytes) -> str | None:
    if not raw:
        return None
    try:
        args = _decode_shapes(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    dims = [d for d in args.input_dims or [] if d]
    if dims:
        return ", ".join(f"[{', '.join(map(str, d))}]" for d in dims)
    lists = [
        c
        for c, kind in zip(args.concrete or [], args.input_types or [])
        if kind == "ScalarList" and c.startswith("[")
    ]
    return ", ".join(lists) or None


def device(
    records: MemoryRecords, events: HostEvents, steps: Steps, clock: HostClock, label: str
) -> MemoryDevice:
    """The Memory tab's figures for one allocator (module docstring)."""
    names = _Names(events)
    pairs = memory_pairing.pair(records)
    time_ps = records.time_ps
    allocated = records.allocated
    before = int(allocated[0] - records.size[0])
    peak_at = int(np.argmax(allocated))
    alloc_size = records.size[pairs.alloc]
    live = pairs.live_at(peak_at)
    live_bytes = int(alloc_size[live].sum())
    never = pairs.free < 0
    orphan_bytes = int(-records.size[pairs.freed_before_capture].sum())
    reserved, reserved_reason = _reserved(records, clock)
    own_stats = allocator_stats.summary(records, peak_at, clock.ns)
    peak_step = _peak_step.breakdown(events, records, pairs, peak_at)
    return MemoryDevice(
        host=clock.name,
        label=label,
        device_type=records.device_type,
        device_id=records.device_id,
        events=len(records),
        start_ns=clock.ns(time_ps[0]),
        end_ns=clock.ns(time_ps[-1]),
        allocated=_series(time_ps, allocated, clock),
        reserved=reserved if reserved is not None else msgspec.UNSET,
        reserved_reason=reserved_reason if reserved_reason is not None else msgspec.UNSET,
        peak=_peak(records, peak_at, reserved is not None, names, steps, clock),
        steps=_steps(records, pairs, before, steps, clock),
        live_at_peak=_live_groups(records, pairs.alloc[live], names),
        live_at_peak_bytes=live_bytes,
        live_at_peak_count=int(live.sum()),
        before_capture_bytes=int(allocated[peak_at]) - live_bytes,
        allocations=_allocation_rows(records, pairs.alloc, pairs.free, names, steps, clock),
        allocations_count=int(pairs.alloc.shape[0]),
        allocated_bytes=int(alloc_size.sum()),
        never_freed=_allocation_rows(records, pairs.alloc[never], pairs.free[never], names, steps, clock),
        never_freed_count=int(never.sum()),
        never_freed_bytes=int(alloc_size[never].sum()),
        freed_before_capture_count=int(pairs.freed_before_capture.shape[0]),
        freed_before_capture_bytes=orphan_bytes,
        ops=_op_rows(records, pairs, live, names),
        notes=_notes(records, pairs),
        allocator_stats=own_stats if own_stats is not None else msgspec.UNSET,
        peak_step=peak_step if isinstance(peak_step, MemoryPeakStep) else msgspec.UNSET,
        peak_step_reason=peak_step if isinstance(peak_step, str) else msgspec.UNSET,
    )


def _series(time_ps: np.ndarray, values: np.ndarray, clock: HostClock) -> MemorySeries:
    keep = series.downsample(values)
    return MemorySeries(
        time_ns=[(t + clock.offset_ps) / 1000 for t in time_ps[keep].tolist()],
        bytes=values[keep].tolist(),
        events=int(values.shape[0]),
    )


def _reserved(records: MemoryRecords, clock: HostClock) -> tuple[MemorySeries | None, str | None]:
    if (records.reserved < 0).any():
        return None, RESERVED_MISSING
    if not records.reserved.any():
        return None, RESERVED_ZERO_XPLANE if records.allocator else RESERVED_ZERO
    return _series(records.time_ps, records.reserved, clock), None


def _peak(
    records: MemoryRecords, at: int, with_reserved: bool, names: _Names, steps: Steps, clock: HostClock
) -> MemoryPeak:
    op = int(records.op[at])
    time_ps = int(records.time_ps[at])
    step = int(step_at(steps, records.time_ps[at : at + 1])[0])
    trace = names.events.trace
    if op >= 0:
        lo, hi = int(trace.ev_start_ps[op]), int(trace.ev_start_ps[op] + trace.ev_dur_ps[op])
    else:
        lo = hi = time_ps
    pad = max(hi - lo, MIN_TRACE_PAD_PS)
    return MemoryPeak(
        allocated_bytes=int(records.allocated[at]),
        reserved_bytes=int(records.reserved[at]) if with_reserved else msgspec.UNSET,
        time_ns=clock.ns(time_ps),
        step=steps.names[step] if step >= 0 else msgspec.UNSET,
        step_number=int(steps.numbers[step]) if step >= 0 else msgspec.UNSET,
        op=_or_unset(names.op_of(records, at)),
        op_path=_op_path(records, at, names),
        memory_event_id=clock.event_id(records.event[at]),
        op_event_id=clock.event_id(op) if op >= 0 else msgspec.UNSET,
        trace_start_ns=max(0.0, clock.ns(lo - pad)),
        trace_end_ns=clock.ns(hi + pad),
    )


def _or_unset(text: str | None) -> str | msgspec.UnsetType:
    return text if text else msgspec.UNSET


def _op_path(records: MemoryRecords, record: int, names: _Names) -> list[str]:
    """The slices enclosing a record, outermost first, then the op it names itself when it names one
    (a TensorFlow event's `tf_op` inside the op's TraceMe)."""
    path = names.path(int(records.op[record]))
    own = records.own.text(records.own.op, record) if records.own is not None else None
    return path + [own] if own is not None and path[-1:] != [own] else path


def _steps(
    records: MemoryRecords, pairs: memory_pairing.Pairs, before: int, steps: Steps, clock: HostClock
) -> list[MemoryStep]:
    """Per step: the totals at its ends, its highest total, its allocations and what they leave."""
    time_ps, allocated = records.time_ps, records.allocated
    count = len(steps)
    if not count:
        return []
    with_before = np.concatenate(([before], allocated))

    def values_at(times: np.ndarray) -> np.ndarray:
        """allocated(t) of each time: the last event at or before it (`before` when none)."""
        return with_before[np.searchsorted(time_ps, times, side="right")]

    start, end = steps.start_ps.astype(np.int64), steps.end_ps.astype(np.int64)
    carried = values_at(start - 1)
    lo = np.searchsorted(time_ps, start, side="left")
    hi = np.searchsorted(time_ps, end, side="left")
    highest = carried.copy()
    nonempty = np.flatnonzero(hi > lo)
    if nonempty.shape[0]:
        # the max of each step's events: reduceat over its range (ranges of distinct steps may overlap
        # only when steps overlap, so each is reduced on its own bounds)
        bounds = np.stack((lo[nonempty], hi[nonempty]), axis=1).ravel()
        maxima = np.maximum.reduceat(np.concatenate((allocated, [0])), bounds)[::2]
        highest[nonempty] = np.maximum(carried[nonempty], maxima)
    alloc_step = step_at(steps, time_ps[pairs.alloc])
    inside = alloc_step >= 0
    size = records.size[pairs.alloc]
    made = np.bincount(alloc_step[inside], minlength=count)
    never = inside & (pairs.free < 0)
    left = np.bincount(alloc_step[never], weights=size[never], minlength=count)
    ends = values_at(end - 1)
    names, numbers = steps.names, steps.numbers.tolist()
    return [
        MemoryStep(
            name=names[k],
            number=int(numbers[k]),
            start_ns=clock.ns(s),
            end_ns=clock.ns(e),
            start_bytes=int(c),
            end_bytes=int(v),
            peak_bytes=int(m),
            allocations=int(a),
            never_freed_bytes=int(n),
        )
        for k, (s, e, c, v, m, a, n) in enumerate(
            zip(
                start.tolist(),
                end.tolist(),
                carried.tolist(),
                ends.tolist(),
                highest.tolist(),
                made.tolist(),
                left.tolist(),
            )
        )
    ]


def _group(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Rows with equal values in every column, numbered: the first row of each group and each row's
    group. One column (Kineto's records, without texts of their own) is grouped by a plain sort."""
    if len(columns) == 1:
        _, first, where = np.unique(columns[0], return_index=True, return_inverse=True)
    else:
        _, first, where = np.unique(np.stack(columns, axis=1), axis=0, return_index=True, return_inverse=True)
    return first, where.reshape(-1)


def _live_groups(records: MemoryRecords, live: np.ndarray, names: _Names) -> list[MemoryLiveGroup]:
    """The live blocks grouped by (op, shape, dtype); records alike in what names them are counted
    together first (one row per enclosing op and own texts), so the names are looked up once each."""
    own = records.own
    columns = [records.op[live]]
    if own is not None:
        columns += [own.op[live], own.shape[live], own.dtype[live]]
    first, where = _group(columns)
    key_bytes = np.bincount(where, weights=records.size[live], minlength=first.shape[0])
    key_count = np.bincount(where, minlength=first.shape[0])
    first = live[first]  # a record of each key, for its texts
    groups: dict[tuple[str, str | None, str | None], list[int]] = defaultdict(lambda: [0, 0])
    for record, b, c in zip(first.tolist(), key_bytes.tolist(), key_count.tolist()):
        dtype = own.text(own.dtype, record) if own is not None else None
        group = groups[(names.op_of(records, record) or NO_OP, names.shape_of(records, record), dtype)]
        group[0] += int(b)
        group[1] += int(c)
    rows = [
        MemoryLiveGroup(op=op, shape=_or_unset(shape), dtype=_or_unset(dtype), bytes=b, count=c)
        for (op, shape, dtype), (b, c) in groups.items()
    ]
    rows.sort(key=lambda r: (-r.bytes, r.op))
    return rows[:TABLE_ROWS]


def _allocation_rows(
    records: MemoryRecords, alloc: np.ndarray, free: np.ndarray, names: _Names, steps: Steps, clock: HostClock
) -> list[MemoryAllocation]:
    """The `TABLE_ROWS` largest allocations of `alloc` (ties: the earlier first)."""
    size = records.size[alloc]
    chosen = np.lexsort((alloc, -size))[:TABLE_ROWS]
    step = step_at(steps, records.time_ps[alloc[chosen]])
    rows = []
    for k, i in zip(step.tolist(), chosen.tolist()):
        a, f = int(alloc[i]), int(free[i])
        t_alloc = int(records.time_ps[a])
        freed = f >= 0
        own = records.own
        rows.append(
            MemoryAllocation(
                addr=hex(int(records.addr[a])),
                size_bytes=int(records.size[a]),
                alloc_ns=clock.ns(t_alloc),
                free_ns=clock.ns(records.time_ps[f]) if freed else msgspec.UNSET,
                lifetime_ns=(int(records.time_ps[f]) - t_alloc) / 1000 if freed else msgspec.UNSET,
                alloc_op=_or_unset(names.op_of(records, a)),
                free_op=_or_unset(names.op_of(records, f)) if freed else msgspec.UNSET,
                shape=_or_unset(names.shape_of(records, a)),
                dtype=_or_unset(own.text(own.dtype, a)) if own is not None else msgspec.UNSET,
                region=_or_unset(own.text(own.region, a)) if own is not None else msgspec.UNSET,
                step=steps.names[k] if k >= 0 else msgspec.UNSET,
            )
        )
    return rows


def _op_rows(
    records: MemoryRecords, pairs: memory_pairing.Pairs, live: np.ndarray, names: _Names
) -> list[MemoryOpRow]:
    """One row per allocating op name (ops of one name summed), by weighted counts over name codes."""
    own = records.own
    columns = [records.op[pairs.alloc]] + ([own.op[pairs.alloc]] if own is not None else [])
    first, where = _group(columns)
    key_names = [names.op_of(records, r) or NO_OP for r in pairs.alloc[first].tolist()]
    labels = sorted(set(key_names))
    code_of = {label: i for i, label in enumerate(labels)}
    code = np.array([code_of[name] for name in key_names], dtype=np.int64)[where]
    size = records.size[pairs.alloc].astype(np.float64)
    freed = pairs.free >= 0
    n = len(labels)

    def total(mask: np.ndarray | None = None, weights: np.ndarray | None = None) -> list[int]:
        chosen = code if mask is None else code[mask]
        w = None if weights is None else (weights if mask is None else weights[mask])
        return [int(v) for v in np.bincount(chosen, weights=w, minlength=n).tolist()]

    rows = [
        MemoryOpRow(
            op=label,
            allocated_bytes=allocated,
            allocations=count,
            freed=done,
            peak_bytes=at_peak,
            never_freed_bytes=never,
        )
        for label, allocated, count, done, at_peak, never in zip(
            labels,
            total(None, size),
            total(),
            total(freed),
            total(live, size),
            total(~freed, size),
        )
    ]
    rows.sort(key=lambda r: (-r.allocated_bytes, r.op))
    return rows[:TABLE_ROWS]


def _notes(records: MemoryRecords, pairs: memory_pairing.Pairs) -> list[str]:
    """What the records say about themselves that a reader of the figures should know."""
    notes = []
    drift = int((np.diff(records.allocated) != records.size[1:]).sum())
    if drift:
        notes.append(
            f"{format_count(drift)} of {format_count(len(records))} events change Total Allocated by other than "
            "their own Bytes (allocations of other threads or events the profiler dropped)"
        )
    if pairs.reused_without_free:
        notes.append(
            f"{format_count(pairs.reused_without_free)} addresses were allocated again without a recorded free: "
            "the earlier block is listed as never freed"
        )
    if pairs.size_mismatches:
        notes.append(
            f"{format_count(pairs.size_mismatches)} frees release another size than their allocation"
        )
    if pairs.freed_before_capture.shape[0]:
        size = -int(records.size[pairs.freed_before_capture].sum())
        notes.append(
            f"{format_count(pairs.freed_before_capture.shape[0])} frees ({format_bytes(size)}) release blocks "
            "allocated before the capture started"
        )
    return notes
