"""The JSON answers of the trace engine, as `msgspec.Struct`s: `trace/*` routes and the 202 progress.

They are declared here, next to the code that builds them (`timeline.py`, `service.py`), not in
`profscope.tools.trace`: the engine cannot import the tool package, whose routes import the engine.
Times are ns from the session start; ids are the timeline's (global) ids. The row Structs a search or
summary answers thousands of (`SearchMatch`, `SummaryRow`) hold only scalars, so they can never be in
a reference cycle and are kept out of the garbage collector (`gc=False`): cheaper to make.
"""

from __future__ import annotations

from typing import Any

from profscope.answers import UNSET, Answer, UnsetType


class IngestingFile(Answer):
    """One host's trace file still being read into the cache."""

    path: str
    bytes_done: int
    bytes_total: int
    stage: str


class Ingesting(Answer, tag_field="state", tag="ingesting"):
    """HTTP 202 of any route that needs a timeline while a host's trace is still being ingested: the
    view shows the progress and asks again."""

    bytes_done: int
    bytes_total: int
    stage: str
    files: list[IngestingFile]


class TraceSection(Answer):
    """A group of tracks (a process, a device); `host` indexes `TraceMeta.hosts`."""

    id: int
    name: str
    kind: str
    sort_index: int
    host: int


class TraceTrack(Answer):
    """One row of the timeline (a thread, a stream, a counter) in `section`."""

    id: int
    section: int
    name: str
    kind: str
    sort_index: int
    max_depth: int
    host: int


class TraceHost(Answer):
    """One host's trace: where it came from, how it is placed on the session clock, what was skipped."""

    name: str
    source: str
    format: str
    offset_ns: float
    clock_origin_ns: int | None
    num_events: int
    num_flows: int
    num_counter_samples: int
    warnings: list[str]
    skipped: dict[str, int]


class TileScheme(Answer):
    """How the timeline is cut into tiles (docs/ARCHITECTURE.md, Tiles)."""

    base_ns: float
    tile_px: int
    max_level: int


class PendingHost(Answer):
    """A host of a merged timeline whose trace is still being ingested: the timeline shows the
    others meanwhile (`TraceMeta.pending_hosts`)."""

    name: str
    path: str
    bytes_done: int
    bytes_total: int
    stage: str


class TraceMeta(Answer):
    """`trace/meta`: everything a view needs before asking for tiles. `pending_hosts` lists the
    hosts of the request not on the timeline yet, with their ingest progress: the view shows those
    that are and asks again until none is pending (ids and tracks change when one arrives).
    `version` changes when a host's cache entry is rebuilt (found damaged) or a host arrives; tile
    URLs carry it (`v=`) so a browser never serves a tile of an earlier version from its cache, and a
    tile of a version the server no longer has is answered 409 (the view asks meta again)."""

    span_ns: tuple[float, float]
    hosts: list[TraceHost]
    sections: list[TraceSection]
    tracks: list[TraceTrack]
    num_events: int
    num_flows: int
    warnings: list[str]
    tile: TileScheme
    pending_hosts: list[PendingHost] = []
    version: str = ""


class FlowLink(Answer):
    """The event at the other end of a flow arrow, and the flow's name."""

    id: int
    name: str
    flow: str
    start_ns: float
    dur_ns: float
    track: int


class TraceEvent(Answer, kw_only=True):
    """`trace/event`: one event; `args` as recorded, `args_error` when they could not be read."""

    id: int
    name: str
    category: str
    track: int
    section: int
    host: int
    start_ns: float
    dur_ns: float
    self_ns: float
    depth: int
    args: dict[str, Any]
    args_error: str | UnsetType = UNSET
    flows_out: list[FlowLink]
    flows_in: list[FlowLink]


class SearchMatch(Answer, gc=False):
    """One event matching a search."""

    id: int
    name: str
    start_ns: float
    dur_ns: float
    track: int
    depth: int = 0
    """Its row on the track (0: the top), so a view can draw it selected without asking for it."""


class TraceSearch(Answer):
    """`trace/search`: `total` matches of `query` in all; `matches` is the page of them (in time order)
    that starts at the `offset`-th, and `truncated` says more follow it."""

    query: str
    total: int
    offset: int
    matches: list[SearchMatch]
    truncated: bool


class SummaryRow(Answer, gc=False):
    """Statistics of the events of one name."""

    name: str
    count: int
    total_ns: float
    self_ns: float
    avg_ns: float
    min_ns: float
    max_ns: float


class TraceSummary(Answer):
    """`trace/summary`: rows by total time, at most a limit of them (`truncated` when `num_names` is
    more); `num_events` counts the events summarized."""

    rows: list[SummaryRow]
    num_names: int
    num_events: int
    truncated: bool


class CriticalPathEdge(Answer, gc=False):
    """One edge of a critical path, from one end of an event to one end of another (`*_end`: the
    event's end, else its start); `kind`: work, dependency, launch, kernel_gap or sync."""

    src: int
    src_end: bool
    src_track: int
    src_depth: int
    src_ns: float
    dst: int
    dst_end: bool
    dst_track: int
    dst_depth: int
    dst_ns: float
    kind: str
    weight_ns: float


class CriticalPathEvent(Answer, gc=False):
    """An event on a critical path, where the timeline draws it."""

    id: int
    track: int
    depth: int
    start_ns: float
    dur_ns: float


class CriticalPathHost(Answer):
    """One host's critical path over a window (a step, or the whole trace when it has no steps):
    its events in the path's order (global ids), its edges, its time (the sum of the edges'
    weights) and that time by cause (cpu, launch, compute, communication, kernel_gap; `idle` is
    the window's time past the path's: waits, gaps). docs/OVERVIEW.md "Critical path"."""

    host: str
    step: int | None
    start_ns: float
    end_ns: float
    events: list[CriticalPathEvent]
    edges: list[CriticalPathEdge]
    total_ns: float
    by_cause_ns: dict[str, float]


class TraceCriticalPath(Answer):
    """`trace/critical_path`: per host, the critical path of the asked step."""

    hosts: list[CriticalPathHost]
