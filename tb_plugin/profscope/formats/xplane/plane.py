"""One XPlane being read: each batch of a line's events becomes builder calls.

Per batch (`PlaneReader.batch`): event names from the plane's event metadata (display name when
present; "unknown event (metadata id N)" when missing; a `step_name` stat renames the event),
typed args records (metadata stats first, then the event's own, which win on a name clash), the flow and
correlation records, and, on device planes, the rows the derived lines need. A `_counters_` line
gives counter samples instead, one series per counter and numeric stat. Interning happens in the
events' order, so the string table does not depend on where batches start.

Tracks are made once the plane's last line is read (`PlaneReader.finish`), when all is known that
names them: what runs on each GPU stream (Compute from kernels, Memcpy kinds, Memset), how host
threads sort by name, how many series a counter has. Until then the (provisional) builder gets a
reference for a line's or a series' track, which the end of the read settles (`ReadState.ref_of`,
`TraceBuilder.settle`). Then the derived lines of a GPU or TPU plane are built from its kept rows
(`derived`).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from typing import Any

import msgspec
import numpy as np

from profscope.formats.common import wire as xplane_wire
from profscope.formats.xplane import derived as xplane_derived
from profscope.formats.xplane.args import ArgsEncoder
from profscope.formats.xplane.decode import DOUBLE, INT64, REF, UINT64, EventBatch, RawLine, RawPlane, text
from profscope.formats.xplane.events import COLUMNS, PlaneEvents
from profscope.formats.xplane.flows import FlowRecords
from profscope.formats.xplane.hlo import InstructionMetadata
from profscope.formats.xplane.stats import StatNames, StatTable, json_value
from profscope.formats.xplane.tracks import TPU_CORE_PLANE, line_sort_index, plane_kind, stream_sort_index
from profscope.model import arrays
from profscope.model.columns import TraceBuilder

COUNTER_LINE = "_counters_"
MODULES_LINE = "XLA Modules"
_STREAM_NUMBER = re.compile(r"#(\d+)")
_STREAM_KINDS = ("Compute", "MemcpyH2D", "MemcpyD2H", "MemcpyD2D", "MemcpyP2P", "Memcpy", "Memset")
_MEMCPY, _MEMSET = _STREAM_KINDS.index("Memcpy"), _STREAM_KINDS.index("Memset")
_KEY_WIDTH = 1 << 31  # (metadata row, stat name id) pairs as one int64
_encode = msgspec.json.Encoder().encode


@dataclasses.dataclass
class Frame:
    """What a read assumes before it has seen the whole file (see `xplane.read`): times count
    from `base_ns` (None: the first line read), `far` lines are dropped, and `headers` give the
    final (name, timestamp) of lines whose header changes after their first events."""

    base_ns: int | None = None
    far: frozenset[int] = frozenset()
    headers: dict[int, tuple[bytes, int]] = dataclasses.field(default_factory=dict)


class ReadState:
    """What all planes of one read share: the builder, the records and the counts."""

    def __init__(
        self,
        builder: TraceBuilder,
        flows: FlowRecords,
        frame: Frame,
    ) -> None:
        self.builder = builder
        self.flows = flows
        self.frame = frame
        self.base_ns = frame.base_ns
        self.vocab = StatNames()
        self.args = ArgsEncoder(self.vocab)
        self.track_of_ref: list[int] = []
        self._ref_of_track: dict[int, int] = {}
        self.min_start: int | None = None  # earliest start of an event kept, in the frame
        self.lines: list[RawLine] = []
        self.sections: dict[int, int] = {}  # plane index → section id
        self.skipped: Counter[str] = Counter()
        self.unknown_names = self.unknown_refs = self.missing_meta = 0
        self.counter_samples = self.far_events = 0
        self.invalid = False  # the frame did not hold: the file must be read again
        self.final_headers: dict[int, tuple[bytes, int]] = {}

    def new_ref(self) -> int:
        self.track_of_ref.append(-1)
        return len(self.track_of_ref) - 1

    def ref_of(self, track: int) -> int:
        """The reference of a track made already (the builder takes references only)."""
        ref = self._ref_of_track.get(track)
        if ref is None:
            ref = self._ref_of_track[track] = len(self.track_of_ref)
            self.track_of_ref.append(track)
        return ref

    def add_events(
        self,
        refs: np.ndarray | int,
        start: np.ndarray,
        dur: np.ndarray,
        names: np.ndarray,
        lengths: np.ndarray,
        blob: np.ndarray,
    ) -> int:
        """Events (track references, start in the frame, dur, name, args record lengths and blob);
        returns the builder index of the first."""
        return self.builder.add_events(refs, start, dur, names, args_blob=blob, args_lengths=lengths)

    def section(self, plane: RawPlane) -> int:
        """Section id of a plane, created on first use (planes without events get none)."""
        sid = self.sections.get(plane.index)
        if sid is None:
            kind, sort, _ = plane_kind(plane.name)
            name = plane.name or f"plane {plane.id}"
            sid = self.builder.section(name, kind, sort, key=("plane", plane.index))
            self.sections[plane.index] = sid
        return sid


@dataclasses.dataclass
class LineState:
    """One line while its batches are read."""

    index: int
    record: xplane_wire.LineRecord
    ref: int
    header: tuple[bytes, int] | None = None  # (name, timestamp) its batches were read with
    rel_ps: int = 0  # the line's timestamp in the frame, in ps
    skip: bool = False  # far from the others (or outside this frame): no event kept
    counter: bool = False
    modules: bool = False
    regular: int = 0  # events on its track
    codes: int = 0  # bit k: _STREAM_KINDS[k] runs on it
    num_events: int = 0


class PlaneReader:
    """Reads the lines of one plane in order (`line`, `batch`, `end_line`), then `finish`."""

    def __init__(self, state: ReadState, plane: RawPlane, hlo: InstructionMetadata) -> None:
        self.state = state
        self.plane = plane
        self.hlo = hlo
        self.kind = plane_kind(plane.name)[0]
        self.gpu = self.kind == "gpu"
        self.tpu_core = bool(TPU_CORE_PLANE.match(plane.name))
        self.mids = np.array(sorted(plane.event_names), dtype=np.int64)
        names: list[int] = []
        self.meta_long: list[str | None] = []
        self.name_code: dict[int, int] = {}
        for mid in self.mids.tolist():
            name, display = plane.event_names[mid]
            names.append(self._intern(display or name))
            self.meta_long.append(name if display and display != name else None)
        # One extra last row: events whose metadata is missing.
        self.meta_name = np.array([*names, 0], dtype=np.int32)
        self.lookup = state.vocab.lookup(plane.stat_names)
        self.lines: list[LineState] = []
        self.series: dict[tuple[int, int], int] = {}
        self.per_counter: Counter[int] = Counter()
        self.kept: list[tuple[np.ndarray, ...]] = []
        self._prefixes: list[bytes] | None = None
        self._meta_prefix = np.zeros(0, dtype=np.int64)
        self._member_keys = np.zeros(0, dtype=np.int64)
        self._variants: dict[tuple[int, frozenset[int]], int] = {}
        self._meta_tables: dict[tuple[str, str], tuple[np.ndarray, ...]] = {}

    def _intern(self, name: str) -> int:
        nid = self.state.builder.intern(name)
        if self.gpu and nid not in self.name_code:
            self.name_code[nid] = _name_code(name)
        return nid

    # -- lines ------------------------------------------------------------------------------------
    def line(self, index: int, record: xplane_wire.LineRecord) -> LineState:
        ln = LineState(index, record, self.state.new_ref())
        self.lines.append(ln)
        return ln

    def _start_line(self, ln: LineState) -> None:
        """Fix the header a line's batches are read with (at its first batch)."""
        state = self.state
        forced = state.frame.headers.get(ln.index)
        ln.header = forced or (ln.record.name, ln.record.timestamp_ns)
        name, ts = text(ln.header[0]), ln.header[1]
        ln.counter = name == COUNTER_LINE
        ln.modules = name == MODULES_LINE
        if state.base_ns is None:
            state.base_ns = ts
        delta = (ts - state.base_ns) * 1000
        if abs(delta) >= 1 << 61:
            ln.skip = True
            if ln.index not in state.frame.far:
                state.invalid = True
        elif ln.index in state.frame.far:
            state.invalid = True
        else:
            ln.rel_ps = delta

    def end_line(self, ln: LineState) -> RawLine:
        rec = ln.record
        final = (rec.name, rec.timestamp_ns)
        state = self.state
        state.final_headers[ln.index] = final
        if ln.header is not None and ln.header != final:
            state.invalid = True
        line = RawLine(
            index=ln.index,
            plane=self.plane.index,
            id=rec.id,
            name=text(rec.name),
            display_name=text(rec.display_name),
            display_id=rec.display_id,
            timestamp_ns=rec.timestamp_ns,
            duration_ps=rec.duration_ps,
            num_events=ln.num_events,
        )
        self.plane.lines.append(line)
        state.lines.append(line)
        return line

    # -- batches ----------------------------------------------------------------------------------
    def batch(self, lines: list[LineState], at: np.ndarray, b: EventBatch) -> None:
        """Read a batch of events of `lines` (consecutive lines of the plane): event i is on
        lines[at[i]], and the events of a line are in file order."""
        n = b.num_events
        if not n:
            return
        state = self.state
        for ln in lines:
            if ln.header is None:
                self._start_line(ln)
        skip = np.array([ln.skip for ln in lines], dtype=bool)[at]
        ok = b.ev_ok & ~skip
        far = np.array([ln.skip and ln.index in state.frame.far for ln in lines], dtype=bool)[at]
        state.far_events += int((b.ev_ok & far).sum())
        rel = b.ev_offset_ps + np.array([ln.rel_ps for ln in lines], dtype=np.int64)[at]
        if ok.any():
            low = int(rel[ok].min())
            state.min_start = low if state.min_start is None else min(state.min_start, low)
        table = StatTable(b, state.vocab, self.lookup)
        state.unknown_names += table.unknown_names
        state.unknown_refs += table.unknown_refs
        meta_row, names = self._names(b, table, ok)
        counter = np.array([ln.counter for ln in lines], dtype=bool)[at]
        if counter.any():
            self._counters(b, table, ok & counter, names, rel)
            ok = ok & ~counter
        rows = np.flatnonzero(ok)
        if not rows.shape[0]:
            return
        per_line = np.bincount(at[rows], minlength=len(lines))
        for ln, count in zip(lines, per_line.tolist(), strict=True):
            ln.regular += count
        if self.gpu:
            self._stream_codes(lines, at, b, table, rows, names)
        lengths, blob = self._args(b, table, rows, meta_row)
        refs = np.array([ln.ref for ln in lines], dtype=np.int32)[at[rows]]
        first = state.add_events(refs, rel[rows], b.ev_dur_ps[rows], names[rows], lengths, blob)
        index = np.full(n, -1, dtype=np.int64)
        index[rows] = first + np.arange(rows.shape[0], dtype=np.int64)
        self._flow_records(b, table, index, rel, meta_row)
        if self.gpu or self.tpu_core:
            modules = np.array([ln.modules for ln in lines], dtype=bool)[at]
            refs_all = np.array([ln.ref for ln in lines], dtype=np.int64)[at]
            self._keep(b, table, rows, rel, meta_row, modules, refs_all)

    def _names(self, b: EventBatch, table: StatTable, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(metadata row or -1, builder name id) of every event of the batch."""
        mids = self.mids
        if mids.shape[0]:
            pos = np.minimum(np.searchsorted(mids, b.ev_mid), mids.shape[0] - 1)
            found = mids[pos] == b.ev_mid
            meta_row = np.where(found, pos, -1)
        else:
            found = np.zeros(b.num_events, dtype=bool)
            meta_row = np.full(b.num_events, -1, dtype=np.int64)
        names = self.meta_name[meta_row]
        lost = np.flatnonzero(~found & ok)
        self.state.missing_meta += lost.shape[0]
        steps = table.rows("step_name")
        if not lost.shape[0] and not steps.shape[0]:
            return meta_row, names
        # Renamed events, interned in event order (lost name first, then its step names).
        owners = b.st_event[steps]
        texts = [f"unknown event (metadata id {m})" for m in b.ev_mid[lost].tolist()] + table.texts(steps)
        events = np.concatenate([lost, owners])
        order = np.lexsort((np.arange(events.shape[0]), events))
        for i in order.tolist():
            if texts[i]:
                names[events[i]] = self._intern(texts[i])
        return meta_row, names

    def _counters(
        self, b: EventBatch, table: StatTable, ok: np.ndarray, names: np.ndarray, rel: np.ndarray
    ) -> None:
        """Each counter event's name is the counter; each numeric stat is one series."""
        state = self.state
        rows = np.flatnonzero(ok[b.st_event])
        kind = b.st_kind[rows]
        rows = rows[(kind == INT64) | (kind == UINT64) | (kind == DOUBLE)]
        if not rows.shape[0]:
            return
        kind = b.st_kind[rows]
        bits = b.st_value[rows]
        values = bits.view(np.float64).copy()
        values[kind == INT64] = bits[kind == INT64].view(np.int64)
        values[kind == UINT64] = bits[kind == UINT64]
        owners = b.st_event[rows]
        series = np.stack([names[owners].astype(np.int64), table.row_name[rows].astype(np.int64)], axis=1)
        keys, inverse = np.unique(series, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(keys.shape[0] + 1))
        for k, (cname, sname) in enumerate(keys.tolist()):
            ref = self.series.get((cname, sname))
            if ref is None:
                ref = self.series[(cname, sname)] = state.new_ref()
                self.per_counter[cname] += 1
            sel = order[bounds[k] : bounds[k + 1]]
            state.builder.add_counter(ref, rel[owners[sel]], values[sel])
        state.counter_samples += rows.shape[0]

    def _stream_codes(
        self,
        lines: list[LineState],
        at: np.ndarray,
        b: EventBatch,
        stats: StatTable,
        rows: np.ndarray,
        names: np.ndarray,
    ) -> None:
        """Note what runs on each GPU line: Memcpy/Memset by name or details stat, Compute for
        kernels (`kernel_details`, which wins)."""
        table = np.full(int(names[rows].max()) + 1, -1, dtype=np.int8)
        for nid, c in self.name_code.items():
            if c >= 0 and nid < table.shape[0]:
                table[nid] = c
        code = np.full(b.num_events, -1, dtype=np.int8)
        code[rows] = table[names[rows]]
        on = np.zeros(b.num_events, dtype=bool)
        on[rows] = True
        for stat, label in (("memcpy_details", _MEMCPY), ("memset_details", _MEMSET), ("kernel_details", 0)):
            owners = b.st_event[stats.rows(stat)]
            owners = owners[on[owners]]
            if label == _MEMCPY:
                owners = owners[code[owners] < 0]
            code[owners] = label
        sel = rows[code[rows] >= 0]
        for pair in arrays.unique(at[sel].astype(np.int64) * 8 + code[sel]).tolist():
            lines[pair // 8].codes |= 1 << (pair % 8)

    # -- args ---------------------------------------------------------------------------------------
    def _meta_members(self, row: int, without: frozenset[int] = frozenset()) -> dict[str, Any]:
        """Args an event inherits from its metadata: long_name and the metadata's stats."""
        plane, vocab = self.plane, self.state.vocab
        members: dict[str, Any] = {}
        if self.meta_long[row] is not None:
            members["long_name"] = self.meta_long[row]
        for smid, kind, value in plane.event_meta_stats.get(int(self.mids[row]), ()):
            name = plane.stat_names.get(smid, f"stat#{smid}")
            if vocab.name_ids.get(name) not in without:
                members[name] = json_value(kind, value, plane.stat_names)
        return members

    def _ensure_prefixes(self) -> list[bytes]:
        if self._prefixes is None:
            vocab = self.state.vocab
            self._prefixes = []
            self._meta_prefix = np.full(self.mids.shape[0] + 1, -1, dtype=np.int64)
            keys: list[int] = []
            for row in range(self.mids.shape[0]):
                members = self._meta_members(row)
                if members:
                    self._meta_prefix[row] = len(self._prefixes)
                    self._prefixes.append(_encode(members)[:-1] + b",")
                    keys += [row * _KEY_WIDTH + vocab.name_id(k) for k in members]
            self._member_keys = arrays.unique(np.array(keys, dtype=np.int64))
        return self._prefixes

    def _args(
        self, b: EventBatch, table: StatTable, rows: np.ndarray, meta_row: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(bytes per event, blob): the typed args records of the events `rows`, in order."""
        prefixes = self._ensure_prefixes()
        position = np.full(b.num_events, -1, dtype=np.int64)
        position[rows] = np.arange(rows.shape[0], dtype=np.int64)
        owner = position[b.st_event]
        stat_rows = np.flatnonzero(owner >= 0)
        ev_prefix = self._meta_prefix[meta_row[rows]]
        # Where an event stat repeats a metadata stat's name the event's own value wins: give
        # such events a prefix without that member, so the JSON has no duplicate key.
        if self._member_keys.shape[0] and stat_rows.shape[0]:
            events = b.st_event[stat_rows]
            row_of = meta_row[events]
            name = table.row_name[stat_rows].astype(np.int64)
            keys = row_of * _KEY_WIDTH + name
            shadow = np.flatnonzero((row_of >= 0) & (name >= 0) & np.isin(keys, self._member_keys))
            dropped: dict[int, set[int]] = {}
            for ev, nm in zip(events[shadow].tolist(), name[shadow].tolist(), strict=True):
                dropped.setdefault(ev, set()).add(nm)
            for ev, dropped_names in dropped.items():
                key = (int(meta_row[ev]), frozenset(dropped_names))
                variant = self._variants.get(key)
                if variant is None:
                    members = self._meta_members(*key)
                    variant = self._variants[key] = len(prefixes) if members else -1
                    if members:
                        prefixes.append(_encode(members)[:-1] + b",")
                ev_prefix[position[ev]] = variant
        return self.state.args.records(table, prefixes, ev_prefix, stat_rows, owner[stat_rows])

    # -- stat columns -------------------------------------------------------------------------------
    def _meta_table(self, what: str, name: str) -> tuple[np.ndarray, ...]:
        """Per metadata row (and one last for none): its stat `name`, as a text id ("text"),
        (value, valid) ("int") or presence ("has"); the last such stat of the metadata wins."""
        cached = self._meta_tables.get((what, name))
        if cached is not None:
            return cached
        plane, vocab = self.plane, self.state.vocab
        n = self.mids.shape[0] + 1
        text_id = np.full(n, -1, dtype=np.int32)
        value = np.zeros(n, dtype=np.int64)
        valid = np.zeros(n, dtype=bool)
        for row, mid in enumerate(self.mids.tolist()):
            for smid, kind, v in plane.event_meta_stats.get(mid, ()):
                if plane.stat_names.get(smid) != name:
                    continue
                if what == "has":
                    valid[row] = True
                elif what == "int" and kind in (INT64, UINT64):
                    value[row] = v if v < 1 << 63 else v - (1 << 64)
                    valid[row] = True
                elif what == "text":
                    rendered = plane.stat_names.get(v) if kind == REF else v
                    if isinstance(rendered, bytes):
                        rendered = rendered.decode("utf-8", errors="replace")
                    if rendered is not None and rendered != "":
                        text_id[row] = vocab.name_id(str(rendered))
        out = (text_id,) if what == "text" else (value, valid) if what == "int" else (valid,)
        self._meta_tables[(what, name)] = out
        return out

    def stat_text(self, b: EventBatch, table: StatTable, meta_row: np.ndarray, name: str) -> np.ndarray:
        """int32 per event: its stat `name` as text id; -1 for none or "" (own stat over metadata's)."""
        (meta,) = self._meta_table("text", name)
        column = meta[meta_row]
        rows = table.rows(name)
        ids = table.text_ids(rows)
        has = ids >= 0
        column[b.st_event[rows[has]]] = ids[has]
        empty = self.state.vocab.name_ids.get("")
        if empty is not None:
            column[column == empty] = -1
        return column

    def stat_int(
        self, b: EventBatch, table: StatTable, meta_row: np.ndarray, name: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """(int64 value, valid) per event of integer stat `name`, the event's own over its metadata's."""
        meta_value, meta_valid = self._meta_table("int", name)
        values = meta_value[meta_row]
        valid = meta_valid[meta_row]
        rows = table.rows(name)
        ints, ok = table.ints(rows)
        values[b.st_event[rows[ok]]] = ints[ok]
        valid[b.st_event[rows[ok]]] = True
        return values, valid

    def has_stat(self, b: EventBatch, table: StatTable, meta_row: np.ndarray, name: str) -> np.ndarray:
        (meta,) = self._meta_table("has", name)
        mask = meta[meta_row]
        mask[b.st_event[table.rows(name)]] = True
        return mask

    # -- records for the end of the read --------------------------------------------------------
    def _flow_records(
        self, b: EventBatch, table: StatTable, index: np.ndarray, rel: np.ndarray, meta_row: np.ndarray
    ) -> None:
        flows = self.state.flows
        rows = table.rows("flow")
        if rows.shape[0]:
            ev = b.st_event[rows]
            kind = b.st_kind[rows]
            keep = (index[ev] >= 0) & ((kind == UINT64) | (kind == INT64))
            rows, ev = rows[keep], ev[keep]
            flows.flow_stats(b.st_value[rows], rel[ev], index[ev])
        if self.kind not in ("cpu", "gpu", "tpu"):
            return
        rows = table.rows("correlation_id")
        if not rows.shape[0]:
            return
        ev = b.st_event[rows]
        values, valid = table.ints(rows)
        keep = valid & (index[ev] >= 0)
        ev, values = ev[keep], values[keep]
        if self.kind == "cpu":
            group, has_group = self.stat_int(b, table, meta_row, "group_id")
            duration = b.ev_dur_ps[ev]
            flows.correlations(
                values,
                rel[ev],
                index[ev],
                True,
                self.plane.index,
                duration,
                group[ev],
                has_group[ev].astype(np.int64),
            )
        else:
            zeros = np.zeros(ev.shape[0], dtype=np.int64)
            flows.correlations(values, rel[ev], index[ev], False, self.plane.index, zeros, zeros, zeros)

    def _keep(
        self,
        b: EventBatch,
        table: StatTable,
        rows: np.ndarray,
        rel: np.ndarray,
        meta_row: np.ndarray,
        modules: np.ndarray,
        refs: np.ndarray,
    ) -> None:
        """Keep the rows the plane's derived lines are built from (see `events`)."""
        n = b.num_events
        group, has_group = self.stat_int(b, table, meta_row, "group_id")
        none = np.full(n, -1, dtype=np.int32)
        zeros = np.zeros(n, dtype=np.int64)
        false = np.zeros(n, dtype=bool)
        tf_op = self.stat_text(b, table, meta_row, "tf_op")
        source = self.stat_text(b, table, meta_row, "source")
        if self.gpu:
            kernel = self.has_stat(b, table, meta_row, "kernel_details")
            program, has_program = self.stat_int(b, table, meta_row, "program_id")
            module = self.stat_text(b, table, meta_row, "hlo_module")
            op = self.stat_text(b, table, meta_row, "hlo_op")
            is_async, module_line = false, false
            wanted = kernel | has_group
        else:
            kernel, program, has_program, module, op = false, zeros, false, none, none
            is_async = false.copy()
            for flag in ("_a", "is_async"):
                value, valid = self.stat_int(b, table, meta_row, flag)
                is_async |= valid & (value != 0)
            module_line = modules
            wanted = (~is_async & ((tf_op >= 0) | (source >= 0))) | module_line
        sel = rows[wanted[rows]]
        if not sel.shape[0]:
            return
        columns = dict(
            start_ps=rel, duration_ps=b.ev_dur_ps, kernel=kernel, group=group, has_group=has_group,
            program=program, has_program=has_program, module=module, op=op, tf_op=tf_op, source=source,
            is_async=is_async, module_line=module_line,
        )  # fmt: skip
        self.kept.append(tuple(refs[sel] if c == "track" else columns[c][sel] for c in COLUMNS))

    # -- the end of the plane -----------------------------------------------------------------------
    def finish(self, recorder: xplane_derived.BoxSink) -> None:
        """Make the plane's tracks, then its derived lines (through `recorder`)."""
        state, b, plane = self.state, self.state.builder, self.plane
        if self.series:
            strings = list(b.string_ids)
            for (cname, sname), ref in sorted(self.series.items()):
                label = strings[cname]
                if self.per_counter[cname] > 1:
                    label = f"{label} {state.vocab.names[sname] if sname >= 0 else 'value'}"
                sid = state.section(plane)
                tid = b.track(sid, label, "counter", 10**6, key=("counter", plane.index, cname, sname))
                state.track_of_ref[ref] = tid
        streams = self._tracks()
        if self.kept:
            columns = [np.concatenate(c) for c in zip(*self.kept, strict=True)]
            self.kept.clear()
            at = COLUMNS.index("track")
            columns[at] = np.array(state.track_of_ref, dtype=np.int32)[columns[at]]
            events = PlaneEvents(
                plane, state.sections[plane.index], state.vocab, streams, self.hlo,
                **dict(zip(COLUMNS, columns, strict=True)),
            )  # fmt: skip
            xplane_derived.add_derived_lines(events, recorder)

    def _tracks(self) -> list[tuple[int, int]]:
        """Tracks of the plane's lines with events; returns the GPU streams (number, track)."""
        state, b, plane = self.state, self.state.builder, self.plane
        specs: list[tuple[LineState, RawLine, str, str, int, int]] = []
        by_index = {ln.index: ln for ln in plane.lines}
        for ls in self.lines:
            if not ls.regular:
                continue
            ln = by_index[ls.index]
            name = ln.display_name or ln.name or f"line {ln.id}"
            number = -1
            if self.kind == "cpu":
                track_kind, sort = "thread", 0
            elif self.gpu and (ln.name.startswith("Stream") or ls.codes):
                track_kind = "stream"
                number = _stream_number(ln)
                if ls.codes:
                    kinds = ", ".join(k for i, k in enumerate(_STREAM_KINDS) if ls.codes >> i & 1)
                    name = f"Stream #{number} ({kinds})"
                sort = stream_sort_index(number)
            else:
                track_kind, sort = "line", line_sort_index(name)
            specs.append((ls, ln, name, track_kind, sort, number))
        if self.kind == "cpu":
            ranked = sorted(range(len(specs)), key=lambda i: (specs[i][2].lower(), specs[i][1].id))
            for rank, i in enumerate(ranked):
                specs[i] = (*specs[i][:4], rank, specs[i][5])
        streams: list[tuple[int, int]] = []
        for ls, ln, name, track_kind, sort, number in specs:
            sid = state.section(plane)
            tid = b.track(sid, name, track_kind, sort, key=("line", ln.index))
            state.track_of_ref[ls.ref] = tid
            if track_kind == "stream":
                streams.append((number, tid))
        return streams


def _name_code(name: str) -> int:
    """What a GPU event's name says runs on its stream (index into _STREAM_KINDS), -1 nothing."""
    if name in _STREAM_KINDS[1:5]:
        return _STREAM_KINDS.index(name)
    if name.startswith("Memcpy"):
        return _MEMCPY
    if name.startswith("Memset"):
        return _MEMSET
    return -1


def _stream_number(line: RawLine) -> int:
    match = _STREAM_NUMBER.search(line.name)
    return int(match.group(1)) if match else line.id
