"""Chrome trace / Kineto JSON (`.json`, `.json.gz`) → the common columnar `Trace`.

`read` drives the stages, each in its own module:

- decode (here, `_decode`): blocks of the file (`blocks`) → batches of `Event`s
  (`scan`, the slow path and repairs in `decode`) → numpy columns per window
  (`columns`), written to a temporary file every `chrome.spill.CHUNK_BYTES` (so memory
  follows one chunk, not the file). A big plain local file is split in two at an event boundary
  and the second half is decoded by a helper process (`helper`, writing its own chunks)
  while this one decodes the first; the halves are joined only if the split proves exact.
- assemble (`_assemble`), resolving what needs the whole file from what was kept in memory, then
  reading the chunks back in file order into the builder: the parts' ids as one (`parts`);
  the time zero and clock origin (`clock`); sections and tracks (`tracks`);
  complete events, instants and counters (`events`); launch / annotation flows from Kineto
  ids, Chrome flow events and flow v2 (`flows`); B/E and async pairs (`pairing`);
  then metadata (`deviceProperties`, `distributedInfo`, `displayTimeUnit`, other top-level keys,
  `ProfilerStep#N` spans) and what was repaired or skipped.

Memory, besides the builder's own buffers: per decoding process the interpreter (~45 MB), the
read-ahead blocks (3 × `blocks.READ_BLOCK_BYTES`), one window's decoded events and about
2 × CHUNK_BYTES while a chunk is gathered and written; while assembling, one chunk at a time (two
while complete events go to the builder: the next is read ahead, `parts.prefetched`) and
about 3 × `flows.LINK_BUDGET_BYTES` for one bucket of Kineto ids and flow points. Measured
on the 1.1 GB / 3.2 M-event benchmark trace: 0.32 GB for both processes (0.94 GB before), 0.38 GB
on a 10 GB one. What still grows with the file is small per item: the string and track tables
(about 0.5 KB per distinct track key in all: a trace with a million request ids peaks at 0.52 GB),
the flow v2 bindings, the B/E and async begins still open, and (only where a track's halves are
not in time order in the file) every B/E or async half.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import fsspec

from profscope.errors import UnreadableProfile, describe_error
from profscope.formats import registry
from profscope.formats.chrome import helper as chrome_helper
from profscope.formats.chrome import parts as chrome_parts
from profscope.formats.chrome import spill as chrome_spill
from profscope.formats.chrome.blocks import BlockReader
from profscope.formats.chrome.columns import ColumnCollector
from profscope.formats.chrome.decode import Damage, Event
from profscope.formats.chrome.events import SimpleEvents, add_counters
from profscope.formats.chrome.flows import bind_flows, host_device_flows, new_links
from profscope.formats.chrome.pairing import ASYNC, BEGIN_END, pair_halves
from profscope.formats.chrome.parts import Parts
from profscope.formats.chrome.scan import EventScanner, Truncated, gc_paused
from profscope.formats.chrome.spill import SpillFile, TooManyNames, TooManyTracks
from profscope.formats.chrome.tracks import Layout
from profscope.formats.common import opening
from profscope.model.columns import Trace, TraceBuilder

FORMAT = registry.CHROME_TRACE
_log = logging.getLogger(__name__)
# Plain local files at least this big are decoded by two processes (see `helper`).
PARALLEL_MIN_BYTES = 256 << 20
# Progress is reported every 0.5% of the file, and at least this many bytes apart.
PROGRESS_STEP_BYTES = 4 << 20


def read(
    path: str, fs: fsspec.AbstractFileSystem, progress: Callable[[int, int], None] | None = None
) -> Trace:
    """Read one Chrome / Kineto trace file through `fs` into a finalized `Trace`."""
    try:
        total = int(fs.size(path) or 0)
    except (OSError, TypeError, ValueError):
        total = 0
    damage = Damage()
    spills: list[SpillFile] = []
    try:
        with gc_paused():
            return _read(path, fs, total, damage, spills, progress)
    finally:
        for spill in spills:
            spill.close()


def _read(
    path: str,
    fs: fsspec.AbstractFileSystem,
    total: int,
    damage: Damage,
    spills: list[SpillFile],
    progress: Callable[[int, int], None] | None,
) -> Trace:
    parts, scanner, reader = _decode_file(path, fs, total, damage, spills, progress)
    repeated_at = scanner.later_events_at
    if repeated_at is not None:  # the last `traceEvents` wins, as in JSON parsers: read it instead
        for spill in spills:
            spill.close()
        spills.clear()
        damage = Damage()
        parts, scanner, reader = _decode_file(path, fs, total, damage, spills, progress, repeated_at)
        damage.warn(
            "the top-level key 'traceEvents' appears more than once: the last one (at byte "
            f"{repeated_at}) was read and the earlier ones ignored, as JSON parsers do"
        )
    truncated_gz, corrupt_gz = reader.truncated_stream, reader.corrupt_stream
    if truncated_gz:
        damage.warn("the gzip stream is truncated; events up to the cut were loaded")
    if corrupt_gz:
        damage.warn(f"the gzip stream is damaged: {corrupt_gz}; events before the damage were loaded")
    for problem in reader.trailer_damage:
        damage.warn(problem)
    if not scanner.found_events_array and not any(p.num_events or p.num_be or p.num_asy for p in parts):
        raise UnreadableProfile(path, "no traceEvents array in this JSON document")
    builder = TraceBuilder(source=path, format=FORMAT)
    try:
        _assemble(builder, parts, scanner.metadata, damage)
    except TooManyTracks as exc:
        raise UnreadableProfile(path, str(exc)) from exc
    if builder.num_events == 0 and not any(p.rows["ctr"] for p in parts):
        if damage.skipped or not scanner.document_complete:
            raise UnreadableProfile(path, _nothing_readable(damage))
        builder.warn("the trace holds no events")
    for spill in spills:  # the builder holds its own copy now: free the disk before finalizing
        spill.close()
    if progress is not None:
        progress(total, total)
    return builder.finalize()


def _decode_file(
    path: str,
    fs: fsspec.AbstractFileSystem,
    total: int,
    damage: Damage,
    spills: list[SpillFile],
    progress: Callable[[int, int], None] | None,
    events_at: int | None = None,
) -> tuple[list[ColumnCollector], EventScanner, BlockReader]:
    """`_decode` on the file opened from `fs`; what stops it from being read is `UnreadableProfile`."""
    try:
        with opening.open_file(path, fs) as fileobj:  # no FIFO waited on, `fs`'s checks applied
            gz = fileobj.read(2) == b"\x1f\x8b"
            fileobj.seek(0)
            return _decode(path, fs, fileobj, gz, total, damage, spills, progress, events_at)
    except (Truncated, ValueError, OSError, EOFError, TooManyTracks) as exc:
        raise UnreadableProfile(path, describe_error(exc)) from exc


def _nothing_readable(damage: Damage) -> str:
    reasons = [f"{n} × {r}" for r, n in damage.skipped.most_common(3)] + damage.warnings[:2]
    return "no readable events (" + "; ".join(reasons) + ")"


# -- decoding -------------------------------------------------------------------------------------


def _decode(
    path: str,
    fs: fsspec.AbstractFileSystem,
    fileobj: Any,
    gz: bool,
    total: int,
    damage: Damage,
    spills: list[SpillFile],
    progress: Callable[[int, int], None] | None,
    events_at: int | None = None,
) -> tuple[list[ColumnCollector], EventScanner, BlockReader]:
    """Decode the whole file into one collector, or two when a helper process takes the tail;
    their chunks go to temporary files, added to `spills`. `events_at`: where the `traceEvents`
    array to read starts, when the key is repeated (`EventScanner`)."""
    chunk_bytes, directory = chrome_spill.budget()
    key_limit = chrome_spill.track_key_limit()
    collector = ColumnCollector(key_limit)
    # Written behind by a thread (one chunk waiting at most): while decoding this process shares
    # the cores with the helper, but while assembling it is alone, writing link and flow records.
    collector.spill = SpillFile.create(directory, behind_bytes=chunk_bytes)
    spills.append(collector.spill)
    parallel = not gz and total >= PARALLEL_MIN_BYTES and chrome_helper.can_read(fs)
    # The helper reads the file this process opened (never by name: it may have been replaced since).
    helper = _start_helper(fileobj.fileno(), directory, chunk_bytes, key_limit) if parallel else None
    if helper is not None:
        spills.append(helper.spill)
    reader = BlockReader(fileobj, gzip=gz)

    def split(events_start: int, bare_array: bool) -> int | None:
        """Once the events array starts: hand its second half to the helper, stop before it."""
        nonlocal helper
        offset = (
            chrome_helper.split_offset(fileobj.fileno(), events_start, total) if helper is not None else None
        )
        if helper is not None and offset is None:
            helper.stop()
            helper = None
        if helper is not None and offset is not None:
            helper.start(offset, bare_array)
            collector.name_share = 2
        return offset

    def read_alone() -> None:
        """Stop the helper: this process reads the rest itself, its names counted against the
        whole budget (the outcome is the one a single process gives)."""
        nonlocal helper
        assert helper is not None
        helper.stop()
        helper = None
        collector.name_share = 1

    scanner = EventScanner(reader.next_block, collector.damage, on_events_start=split, events_at=events_at)

    reported = 0
    step = max(total // 200, PROGRESS_STEP_BYTES)

    def consume(batches: Iterator[list[Event]]) -> None:
        nonlocal reported
        for batch in batches:
            try:
                collector.add(batch)
            except TooManyNames:
                if collector.name_share == 1:  # alone: the whole budget is passed
                    raise
                _log.warning("names past half the budget in %s; reading on in one process", path)
                read_alone()
            if collector.pending_bytes >= chunk_bytes:
                collector.flush(collector.spill)
            if progress is not None:
                done = reader.raw_bytes_read if gz else scanner.offset
                done = min(total, done + (helper.poll_progress() if helper else 0))
                if done - reported >= step:
                    reported = done
                    progress(done, total)

    tail = None
    try:
        try:
            consume(scanner.batches())
        except Truncated as exc:
            if reader.corrupt_stream:
                raise ValueError(f"damaged gzip data: {reader.corrupt_stream}") from exc
            if reader.header_cut:
                raise ValueError(
                    f"the gzip header is cut: the file ends after {reader.raw_bytes_read} bytes, before any data"
                ) from exc
            raise
        if helper is not None and scanner.reached_stop:
            try:
                tail = helper.result()
            except TooManyNames:  # its half of the budget: the names may yet fit in the whole
                _log.warning("the helper's names past half the budget in %s; reading on in one process", path)
                read_alone()
            except TooManyTracks:
                raise  # the rest would hold as many: reading it here passes the budget too
            except Exception:  # the helper died or failed: this process reads the rest itself
                _log.warning("helper process failed on %s; reading on in one process", path, exc_info=True)
                read_alone()
        if helper is None and scanner.reached_stop:
            consume(scanner.resume())
        collector.flush(collector.spill)
        parts = [collector]
        if tail is not None:
            parts.append(tail.collector)
            scanner.metadata.update(tail.metadata)
            scanner.document_complete = tail.document_complete
            scanner.later_events_at = tail.later_events_at
            damage.merge(tail.collector.damage)
    finally:
        if helper is not None:
            helper.stop()
        reader.close()
    damage.merge(collector.damage)
    return parts, scanner, reader


def _start_helper(
    source_fd: int, directory: str | None, chunk_bytes: int, key_limit: int | None
) -> chrome_helper.HelperProcess | None:
    try:
        return chrome_helper.HelperProcess(source_fd, directory, chunk_bytes, key_limit)
    except OSError:  # no interpreter or temporary file (embedded Python, exhausted fds, …): one process
        _log.warning("could not start a helper process; reading in one process", exc_info=True)
        return None


# -- assembly -------------------------------------------------------------------------------------


def _assemble(
    builder: TraceBuilder, parts: list[ColumnCollector], metadata: dict[str, Any], damage: Damage
) -> None:
    ids = Parts(builder, parts)
    limit = parts[0].key_limit
    if limit is not None:  # each part held fewer keys, the two together may not; async ids now known
        tracks = len(ids.keys) + len(ids.async_keys) - int(ids.async_keys.single.sum())
        if tracks > limit:
            raise TooManyTracks(tracks, limit)
        chrome_spill.check_names(tracks, len(ids.strings), sum(map(len, ids.strings)), limit)
    clock, latest_ps = chrome_parts.clock(ids)
    builder.clock_origin_ns = clock.origin_ns(metadata)
    layout = Layout(builder, ids, metadata)
    spill = parts[0].spill
    assert spill is not None
    events = SimpleEvents(builder, ids, clock, layout, damage, new_links(ids, spill))
    linked, annotations = host_device_flows(builder, ids, clock, layout, events.links, damage)
    trace_end = max(events.end_ps, latest_ps)
    pair_halves(BEGIN_END, builder, ids, clock, layout, damage, trace_end, events.binds)
    pair_halves(ASYNC, builder, ids, clock, layout, damage, trace_end)
    add_counters(builder, ids, clock, layout, damage)
    bind_flows(builder, events.binds, damage)

    for key, value in metadata.items():
        builder.metadata[key] = value
    phases: dict[str, int] = {}
    for p in parts:
        for ph, n in p.phase_counts.items():
            phases[ph] = phases.get(ph, 0) + n
    builder.metadata["reader"] = {
        "events_by_phase": phases,
        "profiler_steps": events.profiler_steps,
        "launch_flows_from_correlation": linked,
        "annotation_flows_from_external_id": annotations,
        "time_zero_us": clock.zero_us_text(),
    }
    for message in damage.warnings:
        builder.warn(message)
    for reason, count in sorted(damage.repaired.items()):
        if count:
            builder.warn(f"repaired: {reason} ({count})")
    for reason, count in sorted(damage.skipped.items()):
        if count:
            builder.skip(reason, count)
