"""`TraceBuilder.finalize()` of a spilled builder, in bounded memory, with the in-memory result.

Every step works on pieces of at most `capacity` bytes of work (the builder's budget less what stays
resident: the samples, per-track counts, flow points added one by one):
1. events go to pieces of consecutive tracks (`spill.sort.plan`; a track bigger than a piece is cut
   by start time), and flow points to the piece of the track and time they bind on;
2. per piece, in output order: `event_order_unless_in_place`, `layout_depths` (a cut track:
   `spill.layout`), the columns written at the piece's offset of the entry's `.npy` files; `ev_args`
   is the builder index of each final event, and (builder index, final index) pairs are scattered by
   builder-index range; the piece's flow points are bound (`_bind_flow_points`) and scattered by
   flow-id range;
3. each builder-index range of `args_event` is filled from its pairs (each index has exactly one),
   answering on the way the lookups `final_index[src]`, `final_index[dst]` of the flows given by
   builder index (where all indices make one range, no pairs: step 2 fills `args_event` in memory,
   which saves writing and reading 16 bytes per event); the args bytes and `args_off` are already
   in place (written in add order as the events came); a piece whose builder indices come in long
   runs of consecutive ones (an XPlane's, added line by line) gives its runs instead of pairs
   (`_IndexRuns`), which fill their part of `args_event` without going through the files;
4. the points of each flow-id range are sorted by (flow, ts, phase, event, name, position), as the
   in-memory lexsort with its stable ties, and consecutive points of a flow linked;
5. counter samples like events: pieces of tracks (one cut by time), each sorted by (track, time).
Step 2 runs on two threads: piece p + 1 is loaded, ordered and nested while piece p is written, so
pieces are planned at half the capacity. Memory per piece: about EVENT_WORK_BYTES per event,
POINT_WORK_BYTES per flow point (the records, the sorts' copies and permutations). Checked with
tracemalloc (allocations made during `finalize`) on the 3.2 M-event Kineto trace of
`benchmarks/make_big_json.py`: peaks of 83 and 309 MiB at budgets of 100 and 400 MiB (87 and 345
on one thread before). The 7.9 M-event XPlane of `bench_xplane.py --replicate 2000` peaks at 114 MiB
under a budget of 100 MiB, on one thread as on two (259 MiB under 400).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
from typing import Any

import numpy as np

from profscope.model import arrays
from profscope.model.column_types import COLUMN_DTYPES
from profscope.model.layout import FLOW_PHASES, _bind_flow_points, event_order_unless_in_place, layout_depths
from profscope.model.spill import attachments as spill_attachments
from profscope.model.spill import budget as spill_budget
from profscope.model.spill import files as spill_files
from profscope.model.spill import page_cache as spill_pages
from profscope.model.spill import sort as spill_sort
from profscope.model.spill.files import NpyColumn, RecordFile
from profscope.model.spill.layout import Context, SplitTrack, bind_piece
from profscope.model.spill.sort import Buckets, RunPieces, contiguous
from profscope.model.spill.writer import Buffers

EVENT_WORK_BYTES = 160
POINT_WORK_BYTES = 120
COUNTER_WORK_BYTES = 80
PAIR_WORK_BYTES = 48
# A piece gives `args_event` runs of consecutive builder indices instead of one pair per event
# where its runs are this long on average (`_IndexRuns`).
MIN_INDEX_RUN = 256
# No piece is planned smaller than this (a tiny budget still makes progress).
MIN_CAPACITY_BYTES = 64 << 10
# A streamed pass reads chunks of at most this much, below malloc's mmap threshold in an ingest
# (`engine.ingest.memory.heap_for_ingest`, 32 MiB): one chunk's memory serves the next, where a chunk
# mapped anew faults its pages in again (on the 2-core VM, reading the 220 MB events file of the
# 214 MB benchmark XPlane in 100 MB chunks took 0.57 s of system time).
STREAM_CHUNK_BYTES = 16 << 20

BUCKET_POINT = np.dtype(
    [
        ("pos", "<i8"),
        ("kid", "<i8"),
        ("name", "<i8"),
        ("phase", "<i8"),
        ("track", "<i8"),
        ("ts", "<i8"),
        ("next", "u1"),
    ]
)
BOUND_POINT = np.dtype(
    [("kid", "<i8"), ("ts", "<i8"), ("rank", "<i8"), ("ev", "<i8"), ("name", "<i8"), ("pos", "<i8")]
)
PAIR = np.dtype([("pos", "<i8"), ("value", "<i8")])
# The per-event columns a spilled finalize writes.
EVENT_COLUMNS = {
    name: COLUMN_DTYPES[name]
    for name in (
        "ev_start_ps",
        "ev_dur_ps",
        "ev_track",
        "ev_depth",
        "ev_name",
        "ev_cat",
        "ev_args",
        "args_event",
    )
}


@dataclasses.dataclass
class _Prepared:
    """One piece ready to write: its events' columns in final order, from `offset` on."""

    piece: int
    offset: int
    columns: dict[str, np.ndarray]
    split_done: SplitTrack | None = None  # the track cut into pieces that this piece ends


def finalize(b: Buffers) -> dict[str, Any]:
    """The fields of the finished `Trace` of the spilled builder `b` (its columns memory-mapped)."""
    spill_pages.trim_heap()
    return _Finalize(b).run()


def _records(dtype: np.dtype, **columns: Any) -> np.ndarray:
    n = next(iter(columns.values())).shape[0]
    out = np.empty(n, dtype)
    for name, values in columns.items():
        out[name] = values
    return out


def _padded(counts: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size, dtype=np.int64)
    out[: min(size, counts.shape[0])] = counts[:size]
    return out


class _Finalize:
    def __init__(self, b: Buffers) -> None:
        sp = b._spill
        assert sp is not None and sp.active
        sp.flush(b)
        sp.wait()
        self.b, self.sp = b, sp
        self.n = sp.num_events
        self.num_tracks = len(b._tracks)
        if sp.track_events.shape[0] > self.num_tracks:
            raise ValueError("events refer to track ids that the builder never made")
        self.ev_counts = _padded(sp.track_events, self.num_tracks)
        self.samples = sp.samples()
        resident = self.samples.nbytes + sp.counter_samples().nbytes + 48 * self.num_tracks
        resident += spill_budget.SINGLE_POINT_BYTES * len(b._flow_points)
        self.capacity = max(sp.budget - resident, MIN_CAPACITY_BYTES)
        self.scratch = sp.scratch
        self.out = sp.out_dir
        self.max_depth: dict[int, int] = {}
        self.unbound = 0

    def _rows(self, record_bytes: int) -> int:
        """Rows of a streamed pass: its chunk, the piece ids and a sorted copy fit the capacity,
        and a chunk stays below `STREAM_CHUNK_BYTES`."""
        return max(min(self.capacity // (3 * record_bytes + 16), STREAM_CHUNK_BYTES // record_bytes), 1024)

    def _column(self, name: str, dtype: Any, count: int) -> NpyColumn:
        return NpyColumn(os.path.join(self.out, name + ".npy"), np.dtype(dtype), count)

    def run(self) -> dict[str, Any]:
        cols = {name: self._column(name, dtype, self.n) for name, dtype in EVENT_COLUMNS.items()}
        self.cols = cols
        self.args_rows = max(self.capacity // PAIR_WORK_BYTES, 1024)
        self.args_buckets = Buckets(self.scratch, "args", PAIR, -(-self.n // self.args_rows))
        # One range of builder indices: `args_event` is filled in memory as pieces are written
        # (8 bytes per event, at most a sixth of the capacity, taken off the pieces').
        self.final_index = np.empty(self.n, np.int64) if self.n <= self.args_rows else None
        self.index_runs = _IndexRuns(self.capacity)
        self._plan_events()
        self._plan_kids()
        self._lay_out()
        explicit = self._args_event()
        links, lone = self._chain()
        if lone:
            self.b.skipped["flow with a single endpoint"] += lone
        flows = self._flows(explicit, links)
        args_off = self.sp.file("args_off").mapped()
        counters = self._counters()
        for name in ("events", "flows", "flow_singles", "points", "counters"):
            self.sp.file(name).remove()
        tracks = self.b.take_tracks()
        for t, d in self.max_depth.items():
            tracks[t].max_depth = int(d)
        b = self.b
        return dict(
            source=b.source,
            format=b.format,
            clock_origin_ns=b.clock_origin_ns,
            sections=[dataclasses.replace(s) for s in b._sections],
            tracks=tracks,
            strings=list(b._strings),
            **{name: col.mapped() for name, col in cols.items()},
            args_off=args_off,
            args_blob=self.sp.file("blob").mapped(),
            args_frag_off=b._frag_off,
            args_frag_blob=b._frag_blob,
            **flows,
            **counters,
            warnings=list(b.warnings),
            skipped=dict(b.skipped),
            metadata=dict(b.metadata),
            attachments=spill_attachments.FileAttachments(self.sp.attachment_files),
        )

    # -- 1. partition ---------------------------------------------------------------------------
    def _plan_events(self) -> None:
        sp = self.sp
        points = _padded(sp.track_points, self.num_tracks)
        cost = self.ev_counts * EVENT_WORK_BYTES + points * POINT_WORK_BYTES
        # Half the capacity: `_lay_out` holds two pieces at once (beside `final_index`).
        held = 0 if self.final_index is None else self.final_index.nbytes
        self.plan = spill_sort.plan(
            cost,
            max(self.capacity - held, MIN_CAPACITY_BYTES) // 2,
            self.samples["track"],
            self.samples["start"],
        )
        events = sp.file("events")
        self.ev_pieces = RunPieces(events, self.scratch, "ev", len(self.plan))
        for lo, rec in events.chunks(self._rows(self.ev_pieces.dtype.itemsize)):
            self.ev_pieces.add(lo, rec, self.plan.assign(rec["track"], rec["start"]))
        self.ev_pieces.release_unread()
        self.pt_buckets = Buckets(self.scratch, "pt", BUCKET_POINT, len(self.plan))
        singles = self._single_points()
        self.single_points = 0 if singles is None else int(singles[0].shape[0])
        self.single_kids = 0 if singles is None else int(singles[0].max()) + 1
        if singles is not None:
            self._partition_points(0, *singles)
        base = self.single_points
        for lo, rec in sp.file("points").chunks(self._rows(BUCKET_POINT.itemsize)):
            self._partition_points(
                base + lo,
                rec["kid"] + self.single_kids,
                rec["name"],
                rec["phase"],
                rec["track"],
                rec["ts"],
                rec["next"].astype(bool),
            )

    def _single_points(self) -> tuple[np.ndarray, ...] | None:
        """Points added one by one, as columns (flow ids in the order of their first point)."""
        points = self.b._flow_points
        if not points:
            return None
        count = len(points)
        keys: dict[Any, int] = {}
        columns = (
            np.fromiter((keys.setdefault(p[0], len(keys)) for p in points), np.int64, count),
            np.fromiter((p[1] for p in points), np.int64, count),
            np.fromiter((FLOW_PHASES.index(p[2]) for p in points), np.int64, count),
            np.fromiter((p[3] for p in points), np.int64, count),
            np.fromiter((p[4] for p in points), np.int64, count),
            np.fromiter((p[5] == "next" for p in points), bool, count),
        )
        points.clear()
        return columns

    def _partition_points(
        self,
        pos: int,
        kid: np.ndarray,
        name: np.ndarray,
        phase: np.ndarray,
        track: np.ndarray,
        ts: np.ndarray,
        nxt: np.ndarray,
    ) -> None:
        known = (track >= 0) & (track < self.num_tracks)
        known[known] = self.ev_counts[track[known]] > 0
        self.unbound += int(kid.shape[0] - np.count_nonzero(known))
        where = np.flatnonzero(known)
        rec = _records(
            BUCKET_POINT,
            pos=pos + where,
            kid=kid[where],
            name=name[where],
            phase=phase[where],
            track=track[where],
            ts=ts[where],
            next=nxt[where],
        )
        self.pt_buckets.add(self.plan.assign(track[where], ts[where]), rec)

    def _plan_kids(self) -> None:
        """Flow-id ranges: the one-by-one points' ids first, then blocks of `KID_BLOCK` bulk ids."""
        blocks = np.concatenate(([self.single_points], self.sp.kid_blocks))
        ranges = spill_sort.range_plan(blocks, max(self.capacity // POINT_WORK_BYTES, 1024))
        self.range_of_block = np.zeros(blocks.shape[0], dtype=np.int64)
        for r, (lo, hi) in enumerate(ranges):
            self.range_of_block[lo:hi] = r
        self.kid_buckets = Buckets(self.scratch, "kid", BOUND_POINT, len(ranges))

    def _emit(self, pts: np.ndarray, ev: np.ndarray) -> None:
        """Bound points to their flow-id range (unbound ones counted)."""
        ok = np.flatnonzero(ev >= 0)
        self.unbound += int(ev.shape[0] - ok.shape[0])
        if ok.shape[0] == 0:
            return
        kid = pts["kid"][ok]
        block = np.where(kid < self.single_kids, 0, 1 + (kid - self.single_kids) // spill_budget.KID_BLOCK)
        rec = _records(
            BOUND_POINT,
            kid=kid,
            ts=pts["ts"][ok],
            rank=pts["phase"][ok],
            ev=ev[ok],
            name=pts["name"][ok],
            pos=pts["pos"][ok],
        )
        self.kid_buckets.add(self.range_of_block[block], rec)

    # -- 2. pieces --------------------------------------------------------------------------------
    def _lay_out(self) -> None:
        """Pieces in output order: a second thread loads, orders and nests piece p + 1 (`_prepare`)
        while this one writes piece p, scatters its pairs and binds its flow points (numpy's sorts
        and the file reads and writes release the GIL); two pieces at most are in memory, which
        is why `_plan_events` plans them at half the capacity."""
        pieces = self.plan.pieces
        if not pieces:
            return
        self.next_offset = 0
        self.split: SplitTrack | None = None
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="profscope-finalize") as pool:
            ahead = pool.submit(self._prepare, 0)
            for p in range(len(pieces)):
                ready = ahead.result()
                if p + 1 < len(pieces):
                    ahead = pool.submit(self._prepare, p + 1)
                self._write_piece(ready)

    def _prepare(self, p: int) -> _Prepared:
        """Piece `p`'s events in final order with their rows (pieces are prepared in order: a
        track cut into pieces carries its layout state from one to the next)."""
        pieces = self.plan.pieces
        piece = pieces[p]
        piece_events = self.ev_pieces.load(p)
        track, start, dur = (piece_events.pop(k) for k in ("track", "start", "dur"))
        order = event_order_unless_in_place(track, start, dur)
        if order is not None:
            track, start, dur = track[order], start[order], dur[order]
        offset = self.next_offset
        if piece.split:
            if self.split is None:
                self.split = SplitTrack(piece.track_lo)
            depth = self.split.rows(p, offset, start, dur, piece.time_lo)
        else:
            depth = layout_depths(track, start, dur)
            if track.shape[0]:
                first = np.flatnonzero(np.concatenate(([True], track[1:] != track[:-1])))
                self.max_depth.update(zip(track[first].tolist(), np.maximum.reduceat(depth, first).tolist()))
        in_order = slice(None) if order is None else order
        ready = _Prepared(
            p,
            offset,
            {
                "ev_start_ps": start,
                "ev_dur_ps": dur,
                "ev_track": track,
                "ev_depth": depth,
                "ev_name": piece_events["name"][in_order],
                "ev_cat": piece_events["cat"][in_order],
                "ev_args": piece_events["idx"][in_order],
            },
        )
        self.next_offset += track.shape[0]
        last_piece = (
            p + 1 == len(pieces) or not pieces[p + 1].split or pieces[p + 1].track_lo != piece.track_lo
        )
        if self.split is not None and last_piece:
            ready.split_done, self.split = self.split, None
        return ready

    def _write_piece(self, ready: _Prepared) -> None:
        p, offset, columns = ready.piece, ready.offset, ready.columns
        for name, values in columns.items():
            self.cols[name].write_at(offset, values)
        idx = columns["ev_args"]
        m = idx.shape[0]
        if self.final_index is not None:
            self.final_index[idx] = np.arange(offset, offset + m, dtype=np.int64)
        elif not self.index_runs.add(idx, offset):
            self.args_buckets.add(
                idx // self.args_rows,
                _records(PAIR, pos=idx, value=np.arange(offset, offset + m, dtype=np.int64)),
            )
        if not self.plan.pieces[p].split:
            pts = self.pt_buckets.load(p)
            if pts.shape[0]:
                track, start, dur, depth = (
                    columns[k] for k in ("ev_track", "ev_start_ps", "ev_dur_ps", "ev_depth")
                )
                ev = _bind_flow_points(
                    pts["track"], pts["ts"], pts["next"].astype(bool), track, start, dur, depth
                )
                self._emit(pts, np.where(ev >= 0, ev + offset, -1))
        if ready.split_done is not None:
            self._finish_split(ready.split_done)

    def _finish_split(self, split: SplitTrack) -> None:
        cols = self.cols
        if not split.valid:
            split.relayout(cols["ev_start_ps"], cols["ev_dur_ps"], cols["ev_depth"], self._rows(40))
        if split.count:
            self.max_depth[split.track] = split.max_depth
        context = Context()
        carried: list[np.ndarray] = []
        for i, (p, off, m, _) in enumerate(split.pieces):
            pts = self.pt_buckets.load(p)
            if m and carried:
                waiting = np.concatenate(carried)
                self._emit(waiting, np.full(waiting.shape[0], off, dtype=np.int64))
                carried = []
            start = cols["ev_start_ps"].read(off, off + m)
            dur = cols["ev_dur_ps"].read(off, off + m)
            depth = cols["ev_depth"].read(off, off + m)
            if pts.shape[0]:
                bound, later = bind_piece(
                    pts["ts"], pts["next"].astype(bool), start, dur, depth, off, context
                )
                self._emit(pts[~later], bound[~later])
                carried.append(pts[later])
            if m:
                next_lo = split.pieces[i + 1][3] if i + 1 < len(split.pieces) else np.iinfo(np.int64).max
                context.advance(off, start + dur, depth, next_lo)
        if carried:
            waiting = np.concatenate(carried)
            self._emit(waiting, np.full(waiting.shape[0], -1, dtype=np.int64))

    # -- 3. args_event and the flows given by builder index -----------------------------------
    def _args_event(self) -> int:
        """Fill `args_event`; scatter the final index of each explicit flow end by its position
        (2 * flow + end). Returns the number of explicit flows."""
        n = self.n
        explicit = sum(self.sp.file(name).count for name in ("flows", "flow_singles"))
        self.answer_rows = max(2 * (self.capacity // (2 * PAIR_WORK_BYTES)), 2048)
        self.answers = Buckets(self.scratch, "answer", PAIR, -(-2 * explicit // self.answer_rows))
        final = self.final_index
        queries = (
            None if final is not None else Buckets(self.scratch, "query", PAIR, len(self.args_buckets.sizes))
        )
        before = 0
        for name in ("flows", "flow_singles"):
            f = self.sp.file(name)
            for lo, rec in f.chunks(self._rows(3 * PAIR.itemsize)):
                q = 2 * (before + lo + np.arange(rec.shape[0], dtype=np.int64))
                for end, column in ((0, rec["src"]), (1, rec["dst"])):
                    idx = np.where(column < 0, column + n, column)
                    if idx.shape[0] and (int(idx.min()) < 0 or int(idx.max()) >= n):
                        raise IndexError(
                            f"a flow refers to event {int(column[(idx < 0) | (idx >= n)][0])}, the builder holds {n}"
                        )
                    pos = q + end
                    if queries is None:
                        self.answers.add(pos // self.answer_rows, _records(PAIR, pos=pos, value=final[idx]))
                    else:
                        queries.add(idx // self.args_rows, _records(PAIR, pos=pos, value=idx))
            before += f.count
        if queries is None:
            self.cols["args_event"].write_at(0, final)
            self.final_index = None
            return explicit
        for k in self.args_buckets:
            pairs = self.args_buckets.load(k)
            b0 = k * self.args_rows
            values = np.empty(min(self.args_rows, n - b0), dtype=np.int64)
            values[pairs["pos"] - b0] = pairs["value"]
            del pairs
            self.index_runs.fill(values, b0)
            self.cols["args_event"].write_at(b0, values)
            asked = queries.load(k)
            if asked.shape[0]:
                found = _records(PAIR, pos=asked["pos"], value=values[asked["value"] - b0])
                self.answers.add(asked["pos"] // self.answer_rows, found)
        return explicit

    # -- 4. flow points linked -------------------------------------------------------------------
    def _chain(self) -> tuple[RecordFile, int]:
        """Links between consecutive bound points of each flow, in the in-memory order."""
        links = RecordFile(os.path.join(self.scratch, "links"), spill_files.FLOW_RECORD)
        lone = 0
        if self.unbound:
            self.b.skipped["flow endpoint with no slice to bind to"] += self.unbound
        for r in self.kid_buckets:
            rec = self.kid_buckets.load(r)
            if rec.shape[0] == 0:
                continue
            kid, ts, rank, ev, name, pos = contiguous(rec, "kid", "ts", "rank", "ev", "name", "pos")
            del rec
            order = np.lexsort((pos, name, ev, rank, ts, kid))
            kid, name, ev = kid[order], name[order], ev[order]
            lone += int((np.bincount(kid - kid[0]) == 1).sum())
            link = (kid[1:] == kid[:-1]) & (ev[1:] != ev[:-1])
            links.append(
                _records(spill_files.FLOW_RECORD, src=ev[:-1][link], dst=ev[1:][link], name=name[:-1][link])
            )
        return links, lone

    def _flows(self, explicit: int, links: RecordFile) -> dict[str, np.ndarray]:
        total = explicit + links.count
        src = self._column("flow_src", np.int64, total)
        dst = self._column("flow_dst", np.int64, total)
        names = self._column("flow_name", np.int32, total)
        for g in self.answers:
            rec = self.answers.load(g)
            q0 = g * self.answer_rows
            values = np.empty(min(self.answer_rows, 2 * explicit - q0), dtype=np.int64)
            values[rec["pos"] - q0] = rec["value"]
            src.write_at(q0 // 2, values[0::2])
            dst.write_at(q0 // 2, values[1::2])
        base = 0
        for name in ("flows", "flow_singles"):
            f = self.sp.file(name)
            for lo, rec in f.chunks(self._rows(8)):
                names.write_at(base + lo, rec["name"].astype(np.int32))
            base += f.count
        for lo, rec in links.chunks(self._rows(spill_files.FLOW_RECORD.itemsize)):
            src.write_at(explicit + lo, rec["src"])
            dst.write_at(explicit + lo, rec["dst"])
            names.write_at(explicit + lo, rec["name"].astype(np.int32))
        links.remove()
        return {"flow_src": src.mapped(), "flow_dst": dst.mapped(), "flow_name": names.mapped()}

    # -- 5. counters -------------------------------------------------------------------------------
    def _counters(self) -> dict[str, np.ndarray]:
        sp = self.sp
        f = sp.file("counters")
        count = f.count
        size = max(self.num_tracks, sp.track_counters.shape[0])
        cost = _padded(sp.track_counters, size) * COUNTER_WORK_BYTES
        samples = sp.counter_samples()
        plan = spill_sort.plan(cost, self.capacity, samples["track"], samples["start"])
        buckets = Buckets(self.scratch, "ctr", spill_files.COUNTER_RECORD, len(plan))
        for _, rec in f.chunks(self._rows(spill_files.COUNTER_RECORD.itemsize)):
            buckets.add(plan.assign(rec["track"], rec["time"]), rec)
        track_col = self._column("ctr_track", np.int32, count)
        time_col = self._column("ctr_time_ps", np.int64, count)
        value_col = self._column("ctr_value", np.float64, count)
        offset = 0
        for p in buckets:
            rec = buckets.load(p)
            track, time, value = contiguous(rec, "track", "time", "value")
            del rec
            order = np.lexsort((time, track))
            track_col.write_at(offset, track[order])
            time_col.write_at(offset, time[order])
            value_col.write_at(offset, value[order])
            offset += track.shape[0]
        return {
            "ctr_track": track_col.mapped(),
            "ctr_time_ps": time_col.mapped(),
            "ctr_value": value_col.mapped(),
        }


class _IndexRuns:
    """The builder indices of pieces as runs of consecutive ones: (first builder index, its final
    index, length), in memory. An XPlane's events are added line by line, in place mostly, so a
    piece's indices make a few runs; each run fills its part of `args_event` where the pairs of
    its events were written to and read back from the files (16 bytes each way per event: 354 MB
    for the 22 M events of the JAX capture repeated to 1 GB). A piece with shorter runs (a Chrome
    trace's threads interleave), or any once the runs held would pass a sixteenth of the
    capacity, gives pairs as before."""

    RUN_BYTES = 24
    LONG_RUN = 4096

    def __init__(self, capacity: int) -> None:
        self._room = capacity // 16 // self.RUN_BYTES
        self._parts: list[np.ndarray] = []
        self._runs: np.ndarray | None = None

    def add(self, idx: np.ndarray, offset: int) -> bool:
        """Take the runs of the piece written at `offset` whose builder indices are `idx`, if
        they are long enough and there is room; False: the caller writes pairs."""
        m = idx.shape[0]
        breaks = np.flatnonzero(idx[1:] != idx[:-1] + 1) + 1
        count = breaks.shape[0] + 1
        if count * MIN_INDEX_RUN > m or count > self._room:
            return False
        first = np.concatenate(([0], breaks))
        lengths = np.diff(np.concatenate((first, [m])))
        self._parts.append(np.stack((idx[first].astype(np.int64), offset + first, lengths)))
        self._room -= count
        return True

    def fill(self, values: np.ndarray, lo: int) -> None:
        """Set `values[i]` to the final index of builder index `lo + i` for the indices in runs."""
        if self._runs is None:
            runs = np.concatenate(self._parts, axis=1) if self._parts else np.zeros((3, 0), np.int64)
            self._runs = runs[:, np.argsort(runs[0], kind="stable")]
            self._parts = []
        first, final, length = self._runs
        hi = lo + values.shape[0]
        a = int(np.searchsorted(first + length, lo, side="right"))
        b = int(np.searchsorted(first, hi, side="left"))
        if a >= b:
            return
        start = np.maximum(first[a:b], lo)
        end = np.minimum(first[a:b] + length[a:b], hi)
        value = final[a:b] + (start - first[a:b])
        # Long runs one at a time, as a running sum in place (no temporary as long as the run);
        # the short ones together (a loop over them could take seconds; their index arrays are
        # within what a builder range's pairs took).
        long = end - start >= self.LONG_RUN
        for s, e, v in zip((start[long] - lo).tolist(), (end[long] - lo).tolist(), value[long].tolist()):
            run = values[s:e]  # v, v + 1, …
            run.fill(1)
            run[0] = v
            np.cumsum(run, out=run)
        short = ~long
        if short.any():
            at = arrays.ranges(start[short] - lo, end[short] - lo)
            values[at] = at + np.repeat(value[short] - (start[short] - lo), (end - start)[short])
