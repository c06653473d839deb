"""Chrome trace / Kineto JSON (`.json`, `.json.gz`) → the common columnar `Trace`.

`read` drives the stages, each in its own module:

- decode (here, `_decode`): blocks of the file (`chrome_blocks`) → batches of `Event`s
  (`chrome_scan`, the slow path and repairs in `chrome_decode`) → numpy columns per window
  (`chrome_columns`), so memory follows the columns, not Python objects per event. A big plain
  local file is split in two at an event boundary and the second half is decoded by a helper
  process (`chrome_helper`) while this one decodes the first; the halves are joined only if the
  split proves exact.
- assemble (`_assemble`), resolving what needs the whole file: the parts' ids as one
  (`chrome_parts`); the time zero and clock origin (`chrome_clock`); sections and tracks
  (`chrome_layout`); complete events, instants and counters (`chrome_events`); B/E and async
  pairs (`chrome_pairing`); launch / annotation flows from Kineto ids, Chrome flow events and
  flow v2 (`chrome_flows`); then metadata (`deviceProperties`, `distributedInfo`,
  `displayTimeUnit`, other top-level keys, `ProfilerStep#N` spans) and what was repaired or skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import fsspec

from profscope.columns import Trace, TraceBuilder
from profscope.errors import UnreadableProfile
from profscope.formats import chrome_helper, registry
from profscope.formats.chrome_blocks import BlockReader
from profscope.formats.chrome_clock import Clock
from profscope.formats.chrome_columns import ColumnCollector
from profscope.formats.chrome_decode import Damage, Event
from profscope.formats.chrome_events import SimpleEvents, add_counters
from profscope.formats.chrome_flows import bind_flows, flow_points, launch_flows
from profscope.formats.chrome_layout import Layout
from profscope.formats.chrome_pairing import pair_async, pair_begin_end
from profscope.formats.chrome_parts import Parts, times
from profscope.formats.chrome_scan import EventScanner, Truncated

FORMAT = registry.CHROME_TRACE
_log = logging.getLogger(__name__)
# Plain local files at least this big are decoded by two processes (see chrome_helper).
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
    try:
        with fs.open(path, "rb") as fileobj:
            gz = fileobj.read(2) == b"\x1f\x8b"
            fileobj.seek(0)
            parts, scanner, reader = _decode(path, fs, fileobj, gz, total, damage, progress)
    except (Truncated, ValueError, OSError, EOFError) as exc:
        raise UnreadableProfile(path, str(exc)) from exc
    truncated_gz, corrupt_gz = reader.truncated_stream, reader.corrupt_stream
    if truncated_gz:
        damage.warn("the gzip stream is truncated; events up to the cut were loaded")
    if corrupt_gz:
        damage.warn(f"the gzip stream is damaged: {corrupt_gz}; events before the damage were loaded")
    if not scanner.found_events_array and not any(p.num_events or p.num_be or p.num_asy for p in parts):
        raise UnreadableProfile(path, "no traceEvents array in this JSON document")
    builder = TraceBuilder(source=path, format=FORMAT)
    _assemble(builder, parts, scanner.metadata, damage)
    if builder.num_events == 0 and not any(c for p in parts for c in p.ctr["us"]):
        if damage.skipped or not scanner.document_complete:
            raise UnreadableProfile(path, _nothing_readable(damage))
        builder.warn("the trace holds no events")
    if progress is not None:
        progress(total, total)
    return builder.finalize()


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
    progress: Callable[[int, int], None] | None,
) -> tuple[list[ColumnCollector], EventScanner, BlockReader]:
    """Decode the whole file into one collector, or two when a helper process takes the tail."""
    reader = BlockReader(fileobj, gzip=gz)
    collector = ColumnCollector()
    parallel = not gz and total >= PARALLEL_MIN_BYTES and chrome_helper.can_read(fs)
    helper = _start_helper() if parallel else None
    local_path = fs._strip_protocol(path) if helper is not None else path

    def split(events_start: int, bare_array: bool) -> int | None:
        """Once the events array starts: hand its second half to the helper, stop before it."""
        nonlocal helper
        offset = chrome_helper.split_offset(local_path, events_start, total) if helper is not None else None
        if helper is not None and offset is None:
            helper.stop()
            helper = None
        if helper is not None and offset is not None:
            helper.start(local_path, offset, bare_array)
        return offset

    scanner = EventScanner(reader.next_block, collector.damage, on_events_start=split)

    reported = 0
    step = max(total // 200, PROGRESS_STEP_BYTES)

    def consume(batches: Iterator[list[Event]]) -> None:
        nonlocal reported
        for batch in batches:
            collector.add(batch)
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
            raise
        if helper is not None and scanner.reached_stop:
            try:
                tail = helper.result()
            except Exception:  # the helper died or failed: this process reads the rest itself
                _log.warning("helper process failed on %s; reading on in one process", path, exc_info=True)
                helper.stop()
                helper = None
                consume(scanner.resume())
        parts = [collector.finish()]
        if tail is not None:
            parts.append(tail.collector)
            scanner.metadata.update(tail.metadata)
            scanner.document_complete = tail.document_complete
            damage.merge(tail.collector.damage)
    finally:
        if helper is not None:
            helper.stop()
        reader.close()
    damage.merge(collector.damage)
    return parts, scanner, reader


def _start_helper() -> chrome_helper.HelperProcess | None:
    try:
        return chrome_helper.HelperProcess()
    except OSError:  # no interpreter to start (embedded Python, exhausted fds, …): one process
        _log.warning("could not start a helper process; reading in one process", exc_info=True)
        return None


# -- assembly -------------------------------------------------------------------------------------


def _assemble(
    builder: TraceBuilder, parts: list[ColumnCollector], metadata: dict[str, Any], damage: Damage
) -> None:
    ids = Parts(builder, parts)
    clock = Clock(times(parts, ("ev", "be", "asy", "ctr")))
    builder.clock_origin_ns = clock.origin_ns(metadata)
    layout = Layout(builder, ids, metadata)
    events = SimpleEvents(builder, ids, clock, layout, damage)
    launch_links, annotation_links = launch_flows(builder, ids, events, layout)
    flow_points(builder, ids, clock, layout, launch_links, damage)
    trace_end = max(events.end_ps, clock.latest_ps(times(parts, ("be", "asy", "ctr"))))
    be_index, be_start = pair_begin_end(builder, ids, clock, layout, damage, trace_end)
    pair_async(builder, ids, clock, layout, damage, trace_end)
    add_counters(builder, ids, clock, layout, damage)
    bind_flows(builder, parts, events, (be_index, be_start), damage)

    for key, value in metadata.items():
        builder.metadata[key] = value
    phases: dict[str, int] = {}
    for p in parts:
        for ph, n in p.phase_counts.items():
            phases[ph] = phases.get(ph, 0) + n
    builder.metadata["reader"] = {
        "events_by_phase": phases,
        "profiler_steps": events.profiler_steps,
        "launch_flows_from_correlation": int(launch_links.shape[0]),
        "annotation_flows_from_external_id": annotation_links,
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
