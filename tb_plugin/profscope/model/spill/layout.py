"""Nesting rows and flow binding of a track too big for the memory budget, one piece (a range of
start times, `spill.sort`) at a time, with the results `layout.layout_depths` and
`layout._bind_flow_points` give on the whole track.

Rows: `_nested_rows` puts slice i on row rank(i) - #{slice ends <= start(i)}, over the track's
slices (only earlier ones can end by start(i)). Earlier pieces start before this piece's range
[lo, hi), so all their ends count except those in `open` (their ends > lo) that are > start(i):
    row(i) = local row(i) + |open| - #{e in open : e <= start(i)}      (instants alike).
Validity (`_rows_valid`): the slices of a row, in start order, must not overlap; across pieces the
pair is (the last slice of the row so far, its first one here), so `row_end` keeps the former's end.
When it fails, the track is laid out again greedily (`_greedy_rows`) in a second pass over its
written columns, the heaps carried from piece to piece.

Flow points: "next" binds to the first slice starting at or after ts, in this piece or else the
first slice of a later one. "enclosing" walks back from the last slice starting at or before ts to
the first one covering ts (end > ts, or start == ts) and gives up at a row-0 slice that does not.
Inside the piece this is the in-memory walk; past the piece's start it can only stop at the last
row-0 slice before the piece (z) or at one after z still open at lo (`context`): the others ended
before lo <= ts, so they neither cover ts nor stop the walk. The answer there is the last context
slice ending after ts, else z when it ends after ts, else none.
"""

from __future__ import annotations

import numpy as np

from profscope.model import arrays
from profscope.model.layout import _greedy_rows, _nested_rows
from profscope.model.spill.files import RecordFile

_LOWEST = np.iinfo(np.int64).min


class SplitTrack:
    """Layout state of one track cut into pieces, carried from piece to piece in start order."""

    def __init__(self, track: int) -> None:
        self.track = track
        self.open = np.zeros(0, np.int64)
        self.row_end: dict[int, int] = {}
        self.valid = True
        self.max_depth = 0
        self.offset = -1
        self.count = 0
        # (piece index, final offset, events, lower bound of its starts)
        self.pieces: list[tuple[int, int, int, int]] = []

    def rows(
        self, piece: int, offset: int, start: np.ndarray, dur: np.ndarray, time_lo: int | None
    ) -> np.ndarray:
        """Nested rows of the piece's events (sorted), as `_nested_rows` on the whole track."""
        lo = _LOWEST if time_lo is None else int(time_lo)
        if self.offset < 0:
            self.offset = offset
        self.pieces.append((piece, offset, int(start.shape[0]), lo))
        self.count += int(start.shape[0])
        if start.shape[0] == 0:
            return np.zeros(0, np.int32)
        self.open = self.open[self.open > lo]
        local = _nested_rows(start, dur).astype(np.int64)
        if self.open.shape[0]:
            local += self.open.shape[0] - np.searchsorted(self.open, start, side="right")
        rows = local.astype(np.int32)
        positive = dur > 0
        ends = (start + dur)[positive]
        if self.valid:
            self._check(start[positive], ends, rows[positive])
        self.open = np.sort(np.concatenate((self.open, ends)), kind="stable")  # two runs, nearly: timsort
        self.max_depth = max(self.max_depth, int(rows.max()))
        return rows

    def _check(self, s: np.ndarray, e: np.ndarray, r: np.ndarray) -> None:
        if s.shape[0] == 0:
            return
        order = arrays.stable_argsort(r)  # by (row, start): the piece is in start order
        s, e, r = s[order], e[order], r[order]
        same_row = r[1:] == r[:-1]
        if np.any(same_row & (s[1:] < e[:-1])):
            self.valid = False
            return
        first = np.flatnonzero(np.concatenate(([True], ~same_row)))
        last = np.concatenate((first[1:], [r.shape[0]])) - 1
        for row, s0 in zip(r[first].tolist(), s[first].tolist()):
            if s0 < self.row_end.get(row, _LOWEST):
                self.valid = False
                return
        self.row_end.update(zip(r[last].tolist(), e[last].tolist()))

    def relayout(self, start: RecordFile, dur: RecordFile, depth: RecordFile, rows: int) -> None:
        """Greedy rows for the whole track (its nesting is not proper), written over `depth`."""
        state: list = [[], [], 0]
        self.max_depth = 0
        for lo in range(self.offset, self.offset + self.count, rows):
            hi = min(lo + rows, self.offset + self.count)
            got = _greedy_rows(start.read(lo, hi), dur.read(lo, hi), state)
            depth.write_at(lo, got)
            if got.shape[0]:
                self.max_depth = max(self.max_depth, int(got.max()))


class Context:
    """What the walk of an "enclosing" point needs from before the current piece (see the module doc)."""

    def __init__(self) -> None:
        self.z = -1
        self.z_end = _LOWEST
        self.index = np.zeros(0, np.int64)
        self.end = np.zeros(0, np.int64)

    def resolve(self, ts: np.ndarray) -> np.ndarray:
        """Event each point whose walk left the piece binds to (-1: none)."""
        out = np.full(ts.shape[0], -1, dtype=np.int64)
        if self.index.shape[0]:
            order = np.argsort(self.end, kind="stable")
            ends = self.end[order]
            # Largest index among the slices ending after ts: a suffix maximum over ends.
            best = np.maximum.accumulate(self.index[order][::-1])[::-1]
            k = np.searchsorted(ends, ts, side="right")
            hit = k < ends.shape[0]
            out[hit] = best[k[hit]]
        if self.z >= 0:
            out = np.where((out < 0) & (self.z_end > ts), self.z, out)
        return out

    def advance(self, offset: int, end: np.ndarray, depth: np.ndarray, next_lo: int) -> None:
        """Take in a piece's events (final indices from `offset`); keep what is open at `next_lo`."""
        row0 = np.flatnonzero(depth == 0)
        after = 0
        if row0.shape[0]:
            last = int(row0[-1])
            self.z, self.z_end = offset + last, int(end[last])
            self.index, self.end = self.index[:0], self.end[:0]
            after = last + 1
        index = np.concatenate((self.index, offset + np.arange(after, end.shape[0], dtype=np.int64)))
        ends = np.concatenate((self.end, end[after:]))
        keep = ends > next_lo
        self.index, self.end = index[keep], ends[keep]


def bind_piece(
    ts: np.ndarray,
    bind_next: np.ndarray,
    start: np.ndarray,
    dur: np.ndarray,
    depth: np.ndarray,
    offset: int,
    context: Context,
) -> tuple[np.ndarray, np.ndarray]:
    """Final event of each point of one piece (-1: none), and which "next" points found no slice
    here (they bind to the first slice of a later piece)."""
    count = ts.shape[0]
    bound = np.full(count, -1, dtype=np.int64)
    later = np.zeros(count, dtype=bool)
    m = start.shape[0]
    nxt = np.flatnonzero(bind_next)
    first = np.searchsorted(start, ts[nxt], side="left")
    inside = first < m
    bound[nxt[inside]] = offset + first[inside]
    later[nxt[~inside]] = True
    pending = np.flatnonzero(~bind_next)
    p_ts = ts[pending]
    i = np.searchsorted(start, p_ts, side="right") - 1
    end = start + dur
    left: list[np.ndarray] = []
    while pending.shape[0]:
        alive = i >= 0
        left.append(pending[~alive])
        pending, p_ts, i = pending[alive], p_ts[alive], i[alive]
        covers = (end[i] > p_ts) | (start[i] == p_ts)
        bound[pending[covers]] = offset + i[covers]
        go_on = ~covers & ~((depth[i] == 0) & (end[i] <= p_ts))
        pending, p_ts, i = pending[go_on], p_ts[go_on], i[go_on] - 1
    gone = np.concatenate(left) if left else np.zeros(0, np.int64)
    if gone.shape[0]:
        bound[gone] = context.resolve(ts[gone])
    return bound, later
