"""Level-of-detail index: answers any tile of any trace size by `searchsorted` and slicing.

Level `z` draws one pixel per `2**z` ps (`BASE_PS * 2**z` ps per tile of `TILE_PX` pixels). Each
event gets a *visible level*: the coarsest level at which it is drawn exactly — for a slice the
level where it is still at least one pixel wide, for an instant the coarsest level at which it is
the first instant of its pixel on its row (so markers never vanish and never pile up). Events are
grouped by visible level and sorted by start within a group; a tile at level `z` reads groups
`>= z` only, and within a group only a window of starts, because a group's durations are bounded.

Everything narrower goes into *summary boxes*: per row (track, depth) and pixel, the count and busy
time of the events starting there. Summaries at level `z` are the stored summary level `s <= z`
re-binned to `z`, plus the events of groups `s .. z-1`; a level is stored only where that saves at
least `PYRAMID_GAIN` times its own size of work, so the pyramid costs at most about a third of the
event count in space while no tile reads more than a few times what it returns. Counters get the
same treatment with per-pixel (min, max, last).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from profscope.model import arrays
from profscope.model.columns import Trace

BASE_PS = 1024
TILE_PX = 1024
# Visible level of events drawn at every level (instants first on their row, absurdly long slices).
TOP_LEVEL = 62
# Group g in [-1, TOP_LEVEL] lives at index g + 1; group -1 holds instants never drawn exactly.
NUM_GROUPS = TOP_LEVEL + 2
# Store a summary level when answering it from the previous stored level costs this many times more.
PYRAMID_GAIN = 4


def max_level_for(span_ps: int) -> int:
    """Smallest level whose single tile (`BASE_PS * 2**z` ps) covers `span_ps`."""
    level = 0
    while BASE_PS << level < span_ps:
        level += 1
    return level


def pixel_ps(level: int) -> int:
    """Width of one pixel at `level`, in ps."""
    return (BASE_PS << level) // TILE_PX


def visible_levels(trace: Trace) -> np.ndarray:
    """Per event, the coarsest level at which it is drawn exactly (-1: never, summarized only).

    Slices: `floor(log2(dur))`, the last level where they span at least one pixel. Instants: two
    instants on one row share a pixel at level z exactly when their times agree after shifting
    right by z, i.e. below the highest set bit of their XOR; an instant is drawn exactly up to the
    level where it becomes the second one of its pixel.
    """
    dur = np.asarray(trace.ev_dur_ps)
    vis = np.empty(dur.shape[0], dtype=np.int8)
    slices = dur > 0
    vis[slices] = np.minimum(np.frexp(dur[slices].astype(np.float64))[1] - 1, TOP_LEVEL)
    inst = np.flatnonzero(~slices)
    if inst.shape[0]:
        start = np.asarray(trace.ev_start_ps)[inst]
        track = np.asarray(trace.ev_track)[inst]
        depth = np.asarray(trace.ev_depth)[inst]
        order = np.lexsort((start, depth, track))
        inst, start, track, depth = inst[order], start[order], track[order], depth[order]
        level = np.full(inst.shape[0], TOP_LEVEL, dtype=np.int64)
        same_row = (track[1:] == track[:-1]) & (depth[1:] == depth[:-1])
        diff_bits = start[1:] ^ start[:-1]
        highest = np.frexp(np.maximum(diff_bits, 0).astype(np.float64))[1] - 1  # -1 when equal
        highest = np.where(diff_bits < 0, TOP_LEVEL, np.minimum(highest, TOP_LEVEL))
        level[1:] = np.where(same_row, highest, TOP_LEVEL)
        vis[inst] = level
    return vis


@dataclasses.dataclass(frozen=True)
class Summaries:
    """Summary boxes of one level: rows and pixel bins with count and busy time (ps)."""

    bin: np.ndarray  # int64, pixel index at the level (host-local time >> level)
    row: np.ndarray  # int64, row id (see `LodIndex.row_base`)
    count: np.ndarray  # int64
    busy: np.ndarray  # int64 ps

    @staticmethod
    def empty() -> Summaries:
        z = np.zeros(0, np.int64)
        return Summaries(z, z, z, z)

    def __len__(self) -> int:
        return int(self.bin.shape[0])


@dataclasses.dataclass(frozen=True)
class CounterBins:
    """Counter samples of one level reduced per (track, pixel bin): min, max and last value."""

    track: np.ndarray  # track id
    bin: np.ndarray  # int64
    min: np.ndarray  # float64
    max: np.ndarray  # float64
    last: np.ndarray  # float64

    def __len__(self) -> int:
        return int(self.bin.shape[0])


@dataclasses.dataclass(frozen=True)
class CounterBoxes:
    """Counter boxes of one tile: each holds its pixel's min/max and the last value, which
    stands until `end_ps` (the next box, the tile's end, or one pixel after a track's last sample)."""

    track: np.ndarray
    start_ps: np.ndarray
    end_ps: np.ndarray
    min: np.ndarray
    max: np.ndarray
    last: np.ndarray

    def __len__(self) -> int:
        return int(self.start_ps.shape[0])


LOD_ARRAYS = (
    "track_off",
    "track_max_dur",
    "order",
    "order_start",
    "group_off",
    "group_max_dur",
    "row_base",
    "self_ps",
    "flow_by_src",
    "flow_by_dst",
    "counter_tracks",
)


@dataclasses.dataclass(frozen=True)
class LodIndex:
    """The per-trace index stored next to the columns in the cache entry."""

    track_off: np.ndarray  # T + 1 offsets: events of track t are [track_off[t], track_off[t+1])
    track_max_dur: np.ndarray  # T, longest duration on each track (bounds range searches)
    order: np.ndarray  # event indices grouped by visible level, by start within a group
    order_start: np.ndarray  # ev_start_ps[order], what searchsorted runs on
    group_off: np.ndarray  # NUM_GROUPS + 1 offsets into order
    group_max_dur: np.ndarray  # NUM_GROUPS, longest duration in each group
    row_base: np.ndarray  # first row id of each track (+ total): row = row_base[track] + depth
    self_ps: np.ndarray  # self time of every event
    flow_by_src: np.ndarray  # flow indices sorted by source event
    flow_by_dst: np.ndarray  # flow indices sorted by destination event
    counter_tracks: np.ndarray  # ids of the tracks that hold counter samples
    summary_levels: dict[int, Summaries]
    counter_levels: dict[int, CounterBins]

    @property
    def num_rows(self) -> int:
        return int(self.row_base[-1])

    def arrays(self) -> dict[str, np.ndarray]:
        """Flat name → array map for `store.write(extra=...)`."""
        out = {name: getattr(self, name) for name in LOD_ARRAYS}
        for level, s in self.summary_levels.items():
            for name in ("bin", "row", "count", "busy"):
                out[f"sum{level}_{name}"] = getattr(s, name)
        for level, c in self.counter_levels.items():
            for name in ("track", "bin", "min", "max", "last"):
                out[f"ctr{level}_{name}"] = getattr(c, name)
        return out

    def meta(self) -> dict[str, Any]:
        return {"summary_levels": sorted(self.summary_levels), "counter_levels": sorted(self.counter_levels)}

    @staticmethod
    def load(arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> LodIndex:
        """Rebuild from what `arrays()` and `meta()` gave (arrays typically memory-mapped)."""
        summaries = {
            int(z): Summaries(*(arrays[f"sum{z}_{n}"] for n in ("bin", "row", "count", "busy")))
            for z in meta["summary_levels"]
        }
        counters = {
            int(z): CounterBins(*(arrays[f"ctr{z}_{n}"] for n in ("track", "bin", "min", "max", "last")))
            for z in meta["counter_levels"]
        }
        plain = {name: arrays[name] for name in LOD_ARRAYS}
        return LodIndex(summary_levels=summaries, counter_levels=counters, **plain)


def build(trace: Trace) -> LodIndex:
    """Compute the whole index once, at ingest (cost is a few sorts of the event columns)."""
    start = np.asarray(trace.ev_start_ps)
    dur = np.asarray(trace.ev_dur_ps)
    vis = visible_levels(trace)
    by_start = np.argsort(start, kind="stable")
    order = by_start[np.argsort(vis[by_start], kind="stable")]
    group_of = vis[order].astype(np.int64) + 1
    group_off = np.searchsorted(group_of, np.arange(NUM_GROUPS + 1)).astype(np.int64)
    group_max_dur = np.zeros(NUM_GROUPS, dtype=np.int64)
    nonempty = np.flatnonzero(np.diff(group_off))
    if nonempty.shape[0]:
        group_max_dur[nonempty] = np.maximum.reduceat(dur[order], group_off[nonempty])
    max_depth = np.array([t.max_depth for t in trace.tracks], dtype=np.int64)
    row_base = np.zeros(len(trace.tracks) + 1, dtype=np.int64)
    np.cumsum(max_depth + 1, out=row_base[1:])
    num_tracks = len(trace.tracks)
    track_off = np.searchsorted(np.asarray(trace.ev_track), np.arange(num_tracks + 1)).astype(np.int64)
    track_max_dur = np.zeros(num_tracks, dtype=np.int64)
    has_events = np.flatnonzero(np.diff(track_off))
    if has_events.shape[0]:
        track_max_dur[has_events] = np.maximum.reduceat(dur, track_off[has_events])
    index = LodIndex(
        track_off=track_off,
        track_max_dur=track_max_dur,
        order=order.astype(np.int64),
        order_start=start[order],
        group_off=group_off,
        group_max_dur=group_max_dur,
        row_base=row_base,
        self_ps=self_times(trace, row_base),
        flow_by_src=np.argsort(np.asarray(trace.flow_src), kind="stable"),
        flow_by_dst=np.argsort(np.asarray(trace.flow_dst), kind="stable"),
        counter_tracks=arrays.unique(np.asarray(trace.ctr_track)).astype(np.int64),
        summary_levels={},
        counter_levels={},
    )
    lo, hi = trace.time_span_ps()
    top = max_level_for(max(hi - lo, 1)) + 1
    index.summary_levels.update(_summary_pyramid(trace, index, top))
    index.counter_levels.update(_counter_pyramid(trace, top))
    return index


def self_times(trace: Trace, row_base: np.ndarray) -> np.ndarray:
    """Duration minus the time covered by direct children (the next row down on the same track).

    Rows never hold overlapping slices, so the children of a slice are the slices of the row below
    that start inside it, and their (clipped) durations add up to the union of their time
    (`nearest_parents`, `covered_by_children`). Each parent's children are summed in start order
    (`np.bincount`), the order `spilled` sums them in too, so both give bit-identical sums.
    """
    start = np.asarray(trace.ev_start_ps)
    dur = np.asarray(trace.ev_dur_ps)
    n = start.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    track, depth = np.asarray(trace.ev_track), np.asarray(trace.ev_depth)
    covered = covered_by_children(start, dur, nearest_parents(track, start, depth, row_base[track] + depth))
    return np.maximum(dur - covered.astype(np.int64), 0)


class Parents(NamedTuple):
    """`nearest_parents`: the events of depth > 0 in (row, start) order, the row above each, the
    last event of that row starting at or before it (-1 where that row holds none of these
    events), every event's row, sorted, and the events in that order."""

    child: np.ndarray
    parent_row: np.ndarray
    parent: np.ndarray
    rows_sorted: np.ndarray
    by_row: np.ndarray


def nearest_parents(track: np.ndarray, start: np.ndarray, depth: np.ndarray, row: np.ndarray) -> Parents:
    """Each child's parent candidate among events in (track, start) order, all rows at once:
    sorted by (row, start) as one int64 key (`start_runs`), a child's parent is the last key at or
    before (its row - 1, its start)."""
    by_row = arrays.stable_argsort(row)  # stable: start order within each row is kept
    rows_sorted = row[by_row]
    run, scale = start_runs(track, start)
    key = rows_sorted * scale + run[by_row]
    child_pos = np.flatnonzero(depth[by_row] > 0)
    parent_row = rows_sorted[child_pos] - 1
    at = np.searchsorted(key, key[child_pos] - scale, side="right") - 1
    found = at >= 0
    found[found] = rows_sorted[at[found]] == parent_row[found]
    parent = np.full(child_pos.shape[0], -1, np.int64)
    parent[found] = by_row[at[found]]
    return Parents(by_row[child_pos], parent_row, parent, rows_sorted, by_row)


def covered_by_children(start: np.ndarray, dur: np.ndarray, found: Parents) -> np.ndarray:
    """Per event, the time its children found among these events cover (float, summed in the
    children's start order)."""
    here = found.parent >= 0
    child, parent = found.child[here], found.parent[here]
    part, inside = covered_part(start[child], dur[child], start[parent] + dur[parent])
    return np.bincount(parent[inside], weights=part[inside], minlength=start.shape[0])


def covered_part(c_start: np.ndarray, c_dur: np.ndarray, p_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The time of each child inside its parent (clipped at the parent's end), and whether it
    starts inside at all."""
    return np.minimum(c_start + c_dur, p_end) - c_start, c_start < p_end


def start_runs(track: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.int64]:
    """For events in (track, start) order: the number of each one's run of equal (track, start),
    from 1, and one more than the last. Rows lie within a track, so row × that + run orders a
    track's events by row, then start, ties equal, as one int64 (no sort of the starts needed)."""
    change = np.ones(track.shape[0], dtype=bool)
    change[1:] = (track[1:] != track[:-1]) | (start[1:] != start[:-1])
    run = np.cumsum(change, dtype=np.int64)
    return run, np.int64(run[-1] + 1 if run.shape[0] else 1)


def _reduce_summaries(
    bins: np.ndarray, rows: np.ndarray, counts: np.ndarray, busy: np.ndarray, num_rows: int
) -> Summaries:
    """Sum counts and busy time per (bin, row), sorted by (bin, row)."""
    if bins.shape[0] == 0:
        return Summaries.empty()
    b0 = int(bins.min())
    width = int(bins.max()) - b0 + 1
    if width * max(num_rows, 1) < 2**62:
        key = (bins - b0) * num_rows + rows
        order = np.argsort(key, kind="stable")
        key = key[order]
        first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    else:
        order = np.lexsort((rows, bins))
        b, r = bins[order], rows[order]
        first = np.flatnonzero(np.concatenate(([True], (b[1:] != b[:-1]) | (r[1:] != r[:-1]))))
    return Summaries(
        bin=bins[order][first],
        row=rows[order][first],
        count=np.add.reduceat(counts[order], first),
        busy=np.add.reduceat(busy[order], first),
    )


def next_level_by_row(
    bins: np.ndarray,
    rows: np.ndarray,
    sums: tuple[np.ndarray, ...],
    new_bins: np.ndarray,
    new_rows: np.ndarray,
    new_sums: tuple[np.ndarray, ...],
    num_rows: int,
    shift: int = 1,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    """`shift` levels up: boxes (`bins`, `rows`, with `sums` per box) in (row, bin) order, their
    bins shifted, joined by new events (bins `new_bins`, one `new_sums` entry each); returns the
    distinct (row, bin) boxes in (row, bin) order with their sums added up.

    Why (row, bin) order: shifting the bins keeps it, so the old boxes stay one sorted run and
    equal neighbours are merged by a linear pass; new events in start order, sorted by row (a
    radix sort), are a second run, and a stable sort merges two runs in linear time (the events of
    several groups, each in start order, are a few runs more). In (bin, row) order every level
    would need a full sort (`_reduce_summaries`). Boxes without sums (the counting pass of
    `windows`, which walks every level of every window) are merged as one int64 key each
    (`_boxes_as_keys`) where the keys fit."""
    bins = bins >> shift
    if not sums:
        keyed = _boxes_as_keys(bins, rows, new_bins, new_rows, num_rows)
        if keyed is not None:
            return (*keyed, ())
    if new_bins.shape[0]:
        by_row = arrays.stable_argsort(new_rows)
        merge = bins.shape[0] > 0 or bool(np.any(new_bins[1:] < new_bins[:-1]))
        bins = np.concatenate((bins, new_bins[by_row]))
        rows = np.concatenate((rows, new_rows[by_row]))
        sums = tuple(np.concatenate((s, n[by_row])) for s, n in zip(sums, new_sums, strict=True))
        if merge:
            order = _row_major_order(bins, rows, num_rows)
            bins, rows = bins[order], rows[order]
            sums = tuple(s[order] for s in sums)
    if bins.shape[0] < 2:
        return bins, rows, sums
    first = np.flatnonzero(np.concatenate(([True], (bins[1:] != bins[:-1]) | (rows[1:] != rows[:-1]))))
    if first.shape[0] == bins.shape[0]:
        return bins, rows, sums
    return bins[first], rows[first], tuple(_sum_runs(s, first) for s in sums)


def _boxes_as_keys(
    bins: np.ndarray, rows: np.ndarray, new_bins: np.ndarray, new_rows: np.ndarray, num_rows: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """`next_level_by_row`'s distinct boxes of shifted `bins` and new events, without sums: each
    box one int64 (row above the bits of its bin less the lowest bin), so the old boxes and the new
    events merge as values, not by an order gathered into two columns (4.5 of the 7.6 s of the
    summaries of the JAX capture repeated to 1 GB went there). None where the keys do not fit."""
    if not (new_bins.shape[0] or bins.shape[0]):
        return bins, rows
    b0 = min(int(b.min()) for b in (bins, new_bins) if b.shape[0])
    b1 = max(int(b.max()) for b in (bins, new_bins) if b.shape[0])
    bits = (b1 - b0).bit_length()
    if bits >= 63 or max(num_rows, 1) >= 1 << (63 - bits):
        return None
    new = (new_rows.astype(np.int64) << bits) | (new_bins - b0)
    if new.shape[0]:
        new = new[arrays.stable_argsort(new_rows)]  # in start order within each row: one run per row
    keys = np.concatenate(((rows << bits) | (bins - b0), new))
    if bins.shape[0] or bool(np.any(new[1:] < new[:-1])):
        keys.sort(kind="stable")  # a few sorted runs: merged in linear time
    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    return (keys & ((1 << bits) - 1)) + b0, keys >> bits


def next_summaries(
    current: Summaries, shift: int, bins: np.ndarray, rows: np.ndarray, dur: np.ndarray, num_rows: int
) -> Summaries:
    """`next_level_by_row` of summary boxes: each new event counts 1 and its duration as busy."""
    b, r, (count, busy) = next_level_by_row(
        current.bin,
        current.row,
        (current.count, current.busy),
        bins,
        rows,
        (np.ones(dur.shape[0], np.int64), dur),
        num_rows,
        shift,
    )
    return Summaries(b, r, count, busy)


def _sum_runs(values: np.ndarray, first: np.ndarray) -> np.ndarray:
    """`np.add.reduceat(values, first)` for int64 runs, about twice as fast when most runs are one
    value long: differences of the running sum at each run's end (exact: int64 wraps around)."""
    running = np.cumsum(values)
    out = running[np.append(first[1:], values.shape[0]) - 1]
    out[1:] -= out[:-1].copy()
    return out


def _row_major_order(bins: np.ndarray, rows: np.ndarray, num_rows: int) -> np.ndarray:
    """A stable order by (row, bin): one int64 key when it fits, else a lexsort."""
    b0 = int(bins.min())
    width = int(bins.max()) - b0 + 1
    if width * max(num_rows, 1) < 2**62:
        return np.argsort(rows * width + (bins - b0), kind="stable")
    return np.lexsort((bins, rows))


def in_bin_order(s: Summaries) -> Summaries:
    """Boxes in (row, bin) order (`next_level_by_row`) reordered by (bin, row), as stored: a
    stable sort by bin keeps the rows in order within a bin."""
    order = np.argsort(s.bin, kind="stable")
    return Summaries(bin=s.bin[order], row=s.row[order], count=s.count[order], busy=s.busy[order])


def _summary_pyramid(trace: Trace, index: LodIndex, top: int) -> dict[int, Summaries]:
    """Summary levels worth storing, walking up one level at a time (in (row, bin) order)."""
    start = np.asarray(trace.ev_start_ps)
    dur = np.asarray(trace.ev_dur_ps)
    row_of = index.row_base[np.asarray(trace.ev_track)]
    depth = np.asarray(trace.ev_depth)
    num_rows = index.num_rows
    stored: dict[int, Summaries] = {}
    current = Summaries.empty()
    stored_size = 0
    events_since = 0
    for level in range(top + 1):
        # Events of group level-1 become narrower than a pixel at this level.
        lo, hi = int(index.group_off[level]), int(index.group_off[level + 1])
        new = index.order[lo:hi]
        events_since += new.shape[0]
        if new.shape[0] == 0 and len(current) == 0:
            continue
        current = next_summaries(
            current, 1, start[new] >> level, row_of[new] + depth[new], dur[new], num_rows
        )
        if stored_size + events_since > PYRAMID_GAIN * len(current):
            stored[level] = in_bin_order(current)
            stored_size = len(current)
            events_since = 0
    return stored


def _reduce_counters(c: CounterBins, shift: int) -> CounterBins:
    """Re-bin counter bins sorted by (track, bin) to a level `shift` coarser."""
    if len(c) == 0:
        return c
    bins = c.bin >> shift
    first = np.flatnonzero(np.concatenate(([True], (bins[1:] != bins[:-1]) | (c.track[1:] != c.track[:-1]))))
    last = np.concatenate((first[1:], [bins.shape[0]])) - 1
    return CounterBins(
        track=c.track[first],
        bin=bins[first],
        min=np.minimum.reduceat(c.min, first),
        max=np.maximum.reduceat(c.max, first),
        last=c.last[last],
    )


def _raw_counters(trace: Trace) -> CounterBins:
    value = np.asarray(trace.ctr_value)
    return CounterBins(
        track=np.asarray(trace.ctr_track),
        bin=np.asarray(trace.ctr_time_ps),
        min=value,
        max=value,
        last=value,
    )


def _counter_pyramid(trace: Trace, top: int) -> dict[int, CounterBins]:
    return counter_pyramid_of(_raw_counters(trace), top)


def counter_pyramid_of(raw: CounterBins, top: int) -> dict[int, CounterBins]:
    """Counter levels worth storing over `raw` samples sorted by (track, time)."""
    stored: dict[int, CounterBins] = {}
    if len(raw) == 0:
        return stored
    base, base_level = raw, 0
    for level in range(top + 1):
        current = _reduce_counters(base, level - base_level) if level else base
        if len(base) > PYRAMID_GAIN * len(current):
            stored[level] = current
            base, base_level = current, level
    return stored


def _group_window(index: LodIndex, group: int, lo_ps: int, hi_ps: int) -> np.ndarray:
    """Event indices of one group whose start may fall in [lo_ps - longest, hi_ps)."""
    g_lo, g_hi = int(index.group_off[group + 1]), int(index.group_off[group + 2])
    if g_lo == g_hi:
        return index.order[0:0]
    starts = index.order_start[g_lo:g_hi]
    a = g_lo + int(np.searchsorted(starts, lo_ps, side="left"))
    b = g_lo + int(np.searchsorted(starts, hi_ps, side="left"))
    return index.order[a:b]


def exact_events(trace: Trace, index: LodIndex, level: int, lo_ps: int, hi_ps: int) -> np.ndarray:
    """Indices of events drawn exactly at `level` that overlap [lo_ps, hi_ps) (host-local ps)."""
    parts = []
    start = trace.ev_start_ps
    dur = trace.ev_dur_ps
    for group in range(max(level, -1), TOP_LEVEL + 1):
        longest = int(index.group_max_dur[group + 1])
        if index.group_off[group + 1] == index.group_off[group + 2]:
            continue
        cand = _group_window(index, group, lo_ps - longest, hi_ps)
        if cand.shape[0] == 0:
            continue
        s = start[cand]
        d = dur[cand]
        keep = (s + d > lo_ps) | ((d == 0) & (s >= lo_ps))
        parts.append(cand[keep])
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def _ceil_shift(value: int, level: int) -> int:
    return -((-value) >> level)


def summaries(trace: Trace, index: LodIndex, level: int, lo_ps: int, hi_ps: int) -> Summaries:
    """Summary boxes at `level` for the pixel bins that start in [lo_ps, hi_ps) (host-local ps).

    Bins are the host's own `t >> level`; each bin (and so each summarized event) belongs to the
    one tile its start falls in.
    """
    k_lo, k_hi = _ceil_shift(lo_ps, level), _ceil_shift(hi_ps, level)
    stored_at = max((z for z in index.summary_levels if z <= level), default=-1)
    parts_bin, parts_row, parts_count, parts_busy = [], [], [], []
    if stored_at >= 0:
        s = index.summary_levels[stored_at]
        shift = level - stored_at
        a = int(np.searchsorted(s.bin, k_lo << shift, side="left"))
        b = int(np.searchsorted(s.bin, k_hi << shift, side="left"))
        parts_bin.append(np.asarray(s.bin[a:b]) >> shift)
        parts_row.append(np.asarray(s.row[a:b]))
        parts_count.append(np.asarray(s.count[a:b]))
        parts_busy.append(np.asarray(s.busy[a:b]))
    t_lo, t_hi = k_lo << level, k_hi << level
    row_base = index.row_base
    for group in range(stored_at, level):
        cand = _group_window(index, group, t_lo, t_hi)
        if cand.shape[0] == 0:
            continue
        parts_bin.append(trace.ev_start_ps[cand] >> level)
        parts_row.append(row_base[trace.ev_track[cand]] + trace.ev_depth[cand])
        parts_count.append(np.ones(cand.shape[0], np.int64))
        parts_busy.append(np.asarray(trace.ev_dur_ps[cand]))
    if not parts_bin:
        return Summaries.empty()
    return _reduce_bins_in_tile(
        np.concatenate(parts_bin) - k_lo,
        np.concatenate(parts_row),
        np.concatenate(parts_count),
        np.concatenate(parts_busy),
        k_lo,
        k_hi - k_lo,
        index.num_rows,
    )


def _reduce_bins_in_tile(
    px: np.ndarray,
    rows: np.ndarray,
    counts: np.ndarray,
    busy: np.ndarray,
    k_lo: int,
    width: int,
    num_rows: int,
) -> Summaries:
    """Group by (row, pixel) where pixels are 0..width-1: a dense bincount when rows are few."""
    if px.shape[0] == 0:
        return Summaries.empty()
    present = (
        arrays.unique(rows)
        if rows.shape[0] < num_rows
        else np.flatnonzero(np.bincount(rows, minlength=num_rows))
    )
    if present.shape[0] * width <= 1 << 22:
        dense_row = np.searchsorted(present, rows)
        key = dense_row * width + px
        size = present.shape[0] * width
        cnt = np.bincount(key, weights=counts, minlength=size)
        hit = np.flatnonzero(cnt)
        total = np.bincount(key, weights=busy, minlength=size)
        return Summaries(
            bin=hit % width + k_lo,
            row=present[hit // width],
            count=cnt[hit].astype(np.int64),
            busy=total[hit].astype(np.int64),
        )
    s = _reduce_summaries(px, rows, counts, busy, num_rows)
    return Summaries(bin=s.bin + k_lo, row=s.row, count=s.count, busy=s.busy)


def counters(trace: Trace, index: LodIndex, level: int, lo_ps: int, hi_ps: int) -> CounterBoxes:
    """Counter boxes at `level` for pixels starting in [lo_ps, hi_ps) (host-local ps).

    A track that goes on into the window also gets the box before it, which carries the value in
    from the left edge (its start is before `lo_ps`).
    """
    if trace.ctr_time_ps.shape[0] == 0:
        return _empty_boxes()
    stored_at = max((z for z in index.counter_levels if z <= level), default=0)
    src = index.counter_levels[stored_at] if stored_at in index.counter_levels else _raw_counters(trace)
    shift = level - stored_at
    k_lo, k_hi = _ceil_shift(lo_ps, level), _ceil_shift(hi_ps, level)
    pieces: list[np.ndarray] = []
    goes_on: list[int] = []
    track_col = src.track
    for t in index.counter_tracks.tolist():
        t_lo = int(np.searchsorted(track_col, t, side="left"))
        t_hi = int(np.searchsorted(track_col, t, side="right"))
        bins = src.bin[t_lo:t_hi]
        a = t_lo + int(np.searchsorted(bins, k_lo << shift, side="left"))
        b = t_lo + int(np.searchsorted(bins, k_hi << shift, side="left"))
        if a == t_hi:
            continue  # the track ended before this window
        first = a
        if a > t_lo:
            # Carry-in: the whole level-`level` pixel holding the last sample before the window.
            carry_bin = (int(src.bin[a - 1]) >> shift) << shift
            first = t_lo + int(np.searchsorted(bins, carry_bin, side="left"))
        if first == b:
            continue  # the track starts after this window
        pieces.append(np.arange(first, b))
        if b < t_hi:
            goes_on.append(t)
    if not pieces:
        return _empty_boxes()
    take = np.concatenate(pieces)
    picked = _reduce_counters(
        CounterBins(
            track=track_col[take],
            bin=np.asarray(src.bin)[take],
            min=np.asarray(src.min)[take],
            max=np.asarray(src.max)[take],
            last=np.asarray(src.last)[take],
        ),
        shift,
    )
    start = picked.bin << level
    end = np.empty_like(start)
    end[:-1] = start[1:]
    open_end = np.ones(start.shape[0], dtype=bool)
    open_end[:-1] = picked.track[1:] != picked.track[:-1]
    end[open_end] = np.where(np.isin(picked.track[open_end], goes_on), hi_ps, start[open_end] + (1 << level))
    return CounterBoxes(picked.track, start, end, picked.min, picked.max, picked.last)


def _empty_boxes() -> CounterBoxes:
    z = np.zeros(0, np.int64)
    f = np.zeros(0, np.float64)
    return CounterBoxes(z, z, z, f, f, f)


def flows_touching(trace: Trace, index: LodIndex, events: np.ndarray) -> np.ndarray:
    """Indices of flows whose source or destination is one of `events` (sorted event indices)."""
    found = []
    for column, by in ((trace.flow_src, index.flow_by_src), (trace.flow_dst, index.flow_by_dst)):
        if by.shape[0] == 0 or events.shape[0] == 0:
            continue
        lo = searchsorted_through(column, by, events, "left")
        hi = searchsorted_through(column, by, events, "right")
        hit = hi > lo
        if hit.any():
            found.append(np.asarray(by)[arrays.ranges(lo[hit], hi[hit])])
    if not found:
        return np.zeros(0, np.int64)
    return arrays.unique(np.concatenate(found))


def searchsorted_through(column: np.ndarray, order: np.ndarray, values: Any, side: str) -> np.ndarray:
    """`np.searchsorted(column[order], values, side)` for an `order` that sorts `column`, without
    gathering `column[order]`: that gather reads the whole column (every flow of a 29 M-event trace
    for each tile), while a binary search of all `values` at once reads about 2 log2(n) entries per
    value."""
    column, order = np.asarray(column), np.asarray(order)
    values = np.asarray(values)
    lo = np.zeros(values.shape, np.int64)
    hi = np.full(values.shape, order.shape[0], np.int64)
    for _ in range(int(order.shape[0]).bit_length()):
        open_ = lo < hi
        if not open_.any():
            break
        mid = (lo + hi) >> 1
        probe = column[order[np.minimum(mid, order.shape[0] - 1)]]
        below = probe < values if side == "left" else probe <= values
        lo = np.where(open_ & below, mid + 1, lo)
        hi = np.where(open_ & ~below, mid, hi)
    return lo
