"""Streaming structure of a Chrome trace file: top-level keys and batches of decoded events.

A Chrome / Kineto trace is one JSON document, `{"traceEvents": [...], ...}` or a bare `[...]`,
often over a gigabyte. Instead of parsing it whole, `EventScanner` walks the outer object itself and
cuts the events array into windows of a few megabytes at candidate event boundaries (`}` `,` `{`),
each decoded by msgspec in one call into typed `Event` structs. A candidate boundary that is really
inside a string or nested value makes the window fail to decode, so every accepted batch is exact.

Real files are damaged in predictable ways (cut mid-event, bare `N/A` / `NaN`, invalid UTF-8, raw
control characters, stray text between events). A failing window is first repaired in bulk
when the damage is of a known kind, then narrowed down with the decoder's error offset; only the
offending event goes through the slow, string-aware path (`decode`), and what cannot be
read is counted, never fatal. The bytes come from `blocks.BlockReader`.

Hostile input cannot stall the scanner: every loop moves through the input or ends (see
`_events`), one element is never held past `MAX_EVENT_BYTES` (a larger one is skipped), and what
is passed over (whitespace, a huge string or top-level value, garbage) is dropped as it is read,
and a stretch of text no event decodes from is passed in work linear in its length (see
`DAMAGED_EVENT_BYTES`).
"""

from __future__ import annotations

import collections
import contextlib
import gc
import re
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import numpy as np

from profscope.formats.chrome.decode import Damage, Event, decode_event_text, decode_value_text, repair_window

# Window of event text decoded in one msgspec call: large enough to amortize per-call costs, small
# enough that the window and its decoded objects stay in cache while the columns are pulled out
# (1 MB measured ~25% less CPU than 8 MB on the benchmark trace; 512 kB 7% less than 1 MB through
# an ingest child with its helper, and 256 kB no less than 512 kB).
WINDOW_BYTES = 512 << 10
MIN_WINDOW_BYTES = 4096
# The most of one element held in memory; a larger one (or one whose brackets never close) is
# skipped up to the next element, and the window never grows past it.
MAX_EVENT_BYTES = 64 << 20
# Top-level values (other than traceEvents) bigger than this are not kept in the trace metadata;
# a top-level key longer than this ends the reading of the document.
MAX_METADATA_VALUE_BYTES = 1 << 20
# Events decoded on the slow path are handed on in groups, not one batch per event.
SLOW_FLUSH_EVENTS = 4096
# Inside a stretch of text that no event could be decoded from (a gzip stream inflating garbage
# after its damage, bytes overwritten in place), every `{` is a candidate event whose brackets,
# counted through misaligned quotes, wander like a random walk: read up to MAX_EVENT_BYTES each,
# 2 MB of such text took 10-20 s and 500 MB would not finish. So once a failure starts a stretch,
# the slow path reads a candidate at most DAMAGED_EVENT_BYTES far (`_read_candidate`), all its reads in the stretch add
# up to at most DAMAGED_SCAN_BASE + DAMAGED_SCAN_RATIO × the stretch's length, and past
# UNREADABLE_STRETCH_BYTES it reads none: only the fast path (one window per candidate) is tried at
# each next `,{` until an event with a phase decodes.
DAMAGED_EVENT_BYTES = 4 << 10
DAMAGED_SCAN_BASE = 64 << 10
DAMAGED_SCAN_RATIO = 4
UNREADABLE_STRETCH_BYTES = 256 << 10
# The window the fast path tries at each candidate in such a stretch (it widens for a larger event).
DAMAGED_WINDOW_BYTES = 1024

_BATCH_DECODER = msgspec.json.Decoder(list[Event])
_RAW_LIST_DECODER = msgspec.json.Decoder(list[msgspec.Raw])

_WS = frozenset(b" \t\r\n")
_NOT_WS = re.compile(rb"[^ \t\r\n]")
# End of one event followed by the start of the next, or by the end of the array.
EVENT_BOUNDARY = re.compile(rb"\}[ \t\r\n]*(?:,[ \t\r\n]*\{|\])")
# What matters for finding where a JSON value ends: a quote opening a string, and brackets.
_STRUCTURE = re.compile(rb'["\[\]{}]')
# The rest of a string after its opening quote, up to its closing quote or to the end of the input
# read so far (or to a backslash that is the last byte read).
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")

# -- finding where a value ends -------------------------------------------------------------------


class Truncated(Exception):
    """The input ended where more JSON was expected."""


_SCALAR = re.compile(rb"[^,}\] \t\r\n]+")
_RESYNC = re.compile(rb",[ \t\r\n]*(?=\{)|\]")


# Past this far into an object or array, a value's end is looked for in numpy chunks: token by
# token in Python, a megabyte of small strings took ~0.1 s, and an unclosed `{` is read up to
# MAX_EVENT_BYTES before the scanner gives up on it.
_VECTOR_FROM = 64 << 10
_VECTOR_CHUNK = 1 << 20


class ValueScan:
    """Where one JSON value ends, found piece by piece as more of the input arrives.

    Brackets are counted, not recursed into, so no nesting is too deep for it; a string is passed
    over by one regex match, escapes included; deep into a big value the rest is scanned in bulk
    (`_bulk`). `rel` is how far into the value the scan has come, so the caller may move or drop
    the bytes before it between two calls.
    """

    def __init__(self, first: int) -> None:
        self.depth = 0
        self.in_string = first == 0x22
        self.scalar = first not in (0x22, 0x5B, 0x7B)
        self.escaped = False  # the bulk scan stopped right after an odd run of backslashes
        self.rel = 1 if self.in_string else 0

    def length(self, buf: bytes, start: int, limit: int | None = None) -> int | None:
        """The value's length when its end is in `buf` (it starts at `start`), else None; with
        `limit`, only the value's first `limit` bytes are looked at."""
        at, n = start + self.rel, len(buf) if limit is None else min(len(buf), start + limit)
        if self.scalar:
            m = _SCALAR.match(buf, at)
            end = m.end() if m else at
            self.rel = end - start
            return self.rel if end < len(buf) and (limit is None or self.rel <= limit) else None
        while True:
            if self.depth > 0 and at - start >= _VECTOR_FROM:
                if at >= n:
                    self.rel = n - start
                    return None
                stop = min(n, at + _VECTOR_CHUNK)
                end = self._bulk(buf, at, stop)
                if end is not None:
                    self.rel = end - start
                    return self.rel
                at = stop
                continue
            if self.in_string:
                at = _STRING_REST.match(buf, at, n).end()
                if at >= n or buf[at] != 0x22:  # the string goes on past what was read
                    self.rel = at - start
                    return None
                at += 1
                self.in_string = False
                if self.depth == 0:
                    self.rel = at - start
                    return self.rel
                continue
            m = _STRUCTURE.search(buf, at, n)
            if m is None:
                self.rel = n - start
                return None
            at = m.end()
            c = buf[at - 1]
            if c == 0x22:
                self.in_string = True
            elif c == 0x7B or c == 0x5B:
                self.depth += 1
            else:
                self.depth -= 1
                if self.depth <= 0:
                    self.rel = at - start
                    return self.rel

    def _bulk(self, buf: bytes, lo: int, hi: int) -> int | None:
        """Scan buf[lo:hi] inside an object or array at once: the index just past the bracket that
        closes the value, or None with the state carried to the next chunk. A quote counts unless
        an odd run of backslashes precedes it (outside strings too, where valid JSON has none)."""
        a = np.frombuffer(buf, np.uint8, hi - lo, lo)
        base = lo
        if self.escaped:  # a backslash left at the end of the last chunk escapes this one's first byte
            a = np.concatenate((np.array([0x5C], np.uint8), a))
            base -= 1
        quotes = np.flatnonzero(a == 0x22)
        slashes = np.flatnonzero(a == 0x5C)
        self.escaped = False
        if slashes.shape[0]:
            breaks = np.flatnonzero(np.diff(slashes) != 1) + 1
            run_first = slashes[np.concatenate(([0], breaks))]
            run_last = slashes[np.concatenate((breaks - 1, [slashes.shape[0] - 1]))]
            odd = (run_last - run_first) % 2 == 0
            run = np.minimum(np.searchsorted(run_last, quotes - 1), run_last.shape[0] - 1)
            quotes = quotes[~((run_last[run] == quotes - 1) & odd[run])]
            self.escaped = bool(run_last[-1] == a.shape[0] - 1 and odd[-1])
        brackets = np.flatnonzero((a == 0x7B) | (a == 0x5B) | (a == 0x7D) | (a == 0x5D))
        outside = (np.searchsorted(quotes, brackets) + self.in_string) % 2 == 0
        brackets = brackets[outside]
        opening = (a[brackets] == 0x7B) | (a[brackets] == 0x5B)
        path = self.depth + np.cumsum(np.where(opening, 1, -1))
        closed = np.flatnonzero(path <= 0)
        if closed.shape[0]:
            return base + int(brackets[closed[0]]) + 1
        if path.shape[0]:
            self.depth = int(path[-1])
        self.in_string = (self.in_string + quotes.shape[0]) % 2 == 1
        return None


# -- the scanner ----------------------------------------------------------------------------------


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cycle collector paused while a file is decoded (the collector's state restored
    after): decoding allocates container objects by the million (batches, per-field lists, track
    key tuples) and frees them all, none in a cycle, yet every 700 allocations start a collection
    and every so often one over all the objects of the process. Paused, a sequential read of a
    200 MB Kineto trace took about 10% less CPU (1.78 and 2.09 s against 1.99 and 2.27 s, in turns).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class EventScanner:
    """Walks one Chrome trace document and yields lists of decoded `Event`s in file order.

    `start_in_events` starts the walk directly inside the events array (a helper given the second
    half of a file; `bare_array` then says which document form the head had). When the array
    starts, `on_events_start(offset, bare_array)` may return an offset believed to start an event:
    the scanner stops there and sets `reached_stop`, or, if an event turns out to cross it, simply
    goes on as if there were no stop.

    A document may repeat the `traceEvents` key; JSON parsers keep the last value. The first array
    is read as it streams by and a later one is only noted (`later_events_at`, its `[`); the reader
    then reads the document again with `events_at` naming that array, the others skipped.
    """

    def __init__(
        self,
        next_block: Callable[[], bytes | None],
        damage: Damage,
        *,
        start_offset: int = 0,
        start_in_events: bool = False,
        bare_array: bool = False,
        on_events_start: Callable[[int, bool], int | None] | None = None,
        events_at: int | None = None,
    ) -> None:
        self._next_block = next_block
        self.damage = damage
        self._buf = b""
        self._pos = 0
        self._origin = start_offset  # absolute offset of _buf[0]
        self._eof = False
        self._start_in_events = start_in_events
        self._stop_at: int | None = None
        self.reached_stop = False
        self.metadata: dict[str, Any] = {}
        self.found_events_array = start_in_events
        self.bare_array = bare_array
        self.events_array_closed = False
        self.document_complete = False
        self.cut_inside_event = False
        # Where the decoder failed inside the event the slow path reads next (absolute offset).
        self._error_at: int | None = None
        # Absolute offset where the current stretch of undecodable text began, None after a success.
        self._failing_since: int | None = None
        self._damaged_scanned = 0  # bytes the slow path has read in that stretch
        self._slow: list[Event] = []
        self._on_events_start = on_events_start
        self._events_at = events_at
        self.later_events_at: int | None = None

    def _enter_events(self) -> None:
        """At the first event of the array: note where it starts, ask whether to stop early."""
        self.found_events_array = True
        if self._on_events_start is not None:
            stop = self._on_events_start(self.offset, self.bare_array)
            if stop is not None and stop > self.offset:
                self._stop_at = stop

    # -- buffer ------------------------------------------------------------------------------
    @property
    def offset(self) -> int:
        """Absolute offset of the next unread byte."""
        return self._origin + self._pos

    def _fill(self, need: int) -> bool:
        """Make at least `need` bytes available after _pos if the input has them."""
        if len(self._buf) - self._pos >= need:
            return True
        if self._eof:
            return False
        parts: list[Any] = [memoryview(self._buf)[self._pos :]]
        have = len(parts[0])
        while have < need:
            block = self._next_block()
            if block is None:
                self._eof = True
                break
            parts.append(block)
            have += len(block)
        self._origin += self._pos
        self._buf = b"".join(parts)
        self._pos = 0
        return have >= need

    def _more(self) -> bool:
        """Read at least one more block; False at end of input."""
        return self._fill(len(self._buf) - self._pos + 1)

    def _peek(self) -> int | None:
        """Next non-whitespace byte (consuming the whitespace), None at end of input."""
        while True:
            m = _NOT_WS.search(self._buf, self._pos)
            if m is not None:
                self._pos = m.start()
                return self._buf[self._pos]
            self._pos = len(self._buf)  # whitespace only: drop it before reading on
            if not self._more():
                return None

    def _stop_index(self) -> int | None:
        """Index in _buf of the stop offset, or None when there is no stop."""
        return None if self._stop_at is None else self._stop_at - self._origin

    # -- whole values (slow path, top-level values) --------------------------------------------
    def _value_end(self, max_bytes: int) -> int | None:
        """Index in _buf just past the JSON value starting at _pos, reading more input as needed;
        None if it does not end within `max_bytes` or before the end of the input (`_cut_short`
        then tells which). A bare scalar ends at the end of the input."""
        scan = ValueScan(self._buf[self._pos])
        while True:
            length = scan.length(self._buf, self._pos, max_bytes)
            if length is not None:
                return self._pos + length
            if scan.rel >= max_bytes or not self._more():
                if scan.scalar and self._eof and scan.rel > 0:
                    return self._pos + scan.rel
                return None

    def _cut_short(self, max_bytes: int) -> bool:
        """After `_value_end(max_bytes)` found no end: whether the input ended first."""
        return self._eof and len(self._buf) - self._pos < max_bytes

    def _skip_value(self) -> int | None:
        """Skip the JSON value at _pos however long it is, dropping what it has passed: its size,
        or None when the input ends inside it (_pos is then at the end)."""
        scan = ValueScan(self._buf[self._pos])
        passed = 0
        while True:
            length = scan.length(self._buf, self._pos)
            if length is not None:
                self._pos += length
                return passed + length
            drop = min(scan.rel, len(self._buf) - self._pos)
            self._pos += drop
            passed += drop
            scan.rel -= drop
            if not self._more():
                self._pos = len(self._buf)
                return None

    def _read_string(self) -> str:
        """A JSON string token at _pos (a top-level key); raises Truncated if it does not end."""
        end = self._value_end(MAX_METADATA_VALUE_BYTES)
        if end is None:
            if self._cut_short(MAX_METADATA_VALUE_BYTES):
                raise Truncated("the file ends inside a top-level key (truncated)")
            raise Truncated(
                f"a top-level key at byte {self.offset} is longer than {MAX_METADATA_VALUE_BYTES >> 20} MB; "
                "rest of the file ignored"
            )
        text = self._buf[self._pos : end]
        self._pos = end
        return decode_value_text(text, self.damage)

    # -- top level -------------------------------------------------------------------------------
    def batches(self) -> Iterator[list[Event]]:
        """Yield decoded events in file order; top-level values land in `metadata`."""
        if self._start_in_events:
            yield from self._events_and_rest()
            return
        c = self._peek()
        if c == 0xEF and self._buf[self._pos : self._pos + 3] == b"\xef\xbb\xbf":
            self._pos += 3
            c = self._peek()
        if c is None:
            raise Truncated("the file is empty")
        if c == 0x5B:  # '['
            self.bare_array = True
            self._pos += 1
            self._enter_events()
            yield from self._events_and_rest()
            return
        if c != 0x7B:  # '{'
            from profscope.formats.detect import describe_start  # only for this message

            head = bytes(self._buf[self._pos : self._pos + 4])
            raise ValueError(f"not a JSON trace: it starts with {describe_start(head)}")
        self._pos += 1
        yield from self._object_members(first=True)

    def resume(self) -> Iterator[list[Event]]:
        """After stopping at the stop offset, read on to the end as if there had been no stop."""
        self._stop_at = None
        self.reached_stop = False
        yield from self._events_and_rest()

    def _events_and_rest(self) -> Iterator[list[Event]]:
        """The events from here, then (unless stopped early) what follows the array: the end of a
        bare array, or the top-level members after `traceEvents`."""
        yield from self._events()
        if self.events_array_closed and not self.reached_stop:
            if self.bare_array:
                self._finish_bare_array()
            else:
                yield from self._object_members(first=False)

    def _finish_bare_array(self) -> None:
        self.document_complete = True
        if self._peek() is not None:
            self.damage.warn("text after the end of the JSON document was ignored")

    def _object_members(self, first: bool) -> Iterator[list[Event]]:
        """Members of the top-level object, from after `{` (first) or after a member value."""
        expect_member = first
        while True:
            c = self._peek()
            if c is None:
                self.damage.warn("the file ends before the closing '}' of the trace object (truncated)")
                return
            if c == 0x7D and (not expect_member or first):  # '}'
                self._pos += 1
                self.document_complete = True
                if self._peek() is not None:
                    self.damage.warn("text after the end of the JSON document was ignored")
                return
            if not expect_member:
                if c != 0x2C:  # ','
                    self.damage.warn(
                        f"unexpected text at byte {self.offset} after a top-level value; rest ignored"
                    )
                    return
                self._pos += 1
                expect_member = True
                continue
            if c != 0x22:
                self.damage.warn(f"expected a key at byte {self.offset}; rest of the file ignored")
                return
            try:
                key = self._read_string()
            except Truncated as exc:
                self.damage.warn(str(exc))
                return
            if self._peek() != 0x3A:  # ':'
                self.damage.warn(f"expected ':' after key {key[:100]!r}; rest of the file ignored")
                return
            self._pos += 1
            c = self._peek()
            if c is None:
                self.damage.warn(f"the file ends before the value of {key[:100]!r} (truncated)")
                return
            if key == "traceEvents" and c == 0x5B and self._reads_events_at(self.offset):
                self._pos += 1
                self._enter_events()
                yield from self._events()
                if self.reached_stop or not self.events_array_closed:
                    return
            elif key == "traceEvents" and c == 0x5B:
                if not self._skip_events_array():
                    return
            elif not self._metadata_value(key):
                return
            expect_member = False
            first = False

    def _reads_events_at(self, offset: int) -> bool:
        """Whether the `traceEvents` array opening at `offset` is the one this pass reads."""
        return not self.found_events_array and (self._events_at is None or offset == self._events_at)

    def _skip_events_array(self) -> bool:
        """Pass over a `traceEvents` array this pass does not read, noting it when it comes after
        the one read; False if the file ends inside it."""
        start = self.offset
        if self.found_events_array:
            self.later_events_at = start
        if self._skip_value() is None:
            self.damage.warn(
                f"the file ends inside a repeated 'traceEvents' array at byte {start} (truncated)"
            )
            return False
        return True

    def _metadata_value(self, key: str) -> bool:
        """Read one top-level value into metadata; False if the file ends inside it."""
        start = self.offset
        end = self._value_end(MAX_METADATA_VALUE_BYTES + 1)
        if end is None and not self._cut_short(MAX_METADATA_VALUE_BYTES + 1):
            size = self._skip_value()
            if size is not None:
                self.damage.warn(f"top-level key {key[:100]!r} ({size} bytes) not kept in the trace metadata")
                return True
        if end is None:
            self.damage.warn(
                f"the file ends inside the top-level value {key[:100]!r} at byte {start} (truncated)"
            )
            return False
        text = self._buf[self._pos : end]
        self._pos = end
        if len(text) > MAX_METADATA_VALUE_BYTES:
            self.damage.warn(
                f"top-level key {key[:100]!r} ({len(text)} bytes) not kept in the trace metadata"
            )
            return True
        try:
            self.metadata[key] = decode_value_text(text, self.damage)
        except msgspec.DecodeError:
            self.damage.warn(f"top-level value {key[:100]!r} is not valid JSON; ignored")
        except RecursionError:
            self.damage.warn(f"top-level value {key[:100]!r} is nested too deeply to decode; ignored")
        return True

    # -- the events array ----------------------------------------------------------------------
    def _events(self) -> Iterator[list[Event]]:
        """Decode the events array from _pos (just inside `[` or at an event start).

        The loop always ends: each pass moves _pos forward or changes the window size, and between
        two moves the size changes one way only, growing (up to MAX_EVENT_BYTES) while no event
        boundary is in reach and more input is, then shrinking (down to MIN_WINDOW_BYTES) while
        decoding fails; what is left goes to `_slow_event`, which always moves on.
        """
        size = WINDOW_BYTES
        shrinking = False
        while True:
            if len(self._slow) >= SLOW_FLUSH_EVENTS:
                yield self._take_slow()
            c = self._peek()
            if self._stop_at is not None and self.offset >= self._stop_at:
                if self.offset == self._stop_at:
                    if self._slow:
                        yield self._take_slow()
                    self.reached_stop = True
                    return
                self._lost_stop()
            if c is None:
                if self._slow:
                    yield self._take_slow()
                if not self.bare_array and not self.cut_inside_event:
                    self.damage.warn("the file ends inside the traceEvents array (truncated)")
                return
            if c == 0x5D:  # ']'
                if self._slow:
                    yield self._take_slow()
                self._pos += 1
                self.events_array_closed = True
                return
            if c == 0x2C:  # a separator left after an event read on the slow path
                self._pos += 1
                continue
            if c != 0x7B:
                self._skip_non_event()
                continue
            self._fill(size + 64)
            batch, status = self._fast_window(size)
            if batch is not None:
                if self._slow:
                    yield self._take_slow()
                if batch:
                    if self._failing_since is not None and any(e.ph is not None for e in batch):
                        self._failing_since = None
                    yield batch
                size = min(WINDOW_BYTES, size * 2)
                shrinking = False
            elif (
                status == "no boundary"
                and not shrinking
                and size < MAX_EVENT_BYTES
                and len(self._buf) - self._pos > size
            ):
                size = min(MAX_EVENT_BYTES, size * 4)  # one event larger than the window: widen it
            elif status == "failed" and size > MIN_WINDOW_BYTES:
                size = max(MIN_WINDOW_BYTES, size // 8)
                shrinking = True
            else:
                self._slow_event()
                # In a stretch of undecodable text, one small window per candidate.
                size = DAMAGED_WINDOW_BYTES if self._failing_since is not None else MIN_WINDOW_BYTES * 2
                shrinking = False

    def _lost_stop(self) -> None:
        """The stop offset is not an event boundary: keep scanning as if there were no stop."""
        self._stop_at = None

    def _take_slow(self) -> list[Event]:
        batch, self._slow = self._slow, []
        return batch

    def _last_boundary(self, lo: int, hi: int) -> tuple[int, int] | None:
        """(end of event, start of next element) for the last boundary whose `}` is in [lo, hi)."""
        buf = self._buf
        # Boundaries cannot overlap, so the last one found from a nearer start is the last one;
        # most windows hold one in their last 4 kB, which keeps the loop over matches short.
        for tail in dict.fromkeys((max(lo, hi - 4096), max(lo, hi - 65536), lo)):
            last = None
            for m in EVENT_BOUNDARY.finditer(buf, tail, min(len(buf), hi + 64)):
                if m.start() >= hi:
                    break
                last = m
            if last is not None:
                return last.start() + 1, last.end() - 1
        return None

    def _split_at_stop(self, pos: int, stop: int) -> int | None:
        """End of the last event before the stop index when the text between is `}` `,` only."""
        buf = self._buf
        j = stop - 1
        while j > pos and buf[j] in _WS:
            j -= 1
        if j <= pos or buf[j] != 0x2C:
            return None
        j -= 1
        while j > pos and buf[j] in _WS:
            j -= 1
        return j + 1 if buf[j] == 0x7D else None

    def _decode_window(self, pos: int, split: int) -> tuple[list[Event] | None, int | None]:
        """Decode the events in _buf[pos:split]: (events, None) or (None, error index or None)."""
        window = b"".join((b"[", memoryview(self._buf)[pos:split], b"]"))
        repairs: collections.Counter[str] | None = None
        while True:
            try:
                events = _BATCH_DECODER.decode(window)
            except msgspec.ValidationError:
                try:
                    raws = _RAW_LIST_DECODER.decode(window)
                except (msgspec.DecodeError, RecursionError):
                    return None, None
                decoded = (decode_event_text(bytes(r), self.damage) for r in raws)
                events = [e for e in decoded if e is not None]
            except msgspec.DecodeError as exc:
                message = str(exc)
                repaired = None if repairs is not None else repair_window(window, message)
                if repaired is None:
                    m = _ERROR_BYTE.search(message)
                    # Offsets in a repaired window no longer match _buf: report none then.
                    return None, (pos - 1 + int(m.group(1))) if m and repairs is None else None
                window, repairs = repaired
                continue
            except RecursionError:  # an element nested deeper than the decoder goes: find it slowly
                return None, None
            if repairs:
                self.damage.repaired.update(repairs)
            return events, None

    def _fast_window(self, size: int) -> tuple[list[Event] | None, str]:
        """Decode events from _pos up to a boundary within `size` bytes.

        Returns (events, "") on success, else (None, why): "no boundary" in reach, "first event"
        (the decoder failed inside the first event) or "failed".
        """
        pos = self._pos
        stop = self._stop_index()
        hi = min(len(self._buf), pos + size)
        cut: tuple[int, int] | None = None
        if stop is not None and stop <= hi:
            hi = stop
            end = self._split_at_stop(pos, stop)
            if end is not None:
                cut = (end, stop)
        if cut is None:
            cut = self._last_boundary(pos, hi)
        if cut is None:
            return None, "first event" if stop is not None and stop <= hi else "no boundary"
        split, nxt = cut
        while True:
            events, err = self._decode_window(pos, split)
            if events is not None:
                self._pos = nxt
                return events, ""
            if err is None:
                return None, "failed"
            cut = self._last_boundary(pos, min(err, split - 1))
            if cut is None:
                self._error_at = self._origin + err
                return None, "first event"
            split, nxt = cut

    def _slow_event(self) -> None:
        """Read exactly one event at _pos ('{') token by token; always moves past it.

        One that does not end within MAX_EVENT_BYTES, or runs into the end of the input while
        the input holds the start of a later event (its brackets never close), is skipped up to
        the next element; one the input ends inside is the end of the events. Inside a stretch of
        undecodable text the read is bounded (`_read_candidate`)."""
        start = self.offset
        damaged = self._failing_since is not None
        read = self._read_candidate()
        if read is None:
            self.damage.skipped["unparseable text in traceEvents"] += 1
            self._resync(self._pos + 1)
            return
        end, limit = read
        if end is None:
            self._failed(start)
            if self._cut_short(limit) and EVENT_BOUNDARY.search(self._buf, self._pos + 1) is None:
                size = len(self._buf) - self._pos
                self.damage.skipped["event cut off by the end of the file"] += 1
                self.damage.warn(
                    f"the file is truncated inside an event of {size} bytes at offset {self.offset}"
                )
                self.cut_inside_event = True
                self._pos = len(self._buf)
                return
            if damaged or self._cut_short(MAX_EVENT_BYTES):
                self.damage.skipped["unparseable text in traceEvents"] += 1
            else:
                self.damage.skipped[f"array elements larger than {MAX_EVENT_BYTES >> 20} MB"] += 1
            self._resync(self._pos + 1)
            return
        stop = self._stop_index()
        if stop is not None and end > stop:
            self._lost_stop()
        error_at, self._error_at = self._error_at, None
        event = decode_event_text(self._buf[self._pos : end], self.damage)
        if (
            event is None
            and error_at is not None
            and self._origin + self._pos < error_at < self._origin + end
        ):
            # Not an event but text that broke where the decoder said (an event never closed, so
            # its brackets ran on into the next events): go on from the last `,` before that point.
            comma = self._buf.rfind(b",", self._pos, error_at - self._origin)
            if comma > self._pos:
                self._failed(start)
                self._resync(comma)
                return
        self._pos = end
        if event is not None:
            self._slow.append(event)
        if event is not None and event.ph is not None:
            self._failing_since = None
        else:
            self._failed(start)
        if self._peek() not in (0x2C, 0x5D, None):
            self.damage.skipped["unparseable text in traceEvents"] += 1
            self._failed(start)
            self._resync(self._pos)

    def _failed(self, offset: int) -> None:
        """No event could be decoded at `offset`: a stretch of undecodable text starts, or goes on."""
        if self._failing_since is None:
            self._failing_since = offset
            self._damaged_scanned = 0

    def _read_candidate(self) -> tuple[int | None, int] | None:
        """`_value_end` of the element at _pos within what the slow path may read: MAX_EVENT_BYTES,
        or inside a stretch of undecodable text what the stretch's budget has left, the read charged
        to it. (end or None, the limit it was read with), or None when the budget allows no read."""
        if self._failing_since is None:
            return self._value_end(MAX_EVENT_BYTES), MAX_EVENT_BYTES
        stretch = self.offset - self._failing_since
        left = DAMAGED_SCAN_BASE + DAMAGED_SCAN_RATIO * stretch - self._damaged_scanned
        limit = min(DAMAGED_EVENT_BYTES, left)
        if stretch >= UNREADABLE_STRETCH_BYTES or limit <= 0:
            return None
        end = self._value_end(limit)
        self._damaged_scanned += limit if end is None else end - self._pos
        return end, limit

    def _skip_non_event(self) -> None:
        """Skip an array element that is not an object (number, string, literal, array, garbage)."""
        self.damage.skipped["array element is not an event object"] += 1
        start = self.offset
        read = self._read_candidate()
        self._failed(start)
        if read is None:
            self._resync(self._pos + 1)
            return
        end, limit = read
        if end is not None and end > self._pos:
            self._pos = end
            if self._peek() in (0x2C, 0x5D, None):
                return
            self._resync(self._pos)
        elif end is None and not self._cut_short(limit):
            self._resync(self._pos + 1)
        else:
            self._resync(self._pos)

    def _resync(self, start: int) -> None:
        """Move to the next `,` `{` or `]` from index `start` on, the likely start of the next
        element, dropping what it passes (so a huge stretch of garbage is never held whole)."""
        at = start
        while True:
            m = _RESYNC.search(self._buf, at)
            if m is not None:
                self._pos = m.start() if m.group() == b"]" else m.end()
                return
            # A `,` near the end may be followed by `{` in the next block: keep a little.
            self._pos = max(at, len(self._buf) - 64)
            if not self._more():
                self._pos = len(self._buf)
                return
            at = self._pos
