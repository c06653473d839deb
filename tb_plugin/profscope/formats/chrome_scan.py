"""Streaming structure of a Chrome trace file: top-level keys and batches of decoded events.

A Chrome / Kineto trace is one JSON document, `{"traceEvents": [...], ...}` or a bare `[...]`,
often over a gigabyte. Instead of parsing it whole, `EventScanner` walks the outer object itself and
cuts the events array into windows of a few megabytes at candidate event boundaries (`}` `,` `{`),
each decoded by msgspec in one call into typed `Event` structs. A candidate boundary that is really
inside a string or nested value makes the window fail to decode, so every accepted batch is exact.

Real files are damaged in predictable ways (cut mid-event, bare `N/A` / `NaN`, invalid UTF-8, raw
control characters, stray text between events). A failing window is first repaired in bulk
when the damage is of a known kind, then narrowed down with the decoder's error offset; only the
offending event goes through the slow, string-aware path (`chrome_decode`), and what cannot be
read is counted, never fatal. The bytes come from `chrome_blocks.BlockReader`.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from profscope.formats.chrome_decode import (
    JSON_STRING,
    Damage,
    Event,
    decode_event_text,
    decode_value_text,
    repair_window,
)

# Window of event text decoded in one msgspec call: large enough to amortize per-call costs, small
# enough that the window and its decoded objects stay in cache while the columns are pulled out
# (1 MB measured ~25% less CPU than 8 MB on the benchmark trace).
WINDOW_BYTES = 1 << 20
MIN_WINDOW_BYTES = 4096
# A single damaged event is scanned token by token; past this size it is treated as garbage.
MAX_EVENT_BYTES = 64 << 20
# Top-level values (other than traceEvents) bigger than this are not kept in the trace metadata.
MAX_METADATA_VALUE_BYTES = 1 << 20
# Events decoded on the slow path are handed on in groups, not one batch per event.
SLOW_FLUSH_EVENTS = 4096

_BATCH_DECODER = msgspec.json.Decoder(list[Event])
_RAW_LIST_DECODER = msgspec.json.Decoder(list[msgspec.Raw])

_WS = frozenset(b" \t\r\n")
# End of one event followed by the start of the next, or by the end of the array.
EVENT_BOUNDARY = re.compile(rb"\}[ \t\r\n]*(?:,[ \t\r\n]*\{|\])")
_STRING_RE = re.compile(JSON_STRING)
# Tokens that matter for finding where a JSON value ends: whole strings, a lone quote (an
# unterminated string), and brackets.
_TOKEN = re.compile(JSON_STRING + rb'|"|[\[\]{}]')
_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")

# -- the scanner ----------------------------------------------------------------------------------


class Truncated(Exception):
    """The input ended where more JSON was expected."""


_SCALAR = re.compile(rb"[^,}\] \t\r\n]+")
_RESYNC = re.compile(rb",[ \t\r\n]*(?=\{)|\]")


class EventScanner:
    """Walks one Chrome trace document and yields lists of decoded `Event`s in file order.

    `start_in_events` starts the walk directly inside the events array (a helper given the second
    half of a file; `bare_array` then says which document form the head had). When the array
    starts, `on_events_start(offset, bare_array)` may return an offset believed to start an event:
    the scanner stops there and sets `reached_stop`, or, if an event turns out to cross it, simply
    goes on as if there were no stop.
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
        self._slow: list[Event] = []
        self._on_events_start = on_events_start

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
            buf, pos, n = self._buf, self._pos, len(self._buf)
            while pos < n and buf[pos] in _WS:
                pos += 1
            self._pos = pos
            if pos < n:
                return buf[pos]
            if not self._more():
                return None

    def _stop_index(self) -> int | None:
        """Index in _buf of the stop offset, or None when there is no stop."""
        return None if self._stop_at is None else self._stop_at - self._origin

    # -- exact value scanning (slow path) ------------------------------------------------------
    def _value_end(self, max_bytes: int) -> int | None:
        """Index just past the JSON object or array starting at _pos, reading more input as
        needed; None if it does not end within `max_bytes` or before the end of the input."""
        while True:
            depth = 0
            buf = self._buf
            for m in _TOKEN.finditer(buf, self._pos):
                tok = m.group()
                c = tok[0]
                if c == 0x22:  # '"'
                    if len(tok) == 1:
                        break  # a string that does not end in what we have
                    continue
                depth += 1 if c in (0x7B, 0x5B) else -1
                if depth == 0:
                    return m.end()
            if len(buf) - self._pos >= max_bytes or not self._more():
                return None

    def _read_string(self) -> str:
        """A JSON string token at _pos (a top-level key); raises Truncated if it does not end."""
        while True:
            m = _STRING_RE.match(self._buf, self._pos)
            if m:
                self._pos = m.end()
                return decode_value_text(m.group(), self.damage)
            if not self._more():
                raise Truncated("the file ends inside a key")

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
            head = bytes(self._buf[self._pos : self._pos + 16])
            raise ValueError(f"not a JSON trace: it starts with {head!r}")
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
            except Truncated:
                self.damage.warn("the file ends inside a top-level key (truncated)")
                return
            if self._peek() != 0x3A:  # ':'
                self.damage.warn(f"expected ':' after key {key!r}; rest of the file ignored")
                return
            self._pos += 1
            c = self._peek()
            if c is None:
                self.damage.warn(f"the file ends before the value of {key!r} (truncated)")
                return
            if key == "traceEvents" and c == 0x5B and not self.found_events_array:
                self._pos += 1
                self._enter_events()
                yield from self._events()
                if self.reached_stop or not self.events_array_closed:
                    return
            elif not self._metadata_value(key):
                return
            expect_member = False
            first = False

    def _metadata_value(self, key: str) -> bool:
        """Read one top-level value into metadata; False if the file ends inside it."""
        c = self._buf[self._pos]
        if c in (0x7B, 0x5B):
            end = self._value_end(max_bytes=1 << 62)
        else:
            pattern = _STRING_RE if c == 0x22 else _SCALAR
            while True:
                m = pattern.match(self._buf, self._pos)
                if m and m.end() < len(self._buf):
                    end = m.end()
                    break
                if not self._more():
                    end = m.end() if m else None
                    break
        if end is None:
            self.damage.warn(f"the file ends inside the top-level value {key!r} (truncated)")
            return False
        text = self._buf[self._pos : end]
        self._pos = end
        if len(text) > MAX_METADATA_VALUE_BYTES:
            self.damage.warn(f"top-level key {key!r} ({len(text)} bytes) not kept in the trace metadata")
            return True
        try:
            self.metadata[key] = decode_value_text(text, self.damage)
        except msgspec.DecodeError:
            self.damage.warn(f"top-level value {key!r} is not valid JSON; ignored")
        return True

    # -- the events array ----------------------------------------------------------------------
    def _events(self) -> Iterator[list[Event]]:
        """Decode the events array from _pos (just inside `[` or at an event start)."""
        size = WINDOW_BYTES
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
                if not self.bare_array:
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
                    yield batch
                size = min(WINDOW_BYTES, size * 2)
            elif status == "no boundary" and len(self._buf) - self._pos > size and size < MAX_EVENT_BYTES:
                size *= 4  # one event larger than the window: widen it
            elif status == "first event" or size <= MIN_WINDOW_BYTES:
                self._slow_event()
                size = MIN_WINDOW_BYTES * 2
            else:
                size = max(MIN_WINDOW_BYTES, size // 8)

    def _lost_stop(self) -> None:
        """The stop offset is not an event boundary: keep scanning as if there were no stop."""
        self._stop_at = None

    def _take_slow(self) -> list[Event]:
        batch, self._slow = self._slow, []
        return batch

    def _last_boundary(self, lo: int, hi: int) -> tuple[int, int] | None:
        """(end of event, start of next element) for the last boundary whose `}` is in [lo, hi)."""
        buf = self._buf
        tail = max(lo, hi - 65536)
        while True:
            last = None
            for m in EVENT_BOUNDARY.finditer(buf, tail, min(len(buf), hi + 64)):
                if m.start() >= hi:
                    break
                last = m
            if last is not None:
                return last.start() + 1, last.end() - 1
            if tail == lo:
                return None
            tail = lo

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
                except msgspec.DecodeError:
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
                return None, "first event"
            split, nxt = cut

    def _slow_event(self) -> None:
        """Read exactly one event at _pos ('{') token by token."""
        end = self._value_end(MAX_EVENT_BYTES)
        if end is None:
            if self._eof and len(self._buf) - self._pos < MAX_EVENT_BYTES:
                self.damage.skipped["event cut off by the end of the file"] += 1
                self._pos = len(self._buf)
                return
            self.damage.skipped["unparseable text in traceEvents"] += 1
            self._resync(self._pos + 1)
            return
        stop = self._stop_index()
        if stop is not None and end > stop:
            self._lost_stop()
        event = decode_event_text(self._buf[self._pos : end], self.damage)
        self._pos = end
        if event is not None:
            self._slow.append(event)
        if self._peek() not in (0x2C, 0x5D, None):
            self.damage.skipped["unparseable text in traceEvents"] += 1
            self._resync(self._pos)

    def _skip_non_event(self) -> None:
        """Skip an array element that is not an object (number, string, literal, array, garbage)."""
        self.damage.skipped["array element is not an event object"] += 1
        c = self._buf[self._pos]
        if c == 0x5B:
            end = self._value_end(MAX_EVENT_BYTES)
        else:
            pattern = _STRING_RE if c == 0x22 else _SCALAR
            while True:
                m = pattern.match(self._buf, self._pos)
                if (m and m.end() < len(self._buf)) or not self._more():
                    break
            end = m.end() if m else None
        if end is not None:
            self._pos = end
            if self._peek() in (0x2C, 0x5D, None):
                return
        self._resync(self._pos)

    def _resync(self, start: int) -> None:
        """Move to the next `,` `{` or `]`, the likely start of the next element."""
        searched = start - self._pos
        while True:
            m = _RESYNC.search(self._buf, self._pos + searched)
            if m is not None:
                self._pos = m.start() if m.group() == b"]" else m.end()
                return
            searched = max(0, len(self._buf) - self._pos - 64)
            if not self._more():
                self._pos = len(self._buf)
                return
