"""Slices from halves: B/E pairs per thread, and async b/e (legacy S/F) pairs per async track.

Halves are paired in time order per track, file order breaking ties. An end closes the latest open
begin like a stack (for async events, of the same name); an end with none open is counted as
skipped, and a begin left open is drawn up to the end of the trace. Async instants (n) become
instants on the same tracks. The E args are merged into the B args.

Halves are read back chunk by chunk. When every track's halves come in time order in the file (a
first pass over their times checks), they are paired as they come: only the begins still open
carry over from one chunk to the next (per group, a stack matched by `_brackets`), and slices go to
the builder in the file order of their end (instants: of themselves), the ones left open at the
end by track, then time. Otherwise all halves are first sorted by (track, time, file order) and
paired in that order, the slices then coming in that order: in memory when the sort's work fits
`chrome.spill.sort_bytes()`, else in pieces of consecutive tracks (a track too big cut by time)
through a temporary file, each piece sorted and paired in turn, with the same result.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from profscope.formats.chrome import columns as cc
from profscope.formats.chrome import spill as chrome_spill
from profscope.formats.chrome.clock import Clock
from profscope.formats.chrome.decode import Damage
from profscope.formats.chrome.events import Binds
from profscope.formats.chrome.parts import Chunk, Parts
from profscope.formats.chrome.spill import ChunkRef, SpillFile
from profscope.formats.chrome.tracks import Layout
from profscope.model import arrays
from profscope.model.columns import TraceBuilder
from profscope.model.spill import budget as spill_budget
from profscope.model.spill import sort as spill_sort

_FIELDS = ("ts", "track", "name", "cat", "group", "key")
# Work per half of an in-memory sort besides its args text: its columns, list entry and text
# object, the sort's index and the taken copies.
HALF_WORK_BYTES = 200


class _Spec:
    """What differs between B/E and async pairing."""

    def __init__(
        self, table: str, extra: str, what: str, unmatched: str, left_open: str, by_name: bool
    ) -> None:
        self.table, self.extra, self.what = table, extra, what
        self.unmatched, self.left_open, self.by_name = unmatched, left_open, by_name


BEGIN_END = _Spec(
    "be",
    "begin",
    "B/E events",
    "E events without a matching B",
    "{} B events have no matching E; shown until the end of the trace",
    False,
)
ASYNC = _Spec(
    "asy",
    "phase",
    "async events",
    "async end events without a matching begin",
    "{} async begin events have no matching end; shown until the end of the trace",
    True,
)


class _Halves:
    """Halves with an in-range time, in file order (or any order given by `take`).

    `key` is the file position (part << 40 | row); `group` what an end must share with its begin
    (the reader's track key, for async also the name: async ids of one name may share a builder
    track, and pair only among themselves)."""

    def __init__(
        self, cols: dict[str, np.ndarray], args: list[bytes], begin: np.ndarray, instant: np.ndarray
    ) -> None:
        self.cols = cols
        self.args = args
        self.begin = begin
        self.instant = instant

    @classmethod
    def of_chunk(cls, c: Chunk, spec: _Spec, clock: Clock, layout: Layout, damage: Damage) -> _Halves:
        raw = c.read(spec.table, "us", "frac", "track", "name", "cat", spec.extra, "alen")
        ts, ok = clock.to_ps(raw["us"], raw["frac"])
        dropped = int((~ok).sum())
        if dropped:
            damage.skipped[f"{spec.what} more than 25 days away from the rest of the trace"] += dropped
        sel = np.flatnonzero(ok)
        smap = c.smap
        key = c.keys(spec.table, raw["track"])[sel].astype(np.int64)
        track = layout.track_of_key[key]
        name = smap[raw["name"][sel]]
        extra = raw[spec.extra][sel]
        group = key << 32 | name.astype(np.int64) if spec.by_name else key
        args = _texts(c.args(spec.table), raw["alen"], sel)
        row = c.ref.base[spec.table] + sel
        cols = {
            "ts": ts[sel],
            "track": track,
            "name": name,
            "cat": smap[raw["cat"][sel]],
            "group": group,
            "key": np.int64(c.part) << 40 | row,
        }
        if spec.by_name:
            return cls(cols, args, extra == cc.ASYNC_BEGIN, extra == cc.ASYNC_INSTANT)
        return cls(cols, args, extra.astype(bool), np.zeros(sel.shape[0], bool))

    @classmethod
    def empty(cls) -> _Halves:
        cols = {k: np.zeros(0, np.int64) for k in _FIELDS}
        return cls(cols, [], np.zeros(0, bool), np.zeros(0, bool))

    @classmethod
    def joined(cls, parts: list[_Halves]) -> _Halves:
        cols = {k: np.concatenate([h.cols[k] for h in parts]) for k in _FIELDS}
        args = [a for h in parts for a in h.args]
        return cls(
            cols, args, np.concatenate([h.begin for h in parts]), np.concatenate([h.instant for h in parts])
        )

    def __len__(self) -> int:
        return self.begin.shape[0]

    def take(self, idx: np.ndarray) -> _Halves:
        args = [self.args[i] for i in idx.tolist()]
        return _Halves({k: v[idx] for k, v in self.cols.items()}, args, self.begin[idx], self.instant[idx])


class _Pairing:
    """Pairs halves fed in time order per track; the begins still open carry over."""

    def __init__(self, spec: _Spec, builder: TraceBuilder, binds: Binds | None) -> None:
        self.spec = spec
        self.builder = builder
        self.binds = binds if binds is not None and binds.on_begin else None
        self.open = _Halves.empty()
        self.unmatched = 0

    def feed(self, h: _Halves) -> None:
        pairs = np.flatnonzero(~h.instant)
        carry = self.open
        active = np.flatnonzero(np.isin(carry.cols["group"], arrays.unique(h.cols["group"][pairs])))
        idle = np.setdiff1d(np.arange(len(carry)), active, assume_unique=True)
        both = _Halves.joined([carry.take(active), h.take(pairs)])
        ends, begins, still = _brackets(both.cols["group"], both.begin)
        self.unmatched += int((~h.begin[pairs]).sum()) - ends.shape[0]
        self.open = _Halves.joined([carry.take(idle), both.take(still)])
        # Instants and closed slices in the order of the instant or the end within this feed.
        instants = np.flatnonzero(h.instant)
        end_at = pairs[ends - active.shape[0]]
        order = np.argsort(np.concatenate((instants, end_at)), kind="stable")
        first = both.take(begins)
        opened = _Halves.joined([h.take(instants), first]).take(order)
        end_ps = np.concatenate((h.cols["ts"][instants], h.cols["ts"][end_at]))[order]
        end_args = [b""] * instants.shape[0] + [h.args[i] for i in end_at.tolist()]
        self._emit(opened, end_ps, [end_args[i] for i in order.tolist()])

    def finish(self, trace_end: int, damage: Damage) -> None:
        """The begins left open, by track, then time, drawn up to `trace_end`."""
        if self.unmatched:
            damage.skipped[self.spec.unmatched] += self.unmatched
        left = self.open
        if not len(left):
            return
        damage.warn(self.spec.left_open.format(len(left)))
        order = np.lexsort((left.cols["key"], left.cols["ts"], left.cols["track"]))
        left = left.take(order)
        self._emit(left, np.full(len(left), trace_end, np.int64), [b""] * len(left))

    def _emit(self, opened: _Halves, end_ps: np.ndarray, end_args: list[bytes]) -> None:
        if not len(opened):
            return
        start = opened.cols["ts"]
        pieces = [_merge_args(a, b) if b else a for a, b in zip(opened.args, end_args)]
        first = self.builder.add_events(
            opened.cols["track"],
            start,
            np.maximum(end_ps - start, 0),
            opened.cols["name"],
            opened.cols["cat"],
            args_blob=b"".join(pieces),
            args_lengths=np.fromiter(map(len, pieces), np.int64, len(pieces)),
        )
        if self.binds is not None:
            keys = opened.cols["key"]
            for k in range(len(opened)):
                place = (int(keys[k] >> 40), int(keys[k] & ((1 << 40) - 1)))
                if place in self.binds.on_begin:
                    self.binds.set_begin(place, first + k, int(start[k]))


class _Survey:
    """One pass over the halves of a table: whether every track's in-range halves come in time
    order in the file and, for a sort in pieces, the work per track and a sample of (track, time)
    (one half in `spill_budget.SAMPLE_EVERY`)."""

    def __init__(self, ids: Parts, spec: _Spec, clock: Clock, layout: Layout) -> None:
        num_tracks = max(1, int(layout.track_of_key.max(initial=0)) + 1)
        last = np.full(num_tracks, np.iinfo(np.int64).min, np.int64)
        self.in_order = True
        self.cost = np.zeros(num_tracks, np.int64)
        tracks, times = [], []
        seen = 0
        for c in ids.chunks(spec.table):
            raw = c.read(spec.table, "us", "frac", "track", "alen")
            ts, ok = clock.to_ps(raw["us"], raw["frac"])
            track = layout.track_of_key[c.keys(spec.table, raw["track"])[ok]]
            ts = ts[ok]
            self.cost += np.bincount(track, minlength=num_tracks) * HALF_WORK_BYTES
            self.cost += np.bincount(track, weights=raw["alen"][ok], minlength=num_tracks).astype(np.int64)
            sampled = slice((-seen) % spill_budget.SAMPLE_EVERY, None, spill_budget.SAMPLE_EVERY)
            tracks.append(track[sampled])
            times.append(ts[sampled])
            seen += ts.shape[0]
            if self.in_order and ts.shape[0]:
                self.in_order = self._in_order(track, ts, last)
        self.sample_track = np.concatenate(tracks) if tracks else np.zeros(0, np.int64)
        self.sample_time = np.concatenate(times) if times else np.zeros(0, np.int64)

    @staticmethod
    def _in_order(track: np.ndarray, ts: np.ndarray, last: np.ndarray) -> bool:
        """Whether this chunk's halves go on in time order per track from `last` (updated)."""
        order = arrays.stable_argsort(track)
        track, ts = track[order], ts[order]
        same = track[1:] == track[:-1]
        if (same & (ts[1:] < ts[:-1])).any():
            return False
        first = np.concatenate(([True], ~same))
        if (ts[first] < last[track[first]]).any():
            return False
        last_of_run = np.concatenate((~same, [True]))
        last[track[last_of_run]] = ts[last_of_run]
        return True


def _feed_by_pieces(pairing: _Pairing, chunks: Iterator[_Halves], survey: _Survey) -> None:
    """Halves out of time order, more than one sort in memory may take: scattered by (track,
    time) into pieces (`spill.sort.plan`) in a temporary file, then each piece sorted and fed in
    turn. The pieces come in (track, time) order, so the feeds are the one sorted sequence the
    in-memory sort gives, cut where a piece ends."""
    plan = spill_sort.plan(survey.cost, chrome_spill.sort_bytes(), survey.sample_track, survey.sample_time)
    scratch = SpillFile.create(chrome_spill.budget()[1])
    refs: list[list[ChunkRef]] = [[] for _ in plan.pieces]
    try:
        for h in chunks:
            which = plan.assign(h.cols["track"], h.cols["ts"])
            by_piece = np.argsort(which, kind="stable")
            cuts = np.flatnonzero(np.diff(which[by_piece])) + 1
            for rows in np.split(by_piece, cuts):
                if not rows.shape[0]:
                    continue
                part = h.take(rows)
                columns: dict[str, chrome_spill.Column] = {
                    **part.cols,
                    "begin": part.begin,
                    "instant": part.instant,
                    "alen": np.fromiter(map(len, part.args), np.int64, len(part.args)),
                    "args": [b"".join(part.args)],
                }
                refs[int(which[rows[0]])].append(scratch.write({"half": columns}, ChunkRef()))
        for piece_refs in refs:
            parts = []
            for ref in piece_refs:
                f = scratch.read(ref, "half", (*_FIELDS, "begin", "instant", "alen"))
                args = _texts(
                    scratch.read_bytes(ref, "half", "args"), f["alen"], np.arange(f["alen"].shape[0])
                )
                parts.append(_Halves({k: f[k] for k in _FIELDS}, args, f["begin"], f["instant"]))
            if parts:
                every = _Halves.joined(parts)
                c = every.cols
                pairing.feed(every.take(np.lexsort((c["key"], c["ts"], c["track"]))))
    finally:
        scratch.close()


def pair_halves(
    spec: _Spec,
    builder: TraceBuilder,
    ids: Parts,
    clock: Clock,
    layout: Layout,
    damage: Damage,
    trace_end: int,
    binds: Binds | None = None,
) -> None:
    """Pair the halves of `spec.table` of all chunks into slices (async instants into instants)."""
    if not any(True for _ in ids.chunks(spec.table)):
        return
    pairing = _Pairing(spec, builder, binds)
    chunks = (_Halves.of_chunk(c, spec, clock, layout, damage) for c in ids.chunks(spec.table))
    survey = _Survey(ids, spec, clock, layout)
    if survey.in_order:
        for h in chunks:
            pairing.feed(h)
    elif int(survey.cost.sum()) > chrome_spill.sort_bytes():
        _feed_by_pieces(pairing, chunks, survey)
    else:
        every = _Halves.joined(list(chunks))
        c = every.cols
        pairing.feed(every.take(np.lexsort((c["key"], c["ts"], c["track"]))))
    pairing.finish(trace_end, damage)


def _texts(blob: bytes, lengths: np.ndarray, rows: np.ndarray) -> list[bytes]:
    """The texts of `rows` of a blob of texts of `lengths`, one after another."""
    offsets = np.zeros(lengths.shape[0] + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return [blob[a:b] for a, b in zip(offsets[rows].tolist(), offsets[rows + 1].tolist())]


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
