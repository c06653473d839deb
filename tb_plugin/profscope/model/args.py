"""Every event's args as JSON text: the one way consumers read a trace's args.

A trace keeps one args record per event in the order events were added (`Trace.ev_args` leads
from an event to its record, `args_event` back); the records are either JSON object texts
(Chrome/Kineto) or typed records rendered to JSON here on demand (XPlane, see `typed_args`).
Nothing outside the model reads the record columns: they go through

- `args_json(trace, event)`: one event's JSON (b"" without args);
- `event_texts` / `record_texts`: the JSON of many events or records at once, as (offsets, text);
- `windows`: all records in record order, a window of whole records at a time, for whole-trace
  scans (search, export); a memory-mapped blob is read through its file, so a scan does not
  leave the blob's pages counted in the server's resident memory;
- `typed_windows`: a typed trace's records taken apart, for a search that matches the values
  themselves (`TypedWindow.value_fragments`, `TypedWindow.number_hits`) instead of their JSON.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from typing import BinaryIO, Protocol

import numpy as np

from profscope.model import typed_args


class Trace(Protocol):
    """The args columns of a `columns.Trace`, all these functions read (a protocol, so the trace's
    own module can call them without the two importing each other)."""

    ev_args: np.ndarray
    args_off: np.ndarray
    args_event: np.ndarray
    args_blob: np.ndarray
    args_frag_off: np.ndarray
    args_frag_blob: np.ndarray


WINDOW_BYTES = 1 << 20  # record bytes per window of `windows`
_INT_CHARS = frozenset(b"0123456789-")  # every character an integer's text may hold
_DOUBLE_CHARS = frozenset(b"0123456789-+.e")  # and a double's (`repr`)
_NULL_CHARS = frozenset(b"nul")  # a double that is not finite is written null
# A typed record renders to about twice its size: windows of typed records hold half as many bytes.
_TYPED_SHRINK = 2


@dataclasses.dataclass(frozen=True)
class Window:
    """Records first … first + count - 1: record first + k belongs to event events[k] and its JSON
    is text[offsets[k]:offsets[k+1]] (without text: offsets all 0)."""

    first: int
    events: np.ndarray  # int64
    offsets: np.ndarray  # int64, from 0
    text: np.ndarray  # uint8

    @property
    def count(self) -> int:
        return int(self.events.shape[0])


def typed(trace: Trace) -> bool:
    """Whether the trace's records are typed records (else JSON texts)."""
    return int(trace.args_frag_off.shape[0]) > 0


def args_json(trace: Trace, event: int) -> bytes:
    """Raw JSON object text of one event's args (b"" when it has none)."""
    record = int(trace.ev_args[event])
    lo, hi = int(trace.args_off[record]), int(trace.args_off[record + 1])
    raw = np.asarray(trace.args_blob[lo:hi]).tobytes()
    if not typed(trace) or hi <= lo:
        return raw
    return typed_args.render_one(raw, trace.args_frag_off, trace.args_frag_blob)


def event_texts(trace: Trace, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int64 offsets[n+1], uint8 text): the JSON of each event of `events`, in that order."""
    return record_texts(trace, np.asarray(trace.ev_args)[np.asarray(events, dtype=np.int64)])


def event_views(trace: Trace, events: np.ndarray) -> list[memoryview]:
    """The JSON of each event of `events` as a view of one text (b"" views without args)."""
    offsets, text = event_texts(trace, events)
    view = memoryview(text)
    return [view[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)]


def record_texts(trace: Trace, records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int64 offsets[n+1], uint8 text): the JSON of each args record of `records`, in that order.
    Records that follow each other in the blob are copied as one run."""
    records = np.asarray(records, dtype=np.int64)
    off = np.asarray(trace.args_off)
    lo, hi = off[records], off[records + 1]
    size = hi - lo
    local = np.zeros(records.shape[0] + 1, dtype=np.int64)
    np.cumsum(size, out=local[1:])
    data = _gather_runs(trace.args_blob, lo, hi)
    if not typed(trace):
        return local, data
    return typed_args.render(data, local[:-1], local[1:], trace.args_frag_off, trace.args_frag_blob)


def windows(
    trace: Trace, max_bytes: int = WINDOW_BYTES, max_records: int | None = None, text: bool = True
) -> Iterator[Window]:
    """All records in record order as JSON, whole records of about `max_bytes` of JSON (at least
    one) and at most `max_records` a window; without `text`, only which events they belong to."""
    is_typed = typed(trace)
    step = max(1, max_bytes // _TYPED_SHRINK if is_typed else max_bytes)
    for first, events, bounds, data in _record_windows(trace, step, max_records, text):
        if data is None:
            yield Window(first, events, np.zeros(events.shape[0] + 1, dtype=np.int64), np.zeros(0, np.uint8))
        elif is_typed:
            offsets, rendered = typed_args.render(
                data, bounds[:-1], bounds[1:], trace.args_frag_off, trace.args_frag_blob
            )
            yield Window(first, events, offsets, rendered)
        else:
            yield Window(first, events, bounds, data)


@dataclasses.dataclass(frozen=True)
class TypedWindow:
    """Typed records first … first + len(events) - 1 taken apart, for scans that look at the
    values themselves (search): record first + k belongs to event events[k]; a JSON record's text
    is data[lo + HEADER_BYTES : hi] (`typed_args.Records`, `json_texts`)."""

    first: int
    events: np.ndarray  # int64
    records: typed_args.Records
    data: np.ndarray  # uint8
    bounds: np.ndarray  # int64 [n+1], each record's bytes in data

    def json_texts(self, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(int64 offsets[len(which)+1], uint8 text): the texts of the JSON records `which`
        (indices into the window, each a `records.raw` one), without their header words."""
        lo = self.bounds[which] + typed_args.HEADER_BYTES
        size = self.bounds[which + 1] - lo
        offsets = np.zeros(size.shape[0] + 1, dtype=np.int64)
        np.cumsum(size, out=offsets[1:])
        return offsets, typed_args.ragged_gather(self.data, lo, size)

    def value_fragments(self) -> np.ndarray:
        """Per stat row (`records`), the fragment id of its value (a `"text",` or `null,`
        fragment), or -1 where the value is a number."""
        r = self.records
        out = np.full(r.value_class.shape[0], -1, dtype=np.int64)
        fragment = r.value_class == typed_args.FRAGMENT
        out[fragment] = r.value[fragment].astype(np.int64)
        return out

    def number_hits(self, needle: bytes) -> np.ndarray:
        """Per stat row, whether its value is a number whose JSON text holds `needle` (lowercase;
        numbers are written without capitals): integers in decimal, doubles as `repr`, null
        where not finite, as `render` writes them."""
        r = self.records
        out = np.zeros(r.value_class.shape[0], dtype=bool)
        chars = set(needle)
        if chars <= _DOUBLE_CHARS | _NULL_CHARS:
            out |= _double_hits(needle, r.value_class, r.value)
        if chars <= _INT_CHARS:
            out |= _integer_hits(np.frombuffer(needle, dtype=np.uint8), r.value_class, r.value)
        return out


def _integer_hits(needle: np.ndarray, value_class: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Per stat row, whether it is an integer whose decimal text holds `needle` (digits and "-"):
    the texts are written in fixed rows (`typed_args.integer_rows`) and searched in place."""
    out = np.zeros(value_class.shape[0], dtype=bool)
    m = needle.shape[0]
    for cls in (typed_args.INT, typed_args.UINT):
        rows = np.flatnonzero(value_class == cls)
        if not rows.shape[0]:
            continue
        text, start, length = typed_args.integer_rows(value[rows], signed=cls == typed_args.INT)
        flat = text.ravel()
        pos = np.flatnonzero(flat[: flat.shape[0] - m + 1] == needle[0])
        for j in range(1, m):
            pos = pos[flat[pos + j] == needle[j]]
        number, at = np.divmod(pos, typed_args.TEXT_ROW)
        # Inside the number's text (its row's `length` counts the comma after it).
        inside = (at >= start[number]) & (at + m <= start[number] + length[number] - 1)
        out[rows[number[inside]]] = True
    return out


def _double_hits(needle: bytes, value_class: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Per stat row, whether it is a double whose JSON text (`repr`, null when not finite) holds
    `needle`."""
    out = np.zeros(value_class.shape[0], dtype=bool)
    rows = np.flatnonzero(value_class == typed_args.DOUBLE)
    if not rows.shape[0]:
        return out
    bits, inverse = np.unique(value[rows], return_inverse=True)
    numbers = bits.view(np.float64).tolist()
    text = needle.decode("utf-8", errors="replace")
    match = np.array([text in typed_args.double_text(v) for v in numbers], dtype=bool)
    out[rows] = match[inverse.ravel()]
    return out


def typed_windows(trace: Trace, max_bytes: int = WINDOW_BYTES) -> Iterator[TypedWindow]:
    """All typed records of a typed trace in record order, about `max_bytes` of records a window."""
    for first, events, bounds, data in _record_windows(trace, max(1, max_bytes), None, True):
        assert data is not None
        yield TypedWindow(first, events, typed_args.decode(data, bounds[:-1], bounds[1:]), data, bounds)


def fragments(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(int64 offsets[n+1], uint8 bytes): the JSON fragments a typed trace's records refer to."""
    return np.asarray(trace.args_frag_off), np.asarray(trace.args_frag_blob)


def _record_windows(
    trace: Trace, step: int, max_records: int | None, read: bool
) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray | None]]:
    """(first record, events, record bounds from 0, their bytes or None) of whole records of
    about `step` bytes (at least one) and at most `max_records`, in record order."""
    off = trace.args_off
    n = int(trace.args_event.shape[0])
    reader = BlobReader(trace.args_blob) if read else None
    k = 0
    while k < n:
        byte_lo = int(off[k])
        end = int(np.searchsorted(off, byte_lo + step, side="right")) - 1 if read else n
        if max_records is not None:
            end = min(end, k + max_records)
        end = min(max(end, k + 1), n)
        events = np.asarray(trace.args_event[k:end], dtype=np.int64)
        bounds = np.asarray(off[k : end + 1], dtype=np.int64) - byte_lo
        data = None if reader is None else reader.read_array(byte_lo, byte_lo + int(bounds[-1]))
        yield k, events, bounds, data
        k = end


def record_count(trace: Trace) -> int:
    """Args records of the trace (one per event)."""
    return int(trace.args_event.shape[0])


def records_of(trace: Trace, events: np.ndarray) -> np.ndarray:
    """The args record of each event of `events` (records are in the order events were added)."""
    return np.asarray(trace.ev_args)[np.asarray(events, dtype=np.int64)]


def _gather_runs(blob: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """blob[lo[i]:hi[i]] for all i, concatenated; runs of adjacent ranges are copied at once."""
    if not lo.shape[0]:
        return np.zeros(0, dtype=np.uint8)
    breaks = np.flatnonzero(lo[1:] != hi[:-1]) + 1
    firsts = np.concatenate(([0], breaks)).tolist()
    lasts = np.concatenate((breaks, [lo.shape[0]])).tolist()
    view = memoryview(np.asarray(blob))
    joined = b"".join(view[lo[f] : hi[last - 1]] for f, last in zip(firsts, lasts, strict=True))
    return np.frombuffer(joined, dtype=np.uint8)


class BlobReader:
    """Byte ranges of a record blob; a memory-mapped one is read through its file (`os.pread`)."""

    def __init__(self, blob: np.ndarray) -> None:
        self._blob = blob
        filename = getattr(blob, "filename", None)
        self._file: BinaryIO | None = None
        if isinstance(blob, np.memmap) and filename:
            self._file = open(filename, "rb", buffering=0)  # noqa: SIM115 (closed with the reader)
            self._offset = int(blob.offset)

    def read(self, lo: int, hi: int) -> bytes:
        if hi <= lo:
            return b""
        if self._file is None:
            return self._blob[lo:hi].tobytes()
        return os.pread(self._file.fileno(), hi - lo, self._offset + lo)

    def read_array(self, lo: int, hi: int) -> np.ndarray:
        if self._file is None:
            return np.asarray(self._blob[lo:hi])
        return np.frombuffer(self.read(lo, hi), dtype=np.uint8)

    def __del__(self) -> None:
        if self._file is not None:
            self._file.close()
