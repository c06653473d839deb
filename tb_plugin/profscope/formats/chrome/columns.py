"""Columns from batches of decoded Chrome trace events, with no Python object kept per event.

`ColumnCollector.add(batch)` turns one batch of `Event` structs into numpy columns: the fields are
pulled out with C-level `map` calls, names and track keys are interned through dicts whose default
factory hands out the next id (for events on their thread one lookup of (category, name, pid, tid)
gives all three, `ThreadNames`), and times are parsed exactly from their decimal text in bulk
(`clock.parse_us`). Complete events and instants (nearly everything in Kineto traces) are
final columns; events that need the whole trace to be resolved (B/E and async pairs, counters,
flow points) are kept as their own compact columns until the reader assembles the trace, and what
metadata events say is kept as it comes (`meta`). `flush` writes the columns gathered so
far to a temporary file as one chunk (`chrome.spill`), so a collector holds at most one chunk
however big the file. A collector is picklable (without its columns' file), so a second process
can fill one for the second half of a big file.
"""

from __future__ import annotations

import collections
import functools
import itertools
import operator
import re
from typing import Any

import msgspec
import numpy as np

from profscope.formats.chrome.clock import MAX_US, PS_PER_US, parse_us
from profscope.formats.chrome.decode import Damage, Event, args_blob
from profscope.formats.chrome.meta import ProcessInfo
from profscope.formats.chrome.spill import ChunkRef, SpillFile, TooManyTracks, check_names, time_bounds
from profscope.model import arrays

# Phase codes.
UNKNOWN, COMPLETE, BEGIN, END, INSTANT = 0, 1, 2, 3, 4
ASYNC_BEGIN, ASYNC_END, ASYNC_INSTANT = 5, 6, 7
COUNTER, FLOW_START, FLOW_STEP, FLOW_END, METADATA, UNSUPPORTED = 8, 9, 10, 11, 12, 13


class _PhaseTable(dict):
    def __missing__(self, key: Any) -> int:
        return UNKNOWN


_PHASES = _PhaseTable(
    {
        "X": COMPLETE,
        "B": BEGIN,
        "E": END,
        "i": INSTANT,
        "I": INSTANT,
        "R": INSTANT,
        "b": ASYNC_BEGIN,
        "e": ASYNC_END,
        "n": ASYNC_INSTANT,
        # Legacy (non-nestable) async events map onto the nestable ones.
        "S": ASYNC_BEGIN,
        "F": ASYNC_END,
        "T": ASYNC_INSTANT,
        "p": ASYNC_INSTANT,
        "C": COUNTER,
        "s": FLOW_START,
        "t": FLOW_STEP,
        "f": FLOW_END,
        "M": METADATA,
        # Known phases this viewer does not show: objects, samples, memory dumps, clock sync, marks.
        "O": UNSUPPORTED,
        "N": UNSUPPORTED,
        "D": UNSUPPORTED,
        "P": UNSUPPORTED,
        "v": UNSUPPORTED,
        "V": UNSUPPORTED,
        "c": UNSUPPORTED,
        "(": UNSUPPORTED,
        ")": UNSUPPORTED,
        "=": UNSUPPORTED,
    }
)
# The same table by byte, for batches whose phases are all one ASCII letter (nearly every batch).
_PHASE_BY_BYTE = np.zeros(256, np.int8)
for _letter, _code in _PHASES.items():
    _PHASE_BY_BYTE[ord(_letter)] = _code

# Track key kinds: the first element of every track key tuple. An ASYNC key is the scope (pid,
# category) of async ids; the keys of the ids themselves are `async_keys`'.
THREAD, PROCESS, GLOBAL, ASYNC, COUNTER_TRACK = 0, 1, 2, 3, 4
# Which table a flow v2 binding points into: complete events / instants, or B/E halves.
BIND_EV, BIND_BE = 0, 1

# Ids are kept as fixed-width byte arrays, as wide as the longest id of their chunk: one megabyte-long
# id would make a chunk's column gigabytes. A longer id is not an id (the event is skipped, or its
# link or binding is not made).
MAX_ID_BYTES = 256
_ID_DIGITS = rb"(\d{1,%d})(?!\d)" % MAX_ID_BYTES
_CORRELATION_KEY = b'"correlation":'
_CORRELATION = re.compile(re.escape(_CORRELATION_KEY) + rb"[ \t\r\n]*" + _ID_DIGITS)
# What follows the literal start of a pattern `_matches` is given with its key.
_AFTER_KEY = {_CORRELATION: re.compile(rb"[ \t\r\n]*" + _ID_DIGITS)}
_GROUP_1 = operator.methodcaller("group", 1)
# Blob bytes per occurrence of a key below which `findall` over the blob beats a match after each
# occurrence; between the densities of two Kineto traces' args: the A100 one's correlations every
# 160-200 bytes (`findall` faster), the H100 one's every 820-850 bytes (a match after each faster).
_DENSE_MATCH_BYTES = 400
_EXTERNAL_ID = re.compile(rb'"[Ee]xternal id":[ \t\r\n]*' + _ID_DIGITS)
# Host and device annotations of one range (e.g. ProfilerStep#6) share a Kineto "External id".
ANNOTATION_CATEGORIES = ("user_annotation", "gpu_user_annotation")

_PH = operator.attrgetter("ph")
_NAME = operator.attrgetter("name")
_CAT = operator.attrgetter("cat")
_PID = operator.attrgetter("pid")
_TID = operator.attrgetter("tid")
_TS = operator.attrgetter("ts")
_DUR = operator.attrgetter("dur")
_ARGS = operator.attrgetter("args")
_BIND = operator.attrgetter("bind_id")
_ID = operator.attrgetter("id")
_BP = operator.attrgetter("bp")
_SCOPE = operator.attrgetter("s")
_ENCLOSING = frozenset({"e"})
_THREAD_NAME = operator.attrgetter("cat", "name", "pid", "tid")
# `ThreadNames` kept at most this many tuples (a few thousand in real traces): past it they are
# forgotten and found again. Where most events bring a tuple not seen before (names unique per
# event), one lookup per field is cheaper: after THREAD_NAMES_TRIAL events with more new tuples than
# half of them, the collector looks each field up on its own.
THREAD_NAMES_LIMIT = 1 << 14
THREAD_NAMES_TRIAL = 1 << 16
_EMPTY_EVENT = Event()


class Interner(dict):
    """Value → dense id, assigning the next id on first sight; hits stay in C (`map(d.__getitem__, …)`).

    `alias(value, of)` makes a second value share an existing id (None names mean "").
    """

    def __init__(self, *reserved: Any) -> None:
        super().__init__()
        self._aliases = 0
        for value in reserved:
            self[value]  # noqa: B018 - reserve the low ids

    def __missing__(self, key: Any) -> int:
        value = self[key] = len(self) - self._aliases
        return value

    def alias(self, value: Any, of: Any) -> None:
        if value not in self:
            dict.__setitem__(self, value, self[of])
            self._aliases += 1

    def values_by_id(self) -> list[Any]:
        out: list[Any] = [None] * (len(self) - self._aliases)
        seen = [False] * len(out)
        for value, i in self.items():
            if not seen[i]:
                out[i] = value
                seen[i] = True
        return out


class TextInterner(Interner):
    """An `Interner` of texts that adds up their lengths: what the distinct names hold."""

    def __init__(self, *reserved: Any) -> None:
        self.text_bytes = 0
        super().__init__(*reserved)

    def __missing__(self, key: Any) -> int:
        if isinstance(key, str):
            self.text_bytes += len(key)
        return super().__missing__(key)


class ThreadNames(dict):
    """(category, name, pid, tid) → dense id, the tuples not seen before kept in order in `new`:
    what complete events, instants and flow points on their thread are looked up by, one lookup
    per event instead of one per track key, category and name (`ColumnCollector._thread_ids`)."""

    def __init__(self) -> None:
        super().__init__()
        self.new: list[tuple[Any, Any, Any, Any]] = []

    def __missing__(self, key: tuple[Any, Any, Any, Any]) -> int:
        value = self[key] = len(self)
        self.new.append(key)
        return value


def _id_texts(events: list[Event], joined: bytes) -> list[bytes]:
    """Canonical id text per event (`id`, else `id2`): digits or a string's content, no quotes;
    `joined` is the events' `id` texts joined by NULs."""
    ids = joined.split(b"\x00")
    if len(ids) != len(events) or b'"' in joined or b"" in ids:
        ids = [_id_text(ev.id) if ev.id else _id_text(ev.id2) for ev in events]
    return ids


def _one_width_column(joined: bytes, n: int) -> np.ndarray | None:
    """`n` texts joined by NULs as a byte-string column, when all are of one width (1 to
    `MAX_ID_BYTES`) and hold no NUL; None otherwise. One copy of the joined text, with no Python
    object per text."""
    width = (len(joined) + 1) // n if n else 0
    if width * n != len(joined) + 1 or not 1 < width <= MAX_ID_BYTES + 1:
        return None
    rows = np.frombuffer(joined + b"\x00", np.uint8).reshape(n, width)
    if rows[:, -1].any() or not rows[:, :-1].all():
        return None
    return np.ascontiguousarray(rows[:, :-1]).view(f"S{width - 1}").reshape(n)


def _id_text(raw: Any) -> bytes:
    """Canonical text of a JSON id: digits or the string's content, without quotes."""
    text = bytes(raw).strip()
    if text[:1] == b'"' and text[-1:] == b'"':
        return text[1:-1]
    return text


class ColumnCollector:
    """Accumulates the columns of one contiguous part of a trace file."""

    def __init__(self, key_limit: int | None = None, name_share: int = 1) -> None:
        # At most this many track keys (`chrome.spill.track_key_limit`), else `TooManyTracks`; and
        # names within the rest of that budget, else `TooManyNames` — half of it while the reading
        # process and its helper both hold names (`name_share` 2).
        self.key_limit = key_limit
        self.name_share = name_share
        self.strings = TextInterner("")
        self.strings.alias(None, "")  # a missing name or category reads as ""
        self.keys = Interner()
        self._reset_thread_names()
        self._thread_names_seen = 0  # events looked up through `ThreadNames`, and the tuples new then
        self._thread_names_new = 0
        self.damage = Damage()
        self.phase_counts: collections.Counter[str] = collections.Counter()
        # Complete events and instants.
        self.ev: dict[str, list[np.ndarray]] = {
            k: [] for k in ("track", "us", "frac", "dur", "name", "cat", "alen")
        }
        self.ev_args: list[bytes] = []
        self.num_events = 0
        self.corr_event: list[np.ndarray] = []
        self.corr_value: list[np.ndarray] = []
        self.ext_event: list[np.ndarray] = []
        self.ext_value: list[np.ndarray] = []
        # B/E halves, async b/e/n, counters, flow points.
        self.be: dict[str, list[np.ndarray]] = {
            k: [] for k in ("track", "us", "frac", "name", "cat", "begin", "alen")
        }
        self.be_args: list[bytes] = []
        self.num_be = 0
        self.asy: dict[str, list[np.ndarray]] = {
            k: [] for k in ("track", "us", "frac", "name", "cat", "phase", "alen", "id")
        }
        self.asy_args: list[bytes] = []
        self.num_asy = 0
        self.ctr: dict[str, list[np.ndarray]] = {k: [] for k in ("track", "us", "frac", "value")}
        self.flow: dict[str, list[np.ndarray]] = {
            k: [] for k in ("track", "us", "frac", "phase", "next", "name", "cat", "id")
        }
        # (kind BIND_EV | BIND_BE, index in that table, bind id, flow_in, flow_out) for flow v2 events.
        self.binds: list[tuple[int, int, bytes, bool, bool]] = []
        # What metadata events say about processes and threads.
        self.info = ProcessInfo()
        # -- kept across chunks: what the reader needs before it reads the chunks back.
        self.chunks: list[ChunkRef] = []
        self.rows: collections.Counter[str] = collections.Counter()  # rows per table, all chunks
        # Sorted local track key << 32 | local category of the events seen: an array, not a set of
        # ints (a million threads made that set 66 MB).
        self.device_pairs = np.zeros(0, np.int64)
        # Rough bytes of the columns not yet written out (the reader flushes past a threshold).
        self.pending_bytes = 0
        # Set by the owner: where this part's chunks are (never pickled).
        self.spill: SpillFile | None = None

    # -- entry point -------------------------------------------------------------------------
    def add(self, batch: list[Event]) -> None:
        self._add(batch)
        if self.key_limit is not None:
            if len(self.keys) > self.key_limit:
                raise TooManyTracks(len(self.keys), self.key_limit)
            check_names(
                len(self.keys), len(self.strings), self.strings.text_bytes, self.key_limit, self.name_share
            )

    def _add(self, batch: list[Event]) -> None:
        n = len(batch)
        if n == 0:
            return
        phases = list(map(_PH, batch))
        codes = _phase_codes(phases)
        counts = np.bincount(codes, minlength=UNSUPPORTED + 1)
        simple = (codes == COMPLETE) | (codes == INSTANT)
        if counts[COMPLETE] + counts[INSTANT] == n:
            self._simple(batch, codes)
            self._count_phases(batch, phases, codes, counts)
            return
        groups = (
            (simple, self._simple),
            ((codes == BEGIN) | (codes == END), self._begin_end),
            ((codes >= ASYNC_BEGIN) & (codes <= ASYNC_INSTANT), self._async),
            (codes == COUNTER, self._counters),
            ((codes >= FLOW_START) & (codes <= FLOW_END), self._flows),
            (codes == METADATA, self._metadata),
        )
        for mask, handler in groups:
            sel = np.flatnonzero(mask)
            if sel.shape[0]:
                handler(_take(batch, sel), codes[sel])
        self._count_phases(batch, phases, codes, counts)

    def _count_phases(
        self, batch: list[Event], phases: list[Any], codes: np.ndarray, counts: np.ndarray
    ) -> None:
        if counts[UNKNOWN] or counts[UNSUPPORTED]:
            for i in np.flatnonzero((codes == UNKNOWN) | (codes == UNSUPPORTED)).tolist():
                ph = phases[i]
                if ph is None and batch[i] == _EMPTY_EVENT:
                    continue  # `{}`: TensorFlow / XProf end their events array with one
                if ph is None:
                    self.damage.skipped["event without a phase ('ph')"] += 1
                elif codes[i] == UNSUPPORTED:
                    self.damage.skipped[f"phase {ph!r} events (not shown by this viewer)"] += 1
                else:
                    self.damage.skipped[f"unknown phase {str(ph)[:20]!r}"] += 1
        for code in np.flatnonzero(counts).tolist():
            if code in (UNKNOWN, UNSUPPORTED):
                continue
            if code in _SHARED_CODES:  # several phase letters share this code: count the letters
                self.phase_counts.update(map(phases.__getitem__, np.flatnonzero(codes == code).tolist()))
            else:
                self.phase_counts[_CODE_NAMES[code]] += int(counts[code])

    # -- helpers ------------------------------------------------------------------------------
    def _thread_tracks(self, events: list[Event]) -> np.ndarray:
        keys = zip(itertools.repeat(THREAD), map(_PID, events), map(_TID, events))
        return np.fromiter(map(self.keys.__getitem__, keys), np.int32, len(events))

    def _names(self, events: list[Event], getter: Any) -> np.ndarray:
        return np.fromiter(map(self.strings.__getitem__, map(getter, events)), np.int32, len(events))

    def _reset_thread_names(self) -> None:
        self._thread_names = ThreadNames()
        self._thread_name_ids = np.zeros((3, 0), np.int32)  # track key, category, name per tuple

    def _thread_ids(self, events: list[Event], cats_first: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(track key, category, name) ids of events on their thread, interned as `_thread_tracks`
        and `_names` would (key, then categories before names or after), through one lookup of
        (category, name, pid, tid) per event; the tuples not seen before are interned field by
        field, in the order the events bring them, so every id is the one the fields would get."""
        n = len(events)
        if (
            self._thread_names_seen >= THREAD_NAMES_TRIAL
            and 2 * self._thread_names_new > self._thread_names_seen
        ):
            fields = (_CAT, _NAME) if cats_first else (_NAME, _CAT)
            track = self._thread_tracks(events)
            first, second = (self._names(events, f) for f in fields)
            return (track, first, second) if cats_first else (track, second, first)
        if len(self._thread_names) > THREAD_NAMES_LIMIT:
            self._reset_thread_names()
        names = self._thread_names
        which = np.fromiter(map(names.__getitem__, map(_THREAD_NAME, events)), np.int64, n)
        self._thread_names_seen += n
        if names.new:
            new, strings = names.new, self.strings
            self._thread_names_new += len(new)
            keys = [self.keys[(THREAD, pid, tid)] for _, _, pid, tid in new]
            if cats_first:
                cats = [strings[cat] for cat, _, _, _ in new]
                texts = [strings[name] for _, name, _, _ in new]
            else:
                texts = [strings[name] for _, name, _, _ in new]
                cats = [strings[cat] for cat, _, _, _ in new]
            added = np.array([keys, cats, texts], np.int32).reshape(3, len(new))
            self._thread_name_ids = np.concatenate((self._thread_name_ids, added), axis=1)
            new.clear()
        track, cat, name = self._thread_name_ids[:, which]
        return track, cat, name

    def _with_ids(
        self, events: list[Event], codes: np.ndarray, what: str
    ) -> tuple[list[Event], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The events of `what` that have a valid time and an id (async and flow events pair by
        id), and their ids as a byte-string column."""
        us, frac, keep = self._times(events, what)
        joined = b"\x00".join(map(_ID, events))
        # Ids of one width (Kineto's flow ids: correlation numbers of one digit count), none too
        # long, are cut from their joined text with no Python object per id.
        column = _one_width_column(joined, len(events)) if b'"' not in joined else None
        if column is None:
            texts = _id_texts(events, joined)
            lengths = np.fromiter(map(len, texts), np.int64, len(texts))
            no_id = lengths == 0
            if no_id.any():
                self.damage.skipped[f"{what} without an id"] += int((no_id & keep).sum())
                keep &= ~no_id
            too_long = lengths > MAX_ID_BYTES
            if too_long.any():
                self.damage.skipped[f"{what} with an id of over {MAX_ID_BYTES} bytes"] += int(
                    (too_long & keep).sum()
                )
                keep &= ~too_long
        sel = np.flatnonzero(keep)
        if sel.shape[0] != len(events):
            events, us, frac, codes = _take(events, sel), us[sel], frac[sel], codes[sel]
            if column is None:  # the ids kept alone: one huge id would widen every row
                texts = [texts[i] for i in sel.tolist()]
            else:
                column = column[sel]
        return events, us, frac, codes, np.array(texts, dtype=bytes) if column is None else column

    def _times(self, events: list[Event], what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        us, frac, ok = parse_us(list(map(_TS, events)))
        bad = int((~ok).sum())
        if bad:
            self.damage.skipped[f"{what} without a valid numeric ts"] += bad
        return us, frac, ok

    # -- complete events and instants ---------------------------------------------------------
    def _simple(self, events: list[Event], codes: np.ndarray) -> None:
        us, frac, keep = self._times(events, "events")
        dur = np.zeros(len(events), np.int64)
        complete = codes == COMPLETE
        xi = np.flatnonzero(complete)
        if xi.shape[0]:
            xs = events if xi.shape[0] == len(events) else _take(events, xi)
            dus, dfrac, dok = parse_us(list(map(_DUR, xs)))
            dok &= np.abs(dus) <= MAX_US
            dps = np.where(dok, dus, 0) * PS_PER_US + dfrac
            invalid = ~dok
            negative = dok & (dps < 0)
            if invalid.any():
                self.damage.skipped["X events without a valid numeric dur"] += int((invalid & keep[xi]).sum())
            if negative.any():
                self.damage.skipped["X events with a negative dur"] += int((negative & keep[xi]).sum())
            dur[xi] = dps
            keep[xi] &= dok & ~negative
        if not keep.all():
            sel = np.flatnonzero(keep)
            events = _take(events, sel)
            us, frac, dur, codes = us[sel], frac[sel], dur[sel], codes[sel]
        n = len(events)
        if n == 0:
            return
        instants = np.flatnonzero(codes == INSTANT).tolist()
        scopes = list(map(_SCOPE, map(events.__getitem__, instants)))
        if "g" in scopes or "p" in scopes:  # most instants are on their thread: no key to change
            keys = list(zip(itertools.repeat(THREAD), map(_PID, events), map(_TID, events)))
            for i, scope in zip(instants, scopes):
                if scope == "g":
                    keys[i] = (GLOBAL,)
                elif scope == "p":
                    keys[i] = (PROCESS, events[i].pid)
            track = np.fromiter(map(self.keys.__getitem__, keys), np.int32, n)
            cats, names = self._names(events, _CAT), self._names(events, _NAME)
        else:
            track, cats, names = self._thread_ids(events, cats_first=True)
        args = list(map(_ARGS, events))
        blob, alen = args_blob(args, self.damage)
        base = self.num_events
        self._link_ids(blob, alen, base, _CORRELATION, self.corr_event, self.corr_value, _CORRELATION_KEY)
        wanted = [self.strings[c] for c in ANNOTATION_CATEGORIES if c in self.strings]
        annotated = np.zeros(0, np.int64)
        if wanted:  # at most two categories: comparisons, cheaper than `np.isin` on every batch
            annotated = np.flatnonzero(functools.reduce(np.logical_or, [cats == c for c in wanted]))
        if annotated.shape[0]:
            sub = [events[i].args for i in annotated.tolist()]
            sub_blob, sub_len = b"".join(sub), np.fromiter(map(len, sub), np.int64, len(sub))
            start = len(self.ext_event)
            self._link_ids(sub_blob, sub_len, 0, _EXTERNAL_ID, self.ext_event, self.ext_value)
            for k in range(start, len(self.ext_event)):
                self.ext_event[k] = annotated[self.ext_event[k]] + base
        if any(map(_BIND, events)):
            for i, ev in enumerate(events):
                if ev.bind_id:
                    self._bind(BIND_EV, base + i, ev.bind_id, ev)
        cols = self.ev
        cols["track"].append(track)
        cols["us"].append(us)
        cols["frac"].append(frac.astype(np.int32))
        cols["dur"].append(dur)
        cols["name"].append(names)
        cols["cat"].append(cats)
        cols["alen"].append(alen)
        self.ev_args.append(blob)
        self.num_events += n
        self.pending_bytes += 64 * n + len(blob)  # 40 bytes of columns, links and binds

    def _bind(self, table: int, row: int, raw: Any, ev: Event) -> None:
        """Note the flow v2 binding of event `row` of `table` (`bind_id`), unless its id is too long."""
        ident = _id_text(raw)
        if len(ident) > MAX_ID_BYTES:
            self.damage.skipped[f"flow bindings with an id of over {MAX_ID_BYTES} bytes"] += 1
            return
        self.binds.append((table, row, ident, ev.flow_in, ev.flow_out))

    @staticmethod
    def _link_ids(
        blob: bytes,
        alen: np.ndarray,
        base: int,
        pattern: re.Pattern[bytes],
        events: list,
        values: list,
        key: bytes | None = None,
    ) -> None:
        """(event index, id text) of the first `pattern` match in each event's args; `key` is the
        literal text every match starts with, if there is one (see `_matches`)."""
        starts, found = _matches(blob, pattern, key)
        if not found:
            return
        offsets = np.zeros(alen.shape[0] + 1, np.int64)
        np.cumsum(alen, out=offsets[1:])
        owner = np.searchsorted(offsets, starts, side="right") - 1
        if (owner[1:] > owner[:-1]).all():  # one match per event at most, the usual case
            column = _one_width_column(b"\x00".join(found), len(found))
            events.append(owner + base)
            values.append(np.array(found, dtype=bytes) if column is None else column)
            return
        owner, first = np.unique(owner, return_index=True)
        events.append(owner + base)
        values.append(np.asarray(found, dtype=object)[first].astype(bytes))

    # -- B/E, async, counters, flows, metadata -------------------------------------------------
    def _begin_end(self, events: list[Event], codes: np.ndarray) -> None:
        us, frac, keep = self._times(events, "B/E events")
        if not keep.all():
            sel = np.flatnonzero(keep)
            events, us, frac, codes = _take(events, sel), us[sel], frac[sel], codes[sel]
        if not events:
            return
        blob, alen = args_blob(list(map(_ARGS, events)), self.damage)
        base = self.num_be
        for i, ev in enumerate(events):
            if ev.bind_id:
                self._bind(BIND_BE, base + i, ev.bind_id, ev)
        cols = self.be
        cols["track"].append(self._thread_tracks(events))
        cols["us"].append(us)
        cols["frac"].append(frac.astype(np.int32))
        cols["name"].append(self._names(events, _NAME))
        cols["cat"].append(self._names(events, _CAT))
        cols["begin"].append(codes == BEGIN)
        cols["alen"].append(alen)
        self.be_args.append(blob)
        self.num_be += len(events)
        self.pending_bytes += 40 * len(events) + len(blob)

    def _async(self, events: list[Event], codes: np.ndarray) -> None:
        events, us, frac, codes, ids = self._with_ids(events, codes, "async events")
        if not events:
            return
        # The track key is the scope (pid, category); the id goes in a column of its own, numbered
        # with the other ids by `async_keys` (a key per id here would be a dict entry per
        # request of a serving trace). A missing category (None) is a scope of its own here;
        # `Parts` reads it as "".
        scopes = zip(itertools.repeat(ASYNC), map(_PID, events), map(_CAT, events))
        blob, alen = args_blob(list(map(_ARGS, events)), self.damage)
        cols = self.asy
        cols["track"].append(np.fromiter(map(self.keys.__getitem__, scopes), np.int32, len(events)))
        cols["id"].append(ids)
        cols["us"].append(us)
        cols["frac"].append(frac.astype(np.int32))
        cols["name"].append(self._names(events, _NAME))
        cols["cat"].append(self._names(events, _CAT))
        cols["phase"].append(codes.astype(np.int8))
        cols["alen"].append(alen)
        self.asy_args.append(blob)
        self.num_asy += len(events)
        self.pending_bytes += (40 + cols["id"][-1].dtype.itemsize) * len(events) + len(blob)

    def _counters(self, events: list[Event], codes: np.ndarray) -> None:
        us, frac, keep = self._times(events, "counter events")
        tracks: list[int] = []
        rows: list[int] = []
        values: list[float] = []
        for i in np.flatnonzero(keep).tolist():
            ev = events[i]
            try:
                series = msgspec.json.decode(ev.args) if ev.args else None
            except (msgspec.DecodeError, RecursionError):
                series = None
            if not isinstance(series, dict):
                self.damage.skipped["counter events without an args object of values"] += 1
                continue
            ident = _id_text(ev.id) if ev.id else b""
            for key, value in series.items():
                number = _number(value)
                if number is None:
                    self.damage.skipped["counter values that are not numbers"] += 1
                    continue
                tracks.append(self.keys[(COUNTER_TRACK, ev.pid, ev.name or "", ident, key)])
                rows.append(i)
                values.append(number)
        if not rows:
            return
        sel = np.asarray(rows, np.int64)
        cols = self.ctr
        cols["track"].append(np.asarray(tracks, np.int32))
        cols["us"].append(us[sel])
        cols["frac"].append(frac[sel].astype(np.int32))
        cols["value"].append(np.asarray(values, np.float64))
        self.pending_bytes += 24 * len(rows)

    def _flows(self, events: list[Event], codes: np.ndarray) -> None:
        events, us, frac, codes, ids = self._with_ids(events, codes, "flow events")
        if not events:
            return
        enclosing = np.fromiter(map(_ENCLOSING.__contains__, map(_BP, events)), bool, len(events))
        bind_next = ~enclosing & (codes == FLOW_END)
        cols = self.flow
        track, cats, names = self._thread_ids(events, cats_first=False)
        cols["track"].append(track)
        cols["us"].append(us)
        cols["frac"].append(frac.astype(np.int32))
        cols["phase"].append((codes - FLOW_START).astype(np.int8))
        cols["next"].append(bind_next)
        cols["name"].append(names)
        cols["cat"].append(cats)
        cols["id"].append(ids)
        self.pending_bytes += (32 + cols["id"][-1].dtype.itemsize) * len(events)

    def _metadata(self, events: list[Event], codes: np.ndarray) -> None:
        for ev in events:
            try:
                args = msgspec.json.decode(ev.args) if ev.args else {}
            except (msgspec.DecodeError, RecursionError):
                args = {}
            self.info.add(ev.name or "", ev.pid, ev.tid, args)

    # -- hand-over ----------------------------------------------------------------------------
    def flush(self, spill: SpillFile) -> None:
        """Write the columns gathered since the last flush to `spill` as one chunk, keeping only
        what resolving the whole file needs (row counts, time bounds, device categories, …)."""
        tables: dict[str, dict[str, Any]] = {}
        ref = ChunkRef()
        for table, cols, blobs in (
            ("ev", self.ev, self.ev_args),
            ("be", self.be, self.be_args),
            ("asy", self.asy, self.asy_args),
            ("ctr", self.ctr, None),
            ("flow", self.flow, None),
        ):
            if not cols["us"]:
                continue
            columns: dict[str, Any] = {k: _joined(v) for k, v in cols.items()}
            if blobs is not None:
                columns["args"] = blobs
            n = columns["us"].shape[0]
            ref.rows[table] = n
            ref.base[table] = self.rows[table]
            ref.bounds[table] = time_bounds(columns["us"], columns["frac"])
            tables[table] = columns
            if table == "ev":
                self._note_device_pairs(columns)
            self.rows[table] += n
        for table, events, values in (
            ("corr", self.corr_event, self.corr_value),
            ("ext", self.ext_event, self.ext_value),
        ):
            if events:
                tables[table] = {"event": _joined(events), "value": _joined(values)}
                ref.rows[table] = tables[table]["event"].shape[0]
        if self.binds:
            kind, local, ident, flow_in, flow_out = zip(*self.binds)
            tables["bind"] = {
                "kind": np.asarray(kind, np.int8),
                "local": np.asarray(local, np.int64),
                "id": np.asarray(ident, dtype=object).astype(bytes),
                "in": np.asarray(flow_in, bool),
                "out": np.asarray(flow_out, bool),
            }
            ref.rows["bind"] = len(self.binds)
        if tables:
            spill.write(tables, ref)
            self.chunks.append(ref)
        for cols in (self.ev, self.be, self.asy, self.ctr, self.flow):
            for parts in cols.values():
                parts.clear()
        for parts in (self.ev_args, self.be_args, self.asy_args, self.corr_event, self.corr_value):
            parts.clear()
        self.ext_event.clear()
        self.ext_value.clear()
        self.binds.clear()
        self.pending_bytes = 0

    def _note_device_pairs(self, columns: dict[str, np.ndarray]) -> None:
        pairs = arrays.unique(columns["track"].astype(np.int64) << 32 | columns["cat"].astype(np.int64))
        self.device_pairs = arrays.unique(np.concatenate((self.device_pairs, pairs)))

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["spill"] = None
        # Only a cache of ids the interners hold: the process that receives this adds no events.
        state["_thread_names"] = ThreadNames()
        state["_thread_name_ids"] = np.zeros((3, 0), np.int32)
        return state


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


_SHARED_CODES = frozenset({INSTANT, ASYNC_BEGIN, ASYNC_END, ASYNC_INSTANT})
_CODE_NAMES = {
    COMPLETE: "X",
    BEGIN: "B",
    END: "E",
    COUNTER: "C",
    FLOW_START: "s",
    FLOW_STEP: "t",
    FLOW_END: "f",
    METADATA: "M",
}


def _phase_codes(phases: list[Any]) -> np.ndarray:
    """Phase code of each event's `ph` (UNKNOWN for what is not a known phase letter)."""
    try:
        letters = "".join(phases)
    except TypeError:  # a missing or non-string phase
        letters = ""
    if len(letters) == len(phases) and letters.isascii():
        return _PHASE_BY_BYTE[np.frombuffer(letters.encode("ascii"), np.uint8)]
    return np.fromiter(map(_PHASES.__getitem__, phases), np.int8, len(phases))


def _matches(blob: bytes, pattern: re.Pattern[bytes], key: bytes | None) -> tuple[np.ndarray, list[bytes]]:
    """(start offsets, group 1) of the matches of `pattern` in `blob`.

    With `key`, the literal every match begins with, the blob is split at `key` (one fast search)
    and the groups come from C loops too: where `key` is rare, the rest of the pattern matched at
    the start of each piece after one (`_AFTER_KEY`: no regular expression over the whole blob),
    where it is dense (one per `_DENSE_MATCH_BYTES` or more) `findall`, which makes fewer objects
    per match. When every occurrence of `key` is a match, the starts come from the pieces' lengths
    (else one match object per match, as without `key`)."""
    if key is not None:
        pieces = blob.split(key)
        if len(pieces) == 1:
            return np.zeros(0, np.int64), []
        found: list[bytes] | None = None
        if (len(pieces) - 1) * _DENSE_MATCH_BYTES < len(blob):
            matched = list(map(_AFTER_KEY[pattern].match, itertools.islice(pieces, 1, None)))
            if None not in matched:
                found = list(map(_GROUP_1, matched))
        else:
            found = pattern.findall(blob)
            if len(found) != len(pieces) - 1:
                found = None
        if found is not None:
            lengths = np.fromiter(map(len, pieces[:-1]), np.int64, len(found))
            return np.cumsum(lengths) + np.arange(len(found), dtype=np.int64) * len(key), found
    starts, found = [], []
    for m in pattern.finditer(blob):
        starts.append(m.start())
        found.append(m.group(1))
    return np.asarray(starts, np.int64), found


def _take(events: list[Event], idx: np.ndarray) -> list[Event]:
    getter = events.__getitem__
    return list(map(getter, idx.tolist()))


def _number(value: Any) -> float | None:
    """A counter value as float: numbers, numeric strings and booleans; None otherwise."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if np.isfinite(number) else None
