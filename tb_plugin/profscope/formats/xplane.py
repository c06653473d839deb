"""XPlane (`.xplane.pb`, an XSpace protobuf) → the common columnar trace model.

Planes become sections (host CPU first, then devices by ordinal), lines become tracks: one per host
thread, one per GPU stream (named after what runs on it), TPU lines as they are. Event names come
from event metadata (display name when present), args from the event's and its metadata's stats,
flows from the `flow` stat and from host↔device `correlation_id`, `_counters_` lines become
counter tracks, and GPU/TPU sections get the derived lines XProf users know (`xplane_derived`,
built from the `xplane_events.DecodedEvents` this reader hands it).
The wire format is decoded without the protobuf runtime (`xplane_wire`), in bulk.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import fsspec
import msgspec
import numpy as np

from profscope.columns import Trace, TraceBuilder
from profscope.errors import UnreadableProfile
from profscope.formats import registry, xplane_derived
from profscope.formats.xplane_decode import (
    BYTES,
    DOUBLE,
    INT64,
    REF,
    UINT64,
    RawLine,
    RawPlane,
    RawSpace,
    decode_space,
)
from profscope.formats.xplane_events import DecodedEvents
from profscope.formats.xplane_hlo import attachment_name, hlo_protos
from profscope.formats.xplane_layout import line_sort_index, plane_kind, stream_sort_index
from profscope.formats.xplane_stats import StatTable, json_value

FORMAT = registry.XPLANE
COUNTER_LINE = "_counters_"
_READ_CHUNK = 1 << 22
# Line timestamps below this many ns after the epoch (≈ 11.6 days) are offsets from the profile
# start, as profilers write them after normalizing, not wall-clock times.
_EPOCH_THRESHOLD_NS = 10**15
_STREAM_NUMBER = re.compile(r"#(\d+)")
_STREAM_KINDS = ("Compute", "MemcpyH2D", "MemcpyD2H", "MemcpyD2D", "MemcpyP2P", "Memcpy", "Memset")
# XProf's flow categories (tsl ContextType), indexed by the flow stat's top 6 bits.
_FLOW_CATEGORIES = (
    "flow", "flow", "tf_exec", "tfrt_exec", "batch_sched", "PjRt", "as_batch_sched", "tfrt_rt",
    "tpu_embed", "gpu_launch", "batcher", "tpu_stream", "tpu_launch", "pathways_exec",
    "pjrt_library_call", "threadpool_event",
)  # fmt: skip
_KIND_CODES = {"cpu": 1, "gpu": 2, "tpu": 3, "other": 4}
_encode = msgspec.json.Encoder().encode


def read(
    path: str, fs: fsspec.AbstractFileSystem, progress: Callable[[int, int], None] | None = None
) -> Trace:
    """Load one `.xplane.pb` file; raises UnreadableProfile only when nothing in it is usable."""
    data = _read_all(path, fs, progress)
    if not data:
        raise UnreadableProfile(path, "the file is empty")
    raw = decode_space(data)
    if raw.num_events == 0 and raw.damage:
        raise UnreadableProfile(path, f"not a readable XSpace protobuf ({raw.damage[0]})")
    if raw.num_events == 0 and not any(plane.name for plane in raw.planes):
        # Stray bytes can happen to parse as protobuf fields; an XSpace names its planes.
        raise UnreadableProfile(path, "no XPlane in the file (not an XSpace protobuf)")
    builder = TraceBuilder(source=path, format=FORMAT)
    _Loader(raw, builder).load()
    if progress is not None:
        progress(len(data), len(data))
    return builder.finalize()


def _read_all(path: str, fs: fsspec.AbstractFileSystem, progress: Callable[[int, int], None] | None) -> bytes:
    chunks: list[bytes] = []
    done = 0
    with fs.open(path, "rb") as handle:
        total = getattr(handle, "size", None) or 0
        while True:
            chunk = handle.read(_READ_CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, max(total, done))
    return b"".join(chunks)


class _Loader:
    """Turns a decoded RawSpace into TraceBuilder calls; one instance per file."""

    def __init__(self, raw: RawSpace, builder: TraceBuilder) -> None:
        self.raw = raw
        self.builder = builder
        n = raw.num_events
        plane_of_line = np.array([ln.plane for ln in raw.lines], dtype=np.int32)
        self.ev_plane = plane_of_line[raw.ev_line] if n else np.zeros(0, np.int32)
        self.stats = StatTable(raw, self.ev_plane)
        self.ev_start = np.zeros(n, dtype=np.int64)
        self.ev_name = np.zeros(n, dtype=np.int32)
        self.ev_meta = np.full(n, -1, dtype=np.int64)  # row in self.meta_keys
        self.ev_track = np.full(n, -1, dtype=np.int32)
        self.ev_section = np.full(n, -1, dtype=np.int32)
        self.builder_index = np.full(n, -1, dtype=np.int64)
        self.sections: dict[int, int] = {}  # plane index → section id
        self.meta_keys: list[tuple[int, int]] = []  # (plane, event metadata id)
        self.hlo_protos = hlo_protos(raw)

    # -- orchestration ----------------------------------------------------------------------------
    def load(self) -> None:
        raw, b = self.raw, self.builder
        for note in raw.damage:
            b.warn(f"damaged input, stopped reading part of it: {note}")
        for reason, count in raw.skipped.items():
            b.skip(reason, count)
        for message in raw.errors:
            b.warn(f"the profiler reported an error: {message}")
        for message in raw.warnings:
            b.warn(f"the profiler reported: {message}")
        if self.stats.unknown_names:
            b.warn(
                f"{self.stats.unknown_names} event stats refer to missing stat metadata (shown as stat#<id>)"
            )
        if self.stats.unknown_refs:
            b.warn(
                f"{self.stats.unknown_refs} stat values refer to missing stat metadata (shown as ?ref <id>)"
            )
        self._times()
        self._names()
        counter_line = self._counters()
        regular = raw.ev_ok & ~counter_line
        self._tracks(regular)
        self._add_events(np.flatnonzero(regular & (self.ev_track >= 0)))
        self._flows()
        xplane_derived.add_derived_lines(self._decoded_events(), b)
        self._metadata()
        for program_id, proto in self.hlo_protos.items():
            b.attach(attachment_name(program_id), proto)
        if b.num_events == 0 and not self.num_counter_samples:
            b.warn("the XSpace holds no timed events")

    # -- time ---------------------------------------------------------------------------------------
    def _times(self) -> None:
        """Event starts in ps from the trace zero (a whole ns at or before the earliest event)."""
        raw = self.raw
        lines = raw.lines
        used = [ln for ln in lines if ln.num_events]
        if not used:
            self.zero_ns = 0
            self.builder.clock_origin_ns = self._absolute(0)
            return
        # The line holding the median event sets the common base, so one line with a wild
        # timestamp is the one dropped, not all the others.
        by_time = sorted(used, key=lambda ln: ln.timestamp_ns)
        weights = np.cumsum([ln.num_events for ln in by_time])
        base_ns = by_time[int(np.searchsorted(weights, (weights[-1] + 1) // 2))].timestamp_ns
        line_ps = np.zeros(len(lines), dtype=np.int64)
        far = np.zeros(len(lines), dtype=bool)
        for i, ln in enumerate(lines):
            delta = (ln.timestamp_ns - base_ns) * 1000
            if abs(delta) >= 1 << 61:
                far[i] = True
            else:
                line_ps[i] = delta
        bad = far[raw.ev_line] & raw.ev_ok
        if bad.any():
            self.builder.skip("events on lines whose timestamp is years away from the others", int(bad.sum()))
            raw.ev_ok &= ~bad
        start = line_ps[raw.ev_line] + raw.ev_offset_ps
        ok = raw.ev_ok
        zero_ps = int(start[ok].min()) // 1000 * 1000 if ok.any() else 0
        self.ev_start = start - zero_ps
        self.zero_ns = base_ns + zero_ps // 1000
        self.builder.clock_origin_ns = self._absolute(self.zero_ns)

    def _absolute(self, zero_ns: int) -> int | None:
        if zero_ns >= _EPOCH_THRESHOLD_NS or any(
            ln.timestamp_ns >= _EPOCH_THRESHOLD_NS for ln in self.raw.lines
        ):
            return zero_ns
        start = self._task_env().get("profile_start_time")
        if isinstance(start, int) and start >= _EPOCH_THRESHOLD_NS:
            return start + zero_ns
        self.builder.warn("the file does not say when the profile started: times are relative only")
        return None

    def _task_env(self) -> dict[str, Any]:
        for plane in self.raw.planes:
            if plane.name == "Task Environment":
                return plane.stat_dict(plane.stats)
        return {}

    # -- names --------------------------------------------------------------------------------------
    def _names(self) -> None:
        """Name of every event from its plane's event metadata (display name when present)."""
        raw, b = self.raw, self.builder
        bounds = np.searchsorted(self.ev_plane, np.arange(len(raw.planes) + 1))
        self.meta_name: list[int] = []
        self.meta_long: list[str | None] = []
        missing = 0
        for plane in raw.planes:
            first_row = len(self.meta_keys)
            mids = np.array(sorted(plane.event_names), dtype=np.int64)
            for mid in mids.tolist():
                name, display = plane.event_names[mid]
                self.meta_keys.append((plane.index, mid))
                self.meta_name.append(b.intern(display or name))
                self.meta_long.append(name if display and display != name else None)
            lo, hi = int(bounds[plane.index]), int(bounds[plane.index + 1])
            if hi == lo:
                continue
            query = raw.ev_mid[lo:hi]
            found = np.zeros(hi - lo, dtype=bool)
            if mids.shape[0]:
                pos = np.minimum(np.searchsorted(mids, query), mids.shape[0] - 1)
                found = mids[pos] == query
                self.ev_meta[lo:hi] = np.where(found, first_row + pos, -1)
                names = np.array(self.meta_name[first_row:], dtype=np.int32)
                self.ev_name[lo:hi] = names[pos]
            lost = np.flatnonzero(~found & raw.ev_ok[lo:hi])
            for i, mid in zip(lost.tolist(), query[lost].tolist(), strict=True):
                self.ev_name[lo + i] = b.intern(f"unknown event (metadata id {mid})")
            missing += lost.shape[0]
        if missing:
            b.warn(f"{missing} events refer to event metadata missing from their plane; named by id")
        rows = self.stats.rows("step_name")
        owners = raw.st_event[rows]
        for ev, step in zip(owners.tolist(), self.stats.texts(rows), strict=True):
            if step:
                self.ev_name[ev] = b.intern(step)

    # -- sections and tracks --------------------------------------------------------------------
    def section(self, plane_index: int) -> int:
        """Section id of a plane, created on first use (planes without events get none)."""
        sid = self.sections.get(plane_index)
        if sid is None:
            plane = self.raw.planes[plane_index]
            kind, sort, _ = plane_kind(plane.name)
            name = plane.name or f"plane {plane.id}"
            sid = self.builder.section(name, kind, sort, key=("plane", plane_index))
            self.sections[plane_index] = sid
        return sid

    def _tracks(self, regular: np.ndarray) -> None:
        raw, b = self.raw, self.builder
        per_line = np.bincount(raw.ev_line[regular], minlength=len(raw.lines))
        categories = self._stream_categories(regular)
        self.streams: dict[int, list[tuple[int, int]]] = {}  # section → [(stream number, track)]
        for plane in raw.planes:
            kind = plane_kind(plane.name)[0]
            specs: list[tuple[RawLine, str, str, int, int]] = []
            for ln in plane.lines:
                if not per_line[ln.index]:
                    continue
                name = ln.display_name or ln.name or f"line {ln.id}"
                number = -1
                if kind == "cpu":
                    track_kind, sort = "thread", 0
                elif kind == "gpu" and (ln.name.startswith("Stream") or ln.index in categories):
                    track_kind = "stream"
                    number = _stream_number(ln)
                    if ln.index in categories:
                        name = f"Stream #{number} ({', '.join(categories[ln.index])})"
                    sort = stream_sort_index(number)
                else:
                    track_kind, sort = "line", line_sort_index(name)
                specs.append((ln, name, track_kind, sort, number))
            if not specs:
                continue
            if kind == "cpu":
                ranked = sorted(range(len(specs)), key=lambda i: (specs[i][1].lower(), specs[i][0].id))
                for rank, i in enumerate(ranked):
                    specs[i] = (*specs[i][:3], rank, specs[i][4])
            sid = self.section(plane.index)
            for ln, name, track_kind, sort, number in specs:
                tid = b.track(sid, name, track_kind, sort, key=("line", ln.index))
                if track_kind == "stream":
                    self.streams.setdefault(sid, []).append((number, tid))
                sel = slice(ln.first_event, ln.first_event + ln.num_events)
                mask = regular[sel]
                self.ev_track[sel] = np.where(mask, tid, -1)
                self.ev_section[sel] = np.where(mask, sid, -1)

    def names_starting(self, prefix: str) -> np.ndarray:
        """Builder string ids of all interned names that start with `prefix`."""
        return np.array(
            [sid for text, sid in self.builder.string_ids.items() if text.startswith(prefix)], dtype=np.int32
        )

    def _stream_categories(self, regular: np.ndarray) -> dict[int, list[str]]:
        """What runs on each GPU line (by line index): Compute (kernels), Memcpy kinds, Memset."""
        raw, st = self.raw, self.stats
        gpu_planes = [p.index for p in raw.planes if plane_kind(p.name)[0] == "gpu"]
        if not gpu_planes:
            return {}
        on_gpu = regular & np.isin(self.ev_plane, gpu_planes)
        code = np.full(raw.num_events, -1, dtype=np.int8)
        ids = self.builder.string_ids
        memcpy = np.isin(self.ev_name, self.names_starting("Memcpy"))
        code[on_gpu & memcpy] = _STREAM_KINDS.index("Memcpy")
        for label in _STREAM_KINDS[1:5]:
            if label in ids:
                code[on_gpu & (self.ev_name == ids[label])] = _STREAM_KINDS.index(label)
        code[on_gpu & np.isin(self.ev_name, self.names_starting("Memset"))] = _STREAM_KINDS.index("Memset")
        for stat, label in (
            ("memcpy_details", "Memcpy"),
            ("memset_details", "Memset"),
            ("kernel_details", "Compute"),
        ):
            owners = raw.st_event[st.rows(stat)]
            owners = owners[on_gpu[owners]]
            if label == "Memcpy":
                owners = owners[code[owners] < 0]
            code[owners] = _STREAM_KINDS.index(label)
        sel = np.flatnonzero(code >= 0)
        pairs = np.unique(raw.ev_line[sel].astype(np.int64) * 8 + code[sel])
        out: dict[int, list[str]] = {}
        for pair in pairs.tolist():
            out.setdefault(pair // 8, []).append(_STREAM_KINDS[pair % 8])
        return out

    # -- events -------------------------------------------------------------------------------------
    def _add_events(self, rows: np.ndarray) -> None:
        raw, b = self.raw, self.builder
        prefixes, ev_prefix = self._arg_prefixes()
        position = np.full(raw.num_events, -1, dtype=np.int64)
        position[rows] = np.arange(rows.shape[0], dtype=np.int64)
        owner = position[raw.st_event]
        stat_rows = np.flatnonzero(owner >= 0)
        offsets, blob = self.stats.args_json(prefixes, ev_prefix[rows], stat_rows, owner[stat_rows])
        first = b.add_events(
            self.ev_track[rows],
            self.ev_start[rows],
            raw.ev_dur_ps[rows],
            self.ev_name[rows],
            args_blob=blob[: offsets[-1]],
            args_lengths=np.diff(offsets),
        )
        self.builder_index[rows] = first + np.arange(rows.shape[0], dtype=np.int64)

    def _meta_members(self, row: int, without: frozenset[int] = frozenset()) -> dict[str, Any]:
        """Args an event inherits from its metadata: long_name and the metadata's stats."""
        plane_index, mid = self.meta_keys[row]
        plane = self.raw.planes[plane_index]
        members: dict[str, Any] = {}
        if self.meta_long[row] is not None:
            members["long_name"] = self.meta_long[row]
        for smid, kind, value in plane.event_meta_stats.get(mid, ()):
            name = plane.stat_names.get(smid, f"stat#{smid}")
            if self.stats.name_ids.get(name) not in without:
                members[name] = json_value(kind, value, plane.stat_names)
        return members

    def _arg_prefixes(self) -> tuple[list[bytes], np.ndarray]:
        """Per event, the opening of its args object (see StatTable.args_json)."""
        raw, st = self.raw, self.stats
        prefixes: list[bytes] = []
        meta_prefix = np.full(len(self.meta_keys) + 1, -1, dtype=np.int64)
        member_names: list[tuple[int, list[int]]] = []
        for row in range(len(self.meta_keys)):
            members = self._meta_members(row)
            if members:
                meta_prefix[row] = len(prefixes)
                prefixes.append(_encode(members)[:-1] + b",")
                member_names.append((row, [st.name_id(k) for k in members]))
        ev_prefix = meta_prefix[self.ev_meta]
        # Where an event stat repeats a metadata stat's name the event's own value wins: give
        # such events a prefix without that member, so the JSON has no duplicate key.
        width = len(st.names) + 1
        meta_stat_keys = [row * width + name for row, names in member_names for name in names]
        owners = raw.st_event
        keys = self.ev_meta[owners] * width + st.row_name
        shadow = np.flatnonzero(
            (self.ev_meta[owners] >= 0) & (st.row_name >= 0) & np.isin(keys, meta_stat_keys)
        )
        dropped: dict[int, set[int]] = {}
        for ev, name in zip(owners[shadow].tolist(), st.row_name[shadow].tolist(), strict=True):
            dropped.setdefault(ev, set()).add(name)
        variants: dict[tuple[int, frozenset[int]], int] = {}
        for ev, names in dropped.items():
            key = (int(self.ev_meta[ev]), frozenset(names))
            if key not in variants:
                members = self._meta_members(*key)
                variants[key] = len(prefixes) if members else -1
                if members:
                    prefixes.append(_encode(members)[:-1] + b",")
            ev_prefix[ev] = variants[key]
        return prefixes, ev_prefix

    # -- counters -----------------------------------------------------------------------------------
    def _counters(self) -> np.ndarray:
        """Events of `_counters_` lines become counter samples; returns the mask of those events.

        Each counter event's name is the counter; each numeric stat is one series (named
        "<counter> <stat>" when a counter has several).
        """
        raw, b, st = self.raw, self.builder, self.stats
        mask = np.zeros(raw.num_events, dtype=bool)
        for ln in raw.lines:
            if ln.name == COUNTER_LINE:
                mask[ln.first_event : ln.first_event + ln.num_events] = True
        mask &= raw.ev_ok
        self.num_counter_samples = 0
        if not mask.any():
            return mask
        rows = np.flatnonzero(mask[raw.st_event])
        kind = raw.st_kind[rows]
        rows = rows[(kind == INT64) | (kind == UINT64) | (kind == DOUBLE)]
        kind = raw.st_kind[rows]
        bits = raw.st_value[rows]
        values = bits.view(np.float64).copy()
        values[kind == INT64] = bits[kind == INT64].view(np.int64)
        values[kind == UINT64] = bits[kind == UINT64]
        owners = raw.st_event[rows]
        series = np.stack([self.ev_plane[owners], self.ev_name[owners], st.row_name[rows]], axis=1)
        keys, inverse = np.unique(series, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        per_counter: dict[tuple[int, int], int] = {}
        for plane_index, cname, _ in keys.tolist():
            per_counter[(plane_index, cname)] = per_counter.get((plane_index, cname), 0) + 1
        strings = list(b.string_ids)
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(keys.shape[0] + 1))
        for k, (plane_index, cname, sname) in enumerate(keys.tolist()):
            label = strings[cname]
            if per_counter[(plane_index, cname)] > 1:
                label = f"{label} {st.names[sname] if sname >= 0 else 'value'}"
            sid = self.section(plane_index)
            tid = b.track(sid, label, "counter", 10**6, key=("counter", plane_index, cname, sname))
            sel = order[bounds[k] : bounds[k + 1]]
            b.add_counter(tid, self.ev_start[owners[sel]], values[sel])
        self.num_counter_samples = int(rows.shape[0])
        return mask

    # -- flows --------------------------------------------------------------------------------------
    def _flows(self) -> None:
        """Flows from `flow` stats (chained per flow id in time order) and correlation ids."""
        raw, b, st = self.raw, self.builder, self.stats
        names = [b.intern(c) for c in _FLOW_CATEGORIES]
        pairs: list[np.ndarray] = []
        rows = st.rows("flow")
        rows = rows[
            (self.builder_index[raw.st_event[rows]] >= 0) & np.isin(raw.st_kind[rows], (UINT64, INT64))
        ]
        if rows.shape[0]:
            value = raw.st_value[rows]
            direction = (value & np.uint64(3)).astype(np.int64)
            flow_id = (value >> np.uint64(2)) & np.uint64((1 << 56) - 1)
            category = (value >> np.uint64(58)).astype(np.int64)
            ev = raw.st_event[rows]
            # out (2) starts a flow, in-out (3) passes it on, in (1) ends it; unspecified (0) sorts
            # with the middle.
            rank = np.array([1, 2, 0, 1])[direction]
            order = np.lexsort((rank, self.ev_start[ev], flow_id))
            ev, flow_id, category = ev[order], flow_id[order], category[order]
            link = np.flatnonzero(flow_id[1:] == flow_id[:-1])
            name = np.array(names, dtype=np.int64)[np.minimum(category[link], len(names) - 1)]
            name[category[link] >= len(names)] = names[0]
            pairs.append(np.stack([ev[link], ev[link + 1], name], axis=1))
        self.launches = self._correlations()
        if self.launches.shape[0]:
            gpu_launch = names[_FLOW_CATEGORIES.index("gpu_launch")]
            pairs.append(np.column_stack([self.launches, np.full(self.launches.shape[0], gpu_launch)]))
        if not pairs:
            return
        links = np.concatenate(pairs)
        links[:, 0] = self.builder_index[links[:, 0]]
        links[:, 1] = self.builder_index[links[:, 1]]
        links = links[links[:, 0] != links[:, 1]]
        # A link found both ways (flow stat and correlation id) is added once.
        _, first = np.unique(links[:, 0] * (b.num_events + 1) + links[:, 1], return_index=True)
        links = links[np.sort(first)]
        b.add_flows(links[:, 0], links[:, 1], links[:, 2])

    def _correlations(self) -> np.ndarray:
        """(host event, device event) rows linked by the CUPTI/ROCm correlation id.

        A device event links to the host event with its id; when several host events carry it,
        to the last one that starts before the device event.
        """
        raw, st = self.raw, self.stats
        none = np.zeros((0, 2), dtype=np.int64)
        rows = st.rows("correlation_id")
        ev = raw.st_event[rows]
        values, valid = st.ints(rows)
        keep = valid & (self.builder_index[ev] >= 0)
        ev, values = ev[keep], values[keep]
        plane_kinds = np.array([_KIND_CODES[plane_kind(p.name)[0]] for p in raw.planes] or [0])
        kind = plane_kinds[self.ev_plane[ev]]
        host = kind == _KIND_CODES["cpu"]
        device = (kind == _KIND_CODES["gpu"]) | (kind == _KIND_CODES["tpu"])
        if not host.any() or not device.any():
            return none
        h_ev, h_id = ev[host], values[host]
        d_ev, d_id = ev[device], values[device]
        order = np.lexsort((self.ev_start[h_ev], h_id))
        h_ev, h_id = h_ev[order], h_id[order]
        lo = np.searchsorted(h_id, d_id, side="left")
        hi = np.searchsorted(h_id, d_id, side="right")
        single = hi - lo == 1
        links = [np.stack([h_ev[lo[single]], d_ev[single]], axis=1)]
        unmatched = 0
        for d, a, z in zip(
            d_ev[hi - lo > 1].tolist(), lo[hi - lo > 1].tolist(), hi[hi - lo > 1].tolist(), strict=True
        ):
            cands = h_ev[a:z]
            before = cands[self.ev_start[cands] <= self.ev_start[d]]
            if before.shape[0]:
                links.append(np.array([[before[-1], d]], dtype=np.int64))
            else:
                unmatched += 1
        if unmatched:
            self.builder.warn(
                f"{unmatched} device events share a correlation id with several host events that all "
                "start after them; not linked"
            )
        return np.concatenate(links).astype(np.int64)

    def _decoded_events(self) -> DecodedEvents:
        """What the derived lines are built from, once every event is on the timeline."""
        raw = self.raw
        return DecodedEvents(
            planes=raw.planes,
            stats=self.stats,
            stat_event=raw.st_event,
            start_ps=self.ev_start,
            duration_ps=raw.ev_dur_ps,
            metadata_row=self.ev_meta,
            metadata_keys=self.meta_keys,
            track=self.ev_track,
            section=self.ev_section,
            on_timeline=self.builder_index >= 0,
            sections=self.sections,
            streams=self.streams,
            launches=self.launches,
            hlo_protos=self.hlo_protos,
        )

    # -- metadata -----------------------------------------------------------------------------------
    def _metadata(self) -> None:
        raw, b = self.raw, self.builder
        devices: dict[str, Any] = {}
        for plane_index, sid in sorted(self.sections.items(), key=lambda kv: kv[1]):
            plane = raw.planes[plane_index]
            kind, _, ordinal = plane_kind(plane.name)
            devices[str(sid)] = {
                "plane": plane.name,
                "plane_id": plane.id,
                "kind": kind,
                "ordinal": ordinal,
                "stats": _plain_stats(plane),
            }
        b.metadata["devices"] = devices
        b.metadata["hostnames"] = list(raw.hostnames)
        env = self._task_env()
        for key in ("profile_start_time", "profile_stop_time"):
            if isinstance(env.get(key), int):
                b.metadata[f"{key}_ns"] = env[key]
        b.metadata["planes"] = [
            {
                "name": p.name,
                "id": p.id,
                "lines": len(p.lines),
                "events": sum(ln.num_events for ln in p.lines),
            }
            for p in raw.planes
        ]


def _plain_stats(plane: RawPlane) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mid, kind, value in plane.stats:
        name = plane.stat_names.get(mid, f"stat#{mid}")
        out[name] = json_value(kind, value, plane.stat_names) if kind in (REF, BYTES, DOUBLE) else value
    return out


def _stream_number(line: Any) -> int:
    match = _STREAM_NUMBER.search(line.name)
    return int(match.group(1)) if match else line.id
