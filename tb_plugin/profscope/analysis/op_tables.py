"""Op and kernel tables over the scope (steady-state steps when there are steps, else the capture).

Host ops: every host-thread slice that is not a Python-stack frame nor a step marker (or what
encloses one) and starts inside a scope window, grouped by name, or by name + `Input Dims` (Kineto
`record_shapes`) with `group_by=shapes`. Self time = duration − the time of its direct children
(the trace engine's self times), so self + children = total for every call.
Kernels: device events (kernels, copies, memsets) starting in scope, by name, those of 0 µs
included as calls of no time (`events.device_calls`); the framework op of a call = the innermost
host op enclosing its launch call; a row names the op behind most calls.
Kernel details come from the first call's args (Kineto: grid, block, registers per thread, shared
memory, blocks/warps per SM, estimated achieved occupancy; XPlane: `kernel_details`).
HLO ops (XPlanes): events of the `XLA Ops` lines (TPU cores; GPU streams' derived lines), by name;
category = the `hlo_category` stat or else the op name's stem; framework op = the `tf_op` stat or
else the `Framework Ops` line event at the op's start.
Fractions divide by the scope's wall time summed over hosts. `ROW_LIMIT` rows per table, largest
total first.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import msgspec
import numpy as np

from profscope.analysis import events as ev
from profscope.analysis.answers import OverviewHloRow, OverviewKernelDetails, OverviewKernelRow, OverviewOpRow
from profscope.analysis.device_idle import in_windows
from profscope.analysis.events import HostEvents

ROW_LIMIT = 200
XLA_OPS_LINE = re.compile(r"^XLA Ops(?: \((?P<stream>.*)\))?$")
_STEM = re.compile(r"^[A-Za-z_\-]+?(?=[._]?\d|$)")


@dataclasses.dataclass(frozen=True)
class Scope:
    """One host's part of the scope: its events, windows and what the host-op table leaves out."""

    events: HostEvents
    lo: np.ndarray
    hi: np.ndarray
    excluded: np.ndarray  # step markers and their ancestors


class _Shapes(msgspec.Struct):
    input_dims: list | None = msgspec.field(default=None, name="Input Dims")


class _KernelArgs(msgspec.Struct):
    grid: list[int] | None = None
    block: list[int] | None = None
    registers: int | None = msgspec.field(default=None, name="registers per thread")
    shared: int | None = msgspec.field(default=None, name="shared memory")
    blocks_per_sm: float | None = msgspec.field(default=None, name="blocks per SM")
    warps_per_sm: float | None = msgspec.field(default=None, name="warps per SM")
    occupancy: float | None = msgspec.field(default=None, name="est. achieved occupancy %")
    kernel_details: str | None = None


class _HloArgs(msgspec.Struct):
    hlo_category: str | None = None
    tf_op: str | None = None
    program_id: int | str | None = None


def _decoder(kind: type):
    decode = msgspec.json.Decoder(kind, strict=False).decode

    def safe(raw: bytes):
        if not raw:
            return kind()
        try:
            return decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return kind()

    return safe


_decode_shapes = _decoder(_Shapes)
_decode_kernel = _decoder(_KernelArgs)
_decode_hlo = _decoder(_HloArgs)


@dataclasses.dataclass
class _Group:
    calls: int = 0
    total: float = 0.0
    self_time: float = 0.0
    low: float = float("inf")
    high: float = 0.0
    extra: dict = dataclasses.field(default_factory=dict)

    def add(self, calls: int, total: float, self_time: float, low: float, high: float) -> None:
        self.calls += calls
        self.total += total
        self.self_time += self_time
        self.low = min(self.low, low)
        self.high = max(self.high, high)


def _grouped(keys: np.ndarray, dur: np.ndarray, self_ps: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per distinct key (ascending): first position, calls, total, self, min, max. Keys that fit a
    table of about one slot per event (name ids) are counted in place, without sorting the events;
    durations are whole picoseconds, so sums in either order are the same floats."""
    if keys.shape[0] and int(keys.min()) >= 0 and int(keys.max()) < keys.shape[0] + (1 << 16):
        return _counted(keys, dur, self_ps)
    small = keys.shape[0] and int(keys.min()) >= 0 and int(keys.max()) < 1 << 16
    order = np.argsort(keys.astype(np.uint16) if small else keys, kind="stable")
    sorted_keys = keys[order]
    first = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))
    calls = np.diff(np.concatenate((first, [keys.shape[0]])))
    dur_sorted = dur[order]
    return (
        sorted_keys[first],
        order[first],
        calls,
        np.add.reduceat(dur_sorted, first),
        np.add.reduceat(self_ps[order], first),
        np.minimum.reduceat(dur_sorted, first),
        np.maximum.reduceat(dur_sorted, first),
    )


def _counted(keys: np.ndarray, dur: np.ndarray, self_ps: np.ndarray) -> tuple[np.ndarray, ...]:
    """`_grouped` by a table indexed by key."""
    calls = np.bincount(keys)
    present = np.flatnonzero(calls)
    first = np.full(calls.shape[0], keys.shape[0], np.int64)
    np.minimum.at(first, keys, np.arange(keys.shape[0]))
    low = np.full(calls.shape[0], np.inf)
    np.minimum.at(low, keys, dur)
    high = np.full(calls.shape[0], -np.inf)
    np.maximum.at(high, keys, dur)
    return (
        present,
        first[present],
        calls[present],
        np.bincount(keys, weights=dur)[present],
        np.bincount(keys, weights=self_ps)[present],
        low[present],
        high[present],
    )


def host_op_events(scope: Scope) -> np.ndarray:
    events = scope.events
    chosen = events.of_roles(*ev.HOST_ROLES)
    chosen = chosen[in_windows(events.trace.ev_start_ps[chosen], scope.lo, scope.hi)]
    if scope.excluded.shape[0]:
        chosen = chosen[~events.mask(scope.excluded)[chosen]]
    return chosen


def shapes_of(events: HostEvents, chosen: np.ndarray) -> list[str]:
    """The `Input Dims` text of each event ("" when the profile has none)."""
    out = []
    for raw in ev.args_of(events.trace, chosen):
        dims = _decode_shapes(raw).input_dims
        out.append(msgspec.json.encode(dims).decode() if dims else "")
    return out


def host_ops(scopes: Sequence[Scope], wall_ns: float, group_by: str) -> tuple[list[OverviewOpRow], int]:
    groups: dict[tuple[str, str], _Group] = {}
    for scope in scopes:
        events = scope.events
        trace = events.trace
        chosen = host_op_events(scope)
        if not chosen.shape[0]:
            continue
        names = trace.ev_name[chosen].astype(np.int64)
        shape_texts = shapes_of(events, chosen) if group_by == "shapes" else None
        if shape_texts is not None:
            shape_ids = np.unique(np.array(shape_texts, dtype=object), return_inverse=True)
            table, shape_index = shape_ids[0], shape_ids[1].ravel()
            keys = names * (len(table) + 1) + shape_index
        else:
            keys = names
        unique, first, calls, total, self_total, low, high = _grouped(
            keys, trace.ev_dur_ps[chosen].astype(np.float64), events.self_ps[chosen].astype(np.float64)
        )
        for k in range(unique.shape[0]):
            i = int(chosen[first[k]])
            shapes = shape_texts[first[k]] if shape_texts is not None else ""
            group = groups.setdefault((trace.strings[trace.ev_name[i]], shapes), _Group())
            group.add(int(calls[k]), float(total[k]), float(self_total[k]), float(low[k]), float(high[k]))
    rows = []
    for (name, shapes), g in sorted(groups.items(), key=lambda kv: -kv[1].total)[:ROW_LIMIT]:
        row = OverviewOpRow(
            name=name,
            calls=g.calls,
            total_ns=g.total / 1e3,
            self_ns=g.self_time / 1e3,
            avg_ns=g.total / g.calls / 1e3,
            min_ns=g.low / 1e3,
            max_ns=g.high / 1e3,
            total_fraction=_fraction(g.total / 1e3, wall_ns),
            self_fraction=_fraction(g.self_time / 1e3, wall_ns),
            search=name,
        )
        if group_by == "shapes":
            row.shapes = shapes
        rows.append(row)
    return rows, len(groups)


def _fraction(ns: float, wall_ns: float) -> float:
    return ns / wall_ns if wall_ns > 0 else 0.0


def kernels(scopes: Sequence[Scope], wall_ns: float) -> tuple[list[OverviewKernelRow], int]:
    groups: dict[str, _Group] = {}
    for scope in scopes:
        events = scope.events
        trace = events.trace
        chosen, roles, launch = ev.device_calls(events)
        keep = in_windows(trace.ev_start_ps[chosen], scope.lo, scope.hi)
        chosen, roles, launch = chosen[keep], roles[keep], launch[keep]
        if not chosen.shape[0]:
            continue
        dur = trace.ev_dur_ps[chosen].astype(np.float64)
        names = trace.ev_name[chosen].astype(np.int64)
        unique, first, calls, total, _, low, high = _grouped(names, dur, dur)
        op = np.full(chosen.shape[0], -1, np.int64)
        linked = np.flatnonzero(launch >= 0)
        op[linked] = ev.enclosing_of_role(events, launch[linked], (ev.ROLE_OP, ev.ROLE_INPUT))
        if scope.excluded.shape[0]:
            # A launch straight inside a step marker has no framework op.
            op[(op >= 0) & events.mask(scope.excluded)[np.maximum(op, 0)]] = -1
        op_names = np.where(op >= 0, trace.ev_name[np.maximum(op, 0)], -1).astype(np.int64)
        width = len(trace.strings) + 1
        pairs, pair_counts = np.unique(
            names[op_names >= 0] * width + op_names[op_names >= 0], return_counts=True
        )
        ops_of: dict[int, list[tuple[int, int]]] = {}
        for pair, c in zip(pairs.tolist(), pair_counts.tolist()):
            ops_of.setdefault(pair // width, []).append((pair % width, c))
        for k in range(unique.shape[0]):
            i = int(chosen[first[k]])
            name = trace.strings[trace.ev_name[i]]
            group = groups.get(name)
            if group is None:
                group = groups[name] = _Group()
                group.extra = {
                    "kind": ev.DEVICE_ROLE_NAMES[int(roles[first[k]])],
                    "ops": {},
                    "first": (events, i),
                }
            group.add(int(calls[k]), float(total[k]), float(total[k]), float(low[k]), float(high[k]))
            for sid, c in ops_of.get(int(unique[k]), []):
                text = trace.strings[sid]
                group.extra["ops"][text] = group.extra["ops"].get(text, 0) + c
    rows = []
    for name, g in sorted(groups.items(), key=lambda kv: -kv[1].total)[:ROW_LIMIT]:
        host_events, first_event = g.extra["first"]
        row = OverviewKernelRow(
            name=name,
            kind=g.extra["kind"],
            calls=g.calls,
            total_ns=g.total / 1e3,
            avg_ns=g.total / g.calls / 1e3,
            min_ns=g.low / 1e3,
            max_ns=g.high / 1e3,
            fraction=_fraction(g.total / 1e3, wall_ns),
            framework_ops=len(g.extra["ops"]),
            search=name,
        )
        if g.extra["ops"]:
            row.framework_op = max(g.extra["ops"].items(), key=lambda kv: kv[1])[0]
        details = kernel_details(host_events.trace.args_json(first_event))
        if details is not None:
            row.details = details
        rows.append(row)
    return rows, len(groups)


def kernel_details(raw: bytes) -> OverviewKernelDetails | None:
    """The launch configuration in one kernel event's args, None when it has none."""
    args = _decode_kernel(raw)
    details = OverviewKernelDetails()
    if args.kernel_details:
        fields = dict(part.split(":", 1) for part in args.kernel_details.split() if ":" in part)
        args.grid = _ints(fields.get("grid"))
        args.block = _ints(fields.get("block"))
        args.registers = _int(fields.get("regs"))
        args.shared = _int(fields.get("shm", fields.get("group_mem")))
        occupancy = _int(fields.get("occ_pct"))
        args.occupancy = float(occupancy) if occupancy else None
    for field, value in (
        ("grid", args.grid),
        ("block", args.block),
        ("registers_per_thread", args.registers),
        ("shared_memory", args.shared),
        ("blocks_per_sm", args.blocks_per_sm),
        ("warps_per_sm", args.warps_per_sm),
        ("occupancy", args.occupancy),
    ):
        if value is not None:
            setattr(details, field, value)
    return (
        details
        if msgspec.structs.asdict(details) != msgspec.structs.asdict(OverviewKernelDetails())
        else None
    )


def _ints(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def hlo_ops(scopes: Sequence[Scope], wall_ns: float) -> tuple[list[OverviewHloRow], int]:
    groups: dict[str, _Group] = {}
    for scope in scopes:
        events = scope.events
        trace = events.trace
        lines = {t.id: t for t in trace.tracks if XLA_OPS_LINE.match(t.name)}
        if not lines:
            continue
        chosen = np.flatnonzero(np.isin(trace.ev_track, list(lines)) & (trace.ev_dur_ps > 0))
        chosen = chosen[in_windows(trace.ev_start_ps[chosen], scope.lo, scope.hi)]
        if not chosen.shape[0]:
            continue
        names = trace.ev_name[chosen].astype(np.int64)
        unique, first, calls, total, self_total, low, high = _grouped(
            names, trace.ev_dur_ps[chosen].astype(np.float64), events.self_ps[chosen].astype(np.float64)
        )
        for k in range(unique.shape[0]):
            i = int(chosen[first[k]])
            name = trace.strings[trace.ev_name[i]]
            group = groups.get(name)
            if group is None:
                group = groups[name] = _Group()
                group.extra = _hlo_info(events, i, lines[int(trace.ev_track[i])])
            group.add(int(calls[k]), float(total[k]), float(self_total[k]), float(low[k]), float(high[k]))
    rows = []
    for name, g in sorted(groups.items(), key=lambda kv: -kv[1].total)[:ROW_LIMIT]:
        row = OverviewHloRow(
            name=name,
            category=g.extra["category"],
            calls=g.calls,
            total_ns=g.total / 1e3,
            self_ns=g.self_time / 1e3,
            avg_ns=g.total / g.calls / 1e3,
            min_ns=g.low / 1e3,
            max_ns=g.high / 1e3,
            fraction=_fraction(g.self_time / 1e3, wall_ns),
            search=name,
        )
        if g.extra.get("framework_op"):
            row.framework_op = g.extra["framework_op"]
        if g.extra.get("program"):
            row.program = g.extra["program"]
        rows.append(row)
    return rows, len(groups)


def _hlo_info(events: HostEvents, i: int, line) -> dict:
    trace = events.trace
    args = _decode_hlo(trace.args_json(i))
    name = trace.strings[trace.ev_name[i]]
    stem = _STEM.match(name)
    info = {
        "category": args.hlo_category or (stem.group(0) if stem else name),
        "framework_op": args.tf_op if args.tf_op and not args.tf_op.endswith(":") else None,
        "program": str(args.program_id) if args.program_id is not None else None,
    }
    if info["framework_op"] is None:
        stream = XLA_OPS_LINE.match(line.name).group("stream")
        wanted = f"Framework Ops ({stream})" if stream else "Framework Ops"
        framework = [t.id for t in trace.tracks if t.section == line.section and t.name == wanted]
        if framework:
            on = np.flatnonzero(trace.ev_track == framework[0])
            start = trace.ev_start_ps[i]
            k = int(np.searchsorted(trace.ev_start_ps[on], start, side="right")) - 1
            if k >= 0 and trace.ev_start_ps[on[k]] + trace.ev_dur_ps[on[k]] > start:
                info["framework_op"] = trace.strings[trace.ev_name[on[k]]]
    return info
