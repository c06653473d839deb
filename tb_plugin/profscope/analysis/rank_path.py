"""The critical path of one step across the ranks of a merged session, through their collectives.

Each rank's step window gets the single-host graph of `critical_path.build` (HTA's model); the
graphs are joined, on the session clock, by what a collective makes every rank wait for: a rank's
collective ends when the last arriver's chain reaches it.

Per matched instance (`collectives.match`) in the step, with each rank's arrival a_r (its call's
start), end e_r (its call done: gloo's worker annotation, the last NCCL kernel, else the call's own
end; `collectives.Call.end_event`), the last arrival L = max_r a_r on rank l:
- a collective edge from l's call start to the end of each rank's done event, weighted e_r − L (the
  transfer): on l it is l's own, on every other rank r a cross-rank edge (kind `rank`). A waiting
  rank's own arrival gets no edge to its done event: its time in the collective before L is waiting;
  a waiting rank's collective kernels that start before L weigh only their time after L.
- A thread that waits when the collective ends on its rank may have waited for it: on the call's
  thread, the gap between two top-level ops that holds e_r, or the tail of an op enclosing the call
  (after its last child) that holds it (DDP waits for its gradient all-reduce with no event of its
  own, between ops or at the end of the autograd call that issued it), gets a twin edge from the
  done event's end: unweighted for a gap, weighted by its time after e_r for a tail. The thread's
  own edge stays (its order holds too): the path crosses when the last arriver's chain is the
  heavier. A thread still inside the call when the collective ends (a slow enqueue) did not wait.
- Data loading is work: a gap between two top-level ops of a host thread is weighted by the time it
  lies inside an input event (`events.ROLE_INPUT`: `load_batch`, a DataLoader's `_next_data`, …),
  kind `data`; so is the time from the step marker's start (each rank's first node) to each thread's
  first op.
Instances whose done event ends before L on some rank (clocks that disagree) join nothing on it.

The longest path is taken over the joined graph (a DAG: every edge goes forward in time); rank r's
path is the one into r's node with the longest distance (the latest on ties), read back to its start.

Breakdown of rank r's step window [s_r, t_r] (session time) along r's path, every instant counted
once so the causes add up to t_r − s_r exactly. W_r = the union of [a_r, L] over the instances whose
cross-rank edge into r is on the path. Each edge covers [u, v] = [time of its source, time of its
destination] ∩ [s_r, t_r], of span v − u (unclipped: its full span), weight w:
- an edge of another rank's chain (neither end on r): |[u, v] ∩ W_r| is `rank_wait` (r waited
  there); the rest, length ℓ, as below;
- of ℓ, ℓ × w / span is weighted: its part inside an input event of the edge's rank (× w / span) is
  `data_loading`, the rest what the edge is (`critical_path.CAUSES`: a work edge by its event's role,
  a collective or cross-rank edge `communication`, a data edge `data_loading`); ℓ × (1 − w / span)
  is `idle`;
- before the path's first node: its part in W_r is `rank_wait` (the path starts on another rank
  after r arrived), the rest `idle`; after its last node `idle`.
The path's time `total_ps` = (t_r − s_r) − `idle`.
"""

from __future__ import annotations

import collections
import dataclasses
import heapq
from collections.abc import Sequence

import numpy as np

from profscope.analysis import collectives, intervals
from profscope.analysis import critical_path as critical
from profscope.analysis import events as ev
from profscope.analysis.results import HostInput
from profscope.analysis.steps import Steps

DATA, COLLECTIVE, RANK = len(critical.EDGE_KINDS), len(critical.EDGE_KINDS) + 1, len(critical.EDGE_KINDS) + 2
EDGE_KINDS = (*critical.EDGE_KINDS, "data", "collective", "rank")
CAUSES = ("cpu", "launch", "compute", "communication", "kernel_gap", "rank_wait", "data_loading", "idle")
HOST_BITS = 34  # a node key: host << HOST_BITS | (2 * event + is_end); event ids are below 2**32
NODE_MASK = (1 << HOST_BITS) - 1


@dataclasses.dataclass(frozen=True)
class RankEdge:
    """One edge of a rank's path, each end an event's start or end on some host."""

    src_host: int
    src_event: int
    src_is_end: bool
    dst_host: int
    dst_event: int
    dst_is_end: bool
    kind: int  # an index into EDGE_KINDS
    weight_ps: int


@dataclasses.dataclass(frozen=True)
class RankPath:
    """Rank `host`'s path: its events as (host, event) in the path's order, its edges, its time
    (the sum of the edges' weights) and its step window's time by cause (module docstring)."""

    host: int
    window_ps: tuple[int, int]  # the step on this host, host-local
    events: list[tuple[int, int]]
    edges: list[RankEdge]
    total_ps: int
    by_cause_ps: dict[str, int]


@dataclasses.dataclass(frozen=True)
class RankStep:
    """One rank's step: its host, its steps and which of them is the step asked for."""

    host: HostInput
    steps: Steps
    index: int


class _Joined:
    """The ranks' graphs on one clock: edges by destination key, times in session ps."""

    def __init__(self, ranks: Sequence[RankStep]) -> None:
        self.ranks = ranks
        self.into: dict[int, list[tuple[int, int, int]]] = collections.defaultdict(list)
        self.members: set[int] = set()
        self.inputs = [_input_set(r.host.events) for r in ranks]
        self.arrivals: dict[int, int] = {}  # a waiting rank's done node → its arrival (session ps)
        self.times: dict[int, int] = {}

    def time(self, key: int) -> int:
        """A node's time in session ps (kept: a trace's columns are slow to read one by one)."""
        found = self.times.get(key)
        if found is None:
            rank = self.ranks[key >> HOST_BITS]
            node = key & NODE_MASK
            trace = rank.host.events.trace
            local = trace.ev_start_ps[node >> 1] + (trace.ev_dur_ps[node >> 1] if node & 1 else 0)
            found = self.times[key] = int(local) + rank.host.offset_ps
        return found

    def window(self, h: int) -> tuple[int, int]:
        rank = self.ranks[h]
        return int(rank.steps.start_ps[rank.index]), int(rank.steps.end_ps[rank.index])


def _key(h: int, node: int) -> int:
    return (h << HOST_BITS) | node


def _input_set(events: ev.HostEvents) -> intervals.Intervals:
    """The host's time inside input events (host-local ps)."""
    found = events.of_roles(ev.ROLE_INPUT)
    return intervals.merge(events.trace.ev_start_ps[found], events.end_ps[found])


def _inside_input(joined: _Joined, h: int, lo: Sequence[int], hi: Sequence[int]) -> np.ndarray:
    """Time of each [lo, hi) (session ps) inside host h's input events."""
    offset = joined.ranks[h].host.offset_ps
    return intervals.covered(
        joined.inputs[h], np.asarray(lo, np.int64) - offset, np.asarray(hi, np.int64) - offset
    )


def find(ranks: Sequence[RankStep]) -> list[RankPath]:
    """Each rank's path through the joined graph of one step (module docstring); none when no
    matched collective of the step joins the ranks (their paths are then each host's own)."""
    joined = _Joined(ranks)
    for h in range(len(ranks)):
        _add_rank(joined, h)
    if not _add_collectives(joined):
        return []
    best = _longest(joined)
    farthest: dict[int, tuple[int, int, int]] = {}  # host → (distance, time, node) of its farthest node
    for node, (distance, _, _, _) in best.items():
        h = node >> HOST_BITS
        here = (distance, joined.time(node), node)
        if h not in farthest or here > farthest[h]:
            farthest[h] = here
    return [_rank_path(joined, best, h, farthest[h][2] if h in farthest else None) for h in range(len(ranks))]


def _add_rank(joined: _Joined, h: int) -> None:
    """Rank h's own graph, its gaps inside input events weighted, its sources tied to the step start."""
    rank = joined.ranks[h]
    events = rank.host.events
    lo, hi = joined.window(h)
    graph, members = critical.build(events, lo, hi, rank.steps.markers)
    on_host = events.host_track[events.trace.ev_track]
    flat = [
        (_key(h, dst), _key(h, src), kind, w) for dst, into in graph.into.items() for src, kind, w in into
    ]
    gaps = [
        k
        for k, (dst, src, kind, _) in enumerate(flat)
        if kind == critical.DEPENDENCY and on_host[(src & NODE_MASK) >> 1] and on_host[(dst & NODE_MASK) >> 1]
    ]
    data = _inside_input(
        joined, h, [joined.time(flat[k][1]) for k in gaps], [joined.time(flat[k][0]) for k in gaps]
    )
    for k, inside in zip(gaps, data.tolist()):
        if inside > 0:
            flat[k] = (flat[k][0], flat[k][1], DATA, inside)
    for dst, src, kind, weight in flat:
        joined.into[dst].append((src, kind, weight))
    nodes = {_key(h, 2 * int(e) + end) for e in members.tolist() for end in (0, 1)}
    joined.members.update(nodes)
    if rank.steps.markers.shape[0] != len(rank.steps):  # inferred steps: no marker to start from
        return
    start = _key(h, 2 * int(rank.steps.markers[rank.index]))
    joined.members.add(start)
    sources = sorted(n for n in nodes if n not in joined.into and n != start)
    threads = [n for n in sources if on_host[(n & NODE_MASK) >> 1]]
    begin = joined.time(start)
    inside = dict(
        zip(
            threads,
            _inside_input(joined, h, [begin] * len(threads), [joined.time(n) for n in threads]).tolist(),
        )
    )
    for key in sources:
        data = inside.get(key, 0)
        joined.into[key].append((start, DATA if data > 0 else critical.DEPENDENCY, data))


def _add_collectives(joined: _Joined) -> int:
    """The collective and cross-rank edges of the instances inside the step (module docstring);
    returns how many instances were joined."""
    ranks = joined.ranks
    hosts = [collectives.read_calls(r.host.events) for r in ranks]
    instances, _ = collectives.match(hosts, [r.host.events.name for r in ranks])
    windows = [joined.window(h) for h in range(len(ranks))]
    on_track = _by_track(joined)
    count = 0
    for instance in instances:
        calls = instance.calls
        if not all(windows[h][0] <= c.start_ps <= windows[h][1] for h, c in calls.items()):
            continue
        if any(c.event < 0 or c.end_event < 0 for c in calls.values()):
            continue
        arrival = {h: c.start_ps + ranks[h].host.offset_ps for h, c in calls.items()}
        last = max(arrival, key=lambda h: (arrival[h], -h))
        source = _key(last, 2 * calls[last].event)
        count += 1
        joined.members.add(source)
        for h, call in calls.items():
            done = _key(h, 2 * call.end_event + 1)
            end = call.end_ps + ranks[h].host.offset_ps
            if end < arrival[last]:
                continue
            joined.members.add(done)
            joined.into[done] = [
                (src, kind, w)
                for src, kind, w in joined.into.get(done, [])
                if h == last or kind != critical.WORK
            ]
            if h != last:
                _wait_in_kernels(joined, h, arrival[h], arrival[last], end)
                joined.arrivals[done] = arrival[h]
            joined.into[done].append((source, COLLECTIVE if h == last else RANK, end - arrival[last]))
            _join_wait(joined, h, call, end, done, on_track.get((h, call.track), []))
    return count


def _wait_in_kernels(joined: _Joined, h: int, arrival: int, last: int, end: int) -> None:
    """A waiting rank's collective kernels starting before the last arrival weigh their time after it."""
    events = joined.ranks[h].host.events
    offset = joined.ranks[h].host.offset_ps
    comm = events.of_roles(ev.ROLE_COMM)
    starts = events.trace.ev_start_ps[comm] + offset
    for k in comm[(starts >= arrival) & (starts < last) & (starts <= end)].tolist():
        key = _key(h, 2 * k + 1)
        kernel_end = joined.time(key)
        joined.into[key] = [
            (src, kind, max(0, kernel_end - last) if kind == critical.WORK else w)
            for src, kind, w in joined.into.get(key, [])
        ]


def _by_track(joined: _Joined) -> dict[tuple[int, int], list[int]]:
    """The nodes with edges into them, by (host, track)."""
    keys = np.array(list(joined.into), np.int64)
    out: dict[tuple[int, int], list[int]] = collections.defaultdict(list)
    for h, rank in enumerate(joined.ranks):
        mine = keys[(keys >> HOST_BITS) == h]
        tracks = rank.host.events.trace.ev_track[(mine & NODE_MASK) >> 1]
        for key, track in zip(mine.tolist(), tracks.tolist()):
            out[(h, track)].append(key)
    return out


def _join_wait(
    joined: _Joined, h: int, call: collectives.Call, end: int, done: int, on_track: list[int]
) -> None:
    """The thread's edge holding the collective's end, if it waited there (module docstring), gets a
    twin from the done event's end; `on_track`: the nodes of the call's thread with edges into them."""
    events = joined.ranks[h].host.events
    enclosing = set()
    up = int(events.parent[call.event])
    while up >= 0:
        enclosing.add(_key(h, 2 * up + 1))
        up = int(events.parent[up])
    for dst in on_track:
        sources = joined.into[dst]
        for src, kind, weight in sources:
            gap = kind in (critical.DEPENDENCY, DATA)
            tail = kind == critical.WORK and dst in enclosing
            if (gap or tail) and src >> HOST_BITS == h and joined.time(src) <= end <= joined.time(dst):
                if tail and weight > 0:
                    sources.append((done, critical.WORK, joined.time(dst) - end))
                else:
                    sources.append((done, critical.DEPENDENCY, 0))
                return


def _longest(joined: _Joined) -> dict[int, tuple[int, int, int, int]]:
    """Node → (distance, previous node, kind, weight) of the longest path into it; nodes taken in
    topological order (time, ends first), a tie going to the first edge added."""
    nodes = joined.members | set(joined.into) | {s for into in joined.into.values() for s, _, _ in into}
    times = {n: joined.time(n) for n in nodes}
    successors: dict[int, list[int]] = collections.defaultdict(list)
    waiting = dict.fromkeys(nodes, 0)
    for dst, sources in joined.into.items():
        waiting[dst] = len(sources)
        for src, _, _ in sources:
            successors[src].append(dst)
    order = {n: (times[n], n & 1 == 0, n) for n in nodes}
    ready = [(order[n], n) for n in nodes if waiting[n] == 0]
    heapq.heapify(ready)
    best: dict[int, tuple[int, int, int, int]] = {}
    while ready:
        _, node = heapq.heappop(ready)
        distance, previous, kind, weight = 0, -1, critical.WORK, 0
        for src, edge_kind, edge_weight in joined.into.get(node, ()):
            if previous < 0 or best[src][0] + edge_weight > distance:
                distance, previous, kind, weight = best[src][0] + edge_weight, src, edge_kind, edge_weight
        best[node] = (distance, previous, kind, weight)
        for dst in successors.get(node, ()):
            waiting[dst] -= 1
            if waiting[dst] == 0:
                heapq.heappush(ready, (order[dst], dst))
    return best


def _rank_path(
    joined: _Joined, best: dict[int, tuple[int, int, int, int]], h: int, node: int | None
) -> RankPath:
    """Rank h's path: back from its farthest `node` (module docstring)."""
    lo, hi = joined.window(h)
    if node is None:
        return RankPath(h, (lo, hi), [], [], 0, {**dict.fromkeys(CAUSES, 0), "idle": hi - lo})
    chain = []
    while node >= 0:
        chain.append(node)
        node = best[node][1]
    chain.reverse()
    edges = [
        RankEdge(
            a >> HOST_BITS,
            (a & NODE_MASK) >> 1,
            bool(a & 1),
            b >> HOST_BITS,
            (b & NODE_MASK) >> 1,
            bool(b & 1),
            best[b][2],
            best[b][3],
        )
        for a, b in zip(chain, chain[1:])
    ]
    ordered = list(dict.fromkeys((n >> HOST_BITS, (n & NODE_MASK) >> 1) for n in chain))
    causes = _by_cause(joined, h, chain, best)
    return RankPath(
        host=h,
        window_ps=(lo, hi),
        events=ordered,
        edges=edges,
        total_ps=(hi - lo) - causes["idle"],
        by_cause_ps=causes,
    )


def _by_cause(
    joined: _Joined, h: int, chain: list[int], best: dict[int, tuple[int, int, int, int]]
) -> dict[str, int]:
    """Rank h's step window by cause along its path (module docstring)."""
    offset = joined.ranks[h].host.offset_ps
    lo, hi = (t + offset for t in joined.window(h))
    crossed = [n for n in chain if n in joined.arrivals and best[n][2] == RANK]
    waits = intervals.merge(
        np.array([joined.arrivals[n] for n in crossed], np.int64),
        np.array([joined.time(best[n][1]) for n in crossed], np.int64),
    )
    out = dict.fromkeys(CAUSES, 0.0)
    times = np.array([joined.time(n) for n in chain], np.int64)
    before = min(int(times[0]), hi)
    if before > lo:  # the path starts on another rank after r arrived: r waited there too
        out["rank_wait"] += float(intervals.covered(waits, np.array([lo]), np.array([before]))[0])
    nodes = np.array(chain, np.int64)
    t0, t1 = np.maximum(times[:-1], lo), np.maximum(np.minimum(times[1:], hi), np.maximum(times[:-1], lo))
    span = np.maximum(times[1:] - times[:-1], 1).astype(np.float64)
    weight = np.array([best[n][3] for n in chain[1:]], np.float64)
    hosts = nodes[1:] >> HOST_BITS
    elsewhere = ((nodes[:-1] >> HOST_BITS) != h) & (hosts != h)
    waited = np.where(elsewhere, intervals.covered(waits, t0, t1), 0).astype(np.float64)
    out["rank_wait"] += float(waited.sum())
    length = (t1 - t0) - waited
    worked = length * weight / span
    causes = [_cause(joined, best[b][2], a) for a, b in zip(chain, chain[1:])]
    inside = np.zeros(len(causes), np.float64)
    for host in np.unique(hosts).tolist():
        at = np.flatnonzero(hosts == host)
        inside[at] = _inside_input(joined, host, t0[at], t1[at])
    loading = np.array([c not in ("data_loading", "communication") for c in causes], bool)
    data = np.where(loading, np.minimum(worked, inside * weight / span), 0.0)
    out["data_loading"] += float(data.sum())
    for cause, time in zip(causes, (worked - data).tolist()):
        out[cause] += time
    out["idle"] += (hi - lo) - sum(out.values())
    return {cause: round(value) for cause, value in out.items()}


def _cause(joined: _Joined, kind: int, src: int) -> str:
    """What an edge's weighted time is: by its kind, a work edge by its event's role."""
    if kind == DATA:
        return "data_loading"
    if kind in (COLLECTIVE, RANK):
        return "communication"
    if kind == critical.LAUNCH:
        return "launch"
    if kind == critical.KERNEL_GAP:
        return "kernel_gap"
    if kind != critical.WORK:
        return "idle"
    role = int(joined.ranks[src >> HOST_BITS].host.events.role[(src & NODE_MASK) >> 1])
    return "communication" if role == ev.ROLE_COMM else "compute" if role in ev.DEVICE_ROLES else "cpu"
