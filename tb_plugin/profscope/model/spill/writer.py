"""The files of a spilled `TraceBuilder` and what is known about them while they are written.

Once a builder's in-memory path would outgrow its budget (`spill`), its buffers go to files in add
order (events, flows, flow points, counter samples as fixed-size records in `scratch/`; the args
bytes straight into the entry's `args_blob.npy`, whose order they keep, and their offsets into
`args_off.npy`) and only small summaries stay in memory: events, flow points and counter samples per
track, flow points per block of flow ids, and one event (counter sample) in `spill_budget.SAMPLE_EVERY` as
(track, start). Flow ids of each `add_flow_points` call are numbered here, in the order of their
first point, after those of earlier calls, exactly as the in-memory `finalize()` numbers them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import shutil
import threading
import uuid
from collections import Counter
from typing import Any, Protocol

import numpy as np

from profscope.model.spill import budget as spill_budget
from profscope.model.spill import files as spill_files


class Buffers(Protocol):
    """What of a `TraceBuilder` its spill files are filled from and finished with (the builder
    itself; named here so that this module does not import `columns`)."""

    source: str
    format: str
    clock_origin_ns: int | None
    metadata: dict[str, Any]
    warnings: list[str]
    skipped: Counter[str]
    _strings: dict[str, int]
    _sections: list[Any]
    _tracks: list[Any]
    _spill: Spiller | None
    _provisional: bool
    _buffered: int
    _ev_chunks: list[tuple[np.ndarray, ...]]
    _args_parts: list[Any]  # uint8 arrays; spill_files.FileRange once spilled
    _args_lengths: list[np.ndarray]
    _frag_off: np.ndarray
    _frag_blob: np.ndarray
    _flows: list[tuple[int, int, int]]
    _flow_chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    _flow_points: list[tuple[Any, int, str, int, int, str]]
    _point_chunks: list[tuple[np.ndarray, ...]]
    _ctr_chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    _attachments: dict[str, bytes]


def _regrouped(per_ref: np.ndarray, track_of_ref: np.ndarray) -> np.ndarray:
    """Counts per reference summed per track (a reference of no track must count nothing)."""
    if per_ref.shape[0] > track_of_ref.shape[0]:
        raise ValueError("rows refer to a track reference beyond those settled")
    tracks = track_of_ref[: per_ref.shape[0]]
    if (per_ref[tracks < 0] != 0).any():
        raise ValueError("rows refer to a track reference that names no track")
    used = tracks >= 0
    size = int(tracks[used].max()) + 1 if used.any() else 0
    return np.bincount(tracks[used], weights=per_ref[used], minlength=size).astype(np.int64)


def _settle_records(records: np.ndarray, track_of_ref: np.ndarray, shift_ps: int, time: str) -> None:
    """Records with a track reference and a time in a reader's frame, made final in place."""
    records["track"] = track_of_ref[records["track"]]
    records[time] -= shift_ps


def _grow(counts: np.ndarray, add: np.ndarray) -> np.ndarray:
    if add.shape[0] > counts.shape[0]:
        counts = np.concatenate((counts, np.zeros(add.shape[0] - counts.shape[0], np.int64)))
    counts[: add.shape[0]] += add
    return counts


@dataclasses.dataclass
class _Batch:
    """The buffers one `flush` took from the builder, and the track ids it had made by then."""

    made: int
    events: list[tuple[np.ndarray, ...]]
    lengths: list[np.ndarray]
    args: list[Any]
    flow_chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    flows: list[tuple[int, int, int]]
    points: list[tuple[np.ndarray, ...]]
    counters: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    attachments: dict[str, bytes]

    @classmethod
    def take(cls, b: Buffers) -> _Batch:
        batch = cls(
            spill_budget.MAX_TRACKS if b._provisional else len(b._tracks),
            b._ev_chunks,
            b._args_lengths,
            b._args_parts,
            b._flow_chunks,
            b._flows,
            b._point_chunks,
            b._ctr_chunks,
            b._attachments,
        )
        b._ev_chunks, b._args_lengths, b._args_parts, b._flow_chunks = [], [], [], []
        b._flows, b._point_chunks, b._ctr_chunks, b._attachments = [], [], [], {}
        b._buffered = 0
        return batch


class Spiller:
    """Spill files and summaries of one builder; `flush` moves the builder's buffers into them.

    A flush hands the buffers to a thread that writes them while the reader goes on: most of a
    write is the kernel finding pages for the file (about 2.5 s per GiB of memory not touched
    recently on the 2-core VM), which a reader alone on its core waits through otherwise (the
    Chrome reader's assembly). One batch is written at a time (the next flush waits for it), so
    the builder holds at most two flush limits of buffers; whatever reads or changes the files or
    the summaries (`wait`) waits for it first, and an error writing it is raised there."""

    def __init__(self, out_dir: str, budget: int) -> None:
        if budget <= 0:
            raise ValueError("the memory budget must be positive")
        self.out_dir = out_dir
        self.budget = int(budget)
        self.active = False
        self.scratch = ""
        self.track_events = np.zeros(0, np.int64)
        self.track_points = np.zeros(0, np.int64)
        self.track_counters = np.zeros(0, np.int64)
        self.kid_blocks = np.zeros(0, np.int64)
        self.bulk_kids = 0
        self._samples: list[np.ndarray] = []
        self._ctr_samples: list[np.ndarray] = []
        self.attachment_files: dict[str, str] = {}
        self._files: dict[str, spill_files.RecordFile] = {}
        self._own_dir = False  # spilled to a folder of its own (another builder spilled first)
        self._writing: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def flush_limit(self) -> int:
        return self.budget // spill_budget.FLUSH_DIVISOR

    def file(self, name: str) -> spill_files.RecordFile:
        return self._files[name]

    def activate(self) -> None:
        """Make the scratch directory and the files (the first builder of a directory owns it)."""
        os.makedirs(self.out_dir, exist_ok=True)
        if os.path.exists(os.path.join(self.out_dir, spill_budget.SCRATCH_DIR)):
            # Another builder spilled here first: this one's columns go to a folder of their own
            # (the cache write copies them instead of moving them).
            self.out_dir = os.path.join(self.out_dir, f"{spill_budget.SCRATCH_DIR}-{uuid.uuid4().hex}")
            os.makedirs(self.out_dir)
            self._own_dir = True
        self.scratch = os.path.join(self.out_dir, spill_budget.SCRATCH_DIR)
        os.makedirs(self.scratch)
        for name, dtype in (
            ("events", spill_files.EVENT_RECORD),
            ("flows", spill_files.FLOW_RECORD),
            ("flow_singles", spill_files.FLOW_RECORD),
            ("points", spill_files.POINT_RECORD),
            ("counters", spill_files.COUNTER_RECORD),
        ):
            self._files[name] = spill_files.RecordFile(os.path.join(self.scratch, name), dtype)
        self._files["blob"] = spill_files.NpyColumn(
            os.path.join(self.out_dir, "args_blob.npy"), np.dtype(np.uint8)
        )
        # The entry's `args_off` (0, then each event's end in the blob) is known in add order, as
        # the events come: written as they come, not kept as lengths to sum at finalize.
        self._files["args_off"] = spill_files.NpyColumn(
            os.path.join(self.out_dir, "args_off.npy"), np.dtype("<i8")
        )
        self._files["args_off"].append(np.zeros(1, np.int64))
        self._args_end = 0
        self.active = True

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing after a failed write
            self.wait()
        for f in self._files.values():
            f.close()

    def discard(self) -> None:
        """Close and remove every file this builder spilled (its entry's columns included)."""
        self.close()
        if self.active and self._own_dir:
            shutil.rmtree(self.out_dir, ignore_errors=True)
        elif self.active:
            shutil.rmtree(self.scratch, ignore_errors=True)
            for name in ("blob", "args_off"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self.file(name).path)
        self._files.clear()
        self.active = False

    def settle(self, track_of_ref: np.ndarray, shift_ps: int) -> None:
        """The events and counter samples spilled so far named their track by a reference into
        `track_of_ref` and counted time from `shift_ps` before the trace's zero (`TraceBuilder.settle`):
        the summaries are regrouped by track now, the files read through the same change."""
        self.wait()
        self.track_events = _regrouped(self.track_events, track_of_ref)
        self.track_counters = _regrouped(self.track_counters, track_of_ref)
        for sample in (*self._samples, *self._ctr_samples):
            _settle_records(sample, track_of_ref, shift_ps, "start")
        if self.active:
            for name, time in (("events", "start"), ("counters", "time")):
                f = self.file(name)
                fix = functools.partial(
                    _settle_records, track_of_ref=track_of_ref, shift_ps=shift_ps, time=time
                )
                f.fix_below(f.count, fix)

    @property
    def num_events(self) -> int:
        """Events in the files (after `wait`)."""
        return self.file("events").count

    def samples(self) -> np.ndarray:
        """(track, start) of every `spill_budget.SAMPLE_EVERY`-th event, as one record array."""
        return np.concatenate(self._samples) if self._samples else np.zeros(0, _SAMPLE)

    def counter_samples(self) -> np.ndarray:
        return np.concatenate(self._ctr_samples) if self._ctr_samples else np.zeros(0, _SAMPLE)

    # -- moving buffers to files --------------------------------------------------------------
    def flush(self, b: Buffers) -> None:
        """Take every buffer of `b` (emptying them) for the writing thread, once the batch before
        is written (flow points added one by one stay: their keys are arbitrary objects,
        numbered at finalize)."""
        batch = _Batch.take(b)
        self.wait()
        self._writing = threading.Thread(
            target=self._write, args=(batch,), name="profscope-spill", daemon=True
        )
        self._writing.start()

    def wait(self) -> None:
        """Wait until the batch being written is in the files; raise the error that stopped it."""
        writing, self._writing = self._writing, None
        if writing is not None:
            writing.join()
        error, self._error = self._error, None
        if error is not None:
            raise error

    def _write(self, batch: _Batch) -> None:
        try:
            self._write_batch(batch)
        except BaseException as e:  # raised in the builder's thread by `wait`
            self._error = e

    def _write_batch(self, batch: _Batch) -> None:
        for (track, start, dur, name, cat), lengths in zip(batch.events, batch.lengths):
            self._add_events(track, start, dur, name, cat, lengths, batch.made)
        blob = self.file("blob")
        for part in batch.args:
            if isinstance(part, spill_files.FileRange):
                blob.append_range(part)
            else:
                blob.append(part)
        for s, d, n in batch.flow_chunks:
            self.file("flows").append(_records(spill_files.FLOW_RECORD, src=s, dst=d, name=n))
        if batch.flows:
            given = np.asarray(batch.flows, dtype=np.int64).reshape(-1, 3)
            self.file("flow_singles").append(
                _records(spill_files.FLOW_RECORD, src=given[:, 0], dst=given[:, 1], name=given[:, 2])
            )
        for chunk in batch.points:
            self._add_points(*chunk, batch.made)
        for track, time, value in batch.counters:
            self._add_counters(track, time, value, batch.made)
        for name, data in batch.attachments.items():
            self._attach_file(name, data)

    def attach(self, name: str, data: bytes) -> None:
        self.wait()  # a batch's attachment of the same name came first
        self._attach_file(name, data)

    def _attach_file(self, name: str, data: bytes) -> None:
        path = os.path.join(self.scratch, "attachments", *name.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        self.attachment_files[name] = path

    def _add_events(
        self,
        track: np.ndarray,
        start: np.ndarray,
        dur: np.ndarray,
        name: np.ndarray,
        cat: np.ndarray,
        lengths: np.ndarray,
        made: int,
    ) -> None:
        n = track.shape[0]
        if n and not 0 <= int(track.min()) <= int(track.max()) < made:
            raise ValueError("add_events refers to a track id the builder never made")
        first = self.num_events
        self.file("events").append(
            _records(spill_files.EVENT_RECORD, track=track, start=start, dur=dur, name=name, cat=cat)
        )
        ends = np.cumsum(lengths)
        ends += self._args_end
        self.file("args_off").append(ends)
        if n:
            self._args_end = int(ends[-1])
        if n:
            self.track_events = _grow(self.track_events, np.bincount(track))
            pick = np.arange((-first) % spill_budget.SAMPLE_EVERY, n, spill_budget.SAMPLE_EVERY)
            self._samples.append(_records(_SAMPLE, track=track[pick], start=start[pick]))

    def _add_points(
        self,
        flow: np.ndarray,
        name: np.ndarray,
        phase: np.ndarray,
        track: np.ndarray,
        ts: np.ndarray,
        bind_next: np.ndarray,
        made: int,
    ) -> None:
        n = flow.shape[0]
        if n == 0:
            return
        _, first, inverse = np.unique(flow, return_index=True, return_inverse=True)
        numbering = np.empty_like(first)
        numbering[np.argsort(first, kind="stable")] = np.arange(first.shape[0])
        kid = numbering[inverse.ravel()] + self.bulk_kids
        self.bulk_kids += int(first.shape[0])
        self.kid_blocks = _grow(self.kid_blocks, np.bincount(kid // spill_budget.KID_BLOCK))
        self.file("points").append(
            _records(
                spill_files.POINT_RECORD, kid=kid, name=name, phase=phase, track=track, ts=ts, next=bind_next
            )
        )
        valid = track[(track >= 0) & (track < made)]  # the others bind to nothing
        if valid.shape[0]:
            self.track_points = _grow(self.track_points, np.bincount(valid))

    def _add_counters(self, track: np.ndarray, time: np.ndarray, value: np.ndarray, made: int) -> None:
        n = track.shape[0]
        if n == 0:
            return
        if not 0 <= int(track[0]) < made:
            raise ValueError("add_counter refers to a track id the builder never made")
        first = self.file("counters").count
        self.file("counters").append(
            _records(spill_files.COUNTER_RECORD, track=track, time=time, value=value)
        )
        self.track_counters = _grow(self.track_counters, np.bincount(track))
        pick = np.arange((-first) % spill_budget.SAMPLE_EVERY, n, spill_budget.SAMPLE_EVERY)
        self._ctr_samples.append(_records(_SAMPLE, track=track[pick], start=time[pick]))


_SAMPLE = np.dtype([("track", "<i4"), ("start", "<i8")])


def _records(dtype: np.dtype, **columns: Any) -> np.ndarray:
    n = next(iter(columns.values())).shape[0]
    out = np.empty(n, dtype)
    for name, values in columns.items():
        out[name] = values
    return out
