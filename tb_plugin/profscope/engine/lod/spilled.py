"""The level-of-detail index (`lod.build`) of a spilled trace, in bounded memory, with the same arrays.

The trace's columns are files of the temporary entry; every pass reads them in chunks of rows
(never mapping them whole) and writes the index's big arrays straight into `<entry>/lod/*.npy`:
- pass A, over events in order: per-track counts (`track_off`) and longest duration, each event's
  visible level (`lod.visible_levels`: an instant's level compares it with the previous instant of
  its row (track, depth) in event order, which is that function's sort; the last one of each row
  is carried into the next chunk), per-level-group counts and longest durations, the time span,
  and one event in `spill_budget.SAMPLE_EVERY` as (group, start);
- `order` (stable by (visible level, start)): pieces of groups (`spill.sort.plan`, a group too big
  cut by start), each sorted by start; `order_start` beside it, plus the rows and durations in the
  same order in scratch files for the summaries (`windows`);
- `self_ps` (`lod.self_times`): windows of events in order, never cutting a run of equal
  (track, start), each row's last slice carried as a parent (its covered time summed on in the same
  order as `np.bincount`, so the float sums are bit-identical);
- `flow_by_src` / `flow_by_dst`: stable argsorts, by ranges of event index when too big;
- summaries and counter levels: `windows`.
After pass A a second thread makes `self_ps`, the flow orders and the counter tracks while this one
makes `order` and the summaries; once done, the second thread sorts `order` pieces too, until none
is left. Each side plans its chunks within half the budget, and sorts one piece at a time.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from profscope.engine.lod import index as lod
from profscope.engine.lod import windows as lod_windows
from profscope.model import arrays
from profscope.model.columns import Trace
from profscope.model.spill import budget as spill_budget
from profscope.model.spill import sort as spill_sort
from profscope.model.spill.files import ColumnReader, NpyColumn, RecordFile
from profscope.model.spill.sort import Buckets, contiguous

# Bytes of work per event of a chunk or piece (read columns, sort copies, permutations).
EVENT_WORK_BYTES = 160
ORDER_WORK_BYTES = 140
FLOW_WORK_BYTES = 48
MIN_CAPACITY_BYTES = 64 << 10
FLOW_PAIR = np.dtype([("pos", "<i8"), ("end", "<i8")])


def order_record(num_events: int, num_rows: int) -> np.dtype:
    """The record an event goes to the order pieces as: event index and row in 4 bytes where
    they fit (25 bytes, not 33: these records are written and read back once per event)."""
    idx = "<i4" if num_events <= np.iinfo(np.int32).max else "<i8"
    row = "<i4" if num_rows <= np.iinfo(np.int32).max else "<i8"
    return np.dtype([("start", "<i8"), ("dur", "<i8"), ("idx", idx), ("row", row), ("group", "i1")])


_TOP = lod.TOP_LEVEL


def build_extras(trace: Trace, out_dir: str, budget: int) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """What `ingest.manager.build_extras` gives for `trace`, its big arrays files under `out_dir/lod/`."""
    return _Build(trace, out_dir, budget).run()


def _levels_of(diff: np.ndarray) -> np.ndarray:
    """`visible_levels`' level of an instant whose start differs from the previous one's by `diff` (XOR)."""
    highest = np.frexp(np.maximum(diff, 0).astype(np.float64))[1] - 1
    return np.where(diff < 0, _TOP, np.minimum(highest, _TOP))


class _EventColumns:
    """Readers of the columns the passes over events in order read (one set per thread: a reader
    seeks its own file)."""

    def __init__(self, trace: Trace) -> None:
        self.readers = [
            ColumnReader(c) for c in (trace.ev_start_ps, trace.ev_dur_ps, trace.ev_track, trace.ev_depth)
        ]

    def chunk(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(start, dur, track, depth) of events [lo, hi)."""
        start, dur, track, depth = (r.read(lo, hi) for r in self.readers)
        return start, dur, track, depth

    def close(self) -> None:
        for reader in self.readers:
            reader.close()


class _Build:
    def __init__(self, trace: Trace, out_dir: str, budget: int) -> None:
        self.trace = trace
        self.n = trace.num_events
        # Two threads share the budget after pass A (see `run`), so every step plans with half.
        self.capacity = max(int(budget) // 2, MIN_CAPACITY_BYTES)
        self.rows = max(self.capacity // EVENT_WORK_BYTES, 1024)
        self.lod_dir = os.path.join(out_dir, store_extra_dir())
        self.scratch = os.path.join(out_dir, f"{spill_budget.SCRATCH_DIR}-lod")
        os.makedirs(self.lod_dir, exist_ok=True)
        os.makedirs(self.scratch, exist_ok=True)
        self.events = _EventColumns(trace)

    def _column(self, name: str, dtype: Any, count: int) -> NpyColumn:
        return NpyColumn(os.path.join(self.lod_dir, name + ".npy"), np.dtype(dtype), count)

    def run(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        trace = self.trace
        num_tracks = len(trace.tracks)
        max_depth = np.array([t.max_depth for t in trace.tracks], dtype=np.int64)
        self.row_base = np.zeros(num_tracks + 1, dtype=np.int64)
        np.cumsum(max_depth + 1, out=self.row_base[1:])
        self._pass_a(num_tracks)
        arrays: dict[str, np.ndarray] = {
            "track_off": self.track_off,
            "track_max_dur": self.track_max_dur,
            "row_base": self.row_base,
        }
        # The self times and the flow orders need nothing of the order and the summaries: a second
        # thread makes them meanwhile (numpy's sorts, gathers and reductions and the file reads
        # release the GIL), each side planning within half the budget.
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="profscope-lod") as pool:
            side = pool.submit(self._independent)
            arrays.update(self._order(pool))
            lo, hi = self._span()
            top = lod.max_level_for(max(hi - lo, 1)) + 1
            windows = lod_windows.Windows(self, top)
            summary_levels = windows.summaries()
            arrays.update(side.result())
        counter_levels = lod_windows.counter_levels(self, top)
        for level in summary_levels:
            for name in ("bin", "row", "count", "busy"):
                arrays[f"sum{level}_{name}"] = windows.stored[level][name]
        for level in counter_levels:
            for name in ("track", "bin", "min", "max", "last"):
                arrays[f"ctr{level}_{name}"] = counter_levels[level][name]
        self.events.close()
        for reader in (self.order_row, self.order_dur):
            reader.close()
        meta = {"summary_levels": sorted(summary_levels), "counter_levels": sorted(counter_levels)}
        return arrays, {"lod": meta}

    # -- pass A -------------------------------------------------------------------------------
    def _pass_a(self, num_tracks: int) -> None:
        counts = np.zeros(num_tracks, dtype=np.int64)
        self.track_max_dur = np.zeros(num_tracks, dtype=np.int64)
        self.group_counts = np.zeros(lod.NUM_GROUPS, dtype=np.int64)
        self.group_max_dur = np.zeros(lod.NUM_GROUPS, dtype=np.int64)
        self.vis = RecordFile(os.path.join(self.scratch, "vis"), np.dtype(np.int8))
        samples: list[np.ndarray] = []
        self.ev_lo, self.ev_hi = None, None
        carry_track, carry = -1, {}
        for lo in range(0, self.n, self.rows):
            hi = min(lo + self.rows, self.n)
            s, d, t, dep = self.events.chunk(lo, hi)
            counts += np.bincount(t, minlength=num_tracks)[:num_tracks]
            first = np.flatnonzero(np.concatenate(([True], t[1:] != t[:-1])))
            np.maximum.at(self.track_max_dur, t[first], np.maximum.reduceat(d, first))
            vis = np.empty(s.shape[0], dtype=np.int8)
            slices = d > 0
            vis[slices] = np.minimum(np.frexp(d[slices].astype(np.float64))[1] - 1, _TOP)
            inst = np.flatnonzero(~slices)
            if inst.shape[0]:
                carry_track, carry = self._instants(vis, inst, s, t, dep, carry_track, carry)
            self.vis.append(vis)
            group = vis.astype(np.int64) + 1
            self.group_counts += np.bincount(group, minlength=lod.NUM_GROUPS)
            np.maximum.at(self.group_max_dur, group, d)
            pick = np.arange((-lo) % spill_budget.SAMPLE_EVERY, s.shape[0], spill_budget.SAMPLE_EVERY)
            samples.append(np.stack((group[pick], s[pick])))
            low, high = int(s.min()), int((s + d).max())
            self.ev_lo = low if self.ev_lo is None else min(self.ev_lo, low)
            self.ev_hi = high if self.ev_hi is None else max(self.ev_hi, high)
        self.track_off = np.zeros(num_tracks + 1, dtype=np.int64)
        np.cumsum(counts, out=self.track_off[1:])
        self.samples = np.concatenate(samples, axis=1) if samples else np.zeros((2, 0), np.int64)

    def _instants(
        self,
        vis: np.ndarray,
        inst: np.ndarray,
        s: np.ndarray,
        t: np.ndarray,
        dep: np.ndarray,
        carry_track: int,
        carry: dict[int, int],
    ) -> tuple[int, dict[int, int]]:
        """Visible levels of a chunk's instants; `carry`: last instant start per depth of track
        `carry_track` (the last track of earlier chunks). Returns the carry for the next chunk."""
        start, track, depth = s[inst], t[inst], dep[inst]
        order = np.lexsort((start, depth, track))
        inst, start, track, depth = inst[order], start[order], track[order], depth[order]
        level = np.full(inst.shape[0], _TOP, dtype=np.int64)
        same_row = (track[1:] == track[:-1]) & (depth[1:] == depth[:-1])
        level[1:] = np.where(same_row, _levels_of(start[1:] ^ start[:-1]), _TOP)
        first = np.flatnonzero(np.concatenate(([True], ~same_row)))
        mine = first[track[first] == carry_track]
        if mine.shape[0] and carry:
            known = np.array([d in carry for d in depth[mine].tolist()], dtype=bool)
            mine = mine[known]
            previous = np.array([carry[d] for d in depth[mine].tolist()], dtype=np.int64)
            level[mine] = _levels_of(start[mine] ^ previous)
        vis[inst] = level
        last_track = int(t[-1])
        if last_track != carry_track:
            carry_track, carry = last_track, {}
        last = np.concatenate((first[1:], [inst.shape[0]])) - 1
        last = last[track[last] == last_track]
        carry.update(zip(depth[last].tolist(), start[last].tolist()))
        return carry_track, carry

    def _span(self) -> tuple[int, int]:
        """`Trace.time_span_ps()`, by chunks."""
        lows, highs = [], []
        if self.ev_lo is not None:
            lows.append(self.ev_lo)
            highs.append(self.ev_hi)
        times = ColumnReader(self.trace.ctr_time_ps)
        for lo in range(0, times.count, self.rows):
            chunk = times.read(lo, lo + self.rows)
            lows.append(int(chunk.min()))
            highs.append(int(chunk.max()))
        times.close()
        return (min(lows), max(highs)) if lows else (0, 0)

    # -- order ---------------------------------------------------------------------------------
    def _order(self, pool: concurrent.futures.ThreadPoolExecutor) -> dict[str, np.ndarray]:
        buckets = self._order_buckets()
        order = self._column("order", np.int64, self.n)
        order_start = self._column("order_start", np.int64, self.n)
        self.order_row = RecordFile(os.path.join(self.scratch, "order_row"), buckets.dtype["row"])
        self.order_dur = RecordFile(os.path.join(self.scratch, "order_dur"), np.dtype(np.int64))
        offsets = np.zeros(len(buckets.sizes) + 1, dtype=np.int64)
        np.cumsum(buckets.sizes, out=offsets[1:])
        outputs = (order, order_start, self.order_row, self.order_dur)
        # The second thread takes pieces too once its own work is done: at 78.6 M events it was
        # done 5 s before this one (2026-12-06). Each sorts one piece at a time within its half.
        pieces = _Pieces(len(buckets.sizes))
        pool.submit(self._sort_pieces, pieces, buckets, offsets, outputs)
        self._sort_pieces(pieces, buckets, offsets, outputs)
        pieces.wait()
        self.group_off = np.zeros(lod.NUM_GROUPS + 1, dtype=np.int64)
        np.cumsum(self.group_counts, out=self.group_off[1:])
        self.order_start = order_start.mapped()
        return {
            "order": order.mapped(),
            "order_start": self.order_start,
            "group_off": self.group_off,
            "group_max_dur": self.group_max_dur,
        }

    def _order_buckets(self) -> Buckets:
        """Every event's (start, duration, index, row, group) in the files of its order piece."""
        cost = self.group_counts * ORDER_WORK_BYTES
        plan = spill_sort.plan(cost, self.capacity, self.samples[0], self.samples[1])
        record = order_record(self.n, int(self.row_base[-1]))
        buckets = Buckets(self.scratch, "order", record, len(plan))
        for lo in range(0, self.n, self.rows):
            hi = min(lo + self.rows, self.n)
            s, d, t, dep = self.events.chunk(lo, hi)
            group = self.vis.read(lo, hi).astype(np.int64) + 1
            rec = np.empty(s.shape[0], record)
            rec["start"], rec["dur"] = s, d
            rec["idx"] = np.arange(lo, hi, dtype=record["idx"])
            rec["row"] = self.row_base[t] + dep
            rec["group"] = group
            buckets.add(plan.assign(group, s), rec)
        self.vis.remove()
        return buckets

    @staticmethod
    def _sort_pieces(
        pieces: _Pieces, buckets: Buckets, offsets: np.ndarray, outputs: tuple[RecordFile, ...]
    ) -> None:
        """Sort the pieces `pieces` hands out, each into its place in the order columns."""
        order, order_start, order_row, order_dur = outputs
        while (p := pieces.take()) is not None:
            with pieces.working():
                rec = buckets.load(p)
                start, idx, dur, row, group = contiguous(rec, "start", "idx", "dur", "row", "group")
                del rec
                # A piece holds whole groups in group order, or one part of a group cut by start.
                by_start = np.argsort(start, kind="stable")
                by_start = by_start[np.argsort(group[by_start].view(np.uint8), kind="stable")]
                at = int(offsets[p])
                order.write_at(at, idx[by_start])
                order_start.write_at(at, start[by_start])
                order_row.write_at(at, row[by_start])
                order_dur.write_at(at, dur[by_start])

    def _independent(self) -> dict[str, np.ndarray]:
        """The arrays the second thread makes, with its own readers."""
        events = _EventColumns(self.trace)
        try:
            out = {"self_ps": self._self_times(events)}
        finally:
            events.close()
        out["flow_by_src"] = self._flow_order(self.trace.flow_src, "flow_by_src")
        out["flow_by_dst"] = self._flow_order(self.trace.flow_dst, "flow_by_dst")
        out["counter_tracks"] = self._counter_tracks()
        return out

    # -- self times ----------------------------------------------------------------------------
    def _self_times(self, events: _EventColumns) -> np.ndarray:
        out = self._column("self_ps", np.int64, self.n)
        carried = _Carried()  # the last slice of each row of the carry track, from earlier windows
        carry_track = -1
        lo = 0
        while lo < self.n:
            hi = min(lo + self.rows, self.n)
            s, d, t, dep = events.chunk(lo, hi)
            while hi < self.n and t[-1] == t[0] and s[-1] == s[0]:
                hi = min(hi + self.rows, self.n)  # one run of equal starts filling the chunk
                s, d, t, dep = events.chunk(lo, hi)
            if hi < self.n:
                run = (t == t[-1]) & (s == s[-1])
                cut = int(np.flatnonzero(~run)[-1]) + 1
                s, d, t, dep = s[:cut], d[:cut], t[:cut], dep[:cut]
                hi = lo + cut
            if int(t[0]) != carry_track:
                carried.settle_all(out)
                carry_track = int(t[0])
            covered, found = self._window(out, lo, s, d, t, dep, carried)
            if int(t[-1]) != carry_track:
                carried.settle_all(out)
                carry_track = int(t[-1])
            self._carry_last_rows(lo, s, d, covered, found, carry_track, carried)
            del found  # not held while the next window finds its parents
            lo = hi
        carried.settle_all(out)
        return out.mapped()

    def _window(
        self,
        out: NpyColumn,
        lo: int,
        s: np.ndarray,
        d: np.ndarray,
        t: np.ndarray,
        dep: np.ndarray,
        carried: _Carried,
    ) -> tuple[np.ndarray, lod.Parents]:
        """Self times of one window, as `lod.self_times` finds them (`lod.nearest_parents`, all rows
        at once); the parents carried from earlier windows (rows of its
        first track, each starting before every event of its row here) take their children here
        too, summed on in order (`np.add.at`); those whose rows got a newer slice here are settled.
        Returns the time covered by children of each event, and the parents found."""
        m = s.shape[0]
        found = lod.nearest_parents(t, s, dep, self.row_base[t] + dep)
        covered = lod.covered_by_children(s, d, found)
        # No parent of its row here: the row's carried one (it started before all of them), if any.
        slot = np.searchsorted(carried.row, found.parent_row)
        carry = (found.parent < 0) & (slot < carried.row.shape[0])
        carry[carry] = carried.row[slot[carry]] == found.parent_row[carry]
        child, slot = found.child[carry], slot[carry]
        part, inside = lod.covered_part(s[child], d[child], carried.end[slot])
        np.add.at(carried.covered, slot[inside], part[inside].astype(np.float64))
        out.write_at(lo, np.maximum(d - covered.astype(np.int64), 0))
        # A carried parent whose row got a newer slice here can take no more children.
        at_row = np.minimum(np.searchsorted(found.rows_sorted, carried.row), m - 1)
        carried.settle(out, found.rows_sorted[at_row] == carried.row)
        return covered, found

    def _carry_last_rows(
        self,
        lo: int,
        s: np.ndarray,
        d: np.ndarray,
        covered: np.ndarray,
        found: lod.Parents,
        track: int,
        carried: _Carried,
    ) -> None:
        """Carry the last slice of each row of `track`, the window's last: the last of each row's
        run in the (row, start) order `found` has already (a track's rows are one range), where a
        sort of the track's events by row again took a sixth of the self times' samples when one
        track fills the window."""
        a, b = np.searchsorted(found.rows_sorted, self.row_base[track : track + 2], side="left").tolist()
        rows, mine = found.rows_sorted[a:b], found.by_row[a:b]
        last = np.flatnonzero(np.concatenate((rows[1:] != rows[:-1], [True])))
        i = mine[last]
        carried.replace(rows[last], lo + i, s[i], s[i] + d[i], d[i], covered[i])

    # -- flows and counters ---------------------------------------------------------------------
    def _flow_order(self, column: np.ndarray, name: str) -> np.ndarray:
        """`np.argsort(column, kind="stable")`, by ranges of values when too big for the budget."""
        reader = ColumnReader(column)
        count = reader.count
        if count * FLOW_WORK_BYTES <= self.capacity:
            values = reader.read(0, count)
            reader.close()
            return np.argsort(values, kind="stable")
        block = max(1, -(-max(self.n, 1) // 65536))
        histogram = np.zeros(0, dtype=np.int64)
        low = None
        for lo in range(0, count, self.rows):
            chunk = reader.read(lo, lo + self.rows)
            low = int(chunk.min()) if low is None else min(low, int(chunk.min()))
        for lo in range(0, count, self.rows):
            chunk = reader.read(lo, lo + self.rows) - low
            add = np.bincount(chunk // block)
            if add.shape[0] > histogram.shape[0]:
                histogram = np.concatenate((histogram, np.zeros(add.shape[0] - histogram.shape[0], np.int64)))
            histogram[: add.shape[0]] += add
        ranges = spill_sort.range_plan(histogram, max(self.capacity // FLOW_WORK_BYTES, 1024))
        range_of_block = np.zeros(histogram.shape[0], dtype=np.int64)
        for r, (a, b) in enumerate(ranges):
            range_of_block[a:b] = r
        buckets = Buckets(self.scratch, name, FLOW_PAIR, len(ranges))
        for lo in range(0, count, self.rows):
            chunk = reader.read(lo, lo + self.rows)
            rec = np.empty(chunk.shape[0], FLOW_PAIR)
            rec["pos"] = np.arange(lo, lo + chunk.shape[0], dtype=np.int64)
            rec["end"] = chunk
            buckets.add(range_of_block[(chunk - low) // block], rec)
        reader.close()
        out = self._column(name, np.int64, count)
        offset = 0
        for r in buckets:
            rec = buckets.load(r)
            order = np.argsort(rec["end"], kind="stable")
            out.write_at(offset, rec["pos"][order])
            offset += rec.shape[0]
        return out.mapped()

    def _counter_tracks(self) -> np.ndarray:
        reader = ColumnReader(self.trace.ctr_track)
        found: np.ndarray = np.zeros(0, dtype=np.int64)
        for lo in range(0, reader.count, self.rows):
            found = np.union1d(found, reader.read(lo, lo + self.rows).astype(np.int64))
        reader.close()
        return arrays.unique(found).astype(np.int64)


class _Pieces:
    """Hands out piece numbers to the threads sorting them and knows when all are sorted: a
    failure in one thread stops the handing out, and `wait` raises it."""

    def __init__(self, count: int) -> None:
        self._next = 0
        self._count = count
        self._busy = 0
        self._error: BaseException | None = None
        self._changed = threading.Condition()

    def take(self) -> int | None:
        with self._changed:
            if self._next >= self._count or self._error is not None:
                return None
            self._next += 1
            self._busy += 1
            return self._next - 1

    @contextlib.contextmanager
    def working(self) -> Iterator[None]:
        """Around the sorting of a piece taken: marks it done, and a failure as everyone's."""
        try:
            yield
        except BaseException as exc:
            with self._changed:
                self._error = self._error or exc
            raise
        finally:
            with self._changed:
                self._busy -= 1
                self._changed.notify_all()

    def wait(self) -> None:
        """Wait until every piece taken is sorted; raise the first failure."""
        with self._changed:
            while self._busy:
                self._changed.wait()
            if self._error is not None:
                raise self._error


class _Carried:
    """Parents carried from one window of the self times to the next: per row (sorted), the event
    index, start, end, duration and the time its children covered so far."""

    def __init__(self) -> None:
        self.row = np.zeros(0, np.int64)
        self.index = np.zeros(0, np.int64)
        self.start = np.zeros(0, np.int64)
        self.end = np.zeros(0, np.int64)
        self.dur = np.zeros(0, np.int64)
        self.covered = np.zeros(0, np.float64)

    FIELDS = ("row", "index", "start", "end", "dur", "covered")

    def settle_all(self, out: NpyColumn) -> None:
        self.settle(out, np.ones(self.row.shape[0], bool))

    def settle(self, out: NpyColumn, which: np.ndarray) -> None:
        """Write the final self time of the parents `which` selects and forget them: one write per
        run of consecutive event indices."""
        if not which.any():
            return
        index = self.index[which]
        value = np.maximum(self.dur[which] - self.covered[which].astype(np.int64), 0)
        order = np.argsort(index, kind="stable")
        index, value = index[order], value[order]
        breaks = np.flatnonzero(np.diff(index) != 1) + 1
        for a, b in zip(
            np.concatenate(([0], breaks)).tolist(), np.concatenate((breaks, [index.shape[0]])).tolist()
        ):
            out.write_at(int(index[a]), value[a:b])
        keep = ~which
        for name in self.FIELDS:
            setattr(self, name, getattr(self, name)[keep])

    def replace(
        self,
        row: np.ndarray,
        index: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        dur: np.ndarray,
        covered: np.ndarray,
    ) -> None:
        """Carry these parents (rows sorted) instead of what their rows carried (settled already)."""
        keep = ~np.isin(self.row, row)
        new = {"row": row, "index": index, "start": start, "end": end, "dur": dur, "covered": covered}
        merged_row = np.concatenate((self.row[keep], row))
        order = arrays.stable_argsort(merged_row)
        for name in self.FIELDS:
            values = np.concatenate((getattr(self, name)[keep], new[name].astype(getattr(self, name).dtype)))
            setattr(self, name, values[order])


def store_extra_dir() -> str:
    from profscope.engine import store

    return store.EXTRA_DIR
