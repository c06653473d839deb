"""Summary levels and counter levels of the level-of-detail index for a spilled trace, in bounded memory.

Summaries (`lod._summary_pyramid`): level z's boxes are the (pixel bin start >> z, row) groups of
all events of visible level < z, so they can be computed window by window of start time: a window
holds every event with start in [T_k, T_k+1) (boundaries at quantiles of the sampled starts, about
WINDOW_EVENTS events each, read from the `order` files where each group is sorted by start), and
runs the in-memory recurrence current(z) = reduce(current(z-1) >> 1 ∪ group z) on its own events,
keeping a window's boxes in (row, bin) order between levels (`lod.next_level_by_row`: no sort per
level) and putting a level's finished boxes in (bin, row) order only where they are written.
Bins are monotone in start, so boxes of one bin can only come from consecutive windows: each
level's last bin is held back and summed with the next window's first bin when equal. Whether a
level is stored depends on the global box count of every level, so a first pass counts the boxes
(from their distinct (bin, row) keys alone, without the sums), the in-memory decision (stored size +
events since > PYRAMID_GAIN * boxes) is replayed on the counts, and a second pass writes the stored
levels. Each pass runs the two halves of the windows on two threads; a half holds back its last bin
and (the later one) its first, which are joined where the halves meet when they are one bin, so the
count also gives the offset at which the later half writes.

Counters (`lod.counter_pyramid_of`): each level reduces the last stored level (or the samples) by
(track, bin >> shift), a streamed pass whose last group is carried into the next chunk (min / max
of the two parts, the later last); counted first, written when stored. Small counter columns go
through the in-memory function itself.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from profscope.engine.lod import index as lod
from profscope.engine.lod.index import CounterBins, Summaries
from profscope.model import arrays
from profscope.model.columns import Trace
from profscope.model.spill import budget as spill_budget
from profscope.model.spill.files import ColumnReader, NpyColumn, RecordFile


class _Build(Protocol):
    """What `spilled` has made by the time the summaries are computed."""

    trace: Trace
    n: int
    rows: int
    capacity: int
    lod_dir: str
    samples: np.ndarray  # (2, k): visible level group + 1 and start of sampled events
    group_off: np.ndarray
    group_counts: np.ndarray
    row_base: np.ndarray
    order_start: np.ndarray
    order_row: RecordFile
    order_dur: RecordFile


SUMMARY_WORK_BYTES = 240
COUNTER_WORK_BYTES = 120
_SUMMARY_FIELDS = ("bin", "row", "count", "busy")
_COUNTER_FIELDS = ("track", "bin", "min", "max", "last")


def _distinct(bins: np.ndarray, rows: np.ndarray, num_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (bin, row) pairs, sorted by (bin, row): `lod._reduce_summaries`' keys.
    (A sort and a mask: `np.unique` is many times slower on these keys with numpy 2.4.)"""
    b0 = int(bins.min())
    width = int(bins.max()) - b0 + 1
    num_rows = max(num_rows, 1)
    if width * num_rows < 2**62:
        key = np.sort((bins - b0) * num_rows + rows)
        key = key[np.concatenate(([True], key[1:] != key[:-1]))]
        return key // num_rows + b0, key % num_rows
    order = np.lexsort((rows, bins))
    bins, rows = bins[order], rows[order]
    keep = np.concatenate(([True], (bins[1:] != bins[:-1]) | (rows[1:] != rows[:-1])))
    return bins[keep], rows[keep]


def _joined(a: Summaries, b: Summaries, num_rows: int) -> Summaries:
    return lod._reduce_summaries(
        np.concatenate((a.bin, b.bin)),
        np.concatenate((a.row, b.row)),
        np.concatenate((a.count, b.count)),
        np.concatenate((a.busy, b.busy)),
        num_rows,
    )


class Windows:
    """The summary pyramid of a spilled trace, window by window of start time."""

    def __init__(self, build: _Build, top: int) -> None:
        self.build = build
        self.top = top
        self.num_rows = int(build.row_base[-1])
        self.stored: dict[int, dict[str, np.ndarray]] = {}
        # Two halves of the windows run at once (`_in_halves`), each within half the capacity.
        events = max(build.capacity // (2 * SUMMARY_WORK_BYTES), 1024)
        group, start = build.samples
        starts = np.sort(start[group <= top])
        stride = max(events // spill_budget.SAMPLE_EVERY, 1)
        self.bounds = arrays.unique(starts[stride::stride])
        # Where each window starts in each group: searchsorted(group's starts, bounds, "left"),
        # summed over chunks of the group (sorted, so the counts below a bound add up).
        self.cuts = []
        reader = ColumnReader(build.order_start)
        for g in range(top + 1):
            g_lo, g_hi = int(build.group_off[g]), int(build.group_off[g + 1])
            below = np.zeros(self.bounds.shape[0], dtype=np.int64)
            for lo in range(g_lo, g_hi, build.rows):
                below += np.searchsorted(
                    reader.read(lo, min(lo + build.rows, g_hi)), self.bounds, side="left"
                )
            self.cuts.append(np.concatenate(([g_lo], g_lo + below, [g_hi])))
        reader.close()

    def summaries(self) -> list[int]:
        """Levels worth storing (their arrays in `stored`), as `lod._summary_pyramid` decides."""
        if self.build.n == 0:
            return []
        counted = self._in_halves(
            lambda w_lo, w_hi, later: self._walk(_KEYS, w_lo, w_hi, range(self.top + 1), later)
        )
        counts = [_Layout.of(_KEYS, counted, level, self.num_rows).total for level in range(self.top + 1)]
        levels: list[int] = []
        stored_size, events_since, previous = 0, 0, 0
        for level in range(self.top + 1):
            new = int(self.build.group_counts[level])
            events_since += new
            if new == 0 and previous == 0:
                continue
            previous = counts[level]
            if stored_size + events_since > lod.PYRAMID_GAIN * previous:
                levels.append(level)
                stored_size, events_since = previous, 0
        if levels:
            self._write(levels, counted)
        return levels

    def _in_halves(self, run: Callable[[int, int, bool], _Half]) -> list[_Half]:
        """`run(first window, end window, later)` over each half of the windows, the later half
        on a second thread (numpy's sorts and reductions release the GIL)."""
        windows = self.bounds.shape[0] + 1
        if windows < 2:
            return [run(0, windows, False)]
        middle = windows // 2
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="profscope-summaries") as pool:
            later = pool.submit(run, middle, windows, True)
            first = run(0, middle, False)
            return [first, later.result()]

    def _walk(
        self,
        kind: _Kind,
        w_lo: int,
        w_hi: int,
        levels: Sequence[int],
        later: bool,
        emit: Callable[[int, Any], None] | None = None,
    ) -> _Half:
        """Windows [w_lo, w_hi) at `levels` (increasing): each level's boxes, each bin's given to
        `emit` (in (bin, row) order) once complete, but the last bin (and a later half's first)
        held in the result. A window's boxes are kept in (row, bin) order
        (`lod.next_level_by_row`), so a bin is picked out by a mask, not a slice. Levels between
        two of `levels` are skipped: the boxes of a level are the earlier level's, re-binned, with
        the events of the groups in between (how the tiles use the stored levels)."""
        build = self.build
        half = _Half([0] * (max(levels, default=-1) + 1), {}, {})

        def complete(level: int, boxes: Any, keep: np.ndarray | None = None) -> None:
            """`boxes` (those where `keep`) are final: no later window adds to their bins."""
            if later and level not in half.first:
                if keep is not None:
                    boxes, keep = kind.select(boxes, keep), None
                if not len(boxes):
                    return
                first = boxes.bin == boxes.bin.min()
                half.first[level] = kind.select(boxes, first)
                keep = ~first
            count = len(boxes) if keep is None else int(np.count_nonzero(keep))
            if count:
                half.emitted[level] += count
                if emit is not None:
                    emit(level, kind.in_bin_order(boxes if keep is None else kind.select(boxes, keep)))

        starts = ColumnReader(build.order_start)
        try:
            for w in range(w_lo, w_hi):
                current = kind.empty()
                below = -1  # the level of `current`
                for level in levels:
                    spans = [
                        (int(self.cuts[g][w]), int(self.cuts[g][w + 1])) for g in range(below + 1, level + 1)
                    ]
                    spans = [(lo, hi) for lo, hi in spans if hi > lo]
                    shift, below = level - below, level
                    if not spans and len(current) == 0:
                        continue
                    current = kind.grow(
                        current,
                        shift,
                        _read_spans(starts, spans) >> level,
                        _read_spans(build.order_row, spans),
                        _read_spans(build.order_dur, spans) if kind.sums else None,
                        self.num_rows,
                    )
                    low, high = int(current.bin.min()), int(current.bin.max())
                    rest = current
                    held = half.last.pop(level, None)
                    if held is not None and int(held.bin[0]) == low:
                        # The bin held back from earlier windows, summed with this window's first.
                        at_low = current.bin == low
                        joined = kind.join(held, kind.select(current, at_low), self.num_rows)
                        if low == high:
                            half.last[level] = joined
                            continue
                        complete(level, joined)
                        rest = kind.select(current, ~at_low)
                    elif held is not None:
                        complete(level, held)
                    at_high = rest.bin == high
                    complete(level, rest, ~at_high)
                    half.last[level] = kind.select(rest, at_high)
        finally:
            starts.close()
        return half

    def _write(self, levels: list[int], counted: list[_Half]) -> None:
        """The stored levels' boxes into their files, each half at the offsets the count gave."""
        build = self.build
        layouts = {level: _Layout.of(_KEYS, counted, level, self.num_rows) for level in levels}
        columns = {
            level: {
                f: NpyColumn(
                    os.path.join(build.lod_dir, f"sum{level}_{f}.npy"), np.dtype(np.int64), layout.total
                )
                for f in _SUMMARY_FIELDS
            }
            for level, layout in layouts.items()
        }

        def put(level: int, at: int, boxes: Summaries) -> None:
            for f in _SUMMARY_FIELDS:
                columns[level][f].write_at(at, getattr(boxes, f))

        def run(w_lo: int, w_hi: int, later: bool) -> _Half:
            at = {level: layout.later_at if later else 0 for level, layout in layouts.items()}

            def emit(level: int, boxes: Summaries) -> None:
                put(level, at[level], boxes)
                at[level] += len(boxes)

            return self._walk(_SUMS, w_lo, w_hi, levels, later, emit)

        written = self._in_halves(run)
        for level, layout in layouts.items():
            done = _Layout.of(_SUMS, written, level, self.num_rows)
            if done.sizes != layout.sizes:
                raise RuntimeError(f"summary level {level}: counted {layout.sizes} boxes, made {done.sizes}")
            for at, boxes in zip(done.held_at, done.held):
                put(level, at, boxes)
            self.stored[level] = {f: col.mapped() for f, col in columns[level].items()}


@dataclasses.dataclass
class _Keys:
    """Boxes as their (bin, row) keys alone: all that counting them needs."""

    bin: np.ndarray
    row: np.ndarray

    def __len__(self) -> int:
        return int(self.bin.shape[0])


class _Kind:
    """How boxes of one kind grow by a level, join and split: keys (counting) or sums (writing)."""

    def __init__(self, box: type, sums: bool) -> None:
        self.box, self.sums = box, sums
        self.fields = [f.name for f in dataclasses.fields(box)]

    def empty(self) -> Any:
        return self.box(*(np.zeros(0, np.int64) for _ in self.fields))

    def grow(
        self,
        current: Any,
        shift: int,
        bins: np.ndarray,
        rows: np.ndarray,
        dur: np.ndarray | None,
        num_rows: int,
    ) -> Any:
        """The boxes `shift` levels up in (row, bin) order: `current`'s re-binned, with the new events."""
        if not self.sums:
            return _Keys(
                *lod.next_level_by_row(current.bin, current.row, (), bins, rows, (), num_rows, shift)[:2]
            )
        assert dur is not None
        return lod.next_summaries(current, shift, bins, rows, dur, num_rows)

    def join(self, a: Any, b: Any, num_rows: int) -> Any:
        """Two parts of one bin as one, in (bin, row) order."""
        if not self.sums:
            return _Keys(*_distinct(np.concatenate((a.bin, b.bin)), np.concatenate((a.row, b.row)), num_rows))
        return _joined(a, b, num_rows)

    def select(self, boxes: Any, mask: np.ndarray) -> Any:
        return self.box(*(getattr(boxes, f)[mask] for f in self.fields))

    def in_bin_order(self, boxes: Any) -> Any:
        """Sums as they are written; keys are only counted, never written, so their order is kept."""
        return lod.in_bin_order(boxes) if self.sums else boxes


def _read_spans(column: ColumnReader | RecordFile, spans: list[tuple[int, int]]) -> np.ndarray:
    """Rows [lo, hi) of each span, one after the other."""
    if not spans:
        return column.read(0, 0)
    parts = [column.read(lo, hi) for lo, hi in spans]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


_KEYS = _Kind(_Keys, sums=False)
_SUMS = _Kind(Summaries, sums=True)


@dataclasses.dataclass
class _Half:
    """One run over consecutive windows, per level: how many boxes it gave `emit`, and the bins it
    held back: its last (the next half may go on with it) and, in a later half, its first."""

    emitted: list[int]
    first: dict[int, Any]
    last: dict[int, Any]


@dataclasses.dataclass
class _Layout:
    """Where one level's boxes go: the first half's emitted ones, the held bins where the halves
    meet (joined when they are one bin), the later half's emitted ones, its own last bin."""

    sizes: tuple[int, ...]  # emitted by the first half, seam, emitted by the later half, tail
    held: list[Any]  # the seam's boxes, then the tail's
    held_at: list[int]

    @property
    def total(self) -> int:
        return sum(self.sizes)

    @property
    def later_at(self) -> int:
        return self.sizes[0] + self.sizes[1]

    @staticmethod
    def of(kind: _Kind, halves: list[_Half], level: int, num_rows: int) -> _Layout:
        first = halves[0]
        a = first.last.get(level)
        head = tail = None
        later_emitted = 0
        if len(halves) > 1:
            b = halves[1]
            later_emitted = b.emitted[level]
            head, tail = b.first.get(level), b.last.get(level)
            if head is None:
                head, tail = tail, None
        if a is not None and head is not None and a.bin[0] == head.bin[0]:
            seam = [kind.join(a, head, num_rows)]
        else:
            seam = [x for x in (a, head) if x is not None]
        ends = [x for x in (tail,) if x is not None]
        emitted = first.emitted[level]
        seam_size, tail_size = sum(len(x) for x in seam), sum(len(x) for x in ends)
        held_at, at = [], emitted
        for x in seam:
            held_at.append(at)
            at += len(x)
        at += later_emitted
        for x in ends:
            held_at.append(at)
            at += len(x)
        return _Layout((emitted, seam_size, later_emitted, tail_size), seam + ends, held_at)


def counter_levels(build: _Build, top: int) -> dict[int, dict[str, np.ndarray]]:
    """Counter levels worth storing, as `lod.counter_pyramid_of` gives them (field → array)."""
    trace = build.trace
    count = int(trace.ctr_time_ps.shape[0])
    if count == 0:
        return {}
    readers = [ColumnReader(c) for c in (trace.ctr_track, trace.ctr_time_ps, trace.ctr_value)]
    if count * COUNTER_WORK_BYTES <= build.capacity:
        track, time, value = (r.read(0, count) for r in readers)
        for r in readers:
            r.close()
        levels = lod.counter_pyramid_of(CounterBins(track, time, value, value, value), top)
        return {z: {f: getattr(c, f) for f in _COUNTER_FIELDS} for z, c in levels.items()}
    base = [readers[0], readers[1], readers[2], readers[2], readers[2]]
    base_len, base_level = count, 0
    stored: dict[int, dict[str, np.ndarray]] = {}
    rows = max(build.capacity // COUNTER_WORK_BYTES, 1024)
    for level in range(1, top + 1):
        got = _reduce_stream(base, base_len, level - base_level, rows, None)
        if base_len > lod.PYRAMID_GAIN * got:
            out = {f: os.path.join(build.lod_dir, f"ctr{level}_{f}.npy") for f in _COUNTER_FIELDS}
            dtypes = (trace.ctr_track.dtype, np.int64, np.float64, np.float64, np.float64)
            columns = [NpyColumn(out[f], np.dtype(d)) for f, d in zip(_COUNTER_FIELDS, dtypes)]
            _reduce_stream(base, base_len, level - base_level, rows, columns)
            stored[level] = {f: col.mapped() for f, col in zip(_COUNTER_FIELDS, columns)}
            for reader in base:
                reader.close()
            base = [ColumnReader(stored[level][f]) for f in _COUNTER_FIELDS]
            base_len, base_level = got, level
    for reader in base:
        reader.close()
    return stored


def _reduce_stream(
    base: list[ColumnReader], count: int, shift: int, rows: int, out: list[NpyColumn] | None
) -> int:
    """`lod._reduce_counters(base, shift)` over chunks of `rows`; returns its length, and appends
    it to `out` when given."""
    total = 0
    held: list[Any] | None = None

    def emit(parts: list[np.ndarray]) -> None:
        nonlocal total
        total += int(parts[0].shape[0])
        if out is not None:
            for col, part in zip(out, parts):
                col.append(part)

    for lo in range(0, count, rows):
        track, bins, low, high, last = (r.read(lo, lo + rows) for r in base)
        bins = bins >> shift
        first = np.flatnonzero(np.concatenate(([True], (bins[1:] != bins[:-1]) | (track[1:] != track[:-1]))))
        ends = np.concatenate((first[1:], [bins.shape[0]])) - 1
        parts = [
            track[first],
            bins[first],
            np.minimum.reduceat(low, first),
            np.maximum.reduceat(high, first),
            last[ends],
        ]
        if held is not None:
            if parts[0][0] == held[0] and parts[1][0] == held[1]:
                parts[2][0] = np.minimum(held[2], parts[2][0])
                parts[3][0] = np.maximum(held[3], parts[3][0])
            else:
                emit([np.array([v], dtype=p.dtype) for v, p in zip(held, parts)])
        held = [p[-1] for p in parts]
        emit([p[:-1] for p in parts])
    if held is not None:
        dtypes = [r.array.dtype for r in base]
        dtypes[1] = np.dtype(np.int64)
        emit([np.array([v], dtype=d) for v, d in zip(held, dtypes)])
    return total
