"""XSpace bytes → planes, lines, and flat numpy columns of every event and event stat.

This layer knows the XPlane schema (field numbers from tsl/profiler/protobuf/xplane.proto) but
nothing about how the timeline shows it. Damage is recorded, never raised: `RawSpace.damage` says
where decoding stopped and `skipped` counts what was dropped, so the reader can load the rest.
"""

from __future__ import annotations

import dataclasses
import struct
from collections import Counter
from typing import Any

import numpy as np

from profscope.formats import xplane_wire as wire

# XStat value kinds: the field number of the oneof member that is set (0 = none).
NO_VALUE, DOUBLE, UINT64, INT64, STR, BYTES, REF = 0, 2, 3, 4, 5, 6, 7
_VALUE_FIELDS = ((DOUBLE, wire.I64), (UINT64, wire.VARINT), (INT64, wire.VARINT), (STR, wire.LEN),
                 (BYTES, wire.LEN), (REF, wire.VARINT))  # fmt: skip

# |offset| or duration beyond this (about 26 days in ps) cannot come from a real capture and
# would overflow int64 once lines are put on one clock.
MAX_SPAN_PS = 1 << 61


@dataclasses.dataclass
class RawLine:
    """One XLine; its events are rows first_event … first_event + num_events of the event columns."""

    index: int  # position in RawSpace.lines
    plane: int
    id: int
    name: str
    display_name: str
    display_id: int
    timestamp_ns: int
    duration_ps: int
    first_event: int
    num_events: int


@dataclasses.dataclass
class RawPlane:
    """One XPlane's names and metadata, decoded to Python values (metadata is small)."""

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
class RawSpace:
    """Everything decoded from one XSpace file."""

    data: bytes
    buf: np.ndarray  # `data` padded for the vectorized scanner
    planes: list[RawPlane]
    lines: list[RawLine]
    hostnames: list[str]
    errors: list[str]
    warnings: list[str]
    damage: list[str]  # where and why decoding stopped early
    skipped: Counter[str]
    # One row per event, in line order. Times are still relative to the owning line.
    ev_line: np.ndarray  # int32 index into `lines`
    ev_mid: np.ndarray  # int64 event metadata id
    ev_offset_ps: np.ndarray  # int64
    ev_dur_ps: np.ndarray  # int64
    ev_ok: np.ndarray  # bool: decodable, has a timestamp, sane values
    # One row per event stat, grouped by event in source order.
    st_event: np.ndarray  # int64 row in the event columns
    st_mid: np.ndarray  # int64 stat metadata id
    st_kind: np.ndarray  # int8, one of the kinds above
    st_value: np.ndarray  # uint64: the varint, or the double's bits
    st_start: np.ndarray  # int64 payload start for STR / BYTES
    st_len: np.ndarray  # int64 payload length for STR / BYTES

    @property
    def num_events(self) -> int:
        return int(self.ev_mid.shape[0])


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


@dataclasses.dataclass
class _PlaneParts:
    """Byte ranges collected by the Python walk of one XPlane, decoded in bulk afterwards."""

    id: int = 0
    name: bytes = b""
    line_records: list[tuple[wire.LineRecord, int]] = dataclasses.field(default_factory=list)
    event_meta: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    stat_meta: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    stats: list[tuple[int, int]] = dataclasses.field(default_factory=list)


def _walk_plane(data: bytes, start: int, end: int, damage: list[str], where: str) -> _PlaneParts:
    parts = _PlaneParts()
    try:
        for number, wtype, a, b in wire.iter_fields(data, start, end):
            if number == 3 and wtype == wire.LEN:
                line = wire.walk_line(data, a, b)
                parts.line_records.append((line, b))
                if line.damage:
                    damage.append(f"{where}, line {text(line.name)!r}: {line.damage}")
            elif number == 4 and wtype == wire.LEN:
                parts.event_meta.append((a, b))
            elif number == 5 and wtype == wire.LEN:
                parts.stat_meta.append((a, b))
            elif number == 6 and wtype == wire.LEN:
                parts.stats.append((a, b))
            elif number == 1 and wtype == wire.VARINT:
                parts.id = wire.as_int64(a)
            elif number == 2 and wtype == wire.LEN:
                parts.name = data[a:b]
    except wire.TruncatedField as exc:
        damage.append(f"{where}: {exc}")
        if exc.number == 3:
            # A cut-off line still holds the events before the cut.
            line = wire.walk_line(data, exc.payload, end)
            parts.line_records.append((line, end))
            if line.damage:
                damage.append(f"{where}, line {text(line.name)!r}: {line.damage}")
    except wire.WireError as exc:
        damage.append(f"{where}: {exc}")
    return parts


def _map_entries(
    buf: np.ndarray, ranges: list[tuple[int, int]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(key, value start, value length, broken) of map<int64, Message> entries."""
    arr = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    sc = wire.scan(buf, arr[:, 0], arr[:, 1], {1: wire.VARINT, 2: wire.LEN})
    vstart, vlen = sc.text_range(2)
    missing = vlen < 0
    vstart[missing] = 0
    vlen[missing] = 0
    return sc.signed(1), vstart, vlen, sc.broken


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def decode_space(data: bytes) -> RawSpace:
    """Decode a whole XSpace; never raises on bad bytes (see `RawSpace.damage`)."""
    buf = wire.padded(data)
    damage: list[str] = []
    skipped: Counter[str] = Counter()
    plane_ranges: list[tuple[int, int]] = []
    hostnames: list[str] = []
    errors: list[str] = []
    warnings: list[str] = []
    try:
        for number, wtype, a, b in wire.iter_fields(data, 0, len(data)):
            if number == 1 and wtype == wire.LEN:
                plane_ranges.append((a, b))
            elif wtype == wire.LEN and number in (2, 3, 4):
                (errors, warnings, hostnames)[number - 2].append(text(data[a:b]))
    except wire.TruncatedField as exc:
        damage.append(f"file: {exc} (truncated?)")
        if exc.number == 1:
            plane_ranges.append((exc.payload, len(data)))
    except wire.WireError as exc:
        damage.append(f"file: {exc}")

    walked = [_walk_plane(data, a, b, damage, f"plane {i}") for i, (a, b) in enumerate(plane_ranges)]

    # Metadata of all planes, decoded in bulk.
    em_owner = np.repeat(np.arange(len(walked)), [len(p.event_meta) for p in walked])
    sm_owner = np.repeat(np.arange(len(walked)), [len(p.stat_meta) for p in walked])
    em_key, em_vs, em_vl, em_broken = _map_entries(buf, [r for p in walked for r in p.event_meta])
    sm_key, sm_vs, sm_vl, sm_broken = _map_entries(buf, [r for p in walked for r in p.stat_meta])
    skipped["event metadata entries that could not be decoded"] += int(em_broken.sum())
    skipped["stat metadata entries that could not be decoded"] += int(sm_broken.sum())

    smf = wire.scan(buf, sm_vs, sm_vs + sm_vl, {2: wire.LEN})
    sm_name_s, sm_name_l = smf.text_range(2)
    stat_names: list[dict[int, str]] = [{} for _ in walked]
    for i in np.flatnonzero(~sm_broken & ~smf.broken).tolist():
        lo, ln = int(sm_name_s[i]), int(sm_name_l[i])
        stat_names[int(sm_owner[i])][int(sm_key[i])] = text(data[lo : lo + ln]) if ln >= 0 else ""
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
    event_names: list[dict[int, tuple[str, str]]] = [{} for _ in walked]
    event_meta_stats: list[dict[int, list[tuple[int, int, Any]]]] = [{} for _ in walked]
    order = np.argsort(stat_owner, kind="stable")
    bounds = np.searchsorted(stat_owner[order], np.arange(n_em + 1))
    for i in np.flatnonzero(em_good).tolist():
        p = int(em_owner[i])
        key = int(em_key[i])
        ns, nl, ds, dl = int(em_name_s[i]), int(em_name_l[i]), int(em_disp_s[i]), int(em_disp_l[i])
        name = text(data[ns : ns + nl]) if nl > 0 else ""
        display = text(data[ds : ds + dl]) if dl > 0 else ""
        event_names[p][key] = (name, display)
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        if hi > lo:
            event_meta_stats[p][key] = _python_stats(data, em_stat_cols, order[lo:hi])

    plane_stat_first = np.cumsum([0] + [len(p.stats) for p in walked])
    ps = np.asarray([r for p in walked for r in p.stats], dtype=np.int64).reshape(-1, 2)
    ps_cols = _decode_stats(buf, ps[:, 0], ps[:, 1])
    skipped["plane stats that could not be decoded"] += int(ps_cols[-1].sum())

    # Lines and the event columns.
    planes: list[RawPlane] = []
    lines: list[RawLine] = []
    records: list[np.ndarray] = []
    record_limits: list[np.ndarray] = []
    others: list[np.ndarray] = []
    for i, parts in enumerate(walked):
        plane = RawPlane(
            index=i,
            id=parts.id,
            name=text(parts.name),
            stat_names=stat_names[i],
            event_names=event_names[i],
            event_meta_stats=event_meta_stats[i],
            stats=_python_stats(data, ps_cols, np.arange(plane_stat_first[i], plane_stat_first[i + 1])),
            lines=[],
        )
        for rec, line_end in parts.line_records:
            pos = np.asarray(rec.event_records, dtype=np.int64)
            records.append(pos)
            record_limits.append(np.full(pos.shape[0], line_end, dtype=np.int64))
            others.append(np.asarray(rec.other_events, dtype=np.int64).reshape(-1, 2))
            line = RawLine(
                index=len(lines),
                plane=i,
                id=rec.id,
                name=text(rec.name),
                display_name=text(rec.display_name),
                display_id=rec.display_id,
                timestamp_ns=rec.timestamp_ns,
                duration_ps=rec.duration_ps,
                first_event=0,
                num_events=pos.shape[0] + len(rec.other_events),
            )
            plane.lines.append(line)
            lines.append(line)
        planes.append(plane)

    # Event payload ranges, line by line: the usual records (headers decoded in bulk), then any
    # written with an unusual tag.
    payload, stop, header_ok = wire.event_ranges(buf, _cat(records), _cat(record_limits))
    skipped["events that could not be decoded"] += int((~header_ok).sum())
    starts_parts: list[np.ndarray] = []
    ends_parts: list[np.ndarray] = []
    at = 0
    first = 0
    for line, pos, extra in zip(lines, records, others, strict=True):
        n = pos.shape[0]
        good = header_ok[at : at + n]
        starts_parts += [payload[at : at + n][good], extra[:, 0]]
        ends_parts += [stop[at : at + n][good], extra[:, 1]]
        at += n
        line.first_event = first
        line.num_events = int(good.sum()) + extra.shape[0]
        first += line.num_events
    starts = _cat(starts_parts)
    ends = _cat(ends_parts)
    ev_line = np.repeat(np.arange(len(lines), dtype=np.int32), [ln.num_events for ln in lines])
    evf = wire.scan(
        buf,
        starts,
        ends,
        {1: wire.VARINT, 2: wire.VARINT, 3: wire.VARINT, 4: wire.LEN, 5: wire.VARINT},
        repeated=(4,),
    )
    ev_mid = evf.signed(1)
    ev_offset = evf.signed(2)
    ev_dur = evf.signed(3)
    # offset_ps and num_occurrences share a oneof: whichever comes last is the one set.
    aggregated = evf.step[5] > evf.step[2]
    ev_ok = ~evf.broken & ~aggregated
    skipped["events that could not be decoded"] += int(evf.broken.sum())
    skipped["aggregated events (num_occurrences, no timestamp)"] += int((aggregated & ~evf.broken).sum())
    # Compared without np.abs, which leaves -2**63 negative (and so "small").
    insane = ev_ok & (
        (ev_offset >= MAX_SPAN_PS) | (ev_offset <= -MAX_SPAN_PS) | (ev_dur < 0) | (ev_dur >= MAX_SPAN_PS)
    )
    skipped["events with a negative or impossible offset/duration"] += int(insane.sum())
    ev_ok &= ~insane

    st_owner, st_start_all, st_len_all = evf.blocks[4]
    keep = ev_ok[st_owner]
    st_owner, st_start_all, st_len_all = st_owner[keep], st_start_all[keep], st_len_all[keep]
    order = np.argsort(st_owner, kind="stable")  # blocks come field step by step: regroup by event
    st_owner, st_start_all, st_len_all = st_owner[order], st_start_all[order], st_len_all[order]
    st_mid, st_kind, st_value, st_start, st_len, st_broken = _decode_stats(
        buf, st_start_all, st_start_all + st_len_all
    )
    skipped["event stats that could not be decoded"] += int(st_broken.sum())
    good = ~st_broken
    return RawSpace(
        data=data,
        buf=buf,
        planes=planes,
        lines=lines,
        hostnames=hostnames,
        errors=errors,
        warnings=warnings,
        damage=damage,
        skipped=Counter({k: v for k, v in skipped.items() if v}),
        ev_line=ev_line,
        ev_mid=ev_mid,
        ev_offset_ps=ev_offset,
        ev_dur_ps=ev_dur,
        ev_ok=ev_ok,
        st_event=st_owner[good],
        st_mid=st_mid[good],
        st_kind=st_kind[good],
        st_value=st_value[good],
        st_start=st_start[good],
        st_len=st_len[good],
    )
