"""Whole-trace questions about one host's trace: one event's details, search, range summaries.

All functions work on host-local indices and picoseconds; `timeline.py` maps them to the session
timeline. Search covers the *whole* trace (XProf's trace viewer only searches what is loaded):
names through the string table, argument values through one scan of the args blob that folds
ASCII case as it compares (no lowercased copy is made or stored).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from profscope.engine.lod.index import LodIndex, searchsorted_through
from profscope.engine.search_pool import checkpoint
from profscope.model import args as model_args
from profscope.model.columns import Trace

# Bytes after a hit in which the closing quote of a JSON key must appear: keys are short.
KEY_LOOKAHEAD = 64
# Bytes of args text scanned per step of a search, and events per step of the name lookup:
# they bound the temporary arrays (a one-letter query hits about every tenth byte), and a search
# checks for cancellation and lets other requests' threads run between two steps (`checkpoint`).
SCAN_CHUNK = 1 << 20
NAME_CHUNK = 1 << 20
_QUOTE, _BACKSLASH, _COLON, _SPACE = 34, 92, 58, 32
# A needle with one of these can reach across the pieces of a typed record's JSON.
_JSON_PUNCTUATION = frozenset(b'"\\:,{}')
# Bytes of an argument value an `arg:` filter reads: longer values are not compared.
ARG_VALUE_MAX = 512
# `key:value` in an `arg` parameter; the key is an argument's name as the trace writes it.
_ARG_FILTER = re.compile(r"^([^\s:\"]+):(\S.*)$")


@dataclass(frozen=True)
class ArgFilter:
    """Events with an argument `key` whose value matches `value`: the whole value, ASCII case
    folded, `*` and `?` as wildcards (`stream:7`, `kernel_details:*grid:1024*`)."""

    key: str
    value: str


def parse_arg_filters(text: str) -> list[ArgFilter]:
    """Whitespace-separated `key:value` items (ValueError naming the one that is not)."""
    out = []
    for item in text.split():
        found = _ARG_FILTER.match(item)
        if not found:
            raise ValueError(f"argument filter {item!r} is not key:value")
        out.append(ArgFilter(found.group(1), found.group(2)))
    return out


def _windows(trace: Trace, step: int) -> Iterator[model_args.Window]:
    """The trace's args as JSON, whole records of about `step` bytes a window, in record order."""
    return model_args.windows(trace, step)


def parse_args(raw: bytes) -> tuple[dict[str, Any], str | None]:
    """Args as a dict, or (`{}`, reason) when the stored text is not a JSON object or is nested
    deeper than MAX_ARGS_DEPTH (the answer's encoder recurses too, from a deeper stack)."""
    if not raw:
        return {}, None
    try:
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            try:
                value = json.loads(raw.decode("utf-8", errors="replace"))  # tolerates NaN / Infinity
            except ValueError:
                return {}, f"args are not valid JSON: {raw[:200].decode('utf-8', errors='replace')!r}"
    except RecursionError:
        value = _TOO_DEEP
    if value is _TOO_DEEP or _deeper_than(value, MAX_ARGS_DEPTH):
        return {}, f"args are nested deeper than {MAX_ARGS_DEPTH} levels; not shown"
    if not isinstance(value, dict):
        return {"value": value}, None
    return value, None


# Levels of nested objects and lists an event's args may have to be shown.
MAX_ARGS_DEPTH = 64
_TOO_DEEP = object()


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether some value inside `value` sits in more than `limit` nested lists / dicts (walked
    level by level, without recursion)."""
    level: list[Any] = [value]
    for _ in range(limit + 1):
        level = [
            c
            for v in level
            if isinstance(v, (dict, list))
            for c in (v.values() if isinstance(v, dict) else v)
        ]
        if not level:
            return False
    return True


def event_details(trace: Trace, index: LodIndex, i: int) -> dict[str, Any]:
    """Everything about event `i`: times in host-local ps, flows with their linked events."""
    if not 0 <= i < trace.num_events:
        raise IndexError(f"event {i} out of range (trace has {trace.num_events} events)")
    track = int(trace.ev_track[i])
    args, args_error = parse_args(trace.args_json(i))
    details: dict[str, Any] = {
        "index": i,
        "name": trace.strings[int(trace.ev_name[i])],
        "category": trace.strings[int(trace.ev_cat[i])],
        "track": track,
        "section": trace.tracks[track].section,
        "start_ps": int(trace.ev_start_ps[i]),
        "dur_ps": int(trace.ev_dur_ps[i]),
        "self_ps": int(index.self_ps[i]),
        "depth": int(trace.ev_depth[i]),
        "args": args,
        "flows_out": _linked(trace, index.flow_by_src, trace.flow_src, trace.flow_dst, i),
        "flows_in": _linked(trace, index.flow_by_dst, trace.flow_dst, trace.flow_src, i),
    }
    if args_error:
        details["args_error"] = args_error
    return details


def _linked(
    trace: Trace, by: np.ndarray, this_end: np.ndarray, other_end: np.ndarray, i: int
) -> list[dict[str, Any]]:
    lo = int(searchsorted_through(this_end, by, i, "left"))
    hi = int(searchsorted_through(this_end, by, i, "right"))
    out = []
    for f in np.asarray(by)[lo:hi].tolist():
        j = int(other_end[f])
        out.append(
            {
                "index": j,
                "name": trace.strings[int(trace.ev_name[j])],
                "flow": trace.strings[int(trace.flow_name[f])],
                "start_ps": int(trace.ev_start_ps[j]),
                "dur_ps": int(trace.ev_dur_ps[j]),
                "track": int(trace.ev_track[j]),
            }
        )
    return out


def check_regex(text: str) -> re.Pattern[str]:
    """`text` compiled as a case-folded regular expression (ValueError saying what is wrong)."""
    try:
        return re.compile(text.strip(), re.IGNORECASE)
    except re.error as e:
        raise ValueError(f"invalid regular expression {text.strip()!r}: {e}") from e


class Searcher:
    """Case-insensitive substring search over one trace's names and argument values, or a regular
    expression over names, narrowed by argument filters (`ArgFilter`).

    Lowercased names are computed on first use and kept; argument values are compared with ASCII
    case folded on the fly (see `_mark_arg_hits`).
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self._names_lower: list[str] | None = None

    def matches(self, query: str, regex: bool = False, args: Sequence[ArgFilter] = ()) -> np.ndarray:
        """Sorted indices of all events whose name or any argument value contains `query`
        (surrounding whitespace ignored: it would only match JSON layout), or with `regex` whose
        name `query` matches (Python syntax, case folded, anywhere in the name), and that pass
        every filter of `args`; with no query, those passing the filters."""
        return np.flatnonzero(self.mask(query, regex, args))

    def mask(self, query: str, regex: bool = False, args: Sequence[ArgFilter] = ()) -> np.ndarray:
        """Per event, whether it matches (see `matches`): one byte per event, the only array of
        the trace's size a search makes; names and args are looked at in chunks. An invalid
        regular expression raises ValueError."""
        q = query.strip()
        hit = np.zeros(self.trace.num_events, dtype=bool)
        if regex and q:
            pattern = check_regex(q)
            strings = self.trace.strings
            self._mark_names(
                np.fromiter((pattern.search(s) is not None for s in strings), dtype=bool, count=len(strings)),
                hit,
            )
        elif q:
            lowered = q.lower()
            self._mark_name_hits(lowered, hit)
            self._mark_arg_hits(lowered, hit)
        elif args:
            hit[:] = True
        for f in args:
            if hit.any():
                self._keep_arg_matches(f, hit)
        return hit

    def _mark_names(self, table: np.ndarray, hit: np.ndarray) -> None:
        """Marks events whose name is wanted: `table` says, per string of the trace, whether it is."""
        if not table.any():
            return
        names = self.trace.ev_name
        for lo in range(0, hit.shape[0], NAME_CHUNK):
            checkpoint()
            np.take(table, np.asarray(names[lo : lo + NAME_CHUNK]), out=hit[lo : lo + NAME_CHUNK])

    def _keep_arg_matches(self, f: ArgFilter, hit: np.ndarray) -> None:
        """Keeps in `hit` the events with argument `f.key` matching `f.value`: each `"key":` of the
        blob found by a regular expression, its value (a JSON string or a bare scalar, up to
        ARG_VALUE_MAX bytes) compared only for events still in `hit`."""
        key = re.escape(json.dumps(f.key)[1:-1].encode("utf-8"))
        # Not preceded by a backslash: a quote escaped inside a string value opens no key.
        found = re.compile(
            rb'(?<!\\)"'
            + key
            + rb'"\s*:\s*("(?:[^"\\]|\\.){0,%d}"|[^,}\]\s]{1,%d})' % (ARG_VALUE_MAX, ARG_VALUE_MAX)
        )
        wanted = re.compile(fnmatch.translate(f.value), re.IGNORECASE | re.DOTALL)
        keep = np.zeros_like(hit)
        for window in _windows(self.trace, SCAN_CHUNK):
            checkpoint()
            view = window.text
            spans = [(m.start(), m.group(1)) for m in found.finditer(memoryview(view))]
            if not spans:
                continue
            at = np.fromiter((start for start, _ in spans), dtype=np.int64, count=len(spans))
            owner = np.searchsorted(window.offsets, at, side="right") - 1
            events = window.events[owner]
            for (_, raw), event in zip(spans, events.tolist()):
                if hit[event] and not keep[event] and wanted.match(_scalar_text(raw)):
                    keep[event] = True
        np.logical_and(hit, keep, out=hit)

    def _mark_name_hits(self, q: str, hit: np.ndarray) -> None:
        if self._names_lower is None:
            self._names_lower = [s.lower() for s in self.trace.strings]
        self._mark_names(
            np.fromiter((q in s for s in self._names_lower), dtype=bool, count=len(self._names_lower)), hit
        )

    def _mark_arg_hits(self, q: str, hit: np.ndarray) -> None:
        """Mark events with `q` in an argument value: hits in the args JSON minus those inside a
        JSON key, mapped from the args record that holds them to its event (`_record_hits`).

        Typed records (XPlane) are searched without writing their JSON when `q` cannot reach
        across the pieces the JSON is made of (`_typed_arg_hits`), else in their rendered JSON.
        """
        needle = np.frombuffer(q.encode("utf-8"), dtype=np.uint8)
        if model_args.typed(self.trace) and self._typed_arg_hits(needle, hit):
            return
        for window in _windows(self.trace, SCAN_CHUNK):
            checkpoint()
            # Events already matched (by name, or an earlier hit) need no key check.
            found = _record_hits(window.text, window.offsets, needle, hit[window.events])
            hit[window.events[found]] = True

    def _typed_arg_hits(self, needle: np.ndarray, hit: np.ndarray) -> bool:
        """Mark events whose typed args hold `needle` in a value, as `_mark_arg_hits` would in
        their JSON; False (nothing marked) where that needs the JSON itself.

        A typed record's JSON is its opening fragment (`{"k":v,`), then per stat a key fragment
        (`"k":`) and a value (a fragment `"text",` / `null,`, or a number's text and a comma), the
        last comma made `}`. A `needle` without `"\\:,{}` lies inside one piece, and whether a hit
        is inside a key is decided inside the piece: the next quote after a hit in a number or
        null, or at the end of a prefix, opens the next key, which counts as a value hit unless
        that key starts with ":" or " :" (then the JSON is searched). So each fragment is scanned
        once (with a quote after it) and numbers are matched by their text
        (`model.args.TypedWindow.number_hits`).
        """
        chars = set(needle.tobytes())
        if chars & _JSON_PUNCTUATION:
            return False
        frag_off, frag_blob = model_args.fragments(self.trace)
        if _opens_odd_key(frag_off, frag_blob):
            return False
        frag_len = np.diff(frag_off)
        count = frag_len.shape[0]
        # Each fragment followed by a quote: a lookahead that leaves a fragment finds no key.
        text = np.full(frag_blob.shape[0] + count, _QUOTE, dtype=np.uint8)
        text[np.arange(frag_blob.shape[0]) + np.repeat(np.arange(count), frag_len)] = frag_blob
        bounds = np.append(frag_off[:-1] + np.arange(count), text.shape[0])
        frag_hit = _record_hits(text, bounds, needle, np.zeros(count, dtype=bool))
        for window in model_args.typed_windows(self.trace, SCAN_CHUNK):
            checkpoint()
            r = window.records
            found = r.typed & frag_hit[np.maximum(r.opening, 0)]
            values = window.value_fragments()
            row = frag_hit[r.key] | ((values >= 0) & frag_hit[np.maximum(values, 0)])
            row |= window.number_hits(needle.tobytes())
            found[r.owner[row]] = True
            raw = np.flatnonzero(r.raw & ~found)
            if raw.shape[0]:
                at, joined = window.json_texts(raw)
                found[raw[_record_hits(joined, at, needle, np.zeros(raw.shape[0], dtype=bool))]] = True
            hit[window.events[found]] = True
        return True


def _opens_odd_key(frag_off: np.ndarray, frag_blob: np.ndarray) -> bool:
    """Whether a fragment may start a key with ":" or " :" (a `"k":` key or a `{"k":…` prefix;
    a string value that starts so counts too): the one case where the next key decides whether
    a hit before it is inside a key."""
    padded = np.concatenate((frag_blob, np.zeros(3, dtype=np.uint8)))
    first = frag_off[:-1]
    at = first + (padded[first] == ord("{"))
    c1, c2 = padded[at + 1], padded[at + 2]
    return bool(np.any((padded[at] == _QUOTE) & ((c1 == _COLON) | ((c1 == _SPACE) & (c2 == _COLON)))))


def _record_hits(view: np.ndarray, bounds: np.ndarray, needle: np.ndarray, done: np.ndarray) -> np.ndarray:
    """Per record (record k is view[bounds[k]:bounds[k+1]]), whether it holds `needle` outside a
    JSON key; records already `done` are not looked at.

    `needle` is lowercase, so ASCII folding needs no lowered copy of the text: a byte matches a
    letter a-z of `needle` when it equals it once bit 0x20 is set (that maps exactly 'A'-'Z' onto
    'a'-'z'); every other byte of `needle` (UTF-8 included) must be equal.
    """
    found = np.zeros(bounds.shape[0] - 1, dtype=bool)
    fold = ((needle >= ord("a")) & (needle <= ord("z"))).tolist()
    m = needle.shape[0]
    limit = view.shape[0] - m + 1
    if limit <= 0:
        return found
    head = view[:limit] | np.uint8(0x20) if fold[0] else view[:limit]
    pos = np.flatnonzero(head == needle[0])
    del head
    for j in range(1, m):
        got = view[pos + j]
        pos = pos[(got | np.uint8(0x20) if fold[j] else got) == needle[j]]
    if pos.shape[0] == 0:
        return found
    owner = np.searchsorted(bounds, pos, side="right") - 1
    todo = (pos + m <= bounds[owner + 1]) & ~done[owner]
    pos, owner = pos[todo], owner[todo]
    if pos.shape[0]:
        found[owner[~_inside_key(view, pos + m)]] = True
    return found


def _scalar_text(raw: bytes) -> str:
    """An argument value's text as the filter compares it: a JSON string unquoted, else as written."""
    if raw.startswith(b'"'):
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw[1:-1].decode("utf-8", errors="replace")
        return value if isinstance(value, str) else str(value)
    return raw.decode("utf-8", errors="replace")


def _inside_key(view: np.ndarray, after: np.ndarray) -> np.ndarray:
    """For hits ending at `after` (sorted), True when the next unescaped quote, within
    KEY_LOOKAHEAD bytes, closes a key (`"…":` or `"…" :`)."""
    n = view.shape[0]
    first, has = (_next_quotes_near if after.shape[0] * KEY_LOOKAHEAD < n else _next_quotes_scan)(view, after)
    c1 = view[np.minimum(first + 1, n - 1)]
    c2 = view[np.minimum(first + 2, n - 1)]
    return has & ((c1 == _COLON) | ((c1 == _SPACE) & (c2 == _COLON)))


def _next_quotes_scan(view: np.ndarray, after: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position, found) of the first unescaped quote at or after each of `after` and within
    KEY_LOOKAHEAD bytes, from one pass over the window's quotes: for many hits."""
    n = view.shape[0]
    quotes = np.flatnonzero(view == _QUOTE)
    quotes = quotes[(quotes == 0) | (view[np.maximum(quotes - 1, 0)] != _BACKSLASH)]
    if quotes.shape[0] == 0:
        return np.zeros(after.shape[0], np.int64), np.zeros(after.shape[0], dtype=bool)
    k = np.searchsorted(quotes, after, side="left")
    first = quotes[np.minimum(k, quotes.shape[0] - 1)]
    return first, (k < quotes.shape[0]) & (first < np.minimum(after + KEY_LOOKAHEAD, n))


def _next_quotes_near(view: np.ndarray, after: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same from the KEY_LOOKAHEAD bytes after each hit only: for few hits, where a pass over
    the whole window (1 MB per chunk with a hit) would cost most of the search."""
    n = view.shape[0]
    at = after[:, None] + np.arange(KEY_LOOKAHEAD)
    idx = np.minimum(at, n - 1)
    quote = (view[idx] == _QUOTE) & (at < n) & ((idx == 0) | (view[np.maximum(idx - 1, 0)] != _BACKSLASH))
    first = idx[np.arange(after.shape[0]), quote.argmax(axis=1)] if after.shape[0] else np.zeros(0, np.int64)
    return first, quote.any(axis=1)


def range_events(
    trace: Trace, index: LodIndex, tracks: list[int] | None, lo_ps: int, hi_ps: int
) -> np.ndarray:
    """Indices of events on `tracks` (all when None) in a range, sorted: slices overlapping
    [lo_ps, hi_ps), instants within [lo_ps, hi_ps] (so the whole span holds every event)."""
    start = trace.ev_start_ps
    dur = trace.ev_dur_ps
    parts = []
    for t in range(len(trace.tracks)) if tracks is None else tracks:
        if not 0 <= t < len(trace.tracks):
            continue
        t_lo, t_hi = int(index.track_off[t]), int(index.track_off[t + 1])
        if t_lo == t_hi:
            continue
        seg = start[t_lo:t_hi]
        a = t_lo + int(np.searchsorted(seg, lo_ps - int(index.track_max_dur[t]), side="left"))
        b = t_lo + int(np.searchsorted(seg, hi_ps, side="right"))
        s, d = start[a:b], dur[a:b]
        keep = np.where(d > 0, (s < hi_ps) & (s + d > lo_ps), s >= lo_ps)
        parts.append(np.flatnonzero(keep) + a)
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def summarize(trace: Trace, index: LodIndex, events: np.ndarray) -> list[dict[str, Any]]:
    """Per event name: count, total, self, average, min and max duration (ps) of `events`."""
    if events.shape[0] == 0:
        return []
    names = np.asarray(trace.ev_name)[events]
    order = np.argsort(names, kind="stable")
    names = names[order]
    dur = np.asarray(trace.ev_dur_ps)[events][order]
    self_ps = np.asarray(index.self_ps)[events][order]
    first = np.flatnonzero(np.concatenate(([True], names[1:] != names[:-1])))
    count = np.diff(np.concatenate((first, [names.shape[0]])))
    total = np.add.reduceat(dur, first)
    self_total = np.add.reduceat(self_ps, first)
    low = np.minimum.reduceat(dur, first)
    high = np.maximum.reduceat(dur, first)
    return [
        {
            "name": trace.strings[int(names[f])],
            "count": int(c),
            "total_ps": int(t),
            "self_ps": int(s),
            "min_ps": int(lo),
            "max_ps": int(hi),
        }
        for f, c, t, s, lo, hi in zip(first.tolist(), count, total, self_total, low, high)
    ]
