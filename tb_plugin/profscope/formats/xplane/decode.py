"""XSpace bytes → planes with their metadata, line slots, and numpy columns of events by batch.

This layer knows the XPlane schema (field numbers from tsl/profiler/protobuf/xplane.proto) but
nothing about how the timeline shows it. `index_space` walks the XSpace and its planes without
reading their lines (only where each line's bytes are) and decodes every plane's metadata;
`decode_events` decodes one batch of a line's events, found by `common.wire.walk_line_part`.
Damage is recorded, never raised: `SpaceIndex.damage` says where decoding stopped and the
`skipped` counters count what was dropped, so the reader can load the rest.
"""

from __future__ import annotations

import dataclasses
import struct
from collections import Counter
from typing import Any, Protocol

import numpy as np

from profscope.formats.common import wire
from profscope.formats.xplane import fast
from profscope.formats.xplane.source import BytesSource, Window, fields
from profscope.model.spill import budget as spill_budget

# XStat value kinds: the field number of the oneof member that is set (0 = none).
NO_VALUE, DOUBLE, UINT64, INT64, STR, BYTES, REF = 0, 2, 3, 4, 5, 6, 7
_VALUE_FIELDS = ((DOUBLE, wire.I64), (UINT64, wire.VARINT), (INT64, wire.VARINT), (STR, wire.LEN),
                 (BYTES, wire.LEN), (REF, wire.VARINT))  # fmt: skip

# |offset| or duration beyond this (about 26 days in ps) cannot come from a real capture and
# would overflow int64 once lines are put on one clock.
MAX_SPAN_PS = 1 << 61
# Planes read from one XSpace. A capture has one per device plus a few host planes (hundreds at the
# most); each costs tens of µs even when empty, so a hostile file of millions would take minutes.
MAX_PLANES = 4096
# What reading keeps per line (its header, state and track, the walk's slot): 1.7 KB measured at
# 200 k and 1 M one-event lines; per event or stat metadata entry (its range, decoded names, dict
# entries) 768 bytes plus twice the entry's bytes: 0.9 KB measured for entries of 75 bytes at 200 k
# and 1 M entries (`benchmarks/README.md`). Both count against an ingest's budget; however small the
# budget, `MIN_HELD_BYTES` is let through (a 1 MB budget still opens real captures: the 8-GPU
# TensorFlow capture of `tests/data/xplane` counts 10.2 MB, 37 lines and 10,772 entries).
LINE_BYTES = 1792
METADATA_BYTES = 768
MIN_HELD_BYTES = 32 << 20


class TooManyLines(Exception):
    """The XSpace holds more lines and metadata than the ingest's budget holds: what the reader
    keeps for each is not spilled, so the walk stops instead of passing it."""

    def __init__(self, lines: int, entries: int, limit_bytes: int) -> None:
        self.lines, self.entries, self.limit_bytes = lines, entries, limit_bytes
        super().__init__(
            f"more lines and metadata than {limit_bytes / 2**20:,.0f} MiB hold ({lines:,} lines and "
            f"{entries:,} event and stat metadata entries when the walk stopped): the reader keeps "
            f"about {LINE_BYTES} bytes per line and {METADATA_BYTES} plus twice its size per entry, "
            f"beyond its memory budget; {spill_budget.RAISE_BUDGET_HINT}"
        )


@dataclasses.dataclass
class RawLine:
    """One XLine's header, as walked; `num_events` counts its events with a readable header."""

    index: int  # position among all lines of the space, in file order
    plane: int
    id: int
    name: str
    display_name: str
    display_id: int
    timestamp_ns: int
    duration_ps: int
    num_events: int


@dataclasses.dataclass
class RawPlane:
    """One XPlane's names and metadata, decoded to Python values (metadata is small); `lines`
    are filled in as the reader walks them."""

    index: int
    id: int
    name: str
    stat_names: dict[int, str]
    event_names: dict[int, tuple[str, str]]  # event metadata id → (name, display_name)
    event_meta_stats: dict[int, list[tuple[int, int, Any]]]  # id → [(stat metadata id, kind, value)]
    stats: list[tuple[int, int, Any]]
    lines: list[RawLine]

    def stat_dict(self, stats: list[tuple[int, int, Any]]) -> dict[str, Any]:
        """{stat name: value} with ref values resolved to the referenced stat metadata's name."""
        out: dict[str, Any] = {}
        for mid, kind, value in stats:
            name = self.stat_names.get(mid, f"stat#{mid}")
            if kind == REF:
                value = self.stat_names.get(value, f"?ref {value}")
            out[name] = value
        return out


@dataclasses.dataclass
class SpaceIndex:
    """An XSpace's planes and metadata, and where each plane's lines are (file byte ranges)."""

    planes: list[RawPlane]
    slots: list[list[tuple[int, int]]]  # per plane: (start, end) of each line's bytes
    cut: list[bool]  # per plane: its last line is cut off (the plane ends inside it)
    plane_damage: list[str | None]  # per plane: where and why walking its fields stopped
    hostnames: list[str]
    errors: list[str]
    warnings: list[str]
    damage: list[str]  # where and why walking the XSpace's own fields stopped
    skipped: Counter[str]


class ByteSource(Protocol):
    """What `index_space` reads: random access to the file's bytes (see `source`)."""

    size: int

    def window(self, start: int, size: int) -> Window: ...

    def read(self, start: int, end: int) -> bytes: ...

    def gather(self, ranges: list[tuple[int, int]]) -> tuple[np.ndarray, bytes, np.ndarray]: ...


@dataclasses.dataclass
class EventBatch:
    """Consecutive events of one line, decoded: one row per event, one per event stat."""

    buf: np.ndarray  # the padded bytes the positions below refer to
    ev_mid: np.ndarray  # int64 event metadata id
    ev_offset_ps: np.ndarray  # int64, from the line's timestamp
    ev_dur_ps: np.ndarray  # int64
    ev_ok: np.ndarray  # bool: decodable, has a timestamp, sane values
    # One row per stat of the ok events, grouped by event in source order.
    st_event: np.ndarray  # int64 row in the event columns
    st_mid: np.ndarray  # int64 stat metadata id
    st_kind: np.ndarray  # int8, one of the kinds above
    st_value: np.ndarray  # uint64: the varint, or the double's bits
    st_start: np.ndarray  # int64 payload start in `buf` for STR / BYTES
    st_len: np.ndarray  # int64 payload length for STR / BYTES
    _data: bytes | None = None

    @property
    def num_events(self) -> int:
        return int(self.ev_mid.shape[0])

    @property
    def data(self) -> bytes:
        """The bytes of `buf` (made on first use: only string and bytes stats need them)."""
        if self._data is None:
            self._data = self.buf[: self.buf.shape[0] - wire.PADDING].tobytes()
        return self._data


def text(raw: bytes) -> str:
    """UTF-8 text from the file; undecodable bytes become U+FFFD instead of failing the load."""
    return raw.decode("utf-8", errors="replace")


def _stat_value(data: bytes, kind: int, value: int, start: int, length: int) -> Any:
    if kind == DOUBLE:
        return struct.unpack("<d", value.to_bytes(8, "little"))[0]
    if kind == INT64:
        return wire.as_int64(value)
    if kind in (UINT64, REF):
        return value
    if kind == STR:
        return text(data[start : start + length])
    if kind == BYTES:
        return data[start : start + length]
    return None


_STAT_FIELDS = {1: wire.VARINT, **dict(_VALUE_FIELDS)}


def _decode_stats(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Columns (metadata id, kind, value, start, length, broken) of the XStat messages given."""
    sc = wire.scan(buf, starts, ends, _STAT_FIELDS, oneof=tuple(k for k, _ in _VALUE_FIELDS))
    kind = sc.which
    value = sc.value[wire.ONEOF]
    is_blob = (kind == STR) | (kind == BYTES)
    vstart = np.where(is_blob, value.view(np.int64), 0)
    vlen = np.where(is_blob, sc.length[wire.ONEOF], 0)
    return sc.signed(1), kind, value, vstart, vlen, sc.broken


def _python_stats(data: bytes, cols: tuple[np.ndarray, ...], rows: np.ndarray) -> list[tuple[int, int, Any]]:
    mid, kind, value, vstart, vlen, broken = cols
    out = []
    for r in rows.tolist():
        if not broken[r]:
            k = int(kind[r])
            out.append((int(mid[r]), k, _stat_value(data, k, int(value[r]), int(vstart[r]), int(vlen[r]))))
    return out


def index_space(source: ByteSource, limit_bytes: int | None = None) -> SpaceIndex:
    """Walk the XSpace and its planes (not their lines) and decode every plane's metadata; past
    `limit_bytes` of lines and metadata entries in all (None: no bound), `TooManyLines`."""
    index = SpaceIndex([], [], [], [], [], [], [], [], Counter())
    plane_ranges: list[tuple[int, int]] = []
    try:
        for number, wtype, a, b in fields(source, 0, source.size):
            if number == 1 and wtype == wire.LEN:
                plane_ranges.append((a, b))
            elif wtype == wire.LEN and number in (2, 3, 4):
                (index.errors, index.warnings, index.hostnames)[number - 2].append(text(source.read(a, b)))
    except wire.TruncatedField as exc:
        index.damage.append(f"file: {exc} (truncated?)")
        if exc.number == 1:
            plane_ranges.append((exc.payload, source.size))
    except wire.WireError as exc:
        index.damage.append(f"file: {exc}")
    if len(plane_ranges) > MAX_PLANES:
        index.damage.append(
            f"file: {len(plane_ranges):,} planes, more than a capture holds; read the first {MAX_PLANES:,}"
        )
        del plane_ranges[MAX_PLANES:]
    walked: list[_WalkedPlane] = []
    held = _Held(limit_bytes)
    for i, (a, b) in enumerate(plane_ranges):
        walked.append(_walk_plane(source, i, a, b, held))
    metadata = _decode_metadata(source, [w.ranges for w in walked], index.skipped)
    for i, (w, (stat_names, event_names, event_meta_stats, stats)) in enumerate(
        zip(walked, metadata, strict=True)
    ):
        index.planes.append(
            RawPlane(i, w.id, text(w.name), stat_names, event_names, event_meta_stats, stats, [])
        )
        index.slots.append(w.slots)
        index.cut.append(w.cut)
        index.plane_damage.append(w.damage)
    return index


def decode_space(data: bytes) -> SpaceIndex:
    """`index_space` of an XSpace held in memory (its planes and their metadata)."""
    return index_space(BytesSource(data))


@dataclasses.dataclass
class _WalkedPlane:
    """One XPlane's fields as walked: where its lines and metadata are."""

    id: int = 0
    name: bytes = b""
    slots: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    # (event metadata, stat metadata, stats) entry ranges.
    ranges: tuple[list[tuple[int, int]], ...] = dataclasses.field(default_factory=lambda: ([], [], []))
    damage: str | None = None
    cut: bool = False


class _Held:
    """What the walk has found that reading keeps (lines, metadata entries) against a limit."""

    def __init__(self, limit_bytes: int | None) -> None:
        self.limit_bytes = limit_bytes
        self.lines = self.entries = self.bytes = 0

    def add(self, lines: int, entries: int, size: int) -> None:
        self.lines += lines
        self.entries += entries
        self.bytes += lines * LINE_BYTES + entries * METADATA_BYTES + 2 * size
        if self.limit_bytes is not None and self.bytes > self.limit_bytes:
            raise TooManyLines(self.lines, self.entries, self.limit_bytes)


def _walk_plane(source: ByteSource, i: int, start: int, end: int, held: _Held) -> _WalkedPlane:
    """Where plane `i`'s fields are, counted into `held`."""
    out = _WalkedPlane()
    try:
        for number, wtype, a, b in fields(source, start, end):
            if number == 3 and wtype == wire.LEN:
                out.slots.append((a, b))
                held.add(1, 0, 0)
            elif 4 <= number <= 6 and wtype == wire.LEN:
                out.ranges[number - 4].append((a, b))
                if number < 6:
                    held.add(0, 1, b - a)
            elif number == 1 and wtype == wire.VARINT:
                out.id = wire.as_int64(a)
            elif number == 2 and wtype == wire.LEN:
                out.name = source.read(a, b)
    except wire.TruncatedField as exc:
        out.damage = f"plane {i}: {exc}"
        if exc.number == 3:
            # A cut-off line still holds the events before the cut.
            out.slots.append((exc.payload, end))
            out.cut = True
    except wire.WireError as exc:
        out.damage = f"plane {i}: {exc}"
    return out


def _map_entries(buf: np.ndarray, arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(key, value start, value length, broken) of map<int64, Message> entries."""
    sc = wire.scan(buf, arr[:, 0], arr[:, 1], {1: wire.VARINT, 2: wire.LEN})
    vstart, vlen = sc.text_range(2)
    missing = vlen < 0
    vstart[missing] = 0
    vlen[missing] = 0
    return sc.signed(1), vstart, vlen, sc.broken


def _decode_metadata(
    source: ByteSource, ranges: list[tuple[list[tuple[int, int]], ...]], skipped: Counter[str]
) -> list[tuple[dict[int, str], dict[int, tuple[str, str]], dict[int, list[tuple[int, int, Any]]], list]]:
    """Per plane: (stat names, event names, event metadata stats, plane stats), all planes in bulk."""
    flat = [r for plane in ranges for group in plane for r in group]
    buf, data, shift = source.gather(flat)
    arr = np.asarray(flat, dtype=np.int64).reshape(-1, 2) - shift[:, None]
    # Which plane and group (event metadata, stat metadata, stats) each range belongs to.
    counts = [len(group) for plane in ranges for group in plane]
    owner = np.repeat(np.arange(len(counts)), counts)
    plane_of, group_of = owner // 3, owner % 3
    em_arr, sm_arr, ps = (arr[group_of == g] for g in range(3))
    em_owner, sm_owner, ps_owner = (plane_of[group_of == g] for g in range(3))
    em_key, em_vs, em_vl, em_broken = _map_entries(buf, em_arr)
    sm_key, sm_vs, sm_vl, sm_broken = _map_entries(buf, sm_arr)
    skipped["event metadata entries that could not be decoded"] += int(em_broken.sum())
    skipped["stat metadata entries that could not be decoded"] += int(sm_broken.sum())

    out: list[tuple[dict, dict, dict, list]] = [({}, {}, {}, []) for _ in ranges]
    smf = wire.scan(buf, sm_vs, sm_vs + sm_vl, {2: wire.LEN})
    sm_name_s, sm_name_l = smf.text_range(2)
    for i in np.flatnonzero(~sm_broken & ~smf.broken).tolist():
        lo, ln = int(sm_name_s[i]), int(sm_name_l[i])
        out[int(sm_owner[i])][0][int(sm_key[i])] = text(data[lo : lo + ln]) if ln >= 0 else ""
    skipped["stat metadata entries that could not be decoded"] += int((~sm_broken & smf.broken).sum())

    emf = wire.scan(buf, em_vs, em_vs + em_vl, {2: wire.LEN, 4: wire.LEN, 5: wire.LEN}, repeated=(5,))
    n_em = em_key.shape[0]
    em_name_s, em_name_l = emf.text_range(2)
    em_disp_s, em_disp_l = emf.text_range(4)
    em_good = ~em_broken & ~emf.broken
    skipped["event metadata entries that could not be decoded"] += int((~em_broken & emf.broken).sum())
    stat_owner, stat_start, stat_len = emf.blocks[5]
    em_stat_cols = _decode_stats(buf, stat_start, stat_start + stat_len)
    skipped["event metadata stats that could not be decoded"] += int(em_stat_cols[-1].sum())
    order = np.argsort(stat_owner, kind="stable")
    bounds = np.searchsorted(stat_owner[order], np.arange(n_em + 1))
    for i in np.flatnonzero(em_good).tolist():
        p = int(em_owner[i])
        key = int(em_key[i])
        ns, nl, ds, dl = int(em_name_s[i]), int(em_name_l[i]), int(em_disp_s[i]), int(em_disp_l[i])
        name = text(data[ns : ns + nl]) if nl > 0 else ""
        display = text(data[ds : ds + dl]) if dl > 0 else ""
        out[p][1][key] = (name, display)
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        if hi > lo:
            out[p][2][key] = _python_stats(data, em_stat_cols, order[lo:hi])

    ps_cols = _decode_stats(buf, ps[:, 0], ps[:, 1])
    skipped["plane stats that could not be decoded"] += int(ps_cols[-1].sum())
    for p in range(len(ranges)):
        out[p][3].extend(_python_stats(data, ps_cols, np.flatnonzero(ps_owner == p)))
    return out


def record_payloads(
    buf: np.ndarray, records: np.ndarray, limits: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(payload start, payload end, readable) of the event records `walk_line_part` found in
    `buf`, record i reaching no further than limits[i]."""
    return wire.event_ranges(buf, records, limits)


def decode_events(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, skipped: Counter[str]) -> EventBatch:
    """Decode the XEvents buf[starts[i]:ends[i]] and their stats; never raises on bad bytes."""
    ev_mid, ev_offset, ev_dur, broken, aggregated, st_owner, st_start_all, st_len_all = fast.events(
        buf, starts, ends
    )
    # offset_ps and num_occurrences share a oneof: whichever comes last is the one set.
    ev_ok = ~broken & ~aggregated
    skipped["events that could not be decoded"] += int(broken.sum())
    skipped["aggregated events (num_occurrences, no timestamp)"] += int((aggregated & ~broken).sum())
    # Compared without np.abs, which leaves -2**63 negative (and so "small").
    far = (ev_offset >= MAX_SPAN_PS) | (ev_offset <= -MAX_SPAN_PS)
    insane = ev_ok & (far | (ev_dur < 0) | (ev_dur >= MAX_SPAN_PS))
    skipped["events with a negative or impossible offset/duration"] += int(insane.sum())
    ev_ok &= ~insane

    # Real captures seldom drop an event or a stat: the columns are copied only where one is.
    if not ev_ok.all():
        keep = ev_ok[st_owner]
        st_owner, st_start_all, st_len_all = st_owner[keep], st_start_all[keep], st_len_all[keep]
    st_mid, st_kind, st_value, st_start, st_len, st_broken = fast.stats(
        buf, st_start_all, st_start_all + st_len_all
    )
    broken_stats = int(st_broken.sum())
    skipped["event stats that could not be decoded"] += broken_stats
    stat_columns = (st_owner, st_mid, st_kind, st_value, st_start, st_len)
    if broken_stats:
        good = ~st_broken
        stat_columns = tuple(column[good] for column in stat_columns)
    st_event, st_mid, st_kind, st_value, st_start, st_len = stat_columns
    return EventBatch(
        buf=buf,
        ev_mid=ev_mid,
        ev_offset_ps=ev_offset,
        ev_dur_ps=ev_dur,
        ev_ok=ev_ok,
        st_event=st_event,
        st_mid=st_mid,
        st_kind=st_kind,
        st_value=st_value,
        st_start=st_start,
        st_len=st_len,
    )
