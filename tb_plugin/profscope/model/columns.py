"""The common columnar trace model every reader fills and every tile or query reads.

Readers append to a `TraceBuilder` in bulk (numpy arrays or lists, never one Python object per
event kept alive); `finalize()` sorts, lays out nesting rows, resolves flows and returns a frozen
`Trace` made only of numpy arrays plus small metadata, so it can be cached and memory-mapped.

Times are integer picoseconds relative to the trace's own zero; `clock_origin_ns` says which
absolute instant (epoch-based when the source tells) that zero is, so hosts can be aligned.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from profscope.model import args as model_args
from profscope.model.layout import FLOW_PHASES, _bind_flow_points, event_order_unless_in_place, layout_depths
from profscope.model.spill import budget as spill_budget
from profscope.model.spill import files as spill_files
from profscope.model.spill.writer import Spiller

SECTION_KINDS = ("cpu", "gpu", "tpu", "other")
TRACK_KINDS = ("thread", "stream", "line", "derived", "async", "counter", "other")
FLOW_BINDINGS = ("enclosing", "next")
# An attachment name: "/"-separated segments of letters, digits, "_", "-" and inner dots, so that
# the cache can store each attachment as a file under its name.
_ATTACHMENT_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*")


@dataclasses.dataclass
class Section:
    """A process-like group of tracks on the timeline (host CPU, one GPU, one TPU core)."""

    id: int
    name: str
    kind: str = "other"
    sort_index: int = 0


@dataclasses.dataclass(slots=True)
class Track:
    """One row set inside a section (a thread, a GPU stream, an XLA line, a counter)."""

    id: int
    section: int
    name: str
    kind: str = "thread"
    sort_index: int = 0
    max_depth: int = 0


@dataclasses.dataclass(frozen=True)
class Trace:
    """A finalized, immutable trace: event columns sorted by (track, start, -duration).

    Args stay where readers put them: `args_blob` holds one record per event in the order events
    were added (sorting them into event order would copy the whole blob piece by piece, the
    slowest step of a big ingest). `ev_args` leads from an event to its record, `args_event` back.
    Records are JSON texts or typed records (`typed_args`); read them only through `model.args`.

    `attachments` are named byte strings a reader keeps beside the columns for analyses that need
    the source's own records (XPlanes: each program's serialized HloProto as "hlo/<program id>",
    see `formats.xplane.hlo`). From the cache they are a mapping that reads one file per lookup,
    so serving an entry never loads them all.
    """

    source: str
    format: str
    clock_origin_ns: int | None
    sections: list[Section]
    tracks: list[Track]
    strings: list[str]
    ev_start_ps: np.ndarray  # int64
    ev_dur_ps: np.ndarray  # int64, 0 for instants
    ev_track: np.ndarray  # int32
    ev_depth: np.ndarray  # int32, nesting row inside the track
    ev_name: np.ndarray  # int32, index into strings
    ev_cat: np.ndarray  # int32, index into strings (0 = "")
    ev_args: np.ndarray  # int64, args record of each event
    args_off: np.ndarray  # int64, n+1 offsets into args_blob: record k is [args_off[k], args_off[k+1])
    args_event: np.ndarray  # int64, event of each args record (inverse of ev_args)
    args_blob: np.ndarray  # uint8, concatenated records: JSON objects or typed records (empty = no args)
    args_frag_off: np.ndarray  # int64, offsets into args_frag_blob; empty unless the records are typed
    args_frag_blob: np.ndarray  # uint8, the JSON fragments typed records are rendered from (`typed_args`)
    flow_src: np.ndarray  # int64 event index
    flow_dst: np.ndarray  # int64 event index
    flow_name: np.ndarray  # int32 string id
    ctr_track: np.ndarray  # int32, sorted by (track, time)
    ctr_time_ps: np.ndarray  # int64
    ctr_value: np.ndarray  # float64
    warnings: list[str] = dataclasses.field(default_factory=list)
    skipped: dict[str, int] = dataclasses.field(default_factory=dict)
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    attachments: Mapping[str, bytes] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @property
    def num_events(self) -> int:
        return int(self.ev_start_ps.shape[0])

    def args_json(self, index: int) -> bytes:
        """Raw JSON object text of one event's args (b"" when it has none)."""
        return model_args.args_json(self, index)

    def time_span_ps(self) -> tuple[int, int]:
        """(first start, last end) over events and counters; (0, 0) for an empty trace."""
        lows, highs = [], []
        if self.num_events:
            lows.append(int(self.ev_start_ps.min()))
            highs.append(int((self.ev_start_ps + self.ev_dur_ps).max()))
        if self.ctr_time_ps.shape[0]:
            lows.append(int(self.ctr_time_ps.min()))
            highs.append(int(self.ctr_time_ps.max()))
        return (min(lows), max(highs)) if lows else (0, 0)


class TraceBuilder:
    """Append-only accumulator that readers fill in bulk, then `finalize()` into a `Trace`.

    With a memory budget (`memory_budget_bytes` and `spill_dir`, by default those of the ingest in
    progress, `spill_budget.use`), buffers that outgrow it go to files in `spill_dir` and `finalize()`
    sorts from them in bounded memory (`spill.finalize`); below it nothing changes.

    A `provisional` builder is for readers that learn the tracks and the trace's zero only once
    the whole file is read (XPlane): their events and counter samples name a track by a reference
    and count time in the reader's own frame until `settle` says what both are. The events go to
    the builder (and its files) as they are decoded, and nothing is recorded to be added again.
    """

    def __init__(
        self,
        source: str,
        format: str,
        *,
        spill_dir: str | None = None,
        memory_budget_bytes: int | None = None,
        provisional: bool = False,
    ) -> None:
        if spill_dir is None and memory_budget_bytes is None:
            config = spill_budget.current()
            if config is not None:
                spill_dir, memory_budget_bytes = config.spill_dir, config.budget_bytes
        if (spill_dir is None) != (memory_budget_bytes is None):
            raise ValueError("spill_dir and memory_budget_bytes go together")
        self._spill = (
            None
            if spill_dir is None or memory_budget_bytes is None
            else Spiller(spill_dir, memory_budget_bytes)
        )
        # Until `settle`, track ids are references and times are in the reader's frame.
        self._provisional = provisional
        self._buffered = 0  # bytes in the buffers (with a budget)
        self._predicted = 0  # peak of the in-memory finalize, index and cache write (`spill`)
        self.source = source
        self.format = format
        self.clock_origin_ns: int | None = None
        self.metadata: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.skipped: Counter[str] = Counter()
        self._strings: dict[str, int] = {"": 0}
        self._sections: list[Section] = []
        self._section_keys: dict[Any, int] = {}
        self._tracks: list[Track] = []
        self._track_keys: dict[Any, int] = {}
        self._ev_chunks: list[tuple[np.ndarray, ...]] = []
        self._num_events = 0
        # uint8 arrays (no bytes copy of each part), joined once at finalize with bytes.join: the
        # huge pages np.concatenate asks for can wait on the kernel's compaction (0.67-0.84 s vs
        # 0.15 s for 312-345 MB of args; benchmarks/README.md).
        self._args_parts: list[Any] = []  # uint8 arrays; spill_files.FileRange once spilled
        self._args_lengths: list[np.ndarray] = []
        self._flows: list[tuple[int, int, int]] = []
        self._flow_chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._flow_points: list[tuple[Any, int, str, int, int, str]] = []
        self._point_chunks: list[tuple[np.ndarray, ...]] = []
        self._ctr_chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._attachments: dict[str, bytes] = {}
        self._frag_off = np.zeros(0, dtype=np.int64)
        self._frag_blob = np.zeros(0, dtype=np.uint8)

    # -- vocabulary -------------------------------------------------------------------------
    def intern(self, text: str) -> int:
        """String id for `text`, shared by names, categories and flow names."""
        sid = self._strings.get(text)
        if sid is None:
            sid = self._strings[text] = len(self._strings)
        return sid

    @property
    def string_ids(self) -> dict[str, int]:
        """The interning dict itself, for readers that intern in a tight loop (`.get` / setdefault
        with `len(ids)` as the next id is equivalent to `intern`)."""
        return self._strings

    def section(self, name: str, kind: str = "other", sort_index: int = 0, key: Any = None) -> int:
        """Id of the section known by `key` (default: its name), creating it on first use."""
        key = name if key is None else key
        sid = self._section_keys.get(key)
        if sid is None:
            if kind not in SECTION_KINDS:
                raise ValueError(f"unknown section kind {kind!r}")
            sid = len(self._sections)
            self._sections.append(Section(sid, name, kind, sort_index))
            self._section_keys[key] = sid
        return sid

    def track(
        self, section: int, name: str, kind: str = "thread", sort_index: int = 0, key: Any = None
    ) -> int:
        """Id of the track known by `key` (default: (section, name)), creating it on first use."""
        key = (section, name) if key is None else key
        tid = self._track_keys.get(key)
        if tid is None:
            tid = self.new_track(section, name, kind, sort_index)
            self._track_keys[key] = tid
        return tid

    def new_track(self, section: int, name: str, kind: str = "thread", sort_index: int = 0) -> int:
        """Id of a new track that no key finds: for a caller that makes each of its tracks once
        (a Chrome trace's layout: at a million threads the keys and their dict were 70 MB)."""
        if kind not in TRACK_KINDS:
            raise ValueError(f"unknown track kind {kind!r}")
        tid = len(self._tracks)
        self._tracks.append(Track(tid, section, name, kind, sort_index))
        return tid

    def rename_section(self, section: int, name: str, sort_index: int | None = None) -> None:
        self._sections[section].name = name
        if sort_index is not None:
            self._sections[section].sort_index = sort_index

    def rename_track(self, track: int, name: str, sort_index: int | None = None) -> None:
        self._tracks[track].name = name
        if sort_index is not None:
            self._tracks[track].sort_index = sort_index

    @property
    def num_events(self) -> int:
        return self._num_events

    @property
    def spilled(self) -> bool:
        """Whether the buffers went to files (then `finalize()` returns memory-mapped columns)."""
        return self._spill is not None and self._spill.active

    def _check_spill(self, buffered: int, predicted: int) -> None:
        """Count what an add put in the buffers and onto the in-memory path's peak; spill when that
        peak would pass the budget, and once spilled flush the buffers when they fill up."""
        sp = self._spill
        if sp is None:
            return
        self._buffered += buffered
        self._predicted += predicted
        singles = len(self._flows) + len(self._flow_points)
        try:
            if sp.active:
                size = (
                    self._buffered
                    + spill_budget.SINGLE_FLOW_BYTES * len(self._flows)
                    + spill_budget.SINGLE_POINT_BYTES * len(self._flow_points)
                )
                if size > sp.flush_limit:
                    sp.flush(self)
            elif self._predicted + spill_budget.SINGLE_PEAK_BYTES * singles > sp.budget:
                sp.activate()
                sp.flush(self)
        except OSError as e:
            raise spill_budget.SpillWriteError(e) from e

    # -- data ---------------------------------------------------------------------------------
    def add_events(
        self,
        track: int | Sequence[int] | np.ndarray,
        start_ps: Sequence[int] | np.ndarray,
        dur_ps: Sequence[int] | np.ndarray,
        name: Sequence[int] | np.ndarray,
        cat: int | Sequence[int] | np.ndarray = 0,
        args: Sequence[bytes | None] | None = None,
        *,
        args_blob: bytes | np.ndarray | spill_files.FileRange | None = None,
        args_lengths: Sequence[int] | np.ndarray | None = None,
    ) -> int:
        """Append slices (dur > 0) and instants (dur == 0); returns the builder index of the first.

        Args come either as `args`, one JSON object text (bytes) or None per event, or in bulk as
        `args_blob` (the texts of all events concatenated, bytes or uint8 array) with
        `args_lengths` (bytes per event, 0 = no args): readers that already hold their args that
        way skip making and joining one bytes object per event. A blob that lies in a temporary
        file (`spill_files.FileRange`) is copied file to file once the builder has spilled, read now
        otherwise. Builder indices are what `add_flow` takes; they are remapped by `finalize()`.
        """
        start = np.asarray(start_ps, dtype=np.int64)
        n = start.shape[0]
        if n == 0:
            return self._num_events
        dur = np.asarray(dur_ps, dtype=np.int64)
        names = np.asarray(name, dtype=np.int32)
        tracks = np.broadcast_to(np.asarray(track, dtype=np.int32), (n,))
        cats = np.broadcast_to(np.asarray(cat, dtype=np.int32), (n,))
        if dur.shape[0] != n or names.shape[0] != n:
            raise ValueError("event columns differ in length")
        if (dur < 0).any():
            raise ValueError("negative duration: readers clamp or skip before adding")
        if (args_blob is None) != (args_lengths is None):
            raise ValueError("args_blob and args_lengths go together")
        if args_blob is not None and args is not None:
            raise ValueError("give args or args_blob, not both")
        lent = None
        if args_lengths is not None:
            lengths = np.array(args_lengths, dtype=np.int64)
            spilled = self._spill is not None and self._spill.active
            if isinstance(args_blob, spill_files.FileRange) and not spilled:
                args_blob = args_blob.take()
            if isinstance(args_blob, spill_files.FileRange):
                lent, size = args_blob, args_blob.size
            else:
                blob = (
                    np.frombuffer(args_blob, np.uint8)
                    if isinstance(args_blob, bytes)
                    else np.asarray(args_blob)
                )
                if blob.dtype != np.uint8 or blob.ndim != 1:
                    raise ValueError("args_blob must be bytes, a 1-d uint8 array or a spill_files.FileRange")
                size = blob.shape[0]
            if lengths.shape != (n,):
                raise ValueError("args_lengths differs in length from the event columns")
            if (lengths < 0).any() or int(lengths.sum()) != size:
                raise ValueError("args_lengths do not add up to the size of args_blob")
        self._ev_chunks.append((tracks.copy(), start.copy(), dur.copy(), names.copy(), cats.copy()))
        args_bytes = 0
        if args_lengths is not None:
            self._args_lengths.append(lengths)
            if lent is not None:
                if lent.size:
                    self._args_parts.append(lent)  # in a file, not in memory: adds nothing to the peak
            elif blob.shape[0]:
                self._args_parts.append(blob if isinstance(args_blob, bytes) else blob.copy())
                args_bytes = blob.shape[0]
        elif args is None:
            self._args_lengths.append(np.zeros(n, dtype=np.int64))
        else:
            if len(args) != n:
                raise ValueError("args column differs in length")
            parts = [a or b"" for a in args]
            self._args_lengths.append(np.fromiter(map(len, parts), dtype=np.int64, count=n))
            self._args_parts.append(np.frombuffer(b"".join(parts), dtype=np.uint8))
            args_bytes = self._args_parts[-1].shape[0]
        first = self._num_events
        self._num_events += n
        if self._spill is not None:
            self._check_spill(
                n * spill_budget.EVENT_BYTES + args_bytes,
                n * spill_budget.PEAK_EVENT_BYTES + spill_budget.PEAK_ARGS_FACTOR * args_bytes,
            )
        return first

    def add_event(
        self, track: int, start_ps: int, dur_ps: int, name: int, cat: int = 0, args: bytes | None = None
    ) -> int:
        """Append one event (convenience for small readers; bulk readers use `add_events`)."""
        return self.add_events(track, [start_ps], [dur_ps], [name], cat, None if args is None else [args])

    def add_flow(self, src: int, dst: int, name: int = 0) -> None:
        """A flow between two events given by builder index."""
        self._flows.append((src, dst, name))
        if self._spill is not None and len(self._flows) % 4096 == 0:
            self._check_spill(0, 0)

    def add_flows(
        self,
        src: Sequence[int] | np.ndarray,
        dst: Sequence[int] | np.ndarray,
        name: int | Sequence[int] | np.ndarray = 0,
    ) -> None:
        """Many flows at once (builder indices), for readers that link events in bulk."""
        s = np.asarray(src, dtype=np.int64)
        d = np.asarray(dst, dtype=np.int64)
        if s.shape != d.shape:
            raise ValueError("flow columns differ in length")
        n = np.broadcast_to(np.asarray(name, dtype=np.int64), s.shape)
        self._flow_chunks.append((s.copy(), d.copy(), n.copy()))
        if self._spill is not None:
            self._check_spill(s.shape[0] * spill_budget.FLOW_BYTES, s.shape[0] * spill_budget.PEAK_FLOW_BYTES)

    def add_flow_point(
        self, flow_key: Any, name: int, phase: str, track: int, ts_ps: int, binding: str = "enclosing"
    ) -> None:
        """One endpoint of a Chrome-style flow (`s`, `t` or `f`) bound to a slice at finalize.

        `enclosing` binds to the deepest slice on `track` containing `ts_ps` (preferring one that
        starts exactly there); `next` binds to the first slice starting at or after `ts_ps`.
        Points sharing `flow_key` are chained in time order: s → t … → f.
        """
        if self._provisional:
            raise ValueError("flow points bind to tracks: add them once the builder is settled")
        if phase not in FLOW_PHASES:
            raise ValueError(f"flow phase {phase!r}")
        if binding not in FLOW_BINDINGS:
            raise ValueError(f"flow binding {binding!r}")
        self._flow_points.append((flow_key, name, phase, track, ts_ps, binding))
        if self._spill is not None and len(self._flow_points) % 4096 == 0:
            self._check_spill(0, 0)

    def add_flow_points(
        self,
        flow: Sequence[int] | np.ndarray,
        name: Sequence[int] | np.ndarray,
        phase: Sequence[int] | np.ndarray,
        track: Sequence[int] | np.ndarray,
        ts_ps: Sequence[int] | np.ndarray,
        bind_next: Sequence[bool] | np.ndarray,
    ) -> None:
        """Many flow points at once, as `add_flow_point` takes them one by one.

        `flow`: points with the same value (within this call) belong to one flow; `phase`: index
        into FLOW_PHASES (s, t, f); `bind_next`: True for binding "next", False for "enclosing".
        """
        columns = (
            np.array(flow, dtype=np.int64),
            np.array(name, dtype=np.int64),
            np.array(phase, dtype=np.int64),
            np.array(track, dtype=np.int64),
            np.array(ts_ps, dtype=np.int64),
            np.array(bind_next, dtype=bool),
        )
        if any(c.shape != columns[0].shape or c.ndim != 1 for c in columns):
            raise ValueError("flow point columns differ in length")
        if self._provisional:
            raise ValueError("flow points bind to tracks: add them once the builder is settled")
        if columns[2].shape[0] and (int(columns[2].min()) < 0 or int(columns[2].max()) >= len(FLOW_PHASES)):
            raise ValueError("flow phase codes must index FLOW_PHASES")
        self._point_chunks.append(columns)
        if self._spill is not None:
            self._check_spill(
                columns[0].shape[0] * spill_budget.POINT_BYTES,
                columns[0].shape[0] * spill_budget.PEAK_FLOW_BYTES,
            )

    def add_counter(
        self, track: int, time_ps: Sequence[int] | np.ndarray, value: Sequence[float] | np.ndarray
    ) -> None:
        t = np.asarray(time_ps, dtype=np.int64)
        v = np.asarray(value, dtype=np.float64)
        if t.shape != v.shape:
            raise ValueError("counter columns differ in length")
        self._ctr_chunks.append((np.full(t.shape[0], track, dtype=np.int32), t.copy(), v.copy()))
        if self._spill is not None:
            self._check_spill(
                t.shape[0] * spill_budget.COUNTER_BYTES, t.shape[0] * spill_budget.PEAK_COUNTER_BYTES
            )

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def skip(self, reason: str, count: int = 1) -> None:
        """Record input that could not be loaded; shown to the user as 'skipped N: reason'."""
        self.skipped[reason] += count

    def attach(self, name: str, data: bytes) -> None:
        """Keep `data` with the trace as `Trace.attachments[name]` (the last one of a name wins).
        `name` is "/"-separated segments of letters, digits, "_", "-" and inner dots."""
        if not _ATTACHMENT_NAME.fullmatch(name):
            raise ValueError(f"bad attachment name {name!r}")
        if self._spill is not None and self._spill.active:
            try:
                self._spill.attach(name, bytes(data))
            except OSError as e:
                raise spill_budget.SpillWriteError(e) from e
            return
        self._attachments[name] = bytes(data)
        if self._spill is not None:
            self._check_spill(len(data), len(data))

    def typed_args(self, frag_off: np.ndarray, frag_blob: np.ndarray) -> None:
        """Say that every args record given is a typed record (`typed_args`) rendered from this
        fragment table (offsets, bytes); a reader calls it once it has added all its events."""
        if frag_off.shape[0] < 2 or int(frag_off[-1]) != frag_blob.shape[0]:
            raise ValueError("a fragment table is offsets[n+1] over its bytes, with at least one fragment")
        self._frag_off = np.asarray(frag_off, dtype=np.int64)
        self._frag_blob = np.asarray(frag_blob, dtype=np.uint8)

    def settle(self, track_of_ref: np.ndarray, shift_ps: int) -> None:
        """End a provisional builder's references: every event and counter sample added so far is
        on track `track_of_ref[ref]` (-1: a reference no row uses) and starts `shift_ps` later than
        the trace's zero; later calls give track ids and times from the zero, as usual."""
        if not self._provisional:
            raise ValueError("settle is for a provisional builder, once")
        track_of_ref = np.asarray(track_of_ref, dtype=np.int32)
        if track_of_ref.shape[0] and int(track_of_ref.max()) >= len(self._tracks):
            raise ValueError("settle maps a reference to a track id the builder never made")
        refs = track_of_ref.shape[0]

        def tracks(ref: np.ndarray) -> np.ndarray:
            if ref.shape[0] and int(ref.max()) >= refs:
                raise ValueError("rows refer to a track reference beyond those settled")
            out = track_of_ref[ref]
            if (out < 0).any():
                raise ValueError("rows refer to a track reference that names no track")
            return out

        self._ev_chunks[:] = [(tracks(t), s - shift_ps, d, n, c) for t, s, d, n, c in self._ev_chunks]
        self._ctr_chunks[:] = [(tracks(t), time - shift_ps, v) for t, time, v in self._ctr_chunks]
        if self._spill is not None:
            try:
                self._spill.settle(track_of_ref, shift_ps)
            except OSError as e:
                raise spill_budget.SpillWriteError(e) from e
        self._provisional = False

    def discard(self) -> None:
        """Give this builder up (a reader starting over with a new one): a spilled builder removes
        the files it wrote, so that the next one owns the directory."""
        if self._spill is not None:
            self._spill.discard()

    # -- finalize -----------------------------------------------------------------------------
    def take_tracks(self) -> list[Track]:
        """The tracks, handed to the finalized trace (the builder keeps none: no two owners)."""
        tracks, self._tracks = self._tracks, []
        return tracks

    def finalize(self) -> Trace:
        if self._provisional:
            raise ValueError("a provisional builder is settled before finalize")
        # A builder is spent once finalized: its tracks go to the trace as they are (copying a
        # million of them took 2 s of a 2.6 s finalize), and the keys that found them go now,
        # before the finalize's own arrays.
        self._track_keys.clear()
        self._section_keys.clear()
        if self.spilled:
            from profscope.model.spill import finalize as spill_finalize

            try:
                return Trace(**spill_finalize.finalize(self))
            except OSError as e:
                raise spill_budget.SpillWriteError(e) from e
        if self._ev_chunks:
            track, start, dur, name, cat = (np.concatenate(c) for c in zip(*self._ev_chunks))
            lengths = np.concatenate(self._args_lengths)
        else:
            track = np.zeros(0, np.int32)
            start = dur = np.zeros(0, np.int64)
            name = cat = np.zeros(0, np.int32)
            lengths = np.zeros(0, np.int64)
        self._ev_chunks.clear()
        order = event_order_unless_in_place(track, start, dur)
        if order is None:
            order = final_index = np.arange(track.shape[0], dtype=np.int64)
        else:
            track, start, dur, name, cat = track[order], start[order], dur[order], name[order], cat[order]
            final_index = np.empty_like(order)
            final_index[order] = np.arange(order.shape[0], dtype=order.dtype)
        depth = layout_depths(track, start, dur)
        # Args records keep the builder's order: record k is builder event k.
        args_off = np.zeros(order.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=args_off[1:])
        args_blob = np.frombuffer(b"".join(self._args_parts), dtype=np.uint8)
        self._args_parts.clear()
        self._args_lengths.clear()

        flow_src, flow_dst, flow_name = self._resolved_flows(final_index, track, start, dur, depth)

        if self._ctr_chunks:
            ctr_track, ctr_time, ctr_value = (np.concatenate(c) for c in zip(*self._ctr_chunks))
            corder = np.lexsort((ctr_time, ctr_track))
            ctr_track, ctr_time, ctr_value = ctr_track[corder], ctr_time[corder], ctr_value[corder]
        else:
            ctr_track, ctr_time, ctr_value = np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0)

        tracks = self.take_tracks()
        if track.shape[0]:
            # Events are sorted by track: one maximum per run of a track.
            first = np.flatnonzero(np.concatenate(([True], track[1:] != track[:-1])))
            for t, d in zip(track[first].tolist(), np.maximum.reduceat(depth, first).tolist()):
                tracks[t].max_depth = int(d)
        return Trace(
            source=self.source,
            format=self.format,
            clock_origin_ns=self.clock_origin_ns,
            sections=[dataclasses.replace(s) for s in self._sections],
            tracks=tracks,
            strings=list(self._strings),
            ev_start_ps=start,
            ev_dur_ps=dur,
            ev_track=track,
            ev_depth=depth,
            ev_name=name,
            ev_cat=cat,
            ev_args=order.astype(np.int64, copy=False),
            args_off=args_off,
            args_event=final_index.astype(np.int64, copy=False),
            args_blob=args_blob,
            args_frag_off=self._frag_off,
            args_frag_blob=self._frag_blob,
            flow_src=flow_src,
            flow_dst=flow_dst,
            flow_name=flow_name,
            ctr_track=ctr_track,
            ctr_time_ps=ctr_time,
            ctr_value=ctr_value,
            warnings=list(self.warnings),
            skipped=dict(self.skipped),
            metadata=dict(self.metadata),
            attachments=dict(self._attachments),
        )

    def _resolved_flows(
        self,
        final_index: np.ndarray,
        track: np.ndarray,
        start: np.ndarray,
        dur: np.ndarray,
        depth: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        src: list[np.ndarray] = []
        dst: list[np.ndarray] = []
        names: list[np.ndarray] = []
        if self._flows:
            given = np.asarray(self._flows, dtype=np.int64).reshape(-1, 3)
            self._flows.clear()
            self._flow_chunks.append((given[:, 0], given[:, 1], given[:, 2]))
        for s, d, nm in self._flow_chunks:
            src.append(final_index[s])
            dst.append(final_index[d])
            names.append(nm)
        self._flow_chunks.clear()
        points = self._flow_point_columns()
        if points is not None:
            kid, name, rank, p_track, ts, p_next = points
            ev = _bind_flow_points(p_track, ts, p_next, track, start, dur, depth)
            unbound = int((ev < 0).sum())
            if unbound:
                self.skipped["flow endpoint with no slice to bind to"] += unbound
            ok = ev >= 0
            kid, name, rank, ts, ev = kid[ok], name[ok], rank[ok], ts[ok], ev[ok]
            # Points of one flow, chained in time order: s -> t ... -> f.
            order = np.lexsort((name, ev, rank, ts, kid))
            kid, name, ev = kid[order], name[order], ev[order]
            lone = int((np.bincount(kid) == 1).sum()) if kid.shape[0] else 0
            if lone:
                self.skipped["flow with a single endpoint"] += lone
            link = (kid[1:] == kid[:-1]) & (ev[1:] != ev[:-1])
            src.append(ev[:-1][link])
            dst.append(ev[1:][link])
            names.append(name[:-1][link])
        if not src:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32)
        return (
            np.concatenate(src).astype(np.int64),
            np.concatenate(dst).astype(np.int64),
            np.concatenate(names).astype(np.int32),
        )

    def _flow_point_columns(self) -> tuple[np.ndarray, ...] | None:
        """All flow points as (flow, name, phase, track, ts, bind_next) columns, or None.

        Flows are numbered in the order of their first point: points added one by one first,
        then each bulk call (whose flows never join those of another call).
        """
        chunks = []
        if self._flow_points:
            points = self._flow_points
            count = len(points)
            keys: dict[Any, int] = {}
            chunks.append(
                (
                    np.fromiter((keys.setdefault(p[0], len(keys)) for p in points), np.int64, count),
                    np.fromiter((p[1] for p in points), np.int64, count),
                    np.fromiter((FLOW_PHASES.index(p[2]) for p in points), np.int64, count),
                    np.fromiter((p[3] for p in points), np.int64, count),
                    np.fromiter((p[4] for p in points), np.int64, count),
                    np.fromiter((p[5] == "next" for p in points), bool, count),
                )
            )
            self._flow_points.clear()
        chunks.extend(self._point_chunks)
        self._point_chunks.clear()
        if not chunks:
            return None
        offset = 0
        flows = []
        for chunk in chunks:
            flows.append(chunk[0] - (int(chunk[0].min()) if chunk[0].shape[0] else 0) + offset)
            offset = int(flows[-1].max()) + 1 if chunk[0].shape[0] else offset
        flow = np.concatenate(flows)
        _, first, inverse = np.unique(flow, return_index=True, return_inverse=True)
        numbering = np.empty_like(first)
        numbering[np.argsort(first, kind="stable")] = np.arange(first.shape[0])
        columns = [np.concatenate(c) for c in list(zip(*chunks))[1:]]
        return (numbering[inverse.ravel()], *columns)
