"""XPlane (`.xplane.pb`, an XSpace protobuf) → the common columnar trace model, in bounded memory.

Planes become sections (host CPU first, then devices by ordinal), lines become tracks: one per host
thread, one per GPU stream (named after what runs on it), TPU lines as they are. Event names come
from event metadata (display name when present), args from the event's and its metadata's stats,
flows from the `flow` stat and from host↔device `correlation_id`, `_counters_` lines become
counter tracks, and GPU/TPU sections get the derived lines XProf users know (`derived`).
The wire format is decoded without the protobuf runtime (`common.wire`), in bulk.

How the memory stays bounded: the file is never read whole (`source`). `index_space` walks
the XSpace and its planes, skipping their lines, and decodes the metadata; then a plane's lines
are read in windows of `batch_bytes` (a window holds part of a long line or several short ones)
and every window's events are decoded and turned into builder calls (`plane`) before the
next is read. The walk over the windows (`walk`) hands on its steps in order; in a big file it
runs in a helper process (`helper`), which also decodes part of the windows, while this one
applies the steps before, so the two cores share the reading and the trace stays the same; a helper
that falls behind is dropped mid-walk, the reader walking the rest (`helper`, `Lag`).
What the reader keeps besides: per line its header, state and track (about 1.7 KB),
per metadata entry about 0.9 KB (both count against an ingest's budget, `held_limit`), per counter
series a few numbers, and per GPU or TPU plane the rows its derived lines are built from (about 60
bytes per kernel or op, freed once the plane is done). What the whole file decides is settled at the end:

- times count from the trace's zero, the earliest event rounded down to a whole ns, on the clock
  of the line holding the median event (lines years away from it are dropped). Batches are put on
  the clock of the first line read and go to a provisional builder (`TraceBuilder.settle`) at
  once, which subtracts the difference once every event is known (as its finalize reads them,
  where it spilled): start = (line timestamp − base) · 1000 + offset − zero;
- flows and kernel launches link events anywhere in the file (`flows`);
- a file whose clock assumption does not hold (a line far from the others, a line that names
  itself after its events) is read a second time with what the first pass learnt.

Args stay typed: each event's stats become a typed record (`args`, `model.typed_args`) whose JSON
the model writes only when it is asked for.

The results do not depend on `batch_bytes` or on the memory budget, only on the file.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import fsspec
import numpy as np

from profscope.errors import UnreadableProfile
from profscope.formats import registry
from profscope.formats.common import wire
from profscope.formats.xplane import derived as xplane_derived
from profscope.formats.xplane import helper as xplane_helper
from profscope.formats.xplane.decode import (
    BYTES,
    DOUBLE,
    MIN_HELD_BYTES,
    REF,
    RawLine,
    RawPlane,
    SpaceIndex,
    TooManyLines,
    index_space,
    text,
)
from profscope.formats.xplane.flows import FLOW_CATEGORIES, FlowRecords
from profscope.formats.xplane.helper import HelperBehind, HelperFailed
from profscope.formats.xplane.hlo import InstructionMetadata, attachment_name, hlo_protos
from profscope.formats.xplane.plane import Frame, LineState, PlaneReader, ReadState
from profscope.formats.xplane.source import Source
from profscope.formats.xplane.spill import Scratch
from profscope.formats.xplane.stats import json_value
from profscope.formats.xplane.tracks import plane_kind
from profscope.formats.xplane.walk import Flush, LineStart, Others, PlaneWalk, Step
from profscope.model.columns import Trace, TraceBuilder
from profscope.model.spill import budget as spill_budget

FORMAT = registry.XPLANE
_log = logging.getLogger(__name__)
# File bytes of events decoded together: about 1 MB is fastest (the batch's columns stay in the
# CPU caches), and decoding one takes about 50 times its bytes at its peak.
BATCH_BYTES = 1 << 20
MEMORY_MB = 512  # what the reader may hold: flow records beyond go to scratch files
# Under a small budget batches are cut smaller (budget / _BATCH_SHARE), down to _MIN_BATCH_BYTES.
_BATCH_SHARE = 64
_MIN_BATCH_BYTES = 1 << 16
# Line timestamps below this many ns after the epoch (≈ 11.6 days) are offsets from the profile
# start, as profilers write them after normalizing, not wall-clock times.
_EPOCH_THRESHOLD_NS = 10**15
_FAR_PS = 1 << 61


def read(
    path: str,
    fs: fsspec.AbstractFileSystem,
    progress: Callable[[int, int], None] | None = None,
    *,
    scratch_dir: str | None = None,
    batch_bytes: int | None = None,
    memory_mb: int | None = None,
) -> Trace:
    """Load one `.xplane.pb` file; raises UnreadableProfile only when nothing in it is usable.

    `memory_mb` bounds what the reader holds besides one batch of `batch_bytes` (flow records
    beyond it go to scratch files; the events go to the builder, which has a budget of its own);
    `scratch_dir` holds those files and the copy of a file that is not local. Inside an ingest
    both default to the ingest's (`spill_budget.current`: the reader's share of its budget, its temporary
    entry), elsewhere to MEMORY_MB and the system's temporary directory; `batch_bytes` to
    BATCH_BYTES, less under a small budget.
    """
    config = spill_budget.current()
    if scratch_dir is None and config is not None:
        scratch_dir = config.spill_dir
    if memory_mb is not None:
        budget = memory_mb << 20
    elif config is not None and config.reader_bytes:
        budget = config.reader_bytes
    else:
        budget = MEMORY_MB << 20
    if batch_bytes is None:
        batch_bytes = max(_MIN_BATCH_BYTES, min(BATCH_BYTES, budget // _BATCH_SHARE))
    scratch = Scratch(scratch_dir)
    try:
        source = Source(path, fs, scratch.dir, progress)
        try:
            if source.size == 0:
                raise UnreadableProfile(path, "the file is empty")
            try:
                reading = _Reading(path, source, scratch, progress, batch_bytes, budget)
            except TooManyLines as exc:
                raise UnreadableProfile(path, str(exc)) from None
            trace = reading.run()
        finally:
            source.close()
    finally:
        scratch.close()
    if progress is not None:
        progress(source.size, source.size)
    return trace


def held_limit() -> int | None:
    """Bytes of lines and metadata (`decode.LINE_BYTES`, `METADATA_BYTES`) an ingest's
    budget holds; None outside an ingest."""
    room = spill_budget.track_bytes()
    return None if room is None else max(room, MIN_HELD_BYTES)


class _Recorder:
    """The builder `derived` adds a plane's boxes to: names and tracks go to the trace
    builder as they are, the boxes in order with the reader's other calls (their times are in
    the reader's frame, their tracks given by reference)."""

    def __init__(self, state: ReadState) -> None:
        self.state = state

    def intern(self, name: str) -> int:
        return self.state.builder.intern(name)

    def track(
        self, section: int, name: str, kind: str = "thread", sort_index: int = 0, key: Any = None
    ) -> int:
        return self.state.builder.track(section, name, kind, sort_index, key=key)

    def add_events(
        self, track: int, start_ps: np.ndarray, dur_ps: np.ndarray, name: np.ndarray, *, args: list[bytes]
    ) -> int:
        state = self.state
        lengths, blob = state.args.json_records([a or b"" for a in args])
        return state.add_events(state.ref_of(track), np.asarray(start_ps), dur_ps, name, lengths, blob)


class _SettledBoxes(_Recorder):
    """The settled builder as the sink of boxes made at the end of the read: their JSON args
    become JSON records beside the typed ones (`typed_args`), their tracks and times final."""

    def add_events(
        self, track: int, start_ps: np.ndarray, dur_ps: np.ndarray, name: np.ndarray, *, args: list[bytes]
    ) -> int:
        lengths, blob = self.state.args.json_records([a or b"" for a in args])
        return self.state.builder.add_events(
            track, start_ps, dur_ps, name, args_blob=blob, args_lengths=lengths
        )


class _Reading:
    """One file being read: one pass, or two when the first one's frame did not hold."""

    def __init__(
        self,
        path: str,
        source: Source,
        scratch: Scratch,
        progress: Callable[[int, int], None] | None,
        batch_bytes: int,
        budget: int,
    ) -> None:
        self.path = path
        self.source = source
        self.scratch = scratch
        self.progress = progress
        self.batch_bytes = max(1, batch_bytes)
        self.budget = budget
        self.index: SpaceIndex = index_space(source, held_limit())
        self.line_damage: dict[tuple[int, int], str] = {}  # (plane, line slot) → what went wrong
        self.lines_seen = 0
        self.protos = hlo_protos(self.index)
        self.hlo = InstructionMetadata(self.protos)
        self._state: ReadState | None = None
        self.helper = _start_helper(source) if xplane_helper.can_help(source.size) else None
        self._left: xplane_helper.Helper | None = None  # a helper that fell behind, killed, not reaped

    def run(self) -> Trace:
        frame = Frame()
        try:
            for attempt in range(2):
                state = self._pass(frame)
                used = [ln for ln in state.lines if ln.num_events]
                if not used:
                    break
                base = _median_line(used).timestamp_ns
                far = frozenset(ln.index for ln in used if abs((ln.timestamp_ns - base) * 1000) >= _FAR_PS)
                if attempt == 0 and (state.invalid or far != frame.far):
                    state.builder.discard()
                    state.flows.close()
                    frame = Frame(base, far, dict(state.final_headers))
                    continue
                break
        finally:
            self._stop_helper()
        return self._finish(state)

    # -- the pass over the file --------------------------------------------------------------------
    def _pass(self, frame: Frame) -> ReadState:
        if self.helper is not None:
            try:
                return self._one_pass(frame)
            except HelperFailed:
                _log.warning(
                    "the XPlane helper process failed on %s; reading in one process", self.path, exc_info=True
                )
                self._stop_helper()
                self._discard()
        return self._one_pass(frame)

    def _discard(self) -> None:
        if self._state is not None:
            self._state.builder.discard()
            self._state.flows.close()
            self._state = None

    def _stop_helper(self) -> None:
        for helper in (self.helper, self._left):
            if helper is not None:
                helper.stop()
        self.helper = self._left = None

    def _one_pass(self, frame: Frame) -> ReadState:
        index = self.index
        builder = TraceBuilder(source=self.path, format=FORMAT, provisional=True)
        # An eighth of the budget for each of the flow record tables (two during the pass, three
        # while linking), the rest for a batch.
        flows = FlowRecords(self.scratch, self.budget // 8)
        state = self._state = ReadState(builder, flows, frame)
        recorder = _Recorder(state)
        self.line_damage = {}
        self.lines_seen = 0
        if self.helper is not None:
            self.helper.walk(index.slots, self.batch_bytes)
        for plane, slots in zip(index.planes, index.slots, strict=True):
            plane.lines = []
            reader = PlaneReader(state, plane, self.hlo)
            steps = _Steps(self, reader)
            if self.helper is not None:
                try:
                    for step in self.helper.plane_steps():
                        steps.apply(step)
                except HelperBehind as behind:
                    _log.info(
                        "the XPlane helper fell behind on %s; reading the rest in one process", self.path
                    )
                    # Reaped at the end: waiting for the kernel to tear it down (10-20 ms under
                    # load) would hold the reader up.
                    self.helper.kill()
                    self.helper, self._left = None, self.helper
                    PlaneWalk(self.source, self.batch_bytes, steps.apply, skip=behind.applied).run(
                        slots, behind.resume
                    )
            else:
                PlaneWalk(self.source, self.batch_bytes, steps.apply).run(slots)
            reader.finish(recorder)
        return state

    def _report(self, pos: int) -> None:
        if self.progress is not None:
            size = self.source.size
            done = min(pos, size)
            self.progress((size + done) // 2 if self.source.copied else done, size)

    # -- what the whole file decides ---------------------------------------------------------------
    def _damage(self) -> list[str]:
        index = self.index
        out = list(index.damage)
        for p, slots in enumerate(index.slots):
            whole = len(slots) - 1 if index.cut[p] else len(slots)
            out += [self.line_damage[(p, k)] for k in range(whole) if (p, k) in self.line_damage]
            if index.plane_damage[p]:
                out.append(index.plane_damage[p])
            if index.cut[p] and (p, whole) in self.line_damage:
                out.append(self.line_damage[(p, whole)])
        return out

    def _finish(self, state: ReadState) -> Trace:
        index, b = self.index, state.builder
        damage = self._damage()
        num_events = sum(ln.num_events for ln in state.lines)
        if num_events == 0 and damage:
            raise UnreadableProfile(self.path, f"not a readable XSpace protobuf ({damage[0]})")
        if num_events == 0 and not any(plane.name for plane in index.planes):
            # Stray bytes can happen to parse as protobuf fields; an XSpace names its planes.
            raise UnreadableProfile(self.path, "no XPlane in the file (not an XSpace protobuf)")
        for note in damage:
            b.warn(f"damaged input, stopped reading part of it: {note}")
        for reason, count in (index.skipped + state.skipped).items():
            b.skip(reason, count)
        for message in index.errors:
            b.warn(f"the profiler reported an error: {message}")
        for message in index.warnings:
            b.warn(f"the profiler reported: {message}")
        if state.unknown_names:
            b.warn(f"{state.unknown_names} event stats refer to missing stat metadata (shown as stat#<id>)")
        if state.unknown_refs:
            b.warn(f"{state.unknown_refs} stat values refer to missing stat metadata (shown as ?ref <id>)")
        shift = self._clock(state)
        if state.missing_meta:
            b.warn(
                f"{state.missing_meta} events refer to event metadata missing from their plane; named by id"
            )
        b.typed_args(*state.args.table())
        b.settle(np.array(state.track_of_ref, dtype=np.int32), shift)
        self._flows(state, shift)
        self._metadata(state)
        for program_id, proto in self.protos.items():
            b.attach(attachment_name(program_id), proto)
        if b.num_events == 0 and not state.counter_samples:
            b.warn("the XSpace holds no timed events")
        return b.finalize()

    def _clock(self, state: ReadState) -> int:
        """Set the trace's clock origin; returns what to subtract from the frame's times."""
        b = state.builder
        used = [ln for ln in state.lines if ln.num_events]
        if not used:
            b.clock_origin_ns = self._absolute(state, 0)
            return 0
        base_ns = _median_line(used).timestamp_ns
        if state.far_events:
            b.skip("events on lines whose timestamp is years away from the others", state.far_events)
        offset = (base_ns - (state.base_ns if state.base_ns is not None else base_ns)) * 1000
        zero_ps = (state.min_start - offset) // 1000 * 1000 if state.min_start is not None else 0
        b.clock_origin_ns = self._absolute(state, base_ns + zero_ps // 1000)
        return offset + zero_ps

    def _absolute(self, state: ReadState, zero_ns: int) -> int | None:
        if zero_ns >= _EPOCH_THRESHOLD_NS or any(
            ln.timestamp_ns >= _EPOCH_THRESHOLD_NS for ln in state.lines
        ):
            return zero_ns
        start = self._task_env().get("profile_start_time")
        if isinstance(start, int) and start >= _EPOCH_THRESHOLD_NS:
            return start + zero_ns
        state.builder.warn("the file does not say when the profile started: times are relative only")
        return None

    def _task_env(self) -> dict[str, Any]:
        for plane in self.index.planes:
            if plane.name == "Task Environment":
                return plane.stat_dict(plane.stats)
        return {}

    def _flows(self, state: ReadState, shift: int) -> None:
        b, flows = state.builder, state.flows
        names = [b.intern(c) for c in FLOW_CATEGORIES]
        for src, dst, name in flows.links(b.num_events, names):
            b.add_flows(src, dst, name)
        if flows.unmatched:
            b.warn(
                f"{flows.unmatched} device events share a correlation id with several host events that all "
                "start after them; not linked"
            )
        for plane_index, (group, lo, hi, count, longest, total) in flows.launch_totals().items():
            plane = self.index.planes[plane_index]
            if plane_index in state.sections and xplane_derived.wants_launch_stats(plane):
                span = (lo - shift, hi - shift)
                xplane_derived.add_launch_stats(
                    _SettledBoxes(state), state.sections[plane_index], group, span, count, longest, total
                )
        flows.close()

    def _metadata(self, state: ReadState) -> None:
        b, index = state.builder, self.index
        devices: dict[str, Any] = {}
        for plane_index, sid in sorted(state.sections.items(), key=lambda kv: kv[1]):
            plane = index.planes[plane_index]
            kind, _, ordinal = plane_kind(plane.name)
            devices[str(sid)] = {
                "plane": plane.name,
                "plane_id": plane.id,
                "kind": kind,
                "ordinal": ordinal,
                "stats": _plain_stats(plane),
            }
        b.metadata["devices"] = devices
        b.metadata["hostnames"] = list(index.hostnames)
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
            for p in index.planes
        ]


class _Steps:
    """Applies the steps of one plane's walk (`walk`) to its PlaneReader, in order."""

    def __init__(self, reading: _Reading, reader: PlaneReader) -> None:
        self.reading = reading
        self.reader = reader
        self.state = reader.state
        self.lines: list[LineState] = []  # by slot

    def apply(self, step: Step) -> None:
        if isinstance(step, LineStart):
            self.lines.append(self.reader.line(self.reading.lines_seen, wire.LineRecord()))
            self.reading.lines_seen += 1
            self.reading._report(step.pos)
        elif isinstance(step, Flush):
            self._flush(step)
        else:
            self._others(step)

    def _skipped(self, counts: list[tuple[str, int]]) -> None:
        for reason, count in counts:
            self.state.skipped[reason] += count

    def _flush(self, step: Flush) -> None:
        """Read the events of the pending lines, then end the lines walked to their end."""
        if step.slots:
            pending = [self.lines[k] for k in step.slots]
            for ln, header in zip(pending, step.headers, strict=True):
                ln.record = header
            decoded = step.decode()
            self._skipped(decoded.skipped)
            readable = decoded.readable
            line_at = np.repeat(np.arange(len(pending)), step.counts)
            per_line = np.bincount(line_at[readable], minlength=len(pending))
            lines = []
            for ln, count in zip(pending, per_line.tolist(), strict=True):
                ln.num_events += count
                if count:
                    lines.append(ln)
            renumber = np.cumsum(per_line > 0) - 1
            self.reader.batch(lines, renumber[line_at[readable]], decoded.batch)
        for k, rec in step.ended:
            ln = self.lines[k]
            ln.record = rec
            if rec.damage:
                where = f"plane {self.reader.plane.index}, line {text(rec.name)!r}"
                self.reading.line_damage[(self.reader.plane.index, k)] = f"{where}: {rec.damage}"
            self.reader.end_line(ln)
        self.reading._report(step.pos)

    def _others(self, step: Others) -> None:
        """Events written with an unusual tag come after the line's usual records."""
        ln = self.lines[step.slot]
        ln.record = step.header
        for batch, skipped in step.chunks:
            self._skipped(skipped)
            ln.num_events += batch.num_events
            if batch.num_events:
                self.reader.batch([ln], np.zeros(batch.num_events, dtype=np.int64), batch)


def _start_helper(source: Source) -> xplane_helper.Helper | None:
    try:
        return xplane_helper.Helper(source.fileno())
    except OSError:
        _log.warning("could not start a helper process; reading in one process", exc_info=True)
        return None


def _median_line(used: list[RawLine]) -> RawLine:
    """The line holding the median event: its clock is the common base, so one line with a wild
    timestamp is the one dropped, not all the others."""
    by_time = sorted(used, key=lambda ln: ln.timestamp_ns)
    weights = np.cumsum([ln.num_events for ln in by_time])
    return by_time[int(np.searchsorted(weights, (weights[-1] + 1) // 2))]


def _plain_stats(plane: RawPlane) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mid, kind, value in plane.stats:
        name = plane.stat_names.get(mid, f"stat#{mid}")
        out[name] = json_value(kind, value, plane.stat_names) if kind in (REF, BYTES, DOUBLE) else value
    return out
