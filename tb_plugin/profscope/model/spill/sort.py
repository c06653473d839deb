"""External sorting by pieces: rows scattered into files, one piece in memory at a time.

A sort whose first key is a track (or any small id) and whose next key is a time runs as a
partition pass and a pass over the pieces: consecutive tracks are packed into pieces of at most
`capacity` bytes of work (the final order is by track first, so each piece lands at its own offset
of the output), and a track bigger than that alone is cut by its own times at quantiles of a sample
(one row in `spill.SAMPLE_EVERY`), so piece j holds the times in [split[j-1], split[j]). Each
piece's file gets its rows in the order they were read, so a stable in-memory sort of a piece equals
the global stable sort restricted to it. Equal times are never cut apart, so a piece of one time
repeated more than the capacity allows stays whole (and bigger than the budget).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterator

import numpy as np

from profscope.model import arrays
from profscope.model.spill.files import RecordFile, WriteBehind

# A track cut by time is cut into pieces filled to this share of the capacity (the sample's
# quantiles are estimates).
SPLIT_FILL = 0.7


@dataclasses.dataclass(frozen=True)
class Piece:
    """Tracks [track_lo, track_hi); `split`: one part of a track cut by time, its times in
    [time_lo, time_hi) (None: unbounded)."""

    track_lo: int
    track_hi: int
    split: bool = False
    time_lo: int | None = None
    time_hi: int | None = None


class Plan:
    """Pieces in output order, and which piece a (track, time) row belongs to."""

    def __init__(self, pieces: list[Piece], first: np.ndarray, splits: dict[int, np.ndarray]) -> None:
        self.pieces = pieces
        self._first = first
        self._splits = splits
        # For `_combined`: the tracks cut by time, and how many cut points the tracks below each have.
        self._cut = [t for t in sorted(splits) if splits[t].shape[0]]
        counts = np.zeros(first.shape[0], dtype=np.int64)
        for t in self._cut:
            counts[t] = splits[t].shape[0]
        self._below = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)

    def __len__(self) -> int:
        return len(self.pieces)

    def assign(self, track: np.ndarray, time: np.ndarray) -> np.ndarray:
        """Piece of each row; tracks must lie in [0, number of tracks)."""
        piece = self._first[track]
        if not self._splits:
            return piece
        combined = self._combined(time)
        if combined is not None:
            # Every (track, time) as one number, the tracks' times in ranges of their own, and the
            # cut points likewise: the cut points at or before a row's time are those at or
            # before its number less those of the tracks below its own. One search of the cut
            # points, where a sort by track and a search per cut track took 4.4 s over the
            # 78.6 M events of the 2.2 GB benchmark XPlane (finalize and index; 2026-12-06).
            span, base, points = combined
            key = track.astype(np.int64) * span + (time - base)
            return piece + np.searchsorted(points, key, side="right") - self._below[track]
        cut = np.zeros(self._first.shape[0], dtype=bool)
        cut[list(self._splits)] = True
        rows = np.flatnonzero(cut[track])
        if rows.shape[0] == 0:
            return piece
        if len(self._splits) > 1:
            # Grouped by track (stable: row order kept), so the loop below runs once per track.
            rows = rows[arrays.stable_argsort(track[rows])]
        tracks = track[rows]
        bounds = np.flatnonzero(np.concatenate(([True], tracks[1:] != tracks[:-1], [True])))
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            mine = rows[lo:hi]
            piece[mine] += np.searchsorted(self._splits[int(tracks[lo])], time[mine], side="right")
        return piece

    def _combined(self, time: np.ndarray) -> tuple[int, int, np.ndarray] | None:
        """(span, base, cut points) of `assign`'s numbers track * span + (time - base), or None
        where they would not fit in int64."""
        if time.dtype != np.int64 or not time.shape[0]:
            return None
        lows = [int(time.min())] + [int(self._splits[t][0]) for t in self._cut]
        highs = [int(time.max())] + [int(self._splits[t][-1]) for t in self._cut]
        base, span = min(lows), max(highs) - min(lows) + 1
        if self._first.shape[0] * span >= 1 << 63:
            return None
        points = np.concatenate(
            [np.zeros(0, np.int64)]
            + [int(t) * span + (self._splits[t].astype(np.int64) - base) for t in self._cut]
        )
        return span, base, points


def plan(cost: np.ndarray, capacity: int, sample_track: np.ndarray, sample_time: np.ndarray) -> Plan:
    """Pieces for rows whose work per track is `cost` (bytes); tracks costing more than `capacity`
    are cut at quantiles of their sampled times."""
    pieces: list[Piece] = []
    first = np.zeros(cost.shape[0], dtype=np.int64)
    splits: dict[int, np.ndarray] = {}
    group_lo, filled = 0, 0
    for t, c in enumerate(cost.tolist()):
        if c > capacity:
            if t > group_lo:
                pieces.append(Piece(group_lo, t))
            times = np.sort(sample_time[sample_track == t])
            parts = math.ceil(c / (capacity * SPLIT_FILL))
            picks = (np.arange(1, parts) * times.shape[0]) // parts
            split = arrays.unique(times[picks]) if times.shape[0] else np.zeros(0, np.int64)
            first[t] = len(pieces)
            bounds = [None, *split.tolist(), None]
            pieces.extend(Piece(t, t + 1, True, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:]))
            splits[t] = split
            group_lo, filled = t + 1, 0
            continue
        if filled + c > capacity and t > group_lo:
            pieces.append(Piece(group_lo, t))
            group_lo, filled = t, 0
        first[t] = len(pieces)
        filled += c
    if group_lo < cost.shape[0]:
        pieces.append(Piece(group_lo, cost.shape[0]))
    return Plan(pieces, first, splits)


def range_plan(counts: np.ndarray, capacity_rows: int) -> list[tuple[int, int]]:
    """Consecutive blocks grouped into ranges of at most `capacity_rows` rows (a block bigger than
    that alone is a range of its own): [(first block, end block)]."""
    ranges: list[tuple[int, int]] = []
    lo, filled = 0, 0
    for i, c in enumerate(counts.tolist()):
        if filled + c > capacity_rows and i > lo:
            ranges.append((lo, i))
            lo, filled = i, 0
        filled += c
    if lo < counts.shape[0]:
        ranges.append((lo, counts.shape[0]))
    return ranges


class Buckets:
    """Records scattered into numbered files, each read back whole in the order it got them; the
    files are written behind (`WriteBehind`, at most `BEHIND_BYTES` waiting) until one is read."""

    BEHIND_BYTES = 16 << 20
    # Rows grouped at a time: their grouped copy stays well below malloc's mmap threshold of an
    # ingest (`spill.INGEST_MMAP_BYTES`), so it reuses heap pages where a chunk's copy (33 MB in
    # the index of the 214 MB XPlane) was mapped afresh each time and its pages faulted in.
    GROUP_BYTES = 8 << 20

    def __init__(self, folder: str, name: str, dtype: np.dtype, count: int) -> None:
        self.dtype = np.dtype(dtype)
        self._folder = folder
        self._name = name
        self.sizes = np.zeros(count, dtype=np.int64)
        self._behind = WriteBehind(self.BEHIND_BYTES)

    def _path(self, i: int) -> str:
        return os.path.join(self._folder, f"{self._name}-{i}")

    def add(self, which: np.ndarray, records: np.ndarray) -> None:
        if records.shape[0] == 0:
            return
        step = max(self.GROUP_BYTES // self.dtype.itemsize, 1)
        for at in range(0, records.shape[0], step):
            grouped, offsets = arrays.grouped_records(
                records[at : at + step], which[at : at + step], self.sizes.shape[0]
            )
            for i in np.flatnonzero(offsets[1:] > offsets[:-1]).tolist():
                lo, hi = int(offsets[i]), int(offsets[i + 1])
                self._behind.put(self._path(i), int(self.sizes[i]) * self.dtype.itemsize, [grouped[lo:hi]])
                self.sizes[i] += hi - lo

    def load(self, i: int, keep: bool = False) -> np.ndarray:
        """Bucket `i`'s records (its file removed unless `keep`)."""
        if self.sizes[i] == 0:
            return np.zeros(0, self.dtype)
        self._behind.drain()
        path = self._path(i)
        out = np.fromfile(path, dtype=self.dtype)
        if not keep:
            os.remove(path)
        return out

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.sizes.shape[0]))


class RunPieces:
    """Rows of a record file scattered to pieces without copying the long runs of one piece.

    A chunk whose rows come in runs of one piece at least `MIN_RUN_ROWS` long on average (an
    XPlane's events, added line by line) is remembered as row ranges of the source file, read again
    when its piece is laid out; any other chunk (a Chrome trace's, whose threads interleave) is
    written to the piece files (`Buckets`) with each row's index. A range costs a read call where
    a row through the files costs its copy, sort and write, hence ranges of a few hundred rows. A
    piece comes back as contiguous columns plus `idx` (its rows' source index), in source order
    whichever way its rows went, so a stable sort of it is the same either way. Source rows are
    read by one piece alone: `load` gives their pages back (`RecordFile.release`), and
    `release_unread` those of a source no piece reads again.
    """

    MIN_RUN_ROWS = 256

    def __init__(self, source: RecordFile, folder: str, name: str, count: int) -> None:
        self.source = source
        self.dtype = np.dtype(source.dtype.descr + [("idx", "<i8")])
        self.buckets = Buckets(folder, name, self.dtype, count)
        # Per piece, in the order rows came: (from the source?, first row, end row); source rows
        # are numbered in the source file, the others in the piece's file.
        self.segments: list[list[tuple[bool, int, int]]] = [[] for _ in range(count)]

    def add(self, lo: int, records: np.ndarray, which: np.ndarray) -> None:
        """Rows `lo`… of the source (`records`), row i going to piece `which[i]`."""
        n = records.shape[0]
        if n == 0:
            return
        cut = np.flatnonzero(which[1:] != which[:-1]) + 1
        if (cut.shape[0] + 1) * self.MIN_RUN_ROWS <= n or cut.shape[0] == 0:
            bounds = [0, *cut.tolist(), n]
            for a, b in zip(bounds[:-1], bounds[1:]):
                self._segment(int(which[a]), True, lo + a, lo + b)
            return
        out = np.empty(n, self.dtype)
        for field in records.dtype.names or ():
            out[field] = records[field]
        out["idx"] = np.arange(lo, lo + n, dtype=np.int64)
        before = self.buckets.sizes.copy()
        self.buckets.add(which, out)
        for piece in np.flatnonzero(self.buckets.sizes != before).tolist():
            self._segment(piece, False, int(before[piece]), int(self.buckets.sizes[piece]))

    def _segment(self, piece: int, from_source: bool, lo: int, hi: int) -> None:
        segments = self.segments[piece]
        if segments and segments[-1][0] == from_source and segments[-1][2] == lo:
            segments[-1] = (from_source, segments[-1][1], hi)
        else:
            segments.append((from_source, lo, hi))

    def release_unread(self) -> None:
        """Once every row is added: give back the source's pages if no piece reads it again (all
        its chunks went to the piece files, as a Chrome trace's do)."""
        if not any(from_source for segments in self.segments for from_source, _, _ in segments):
            self.source.release(0, self.source.count)

    def load(self, piece: int) -> dict[str, np.ndarray]:
        """Piece `piece`'s rows as contiguous columns (its file removed, its source rows released)."""
        written = self.buckets.load(piece)
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        for from_source, lo, hi in self.segments[piece]:
            if from_source:
                parts.append((self.source.read(lo, hi), np.arange(lo, hi, dtype=np.int64)))
                self.source.release(lo, hi)
            else:
                parts.append((written[lo:hi], written["idx"][lo:hi]))
        self.segments[piece] = []
        recs = [rec for rec, _ in parts] or [np.zeros(0, self.source.dtype)]
        out = {n: np.concatenate([rec[n] for rec in recs]) for n in self.source.dtype.names or ()}
        out["idx"] = np.concatenate([idx for _, idx in parts] or [np.zeros(0, np.int64)])
        return out


def contiguous(records: np.ndarray, *names: str) -> list[np.ndarray]:
    """Fields of a record array as contiguous arrays (sorting strided fields is slower)."""
    return [np.ascontiguousarray(records[n]) for n in names]
