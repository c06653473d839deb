"""Slices from halves: B/E pairs per thread, and async b/e (legacy S/F) pairs per async track.

Halves of all parts are paired together (a begin may sit before the split offset of a two-process
read and its end after it), in time order per track, file order breaking ties. An end closes the
latest open begin like a stack (for async events, of the same name); an end with none open is
counted as skipped, and a begin left open is drawn up to the end of the trace. Async instants (n)
become instants on the same tracks. The E args are merged into the B args.
"""

from __future__ import annotations

import numpy as np

from profscope.columns import TraceBuilder
from profscope.formats import chrome_columns as cc
from profscope.formats.chrome_clock import Clock
from profscope.formats.chrome_decode import Damage
from profscope.formats.chrome_layout import Layout
from profscope.formats.chrome_parts import Parts, column, joined


class _Halves:
    """B/E or async events of all parts together, in file order (part, then position in part).

    Pairing needs every half at once: a begin may sit before the split offset of a two-process
    read and its end after it.
    """

    def __init__(
        self, ids: Parts, clock: Clock, layout: Layout, table: str, extra: str, damage: Damage, what: str
    ) -> None:
        cols: list[tuple[np.ndarray, ...]] = []
        blobs: list[bytes] = []
        self.sizes = []
        for p, smap, kmap in zip(ids.parts, ids.smaps, ids.kmaps):
            t = getattr(p, table)
            us = column(t, "us", np.int64)
            self.sizes.append(us.shape[0])
            if not us.shape[0]:
                continue
            ts, ok = clock.to_ps(us, column(t, "frac", np.int32))
            cols.append(
                (
                    ts,
                    ok,
                    layout.track_of_key[kmap[column(t, "track", np.int32)]],
                    smap[column(t, "name", np.int32)],
                    smap[column(t, "cat", np.int32)],
                    column(t, extra, np.int8),
                    column(t, "alen", np.int64),
                )
            )
            blobs.append(joined(getattr(p, f"{table}_args")) if getattr(p, f"{table}_args") else b"")
        self.empty = not cols
        if self.empty:
            return
        self.ts, ok, self.track, self.name, self.cat, self.extra, alen = (
            np.concatenate(c) for c in zip(*cols)
        )
        self.blob = b"".join(blobs)
        self.offsets = np.zeros(alen.shape[0] + 1, np.int64)
        np.cumsum(alen, out=self.offsets[1:])
        dropped = int((~ok).sum())
        if dropped:
            damage.skipped[f"{what} more than 25 days away from the rest of the trace"] += dropped
        # Time order per track; file order breaks ties (a B and an E at the same ts stay in order).
        order = np.flatnonzero(ok)
        self.order = order[np.lexsort((order, self.ts[order], self.track[order]))]

    def args(self, i: int) -> bytes:
        return self.blob[self.offsets[i] : self.offsets[i + 1]]

    def part_index(self, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(part, index within that part's table) of halves `i`."""
        ends = np.cumsum(self.sizes)
        part = np.searchsorted(ends, i, side="right")
        return part, i - (ends[part] - np.asarray(self.sizes)[part])

    def slices(
        self, begin: np.ndarray, end: np.ndarray, end_ps: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, bytes, np.ndarray]:
        """(track, start, dur, name, cat, args blob, args lengths) of slices opened by halves `begin`
        and closed at `end_ps` by halves `end` (-1: closed by the end of the trace, no E args)."""
        start = self.ts[begin]
        lo, hi = self.offsets[begin].tolist(), self.offsets[begin + 1].tolist()
        pieces = [self.blob[a:b] for a, b in zip(lo, hi)]
        with_end_args = np.flatnonzero((end >= 0) & (self.offsets[end + 1] > self.offsets[end]))
        for k in with_end_args.tolist():
            pieces[k] = _merge_args(pieces[k], self.args(int(end[k])))
        lengths = np.fromiter(map(len, pieces), np.int64, len(pieces))
        return (
            self.track[begin],
            start,
            np.maximum(end_ps - start, 0),
            self.name[begin],
            self.cat[begin],
            b"".join(pieces),
            lengths,
        )


def _merge_args(begin: bytes, end: bytes) -> bytes:
    """B args with E args added (E wins on a repeated key, as in Chrome)."""
    if not end or end.strip() == b"{}":
        return begin
    if not begin or begin.strip() == b"{}":
        return end
    return begin.rstrip()[:-1] + b"," + end.lstrip()[1:]


def _brackets(group: np.ndarray, begin: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Match ends to begins like a stack per group, for halves in time order.

    An end closes the latest open begin of its group; an end with none open is unmatched. Returns
    (matched ends, their begins) as positions in the input, in input order, and the begins left
    open, in input order. Vectorized: the stack depth is a running sum of +1 / -1 held at zero
    where an end finds the stack empty; a begin opens the level it raises the depth to and an end
    closes the level it lowers it from, and per (group, level) the begins and ends then alternate.
    """
    n = group.shape[0]
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    by_group = np.argsort(group, kind="stable")
    g = group[by_group]
    is_begin = begin[by_group]
    first = np.concatenate(([True], g[1:] != g[:-1]))
    gid = np.cumsum(first) - 1
    step = np.where(is_begin, 1, -1)
    total = np.cumsum(step)
    group_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    local = total - (total - step)[group_start]  # running sum within the group
    # Running minimum within each group: later groups are shifted below earlier ones.
    shift = (2 * n + 2) * gid
    low = np.minimum(np.minimum.accumulate(local - shift) + shift, 0)
    depth = local - low
    depth_before = np.concatenate(([0], depth[:-1]))
    depth_before[first] = 0
    matched_end = ~is_begin & (depth_before > 0)
    keep = np.flatnonzero(is_begin | matched_end)
    level = np.where(is_begin, depth, depth_before)[keep]
    order = keep[np.lexsort((level, gid[keep]))]
    closes = np.zeros(order.shape[0], bool)
    closes[1:] = ~is_begin[order[1:]]
    ends = by_group[order[closes]]
    begins = by_group[order[np.flatnonzero(closes) - 1]]
    still_open = np.ones(order.shape[0], bool)
    still_open[np.flatnonzero(closes) - 1] = False
    still_open &= is_begin[order]
    by_end = np.argsort(ends, kind="stable")
    return ends[by_end], begins[by_end], np.sort(by_group[order[still_open]])


def pair_begin_end(
    builder: TraceBuilder, ids: Parts, clock: Clock, layout: Layout, damage: Damage, trace_end: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """B/E halves paired per thread in time order into slices; per part: B → (builder index, start)."""
    result = [np.full(p.num_be, -1, np.int64) for p in ids.parts]
    starts = [np.zeros(p.num_be, np.int64) for p in ids.parts]
    h = _Halves(ids, clock, layout, "be", "begin", damage, "B/E events")
    if h.empty:
        return result, starts
    seq = h.order
    ends, begins, still_open = _brackets(h.track[seq], h.extra[seq].astype(bool))
    unmatched_end = int((~h.extra[seq].astype(bool)).sum()) - ends.shape[0]
    if unmatched_end:
        damage.skipped["E events without a matching B"] += unmatched_end
    if still_open.shape[0]:
        damage.warn(f"{still_open.shape[0]} B events have no matching E; shown until the end of the trace")
    # Slices in the order their E comes, then those left open (by thread, then time).
    begin = seq[np.concatenate((begins, still_open))]
    end = np.concatenate((seq[ends], np.full(still_open.shape[0], -1, np.int64)))
    if begin.shape[0]:
        end_ps = np.where(end >= 0, h.ts[end], trace_end)
        track, start, dur, name, cat, blob, lengths = h.slices(begin, end, end_ps)
        first = builder.add_events(track, start, dur, name, cat, args_blob=blob, args_lengths=lengths)
        part, local = h.part_index(begin)
        for p in range(len(ids.parts)):
            mine = part == p
            result[p][local[mine]] = first + np.flatnonzero(mine)
            starts[p][local[mine]] = start[mine]
    return result, starts


def pair_async(
    builder: TraceBuilder, ids: Parts, clock: Clock, layout: Layout, damage: Damage, trace_end: int
) -> None:
    """Nestable async b/e (and legacy S/F) paired per (pid, category, id) track; n → instants.

    An end closes the most recent open begin of the same name on its track.
    """
    h = _Halves(ids, clock, layout, "asy", "phase", damage, "async events")
    if h.empty:
        return
    seq = h.order
    phase = h.extra[seq]
    pairs = np.flatnonzero(phase != cc.ASYNC_INSTANT)
    group = h.track[seq[pairs]].astype(np.int64) << 32 | h.name[seq[pairs]].astype(np.int64)
    ends, begins, still_open = _brackets(group, phase[pairs] == cc.ASYNC_BEGIN)
    ends, begins, still_open = pairs[ends], pairs[begins], pairs[still_open]
    unmatched = int((phase == cc.ASYNC_END).sum()) - ends.shape[0]
    if unmatched:
        damage.skipped["async end events without a matching begin"] += unmatched
    if still_open.shape[0]:
        damage.warn(
            f"{still_open.shape[0]} async begin events have no matching end; shown until the end of the trace"
        )
    # Instants and closed slices in the order of the instant or the end, then those left open.
    instants = np.flatnonzero(phase == cc.ASYNC_INSTANT)
    at = np.concatenate((instants, ends))
    in_order = np.argsort(at, kind="stable")
    begin = seq[np.concatenate((np.concatenate((instants, begins))[in_order], still_open))]
    end = np.concatenate(
        (
            np.concatenate((np.full(instants.shape[0], -1, np.int64), seq[ends]))[in_order],
            np.full(still_open.shape[0], -1, np.int64),
        )
    )
    if not begin.shape[0]:
        return
    is_instant = h.extra[begin] == cc.ASYNC_INSTANT
    end_ps = np.where(is_instant, h.ts[begin], np.where(end >= 0, h.ts[end], trace_end))
    track, start, dur, name, cat, blob, lengths = h.slices(begin, end, end_ps)
    builder.add_events(track, start, dur, name, cat, args_blob=blob, args_lengths=lengths)
