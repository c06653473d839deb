"""One Chrome trace event decoded from its JSON text, and the repairs damaged text gets.

`Event` is what msgspec decodes each element of the events array into; times, ids and args stay
`msgspec.Raw` so their exact text survives until the column stage. The scanner decodes whole
windows of events at once; the functions here are its slow path for one event (or one top-level
value) that failed, and the repairs real files need: invalid UTF-8, raw control characters in
strings, bare `N/A` / `NaN`, fields of unexpected types, args that are not an object. `Damage`
counts what was repaired or skipped, so the reader can say so.
"""

from __future__ import annotations

import collections
import re
from typing import Any

import msgspec
import numpy as np

from profscope.model import arrays

RAW_EMPTY = msgspec.Raw(b"")


class Event(msgspec.Struct, gc=False):
    """One trace event as decoded from JSON; numbers and args kept as their raw text.

    The fields are in the order Kineto writes its keys (`ph`, `cat`, `name`, `pid`, `tid`, `ts`,
    `dur`, `args`, then a flow's `id` and `bp`): msgspec tries the field after the last one matched
    first, so each key is found at the first try (3% less decoding time on the Kineto traces of
    `benchmarks/make_real_kineto.py`)."""

    ph: str | None = None
    cat: str | None = None
    name: str | None = None
    pid: int | float | str | None = None
    tid: int | float | str | None = None
    ts: msgspec.Raw = RAW_EMPTY
    dur: msgspec.Raw = RAW_EMPTY
    args: msgspec.Raw = RAW_EMPTY
    id: msgspec.Raw = RAW_EMPTY
    bp: str | None = None
    s: str | None = None
    id2: msgspec.Raw = RAW_EMPTY
    bind_id: msgspec.Raw = RAW_EMPTY
    flow_in: bool = False
    flow_out: bool = False


_EVENT_DECODER = msgspec.json.Decoder(Event)
_ANY_DECODER = msgspec.json.Decoder()

# Bare literals JSON has no word for; a candidate is one when no word character, `.` or `"` touches it.
# (No `-?` in the pattern: a leading optional byte makes the scan several times slower.)
_BARE_CANDIDATE = re.compile(rb"N/A|NaN|nan|Infinity|inf")
_WORDLIKE = frozenset(b'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_."')
# Bulk repair of a window: bare literals in value position only, what comes after and (read
# backwards) before one.
_VALUE_AFTER = re.compile(rb"[ \t\r\n]*[,}\]]")
_VALUE_BEFORE_REVERSED = re.compile(rb"[ \t\r\n]*[:,\[]")
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_ANY_CONTROL = re.compile(rb"[\x00-\x1f]")
_REPLACEMENT = "\ufffd".encode()
# The JSON decoder recurses into nested values and stops at Python's recursion limit (about a
# thousand levels, fewer the deeper the caller's stack); an event nested deeper is skipped so.
NESTED_TOO_DEEPLY = "events nested too deeply to decode"


class Damage:
    """What decoding had to skip or repair (scanner and columns alike); the reader turns it into
    warnings and skip counts."""

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


# -- repairs ------------------------------------------------------------------------------------


def _escape_string_token(token: bytes) -> bytes:
    """A JSON string token with raw control characters escaped."""
    body = token[1:-1]
    body = body.replace(b"\n", b"\\n").replace(b"\r", b"\\r").replace(b"\t", b"\\t")
    body = _CONTROL.sub(lambda m: b"\\u%04x" % m.group()[0], body)
    return b'"' + body + b'"'


def repair_event_text(text: bytes, damage: Damage) -> bytes:
    """String-aware repair of one event: invalid UTF-8, control characters, bare N/A / NaN.

    Where strings are comes from the unescaped quotes (numpy over the bytes), so only the strings
    holding a raw control character and the bare literals outside strings are touched, each once:
    a pretty-printed 64 MB element takes about a second, not the 15 s a callback per string token
    took."""
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        fixed = text.decode("utf-8", "replace").encode("utf-8")
        damage.repaired["invalid UTF-8 bytes replaced by U+FFFD"] += fixed.count(_REPLACEMENT) - text.count(
            _REPLACEMENT
        )
        text = fixed
    bare = _bare_literals(text)
    if not bare and not _ANY_CONTROL.search(text):
        return text  # nothing to repair
    data = np.frombuffer(text, np.uint8)
    quotes = _unescaped_quotes(data)
    edits: list[tuple[int, int, bytes]] = []
    controls = np.flatnonzero(data < 0x20)
    if controls.size:
        # A position is inside string k when 2k+1 unescaped quotes lie before it.
        before = np.searchsorted(quotes, controls)
        strings = arrays.unique(before[before % 2 == 1] // 2)
        if strings.size:
            damage.repaired["raw control characters escaped in strings"] += int(strings.size)
        for k in strings.tolist():
            lo = int(quotes[2 * k])
            if 2 * k + 1 < quotes.size:
                hi = int(quotes[2 * k + 1]) + 1
                edits.append((lo, hi, _escape_string_token(text[lo:hi])))
            else:  # a string the text ends inside: escaped, and left open
                edits.append((lo, len(text), _escape_string_token(text[lo:] + b'"')[:-1]))
    if bare:
        starts = np.fromiter((lo for lo, _ in bare), np.int64, len(bare))
        outside = np.searchsorted(quotes, starts) % 2 == 0
        for (lo, hi), keep in zip(bare, outside.tolist(), strict=True):
            if keep:
                token = text[lo:hi]
                damage.repaired[f"bare {token.decode()} values kept as strings"] += 1
                edits.append((lo, hi, b'"' + token + b'"'))
    if not edits:
        return text
    edits.sort()
    pieces, at = [], 0
    for lo, hi, replacement in edits:
        pieces += [text[at:lo], replacement]
        at = hi
    pieces.append(text[at:])
    return b"".join(pieces)


def _bare_literals(text: bytes) -> list[tuple[int, int]]:
    """Spans of the bare literals in `text` (inside strings too; the caller tells them apart)."""
    found = []
    for m in _BARE_CANDIDATE.finditer(text):
        lo, hi = m.span()
        if hi < len(text) and text[hi] in _WORDLIKE:
            continue
        before = text[lo - 1] if lo else None
        if before == 0x2D and text[lo : lo + 3] != b"N/A":
            if lo < 2 or text[lo - 2] not in _WORDLIKE:
                lo -= 1  # `-NaN`, `-inf`: the sign is part of the literal
        elif before is not None and before in _WORDLIKE:
            continue
        found.append((lo, hi))
    return found


def _unescaped_quotes(data: np.ndarray) -> np.ndarray:
    """Positions of the quotes that open or close a string: those not preceded by an odd run of
    backslashes."""
    quotes = np.flatnonzero(data == 0x22)
    after_backslash = np.flatnonzero((data[1:] == 0x22) & (data[:-1] == 0x5C)) + 1
    if not after_backslash.size:
        return quotes
    slashes = np.flatnonzero(data == 0x5C)
    # First backslash of the run each backslash belongs to.
    new_run = np.ones(slashes.size, bool)
    new_run[1:] = slashes[1:] != slashes[:-1] + 1
    run_start = slashes[np.maximum.accumulate(np.where(new_run, np.arange(slashes.size), 0))]
    run_length = after_backslash - run_start[np.searchsorted(slashes, after_backslash - 1)]
    escaped = after_backslash[run_length % 2 == 1]
    return np.setdiff1d(quotes, escaped, assume_unique=True)


def repair_window(window: bytes, error: str) -> tuple[bytes, collections.Counter[str]] | None:
    """Bulk repair of a whole window for damage that needs no string awareness, with what it
    repaired; None if no such repair applies."""
    counts: collections.Counter[str] = collections.Counter()
    if "UTF-8" in error:
        fixed = window.decode("utf-8", "replace").encode("utf-8")
        counts["invalid UTF-8 bytes replaced by U+FFFD"] = fixed.count(_REPLACEMENT) - window.count(
            _REPLACEMENT
        )
        return fixed, counts
    spans = _bare_values(window)
    if not spans:
        return None
    pieces, at = [], 0
    for lo, hi in spans:
        pieces += [window[at:lo], b'"', window[lo:hi], b'"']
        counts[f"bare {window[lo:hi].decode()} values kept as strings"] += 1
        at = hi
    pieces.append(window[at:])
    return b"".join(pieces), counts


def _bare_values(window: bytes) -> list[tuple[int, int]]:
    """Spans of the bare literals in value position (after `:`, `,` or `[` and before `,`, `}` or
    `]`, blanks allowed), strings or not. Found from the literals themselves and checked around
    them: a pattern that starts with its context stops at every comma of the window (seconds on a
    big one)."""
    spans: list[tuple[int, int]] = []
    reverse = b""
    for m in _BARE_CANDIDATE.finditer(window):
        lo, hi = m.span()
        if not _VALUE_AFTER.match(window, hi):
            continue
        if lo and window[lo - 1] == 0x2D and window[lo : lo + 3] != b"N/A":
            lo -= 1
        reverse = reverse or window[::-1]
        if _VALUE_BEFORE_REVERSED.match(reverse, len(window) - lo):
            spans.append((lo, hi))
    return spans


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
    try:
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
    except RecursionError:
        damage.skipped[NESTED_TOO_DEEPLY] += 1
        return None
    damage.skipped["malformed event JSON"] += 1
    return None


def decode_value_text(text: bytes, damage: Damage) -> Any:
    """Decode a top-level metadata value, repairing it like an event if needed (RecursionError
    when it is nested too deeply)."""
    try:
        return _ANY_DECODER.decode(text)
    except msgspec.DecodeError:
        return _ANY_DECODER.decode(repair_event_text(text, damage))


def args_blob(args: list[Any], damage: Damage) -> tuple[bytes, np.ndarray]:
    """(blob, lengths) of valid UTF-8 JSON object texts; `null` → empty, other values wrapped."""
    n = len(args)
    lens = np.fromiter(map(len, args), np.int64, n)
    blob = b"".join(args)
    if n == 0:
        return blob, lens
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    a = np.frombuffer(blob, np.uint8)
    present = lens > 0
    first = np.zeros(n, np.uint8)
    first[present] = a[offsets[:-1][present]]
    suspects = set(np.flatnonzero(present & (first != 0x7B)).tolist())
    if not blob.isascii():
        high = np.flatnonzero(a >= 0x80)
        suspects.update(arrays.unique(np.searchsorted(offsets, high, side="right") - 1).tolist())
    replaced: dict[int, bytes] = {}
    for i in sorted(suspects):
        raw = bytes(args[i])
        text = raw
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace").encode("utf-8")
            damage.repaired["invalid UTF-8 bytes replaced by U+FFFD"] += text.count(_REPLACEMENT) - raw.count(
                _REPLACEMENT
            )
        if text == b"null":
            text = b""
        elif text[:1] != b"{":
            text = b'{"args": ' + text + b"}"
            damage.repaired['args that are not a JSON object, kept as {"args": …}'] += 1
        if text != raw:
            replaced[i] = text
    if replaced:
        args = list(args)
        for i, text in replaced.items():
            args[i] = text
        lens = np.fromiter(map(len, args), np.int64, n)
        blob = b"".join(args)
    return blob, lens
