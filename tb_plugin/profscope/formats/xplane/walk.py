"""The walk over one plane's lines, window by window, as a sequence of steps.

The walk (`PlaneWalk`) finds the event records of a window, from one line or several short ones,
and hands them on as one `Flush` before the next window is read: a line starting (`LineStart`),
the events of the window's lines (raw, or already decoded), the lines walked to their end, and a
line's events written with an unusual tag (`Others`). Every step carries the header fields its
lines had at that point of the walk (`wire.LineRecord`, without its other events), since the reader
fixes a line's header at its first batch. The reader applies the steps in order (`reader`), so the
walk can run in this process or in a helper process (`helper`) that sends them over a pipe, and
the trace is the same: the steps are, whoever decodes a flush's events.

A flush that ends a window (the next step reads another one) says where a walk could go on from
after it (`Resume`), so a reader can take the rest of a helper's walk over (`helper`): a walk
started there hands on the helper's next steps, the same ones.
"""

from __future__ import annotations

import array
import dataclasses
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from profscope.formats.common import wire
from profscope.formats.xplane.decode import BYTES, STR, EventBatch, decode_events, record_payloads
from profscope.formats.xplane.source import Window

_OTHER_BATCH = 1 << 16  # events with an unusual tag, decoded together at the end of their line


class WalkSource(Protocol):
    """What the walk reads: the file's windows, its gathered ranges, and where it has read to."""

    def window(self, start: int, size: int) -> Window: ...

    def gather(self, ranges: list[tuple[int, int]]) -> tuple[np.ndarray, bytes, np.ndarray]: ...

    def read_to(self, pos: int) -> None: ...


@dataclasses.dataclass
class Decoded:
    """A flush's events decoded: which records were readable, their batch, and the counts of
    what was dropped (in the order they were first counted, as the reader's counter adds them).

    Pickled (by the helper, for the pipe) without what the other columns give: a stat's event
    (the stats come grouped by event: their count per event), its payload start (its value, for
    strings and bytes; 0 otherwise) and length (0 but for strings and bytes); ids that fit go as
    int32. That halves the bytes sent per window."""

    readable: np.ndarray  # bool per record
    batch: EventBatch
    skipped: list[tuple[str, int]]

    def __getstate__(self) -> dict[str, Any]:
        b = self.batch
        blob = (b.st_kind == STR) | (b.st_kind == BYTES)
        derived = (
            bool(np.all(b.st_event[1:] >= b.st_event[:-1]))
            and np.array_equal(b.st_start, np.where(blob, b.st_value.view(np.int64), 0))
            and not b.st_len[~blob].any()
        )
        if not derived:
            return dict(self.__dict__)
        columns = {f.name: getattr(b, f.name) for f in dataclasses.fields(b) if f.name != "_data"}
        for name in ("st_event", "st_start", "st_len"):
            del columns[name]
        for name in ("ev_mid", "st_mid"):
            columns[name] = _narrow(columns[name])
        counts = np.bincount(b.st_event, minlength=b.num_events).astype(np.int32)
        return dict(readable=self.readable, skipped=self.skipped, columns=columns, counts=counts,
                    blob_len=b.st_len[blob])  # fmt: skip

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "batch" in state:
            self.__dict__.update(state)
            return
        columns = state["columns"]
        for name in ("ev_mid", "st_mid"):
            columns[name] = columns[name].astype(np.int64, copy=False)
        counts = state["counts"]
        value, kind = columns["st_value"], columns["st_kind"]
        blob = (kind == STR) | (kind == BYTES)
        st_len = np.zeros(kind.shape[0], dtype=np.int64)
        st_len[blob] = state["blob_len"]
        batch = EventBatch(
            **columns,
            st_event=np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts),
            st_start=np.where(blob, value.view(np.int64), 0),
            st_len=st_len,
        )
        self.readable, self.batch, self.skipped = state["readable"], batch, state["skipped"]


def _narrow(ids: np.ndarray) -> np.ndarray:
    """int64 ids as int32 where they all fit."""
    if ids.shape[0] and (int(ids.min()) < -(1 << 31) or int(ids.max()) >= 1 << 31):
        return ids
    return ids.astype(np.int32)


@dataclasses.dataclass
class Resume:
    """Where a walk stands after a flush that ended a window: in line `line`, at `pos`, about to
    read a window of `size` bytes there, with the line's fields so far (`record`, a copy) and
    `walked`, the furthest position reached (what `Flush.pos` reports)."""

    line: int
    pos: int
    size: int
    record: wire.LineRecord
    walked: int


def _copy(record: wire.LineRecord) -> wire.LineRecord:
    """A line's record that the walk's later changes to `record` leave as it is."""
    return dataclasses.replace(record, other_events=list(record.other_events))


@dataclasses.dataclass
class Flush:
    """The events a window holds of the pending lines (slots, their headers then, the records'
    window positions in `buf` and how far each may reach), then the lines walked to their end."""

    slots: list[int]
    headers: list[wire.LineRecord]
    counts: np.ndarray  # records per pending line
    buf: np.ndarray | None = None
    records: np.ndarray | None = None  # int64, None once decoded
    limits: np.ndarray | None = None  # int64 per pending line
    decoded: Decoded | None = None
    ended: list[tuple[int, wire.LineRecord]] = dataclasses.field(default_factory=list)
    pos: int = 0  # file position the walk had reached
    resume: Resume | None = None  # where a walk may go on from after this one

    def decode(self) -> Decoded:
        """The events, decoded here unless the walk did it (`decode_now`)."""
        if self.decoded is None:
            assert self.buf is not None and self.records is not None and self.limits is not None
            self.decoded = decode_records(self.buf, self.records, np.repeat(self.limits, self.counts))
            self.buf = self.records = self.limits = None
        return self.decoded


@dataclasses.dataclass
class LineStart:
    slot: int
    pos: int


@dataclasses.dataclass
class Others:
    """A line's events written with an unusual tag, decoded in chunks, after its usual ones."""

    slot: int
    header: wire.LineRecord
    chunks: list[tuple[EventBatch, list[tuple[str, int]]]]


Step = LineStart | Flush | Others


def decode_records(buf: np.ndarray, records: np.ndarray, limits: np.ndarray) -> Decoded:
    """Decode the event records `walk_line_part` found in `buf`, record i reaching no further
    than limits[i]."""
    skipped: Counter[str] = Counter()
    starts, ends, readable = record_payloads(buf, records, limits)
    skipped["events that could not be decoded"] += int((~readable).sum())
    batch = decode_events(buf, starts[readable], ends[readable], skipped)
    return Decoded(readable, batch, list(skipped.items()))


def header_of(record: wire.LineRecord) -> wire.LineRecord:
    """A line's header fields as they are now (its other events stay with the walk)."""
    return dataclasses.replace(record, other_events=[])


class PlaneWalk:
    """Walks the lines of one plane window by window, handing each step to `emit`; a flush's
    events are decoded by the walk where `decode_now()` says so, else by who applies it. The
    first `skip` steps go to nobody (they were applied already: `helper`), undecoded."""

    def __init__(
        self,
        source: WalkSource,
        batch_bytes: int,
        emit: Callable[[Step], None],
        decode_now: Callable[[], bool] = lambda: True,
        skip: int = 0,
    ) -> None:
        self.source = source
        self.batch_bytes = batch_bytes
        self.emit = emit
        self.decode_now = decode_now
        self.skip = skip
        self.win: Window | None = None
        self.pending: list[tuple[int, wire.LineRecord, array.array[int], int]] = []  # (slot, …, limit)
        self.walked: list[tuple[int, wire.LineRecord]] = []  # lines walked, not yet ended
        self.pos = 0

    def run(self, slots: list[tuple[int, int]], resume: Resume | None = None) -> None:
        """Walk the lines of `slots` from the first, or from where a flush left off (`resume`)."""
        step = self.batch_bytes
        for k in range(resume.line if resume else 0, len(slots)):
            start, end = slots[k]
            if resume is not None and k == resume.line:
                rec = _copy(resume.record)
                pos, size, self.pos = resume.pos, resume.size, resume.walked
            else:
                rec = wire.LineRecord()
                self.pos = max(self.pos, start)
                self._emit(LineStart(k, self.pos))
                pos, size = start, step
            done = False
            while not done:
                win = self.win
                if win is None or not win.base <= pos < win.base + len(win.view) or size > step:
                    self._flush(Resume(k, pos, size, rec, self.pos))
                    self.source.read_to(pos)
                    win = self.win = self.source.window(pos, size)
                records = array.array("q")
                at, done = wire.walk_line_part(
                    win.view, win.base, pos - win.base, end - win.base, win.whole, rec, records
                )
                if records:
                    self.pending.append((k, rec, records, min(end - win.base, len(win.view))))
                if not done:
                    # The window ends inside this line: decode what it holds, then read on.
                    stuck = win.base + at == pos and not records
                    size = size * 2 if stuck else step
                    self._flush(Resume(k, win.base + at, size, rec, max(self.pos, win.base + at)))
                    self.win = None
                pos = win.base + at
                self.pos = max(self.pos, pos)
            if rec.other_events:
                self._flush()
                self._others(k, rec)
            self.walked.append((k, rec))
        self._flush()
        self.win = None

    def _emit(self, step: Step) -> None:
        if self.skip:
            self.skip -= 1
        else:
            self.emit(step)

    def _flush(self, resume: Resume | None = None) -> None:
        """Hand on the events of the pending lines, then the lines walked to their end; `resume`
        where the walk goes on from after it, where that is a window not read yet."""
        if not self.pending and not self.walked:
            return
        flush = Flush(
            [k for k, _, _, _ in self.pending],
            [header_of(rec) for _, rec, _, _ in self.pending],
            np.array([len(r) for _, _, r, _ in self.pending], dtype=np.int64),
            ended=[(k, header_of(rec)) for k, rec in self.walked],
            pos=self.pos,
        )
        if resume is not None:  # a copy: the walk goes on changing the line's record
            resume.record = _copy(resume.record)
            flush.resume = resume
        if self.pending:
            flush.buf = self.win.buf  # type: ignore[union-attr]
            flush.records = np.frombuffer(b"".join(r for _, _, r, _ in self.pending), np.int64)
            flush.limits = np.array([lim for _, _, _, lim in self.pending], dtype=np.int64)
            if not self.skip and self.decode_now():
                flush.decode()
        self.pending = []
        self.walked = []
        self._emit(flush)

    def _others(self, k: int, rec: wire.LineRecord) -> None:
        """Events written with an unusual tag come after the line's usual records."""
        other = rec.other_events
        chunks = []
        for lo in range(0, len(other), _OTHER_BATCH):
            chunk = other[lo : lo + _OTHER_BATCH]
            buf, _, shift = self.source.gather(chunk)
            arr = np.asarray(chunk, dtype=np.int64).reshape(-1, 2) - shift[:, None]
            skipped: Counter[str] = Counter()
            batch = decode_events(buf, arr[:, 0], arr[:, 1], skipped)
            chunks.append((batch, list(skipped.items())))
        self._emit(Others(k, header_of(rec), chunks))
