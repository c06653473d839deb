"""One session's timeline: the traces of one or more hosts placed on a common clock.

Each host keeps its own cached columns and index; the timeline only adds a per-host offset (from
`clock_origin_ns`, so hosts of one session or ranks of one run line up in absolute time), global
section/track ids (hosts' ids shifted by a base) and global event ids (`host * 2**32 + index`).
Every question is answered per host in host-local ps and merged here.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from profscope.answers import UNSET
from profscope.engine import query
from profscope.engine.answers import (
    FlowLink,
    SearchMatch,
    SummaryRow,
    TileScheme,
    TraceEvent,
    TraceHost,
    TraceMeta,
    TraceSearch,
    TraceSection,
    TraceSummary,
    TraceTrack,
)
from profscope.engine.lod import index as lod
from profscope.engine.lod import tiles
from profscope.engine.lod.index import LodIndex
from profscope.model import arrays
from profscope.model.columns import Trace

HOST_SHIFT = 32
HOST_MASK = (1 << HOST_SHIFT) - 1
# Matches a search answers when the caller does not say how many.
DEFAULT_SEARCH_LIMIT = 100
# The longest session a timeline spans (53 days): session ps, and the sums of tile bounds and host
# offsets made from them, stay inside int64. Hosts whose clocks start further apart are not aligned.
MAX_SESSION_PS = 1 << 62
PS_PER_DAY = 86_400 * 10**12
# Events whose matches a search takes at once (bounds its temporary arrays).
SEARCH_CHUNK = 1 << 18


class _FirstMatches:
    """The `keep` first of the matches added, in (session ps, host, index) order, exactly: a
    chunk of matches joins those kept so far and the union is cut back to `keep` by
    partition, with ties at the cut broken by (host, index), never by arrival."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.start = np.zeros(0, np.int64)
        self.host = np.zeros(0, np.int64)
        self.index = np.zeros(0, np.int64)

    def add(self, start: np.ndarray, host: int, index: np.ndarray) -> None:
        self.start = np.concatenate((self.start, start.astype(np.int64, copy=False)))
        self.host = np.concatenate((self.host, np.full(index.shape[0], host, np.int64)))
        self.index = np.concatenate((self.index, index.astype(np.int64, copy=False)))
        if self.start.shape[0] > self.keep:
            chosen = self._first(self.keep)
            self.start, self.host, self.index = self.start[chosen], self.host[chosen], self.index[chosen]

    def _first(self, k: int) -> np.ndarray:
        if k == 0:
            return np.zeros(0, np.int64)
        cut = self.start[np.argpartition(self.start, k - 1)[k - 1]]
        below = np.flatnonzero(self.start < cut)
        tied = np.flatnonzero(self.start == cut)
        tied = tied[np.lexsort((self.index[tied], self.host[tied]))[: k - below.shape[0]]]
        return np.concatenate((below, tied))

    def ordered(self, offset: int) -> list[tuple[int, int, int]]:
        """(session ps, host, index) of the kept matches from the `offset`-th on, in order."""
        order = np.lexsort((self.index, self.host, self.start))[offset:]
        return list(zip(self.start[order].tolist(), self.host[order].tolist(), self.index[order].tolist()))


@dataclasses.dataclass
class HostTrace:
    """One host's data: its trace, index and a key of that very cache entry (the server's: its
    fingerprint and write id, so a rebuild after damage gets another), which tiles, their ETags
    and analysis answers are cached by."""

    name: str
    trace: Trace
    index: LodIndex
    key: str
    searcher: query.Searcher | None = None

    def __post_init__(self) -> None:
        if self.searcher is None:
            self.searcher = query.Searcher(self.trace)


class Timeline:
    """Merged view of hosts; times on its API are ns from the session start (floats)."""

    def __init__(self, hosts: Sequence[HostTrace], subject: str = "trace") -> None:
        if not hosts:
            raise ValueError("a timeline needs at least one host")
        self.subject = subject  # names the run/session in messages
        self.hosts = list(hosts)
        self.warnings: list[str] = []
        self.offsets_ps = self._align()
        self.track_base = np.cumsum([0] + [len(h.trace.tracks) for h in self.hosts]).astype(np.int64)
        self.section_base = np.cumsum([0] + [len(h.trace.sections) for h in self.hosts]).astype(np.int64)
        end = 0
        for host, off in zip(self.hosts, self.offsets_ps):
            if host.trace.num_events or host.trace.ctr_time_ps.shape[0]:
                end = max(end, host.trace.time_span_ps()[1] + off)
        self.span_ps = end
        self.max_level = lod.max_level_for(max(end, 1))
        digest = hashlib.sha256(repr([(h.key, o) for h, o in zip(self.hosts, self.offsets_ps)]).encode())
        self.key = digest.hexdigest()[:24]

    # -- alignment --------------------------------------------------------------------------
    def _align(self) -> list[int]:
        """Per-host ps offset from host-local time to session time (session starts at 0).

        Hosts with a clock origin are placed at their absolute time, the earliest at 0, as long as
        the session spans at most MAX_SESSION_PS; otherwise (origins months apart: a wrong clock)
        the largest group of hosts that fits is aligned and each of the others is placed at the
        session start on its own, with a warning, so that no session time leaves int64."""
        spans = [h.trace.time_span_ps() for h in self.hosts]
        anchored = sorted(
            (h.trace.clock_origin_ns * 1000 + first, h.trace.clock_origin_ns * 1000 + last, i)
            for i, (h, (first, last)) in enumerate(zip(self.hosts, spans))
            if h.trace.clock_origin_ns is not None
        )
        aligned = _largest_group(anchored)
        zero = min((start for start, _, i in anchored if i in aligned), default=0)
        offsets = []
        unanchored, apart = [], []
        for i, (host, (first, _)) in enumerate(zip(self.hosts, spans)):
            if i in aligned:
                offsets.append(host.trace.clock_origin_ns * 1000 - zero)
                continue
            offsets.append(-first)
            (apart if host.trace.clock_origin_ns is not None else unanchored).append(i)
        if unanchored and len(self.hosts) > 1:
            self.warnings.append(
                f"no clock origin for {', '.join(self.hosts[i].name for i in unanchored)}: placed at the "
                "session start, not aligned with the other hosts"
            )
        for i in apart:
            origin_ps = self.hosts[i].trace.clock_origin_ns * 1000 + spans[i][0]
            days = abs(origin_ps - zero) / PS_PER_DAY
            self.warnings.append(
                f"the clock of {self.hosts[i].name} starts {days:,.0f} days away from the other hosts' "
                f"(one timeline spans at most {MAX_SESSION_PS / PS_PER_DAY:.0f} days): placed at the "
                "session start, not aligned with them"
            )
        return offsets

    # -- ids --------------------------------------------------------------------------------
    def host_of_track(self, track: int) -> tuple[int, int]:
        """(host index, host-local track id) of a timeline track id."""
        if not 0 <= track < int(self.track_base[-1]):
            raise KeyError(f"no track {track}")
        h = int(np.searchsorted(self.track_base, track, side="right")) - 1
        return h, track - int(self.track_base[h])

    def split_event_id(self, event_id: int) -> tuple[int, int]:
        h, i = event_id >> HOST_SHIFT, event_id & HOST_MASK
        if not 0 <= h < len(self.hosts) or not 0 <= i < self.hosts[h].trace.num_events:
            raise KeyError(f"no event {event_id}")
        return h, i

    def _ns(self, h: int, ps: int) -> float:
        return (ps + self.offsets_ps[h]) / 1000

    # -- meta -------------------------------------------------------------------------------
    def meta(self) -> TraceMeta:
        sections, tracks, hosts = [], [], []
        for h, host in enumerate(self.hosts):
            trace = host.trace
            sbase, tbase = int(self.section_base[h]), int(self.track_base[h])
            sections.extend(
                TraceSection(id=sbase + s.id, name=s.name, kind=s.kind, sort_index=s.sort_index, host=h)
                for s in trace.sections
            )
            tracks.extend(
                TraceTrack(
                    id=tbase + t.id,
                    section=sbase + t.section,
                    name=t.name,
                    kind=t.kind,
                    sort_index=t.sort_index,
                    max_depth=t.max_depth,
                    host=h,
                )
                for t in trace.tracks
            )
            hosts.append(
                TraceHost(
                    name=host.name,
                    source=trace.source,
                    format=trace.format,
                    offset_ns=self.offsets_ps[h] / 1000,
                    clock_origin_ns=trace.clock_origin_ns,
                    num_events=trace.num_events,
                    num_flows=int(trace.flow_src.shape[0]),
                    num_counter_samples=int(trace.ctr_time_ps.shape[0]),
                    warnings=list(trace.warnings),
                    skipped=dict(trace.skipped),
                )
            )
        return TraceMeta(
            span_ns=(0.0, self.span_ps / 1000),
            hosts=hosts,
            sections=sections,
            tracks=tracks,
            num_events=sum(h.trace.num_events for h in self.hosts),
            num_flows=sum(int(h.trace.flow_src.shape[0]) for h in self.hosts),
            warnings=list(self.warnings),
            tile=TileScheme(base_ns=lod.BASE_PS / 1000, tile_px=lod.TILE_PX, max_level=self.max_level),
        )

    # -- tiles ------------------------------------------------------------------------------
    def check_tile(self, level: int, index: int) -> None:
        if not 0 <= level <= self.max_level:
            raise ValueError(f"level {level} outside 0..{self.max_level}")
        if index < 0 or index >= 1 << (62 - level):
            raise ValueError(f"tile index {index} out of range")

    def tile_etag(self, level: int, index: int) -> str:
        return f'"{self.key}-{level}-{index}"'

    def tile(self, level: int, index: int) -> tiles.Tile:
        """Content of tile `index` at `level` (see docs/ARCHITECTURE.md, Tiles)."""
        self.check_tile(level, index)
        width = lod.BASE_PS << level
        lo = index * width
        names: dict[str, int] = {}
        ev_parts, sm_parts, ctr_parts, fl_parts = [], [], [], []
        for h, host in enumerate(self.hosts):
            off = self.offsets_ps[h]
            trace, idx = host.trace, host.index
            events = lod.exact_events(trace, idx, level, lo - off, lo + width - off)
            # Pixel bins are the host's own (`t >> level`); a bin belongs to the tile holding its
            # start, except that tile 0 also takes the bin straddling the session start.
            bins_lo = lo - off if index else (lo - off) >> level << level
            summaries = lod.summaries(trace, idx, level, bins_lo, lo + width - off)
            boxes = lod.counters(trace, idx, level, bins_lo, lo + width - off)
            ev_parts.append(self._tile_events(h, events, lo, names))
            sm_parts.append(self._tile_summaries(h, summaries, level, lo))
            ctr_parts.append(self._tile_counters(h, boxes, lo))
            fl_parts.append(self._tile_flows(h, lod.flows_touching(trace, idx, events), lo))
        return tiles.Tile(
            level=level,
            index=index,
            start_ns=lo / 1000,
            width_ns=width / 1000,
            names=list(names),
            events=_concat(ev_parts, tiles.EVENT_COLUMNS),
            summaries=_concat(sm_parts, tiles.SUMMARY_COLUMNS),
            counters=_concat(ctr_parts, tiles.COUNTER_COLUMNS),
            flows=_concat(fl_parts, tiles.FLOW_COLUMNS),
        )

    def _tile_events(
        self, h: int, events: np.ndarray, lo: int, names: dict[str, int]
    ) -> dict[str, np.ndarray]:
        trace = self.hosts[h].trace
        name_ids = np.asarray(trace.ev_name)[events]
        uniq, inverse = np.unique(name_ids, return_inverse=True)
        local = np.array([names.setdefault(trace.strings[int(u)], len(names)) for u in uniq], dtype=np.int64)
        return {
            "id": events,
            "track": np.asarray(trace.ev_track)[events] + self.track_base[h],
            "name": local[inverse] if uniq.shape[0] else np.zeros(0, np.int64),
            "start": (np.asarray(trace.ev_start_ps)[events] + (self.offsets_ps[h] - lo)) / 1000,
            "dur": np.asarray(trace.ev_dur_ps)[events] / 1000,
            "depth": np.minimum(np.asarray(trace.ev_depth)[events], 0xFFFF),
        }

    def _tile_summaries(self, h: int, s: lod.Summaries, level: int, lo: int) -> dict[str, np.ndarray]:
        row_base = self.hosts[h].index.row_base
        track = np.searchsorted(row_base, s.row, side="right") - 1
        return {
            "track": track + self.track_base[h],
            "depth": np.minimum(s.row - row_base[track], 0xFFFF),
            "start": ((s.bin << level) + (self.offsets_ps[h] - lo)) / 1000,
            "width": np.full(len(s), lod.pixel_ps(level) / 1000),
            "count": np.minimum(s.count, 0xFFFFFFFF),
            "busy": s.busy / 1000,
        }

    def _tile_counters(self, h: int, c: lod.CounterBoxes, lo: int) -> dict[str, np.ndarray]:
        return {
            "track": c.track + self.track_base[h],
            "start": (c.start_ps + (self.offsets_ps[h] - lo)) / 1000,
            "width": (c.end_ps - c.start_ps) / 1000,
            "min": c.min,
            "max": c.max,
            "last": c.last,
        }

    def _tile_flows(self, h: int, flows: np.ndarray, lo: int) -> dict[str, np.ndarray]:
        trace = self.hosts[h].trace
        out: dict[str, np.ndarray] = {}
        for end, column in (("src", trace.flow_src), ("dst", trace.flow_dst)):
            ev = np.asarray(column)[flows]
            out[f"{end}_id"] = ev
            out[f"{end}_track"] = np.asarray(trace.ev_track)[ev] + self.track_base[h]
            out[f"{end}_time"] = (np.asarray(trace.ev_start_ps)[ev] + (self.offsets_ps[h] - lo)) / 1000
            out[f"{end}_depth"] = np.minimum(np.asarray(trace.ev_depth)[ev], 0xFFFF)
        return out

    # -- details, search, summary -------------------------------------------------------------
    def event(self, event_id: int) -> TraceEvent:
        """Details of one event with session times (ns) and global ids."""
        h, i = self.split_event_id(event_id)
        host = self.hosts[h]
        d = query.event_details(host.trace, host.index, i)
        return TraceEvent(
            id=(h << HOST_SHIFT) + i,
            name=d["name"],
            category=d["category"],
            track=d["track"] + int(self.track_base[h]),
            section=d["section"] + int(self.section_base[h]),
            host=h,
            start_ns=self._ns(h, d["start_ps"]),
            dur_ns=d["dur_ps"] / 1000,
            self_ns=d["self_ps"] / 1000,
            depth=d["depth"],
            args=d["args"],
            args_error=d.get("args_error", UNSET),
            flows_out=self._flow_links(h, d["flows_out"]),
            flows_in=self._flow_links(h, d["flows_in"]),
        )

    def _flow_links(self, h: int, linked: list[dict[str, Any]]) -> list[FlowLink]:
        """Host `h`'s linked events (`query.event_details`) with session times and global ids."""
        return [
            FlowLink(
                id=(h << HOST_SHIFT) + f["index"],
                name=f["name"],
                flow=f["flow"],
                start_ns=self._ns(h, f["start_ps"]),
                dur_ns=f["dur_ps"] / 1000,
                track=f["track"] + int(self.track_base[h]),
            )
            for f in linked
        ]

    def search(
        self,
        q: str,
        limit: int = DEFAULT_SEARCH_LIMIT,
        offset: int = 0,
        regex: bool = False,
        args: Sequence[query.ArgFilter] = (),
    ) -> TraceSearch:
        """All events of all hosts matching `q` (`query.Searcher.matches`: a substring, or with
        `regex` a regular expression over names, narrowed by `args`): total count and `limit`
        matches in time order from the `offset`-th, so a client can page through every match of a
        big trace.

        Matches are taken from each host's match mask in chunks of events into a `_FirstMatches`
        that keeps only the `offset + limit` first in (session time, host, index) order, so a
        search holds one byte per event plus the page, whatever the number of matches."""
        masks = [host.searcher.mask(q, regex, args) for host in self.hosts]
        total = sum(int(np.count_nonzero(mask)) for mask in masks)
        first = _FirstMatches(min(offset, total) + limit)
        for h, (host, mask) in enumerate(zip(self.hosts, masks)):
            starts = host.trace.ev_start_ps
            for lo in range(0, mask.shape[0] if offset < total else 0, SEARCH_CHUNK):
                hits = np.flatnonzero(mask[lo : lo + SEARCH_CHUNK]) + lo
                if hits.shape[0]:
                    session = np.asarray(starts[lo : lo + SEARCH_CHUNK])[hits - lo] + self.offsets_ps[h]
                    first.add(session, h, hits)
        matches = []
        for start, h, i in first.ordered(offset):
            trace = self.hosts[h].trace
            matches.append(
                SearchMatch(
                    id=(h << HOST_SHIFT) + i,
                    name=trace.strings[int(trace.ev_name[i])],
                    start_ns=start / 1000,
                    dur_ns=int(trace.ev_dur_ps[i]) / 1000,
                    track=int(trace.ev_track[i]) + int(self.track_base[h]),
                    depth=int(trace.ev_depth[i]),
                )
            )
        return TraceSearch(
            query=q, total=total, offset=offset, matches=matches, truncated=total > offset + len(matches)
        )

    def summary(
        self,
        start_ns: float | None = None,
        end_ns: float | None = None,
        tracks: Sequence[int] | None = None,
        ids: Sequence[int] | None = None,
        limit: int = 1000,
    ) -> TraceSummary:
        """Per-name statistics over a time range (events overlapping it, optionally on some tracks)
        or over an explicit set of event ids; rows sorted by total time, at most `limit`."""
        per_host: list[np.ndarray] = []
        if ids is not None:
            chosen: list[list[int]] = [[] for _ in self.hosts]
            for event_id in ids:
                h, i = self.split_event_id(int(event_id))
                chosen[h].append(i)
            per_host = [arrays.unique(np.asarray(c, dtype=np.int64)) for c in chosen]
        else:
            lo = -(1 << 62) if start_ns is None else round(start_ns * 1000)
            hi = 1 << 62 if end_ns is None else round(end_ns * 1000)
            local_tracks: list[list[int] | None] = [None] * len(self.hosts)
            if tracks is not None:
                local_tracks = [[] for _ in self.hosts]
                for t in tracks:
                    h, lt = self.host_of_track(int(t))
                    local_tracks[h].append(lt)
            for h, host in enumerate(self.hosts):
                off = self.offsets_ps[h]
                per_host.append(
                    query.range_events(host.trace, host.index, local_tracks[h], lo - off, hi - off)
                )
        merged: dict[str, dict[str, Any]] = {}
        for host, events in zip(self.hosts, per_host):
            for row in query.summarize(host.trace, host.index, events):
                into = merged.get(row["name"])
                if into is None:
                    merged[row["name"]] = row
                else:
                    into["count"] += row["count"]
                    into["total_ps"] += row["total_ps"]
                    into["self_ps"] += row["self_ps"]
                    into["min_ps"] = min(into["min_ps"], row["min_ps"])
                    into["max_ps"] = max(into["max_ps"], row["max_ps"])
        rows = sorted(merged.values(), key=lambda r: (-r["total_ps"], r["name"]))
        return TraceSummary(
            rows=[
                SummaryRow(
                    name=r["name"],
                    count=r["count"],
                    total_ns=r["total_ps"] / 1000,
                    self_ns=r["self_ps"] / 1000,
                    avg_ns=r["total_ps"] / r["count"] / 1000,
                    min_ns=r["min_ps"] / 1000,
                    max_ns=r["max_ps"] / 1000,
                )
                for r in rows[:limit]
            ],
            num_names=len(rows),
            num_events=int(sum(e.shape[0] for e in per_host)),
            truncated=len(rows) > limit,
        )


def _largest_group(anchored: list[tuple[int, int, int]]) -> set[int]:
    """Of hosts as (absolute first ps, absolute last ps, host) sorted by first, the most that fit
    in one MAX_SESSION_PS window (the earliest such window on a tie): their host numbers."""
    if not anchored or max(last for _, last, _ in anchored) - anchored[0][0] <= MAX_SESSION_PS:
        return {i for _, _, i in anchored}
    firsts = [first for first, _, _ in anchored]
    best: set[int] = set()
    for k, start in enumerate(firsts):
        reach = bisect.bisect_right(firsts, start + MAX_SESSION_PS)
        group = {i for _, last, i in anchored[k:reach] if last - start <= MAX_SESSION_PS}
        if len(group) > len(best):
            best = group
    return best


def _concat(
    parts: list[dict[str, np.ndarray]], columns: tuple[tuple[str, str], ...]
) -> dict[str, np.ndarray]:
    """Columns of all hosts' parts, in the tile's dtypes."""
    return {
        name: np.concatenate([np.asarray(p[name]) for p in parts]).astype(dtype, copy=False)
        for name, dtype in columns
    }
