"""Chrome trace / Kineto JSON (`.json`, `.json.gz`) → the common columnar `Trace`.

The file is streamed (`chrome_scan`) and each window of events becomes numpy columns
(`chrome_columns`), so memory follows the columns, not Python objects per event. A big plain local
file is split in two at an event boundary and the second half is decoded by a second process while
this one decodes the first; the halves are joined only if the split proves exact.

Assembly then resolves what needs the whole file: the time zero (exact integer ps from the decimal
text; `clock_origin_ns` from `baseTimeNanoseconds` or epoch-based `ts`), sections per pid (GPU
when Kineto labels it so or device categories run there) and tracks per thread / stream / async id /
counter series, B/E and async pairs, Kineto launch → kernel flows through correlation ids, Chrome
flow events (`s`/`t`/`f`, `bind_id`), and metadata (`deviceProperties`, `distributedInfo`,
`displayTimeUnit`, other top-level keys, `ProfilerStep#N` spans).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import fsspec
import numpy as np

from profscope.columns import Trace, TraceBuilder
from profscope.errors import UnreadableProfile
from profscope.formats import chrome_columns as cc
from profscope.formats import registry
from profscope.formats.chrome_helper import HelperProcess
from profscope.formats.chrome_scan import EVENT_BOUNDARY, BlockReader, Damage, Event, EventScanner, Truncated

FORMAT = registry.CHROME_TRACE
_log = logging.getLogger(__name__)
# Plain local files at least this big are decoded by two processes (see chrome_helper).
PARALLEL_MIN_BYTES = 256 << 20
# Share of the events array this process decodes itself when a helper takes the rest; measured
# so both finish together on the benchmark trace (the helper pays ~1 s to start and hand over).
MAIN_SHARE = 0.53
# Progress is reported every 0.5% of the file, and at least this many bytes apart.
PROGRESS_STEP_BYTES = 4 << 20
# Events further than this from the bulk of the trace are dropped (garbage timestamps).
OUTLIER_US = 25 * 86_400 * 1_000_000
# µs since the epoch of 2000-01-01 and 2100-01-01: `ts` in this range is taken as epoch-based.
_EPOCH_US_LO, _EPOCH_US_HI = 946_684_800 * 10**6, 4_102_444_800 * 10**6

# Kineto categories of work that runs on a device (kernels, copies, device-side annotations).
GPU_CATEGORIES = frozenset(
    {
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "gpu_user_annotation",
        "gpu_instant_event",
        "cuda_sync",
        "memcpy",
        "memset",
        "mtia_ccp_events",
    }
)
# Flow categories Kineto writes for host launch → device work; these are rebuilt from correlation ids.
_LAUNCH_FLOW_CATEGORIES = frozenset({"ac2g"})
_LEGACY_LAUNCH_FLOW = ("async", "launch")
_STEP_NAME = re.compile(r"^ProfilerStep#\d+$")
_INT_TEXT = re.compile(r"^-?\d+$")
_STREAM_NAME = re.compile(r"^stream\s*(\d+)", re.I)
_CATEGORY_LABELS = {
    "kernel": "kernels",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "gpu_user_annotation": "annotations",
    "cuda_sync": "sync",
}


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
            parts, scanner, reader = _scan(path, fs, fileobj, gz, total, damage, progress)
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


# -- scanning -------------------------------------------------------------------------------------


def _scan(
    path: str,
    fs: fsspec.AbstractFileSystem,
    fileobj: Any,
    gz: bool,
    total: int,
    damage: Damage,
    progress: Callable[[int, int], None] | None,
) -> tuple[list[cc.ColumnCollector], EventScanner, BlockReader]:
    """Decode the whole file into one collector, or two when a helper process takes the tail."""
    reader = BlockReader(fileobj, gzip=gz)
    collector = cc.ColumnCollector()
    helper = _start_helper() if not gz and _parallel_ok(fs, total) else None
    local_path = fs._strip_protocol(path) if helper is not None else path

    def split(events_start: int, bare_array: bool) -> int | None:
        """Once the events array starts: hand its second half to the helper, stop before it."""
        nonlocal helper
        offset = _split_offset(local_path, events_start, total) if helper is not None else None
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


def _start_helper() -> HelperProcess | None:
    try:
        return HelperProcess()
    except OSError:  # no interpreter to start (embedded Python, exhausted fds, …): one process
        _log.warning("could not start a helper process; reading in one process", exc_info=True)
        return None


def _parallel_ok(fs: fsspec.AbstractFileSystem, total: int) -> bool:
    # The helper gets its pipe ends as inherited descriptors (`pass_fds`): POSIX only.
    if total < PARALLEL_MIN_BYTES or (os.cpu_count() or 1) < 2 or os.name != "posix":
        return False
    proto = fs.protocol
    return "file" in ((proto,) if isinstance(proto, str) else tuple(proto))


def _split_offset(path: str, events_start: int, total: int) -> int | None:
    """An event start a little past the middle of the events array (the first after `}` `,` `{`
    there): the helper starts late (a fresh interpreter) and hands its columns over at the end."""
    middle = events_start + int((total - events_start) * MAIN_SHARE)
    with open(path, "rb") as f:
        f.seek(middle)
        window = f.read(1 << 20)
    for m in EVENT_BOUNDARY.finditer(window):
        if m.group().endswith(b"{"):
            return middle + m.end() - 1
    return None


# -- assembly -------------------------------------------------------------------------------------


def _norm_id(value: Any) -> Any:
    """pid / tid as Kineto means them: "25738" and 25738 are the same thread."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INT_TEXT.match(value.strip()):
        return int(value.strip())
    return value


def _norm_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    kind = key[0]
    if kind == cc.THREAD:
        return (kind, _norm_id(key[1]), _norm_id(key[2]))
    if kind == cc.GLOBAL:
        return key
    return (kind, _norm_id(key[1]), *key[2:])


class _Parts:
    """Id maps from each collector's local strings / track keys to the builder's."""

    def __init__(self, builder: TraceBuilder, parts: list[cc.ColumnCollector]) -> None:
        self.parts = parts
        self.keys = cc.Interner()
        self.smaps = []
        for p in parts:
            local = p.strings.values_by_id()
            self.smaps.append(np.fromiter(map(builder.intern, local), np.int32, len(local)))
        # Builder string id → text, for the ids the maps above hand out.
        self.strings = list(builder.string_ids)
        self.kmaps = []
        for p in parts:
            local = p.keys.values_by_id()
            self.kmaps.append(np.fromiter((self.keys[_norm_key(k)] for k in local), np.int32, len(local)))


def _col(table: dict[str, list[np.ndarray]], key: str, dtype: Any) -> np.ndarray:
    parts = table[key]
    if not parts:
        return np.zeros(0, dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _blob(parts: list[bytes]) -> bytes:
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _select_args(blob: bytes, lengths: np.ndarray, keep: np.ndarray) -> bytes:
    """The args texts of the kept events, concatenated: one slice per run of kept events."""
    offsets = np.zeros(lengths.shape[0] + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    edges = np.flatnonzero(np.diff(np.concatenate(([False], keep, [False])).astype(np.int8)))
    first, last = edges[0::2], edges[1::2]
    return b"".join([blob[a:b] for a, b in zip(offsets[first].tolist(), offsets[last].tolist())])


def _densest(sample: np.ndarray) -> int:
    """The sampled time with the most others within the outlier window: the bulk of the trace."""
    if not sample.shape[0]:
        return 0
    sample = np.sort(sample)
    around = np.searchsorted(sample, sample + OUTLIER_US, side="right") - np.searchsorted(
        sample, sample - OUTLIER_US, side="left"
    )
    return int(sample[int(np.argmax(around))])


class _Clock:
    """Exact conversion of (whole µs, ps remainder) to ps from the trace's zero."""

    def __init__(self, parts: list[cc.ColumnCollector]) -> None:
        chunks = [_col(t, "us", np.int64) for p in parts for t in (p.ev, p.be, p.asy, p.ctr) if t["us"]]
        self.reference = (
            _densest(np.concatenate([c[:: max(1, c.shape[0] // 50_000)] for c in chunks])) if chunks else 0
        )
        lowest: tuple[int, int] | None = None
        for p in parts:
            for t in (p.ev, p.be, p.asy, p.ctr):
                if not t["us"]:
                    continue
                us, frac = _col(t, "us", np.int64), _col(t, "frac", np.int32)
                ok = np.abs(us - self.reference) <= OUTLIER_US
                if not ok.any():
                    continue
                u = us[ok]
                low = int(u.min())
                candidate = (low, int(frac[ok][u == low].min()))
                lowest = candidate if lowest is None else min(lowest, candidate)
        zero_ps = 0 if lowest is None else lowest[0] * cc.PS_PER_US + lowest[1]
        zero_ps -= zero_ps % 1000  # a whole ns, so the absolute origin is an exact integer
        self.zero_us, self.zero_rem = divmod(zero_ps, cc.PS_PER_US)
        self.zero_ps = zero_ps

    def to_ps(self, us: np.ndarray, frac: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ps from zero, in-range mask)."""
        ok = np.abs(us - self.reference) <= OUTLIER_US
        rel = np.where(ok, us - self.zero_us, 0) * cc.PS_PER_US + (frac.astype(np.int64) - self.zero_rem)
        return rel, ok

    def origin_ns(self, metadata: dict[str, Any]) -> int | None:
        base = metadata.get("baseTimeNanoseconds")
        if isinstance(base, int) and not isinstance(base, bool):
            return base + self.zero_ps // 1000
        if _EPOCH_US_LO <= self.zero_us <= _EPOCH_US_HI:
            return self.zero_ps // 1000
        return None


def _assemble(
    builder: TraceBuilder, parts: list[cc.ColumnCollector], metadata: dict[str, Any], damage: Damage
) -> None:
    ids = _Parts(builder, parts)
    clock = _Clock(parts)
    builder.clock_origin_ns = clock.origin_ns(metadata)
    layout = _Layout(builder, ids, metadata)
    events = _SimpleEvents(builder, ids, clock, layout, damage)
    launch_links, annotation_links = _launch_flows(builder, ids, events, layout)
    _flow_points(builder, ids, clock, layout, launch_links, damage)
    trace_end = max(events.end_ps, _last_time(parts, clock))
    be_index, be_start = _pair_begin_end(builder, ids, clock, layout, damage, trace_end)
    _pair_async(builder, ids, clock, layout, damage, trace_end)
    _counters(builder, ids, clock, layout, damage)
    _bind_flows(builder, parts, events, (be_index, be_start), damage)

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
        "time_zero_us": _decimal_us(clock.zero_ps),
    }
    for message in damage.warnings:
        builder.warn(message)
    for reason, count in sorted(damage.repaired.items()):
        if count:
            builder.warn(f"repaired: {reason} ({count})")
    for reason, count in sorted(damage.skipped.items()):
        if count:
            builder.skip(reason, count)


def _last_time(parts: list[cc.ColumnCollector], clock: _Clock) -> int:
    """Latest B/E, async or counter time: unclosed slices are drawn up to the end of the trace."""
    last = 0
    for p in parts:
        for table in (p.be, p.asy, p.ctr):
            if table["us"]:
                ts, ok = clock.to_ps(_col(table, "us", np.int64), _col(table, "frac", np.int32))
                if ok.any():
                    last = max(last, int(ts[ok].max()))
    return last


def _decimal_us(ps: int) -> str:
    whole, rest = divmod(ps, cc.PS_PER_US)
    return f"{whole}.{rest:06d}".rstrip("0").rstrip(".")


class _ProcessInfo:
    """What metadata (`M`) events say about processes and threads, keyed by normalized pid / tid."""

    def __init__(self, parts: list[cc.ColumnCollector]) -> None:
        self.names: dict[Any, str] = {}
        self.labels: dict[Any, str] = {}
        self.sort: dict[Any, int] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.thread_sort: dict[tuple[Any, Any], int] = {}
        for p in parts:
            for name, pid, tid, args in p.meta:
                if not isinstance(args, dict):
                    continue
                pid, tid = _norm_id(pid), _norm_id(tid)
                value, sort = args.get("name"), args.get("sort_index")
                if name == "process_name" and isinstance(value, str):
                    self.names[pid] = value
                elif name == "process_labels" and isinstance(args.get("labels"), str):
                    self.labels[pid] = args["labels"]
                elif name == "process_sort_index" and _is_int(sort):
                    self.sort[pid] = sort
                elif name == "thread_name" and isinstance(value, str):
                    self.thread_names[(pid, tid)] = value.strip()  # the last name given wins
                elif name == "thread_sort_index" and _is_int(sort):
                    self.thread_sort[(pid, tid)] = sort


def _device_categories(ids: _Parts) -> dict[int, set[str]]:
    """Device work categories (kernels, copies, …) seen on each track key."""
    found: dict[int, set[str]] = {}
    for p, smap, kmap in zip(ids.parts, ids.smaps, ids.kmaps):
        track, cat = _col(p.ev, "track", np.int32), _col(p.ev, "cat", np.int32)
        if not track.shape[0]:
            continue
        pairs = np.unique(kmap[track].astype(np.int64) << 32 | smap[cat].astype(np.int64))
        for pair in pairs.tolist():
            cat_name = ids.strings[pair & 0xFFFFFFFF].lower()
            if cat_name in GPU_CATEGORIES:
                found.setdefault(pair >> 32, set()).add(cat_name)
    return found


class _Layout:
    """Sections per pid and tracks per key, named and sorted the way Kineto users expect.

    `track_of_key` maps the reader's track keys to builder tracks; `device_key` marks the keys
    that are device streams (the device side of launch and annotation flows).
    """

    def __init__(self, builder: TraceBuilder, ids: _Parts, metadata: dict[str, Any]) -> None:
        keys = ids.keys.values_by_id()
        info = _ProcessInfo(ids.parts)
        device_cats = _device_categories(ids)
        devices = {
            int(dev["id"]): dev
            for dev in metadata.get("deviceProperties") or []
            if isinstance(dev, dict) and _is_int(dev.get("id"))
        }
        pids_with_device_work = {keys[k][1] for k in device_cats if keys[k][0] == cc.THREAD}

        sections: dict[Any, tuple[int, str, str]] = {}
        for key in keys:
            if key[0] != cc.GLOBAL and key[1] not in sections:
                pid = key[1]
                sections[pid] = self._describe_section(
                    pid,
                    info.names.get(pid),
                    info.labels.get(pid),
                    info.sort.get(pid),
                    pid in pids_with_device_work,
                    devices,
                )
        section_ids: dict[Any, int] = {}
        section_kind: dict[Any, str] = {}
        for pid, (sort, name, kind) in sorted(sections.items(), key=lambda kv: (kv[1][0], kv[1][1])):
            section_ids[pid] = builder.section(name, kind, sort, key=("pid", pid))
            section_kind[pid] = kind

        counter_series: dict[tuple[Any, ...], set[Any]] = {}
        for key in keys:
            if key[0] == cc.COUNTER_TRACK:
                counter_series.setdefault(key[1:4], set()).add(key[4])
        async_names = _first_async_names(ids)

        self.device_key = np.zeros(len(keys), bool)
        specs = []  # (key index, section, name, kind, sort index)
        for k, key in enumerate(keys):
            kind = key[0]
            if kind == cc.GLOBAL:
                section = builder.section("Global", "other", 2**31 - 1, key=("global",))
                specs.append((k, section, "global events", "other", 0))
                continue
            pid = key[1]
            section = section_ids[pid]
            if kind == cc.THREAD:
                tid = key[2]
                spec = self._describe_track(
                    section_kind[pid],
                    tid,
                    info.thread_names.get((pid, tid)),
                    info.thread_sort.get((pid, tid)),
                    device_cats.get(k),
                )
                self.device_key[k] = section_kind[pid] in ("gpu", "tpu") and spec[1] == "stream"
                specs.append((k, section, *spec))
            elif kind == cc.PROCESS:
                specs.append((k, section, "process events", "other", -(2**31)))
            elif kind == cc.ASYNC:
                fallback = f"{key[2] or 'async'} {key[3].decode(errors='replace')}"
                specs.append((k, section, async_names.get(k) or fallback, "async", 2**30))
            else:
                name, ident, series = key[2], key[3], key[4]
                label = name + (f" {ident.decode(errors='replace')}" if ident else "")
                if len(counter_series[key[1:4]]) > 1:
                    label += f" {series}"
                specs.append((k, section, label or "counter", "counter", 2**30 + 1))
        self.track_of_key = np.zeros(len(keys), np.int32)
        for k, section, name, tkind, sort in sorted(specs, key=lambda s: (s[1], s[4], s[2])):
            self.track_of_key[k] = builder.track(section, name, tkind, sort, key=("key", k))

    @staticmethod
    def _describe_section(
        pid: Any,
        name: str | None,
        label: str | None,
        sort: int | None,
        device_work: bool,
        devices: dict[int, dict[str, Any]],
    ) -> tuple[int, str, str]:
        """(sort index, name, kind) of the section for one pid."""
        text = f"{label or ''} {name or ''}"
        if re.search(r"\bTPU\b", text):
            kind = "tpu"
        elif (
            re.search(r"\bGPU\b", label or "") or re.search(r"^GPU\b|/device:GPU", name or "") or device_work
        ):
            kind = "gpu"
        elif isinstance(pid, int) or label == "CPU":
            kind = "cpu"
        else:
            kind = "other"
        if kind in ("gpu", "tpu"):
            title = (
                label
                if label and re.search(r"\b[GT]PU\b", label)
                else (name if name and "PU" in name else None)
            )
            title = title or f"{kind.upper()} {pid}"
            device = devices.get(pid) if isinstance(pid, int) else None
            if device and isinstance(device.get("name"), str):
                title += f" ({device['name']})"
        elif kind == "cpu":
            title = f"{name} (pid {pid})" if name else f"process {pid}"
        else:
            title = name or _label(pid, "(no pid)")
        if sort is None:
            # Kineto's own order: host processes by pid, then devices, then everything else.
            number = pid if isinstance(pid, int) and 0 <= pid < 2**24 else 2**24 - 1
            sort = {"cpu": number, "gpu": 2**24 + number, "tpu": 2**24 + number}.get(kind, 2**31 - 2)
        return _clamp(sort), title, kind

    @staticmethod
    def _describe_track(
        section_kind: str, tid: Any, name: str | None, sort: int | None, device_cats: set[str] | None
    ) -> tuple[str, str, int]:
        """(name, kind, sort index) of the track for one tid."""
        stream = None
        if isinstance(tid, str):
            m = _STREAM_NAME.match(tid)
            stream = int(m.group(1)) if m else None
        elif name and _STREAM_NAME.match(name):
            stream = int(_STREAM_NAME.match(name).group(1))
        elif device_cats and isinstance(tid, int):
            stream = tid
        if section_kind in ("gpu", "tpu") and (stream is not None or device_cats):
            label = f"stream {stream if stream is not None else tid}"
            if device_cats:
                shown = sorted({_CATEGORY_LABELS.get(c, c) for c in device_cats})
                label += f" ({', '.join(shown)})"
            elif name and name.strip() != label:
                label = name.strip()
            order = sort if sort is not None else (stream if stream is not None else 0)
            return label, "stream", _clamp(order)
        label = name or (f"thread {tid}" if isinstance(tid, int) else _label(tid, "(no tid)"))
        if sort is None:
            sort = tid if isinstance(tid, int) else 2**31 - 2
        return label, "thread", _clamp(sort)


def _label(value: Any, missing: str) -> str:
    """A pid / tid as text; missing or empty ones say so."""
    return missing if value is None or value == "" else str(value)


def _clamp(value: int) -> int:
    return max(-(2**31), min(int(value), 2**31 - 1))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _first_async_names(ids: _Parts) -> dict[int, str]:
    """Name of the first event on each async track, to name the track."""
    names: dict[int, str] = {}
    for p, smap, kmap in zip(ids.parts, ids.smaps, ids.kmaps):
        track = _col(p.asy, "track", np.int32)
        if not track.shape[0]:
            continue
        keys, first = np.unique(kmap[track], return_index=True)
        name = _col(p.asy, "name", np.int32)
        for k, i in zip(keys.tolist(), first.tolist()):
            names.setdefault(k, ids.strings[smap[name[i]]])
    return names


class _SimpleEvents:
    """Complete events and instants into the builder, part by part; keeps index maps for flows."""

    def __init__(
        self, builder: TraceBuilder, ids: _Parts, clock: _Clock, layout: _Layout, damage: Damage
    ) -> None:
        self.index: list[np.ndarray] = []  # per part: local event → builder index (-1 dropped)
        self.start: list[np.ndarray] = []
        self.track: list[np.ndarray] = []
        self.end_ps = 0
        steps: list[dict[str, Any]] = []
        step_ids = [sid for text, sid in builder.string_ids.items() if _STEP_NAME.match(text)]
        is_step_name = _lookup(len(builder.string_ids), step_ids)
        for p, smap, kmap in zip(ids.parts, ids.smaps, ids.kmaps):
            n = p.num_events
            start, ok = clock.to_ps(_col(p.ev, "us", np.int64), _col(p.ev, "frac", np.int32))
            dropped = int(n - ok.sum())
            if dropped:
                damage.skipped["events more than 25 days away from the rest of the trace"] += dropped
            keys = kmap[_col(p.ev, "track", np.int32)] if n else np.zeros(0, np.int32)
            track = layout.track_of_key[keys]
            dur = _col(p.ev, "dur", np.int64)
            name = smap[_col(p.ev, "name", np.int32)] if n else np.zeros(0, np.int32)
            cat = smap[_col(p.ev, "cat", np.int32)] if n else np.zeros(0, np.int32)
            alen = _col(p.ev, "alen", np.int64)
            blob = _blob(p.ev_args) if p.ev_args else b""
            index = np.full(n, -1, np.int64)
            kept = np.flatnonzero(ok)
            if kept.shape[0] < n:
                blob = _select_args(blob, alen, ok)
            first = builder.add_events(
                track[kept],
                start[kept],
                dur[kept],
                name[kept],
                cat[kept],
                args_blob=blob,
                args_lengths=alen[kept],
            )
            index[kept] = first + np.arange(kept.shape[0])
            if kept.shape[0]:
                self.end_ps = max(self.end_ps, int((start[kept] + dur[kept]).max()))
            if step_ids and n:
                is_step = is_step_name[name] & ok & ~layout.device_key[keys]
                for i in np.flatnonzero(is_step).tolist():
                    steps.append(
                        {"name": ids.strings[name[i]], "start_ps": int(start[i]), "dur_ps": int(dur[i])}
                    )
            self.index.append(index)
            self.start.append(start)
            self.track.append(keys)
            # The builder holds its own copy now: free this part's columns before the next one.
            p.ev = {k: [] for k in p.ev}
            p.ev_args = []
        steps.sort(key=lambda s: (s["start_ps"], s["name"]))
        self.profiler_steps = steps


def _launch_flows(
    builder: TraceBuilder, ids: _Parts, events: _SimpleEvents, layout: _Layout
) -> tuple[np.ndarray, int]:
    """Host → device flows joined on Kineto ids: launches on correlation ids ("launch"), host →
    device annotations of one range on External ids ("annotation").

    Returns the correlation ids linked (their Kineto flow events are then redundant) and the number
    of annotation flows.
    """
    linked = _join_host_device(builder, ids, events, layout, "corr", "launch")
    annotations = _join_host_device(builder, ids, events, layout, "ext", "annotation")
    return linked, int(annotations.shape[0])


def _join_host_device(
    builder: TraceBuilder, ids: _Parts, events: _SimpleEvents, layout: _Layout, kind: str, flow_name: str
) -> np.ndarray:
    """Link every device event to the host event carrying the same id; returns the linked ids."""
    host_v, host_t, host_i, dev_v, dev_i = [], [], [], [], []
    for p, index, start, keys in zip(ids.parts, events.index, events.start, events.track):
        event_parts, value_parts = getattr(p, f"{kind}_event"), getattr(p, f"{kind}_value")
        if not event_parts:
            continue
        local = np.concatenate(event_parts)
        values = np.concatenate(value_parts)
        builder_index = index[local]
        ok = builder_index >= 0
        local, values, builder_index = local[ok], values[ok], builder_index[ok]
        on_device = layout.device_key[keys[local]]
        host_v.append(values[~on_device])
        host_t.append(start[local[~on_device]])
        host_i.append(builder_index[~on_device])
        dev_v.append(values[on_device])
        dev_i.append(builder_index[on_device])
    if not host_v:
        return np.zeros(0, bytes)
    hv, ht, hi = np.concatenate(host_v), np.concatenate(host_t), np.concatenate(host_i)
    dv, di = np.concatenate(dev_v), np.concatenate(dev_i)
    if not hv.shape[0] or not dv.shape[0]:
        return np.zeros(0, bytes)
    hv, dv = _comparable_ids(hv, dv)
    # Several host events may share an id (a runtime call and the driver call inside it): sorted
    # by (id, start), the last of a run is the innermost, the one that launched.
    order = np.lexsort((ht, hv))
    hv, hi = hv[order], hi[order]
    pos = np.searchsorted(hv, dv, side="right") - 1
    found = (pos >= 0) & (hv[np.maximum(pos, 0)] == dv)
    builder.add_flows(hi[pos[found]], di[found], builder.intern(flow_name))
    return np.unique(dv[found])


def _flow_points(
    builder: TraceBuilder, ids: _Parts, clock: _Clock, layout: _Layout, linked: np.ndarray, damage: Damage
) -> None:
    """Chrome flow events (s/t/f), except Kineto launch flows already rebuilt from correlations.

    The points of all parts are considered together: a flow may start before the split offset of
    a two-process read and end after it.
    """
    columns: list[tuple[np.ndarray, ...]] = []
    for p, smap, kmap in zip(ids.parts, ids.smaps, ids.kmaps):
        if not p.flow["us"]:
            continue
        ts, ok = clock.to_ps(_col(p.flow, "us", np.int64), _col(p.flow, "frac", np.int32))
        dropped = int((~ok).sum())
        if dropped:
            damage.skipped["flow events more than 25 days away from the rest of the trace"] += dropped
        columns.append(
            (
                ok,
                ts,
                layout.track_of_key[kmap[_col(p.flow, "track", np.int32)]],
                smap[_col(p.flow, "name", np.int32)],
                smap[_col(p.flow, "cat", np.int32)],
                _col(p.flow, "id", bytes),
                _col(p.flow, "phase", np.int8),
                _col(p.flow, "next", bool),
            )
        )
    if not columns:
        return
    ok, ts, track, name, cat, ident, phase, bind_next = (np.concatenate(c) for c in zip(*columns))
    if linked.shape[0]:
        ids_known = builder.string_ids
        launch_cats = [ids_known[c] for c in _LAUNCH_FLOW_CATEGORIES if c in ids_known]
        is_launch = _lookup(len(ids_known), launch_cats)[cat]
        legacy_cat, legacy_name = (ids_known.get(x, -1) for x in _LEGACY_LAUNCH_FLOW)
        is_launch |= (cat == legacy_cat) & (name == legacy_name)
        ok &= ~(is_launch & _member(ident, linked))
    # A flow is identified by (category, name, id). An id seen once cannot link anything: count
    # it here instead of binding it.
    sel = np.flatnonzero(ok)
    flow = _flow_ids(cat[sel].astype(np.int64) << 32 | name[sel], ident[sel])
    single = np.bincount(flow)[flow] == 1 if flow.shape[0] else np.zeros(0, bool)
    if single.any():
        damage.skipped["flow with a single endpoint"] += int(single.sum())
    sel, flow = sel[~single], flow[~single]
    if sel.shape[0]:
        builder.add_flow_points(flow, name[sel], phase[sel], track[sel], ts[sel], bind_next[sel])


def _lookup(size: int, ids: list[int]) -> np.ndarray:
    """Boolean table over string ids, True at `ids`: a gather instead of np.isin per event."""
    table = np.zeros(size, bool)
    table[ids] = True
    return table


def _comparable_ids(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Digit-string ids as uint64 when they all fit (sorting numbers is much faster), else as
    byte strings of one width."""
    width = max(a.dtype.itemsize, b.dtype.itemsize)
    if width <= 19:  # below 10**19 < 2**64; the id patterns capture digits only
        return a.astype(np.uint64), b.astype(np.uint64)
    return a.astype(f"S{width}"), b.astype(f"S{width}")


def _member(values: np.ndarray, members: np.ndarray) -> np.ndarray:
    """values ∈ members, compared as texts: `values` are byte strings, `members` sorted byte
    strings or sorted numbers (uint64) that stand for their decimal text without leading zeros."""
    if members.dtype.kind == "u":
        # Only a text written the way a number prints can equal one: compare those as numbers.
        decimal, number = _decimal_numbers(values)
        found = np.zeros(values.shape[0], bool)
        if members.shape[0] and decimal.any():
            number = number[decimal]
            at = np.minimum(np.searchsorted(members, number), members.shape[0] - 1)
            found[decimal] = members[at] == number
        return found
    width = max(values.dtype.itemsize, members.dtype.itemsize)
    values, members = values.astype(f"S{width}"), np.sort(members.astype(f"S{width}"))
    pos = np.minimum(np.searchsorted(members, values), members.shape[0] - 1)
    return members[pos] == values


def _decimal_numbers(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mask, uint64 value) of the byte strings that are a number below 10**19 written in decimal
    without leading zeros ("0", "17"); value 0 where the mask is False."""
    n, width = values.shape[0], values.dtype.itemsize
    number = np.zeros(n, np.uint64)
    if n == 0 or width == 0:
        return np.zeros(n, bool), number
    chars = np.ascontiguousarray(values).view(np.uint8).reshape(n, width)
    digit = chars - np.uint8(ord("0"))  # wraps for bytes below "0"
    length = (chars != 0).sum(axis=1)
    ok = (length > 0) & (length <= 19) & ((chars[:, 0] != ord("0")) | (length == 1))
    for k in range(width):  # digits exactly up to the length, then only the NUL padding
        inside = k < length
        ok &= (digit[:, k] <= 9) == inside
        number = np.where(inside, number * np.uint64(10) + digit[:, k], number)
    number[~ok] = 0
    return ok, number


def _flow_ids(kind: np.ndarray, ident: np.ndarray) -> np.ndarray:
    """Dense id per flow point, equal for points with the same (kind, id)."""
    n = kind.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort((ident, kind))
    k, i = kind[order], ident[order]
    new = np.concatenate(([True], (k[1:] != k[:-1]) | (i[1:] != i[:-1])))
    flow = np.empty(n, np.int64)
    flow[order] = np.cumsum(new) - 1
    return flow


class _Halves:
    """B/E or async events of all parts together, in file order (part, then position in part).

    Pairing needs every half at once: a begin may sit before the split offset of a two-process
    read and its end after it.
    """

    def __init__(
        self, ids: _Parts, clock: _Clock, layout: _Layout, table: str, extra: str, damage: Damage, what: str
    ) -> None:
        cols: list[tuple[np.ndarray, ...]] = []
        blobs: list[bytes] = []
        self.sizes = []
        for p, smap, kmap in zip(ids.parts, ids.smaps, ids.kmaps):
            t = getattr(p, table)
            us = _col(t, "us", np.int64)
            self.sizes.append(us.shape[0])
            if not us.shape[0]:
                continue
            ts, ok = clock.to_ps(us, _col(t, "frac", np.int32))
            cols.append(
                (
                    ts,
                    ok,
                    layout.track_of_key[kmap[_col(t, "track", np.int32)]],
                    smap[_col(t, "name", np.int32)],
                    smap[_col(t, "cat", np.int32)],
                    _col(t, extra, np.int8),
                    _col(t, "alen", np.int64),
                )
            )
            blobs.append(_blob(getattr(p, f"{table}_args")) if getattr(p, f"{table}_args") else b"")
        self.empty = not cols
        if self.empty:
            return
        self.ts, ok, self.track, self.name, self.cat, self.extra, alen = (
            np.concatenate(c) for c in zip(*cols)
        )
        self.blob = b"".join(blobs)
        self.offsets = np.zeros(alen.shape[0] + 1, np.int64)
        np.cumsum(alen, out=self.offsets[1:])
        dropped = int((~ok).sum())
        if dropped:
            damage.skipped[f"{what} more than 25 days away from the rest of the trace"] += dropped
        # Time order per track; file order breaks ties (a B and an E at the same ts stay in order).
        order = np.flatnonzero(ok)
        self.order = order[np.lexsort((order, self.ts[order], self.track[order]))]

    def args(self, i: int) -> bytes:
        return self.blob[self.offsets[i] : self.offsets[i + 1]]

    def part_index(self, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(part, index within that part's table) of halves `i`."""
        ends = np.cumsum(self.sizes)
        part = np.searchsorted(ends, i, side="right")
        return part, i - (ends[part] - np.asarray(self.sizes)[part])

    def slices(
        self, begin: np.ndarray, end: np.ndarray, end_ps: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, bytes, np.ndarray]:
        """(track, start, dur, name, cat, args blob, args lengths) of slices opened by halves `begin`
        and closed at `end_ps` by halves `end` (-1: closed by the end of the trace, no E args)."""
        start = self.ts[begin]
        lo, hi = self.offsets[begin].tolist(), self.offsets[begin + 1].tolist()
        pieces = [self.blob[a:b] for a, b in zip(lo, hi)]
        with_end_args = np.flatnonzero((end >= 0) & (self.offsets[end + 1] > self.offsets[end]))
        for k in with_end_args.tolist():
            pieces[k] = _merge_args(pieces[k], self.args(int(end[k])))
        lengths = np.fromiter(map(len, pieces), np.int64, len(pieces))
        return (
            self.track[begin],
            start,
            np.maximum(end_ps - start, 0),
            self.name[begin],
            self.cat[begin],
            b"".join(pieces),
            lengths,
        )


def _merge_args(begin: bytes, end: bytes) -> bytes:
    """B args with E args added (E wins on a repeated key, as in Chrome)."""
    if not end or end.strip() == b"{}":
        return begin
    if not begin or begin.strip() == b"{}":
        return end
    return begin.rstrip()[:-1] + b"," + end.lstrip()[1:]


def _brackets(group: np.ndarray, begin: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Match ends to begins like a stack per group, for halves in time order.

    An end closes the latest open begin of its group; an end with none open is unmatched. Returns
    (matched ends, their begins) as positions in the input, in input order, and the begins left
    open, in input order. Vectorized: the stack depth is a running sum of +1 / -1 held at zero
    where an end finds the stack empty; a begin opens the level it raises the depth to and an end
    closes the level it lowers it from, and per (group, level) the begins and ends then alternate.
    """
    n = group.shape[0]
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    by_group = np.argsort(group, kind="stable")
    g = group[by_group]
    is_begin = begin[by_group]
    first = np.concatenate(([True], g[1:] != g[:-1]))
    gid = np.cumsum(first) - 1
    step = np.where(is_begin, 1, -1)
    total = np.cumsum(step)
    group_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    local = total - (total - step)[group_start]  # running sum within the group
    # Running minimum within each group: later groups are shifted below earlier ones.
    shift = (2 * n + 2) * gid
    low = np.minimum(np.minimum.accumulate(local - shift) + shift, 0)
    depth = local - low
    depth_before = np.concatenate(([0], depth[:-1]))
    depth_before[first] = 0
    matched_end = ~is_begin & (depth_before > 0)
    keep = np.flatnonzero(is_begin | matched_end)
    level = np.where(is_begin, depth, depth_before)[keep]
    order = keep[np.lexsort((level, gid[keep]))]
    closes = np.zeros(order.shape[0], bool)
    closes[1:] = ~is_begin[order[1:]]
    ends = by_group[order[closes]]
    begins = by_group[order[np.flatnonzero(closes) - 1]]
    still_open = np.ones(order.shape[0], bool)
    still_open[np.flatnonzero(closes) - 1] = False
    still_open &= is_begin[order]
    by_end = np.argsort(ends, kind="stable")
    return ends[by_end], begins[by_end], np.sort(by_group[order[still_open]])


def _pair_begin_end(
    builder: TraceBuilder, ids: _Parts, clock: _Clock, layout: _Layout, damage: Damage, trace_end: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """B/E halves paired per thread in time order into slices; per part: B → (builder index, start)."""
    result = [np.full(p.num_be, -1, np.int64) for p in ids.parts]
    starts = [np.zeros(p.num_be, np.int64) for p in ids.parts]
    h = _Halves(ids, clock, layout, "be", "begin", damage, "B/E events")
    if h.empty:
        return result, starts
    seq = h.order
    ends, begins, still_open = _brackets(h.track[seq], h.extra[seq].astype(bool))
    unmatched_end = int((~h.extra[seq].astype(bool)).sum()) - ends.shape[0]
    if unmatched_end:
        damage.skipped["E events without a matching B"] += unmatched_end
    if still_open.shape[0]:
        damage.warn(f"{still_open.shape[0]} B events have no matching E; shown until the end of the trace")
    # Slices in the order their E comes, then those left open (by thread, then time).
    begin = seq[np.concatenate((begins, still_open))]
    end = np.concatenate((seq[ends], np.full(still_open.shape[0], -1, np.int64)))
    if begin.shape[0]:
        end_ps = np.where(end >= 0, h.ts[end], trace_end)
        track, start, dur, name, cat, blob, lengths = h.slices(begin, end, end_ps)
        first = builder.add_events(track, start, dur, name, cat, args_blob=blob, args_lengths=lengths)
        part, local = h.part_index(begin)
        for p in range(len(ids.parts)):
            mine = part == p
            result[p][local[mine]] = first + np.flatnonzero(mine)
            starts[p][local[mine]] = start[mine]
    return result, starts


def _pair_async(
    builder: TraceBuilder, ids: _Parts, clock: _Clock, layout: _Layout, damage: Damage, trace_end: int
) -> None:
    """Nestable async b/e (and legacy S/F) paired per (pid, category, id) track; n → instants.

    An end closes the most recent open begin of the same name on its track.
    """
    h = _Halves(ids, clock, layout, "asy", "phase", damage, "async events")
    if h.empty:
        return
    seq = h.order
    phase = h.extra[seq]
    pairs = np.flatnonzero(phase != cc.ASYNC_INSTANT)
    group = h.track[seq[pairs]].astype(np.int64) << 32 | h.name[seq[pairs]].astype(np.int64)
    ends, begins, still_open = _brackets(group, phase[pairs] == cc.ASYNC_BEGIN)
    ends, begins, still_open = pairs[ends], pairs[begins], pairs[still_open]
    unmatched = int((phase == cc.ASYNC_END).sum()) - ends.shape[0]
    if unmatched:
        damage.skipped["async end events without a matching begin"] += unmatched
    if still_open.shape[0]:
        damage.warn(
            f"{still_open.shape[0]} async begin events have no matching end; shown until the end of the trace"
        )
    # Instants and closed slices in the order of the instant or the end, then those left open.
    instants = np.flatnonzero(phase == cc.ASYNC_INSTANT)
    at = np.concatenate((instants, ends))
    in_order = np.argsort(at, kind="stable")
    begin = seq[np.concatenate((np.concatenate((instants, begins))[in_order], still_open))]
    end = np.concatenate(
        (
            np.concatenate((np.full(instants.shape[0], -1, np.int64), seq[ends]))[in_order],
            np.full(still_open.shape[0], -1, np.int64),
        )
    )
    if not begin.shape[0]:
        return
    is_instant = h.extra[begin] == cc.ASYNC_INSTANT
    end_ps = np.where(is_instant, h.ts[begin], np.where(end >= 0, h.ts[end], trace_end))
    track, start, dur, name, cat, blob, lengths = h.slices(begin, end, end_ps)
    builder.add_events(track, start, dur, name, cat, args_blob=blob, args_lengths=lengths)


def _counters(builder: TraceBuilder, ids: _Parts, clock: _Clock, layout: _Layout, damage: Damage) -> None:
    for p, kmap in zip(ids.parts, ids.kmaps):
        if not p.ctr["us"]:
            continue
        ts, ok = clock.to_ps(_col(p.ctr, "us", np.int64), _col(p.ctr, "frac", np.int32))
        track = layout.track_of_key[kmap[_col(p.ctr, "track", np.int32)]]
        value = _col(p.ctr, "value", np.float64)
        dropped = int((~ok).sum())
        if dropped:
            damage.skipped["counter values more than 25 days away from the rest of the trace"] += dropped
        track, ts, value = track[ok], ts[ok], value[ok]
        order = np.argsort(track, kind="stable")
        track, ts, value = track[order], ts[order], value[order]
        bounds = np.flatnonzero(np.diff(track)) + 1
        for lo, hi in zip(
            np.concatenate(([0], bounds)).tolist(), np.concatenate((bounds, [track.shape[0]])).tolist()
        ):
            if hi > lo:
                builder.add_counter(int(track[lo]), ts[lo:hi], value[lo:hi])


def _bind_flows(
    builder: TraceBuilder,
    parts: list[cc.ColumnCollector],
    events: _SimpleEvents,
    begin_end: tuple[list[np.ndarray], list[np.ndarray]],
    damage: Damage,
) -> None:
    """Flow v2 (`bind_id` with `flow_out` / `flow_in`): link each source to the next sink in time."""
    points: dict[bytes, list[tuple[int, int, bool, bool]]] = {}
    for part_no, p in enumerate(parts):
        for kind, local, ident, flow_in, flow_out in p.binds:
            if kind == "ev":
                index = int(events.index[part_no][local])
                start = int(events.start[part_no][local])
            else:
                index = int(begin_end[0][part_no][local])
                start = int(begin_end[1][part_no][local])
            if index < 0:
                continue
            points.setdefault(ident, []).append((start, index, flow_in, flow_out))
    if not points:
        return
    name = builder.intern("flow")
    unmatched = 0
    for chain in points.values():
        chain.sort()
        for k, (_, src, _, out) in enumerate(chain):
            if not out:
                continue
            dst = next((c[1] for c in chain[k + 1 :] if c[2]), None)
            if dst is None:
                unmatched += 1
            else:
                builder.add_flow(src, dst, name)
    if unmatched:
        damage.skipped["flow_out events with no later flow_in"] += unmatched
