"""Summary levels and counter levels of the level-of-detail index for a spilled trace, in bounded memory.

Summaries (`lod._summary_pyramid`): level z's boxes are the (pixel bin start >> z, row) groups of
all events of visible level < z, so they can be computed window by window of start time: a window
holds every event with start in [T_k, T_k+1) (boundaries at quantiles of the sampled starts, about
WINDOW_EVENTS events each, read from the `order` files where each group is sorted by start), and
runs the in-memory recurrence current(z) = reduce(current(z-1) >> 1 ∪ group z) on its own events.
Bins are monotone in start, so boxes of one bin can only come from consecutive windows: each
level's last bin is held back and summed with the next window's first bin when equal. Whether a
level is stored depends on the global box count of every level, so a first pass counts the boxes
(from their distinct (bin, row) keys alone, without the sums), the in-memory decision (stored size +
events since > PYRAMID_GAIN * boxes) is replayed on the counts, and a second pass writes the stored
levels.

Counters (`lod.counter_pyramid_of`): each level reduces the last stored level (or the samples) by
(track, bin >> shift), a streamed pass whose last group is carried into the next chunk (min / max
of the two parts, the later last); counted first, written when stored. Small counter columns go
through the in-memory function itself.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

import numpy as np

from profscope import spill
from profscope.columns import Trace
from profscope.spill import ColumnReader, NpyColumn, RecordFile
from profscope.trace import lod
from profscope.trace.lod import CounterBins, Summaries


class _Build(Protocol):
    """What `lod_spilled` has made by the time the summaries are computed."""

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


def _part(s: Summaries, lo: int, hi: int) -> Summaries:
    return Summaries(s.bin[lo:hi], s.row[lo:hi], s.count[lo:hi], s.busy[lo:hi])


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
        events = max(build.capacity // SUMMARY_WORK_BYTES, 1024)
        group, start = build.samples
        starts = np.sort(start[group <= top])
        stride = max(events // spill.SAMPLE_EVERY, 1)
        self.bounds = np.unique(starts[stride::stride])
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
        counts = self._count()
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
            self._sweep(set(levels))
        return levels

    def _count(self) -> list[int]:
        """Boxes per level, as many as `_sweep` emits, from their (bin, row) keys alone: counting
        needs no sums, and a plain sort of the keys is several times cheaper than the reduction."""
        build = self.build
        counts = [0] * (self.top + 1)
        held: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # level → (bins, rows) of its last bin
        starts = ColumnReader(build.order_start)
        for w in range(self.bounds.shape[0] + 1):
            bins = rows = np.zeros(0, np.int64)
            for level in range(self.top + 1):
                lo, hi = int(self.cuts[level][w]), int(self.cuts[level][w + 1])
                if hi == lo and bins.shape[0] == 0:
                    continue
                bins, rows = _distinct(
                    np.concatenate((bins >> 1, starts.read(lo, hi) >> level)),
                    np.concatenate((rows, build.order_row.read(lo, hi))),
                    self.num_rows,
                )
                box_bins, box_rows = bins, rows
                if level in held:
                    held_bins, held_rows = held.pop(level)
                    if bins[0] == held_bins[0]:
                        k = int(np.searchsorted(bins, bins[0], side="right"))
                        first_bins, first_rows = _distinct(
                            np.concatenate((held_bins, bins[:k])),
                            np.concatenate((held_rows, rows[:k])),
                            self.num_rows,
                        )
                        box_bins = np.concatenate((first_bins, bins[k:]))
                        box_rows = np.concatenate((first_rows, rows[k:]))
                    else:
                        counts[level] += held_bins.shape[0]
                j = int(np.searchsorted(box_bins, box_bins[-1], side="left"))
                counts[level] += j
                held[level] = (box_bins[j:], box_rows[j:])
        starts.close()
        for level, (held_bins, _) in held.items():
            counts[level] += held_bins.shape[0]
        return counts

    def _sweep(self, write: set[int]) -> list[int]:
        """One pass over the windows: box counts of every level (and the stored levels written)."""
        build = self.build
        last_level = max(write) if write else self.top
        counts = [0] * (self.top + 1)
        pending: dict[int, Summaries] = {}
        columns = {
            level: {
                f: NpyColumn(os.path.join(build.lod_dir, f"sum{level}_{f}.npy"), np.dtype(np.int64))
                for f in _SUMMARY_FIELDS
            }
            for level in write
        }

        def emit(level: int, boxes: Summaries) -> None:
            counts[level] += len(boxes)
            if level in columns and len(boxes):
                for f in _SUMMARY_FIELDS:
                    columns[level][f].append(getattr(boxes, f))

        starts = ColumnReader(build.order_start)
        for w in range(self.bounds.shape[0] + 1):
            current = Summaries.empty()
            for level in range(last_level + 1):
                lo, hi = int(self.cuts[level][w]), int(self.cuts[level][w + 1])
                if hi == lo and len(current) == 0:
                    continue
                start = starts.read(lo, hi)
                current = lod._reduce_summaries(
                    np.concatenate((current.bin >> 1, start >> level)),
                    np.concatenate((current.row, build.order_row.read(lo, hi))),
                    np.concatenate((current.count, np.ones(hi - lo, np.int64))),
                    np.concatenate((current.busy, build.order_dur.read(lo, hi))),
                    self.num_rows,
                )
                boxes = current
                held = pending.get(level)
                if held is not None and len(boxes):
                    # The bin held back from earlier windows, summed with this window's first bin.
                    del pending[level]
                    if boxes.bin[0] == held.bin[0]:
                        k = int(np.searchsorted(boxes.bin, held.bin[0], side="right"))
                        merged = _joined(held, _part(boxes, 0, k), self.num_rows)
                        rest = _part(boxes, k, len(boxes))
                        boxes = Summaries(
                            *(np.concatenate((getattr(merged, f), getattr(rest, f))) for f in _SUMMARY_FIELDS)
                        )
                    else:
                        emit(level, held)
                if len(boxes):
                    j = int(np.searchsorted(boxes.bin, boxes.bin[-1], side="left"))
                    emit(level, _part(boxes, 0, j))
                    pending[level] = _part(boxes, j, len(boxes))
        starts.close()
        for level, held in pending.items():
            emit(level, held)
        for level, fields in columns.items():
            self.stored[level] = {f: col.mapped() for f, col in fields.items()}
        return counts


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
