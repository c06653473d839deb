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


_EVENT_DECODER = msgspec.json.Decoder(Event)
_ANY_DECODER = msgspec.json.Decoder()

# A whole JSON string token (the scanner finds value ends with it too).
JSON_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_BARE_LITERAL = rb"(?<![\w.\"])(?:N/A|-?NaN|-?nan|-?Infinity|-?inf)(?![\w.\"])"
_STRING_OR_BARE = re.compile(JSON_STRING + rb"|" + _BARE_LITERAL)
# Bulk repair of a window: bare literals in value position only (after `:`, `,` or `[`).
_BARE_IN_VALUE = re.compile(rb"(?<=[:,\[])([ \t\r\n]*)(N/A|-?NaN|-?nan|-?Infinity|-?inf)(?=[ \t\r\n]*[,}\]])")
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_ANY_CONTROL = re.compile(rb"[\x00-\x1f]")
_BARE_ANYWHERE = re.compile(_BARE_LITERAL)
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

    if not _ANY_CONTROL.search(text) and not _BARE_ANYWHERE.search(text):
        return text  # nothing to repair: skip the per-string pass (seconds on a big event)
    return _STRING_OR_BARE.sub(fix, text)


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
        suspects.update(np.unique(np.searchsorted(offsets, high, side="right") - 1).tolist())
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
