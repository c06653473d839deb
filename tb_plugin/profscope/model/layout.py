"""Sorting and nesting rows of a trace's events, and binding flow points to them: the pure column
functions `TraceBuilder.finalize()` runs (and, piece by piece, `spill.finalize`)."""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import numpy as np

from profscope.model import arrays

FLOW_PHASES = ("s", "t", "f")


_CHECK_CHUNK = 1 << 20  # events per step of the in-place checks
# Tracks of at most this many events are sorted and laid out together, not one numpy pass each
# (a serving trace can have a track per request id: 300 k tracks took 7.4 s one at a time).
SMALL_TRACK_EVENTS = 1024


def event_order(track: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """The stable sort of events by (track, start, -dur): `np.lexsort((-dur, start, track))`.

    XPlane readers add a line's events in order and one line after another, so their events come
    grouped by track (ids non-decreasing) and mostly in place already: then only the tracks with
    an event out of place are sorted, each on its own (7.9 M events in place: 2.4 s -> 0.24 s
    inside a read, 0.05 s alone).
    Otherwise (Chrome traces interleave their tracks): a stable sort by start (quick: readers add
    events mostly in time order), re-sorting only the runs of equal starts by -dur, then a stable
    sort by track (a radix sort when the track ids fit in 16 bits). 0.43 s -> about 0.1 s at
    3.2 M events.
    """
    order = event_order_unless_in_place(track, start, dur)
    return np.arange(track.shape[0]) if order is None else order


def event_order_unless_in_place(track: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray | None:
    """`event_order`, or None when the events are in that order already: the caller then has
    nothing to gather (five columns of 7.9 M events: 0.8 s)."""
    out_of_place = _out_of_place(track, start, dur)
    if out_of_place is None:
        order = _by_start(start, dur)
        return order[arrays.stable_argsort(track[order])]
    if not out_of_place.shape[0]:
        return None
    order = np.arange(track.shape[0])
    bounds = np.concatenate(([0], np.flatnonzero(track[1:] != track[:-1]) + 1, [track.shape[0]]))
    segments = arrays.unique(np.searchsorted(bounds, out_of_place, side="right") - 1)
    lo, hi = bounds[segments], bounds[segments + 1]
    small = hi - lo <= SMALL_TRACK_EVENTS
    if small.any():
        # Many small tracks out of place (async ids whose inner slice closed first): one sort.
        rows = arrays.ranges(lo[small], hi[small])
        order[rows] = rows[np.lexsort((-dur[rows], start[rows], track[rows]))]
    for a, b in zip(lo[~small].tolist(), hi[~small].tolist()):
        order[a:b] = a + _by_start(start[a:b], dur[a:b])
    return order


def _out_of_place(track: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray | None:
    """Indices i where event i+1 of the same track sorts before event i by (start, -dur), or None
    when a track id decreases (the tracks are not grouped). A chunk at a time: interleaved input
    stops at its first chunk, and the masks stay small (large fresh temporaries cost page faults)."""
    found: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    for lo in range(0, max(track.shape[0] - 1, 0), _CHECK_CHUNK):
        hi = lo + _CHECK_CHUNK + 1
        t, s, d = track[lo:hi], start[lo:hi], dur[lo:hi]
        if bool(np.any(t[1:] < t[:-1])):
            return None
        ahead = s[1:] < s[:-1]
        ahead |= (s[1:] == s[:-1]) & (d[1:] > d[:-1])
        ahead &= t[1:] == t[:-1]
        found.append(lo + np.flatnonzero(ahead))
    return np.concatenate(found)


def _by_start(start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """The stable sort by (start, -dur): by start, then each run of equal starts by -dur."""
    order = np.argsort(start, kind="stable")
    s = start[order]
    tie = np.flatnonzero(s[1:] == s[:-1])
    if tie.shape[0]:
        members = arrays.unique(np.concatenate((tie, tie + 1)))
        # Runs of equal start: consecutive members whose start equals the previous member's.
        run = np.cumsum(
            np.concatenate(([True], (np.diff(members) != 1) | (s[members[1:]] != s[members[:-1]])))
        )
        sub = order[members]
        order[members] = sub[np.lexsort((-dur[sub], run))]
    return order


def layout_depths(track: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Nesting row of every event; input sorted by (track, start, -dur).

    Properly nested tracks get their nesting depth by a vectorized count of open slices;
    tracks where slices overlap without nesting fall back to greedy interval partitioning
    (first free row), which gives the same rows on nested data and extra rows otherwise.
    """
    n = track.shape[0]
    depth = np.zeros(n, dtype=np.int32)
    if n == 0:
        return depth
    bounds = np.flatnonzero(np.diff(track)) + 1
    lo_all = np.concatenate(([0], bounds))
    hi_all = np.concatenate((bounds, [n]))
    small = hi_all - lo_all <= SMALL_TRACK_EVENTS
    redo: list[tuple[int, int]] = []
    if small.any():
        rows = arrays.ranges(lo_all[small], hi_all[small])
        depth[rows], invalid = _nested_rows_of_tracks(track[rows], start[rows], dur[rows])
        first = lo_all[small][invalid]
        redo = list(zip(first.tolist(), hi_all[small][invalid].tolist()))
    for lo, hi in zip(lo_all[~small].tolist(), hi_all[~small].tolist()):
        rows = _nested_rows(start[lo:hi], dur[lo:hi])
        if _rows_valid(start[lo:hi], dur[lo:hi], rows):
            depth[lo:hi] = rows
        else:
            redo.append((lo, hi))
    for lo, hi in redo:
        depth[lo:hi] = _greedy_rows(start[lo:hi], dur[lo:hi])
    return depth


def _nested_rows_of_tracks(
    track: np.ndarray, start: np.ndarray, dur: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`_nested_rows` of every track at once (input sorted by (track, start, -dur)), and for each
    track in order whether `_rows_valid` fails on it.

    A slice's row is its rank among its track's slices less the slice ends of its track at or
    before its start; an instant's, the slices started less those ended at or before it. Counts
    within a track come from sorted keys (track, time) as one int64: the track's position times
    M plus the time's rank among the M - 1 distinct times.
    """
    new_track = np.concatenate(([True], track[1:] != track[:-1]))
    which = np.cumsum(new_track) - 1  # the track's position, 0, 1, …
    first = np.flatnonzero(new_track)
    end = start + dur
    positive = dur > 0
    times, inverse = np.unique(np.concatenate((start, end[positive])), return_inverse=True)
    scale = np.int64(times.shape[0] + 1)
    base = which.astype(np.int64) * scale
    start_key = base + inverse[: start.shape[0]]
    end_keys = np.sort(base[positive] + inverse[start.shape[0] :])
    ended = np.searchsorted(end_keys, start_key, side="right") - np.searchsorted(end_keys, base, side="left")
    slices_before = np.cumsum(positive) - positive  # slices of all tracks before each event
    started = slices_before - slices_before[first][which]
    rows = np.empty(start.shape[0], dtype=np.int64)
    rows[positive] = started[positive] - ended[positive]
    # An instant: the slices of its track started at or before it, less those ended by then.
    instant = ~positive
    start_keys_of_slices = start_key[positive]
    opened = np.searchsorted(start_keys_of_slices, start_key[instant], side="right") - np.searchsorted(
        start_keys_of_slices, base[instant], side="left"
    )
    rows[instant] = opened - ended[instant]
    sel = np.flatnonzero(positive)
    order = sel[np.lexsort((rows[sel], which[sel]))]  # stable: start order within a row
    same_row = (which[order][1:] == which[order][:-1]) & (rows[order][1:] == rows[order][:-1])
    overlap = same_row & (start[order][1:] < end[order][:-1])
    invalid = np.zeros(first.shape[0], dtype=bool)
    invalid[which[order][1:][overlap]] = True
    return rows.astype(np.int32), invalid


def _nested_rows(start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    end = start + dur
    positive = dur > 0
    pos_start = start[positive]
    pos_end_sorted = np.sort(end[positive], kind="stable")  # nearly sorted: timsort takes its runs
    rows = np.empty(start.shape[0], dtype=np.int64)
    rank = np.arange(pos_start.shape[0])
    rows[positive] = rank - np.searchsorted(pos_end_sorted, pos_start, side="right")
    inst = start[~positive]
    rows[~positive] = np.searchsorted(pos_start, inst, side="right") - np.searchsorted(
        pos_end_sorted, inst, side="right"
    )
    return rows.astype(np.int32)


def _rows_valid(start: np.ndarray, dur: np.ndarray, rows: np.ndarray) -> bool:
    """Whether no two slices of a row overlap; `start` sorted. A stable sort by row alone keeps each
    row's slices in start order."""
    positive = np.flatnonzero(dur > 0)
    if positive.shape[0] < 2:
        return True
    order = positive[arrays.stable_argsort(rows[positive])]
    s, r = start[order], rows[order]
    e = s + dur[order]
    same_row = r[1:] == r[:-1]
    return not bool(np.any(same_row & (s[1:] < e[:-1])))


# Past this many open slices the greedy rows stay on heaps (going back to a stack sorts them).
_STACK_MAX_OPEN = 64
_ROW_BITS = 0xFFFFFFFF


def _greedy_rows(start: np.ndarray, dur: np.ndarray, state: list[Any] | None = None) -> np.ndarray:
    """First free row of each event in order; `state` ([free, busy, rows so far], updated) carries
    the partitioning from one piece of a track to the next (`spill.layout`).

    A track whose nesting is not proper is mostly nested still, so the open slices are kept as a
    stack of their ends by row, 0, 1, … (with the lowest end of each prefix) while they hold the
    lowest rows: the first free row is then their count, and the slices that end by the next
    start are on top. A slice ending after the one below it breaks no such stack, only one that
    ends while a slice above it is still open does (a free row below an open one): then heaps of
    free rows and of open slices (`end << 32 | row`, one int each) take over, until the open slices
    hold the lowest rows again.
    """
    rows: list[int] = []
    add = rows.append
    free: list[int]  # heap of row numbers whose last slice has ended
    busy: list[int]  # heap of end << 32 | row of the open slices
    free, busy, num_rows = ([], [], 0) if state is None else state
    ends: list[int] | None = _stack_of(free, busy)  # ends of the open slices by row, or None: heaps
    lowest: list[int] = list(itertools.accumulate(ends, min)) if ends is not None else []
    push, pop = heapq.heappush, heapq.heappop
    for s, d in zip(start.tolist(), dur.tolist()):
        if ends is not None:
            while ends and ends[-1] <= s:
                ends.pop()
                lowest.pop()
            depth = len(ends)
            if not lowest or lowest[-1] > s:
                add(depth)
                if d:
                    e = s + d
                    ends.append(e)
                    lowest.append(e if not lowest or e < lowest[-1] else lowest[-1])
                    if depth == num_rows:
                        num_rows += 1
                continue
            busy = [end << 32 | row for row, end in enumerate(ends)]
            heapq.heapify(busy)
            free = list(range(depth, num_rows))
            ends = None
        released = s << 32 | _ROW_BITS  # above every open slice that ends at or before s
        while busy and busy[0] <= released:
            push(free, pop(busy) & _ROW_BITS)
        if d == 0:
            add(len(busy))
            continue
        if free:
            r = pop(free)
        else:
            r = num_rows
            num_rows += 1
        add(r)
        push(busy, (s + d) << 32 | r)
        if (not free or free[0] >= len(busy)) and len(busy) <= _STACK_MAX_OPEN:
            ends = _stack_of(free, busy)
            lowest = list(itertools.accumulate(ends, min)) if ends is not None else []
    if state is not None:
        if ends is not None:
            busy = [end << 32 | row for row, end in enumerate(ends)]
            free = list(range(len(ends), num_rows))
        state[0], state[1], state[2] = free, busy, num_rows
    return np.array(rows, dtype=np.int32)


def _stack_of(free: list[int], busy: list[int]) -> list[int] | None:
    """The ends of the open slices (`busy`) by row when they hold the lowest rows, else None."""
    if free and free[0] < len(busy):
        return None
    return [key >> 32 for key in sorted(busy, key=lambda key: key & _ROW_BITS)]


def _bind_flow_points(
    p_track: np.ndarray,
    p_ts: np.ndarray,
    p_next: np.ndarray,
    track: np.ndarray,
    start: np.ndarray,
    dur: np.ndarray,
    depth: np.ndarray,
) -> np.ndarray:
    """Final event index each flow point (track, ts, binds "next") binds to, or -1 (vectorized
    per track)."""
    count = p_track.shape[0]
    bound = np.full(count, -1, dtype=np.int64)
    n = track.shape[0]
    if n == 0 or count == 0:
        return bound
    end = start + dur
    track_lo = np.searchsorted(track, np.arange(int(track.max()) + 2), side="left")
    known = (p_track >= 0) & (p_track + 1 < track_lo.shape[0])
    for trk in arrays.unique(p_track[known]).tolist():
        lo, hi = int(track_lo[trk]), int(track_lo[trk + 1])
        if lo == hi:
            continue
        mine = np.flatnonzero(p_track == trk)
        ts = p_ts[mine]
        seg = start[lo:hi]
        nxt = p_next[mine]
        # "next": the first slice starting at or after ts.
        first = lo + np.searchsorted(seg, ts, side="left")
        bound[mine[nxt]] = np.where(first[nxt] < hi, first[nxt], -1)
        # "enclosing": walk back from the last slice starting at or before ts to the first one that
        # still covers ts (the deepest); row-0 slices are disjoint, so one ending before ts stops it.
        pending = mine[~nxt]
        ts = ts[~nxt]
        i = lo + np.searchsorted(seg, ts, side="right") - 1
        while pending.shape[0]:
            alive = i >= lo
            pending, ts, i = pending[alive], ts[alive], i[alive]
            covers = (end[i] > ts) | (start[i] == ts)
            bound[pending[covers]] = i[covers]
            go_on = ~covers & ~((depth[i] == 0) & (end[i] <= ts))
            pending, ts, i = pending[go_on], ts[go_on], i[go_on] - 1
    return bound
