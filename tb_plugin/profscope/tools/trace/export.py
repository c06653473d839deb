"""`export`: a session timeline as gzipped Chrome trace JSON, for Perfetto UI, chrome://tracing and
our own reader; `export/preview`: what such an export holds and what redaction takes out of it.

`export?run=&session=&host=[&start=&end=][&redact=1][&redact_shapes=1][&redact_args=1]` streams
`{"displayTimeUnit":"ns","traceEvents":[…],"baseTimeNanoseconds":…,"profscope_export":{…}}`:

- `M` metadata first: a process per section (`process_name`, `process_sort_index`), a thread per
  track (`thread_name`, `thread_sort_index`), in the timeline's order. A section named
  `name (pid N)` (how the Chrome reader names processes) keeps pid N; a `stream N` / `thread N`
  track keeps tid N; the others get free numbers. With several hosts every process name starts
  with its host's.
- every event of the range: slices as `X`, instants as `i` (thread scope), with `cat`, `args` as
  stored (a record that is not valid JSON is kept as a string under `profscope_unparsed_args`);
- counter samples as `C` events on the track's process, named by the track, `{"value": v}`;
- flows whose both ends are exported, as `s`/`f` pairs (`bp: "e"`) bound to their slices. The
  flows the Chrome reader derives from Kineto ids are written as Kineto writes them: a launch flow
  (both ends carry one `correlation`) as an `ac2g` flow whose `id` is that correlation id (our
  reader then finds it redundant with the ids it joins, Perfetto draws it); an annotation flow
  (both ends carry one `External id`) not as an event, the ids in the args carry it, as in
  Kineto's own files (with `redact_args`, which replaces those ids, it is written as an event).
  Every other flow: `cat` `flow`, its own name, a fresh `id`. A flow end is placed at a time
  inside its slice that no deeper slice covers, so a viewer binds it to that slice, not a child;
- `profscope_export`: run, session, hosts (source file, format, offset, clock origin, the source's
  top-level metadata), the range, the counts, and the redaction summary (`redact.py`). Redacted, a
  host's name is replaced whole, its source keeps only the file name and its metadata is redacted
  field by field (`redact_fields.py`).

Times (`ts`, `dur`) are µs from the session start (the timeline's zero), written exactly: 3
decimals (ns) where a batch of events falls on whole ns, 6 (ps) where the source has ps (XPlane).
`baseTimeNanoseconds` places that zero in epoch time when a host's clock origin is known.

The body is made while it is sent: events are read in the order of the cache's args blob, a batch
of at most `BATCH_EVENTS` events / `BATCH_ARGS_BYTES` of args at a time, read through the file
(not the memory map, so the server's resident memory does not grow by the blob), formatted, and
compressed incrementally (`zlib`, gzip framing, level `GZIP_LEVEL`, in a helper thread while the
next batch is formatted); the JSON is never whole in memory. A range holds what `trace/summary`
counts: slices overlapping `[start, end)`, instants within `[start, end]`; counter samples within
`[start, end]`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import itertools
import json
import re
import time
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
import numpy as np
from tensorboard import errors

from profscope.answers import Answer
from profscope.context import HostContext
from profscope.engine.timeline import Timeline
from profscope.formats import registry
from profscope.model import args as model_args
from profscope.model.columns import Trace
from profscope.params import Params
from profscope.tools import Stream
from profscope.tools.trace import redact_fields
from profscope.tools.trace.redact import RedactOptions, Redactor
from profscope.version import __version__

BATCH_EVENTS = 20_000
BATCH_ARGS_BYTES = 8 << 20
GZIP_LEVEL = 6
# pids / tids given to sections and tracks whose names carry none start here.
FREE_ID_BASE = 1
_PID_IN_NAME = re.compile(r"^(?P<name>.*) \(pid (?P<pid>\d{1,9})\)$")
_TID_IN_NAME = re.compile(r"^(?:stream|thread)\s*(?P<tid>\d{1,9})\b")
_CORRELATION = re.compile(rb'"correlation"\s*:\s*(\d{1,18})\b')
_EXTERNAL_ID = re.compile(rb'"External id"\s*:\s*(\d{1,18})\b')
_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")
_PS_PER_US = 1_000_000


class RedactedKind(Answer):
    """One kind of redacted value (`redact.py`): distinct values and places replaced."""

    kind: str
    values: int
    occurrences: int
    capped: bool


class RedactedValue(Answer):
    """One distinct redacted value: its kind, the original partly masked (`ab…yz`), its stand-in."""

    kind: str
    original: str
    replacement: str


class ExportPreview(Answer):
    """What `export` with the same parameters holds, counted before the download starts;
    `replacements` lists each distinct redacted value (at most `redact.PREVIEW_VALUES` a kind)."""

    events: int
    flows: int
    counter_samples: int
    start_ns: float
    end_ns: float
    redact: bool
    redact_shapes: bool
    redact_args: bool
    redactions: list[RedactedKind]
    replacements: list[RedactedValue]
    filename: str


@dataclasses.dataclass(frozen=True)
class ExportRange:
    """Session-time range in ps (None: open-ended)."""

    start_ps: int | None = None
    end_ps: int | None = None

    @property
    def whole(self) -> bool:
        return self.start_ps is None and self.end_ps is None

    def slices(self, start: np.ndarray, dur: np.ndarray, offset_ps: int) -> np.ndarray:
        """Mask of host events (host-local ps) in the range, as `query.range_events` takes them."""
        lo = -(1 << 62) if self.start_ps is None else self.start_ps - offset_ps
        hi = 1 << 62 if self.end_ps is None else self.end_ps - offset_ps
        return np.where(dur > 0, (start < hi) & (start + dur > lo), (start >= lo) & (start <= hi))

    def samples(self, time_ps: np.ndarray, offset_ps: int) -> np.ndarray:
        lo = -(1 << 62) if self.start_ps is None else self.start_ps - offset_ps
        hi = 1 << 62 if self.end_ps is None else self.end_ps - offset_ps
        return (time_ps >= lo) & (time_ps <= hi)


@dataclasses.dataclass(frozen=True)
class Subject:
    """What the metadata names: run, session and the host names as the listing gives them."""

    run: str
    session: str
    hosts: list[str]


@dataclasses.dataclass
class _Batch:
    host: int
    events: np.ndarray  # host event indices
    records: list[bytes]  # their args records, redacted when asked


class Exporter:
    """One export of a timeline: `json_chunks()` makes the document, `preview()` counts it (one
    of them, once: the counts and the numbering of redacted values build up as it goes).

    Both walk the same steps in the same order (names, events, counters, flows, metadata), so the
    redaction counts of a preview are those the file's metadata reports.
    """

    def __init__(
        self, timeline: Timeline, subject: Subject, span: ExportRange, redact: RedactOptions
    ) -> None:
        self.timeline = timeline
        self.subject = subject
        self.span = span
        self.options = redact
        hostnames = list(subject.hosts)
        for host in timeline.hosts:
            hostnames.extend(redact_fields.host_names(host.trace.metadata))
        self.redactor = Redactor(redact, hostnames)
        self.counts = {"events": 0, "flows": 0, "counter_samples": 0}
        self._names: list[dict[int, tuple[bytes, dict[str, int]]]] = [{} for _ in timeline.hosts]
        self._layout = _Layout(timeline)
        self._track_names: list[dict[int, bytes]] = [{} for _ in timeline.hosts]
        self._flow_id = 0

    # -- the document ---------------------------------------------------------------------------
    def json_chunks(self) -> Iterator[bytes]:
        """The JSON document in pieces of at most about one batch."""
        yield b'{"displayTimeUnit":"ns","traceEvents":[\n' + b",\n".join(self._metadata_events())
        for h in range(len(self.timeline.hosts)):
            pieces = itertools.chain(
                (self._event_lines(batch) for batch in self._event_batches(h)),
                self._counter_lines(h),
                self._flow_lines(h),
            )
            for lines in pieces:
                if lines:  # every piece follows the M events, so it starts with a comma
                    yield b",\n" + b",\n".join(lines)
        yield b"\n]," + self._tail() + b"}\n"

    def preview(self) -> ExportPreview:
        """Counts of events, flows, counter samples and redactions, without making the JSON."""
        for _ in self._metadata_events():
            pass
        for h in range(len(self.timeline.hosts)):
            for batch in self._event_batches(h, records=self.options.enabled):
                self._name_texts(batch)
            for _ in self._counter_lines(h, text=False):
                pass
            for _ in self._flow_lines(h, text=False):
                pass
        self._tail()
        start, end = self.range_ns()
        return ExportPreview(
            events=self.counts["events"],
            flows=self.counts["flows"],
            counter_samples=self.counts["counter_samples"],
            start_ns=start,
            end_ns=end,
            redact=self.options.enabled,
            redact_shapes=self.options.shapes,
            redact_args=self.options.args,
            redactions=[RedactedKind(**dataclasses.asdict(k)) for k in self.redactor.summary()],
            replacements=[RedactedValue(**dataclasses.asdict(r)) for r in self.redactor.replacements()],
            filename=self.filename(),
        )

    def range_ns(self) -> tuple[float, float]:
        span = self.timeline.span_ps
        start = 0 if self.span.start_ps is None else self.span.start_ps
        end = span if self.span.end_ps is None else self.span.end_ps
        return start / 1000, end / 1000

    def filename(self) -> str:
        """The download's name: run, session and hosts; only `redacted` when redacted."""
        if self.options.enabled:
            return "redacted.trace.json.gz"
        parts = [self.subject.run, self.subject.session, "+".join(self.subject.hosts)]
        name = "_".join(_UNSAFE_FILENAME.sub("-", p).strip("-.") or "trace" for p in parts)
        return f"{name[:150]}.trace.json.gz"

    # -- processes and threads ----------------------------------------------------------------
    def _metadata_events(self) -> Iterator[bytes]:
        """`M` events naming and ordering processes and threads; keeps the redacted track names
        the counter events reuse."""
        layout = self._layout
        for pid, host, name, sort in layout.processes:
            text = self._redacted_string(name)
            if host is not None:  # merged hosts: "<host>: <section>"
                text = self._host_name(host)[:-1] + b": " + text[1:]
            yield b'{"ph":"M","name":"process_name","pid":%d,"tid":0,"args":{"name":%b}}' % (pid, text)
            yield b'{"ph":"M","name":"process_sort_index","pid":%d,"tid":0,"args":{"sort_index":%d}}' % (
                pid,
                sort,
            )
        for h, track, pid, tid, name, sort in layout.threads:
            text = self._redacted_string(name)
            self._track_names[h][track] = text
            yield b'{"ph":"M","name":"thread_name","pid":%d,"tid":%d,"args":{"name":%b}}' % (pid, tid, text)
            yield b'{"ph":"M","name":"thread_sort_index","pid":%d,"tid":%d,"args":{"sort_index":%d}}' % (
                pid,
                tid,
                sort,
            )

    def _host_name(self, h: int) -> bytes:
        """Host `h`'s name as the listing gives it, as JSON text; replaced whole when redacted,
        however short."""
        name = self.subject.hosts[h] if h < len(self.subject.hosts) else self.timeline.hosts[h].name
        return self.redactor.value("host", name)

    def _redacted_string(self, value: str) -> bytes:
        text, hits = self.redactor.string(value)
        self.redactor.count(hits)
        return text

    # -- events -------------------------------------------------------------------------------
    def _event_batches(self, h: int, records: bool = True) -> Iterator[_Batch]:
        """Host `h`'s events of the range with their (redacted) args, in the args blob's order
        (without `records`, the events only: an unredacted preview counts them)."""
        trace = self.timeline.hosts[h].trace
        for window in model_args.windows(trace, BATCH_ARGS_BYTES, BATCH_EVENTS, text=records):
            events = window.events
            keep = None
            if not self.span.whole:
                keep = self.span.slices(
                    np.asarray(trace.ev_start_ps)[events],
                    np.asarray(trace.ev_dur_ps)[events],
                    self.timeline.offsets_ps[h],
                )
            if not records and (keep is None or keep.any()):
                events = events if keep is None else events[keep]
                self.counts["events"] += int(events.shape[0])
                yield _Batch(h, events, [])
            elif keep is None or keep.any():
                data = window.text.tobytes()
                lo, hi = window.offsets[:-1], window.offsets[1:]
                if keep is not None:
                    events, lo, hi = events[keep], lo[keep], hi[keep]
                texts = _valid_records([data[a:b] for a, b in zip(lo.tolist(), hi.tolist())])
                self.counts["events"] += int(events.shape[0])
                yield _Batch(h, events, self.redactor.records(texts))

    def _name_texts(self, batch: _Batch) -> tuple[list[bytes], list[bytes]]:
        """JSON texts of the batch's event names and of their `,"cat":…` parts (redacted, each
        string once per host, counted once per event)."""
        trace = self.timeline.hosts[batch.host].trace
        cache = self._names[batch.host]
        name_ids = np.asarray(trace.ev_name)[batch.events]
        cat_ids = np.asarray(trace.ev_cat)[batch.events]
        uniq, counts = np.unique(np.concatenate((name_ids, cat_ids)), return_counts=True)
        for sid, count in zip(uniq.tolist(), counts.tolist()):
            hit = cache.get(sid)
            if hit is None:
                hit = cache[sid] = self.redactor.string(trace.strings[sid])
            if sid:
                self.redactor.count(hit[1], count)
        names = [cache[s][0] for s in name_ids.tolist()]
        cats = [b',"cat":' + cache[c][0] if c else b"" for c in cat_ids.tolist()]
        return names, cats

    def _event_lines(self, batch: _Batch) -> list[bytes]:
        h = batch.host
        trace = self.timeline.hosts[h].trace
        events = batch.events
        names, cats = self._name_texts(batch)
        tracks = np.asarray(trace.ev_track)[events]
        pids = self._layout.pid[h][tracks].tolist()
        tids = self._layout.tid[h][tracks].tolist()
        dur = np.asarray(trace.ev_dur_ps)[events]
        starts = _us_texts(np.asarray(trace.ev_start_ps)[events] + self.timeline.offsets_ps[h])
        durs = _us_texts(dur)
        lines = []
        for ph, pid, tid, ts, d, name, cat, args in zip(
            (dur > 0).tolist(), pids, tids, starts, durs, names, cats, batch.records
        ):
            lines.append(
                b'{"ph":%b,"pid":%d,"tid":%d,"ts":%b%b,"name":%b%b%b}'
                % (
                    b'"X"' if ph else b'"i","s":"t"',
                    pid,
                    tid,
                    ts,
                    b',"dur":' + d if ph else b"",
                    name,
                    cat,
                    b',"args":' + args if args else b"",
                )
            )
        return lines

    # -- counters -----------------------------------------------------------------------------
    def _counter_lines(self, h: int, text: bool = True) -> Iterator[list[bytes]]:
        trace = self.timeline.hosts[h].trace
        total = int(trace.ctr_time_ps.shape[0])
        offset = self.timeline.offsets_ps[h]
        for lo in range(0, total, BATCH_EVENTS):
            times = np.asarray(trace.ctr_time_ps[lo : lo + BATCH_EVENTS])
            track = np.asarray(trace.ctr_track[lo : lo + BATCH_EVENTS])
            value = np.asarray(trace.ctr_value[lo : lo + BATCH_EVENTS])
            if not self.span.whole:
                keep = self.span.samples(times, offset)
                times, track, value = times[keep], track[keep], value[keep]
            self.counts["counter_samples"] += int(times.shape[0])
            if not text or not times.shape[0]:
                continue
            names = self._track_names[h]
            values = msgspec.json.encode(value.tolist())[1:-1].split(b",")
            pids = self._layout.pid[h][track].tolist()
            tids = self._layout.tid[h][track].tolist()
            yield [
                b'{"ph":"C","pid":%d,"tid":%d,"ts":%b,"name":%b,"args":{"value":%b}}'
                % (p, t, ts, names[k], v)
                for p, t, ts, k, v in zip(pids, tids, _us_texts(times + offset), track.tolist(), values)
            ]

    # -- flows --------------------------------------------------------------------------------
    def _flow_lines(self, h: int, text: bool = True) -> Iterator[list[bytes]]:
        host = self.timeline.hosts[h]
        trace = host.trace
        offset = self.timeline.offsets_ps[h]
        total = int(trace.flow_src.shape[0])
        kineto = trace.format == registry.CHROME_TRACE
        launch, annotation = _string_id(trace, "launch"), _string_id(trace, "annotation")
        start, dur = np.asarray(trace.ev_start_ps), np.asarray(trace.ev_dur_ps)
        for lo in range(0, total, BATCH_EVENTS):
            src = np.asarray(trace.flow_src[lo : lo + BATCH_EVENTS])
            dst = np.asarray(trace.flow_dst[lo : lo + BATCH_EVENTS])
            name = np.asarray(trace.flow_name[lo : lo + BATCH_EVENTS])
            if not self.span.whole:
                keep = self.span.slices(start[src], dur[src], offset) & self.span.slices(
                    start[dst], dur[dst], offset
                )
                src, dst, name = src[keep], dst[keep], name[keep]
            self.counts["flows"] += int(src.shape[0])
            cache = self._names[h]
            uniq, counts = np.unique(name, return_counts=True)
            for sid, count in zip(uniq.tolist(), counts.tolist()):
                hit = cache.get(sid)
                if hit is None:
                    hit = cache[sid] = self.redactor.string(trace.strings[sid])
                self.redactor.count(hit[1], count)
            if not text or not src.shape[0]:
                continue
            correlation = np.full(src.shape[0], -1, np.int64)
            implied = np.zeros(src.shape[0], bool)
            if kineto and launch is not None:
                correlation = _shared_ids(trace, src, dst, name == launch, _CORRELATION)
            if kineto and annotation is not None and not self.options.args:
                implied = _shared_ids(trace, src, dst, name == annotation, _EXTERNAL_ID) >= 0
            yield self._flow_pair_lines(
                h, src[~implied], dst[~implied], name[~implied], correlation[~implied]
            )

    def _flow_pair_lines(
        self, h: int, src: np.ndarray, dst: np.ndarray, name: np.ndarray, correlation: np.ndarray
    ) -> list[bytes]:
        trace = self.timeline.hosts[h].trace
        offset = self.timeline.offsets_ps[h]
        layout = self._layout
        track = np.asarray(trace.ev_track)
        ends = []
        for column in (src, dst):
            ends.append(
                (
                    layout.pid[h][track[column]].tolist(),
                    layout.tid[h][track[column]].tolist(),
                    _us_texts(bind_times(trace, column) + offset),
                )
            )
        (s_pid, s_tid, s_ts), (d_pid, d_tid, d_ts) = ends
        cache = self._names[h]
        kineto_name = b'"ac2g"' if h == 0 else b'"ac2g %d"' % h
        lines = []
        for k, sid in enumerate(name.tolist()):
            corr = int(correlation[k])
            if corr >= 0:
                cat, flow_name, ident = b'"ac2g"', kineto_name, corr
            else:
                self._flow_id += 1
                cat, flow_name, ident = b'"flow"', cache[sid][0], self._flow_id
            lines.append(
                b'{"ph":"s","id":%d,"pid":%d,"tid":%d,"ts":%b,"cat":%b,"name":%b}'
                % (ident, s_pid[k], s_tid[k], s_ts[k], cat, flow_name)
            )
            lines.append(
                b'{"ph":"f","bp":"e","id":%d,"pid":%d,"tid":%d,"ts":%b,"cat":%b,"name":%b}'
                % (ident, d_pid[k], d_tid[k], d_ts[k], cat, flow_name)
            )
        return lines

    # -- metadata -----------------------------------------------------------------------------
    def _tail(self) -> bytes:
        """`baseTimeNanoseconds` (when known) and the `profscope_export` object."""
        timeline = self.timeline
        hosts = []
        for h, host in enumerate(timeline.hosts):
            trace = host.trace
            metadata = {k: v for k, v in trace.metadata.items() if k != "baseTimeNanoseconds"}
            hosts.append(
                b'{"name":%b,"source":%b,"format":%b,"offset_ns":%b,"clock_origin_ns":%b,"metadata":%b}'
                % (
                    self._host_name(h),
                    redact_fields.redacted_source(self.redactor, trace.source),
                    msgspec.json.encode(trace.format),
                    msgspec.json.encode(timeline.offsets_ps[h] / 1000),
                    msgspec.json.encode(trace.clock_origin_ns),
                    redact_fields.redacted_metadata(self.redactor, metadata),
                )
            )
        start, end = self.range_ns()
        summary = {
            "enabled": self.options.enabled,
            "shapes": self.options.shapes,
            "args": self.options.args,
            "kinds": [dataclasses.asdict(k) for k in self.redactor.summary()],
        }
        export = (
            b'{"tool":%b,"exported_at":%b,"run":%b,"session":%b,"hosts":[%b],"range_ns":%b,'
            b'"whole_trace":%b,"time_unit":"ts and dur: microseconds from the session start",'
            b'"counts":%b,"redaction":%b}'
            % (
                msgspec.json.encode(f"profscope {__version__}"),
                msgspec.json.encode(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
                self._redacted_string(self.subject.run),
                self._redacted_string(self.subject.session),
                b",".join(hosts),
                msgspec.json.encode([start, end]),
                b"true" if self.span.whole else b"false",
                msgspec.json.encode(self.counts),
                msgspec.json.encode(summary),
            )
        )
        base = self._base_time_ns()
        prefix = b'\n"baseTimeNanoseconds":%d,' % base if base is not None else b"\n"
        return prefix + b'"profscope_export":' + export

    def _base_time_ns(self) -> int | None:
        """Epoch ns of the session's zero, from the first host with a clock origin."""
        for host, offset in zip(self.timeline.hosts, self.timeline.offsets_ps):
            origin = host.trace.clock_origin_ns
            if origin is not None:
                return (origin * 1000 - offset) // 1000
        return None


class _Layout:
    """pid / tid of every section / track of the timeline, and the names and order they show."""

    def __init__(self, timeline: Timeline) -> None:
        self.processes: list[tuple[int, int | None, str, int]] = []
        self.threads: list[tuple[int, int, int, int, str, int]] = []
        self.pid: list[np.ndarray] = []
        self.tid: list[np.ndarray] = []
        merged = len(timeline.hosts) > 1
        sections = [(h, s) for h, host in enumerate(timeline.hosts) for s in host.trace.sections]
        sections.sort(key=lambda hs: (hs[0], hs[1].sort_index, hs[1].id))
        wanted: dict[tuple[int, int], tuple[int | None, str]] = {}
        for h, s in sections:
            m = _PID_IN_NAME.match(s.name)
            wanted[(h, s.id)] = (int(m.group("pid")), m.group("name")) if m else (None, s.name)
        pids = _assign([wanted[(h, s.id)][0] for h, s in sections])
        section_pid: dict[tuple[int, int], int] = {}
        for order, ((h, s), pid) in enumerate(zip(sections, pids)):
            preferred, name = wanted[(h, s.id)]
            if preferred != pid:
                name = s.name
            section_pid[(h, s.id)] = pid
            self.processes.append((pid, h if merged else None, name, order))
        for h, host in enumerate(timeline.hosts):
            trace = host.trace
            pid_of = np.zeros(len(trace.tracks), np.int64)
            tid_of = np.zeros(len(trace.tracks), np.int64)
            by_section: dict[int, list[Any]] = {}
            for t in trace.tracks:
                by_section.setdefault(t.section, []).append(t)
            for section, tracks in by_section.items():
                tracks.sort(key=lambda t: (t.sort_index, t.id))
                preferred = [_preferred_tid(t.name) for t in tracks]
                pid = section_pid[(h, section)]
                for order, (t, tid) in enumerate(zip(tracks, _assign(preferred))):
                    pid_of[t.id], tid_of[t.id] = pid, tid
                    self.threads.append((h, t.id, pid, tid, t.name, order))
            self.pid.append(pid_of)
            self.tid.append(tid_of)
        order_of = {pid: order for pid, _, _, order in self.processes}
        self.threads.sort(key=lambda t: (order_of[t[2]], t[5]))


def _preferred_tid(name: str) -> int | None:
    m = _TID_IN_NAME.match(name)
    return int(m.group("tid")) if m else None


def _assign(preferred: Sequence[int | None]) -> list[int]:
    """Ids: the preferred one where given and not taken by an earlier item, else the lowest free
    from FREE_ID_BASE."""
    taken: set[int] = set()
    out: list[int | None] = []
    for p in preferred:
        if p is not None and p not in taken:
            taken.add(p)
            out.append(p)
        else:
            out.append(None)
    free = FREE_ID_BASE
    result = []
    for p in out:
        if p is None:
            while free in taken:
                free += 1
            taken.add(free)
            p = free
        result.append(p)
    return result


def bind_times(trace: Trace, events: np.ndarray) -> np.ndarray:
    """A time (host ps) inside each event that no deeper slice of its track covers: where a flow
    end binds to the event itself and not to a child. Its start, unless a child starts there too;
    then the middle of the first gap between the children that cover the start and whatever
    starts next (a whole ns when one fits), so a viewer's rounding to ns cannot land on a child's
    edge; the start again when children fill the event whole."""
    start = np.asarray(trace.ev_start_ps)
    out = start[events].copy()
    n = trace.num_events
    if not events.shape[0]:
        return out
    following = np.minimum(events + 1, n - 1)
    track, depth = np.asarray(trace.ev_track), np.asarray(trace.ev_depth)
    covered = (
        (following != events)
        & (track[following] == track[events])
        & (start[following] == start[events])
        & (depth[following] > depth[events])
    )
    dur = np.asarray(trace.ev_dur_ps)
    for k in np.flatnonzero(covered).tolist():
        e = int(events[k])
        end, point, child_depth, row = int(start[e] + dur[e]), int(start[e]), int(depth[e]) + 1, int(track[e])
        j = e + 1
        while j < n and int(track[j]) == row and int(start[j]) <= point < end:
            if int(depth[j]) == child_depth:
                point = max(point, int(start[j] + dur[j]) if dur[j] else int(start[j]) + 1)
            j += 1
        if point >= end:
            continue
        gap_end = min(end, int(start[j])) if j < n and int(track[j]) == row else end
        middle = (point + gap_end) // 2
        whole_ns = middle - middle % 1000
        out[k] = whole_ns if whole_ns > point else middle
    return out


def _shared_ids(
    trace: Trace,
    src: np.ndarray,
    dst: np.ndarray,
    which: np.ndarray,
    pattern: re.Pattern[bytes],
) -> np.ndarray:
    """The Kineto id (`pattern`'s group) both ends of each flow picked by `which` carry, -1 where
    they share none."""
    out = np.full(src.shape[0], -1, np.int64)
    for k in np.flatnonzero(which).tolist():
        ids = []
        for e in (int(src[k]), int(dst[k])):
            m = pattern.search(model_args.args_json(trace, e))
            ids.append(int(m.group(1)) if m else None)
        if ids[0] is not None and ids[0] == ids[1]:
            out[k] = ids[0]
    return out


def _string_id(trace: Trace, text: str) -> int | None:
    try:
        return trace.strings.index(text)
    except ValueError:
        return None


def _us_texts(ps: np.ndarray) -> list[bytes]:
    """Exact µs texts of ps values: 3 decimals when all are whole ns, else 6."""
    if not ps.shape[0]:
        return []
    magnitude = np.abs(ps)
    whole, frac = np.divmod(magnitude, _PS_PER_US)
    if (frac % 1000).any():
        texts = [b"%d.%06d" % wf for wf in zip(whole.tolist(), frac.tolist())]
    else:
        texts = [b"%d.%03d" % wf for wf in zip(whole.tolist(), (frac // 1000).tolist())]
    for k in np.flatnonzero(ps < 0).tolist():
        texts[k] = b"-" + texts[k]
    return texts


def _valid_records(records: list[bytes]) -> list[bytes]:
    """Args records as JSON texts a viewer can parse: valid ones as they are; NaN / Infinity
    (which Python's json reads) re-encoded with nulls; anything else kept as a string."""
    present = [r for r in records if r]
    if not present:
        return records
    try:
        msgspec.json.decode(b"[" + b",".join(present) + b"]", type=list[msgspec.Raw])
        return records
    except msgspec.DecodeError:
        return [_repaired(r) if r else r for r in records]


def _repaired(record: bytes) -> bytes:
    try:
        msgspec.json.decode(record, type=msgspec.Raw)
        return record
    except msgspec.DecodeError:
        pass
    text = record.decode("utf-8", errors="replace")
    try:
        return msgspec.json.encode(json.loads(text))
    except ValueError:
        return msgspec.json.encode({"profscope_unparsed_args": text})


# -- gzip and the routes --------------------------------------------------------------------------


def gzip_chunks(chunks: Iterator[bytes], level: int = GZIP_LEVEL) -> Iterator[bytes]:
    """`chunks` compressed as one gzip stream, piece by piece. Compression runs in a helper thread
    (zlib lets go of the GIL) while the next piece is made, one piece ahead at most."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, 31)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="profscope-export") as pool:
        pending: concurrent.futures.Future[bytes] | None = None
        for chunk in chunks:
            ahead = pool.submit(compressor.compress, chunk)
            if pending is not None and (out := pending.result()):
                yield out
            pending = ahead
        if pending is not None and (out := pending.result()):
            yield out
        yield pool.submit(compressor.flush).result()


def request_from(timeline: Timeline, params: Params) -> tuple[ExportRange, RedactOptions]:
    """The range (`start`, `end`: session ns) and redaction (`redact`, `redact_shapes`,
    `redact_args`: 1 or 0) a request asks for; shapes or args imply `redact`."""
    start, end = params.float("start"), params.float("end")
    if start is not None and end is not None and end < start:
        raise errors.InvalidArgumentError(f"{timeline.subject}: export range ends before it starts")
    flags = {name: _flag(params, name) for name in ("redact", "redact_shapes", "redact_args")}
    options = RedactOptions(
        enabled=flags["redact"] or flags["redact_shapes"] or flags["redact_args"],
        shapes=flags["redact_shapes"],
        args=flags["redact_args"],
    )
    span = ExportRange(
        None if start is None else round(start * 1000), None if end is None else round(end * 1000)
    )
    return span, options


def _flag(params: Params, name: str) -> bool:
    value = params.text(name, "0")
    if value not in ("0", "1", "true", "false"):
        raise errors.InvalidArgumentError(f"query parameter {name!r} must be 1 or 0, got {value!r}")
    return value in ("1", "true")


def exporter_for(ctx: HostContext, params: Params) -> Exporter:
    timeline = ctx.timeline()
    span, options = request_from(timeline, params)
    subject = Subject(ctx.run.name, ctx.session.name, [h.name for h in ctx.hosts])
    return Exporter(timeline, subject, span, options)


def export(ctx: HostContext, params: Params) -> Stream:
    """`export?…`: the gzipped Chrome trace JSON, streamed as an attachment."""
    exporter = exporter_for(ctx, params)
    return Stream(gzip_chunks(exporter.json_chunks()), "application/gzip", exporter.filename())


def export_preview(ctx: HostContext, params: Params) -> ExportPreview:
    """`export/preview?…`: what `export` with the same parameters holds and redacts."""
    return exporter_for(ctx, params).preview()


def write(exporter: Exporter, path: str, level: int = GZIP_LEVEL) -> int:
    """Write the export to `path` (the CLI); returns the bytes written."""
    written = 0
    with open(path, "wb") as f:
        for piece in gzip_chunks(exporter.json_chunks(), level):
            f.write(piece)
            written += len(piece)
    return written
