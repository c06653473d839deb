"""The `trace/*` routes (meta, tiles, event details, whole-trace search and range summaries) and
`hlo`, an XLA op of the trace in its HLO module (`hlo.py`); `export` and `export/preview`, the
trace as gzipped Chrome trace JSON (`export.py`).

The trace engine (`profscope.engine`) does the work; these functions read the parameters, check
what only a route knows (a search limit, a range that ends before it starts) and name the subject
in their errors. While a host is ingested `ctx.timeline()` raises and the plugin answers 202; these
routes ask for a partial timeline (the hosts ready so far, `pending_hosts` in meta), whose tiles are
not cached by the browser since ids change when a host arrives.
"""

from __future__ import annotations

import msgspec
from tensorboard import errors

from profscope.analysis import critical_path as critical
from profscope.analysis import rank_path
from profscope.analysis import steps as host_steps
from profscope.analysis.results import HostInput
from profscope.context import HostContext
from profscope.engine import query
from profscope.engine.answers import (
    CriticalPathEdge,
    CriticalPathEvent,
    CriticalPathHost,
    TraceCriticalPath,
    TraceEvent,
    TraceMeta,
    TraceSearch,
    TraceSummary,
)
from profscope.engine.progressive import is_partial
from profscope.engine.search_pool import SearchBusy, SearchCancelled, SearchPool
from profscope.engine.timeline import DEFAULT_SEARCH_LIMIT, Timeline
from profscope.params import Params
from profscope.tools import Binary, Handler
from profscope.tools.trace import export, hlo

# How long trace/meta waits for a running ingest before answering 202 with progress: small files
# then open in one request, big ones report progress soon enough.
META_WAIT_S = 1.5
# Browsers may keep a tile this long: its content never changes under the same ETag.
TILE_MAX_AGE_S = 24 * 3600
MAX_SEARCH_LIMIT = 10_000
# Hex digits of the timeline's key that name its version: 64 bits, no collision between rebuilds.
VERSION_CHARS = 16


def version(timeline: Timeline) -> str:
    """The timeline's version in `trace/meta` and tile URLs: a prefix of its key, which changes
    with every host's cache entry (a rebuilt entry has a new `entry_id`)."""
    return timeline.key[:VERSION_CHARS]


class StaleVersionError(errors.PublicError):
    """409: a tile of a timeline version the server no longer has (the view asks meta again)."""

    http_code = 409


def meta(ctx: HostContext, params: Params) -> TraceMeta:
    """`trace/meta`: sections, tracks, span, counts, warnings, the tile scheme and the version."""
    timeline = ctx.timeline(META_WAIT_S, partial=True)
    return msgspec.structs.replace(timeline.meta(), version=version(timeline))


def tile(ctx: HostContext, params: Params) -> Binary:
    """`trace/tile?level=&index=[&v=]`: one gzip-encoded binary tile with its ETag; 409 when `v`
    is not the timeline's version."""
    level, index = params.int("level"), params.int("index")
    asked_version = params.text("v")
    timeline = ctx.timeline(partial=True)
    if asked_version is not None and asked_version != version(timeline):
        raise StaleVersionError(
            f"{timeline.subject}: tiles of version {asked_version!r} are gone; the timeline is now "
            f"version {version(timeline)!r} (ask trace/meta again)"
        )
    data, etag = ctx.trace_service().tile(timeline, level, index)
    max_age = 0 if is_partial(timeline) else TILE_MAX_AGE_S
    return Binary(data, content_encoding="gzip", etag=etag, max_age_s=max_age)


def event(ctx: HostContext, params: Params) -> TraceEvent:
    """`trace/event?id=`: everything about one event (global id)."""
    event_id = params.int("id")
    timeline = ctx.timeline(partial=True)
    try:
        return timeline.event(event_id)
    except KeyError as e:
        raise errors.NotFoundError(f"{timeline.subject}: no event with id {event_id}") from e


# The server's searches: a few scan at once, so tiles and event details never wait behind them.
SEARCHES = SearchPool()


class SearchUnavailableError(errors.PublicError):
    """503 with Retry-After: too many searches are waiting."""

    http_code = 503

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.headers = [("Retry-After", str(retry_after_s))]


class SearchSupersededError(errors.PublicError):
    """409: a newer search of the same client cancelled this one (which nobody waits for)."""

    http_code = 409


def search(ctx: HostContext, params: Params) -> TraceSearch:
    """`trace/search?q=&limit=&offset=[&regex=1][&arg=key:value …][&client=]`: case-insensitive
    substring over names and argument values of all events, or with `regex=1` a regular expression
    over names; `arg` (whitespace-separated `key:value`, `*` wildcards) keeps events whose argument
    `key` has that value. Matches in time order, `limit` of them from the `offset`-th.
    Run in `SEARCHES`; a newer search with the same `client` id cancels this one (409), and so
    does the client closing its connection (nobody reads that answer)."""
    q = params.text("q", "") or ""
    limit = params.int("limit", DEFAULT_SEARCH_LIMIT)
    offset = params.int("offset", 0)
    regex = params.int("regex", 0) == 1
    client = params.text("client")
    timeline = ctx.timeline(partial=True)
    try:
        args = query.parse_arg_filters(params.text("arg", "") or "")
        if regex:
            query.check_regex(q)
    except ValueError as e:
        raise errors.InvalidArgumentError(f"{timeline.subject}: {e}") from e
    if not q.strip() and not args:
        raise errors.InvalidArgumentError(f"{timeline.subject}: empty search query")
    if limit > MAX_SEARCH_LIMIT:
        raise errors.InvalidArgumentError(f"{timeline.subject}: limit must be within 0..{MAX_SEARCH_LIMIT}")
    try:
        return SEARCHES.run(
            lambda: timeline.search(q, limit, offset, regex, args), client, params.disconnected
        )
    except SearchBusy as busy:
        raise SearchUnavailableError(f"{timeline.subject}: {busy}", busy.retry_after_s) from busy
    except SearchCancelled as cancelled:
        raise SearchSupersededError(f"{timeline.subject}: {cancelled}") from cancelled


def summary(ctx: HostContext, params: Params) -> TraceSummary:
    """`trace/summary?start=&end=&tracks=` or `?ids=`: per-name statistics of a range (on some
    tracks) or of given events."""
    start, end = params.float("start"), params.float("end")
    tracks, ids = params.int_list("tracks"), params.int_list("ids")
    timeline = ctx.timeline(partial=True)
    if start is not None and end is not None and end < start:
        raise errors.InvalidArgumentError(f"{timeline.subject}: summary range ends before it starts")
    try:
        return timeline.summary(start, end, tracks, ids)
    except KeyError as e:
        raise errors.NotFoundError(f"{timeline.subject}: {e.args[0]}") from e


def critical_path(ctx: HostContext, params: Params) -> TraceCriticalPath:
    """`trace/critical_path?step=N` or `?at=ns`: per host, the critical path of step N, or of the
    step holding (else nearest to) session time `at`, else of its first step; the whole trace when
    the host has no steps (`analysis/critical_path.py`). In a merged session the hosts holding that
    step number are joined through the step's matched collectives, when it has any
    (`analysis/rank_path.py`): each host's path may cross into another's section, and its breakdown
    holds the wait for other ranks."""
    step, at_ns = params.optional_int("step"), params.float("at")
    timeline = ctx.timeline()
    key = (timeline.key, step, at_ns)
    return ctx.cache("critical_path", 64).get(
        key, lambda: TraceCriticalPath(_paths(ctx.host_inputs(timeline), step, at_ns))
    )


def _paths(hosts: list[HostInput], step: int | None, at_ns: float | None) -> list[CriticalPathHost]:
    found = [host_steps.find(host.events, None) for host in hosts]
    own = [_step_index(host, steps, step, at_ns) for host, steps in zip(hosts, found)]
    same = own
    if len(hosts) > 1 and step is None:  # one step number for every rank: the first host's choice
        number = next((int(s.numbers[k]) for s, k in zip(found, own) if k is not None), None)
        same = [_step_index(host, steps, number, None, strict=False) for host, steps in zip(hosts, found)]
    joined = [h for h, k in enumerate(same) if k is not None]
    across = (
        rank_path.find([rank_path.RankStep(hosts[h], found[h], same[h]) for h in joined])
        if len(joined) > 1
        else []
    )
    out = [
        _host_path(host, i, found[i], own[i]) if i not in joined or not across else None
        for i, host in enumerate(hosts)
    ]
    for path in across:  # hosts that no collective of the step joins keep their own paths
        h = joined[path.host]
        out[h] = _rank_host_path(hosts, joined, path, int(found[h].numbers[same[h]]))
    return [p for p in out if p is not None]


def _step_index(
    host: HostInput, found: host_steps.Steps, step: int | None, at_ns: float | None, strict: bool = True
) -> int | None:
    """The index of the asked step on `host` (docstring of `critical_path`); None without steps, or
    when not `strict` and the host has no step `step`."""
    if not len(found):
        return None
    if step is not None:
        chosen = (found.numbers == step).nonzero()[0]
        if not chosen.shape[0] and strict:
            first, last = int(found.numbers[0]), int(found.numbers[-1])
            raise errors.NotFoundError(f"{host.events.name}: no step {step} (its steps are {first}–{last})")
        return int(chosen[0]) if chosen.shape[0] else None
    if at_ns is not None:
        at = at_ns * 1000 - host.offset_ps
        inside = ((found.start_ps <= at) & (at < found.end_ps)).nonzero()[0]
        return (
            int(inside[0]) if inside.shape[0] else int(abs((found.start_ps + found.end_ps) / 2 - at).argmin())
        )
    return 0


class _Points:
    """Where the timeline draws the ends of an event of one host: global id, track, depth, ns."""

    def __init__(self, host: HostInput, host_index: int) -> None:
        self.trace, self.host = host.events.trace, host
        self.base = host_index * 2**32

    def ns(self, ps: int) -> float:
        return (ps + self.host.offset_ps) / 1000

    def point(self, event: int, at_end: bool) -> tuple[int, bool, int, int, float]:
        trace = self.trace
        time = int(trace.ev_start_ps[event] + (trace.ev_dur_ps[event] if at_end else 0))
        track = self.host.track_base + int(trace.ev_track[event])
        return self.base + event, at_end, track, int(trace.ev_depth[event]), self.ns(time)

    def event(self, event: int) -> CriticalPathEvent:
        trace = self.trace
        return CriticalPathEvent(
            self.base + event,
            self.host.track_base + int(trace.ev_track[event]),
            int(trace.ev_depth[event]),
            self.ns(int(trace.ev_start_ps[event])),
            int(trace.ev_dur_ps[event]) / 1000,
        )


def _host_path(host: HostInput, host_index: int, found: host_steps.Steps, k: int | None) -> CriticalPathHost:
    events = host.events
    number, (start, end) = None, events.span_ps
    if k is not None:
        number, start, end = int(found.numbers[k]), int(found.start_ps[k]), int(found.end_ps[k])
    path = critical.find(events, start, end, found.markers)
    points = _Points(host, host_index)
    edges = [
        CriticalPathEdge(
            *points.point(e.src_event, e.src_is_end),
            *points.point(e.dst_event, e.dst_is_end),
            critical.EDGE_KINDS[e.kind],
            e.weight_ps / 1000,
        )
        for e in path.edges
    ]
    return CriticalPathHost(
        host=events.name,
        step=number,
        start_ns=points.ns(start),
        end_ns=points.ns(end),
        events=[points.event(i) for i in path.events.tolist()],
        edges=edges,
        total_ns=path.total_ps / 1000,
        by_cause_ns={cause: ps / 1000 for cause, ps in path.by_cause_ps.items()},
    )


def _rank_host_path(
    hosts: list[HostInput], joined: list[int], path: rank_path.RankPath, number: int
) -> CriticalPathHost:
    """One rank's path across the joined ranks, its ends named as the merged timeline names them."""
    points = {j: _Points(hosts[h], h) for j, h in enumerate(joined)}
    mine = points[path.host]
    return CriticalPathHost(
        host=hosts[joined[path.host]].events.name,
        step=number,
        start_ns=mine.ns(path.window_ps[0]),
        end_ns=mine.ns(path.window_ps[1]),
        events=[points[j].event(i) for j, i in path.events],
        edges=[
            CriticalPathEdge(
                *points[e.src_host].point(e.src_event, e.src_is_end),
                *points[e.dst_host].point(e.dst_event, e.dst_is_end),
                rank_path.EDGE_KINDS[e.kind],
                e.weight_ps / 1000,
            )
            for e in path.edges
        ],
        total_ns=path.total_ps / 1000,
        by_cause_ns={cause: ps / 1000 for cause, ps in path.by_cause_ps.items()},
    )


ROUTES: dict[str, Handler] = {
    "/trace/meta": meta,
    "/trace/tile": tile,
    "/trace/event": event,
    "/trace/search": search,
    "/trace/summary": summary,
    "/trace/critical_path": critical_path,
    "/hlo": hlo.hlo,
    "/export": export.export,
    "/export/preview": export.export_preview,
}
