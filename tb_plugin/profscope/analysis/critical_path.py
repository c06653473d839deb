"""The critical path of a window of one host's trace: the chain of dependent work that sets its time.

The model is HolisticTraceAnalysis' lightweight critical path (its `critical_path_analysis`, written
here from its documentation and its published results), on one host:

Nodes are points in time: the start and the end of every event taking part, that is the host
threads' slices that are work (framework ops and runtime calls; Python frames, `record_function`
labels and `ProfilerStep` spans are left out, as HTA leaves out everything but `cpu_op`,
`cuda_runtime` and `cuda_driver`; in an XPlane, which has no categories, the step markers the
caller names are left out) starting inside the window, and the device events those runtime
calls launched.

Edges, with their weight (time) or none (a dependency, weight 0):
- host nesting and sequence, per thread, walking each thread's stack: the previous node to an
  event's start (its parent's time before it, weighted; between two top-level events a dependency,
  unweighted: a thread's idle gap is not work), and the last node inside an event to its end
  (weighted, but unweighted for a blocking call, `BLOCKING_CALLS`: its time is waiting);
- a device event's own duration (weighted);
- launch (launch call's start → device event's start, weighted by the delay) when the stream had
  nothing else queued while it was launched and run and its previous event had ended before the
  launch call began; otherwise kernel → kernel (previous end → start on the same stream, weighted by
  the gap) when the gap is under `KERNEL_GAP_LIMIT_PS`;
- synchronization (unweighted), from the Kineto `cuda_sync` events: `Context Sync` (device
  synchronize) from the last device event of every stream, `Stream Sync` from the last one of its
  stream, `Event Sync` from the device event launched last on the recorded stream before the
  `cudaEventRecord` it waits for, each to the end of its runtime call; `Stream Wait Event` from that
  same device event to the start of the next device event the waiting thread launches on the
  waiting stream.

The path is the longest path of that graph (a DAG: every edge goes forward in time), a tie going
to the first edge added into a node; its events are those with a node on it, in the path's order.
Its time is the sum of its edges' weights, broken down by cause: an event's weighted edges count as
what the event is (host work `cpu`, device `compute` or `communication`), a launch edge as
`launch`, a kernel → kernel gap as `kernel_gap`; what the window holds past the path's time is `idle`
(dependencies: waits, gaps between top-level ops).

Left out (docs/OVERVIEW.md "Critical path" says how the answers differ from HTA's): HTA's edges
between runtime calls of different threads that share the CUDA runtime lock, and its merging of the
backward thread into the forward one; waiting for another rank is not modelled (single host).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import defaultdict

import msgspec
import numpy as np

from profscope.analysis import events as ev
from profscope.model.columns import Trace

# Calls whose time is waiting for the device, not work: their end is reached through a sync edge.
BLOCKING_CALLS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventQuery",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cudaMemcpyAsync",
    }
)
HOST_WORK_CATEGORIES = frozenset({"cpu_op", "cuda_runtime", "cuda_driver"})
SYNC_CATEGORY = "cuda_sync"
EVENT_RECORD = "cudaEventRecord"
STREAM_WAIT_EVENT = "cudaStreamWaitEvent"
# HTA's limit on a kernel → kernel edge (1.5 ms): a longer gap on a stream is no dependency.
KERNEL_GAP_LIMIT_PS = 1_500 * 1_000_000

EDGE_KINDS = ("work", "dependency", "launch", "kernel_gap", "sync")
WORK, DEPENDENCY, LAUNCH, KERNEL_GAP, SYNC = range(len(EDGE_KINDS))
CAUSES = ("cpu", "launch", "compute", "communication", "kernel_gap", "idle")


@dataclasses.dataclass(frozen=True)
class PathEdge:
    """One edge of the path: from one end of an event to one end of another."""

    src_event: int
    src_is_end: bool
    dst_event: int
    dst_is_end: bool
    kind: int  # WORK, DEPENDENCY, LAUNCH, KERNEL_GAP or SYNC
    weight_ps: int


@dataclasses.dataclass(frozen=True)
class CriticalPath:
    """The path of a window: its events in order, its edges, its time and that time by cause."""

    window_ps: tuple[int, int]
    events: np.ndarray  # int64 event indices, in the path's order
    edges: list[PathEdge]
    total_ps: int  # the sum of the path's edge weights
    by_cause_ps: dict[str, int]  # CAUSES → ps; `idle` is the window's time past `total_ps`


class _SyncArgs(msgspec.Struct):
    correlation: int = -1
    stream: int = -1
    wait_on_stream: int = -1
    wait_on_cuda_event_record_corr_id: int = -1


_decode_sync_args = msgspec.json.Decoder(_SyncArgs).decode


def _args(trace: Trace, indices: np.ndarray) -> list[_SyncArgs]:
    return [_decode_sync_args(bytes(raw) or b"{}") for raw in ev.args_of(trace, indices)]


class Graph:
    """Nodes are 2 * event (start) and 2 * event + 1 (end); edges are kept per destination."""

    def __init__(self, start: np.ndarray, end: np.ndarray) -> None:
        self.start, self.end = start, end
        self.into: dict[int, list[tuple[int, int, int]]] = defaultdict(list)  # dst → (src, kind, weight)

    def time(self, node: int) -> int:
        return int((self.end if node & 1 else self.start)[node >> 1])

    def add(self, src: int, dst: int, kind: int, weighted: bool = True) -> None:
        weight = self.time(dst) - self.time(src) if weighted and kind not in (DEPENDENCY, SYNC) else 0
        self.into[dst].append((src, kind, weight))


def find(
    events: ev.HostEvents, start_ps: int, end_ps: int, markers: np.ndarray | None = None
) -> CriticalPath:
    """The critical path of the host work starting in [start_ps, end_ps] and the device work it
    launched (module docstring); `markers`: the step markers, left out."""
    graph, members = build(events, start_ps, end_ps, markers)
    return _longest(events, graph, (start_ps, end_ps), members)


def build(
    events: ev.HostEvents, start_ps: int, end_ps: int, markers: np.ndarray | None = None
) -> tuple[Graph, np.ndarray]:
    """The window's graph and the events with nodes in it (`markers`, the step markers, left out)."""
    trace = events.trace
    host = _host_work(events, start_ps, end_ps)
    if markers is not None:
        host = host[~np.isin(host, markers)]
    in_window = events.mask(host)
    device = events.of_roles(*ev.DEVICE_ROLES)
    device = device[(events.launch[device] >= 0) & in_window[np.maximum(events.launch[device], 0)]]
    graph = Graph(trace.ev_start_ps, trace.ev_start_ps + trace.ev_dur_ps)
    _host_edges(events, host, graph)
    _device_edges(events, device, in_window, graph)
    return graph, np.concatenate((host, device))


def _host_work(events: ev.HostEvents, start_ps: int, end_ps: int) -> np.ndarray:
    trace = events.trace
    work = events.of_roles(*ev.HOST_ROLES)
    categories = np.array([c in HOST_WORK_CATEGORIES for c in trace.strings], dtype=bool)
    if categories[trace.ev_cat].any():  # Kineto: the categories HTA takes
        work = work[categories[trace.ev_cat[work]]]
    begins = trace.ev_start_ps[work]
    return work[(begins >= start_ps) & (begins <= end_ps)]


def _host_edges(events: ev.HostEvents, host: np.ndarray, graph: Graph) -> None:
    """Each thread's stack walked in order: into every start and every end (module docstring)."""
    trace = events.trace
    blocking = ev.string_table(trace.strings, BLOCKING_CALLS.__contains__)[trace.ev_name]
    order = host[np.lexsort((-trace.ev_dur_ps[host], trace.ev_start_ps[host], trace.ev_track[host]))]
    for track in np.unique(trace.ev_track[order]).tolist():
        last, stack = -1, []

        def leave(event: int) -> None:
            nonlocal last
            graph.add(last, 2 * event + 1, WORK, weighted=not blocking[event])
            last = 2 * event + 1

        for event in order[trace.ev_track[order] == track].tolist():
            while stack and graph.end[stack[-1]] <= graph.start[event]:
                leave(stack.pop())
            if last >= 0:
                graph.add(last, 2 * event, WORK if stack else DEPENDENCY)
            last = 2 * event
            stack.append(event)
        while stack:
            leave(stack.pop())


def _device_edges(events: ev.HostEvents, device: np.ndarray, in_window: np.ndarray, graph: Graph) -> None:
    """Device events in start order with the sync events in end order (module docstring)."""
    trace = events.trace
    start, end = graph.start, graph.end
    queued_at_launch, queued_at_start = _queues(events)
    syncs = _sync_events(events)
    sync_args = dict(zip(syncs.tolist(), _args(trace, syncs)))
    runtime = events.of_roles(ev.ROLE_RUNTIME)
    by_correlation = dict(zip((a.correlation for a in _args(trace, runtime)), runtime.tolist()))
    wait_sources = _event_record_sources(events, sync_args, by_correlation)
    kernel_sync: dict[int, int] = {}  # a device event → the device event it waits for
    for sync in syncs.tolist():
        args = sync_args[sync]
        source = wait_sources.get(args.wait_on_cuda_event_record_corr_id, -1)
        waiting = by_correlation.get(args.correlation, -1)
        if trace.strings[trace.ev_name[sync]] == "Stream Wait Event" and source >= 0 and waiting >= 0:
            target = _next_launch(events, waiting, int(trace.ev_track[sync]))
            if target >= 0:
                kernel_sync[target] = source
    last: dict[int, int] = {}  # stream track → end node of its last device event
    order = sorted(
        [(int(start[d]), 0, d) for d in device.tolist()] + [(int(end[s]), 1, s) for s in syncs.tolist()]
    )
    for _, is_sync, event in order:
        if is_sync:
            _sync_edges(events, event, sync_args[event], by_correlation, wait_sources, in_window, last, graph)
            continue
        stream = int(trace.ev_track[event])
        call = int(events.launch[event])
        graph.add(2 * event, 2 * event + 1, WORK)
        waited = kernel_sync.pop(event, -1)
        waited_end = int(end[waited]) if waited >= 0 and in_window[events.launch[waited]] else None
        if waited_end is not None:
            graph.add(2 * waited + 1, 2 * event, SYNC)
        previous = last.get(stream)
        if (
            queued_at_launch.get(call) == 1
            and queued_at_start.get(event) == 0
            and (previous is None or graph.time(previous) < start[call])
            and (waited_end is None or waited_end < start[call])
        ):
            graph.add(2 * call, 2 * event, LAUNCH)
        elif (
            previous is not None
            and start[event] - graph.time(previous) < KERNEL_GAP_LIMIT_PS
            and (waited_end is None or waited_end < graph.time(previous))
        ):
            graph.add(previous, 2 * event, KERNEL_GAP)
        last[stream] = 2 * event + 1


def _sync_edges(
    events: ev.HostEvents,
    sync: int,
    args: _SyncArgs,
    by_correlation: dict[int, int],
    wait_sources: dict[int, int],
    in_window: np.ndarray,
    last: dict[int, int],
    graph: Graph,
) -> None:
    """A `Context Sync`, `Stream Sync` or `Event Sync`: device → the end of its runtime call."""
    trace = events.trace
    call = by_correlation.get(args.correlation, -1)
    if call < 0 or not in_window[call]:
        return
    kind = trace.strings[trace.ev_name[sync]]
    if kind == "Context Sync":
        sources = list(last.values())
    elif kind == "Stream Sync":
        streams = _stream_numbers(trace)
        sources = [node for track, node in last.items() if streams[track] == args.stream]
    elif kind == "Event Sync":
        source = wait_sources.get(args.wait_on_cuda_event_record_corr_id, -1)
        sources = [2 * source + 1] if source >= 0 and in_window[events.launch[source]] else []
    else:
        sources = []
    for node in sources:
        graph.add(node, 2 * call + 1, SYNC)


def _stream_numbers(trace: Trace) -> np.ndarray:
    """The CUDA stream of each Kineto stream track ("stream 7 (kernels, …)"), -2 for other tracks."""
    numbers = np.full(len(trace.tracks), -2, dtype=np.int64)
    for i, track in enumerate(trace.tracks):
        words = track.name.split()
        if len(words) > 1 and words[0] == "stream" and words[1].lstrip("-").isdigit():
            numbers[i] = int(words[1])
    return numbers


def _sync_events(events: ev.HostEvents) -> np.ndarray:
    trace = events.trace
    on_device = events.device_track[trace.ev_track] if trace.num_events else np.zeros(0, bool)
    is_sync = np.array([s == SYNC_CATEGORY for s in trace.strings], dtype=bool)[trace.ev_cat]
    return np.flatnonzero(on_device & is_sync)


def _queues(events: ev.HostEvents) -> tuple[dict[int, int], dict[int, int]]:
    """Per stream, the device events launched and not yet started: just after each launch call
    (by launch call) and just after each device event starts (by device event)."""
    trace = events.trace
    device = events.of_roles(*ev.DEVICE_ROLES)
    device = device[events.launch[device] >= 0]
    at_launch: dict[int, int] = {}
    at_start: dict[int, int] = {}
    for stream in np.unique(trace.ev_track[device]).tolist():
        ran = device[trace.ev_track[device] == stream]
        calls = events.launch[ran]
        times = np.concatenate((trace.ev_start_ps[calls], trace.ev_start_ps[ran]))
        steps = np.concatenate((np.ones(calls.shape[0], np.int64), -np.ones(ran.shape[0], np.int64)))
        order = np.argsort(times, kind="stable")
        queued = np.empty_like(steps)
        queued[order] = np.cumsum(steps[order])
        at_launch.update(zip(calls.tolist(), queued[: calls.shape[0]].tolist()))
        at_start.update(zip(ran.tolist(), queued[calls.shape[0] :].tolist()))
    return at_launch, at_start


def _event_record_sources(
    events: ev.HostEvents, sync_args: dict[int, _SyncArgs], by_correlation: dict[int, int]
) -> dict[int, int]:
    """For each recorded CUDA event a sync waits on (by the correlation of its `cudaEventRecord`):
    the device event launched last on the recorded stream before the record call."""
    trace = events.trace
    device = events.of_roles(*ev.DEVICE_ROLES)
    device = device[events.launch[device] >= 0]
    streams = _stream_numbers(trace)
    sources: dict[int, int] = {}
    for args in sync_args.values():
        record = by_correlation.get(args.wait_on_cuda_event_record_corr_id, -1)
        if record < 0 or args.wait_on_stream < 0:
            continue
        on_stream = device[streams[trace.ev_track[device]] == args.wait_on_stream]
        before = on_stream[trace.ev_start_ps[events.launch[on_stream]] <= trace.ev_start_ps[record]]
        if before.shape[0]:
            sources[args.wait_on_cuda_event_record_corr_id] = int(
                before[np.argmax(trace.ev_start_ps[events.launch[before]])]
            )
    return sources


def _next_launch(events: ev.HostEvents, call: int, stream_track: int) -> int:
    """The first device event on `stream_track` launched from `call`'s thread after `call`."""
    trace = events.trace
    device = events.of_roles(*ev.DEVICE_ROLES)
    device = device[(trace.ev_track[device] == stream_track) & (events.launch[device] >= 0)]
    calls = events.launch[device]
    later = (trace.ev_track[calls] == trace.ev_track[call]) & (
        trace.ev_start_ps[calls] > trace.ev_start_ps[call]
    )
    if not later.any():
        return -1
    return int(device[later][np.argmin(trace.ev_start_ps[calls[later]])])


def _longest(
    events: ev.HostEvents, graph: Graph, window: tuple[int, int], members: np.ndarray
) -> CriticalPath:
    """The longest path, nodes taken in topological order (time, ends first); a tie goes to the first edge added."""
    nodes = sorted(
        {2 * int(e) for e in members} | {2 * int(e) + 1 for e in members},
        key=lambda n: (graph.time(n), n & 1 == 0, n),
    )
    successors: dict[int, list[int]] = defaultdict(list)
    waiting = dict.fromkeys(nodes, 0)
    for dst, sources in graph.into.items():
        waiting[dst] = len(sources)
        for src, _, _ in sources:
            successors[src].append(dst)
    rank = {n: i for i, n in enumerate(nodes)}
    ready = [(rank[n], n) for n in nodes if waiting[n] == 0]
    heapq.heapify(ready)
    best: dict[int, tuple[int, int, int, int]] = {}  # node → (distance, previous, kind, weight)
    finish, finish_distance = -1, -1
    while ready:
        _, node = heapq.heappop(ready)
        distance, previous, kind, weight = -1, -1, WORK, 0
        for src, edge_kind, edge_weight in graph.into.get(node, ()):  # the first longest, in edge order
            if best[src][0] + edge_weight > distance:
                distance, previous, kind, weight = best[src][0] + edge_weight, src, edge_kind, edge_weight
        best[node] = (max(distance, 0), previous, kind, weight)
        distance = max(distance, 0)
        if distance > finish_distance:
            finish, finish_distance = node, distance
        for dst in successors.get(node, ()):
            waiting[dst] -= 1
            if waiting[dst] == 0:
                heapq.heappush(ready, (rank[dst], dst))
    chain = []
    node = finish
    while node >= 0:
        chain.append(node)
        node = best[node][1]
    chain.reverse()
    edges = [
        PathEdge(a >> 1, bool(a & 1), b >> 1, bool(b & 1), best[b][2], best[b][3])
        for a, b in zip(chain, chain[1:])
    ]
    ordered = list(dict.fromkeys(n >> 1 for n in chain))
    total = max(finish_distance, 0)
    return CriticalPath(
        window_ps=window,
        events=np.array(ordered, dtype=np.int64),
        edges=edges,
        total_ps=total,
        by_cause_ps=_by_cause(events, edges, window, total),
    )


def _by_cause(
    events: ev.HostEvents, edges: list[PathEdge], window: tuple[int, int], total: int
) -> dict[str, int]:
    out = dict.fromkeys(CAUSES, 0)
    for edge in edges:
        if edge.kind == LAUNCH:
            out["launch"] += edge.weight_ps
        elif edge.kind == KERNEL_GAP:
            out["kernel_gap"] += edge.weight_ps
        elif edge.kind == WORK:
            role = int(events.role[edge.src_event])  # only a device event's own edge starts on it
            cause = (
                "communication" if role == ev.ROLE_COMM else "compute" if role in ev.DEVICE_ROLES else "cpu"
            )
            out[cause] += edge.weight_ps
    out["idle"] = max(window[1] - window[0] - total, 0)
    return out
