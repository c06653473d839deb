"""Streaming structure of a Chrome trace file: top-level keys and batches of decoded events.

A Chrome / Kineto trace is one JSON document, `{"traceEvents": [...], ...}` or a bare `[...]`,
often over a gigabyte. Instead of parsing it whole, `EventScanner` walks the outer object itself and
cuts the events array into windows of a few megabytes at candidate event boundaries (`}` `,` `{`),
each decoded by msgspec in one call into typed `Event` structs. A candidate boundary that is really
inside a string or nested value makes the window fail to decode, so every accepted batch is exact.

Real files are damaged in predictable ways (cut mid-event, bare `N/A` / `NaN`, invalid UTF-8, raw
control characters, stray text between events). A failing window is first repaired in bulk
when the damage is of a known kind, then narrowed down with the decoder's error offset; only the
offending event goes through the slow, string-aware path, and what cannot be read is counted, never
fatal. Times, ids and args stay as `msgspec.Raw` so their exact text survives until the column stage.
"""

from __future__ import annotations

import collections
import queue
import re
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

# Window of event text decoded in one msgspec call: large enough to amortize per-call costs, small
# enough that the window and its decoded objects stay in cache while the columns are pulled out
# (1 MB measured ~25% less CPU than 8 MB on the benchmark trace).
WINDOW_BYTES = 1 << 20
MIN_WINDOW_BYTES = 4096
READ_BLOCK_BYTES = 8 << 20
# Compressed bytes inflated per zlib call: damaged data loses at most this much before it.
INFLATE_STEP_BYTES = 64 << 10
# A single damaged event is scanned token by token; past this size it is treated as garbage.
MAX_EVENT_BYTES = 64 << 20
# Top-level values (other than traceEvents) bigger than this are not kept in the trace metadata.
MAX_METADATA_VALUE_BYTES = 1 << 20
# Events decoded on the slow path are handed on in groups, not one batch per event.
SLOW_FLUSH_EVENTS = 4096

RAW_EMPTY = msgspec.Raw(b"")


class Event(msgspec.Struct, gc=False):
    """One trace event as decoded from JSON; numbers and args kept as their raw text."""

    ph: str | None = None
    name: str | None = None
    cat: str | None = None
    pid: int | float | str | None = None
    tid: int | float | str | None = None
    ts: msgspec.Raw = RAW_EMPTY
    dur: msgspec.Raw = RAW_EMPTY
    id: msgspec.Raw = RAW_EMPTY
    id2: msgspec.Raw = RAW_EMPTY
    bp: str | None = None
    s: str | None = None
    args: msgspec.Raw = RAW_EMPTY
    bind_id: msgspec.Raw = RAW_EMPTY
    flow_in: bool = False
    flow_out: bool = False


_BATCH_DECODER = msgspec.json.Decoder(list[Event])
_EVENT_DECODER = msgspec.json.Decoder(Event)
_RAW_LIST_DECODER = msgspec.json.Decoder(list[msgspec.Raw])
_ANY_DECODER = msgspec.json.Decoder()

_WS = frozenset(b" \t\r\n")
# End of one event followed by the start of the next, or by the end of the array.
EVENT_BOUNDARY = re.compile(rb"\}[ \t\r\n]*(?:,[ \t\r\n]*\{|\])")
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_STRING_RE = re.compile(_STRING)
# Tokens that matter for finding where a JSON value ends: whole strings, a lone quote (an
# unterminated string), and brackets.
_TOKEN = re.compile(_STRING + rb'|"|[\[\]{}]')
_BARE_LITERAL = rb"(?<![\w.\"])(?:N/A|-?NaN|-?nan|-?Infinity|-?inf)(?![\w.\"])"
_STRING_OR_BARE = re.compile(_STRING + rb"|" + _BARE_LITERAL)
# Bulk repair of a window: bare literals in value position only (after `:`, `,` or `[`).
_BARE_IN_VALUE = re.compile(rb"(?<=[:,\[])([ \t\r\n]*)(N/A|-?NaN|-?nan|-?Infinity|-?inf)(?=[ \t\r\n]*[,}\]])")
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")
_REPLACEMENT = "\ufffd".encode()


class Damage:
    """What the scanner had to skip or repair; the reader turns it into warnings and skip counts."""

    def __init__(self) -> None:
        self.skipped: collections.Counter[str] = collections.Counter()
        self.repaired: collections.Counter[str] = collections.Counter()
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def merge(self, other: Damage) -> None:
        self.skipped.update(other.skipped)
        self.repaired.update(other.repaired)
        for w in other.warnings:
            self.warn(w)


# -- byte sources -------------------------------------------------------------------------------


class BlockReader:
    """Decompressed blocks of a file, produced by a background thread.

    File reads and zlib both release the GIL, so reading and inflating the next block overlaps
    with decoding the current one on the other core. `raw_bytes_read` counts source (compressed)
    bytes for progress reporting.
    """

    def __init__(self, fileobj: Any, start: int = 0, gzip: bool = False) -> None:
        self._file = fileobj
        self._start = start
        self._gzip = gzip
        self.raw_bytes_read = 0
        self.truncated_stream = False
        self.corrupt_stream: str | None = None
        self._inflater: Any = None
        self._fed = False  # the current gzip member has received input
        self._queue: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=3)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="profscope-chrome-read", daemon=True)
        self._thread.start()

    def _blocks(self) -> Iterator[bytes]:
        if self._start:
            self._file.seek(self._start)
        while not self._stop.is_set():
            block = self._file.read(READ_BLOCK_BYTES)
            if not block:
                break
            self.raw_bytes_read += len(block)
            if not self._gzip:
                yield block
                continue
            yield from self._inflate(block)
            if self.corrupt_stream:
                return
        self._finish_inflate()

    def _inflate(self, block: bytes) -> Iterator[bytes]:
        """Inflate one read block in small steps, so damaged data loses little of what precedes it."""
        if self._inflater is None:
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)
        out: list[bytes] = []
        size = 0
        view = memoryview(block)
        pos = 0
        while pos < len(view):
            piece = view[pos : pos + INFLATE_STEP_BYTES]
            pos += len(piece)
            self._fed = True
            try:
                data = self._inflater.decompress(piece)
            except zlib.error as exc:
                self.corrupt_stream = (
                    f"{exc} (after about {self.raw_bytes_read - len(view) + pos} compressed bytes)"
                )
                break
            out.append(data)
            size += len(data)
            if self._inflater.eof:
                # Concatenated gzip members: what follows starts a new stream (or is padding).
                rest = self._inflater.unused_data + bytes(view[pos:])
                self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)
                self._fed = False
                view, pos = memoryview(rest if rest.strip(b"\x00") else b""), 0
            if size >= READ_BLOCK_BYTES:
                yield b"".join(out)
                out, size = [], 0
        if out:
            yield b"".join(out)

    def _finish_inflate(self) -> None:
        """At the end of the input: a gzip member that did not reach its end was cut off."""
        if self._gzip and self._inflater is not None and self._fed and not self._inflater.eof:
            self.truncated_stream = True

    def _run(self) -> None:
        try:
            for block in self._blocks():
                while not self._stop.is_set():
                    try:
                        self._queue.put(block, timeout=0.1)
                        break
                    except queue.Full:
                        continue
            self._put_final(None)
        except BaseException as exc:  # handed to the consumer thread, which re-raises it
            self._put_final(exc)

    def _put_final(self, item: BaseException | None) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def next_block(self) -> bytes | None:
        """The next block, or None at the end of the input."""
        item = self._queue.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


# -- repairs ------------------------------------------------------------------------------------


def _escape_string_token(token: bytes) -> bytes:
    """A JSON string token with raw control characters escaped."""
    body = token[1:-1]
    body = body.replace(b"\n", b"\\n").replace(b"\r", b"\\r").replace(b"\t", b"\\t")
    body = _CONTROL.sub(lambda m: b"\\u%04x" % m.group()[0], body)
    return b'"' + body + b'"'


def repair_event_text(text: bytes, damage: Damage) -> bytes:
    """String-aware repair of one event: invalid UTF-8, control characters, bare N/A / NaN."""
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        fixed = text.decode("utf-8", "replace").encode("utf-8")
        damage.repaired["invalid UTF-8 bytes replaced by U+FFFD"] += fixed.count(_REPLACEMENT) - text.count(
            _REPLACEMENT
        )
        text = fixed

    def fix(m: re.Match[bytes]) -> bytes:
        token = m.group()
        if token[:1] == b'"':
            if _CONTROL.search(token) or b"\n" in token or b"\r" in token or b"\t" in token:
                damage.repaired["raw control characters escaped in strings"] += 1
                return _escape_string_token(token)
            return token
        damage.repaired[f"bare {token.decode()} values kept as strings"] += 1
        return b'"' + token + b'"'

    return _STRING_OR_BARE.sub(fix, text)


def _repair_window(window: bytes, error: str) -> tuple[bytes, collections.Counter[str]] | None:
    """Bulk repair of a whole window for damage that needs no string awareness, with what it
    repaired; None if no such repair applies."""
    counts: collections.Counter[str] = collections.Counter()
    if "UTF-8" in error:
        fixed = window.decode("utf-8", "replace").encode("utf-8")
        counts["invalid UTF-8 bytes replaced by U+FFFD"] = fixed.count(_REPLACEMENT) - window.count(
            _REPLACEMENT
        )
        return fixed, counts
    fixed, count = _BARE_IN_VALUE.subn(rb'\1"\2"', window)
    if not count:
        return None
    for m in _BARE_IN_VALUE.finditer(window):
        counts[f"bare {m.group(2).decode()} values kept as strings"] += 1
    return fixed, counts


def _coerce_event(obj: Any, damage: Damage) -> Event | None:
    """Build an Event from a generic JSON value whose field types are off (numbers as names, …)."""
    if not isinstance(obj, dict):
        damage.skipped["array element is not an event object"] += 1
        return None

    def text(v: Any) -> str | None:
        if v is None or isinstance(v, str):
            return v
        if isinstance(v, (int, float, bool)):
            return str(v)
        return msgspec.json.encode(v).decode()

    def ident(v: Any) -> int | float | str | None:
        if isinstance(v, bool):
            return int(v)
        if v is None or isinstance(v, (int, float, str)):
            return v
        return text(v)

    def raw(key: str) -> msgspec.Raw:
        return msgspec.Raw(msgspec.json.encode(obj[key])) if key in obj else RAW_EMPTY

    damage.repaired["events with fields of unexpected type (coerced)"] += 1
    return Event(
        ph=text(obj.get("ph")),
        name=text(obj.get("name")),
        cat=text(obj.get("cat")),
        pid=ident(obj.get("pid")),
        tid=ident(obj.get("tid")),
        ts=raw("ts"),
        dur=raw("dur"),
        id=raw("id"),
        id2=raw("id2"),
        bp=text(obj.get("bp")),
        s=text(obj.get("s")),
        args=raw("args"),
        bind_id=raw("bind_id"),
        flow_in=bool(obj.get("flow_in")),
        flow_out=bool(obj.get("flow_out")),
    )


def decode_event_text(text: bytes, damage: Damage) -> Event | None:
    """Decode one event's text, repairing it if needed; None (counted as skipped) if impossible."""
    for attempt in range(2):
        try:
            return _EVENT_DECODER.decode(text)
        except msgspec.ValidationError:
            try:
                return _coerce_event(_ANY_DECODER.decode(text), damage)
            except msgspec.DecodeError:
                pass
        except msgspec.DecodeError:
            pass
        if attempt == 0:
            text = repair_event_text(text, damage)
    damage.skipped["malformed event JSON"] += 1
    return None


def decode_value_text(text: bytes, damage: Damage) -> Any:
    """Decode a top-level metadata value, repairing it like an event if needed."""
    try:
        return _ANY_DECODER.decode(text)
    except msgspec.DecodeError:
        return _ANY_DECODER.decode(repair_event_text(text, damage))


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
                repaired = None if repairs is not None else _repair_window(window, message)
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
