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

from tensorboard import errors

from profscope.context import HostContext
from profscope.engine.answers import TraceEvent, TraceMeta, TraceSearch, TraceSummary
from profscope.engine.progressive import is_partial
from profscope.engine.timeline import DEFAULT_SEARCH_LIMIT
from profscope.params import Params
from profscope.tools import Binary, Handler
from profscope.tools.trace import export, hlo

# How long trace/meta waits for a running ingest before answering 202 with progress: small files
# then open in one request, big ones report progress soon enough.
META_WAIT_S = 1.5
# Browsers may keep a tile this long: its content never changes under the same ETag.
TILE_MAX_AGE_S = 24 * 3600
MAX_SEARCH_LIMIT = 10_000


def meta(ctx: HostContext, params: Params) -> TraceMeta:
    """`trace/meta`: sections, tracks, span, counts, warnings and the tile scheme."""
    return ctx.timeline(META_WAIT_S, partial=True).meta()


def tile(ctx: HostContext, params: Params) -> Binary:
    """`trace/tile?level=&index=`: one gzip-encoded binary tile with its ETag."""
    level, index = params.int("level"), params.int("index")
    timeline = ctx.timeline(partial=True)
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


def search(ctx: HostContext, params: Params) -> TraceSearch:
    """`trace/search?q=&limit=&offset=`: case-insensitive substring over names and argument values
    of all events; matches in time order, `limit` of them from the `offset`-th."""
    q = params.text("q", "") or ""
    limit = params.int("limit", DEFAULT_SEARCH_LIMIT)
    offset = params.int("offset", 0)
    timeline = ctx.timeline(partial=True)
    if not q.strip():
        raise errors.InvalidArgumentError(f"{timeline.subject}: empty search query")
    if limit > MAX_SEARCH_LIMIT:
        raise errors.InvalidArgumentError(f"{timeline.subject}: limit must be within 0..{MAX_SEARCH_LIMIT}")
    return timeline.search(q, limit, offset)


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


ROUTES: dict[str, Handler] = {
    "/trace/meta": meta,
    "/trace/tile": tile,
    "/trace/event": event,
    "/trace/search": search,
    "/trace/summary": summary,
    "/hlo": hlo.hlo,
    "/export": export.export,
    "/export/preview": export.export_preview,
}
