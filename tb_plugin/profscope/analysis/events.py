"""What each event of a host's trace is to the overview: a role per event, parents, launch links.

Built once per host trace (cached by its fingerprint) with name tables: every rule below is a test
on an event's name, category or track, evaluated once per distinct string and looked up per event.

Tracks: host threads are `thread` tracks of CPU, GPU or TPU sections (Kineto files some host
threads, e.g. Python threads seen with pid 0, under the GPU's process); device tracks are the
`stream` tracks of GPU sections and the `XLA Ops` line of each TPU core. Other sections (the
profiler's own spans, global markers) and derived lines are not activity.

Roles of host-thread slices (instants never count):
- runtime: CUDA/HIP runtime and driver calls (Kineto categories `cuda_runtime`, `cuda_driver`,
  `Runtime`; names `cuda*`, `cu*`, `hip*`, `hsa*`, `nccl*` followed by a capital) and any host
  event a flow links to a device event (the launch of that event);
- compile: names with compile/compiler/compilation in them (not "Compiled", which names the
  execution of compiled code: `Torch-Compiled Region`, `CompiledFunction`);
- input: names matching `INPUT_LABELS` (data loaders, tf.data `GetNext`, `batch_read`, …);
- python: Python-stack frames (Kineto `python_function`, XPlane names starting with "$"): not host
  compute, because a Python frame is open while its thread waits (a monitor thread in
  `threading.wait` would read as 100 % busy);
- op: every other slice (framework ops, `record_function` labels, runtime-free host work).
Roles of device-track slices: compute, communication (NCCL/RCCL kernels, XLA collectives),
memcpy host→device / device→host / device→device (peer and unknown direction too; TPU infeed and
outfeed are host→device and device→host), memset. Kineto device events of other categories
(`gpu_user_annotation`, `cuda_sync`) are annotations, not activity. Device events of 0 µs (Kineto
writes `dur: 0` for sub-µs kernels: 636 in the V100 trace) have no role, so no time figure (busy
time, breakdown, idle gaps, launch delay) sees them; they are still calls: `device_calls` gives them,
with the role and launch they would have, to the kernel table.

Graphs (CUDA/HIP, `graph_calls`): the launch calls a host thread makes between a stream-capture
begin and end (`cudaStreamBeginCapture` … `cudaStreamEndCapture`, `hip…`, driver `cu…`) that no
device event links to are recorded into a graph, not run; device events whose launch call is a
graph launch (`cudaGraphLaunch`, `hipGraphLaunch`, `cuGraphLaunch`) ran through the graph, many
kernels behind one call. The names are those of the CUDA and HIP runtime and driver APIs.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from profscope.formats import registry
from profscope.model import args as model_args
from profscope.model import arrays
from profscope.model.columns import Trace

ROLE_NONE, ROLE_OP, ROLE_RUNTIME, ROLE_INPUT, ROLE_COMPILE, ROLE_PYTHON = 0, 1, 2, 3, 4, 5
ROLE_COMPUTE, ROLE_COMM, ROLE_H2D, ROLE_D2H, ROLE_D2D, ROLE_MEMSET = 10, 11, 12, 13, 14, 15
HOST_ROLES = (ROLE_OP, ROLE_RUNTIME, ROLE_INPUT, ROLE_COMPILE)
DEVICE_ROLES = (ROLE_COMPUTE, ROLE_COMM, ROLE_H2D, ROLE_D2H, ROLE_D2D, ROLE_MEMSET)
DEVICE_ROLE_SET = frozenset(DEVICE_ROLES)
DEVICE_ROLE_NAMES = {
    ROLE_COMPUTE: "kernel",
    ROLE_COMM: "collective",
    ROLE_H2D: "memcpy host→device",
    ROLE_D2H: "memcpy device→host",
    ROLE_D2D: "memcpy device→device",
    ROLE_MEMSET: "memset",
}

INPUT_LABELS = re.compile(
    r"dataloader|data_loader|_next_data|IteratorGetNext|Iterator::|GetNext|batch_read|read_batch"
    r"|load_batch|data_load|input_pipeline",
    re.IGNORECASE,
)
COMPILE_NAMES = re.compile(r"compil(?:er|ation|ing|e(?!d))", re.IGNORECASE)
RUNTIME_NAMES = re.compile(r"^(?:cuda|cu|hip|hsa|nccl)[A-Z]")
RUNTIME_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "Runtime"})
PYTHON_CATEGORIES = frozenset({"python_function"})
KERNEL_CATEGORIES = frozenset({"kernel", "Kernel"})
MEMCPY_CATEGORIES = frozenset({"gpu_memcpy", "Memcpy"})
MEMSET_CATEGORIES = frozenset({"gpu_memset", "Memset"})
COLLECTIVE_NAMES = re.compile(
    r"nccl|rccl|AllReduce|AllGather|ReduceScatter|AllToAll|SendRecv"
    r"|^(?:all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|collective-broadcast"
    r"|send|recv)(?:-start|-done)?(?:\.\d+)*$",
    re.IGNORECASE,
)
H2D_NAMES = re.compile(r"HtoD|H2D|^infeed", re.IGNORECASE)
D2H_NAMES = re.compile(r"DtoH|D2H|^outfeed", re.IGNORECASE)
MEMCPY_NAMES = re.compile(r"^Memcpy|^infeed|^outfeed", re.IGNORECASE)
MEMSET_NAMES = re.compile(r"^Memset", re.IGNORECASE)
TPU_OPS_LINE = "XLA Ops"
CAPTURE_BEGIN_NAMES = re.compile(r"^(?:cuda|hip|cu)StreamBeginCapture")
CAPTURE_END_NAMES = re.compile(r"^(?:cuda|hip|cu)StreamEndCapture")
GRAPH_LAUNCH_NAMES = re.compile(r"^(?:cuda|hip|cu)GraphLaunch")


@dataclasses.dataclass(frozen=True)
class HostEvents:
    """One host's trace with the overview's view of it (all arrays indexed by event)."""

    name: str
    trace: Trace
    self_ps: np.ndarray  # exclusive time (duration minus direct children)
    role: np.ndarray  # int8 ROLE_*
    parent: np.ndarray  # int64 enclosing event on the same host thread, -1 at the top
    host_track: np.ndarray  # bool per track
    device_track: np.ndarray  # bool per track
    launch: np.ndarray  # int64 per event: the host event that launched this device event, or -1
    span_ps: tuple[int, int]  # first start, last end over host and device activity
    device_declared: str | None  # why device activity was expected (None: it was not)
    instants: DeviceInstants  # the device events of 0 µs that would have a device role
    end_ps: np.ndarray  # int64 start + duration of every event, computed once for every reader
    # What `of_roles` answers from, built once (every stage asks for the device events and each
    # category's events again: a scan of every event each time): the event ids grouped by role
    # code, each group in event order, with the 129 offsets of the groups; the device roles' ids
    # whole. Read-only, shared by every caller.
    by_role: np.ndarray
    role_offsets: np.ndarray
    device_ids: np.ndarray

    def of_roles(self, *roles: int) -> np.ndarray:
        """Indices of the events with one of `roles`, in event order (read-only when shared)."""
        wanted = set(roles)
        if wanted == DEVICE_ROLE_SET:
            return self.device_ids
        if len(wanted) == 1:
            (code,) = wanted
            return self.by_role[self.role_offsets[code] : self.role_offsets[code + 1]]
        return np.flatnonzero(role_table(tuple(wanted))[self.role])

    def has_device(self) -> bool:
        return bool(self.device_ids.shape[0])

    def mask(self, indices: np.ndarray) -> np.ndarray:
        """A bool per event: in `indices`."""
        out = np.zeros(self.trace.num_events, dtype=bool)
        out[indices] = True
        return out


@dataclasses.dataclass(frozen=True)
class DeviceInstants:
    """Device events of 0 µs (module docstring): no role, no time, but calls."""

    index: np.ndarray  # int64 event indices, in event order
    role: np.ndarray  # int8 the device role each would have
    launch: np.ndarray  # int64 its launch call (first flow from a host thread), or -1


def device_calls(events: HostEvents) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every device call in event order, the 0 µs ones (`HostEvents.instants`) included: the event
    indices, their device roles and their launch calls (-1: none)."""
    device = events.of_roles(*DEVICE_ROLES)
    instants = events.instants
    index = np.concatenate((device, instants.index))
    order = np.argsort(index, kind="stable")
    role = np.concatenate((events.role[device], instants.role))
    launch = np.concatenate((events.launch[device], instants.launch))
    return index[order], role[order], launch[order]


def role_table(roles: tuple[int, ...]) -> np.ndarray:
    """A bool per role code (index with the int8 role column): one of `roles`."""
    table = np.zeros(128, dtype=bool)
    table[list(roles)] = True
    return table


def args_of(trace: Trace, indices: np.ndarray) -> list[memoryview]:
    """The args JSON of each event of `indices` as views of one text (many at once:
    `Trace.args_json` one by one costs a few µs of memory-map indexing per event)."""
    return model_args.event_views(trace, indices)


def string_table(strings: list[str], test) -> np.ndarray:
    """A bool per string id: `test(text)`."""
    return np.fromiter((bool(test(s)) for s in strings), dtype=bool, count=len(strings))


def build(name: str, trace: Trace, self_ps: np.ndarray) -> HostEvents:
    """Classify every event of `trace` (see the module docstring)."""
    n = trace.num_events
    kinds = {s.id: s.kind for s in trace.sections}
    host_track = np.array(
        [t.kind == "thread" and kinds.get(t.section) in ("cpu", "gpu", "tpu") for t in trace.tracks],
        dtype=bool,
    )
    device_track = np.array(
        [
            (kinds.get(t.section) == "gpu" and t.kind == "stream")
            or (kinds.get(t.section) == "tpu" and t.name == TPU_OPS_LINE)
            for t in trace.tracks
        ],
        dtype=bool,
    )
    if not trace.tracks:
        host_track = device_track = np.zeros(0, dtype=bool)
    strings = trace.strings
    track = trace.ev_track
    on_host = host_track[track] if n else np.zeros(0, bool)
    on_device = device_track[track] if n else np.zeros(0, bool)
    slices = trace.ev_dur_ps > 0
    names, cats = trace.ev_name, trace.ev_cat
    role = np.zeros(n, dtype=np.int8)

    cat_is = _category_tables(strings)
    name_is = {
        "input": string_table(strings, INPUT_LABELS.search),
        "compile": string_table(strings, COMPILE_NAMES.search),
        "runtime": string_table(strings, RUNTIME_NAMES.search),
        "python": string_table(strings, lambda s: s.startswith("$")),
        "collective": string_table(strings, COLLECTIVE_NAMES.search),
        "h2d": string_table(strings, H2D_NAMES.search),
        "d2h": string_table(strings, D2H_NAMES.search),
        "memcpy": string_table(strings, MEMCPY_NAMES.search),
        "memset": string_table(strings, MEMSET_NAMES.search),
    }
    # Host roles, later rules winning: op, input (name), compile (name), Python frame, runtime (name
    # or category); as a rank per string id, the higher of the name's and the category's taken.
    name_rank = np.zeros(len(strings), np.int8)
    name_rank[name_is["input"]] = 1
    name_rank[name_is["compile"]] = 2
    name_rank[name_is["python"]] = 3
    name_rank[name_is["runtime"]] = 4
    category_rank = np.zeros(len(strings), np.int8)
    category_rank[cat_is["python"]] = 3
    category_rank[cat_is["runtime"]] = 4
    role_of_rank = np.array([ROLE_OP, ROLE_INPUT, ROLE_COMPILE, ROLE_PYTHON, ROLE_RUNTIME], np.int8)
    host = on_host & slices
    role[host] = role_of_rank[np.maximum(name_rank[names], category_rank[cats])][host]

    kineto_device = (cat_is["kernel"] | cat_is["memcpy"] | cat_is["memset"])[cats]
    categorized = bool(kineto_device[on_device & slices].any())
    # Classified at every duration; only slices get the role (0 µs ones: `instants`).
    device = on_device & kineto_device if categorized else on_device.copy()
    # Copies and memsets are told by category (Kineto) or else by name; later rules win: compute,
    # collective (by name), then a copy (its direction by name), then a memset.
    tables, ids = (cat_is, cats) if categorized else (name_is, names)
    kind = np.zeros(len(strings), np.int8)
    kind[tables["memcpy"]] = 1
    kind[tables["memset"]] = 2
    copy_role = np.full(len(strings), ROLE_D2D, np.int8)
    copy_role[name_is["h2d"]] = ROLE_H2D
    copy_role[name_is["d2h"]] = ROLE_D2H
    kernel_role = np.where(name_is["collective"], ROLE_COMM, ROLE_COMPUTE).astype(np.int8)
    at = np.flatnonzero(device)
    device_names, device_kind = names[at], kind[ids[at]]
    device_role = np.zeros(n, dtype=np.int8)
    device_role[at] = np.where(
        device_kind == 2,
        ROLE_MEMSET,
        np.where(device_kind == 1, copy_role[device_names], kernel_role[device_names]),
    )
    role[device & slices] = device_role[device & slices]
    instants = _instants(trace, on_host, np.flatnonzero(device & ~slices), device_role)

    launch = np.full(n, -1, dtype=np.int64)
    src, dst = trace.flow_src, trace.flow_dst
    if src.shape[0]:
        link = on_host[src] & role_table(DEVICE_ROLES)[role[dst]]
        src, dst = src[link], dst[link]
        # The first flow into a device event is its launch.
        launch[dst[::-1]] = src[::-1]
        launched = src[role[src] != ROLE_NONE]
        role[launched] = ROLE_RUNTIME

    end = np.asarray(trace.ev_start_ps) + np.asarray(trace.ev_dur_ps)
    parent = _parents(trace, on_host, end)
    active = np.flatnonzero(role != ROLE_NONE)
    span = (int(trace.ev_start_ps[active].min()), int(end[active].max())) if active.shape[0] else (0, 0)
    return HostEvents(
        name=name,
        trace=trace,
        self_ps=np.asarray(self_ps),
        role=role,
        parent=parent,
        host_track=host_track,
        device_track=device_track,
        launch=launch,
        span_ps=span,
        device_declared=_device_declared(trace, role, device_track),
        instants=instants,
        end_ps=end,
        **_role_index(role),
    )


def _role_index(role: np.ndarray) -> dict[str, np.ndarray]:
    """`HostEvents`' lookups by role: the ids grouped by role (a radix sort of the codes) with the
    groups' offsets, the device roles' ids; read-only."""
    found = {
        "by_role": arrays.stable_argsort(role),
        "role_offsets": np.concatenate(([0], np.cumsum(np.bincount(role, minlength=128)))),
        "device_ids": np.flatnonzero(role_table(DEVICE_ROLES)[role]),
    }
    for array in found.values():
        array.setflags(write=False)
    return found


def _instants(
    trace: Trace, on_host: np.ndarray, index: np.ndarray, device_role: np.ndarray
) -> DeviceInstants:
    """The device events of 0 µs `index` with their roles and launch calls (the first flow into
    each from a host thread, as for the device events with a role)."""
    launch = np.full(index.shape[0], -1, dtype=np.int64)
    src, dst = trace.flow_src, trace.flow_dst
    if index.shape[0] and src.shape[0]:
        link = on_host[src] & np.isin(dst, index)
        src, dst = src[link], dst[link]
        launch[np.searchsorted(index, dst[::-1])] = src[::-1]
    return DeviceInstants(index, device_role[index], launch)


def _category_tables(strings: list[str]) -> dict[str, np.ndarray]:
    return {
        "runtime": string_table(strings, RUNTIME_CATEGORIES.__contains__),
        "python": string_table(strings, PYTHON_CATEGORIES.__contains__),
        "kernel": string_table(strings, KERNEL_CATEGORIES.__contains__),
        "memcpy": string_table(strings, MEMCPY_CATEGORIES.__contains__),
        "memset": string_table(strings, MEMSET_CATEGORIES.__contains__),
    }


def _parents(trace: Trace, on_host: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The enclosing slice of every host-thread event (same track, one row up, containing its
    start), -1 for top-level events and everything else (`end`: every event's end).

    The host events are grouped by (track, depth) once, each group in start order (a track's events
    come in start order); a child's candidate is the last event of the group one row up starting
    no later than it, which holds it when it ends after the child starts or starts with it."""
    n = trace.num_events
    parent = np.full(n, -1, dtype=np.int64)
    events = np.flatnonzero(on_host)
    if not events.shape[0]:
        return parent
    track = trace.ev_track[events].astype(np.int64)
    depth = trace.ev_depth[events].astype(np.int64)
    key = track * (int(depth.max()) + 2) + depth
    order = arrays.stable_argsort(key)
    events, key = events[order], key[order]
    start, stop = np.asarray(trace.ev_start_ps)[events], end[events]
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    bounds = np.concatenate((first, [events.shape[0]])).tolist()
    groups = {k: (lo, hi) for k, lo, hi in zip(key[first].tolist(), bounds, bounds[1:])}
    for k, (lo, hi) in groups.items():
        above = groups.get(k - 1)
        if above is None or depth[order[lo]] == 0:
            continue
        children = start[lo:hi]
        which = np.searchsorted(start[above[0] : above[1]], children, side="right") - 1
        candidate = above[0] + np.maximum(which, 0)
        ok = (which >= 0) & ((stop[candidate] > children) | (start[candidate] == children))
        parent[events[lo:hi][ok]] = events[candidate[ok]]
    return parent


def _device_declared(trace: Trace, role: np.ndarray, device_track: np.ndarray) -> str | None:
    """Why device activity would be expected in this capture, or None."""
    properties = trace.metadata.get("deviceProperties")
    if isinstance(properties, list) and properties:
        return f"the trace lists {len(properties)} device(s) in deviceProperties"
    if device_track.any():
        return "the trace has device streams"
    if trace.format == registry.XPLANE:
        planes = [p.get("name", "") for p in trace.metadata.get("planes", [])]
        device_planes = [p for p in planes if p.startswith("/device:")]
        if device_planes:
            return f"the XPlane has device planes ({', '.join(device_planes[:4])})"
    runtime = np.flatnonzero(role == ROLE_RUNTIME)
    if runtime.shape[0]:
        return f"the host made {runtime.shape[0]} device runtime calls"
    return None


@dataclasses.dataclass(frozen=True)
class GraphCalls:
    """A host's CUDA/HIP graph activity (module docstring): stream captures, the launch calls they
    recorded (no device event ran for them), graph launches and the device events run through them."""

    captures: np.ndarray  # capture-begin calls
    captured: np.ndarray  # runtime calls inside a capture with no device event linked
    launches: np.ndarray  # graph-launch calls
    launched: np.ndarray  # device events whose launch call is a graph launch

    def __bool__(self) -> bool:
        return bool(self.captures.shape[0] or self.launches.shape[0])


def named(trace: Trace, indices: np.ndarray, pattern: re.Pattern[str]) -> np.ndarray:
    """A bool per event of `indices`: its name matches `pattern` (each distinct name tested once)."""
    ids = trace.ev_name[indices]
    distinct = arrays.unique(ids)
    hits = distinct[[bool(pattern.search(trace.strings[i])) for i in distinct.tolist()]]
    return np.isin(ids, hits)


def graph_calls(events: HostEvents) -> GraphCalls:
    trace = events.trace
    runtime = events.of_roles(ROLE_RUNTIME)
    begins = runtime[named(trace, runtime, CAPTURE_BEGIN_NAMES)]
    ends = runtime[named(trace, runtime, CAPTURE_END_NAMES)]
    graph_launches = runtime[named(trace, runtime, GRAPH_LAUNCH_NAMES)]
    device = events.of_roles(*DEVICE_ROLES)
    linked = device[events.launch[device] >= 0]
    launched_any = events.mask(events.launch[linked])
    captured = []
    for track in arrays.unique(trace.ev_track[begins]).tolist():
        begin_times = np.sort(trace.ev_start_ps[begins[trace.ev_track[begins] == track]])
        end_times = np.sort(trace.ev_start_ps[ends[trace.ev_track[ends] == track]])
        calls = runtime[(trace.ev_track[runtime] == track) & ~launched_any[runtime]]
        calls = calls[~np.isin(calls, begins) & ~np.isin(calls, ends)]
        start = trace.ev_start_ps[calls]
        # Inside a capture: the last capture begin before the call is later than the last end before it.
        last_begin = np.searchsorted(begin_times, start, side="right")
        last_end = np.searchsorted(end_times, start, side="right")
        began = last_begin > 0
        begin_at = begin_times[np.maximum(last_begin - 1, 0)]
        end_at = np.where(last_end > 0, end_times[np.maximum(last_end - 1, 0)], np.iinfo(np.int64).min)
        captured.append(calls[began & (begin_at > end_at)])
    by_graph = events.mask(graph_launches)
    return GraphCalls(
        captures=begins,
        captured=np.sort(np.concatenate(captured)) if captured else np.zeros(0, np.int64),
        launches=graph_launches,
        launched=linked[by_graph[events.launch[linked]]],
    )


def ancestors(events: HostEvents, of: np.ndarray) -> np.ndarray:
    """All enclosing events of the events `of` (sorted, unique)."""
    found = np.zeros(events.trace.num_events, dtype=bool)
    current = events.parent[of]
    current = current[current >= 0]
    while current.shape[0]:
        found[current] = True
        current = events.parent[current]
        current = current[current >= 0]
    return np.flatnonzero(found)


def enclosing_of_role(events: HostEvents, of: np.ndarray, roles: tuple[int, ...]) -> np.ndarray:
    """For each event of `of`, the nearest enclosing event with one of `roles` (-1 when none)."""
    out = np.full(of.shape[0], -1, dtype=np.int64)
    pending = np.arange(of.shape[0])
    current = events.parent[of]
    while pending.shape[0]:
        alive = current >= 0
        pending, current = pending[alive], current[alive]
        hit = role_table(roles)[events.role[current]]
        out[pending[hit]] = current[hit]
        pending, current = pending[~hit], events.parent[current[~hit]]
    return out
