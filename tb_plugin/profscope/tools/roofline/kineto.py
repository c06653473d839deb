"""Per-op FLOPs, bytes and device time of a PyTorch profiler (Kineto) trace, for the roofline.

One `OpCost` per CPU op (`cpu_op`, old `Operator` events) summed over its occurrences, per input
signature (name, shapes, dtypes) for ops with a formula and recorded shapes.

Device time. A GPU activity (kernel, memcpy, memset) belongs to the op that launched it: its
launch flow (the reader rebuilds Kineto's `ac2g` flows from `correlation` ids) leads to the runtime
call (cudaLaunchKernel, hipLaunchKernel, …), which belongs to the innermost op open on its thread.
    total_time_ps = busy time (union of [start, end)) of the activities launched by the row's ops
                    or by ops nested in them; self_time_ps = those launched by the row's ops.
A union, so kernels overlapping on several streams and recursive ops count once. A trace without
GPU activity (CPU-only) observes no device time: times are 0 and `device_time_observed` is False.

FLOPs and bytes: a `flops` arg recorded with `with_flops=True` (some PyTorch versions write it; no
corpus trace has one) gives source "profile" (bytes still from shapes); otherwise the formulas of
`kineto_formulas.py` (each written in its docstring), from `Input Dims`, `Input type` and
`Concrete Inputs`, give "estimated from shapes", or "modelled from shapes (profscope)" for the
cost models of their own (GEMM epilogues, norms, grouped GEMM). A formula op without shapes: flops None, "no
shapes recorded (record_shapes=True)"; a formula input not recorded (a convolution's stride in a
trace without Concrete Inputs) is named; ops without formula: None, "no FLOP formula for this op".
Never 0 for unknown.

Which level counts, so nested ops count once: the op that does the work. Kernel-level ops (mm,
addmm, cudnn_convolution, convolution_backward, _flash_attention_forward, native_layer_norm,
_softmax, add, …) always; composite ops (linear, matmul, conv2d, convolution, layer_norm,
batch_norm, scaled_dot_product_attention, softmax, …) only when no op of their family is nested
in them (the innermost op with a formula of the family; SDPA's math path: matmul and softmax). An
elementwise op nested in a GEMM (a bias add, a copy) counts for itself and does not hide it. An op
with recorded `flops` counts whole, ops nested in it do not. `cudnn_/miopen_convolution_backward_
input/_weight` count in their combined `*_convolution_backward` parent, which learns from them
which gradients were computed. Rows counted in nested ops say "counted in nested …"; they and
wrapper ops (ProfilerStep#, autograd nodes) around counted ops have `in_program` False.

Occurrences are costed once (`prepare`); `KinetoOps.costs` sums them per bucket of occurrences —
the whole trace, or each step (`kineto_steps.py`) — by the same rules: in a bucket, a row's
total time is the busy time of the activities launched by its occurrences in the bucket or by ops
nested in them, its self time that of its occurrences' own launches, its FLOPs and bytes the sum
over its occurrences in the bucket (unknown when any is unknown).
"""

from __future__ import annotations

import dataclasses
import operator
import re
from itertools import compress
from typing import Any

import msgspec
import numpy as np

from profscope.analysis import intervals
from profscope.model import args as model_args
from profscope.model import arrays
from profscope.model.columns import Trace
from profscope.tools.roofline import flash_kernels
from profscope.tools.roofline.kineto_formulas import (
    DTYPES,
    ENTRIES,
    FAMILIES,
    FAMILY_CODE,
    FORMULAS,
    PART_OF,
    Call,
    Entry,
    Unknown,
    roof_of,
    takes_output_shape,
)
from profscope.tools.roofline.model import (
    COST_FROM_PROFILE,
    COST_FROM_SHAPES,
    COST_MODELLED,
    MAX_EVENT_IDS,
    OpCost,
)

OP_CATEGORIES = frozenset({"cpu_op", "Operator"})
DEVICE_CATEGORIES = frozenset({"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"})
COPY_CATEGORIES = frozenset({"gpu_memcpy", "Memcpy"})
HOST_COPY = re.compile(r"HtoD|DtoH|H2D|D2H|Host", re.IGNORECASE)
NO_SHAPES = "no shapes recorded (record_shapes=True)"
NO_FORMULA = "no FLOP formula for this op"
NO_DEVICE_TIME = "no GPU activity in this trace: device time not observed"
TRITON_PREFIX = "triton_"
# Convolution backward ops: positions of (grad_output, input, weight) in their arguments.
CONV_BACKWARD = {
    "aten::cudnn_convolution_backward": (1, 0, 2),
    "aten::miopen_convolution_backward": (1, 0, 2),
    "aten::convolution_backward": (0, 1, 2),
}


class _Args(msgspec.Struct, gc=False):
    """The args an estimate reads, left as raw JSON (decoded once per distinct text)."""

    dims: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Input Dims")
    types: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Input type")
    concrete: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Concrete Inputs")
    flops: float | None = None


_ARGS = msgspec.json.Decoder(_Args)
_FLOPS = operator.attrgetter("flops")
_EMPTY = _Args()
_FIELD_NAMES = tuple(f'"{f.encode_name}"'.encode() for f in msgspec.structs.fields(_Args))
# What an op occurrence is for the count: its own FLOPs, counted in nested ops, counted in an
# enclosing op with recorded FLOPs, a part counted in its combined op, or an op without formula.
COUNTED, COVERED, UNDER_PROFILED, PART, OTHER = range(5)


def device_spans(trace: Trace) -> dict[int, tuple[int, int]]:
    """Per GPU section with activity (kernels, memcpys, memsets), its first start and last end: the
    program's device time is Σ (end − start), idle gaps included. Host threads Kineto files under a
    GPU's process (Python threads of pid 0) and annotations are not activity."""
    activity = np.flatnonzero(np.isin(trace.ev_cat, _string_ids(trace, DEVICE_CATEGORIES)))
    section = np.array([t.section for t in trace.tracks], dtype=np.int64)[trace.ev_track[activity]]
    gpus = {s.id for s in trace.sections if s.kind == "gpu"}
    start, end = trace.ev_start_ps[activity], trace.ev_start_ps[activity] + trace.ev_dur_ps[activity]
    return {
        sid: (int(start[section == sid].min()), int(end[section == sid].max()))
        for sid in arrays.unique(section).tolist()
        if sid in gpus
    }


def triton_kernels(trace: Trace) -> tuple[int, int]:
    """(count, busy ps: union of their [start, end)) of the Triton kernels torch.compile launched
    (Inductor names them `triton_<kind>_fused_<ops>_<n>`). Their FLOPs are not derivable from the
    trace: the op that launches them (CompiledFunction, a compiled region) records the compiled
    graph's inputs, not each kernel's operands, so they stay uncosted and the answer counts them."""
    names = np.array([s.startswith(TRITON_PREFIX) for s in trace.strings], dtype=bool)
    activity = np.flatnonzero(np.isin(trace.ev_cat, _string_ids(trace, DEVICE_CATEGORIES)))
    kernels = activity[names[trace.ev_name[activity]]] if names.shape[0] else activity[:0]
    start, end = trace.ev_start_ps[kernels], trace.ev_start_ps[kernels] + trace.ev_dur_ps[kernels]
    merged = intervals.merge(start, end)
    return int(kernels.shape[0]), int((merged.end - merged.start).sum())


def device_time_observed(trace: Trace) -> bool:
    """Whether the trace holds GPU activity (kernels, memcpys, memsets), so op device times mean
    something; False for a CPU-only trace (see `NO_DEVICE_TIME`)."""
    return bool(np.isin(trace.ev_cat, _string_ids(trace, DEVICE_CATEGORIES)).any())


def op_costs(trace: Trace) -> list[OpCost]:
    """One `OpCost` per CPU op name (per input signature where a formula applies), by device time."""
    return prepare(trace).costs()[0]


def prepare(trace: Trace, parent: np.ndarray | None = None) -> KinetoOps:
    """Cost every op occurrence of `trace` once (see the module docstring). `parent` is the
    enclosing event of every host-thread event when known (the overview's `HostEvents.parent`)."""
    n = trace.num_events
    on_cpu = np.isin(trace.ev_track, [t.id for t in trace.tracks if trace.sections[t.section].kind == "cpu"])
    is_op = on_cpu & np.isin(trace.ev_cat, _string_ids(trace, OP_CATEGORIES))
    ops = np.flatnonzero(is_op)
    if ops.shape[0] == 0:
        return KinetoOps.empty()
    nearest = _enclosing_ops(trace, on_cpu, is_op, parent)
    position = {name: i for i, name in enumerate(FORMULAS)}
    code = np.array([position.get(text, -1) for text in trace.strings], dtype=np.int64)
    name_ids = {text: i for i, text in enumerate(trace.strings) if code[i] >= 0 or text in PART_OF}
    op_code = np.full(n, -1, dtype=np.int64)
    op_code[ops] = code[trace.ev_name[ops]]
    parsed = ops if trace.metadata.get("with_flops") else ops[op_code[ops] >= 0]
    args, has = _read_args(trace, parsed)
    recorded = np.full(n, np.nan)
    given = np.array(list(map(_FLOPS, args)), dtype=np.float64)  # None → NaN
    recorded[parsed[has]] = np.where(given > 0, given, np.nan)
    has_profile = ~np.isnan(recorded)
    bits, members = _parts(trace, nearest, op_code, name_ids)
    costed = (op_code >= 0) | has_profile
    costed[members] = False
    covered, wraps, under, covering = _covering(trace, nearest, op_code, costed, has_profile)
    status = np.where((op_code >= 0) | has_profile, COUNTED, OTHER)
    status[covered & ~has_profile] = COVERED
    status[members] = PART
    status[is_op & (under >= 0)] = UNDER_PROFILED
    keep = (op_code[parsed] >= 0) | has_profile[parsed]
    detailed = parsed[keep]
    rows = _Rows(trace, op_code, status)
    rows.kernel_causal = _kernel_causal(trace, nearest, is_op)
    if not keep.all():
        args, has = list(compress(args, keep[has].tolist())), has[keep]
    rows.conv_outputs = _conv_outputs(trace, detailed[has], args)
    rows.add_detailed(detailed, args, has, recorded, bits, under)
    rows.add_others(np.setdiff1d(ops, detailed, assume_unique=True), wraps)
    rows.name_covered(covering)
    own, total, transfer = _spans(trace, nearest, rows.group, ops, len(rows.rows))
    flops, moved = np.full(ops.shape[0], np.nan), np.full(ops.shape[0], np.nan)
    at = np.searchsorted(ops, rows.detailed)
    flops[at], moved[at] = rows.flops, rows.bytes
    return KinetoOps(
        ops=ops,
        group=rows.group[ops],
        flops=flops,
        bytes=moved,
        rows=rows.rows,
        transfer=transfer,
        own=own,
        total=total,
    )


@dataclasses.dataclass(frozen=True)
class _Spans:
    """Device activities credited to op occurrences, sorted by (row, start): `occurrence` indexes
    `KinetoOps.ops`, `row` is that occurrence's row."""

    occurrence: np.ndarray
    row: np.ndarray
    start: np.ndarray
    end: np.ndarray
    event: np.ndarray  # the activity's event index

    def events(self, bucket: np.ndarray | None, rows: int, limit: int) -> dict[int, list[int]]:
        """The first `limit` activity events (in time order) per (bucket, row) key, as `busy` keys them."""
        if bucket is None:
            key, at = self.row, np.arange(self.row.shape[0])
        else:
            of = bucket[self.occurrence]
            at = np.flatnonzero(of >= 0)
            at = at[np.argsort(of[at].astype(np.int64) * rows + self.row[at], kind="stable")]
            key = of[at].astype(np.int64) * rows + self.row[at]
        keys, first = np.unique(key, return_index=True)
        ends = np.append(first[1:], key.shape[0])
        return {
            int(k): self.event[at[a : min(b, a + limit)]].tolist()
            for k, a, b in zip(keys.tolist(), first.tolist(), ends.tolist())
        }

    def busy(self, bucket: np.ndarray | None, rows: int, buckets: int) -> np.ndarray:
        """Busy time per (bucket, row) (index bucket·rows + row) of the occurrences' activities."""
        if bucket is None:
            return _busy(self.row, self.start, self.end, rows * buckets)
        of = bucket[self.occurrence]
        inside = np.flatnonzero(of >= 0)
        narrow = np.int16 if buckets < 1 << 15 else np.int64  # a stable sort of int16 is a radix sort
        order = inside[np.argsort(of[inside].astype(narrow), kind="stable")]  # (bucket, row, start)
        key = bucket[self.occurrence[order]].astype(np.int64) * rows + self.row[order]
        return _busy(key, self.start[order], self.end[order], rows * buckets)


@dataclasses.dataclass(frozen=True)
class KinetoOps:
    """The op occurrences of one trace with their rows, FLOPs, bytes and device activities."""

    ops: np.ndarray  # event index of each occurrence, in event order
    group: np.ndarray  # row of each occurrence
    flops: np.ndarray  # per occurrence, NaN: not observed
    bytes: np.ndarray
    rows: list[_Row]
    transfer: np.ndarray  # bool per row: everything its ops launched is host↔device copies
    own: _Spans  # each activity credited to the occurrence that launched it
    total: _Spans  # … and to every op enclosing that one, once per row

    @staticmethod
    def empty() -> KinetoOps:
        none, spans = np.zeros(0, np.int64), _Spans(*(np.zeros(0, np.int64),) * 5)
        return KinetoOps(none, none, np.zeros(0), np.zeros(0), [], np.zeros(0, bool), spans, spans)

    def costs(self, bucket: np.ndarray | None = None, buckets: int = 1) -> list[list[OpCost]]:
        """The rows of each bucket: `bucket` gives each occurrence's bucket (-1: in none; None: all
        in bucket 0). Rows without occurrences in a bucket are left out of it."""
        rows = len(self.rows)
        count = rows * buckets
        key = self.group if bucket is None else bucket.astype(np.int64) * rows + self.group
        inside = np.ones(key.shape[0], bool) if bucket is None else bucket >= 0
        key = key[inside]
        occurrences = np.bincount(key, minlength=count)
        flops = _sum_known(key, self.flops[inside], count)
        moved = _sum_known(key, self.bytes[inside], count)
        total, own = self.total.busy(bucket, rows, buckets), self.own.busy(bucket, rows, buckets)
        events = self.total.events(bucket, rows, MAX_EVENT_IDS)
        out: list[list[OpCost]] = [[] for _ in range(buckets)]
        for k in np.flatnonzero(occurrences).tolist():
            b, gid = divmod(k, rows)
            row = self.rows[gid]
            known = row.source in (COST_FROM_SHAPES, COST_MODELLED, COST_FROM_PROFILE)
            f = float(flops[k]) if known and not np.isnan(flops[k]) else None
            levels = {"hbm": float(moved[k])} if known and not np.isnan(moved[k]) else None
            times = int(occurrences[k]), int(total[k]), int(own[k])
            out[b].append(OpCost(row.name, row.category, *times, f, levels, row.source, row.search,
                                 in_program=row.in_program, transfer=bool(self.transfer[gid]),
                                 roof=row.roof, event_ids=tuple(events.get(k, ()))))  # fmt: skip
        for part in out:
            part.sort(key=lambda c: (-c.total_time_ps, -c.self_time_ps, c.name))
        return out


def _string_ids(trace: Trace, texts: frozenset[str]) -> np.ndarray:
    return np.array([i for i, s in enumerate(trace.strings) if s in texts], dtype=np.int64)


_ARGS_LIST = msgspec.json.Decoder(list[_Args])
CHUNK_BYTES = 1 << 21  # args text gathered into one JSON array at a time
EVENT_CHUNK = 1 << 16  # events whose args texts are read at a time


def _read_args(trace: Trace, events: np.ndarray) -> tuple[list[_Args], np.ndarray]:
    """The estimate's args of the events that recorded any of them, and which events those are.
    The texts of `EVENT_CHUNK` events at a time are gathered by numpy into JSON arrays of about
    `CHUNK_BYTES`; an array in which none of the field names occurs (a trace recorded without
    record_shapes and with_flops) is not decoded, the others at once (a Python slice per record
    costs more than its decoding). An array that does not decode is decoded record by record; a
    record that does not decode is left empty."""
    out: list[_Args] = []
    has = np.zeros(events.shape[0], dtype=bool)
    for first in range(0, events.shape[0], EVENT_CHUNK):
        offsets, texts = model_args.event_texts(trace, events[first : first + EVENT_CHUNK])
        lo = offsets[:-1]
        size = np.diff(offsets)
        reach = np.cumsum(size)
        start = 0
        while start < size.shape[0]:
            stop = max(
                int(np.searchsorted(reach, reach[start] - size[start] + CHUNK_BYTES, side="right")), start + 1
            )
            text, bounds = _json_array(texts, lo[start:stop], size[start:stop])
            if any(name in text for name in _FIELD_NAMES):
                out += _decode_args(text, bounds)
                has[first + start : first + stop] = True
            start = stop
    return out, has


def _json_array(blob: np.ndarray, lo: np.ndarray, size: np.ndarray) -> tuple[bytes, np.ndarray]:
    """`[r0,r1,…]` of the records [lo, lo + size) of `blob` ("{}" for an empty one), and where each
    record lies in it."""
    width = np.where(size > 0, size, 2)
    at = 1 + np.concatenate(([0], np.cumsum(width + 1)[:-1]))  # each record, then a comma
    out = np.full(int(at[-1] + width[-1]) + 1, ord(","), dtype=np.uint8)
    out[0], out[-1] = ord("["), ord("]")
    empty = at[size == 0]
    out[empty], out[empty + 1] = ord("{"), ord("}")
    full = size > 0
    lo, at_full, size = lo[full], at[full], size[full]
    begin = np.concatenate(([0], np.cumsum(size)[:-1]))
    step = np.arange(int(size.sum()), dtype=np.int64)
    out[np.repeat(at_full - begin, size) + step] = blob[np.repeat(lo - begin, size) + step]
    return out.tobytes(), np.stack((at, at + width), axis=1)


def _decode_args(text: bytes, bounds: np.ndarray) -> list[_Args]:
    try:
        return _ARGS_LIST.decode(text)
    except msgspec.DecodeError:
        pass
    out = []
    for a, b in bounds.tolist():
        try:
            out.append(_ARGS.decode(text[a:b]))
        except msgspec.DecodeError:
            out.append(_EMPTY)
    return out


def _enclosing_ops(
    trace: Trace, on_cpu: np.ndarray, is_op: np.ndarray, parent: np.ndarray | None = None
) -> np.ndarray:
    """Per event, the innermost op that encloses it on its thread (-1 when none): the parent at row
    d is the last event before it (track, start order) at row d-1 of its track if that still covers
    its start (`parent`, when given: the overview's, built by the same rule); enclosing ops then
    follow row by row, shallow rows first."""
    n = trace.num_events
    nearest = np.full(n, -1, dtype=np.int64)
    events = np.flatnonzero(on_cpu)
    if events.shape[0] == 0:
        return nearest
    depth = trace.ev_depth[events]
    narrow = np.int16 if int(depth.max()) < 1 << 15 else depth.dtype  # a stable int16 sort is a radix sort
    order = np.argsort(depth.astype(narrow), kind="stable")
    events, depth = events[order], depth[order]
    if parent is None:
        parent = _parents(trace, events, depth.astype(np.int64))
    bounds = np.searchsorted(depth, np.arange(1, int(depth[-1]) + 2))
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        row = events[lo:hi]
        up = parent[row]
        row, up = row[up >= 0], up[up >= 0]
        nearest[row] = np.where(is_op[up], up, nearest[up])
    return nearest


def _parents(trace: Trace, events: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """The enclosing event of each of `events` (sorted by depth, then event order), -1 at the top."""
    n = trace.num_events
    child = np.flatnonzero(depth > 0)
    query, level = events[child], depth[child]
    at = np.maximum(np.searchsorted(depth * n + events, (level - 1) * n + query) - 1, 0)
    candidate = events[at]
    start = trace.ev_start_ps
    end = start[candidate] + trace.ev_dur_ps[candidate]
    same_track = (depth[at] == level - 1) & (trace.ev_track[candidate] == trace.ev_track[query])
    valid = same_track & ((start[query] < end) | (start[query] == start[candidate]))
    parent = np.full(n, -1, dtype=np.int64)
    parent[query[valid]] = candidate[valid]
    return parent


def _ancestors(nearest: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position in `start`, enclosing op) for every op enclosing each of `start`, innermost first."""
    origins, found = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    origin, current = np.arange(start.shape[0]), nearest[start]
    while current.shape[0]:
        keep = current >= 0
        origin, current = origin[keep], current[keep]
        origins.append(origin)
        found.append(current)
        current = nearest[current]
    return np.concatenate(origins), np.concatenate(found)


def _parts(
    trace: Trace, nearest: np.ndarray, op_code: np.ndarray, name_ids: dict[str, int]
) -> tuple[dict[int, tuple[bool, bool]], np.ndarray]:
    """Gradient parts nested directly in their combined backward op: what each combined op
    computed {event: (grad_input, grad_weight)}, and the part events."""
    bits: dict[int, tuple[bool, bool]] = {}
    members = [np.zeros(0, dtype=np.int64)]
    for index, (name, entry) in enumerate(FORMULAS.items()):
        if entry.part_of:
            parts = np.flatnonzero(op_code == index)
            parents = nearest[parts]
            combined = name_ids.get(entry.part_of, -1)
            inside = (parents >= 0) & (trace.ev_name[np.maximum(parents, 0)] == combined)
            members.append(parts[inside])
            for parent in parents[inside].tolist():
                has = bits.get(parent, (False, False))
                bits[parent] = (has[0] or name.endswith("_input"), has[1] or name.endswith("_weight"))
    return bits, np.concatenate(members)


def _covering(
    trace: Trace, nearest: np.ndarray, op_code: np.ndarray, costed: np.ndarray, has_profile: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """From the ops enclosing each costed op (parts excluded): the formula ops a nested op of a
    taking-over family covers, the ops that wrap any costed op, per costed op the outermost
    enclosing op with recorded FLOPs (-1: none), and the (covered op, nested op) pairs."""
    n = trace.num_events
    takes_over = np.zeros((len(FORMULAS) + 1, len(FAMILIES)), dtype=bool)  # row -1: no formula
    for index, entry in enumerate(ENTRIES):
        takes_over[index, [FAMILY_CODE[f] for f in {entry.family, *entry.also_covered_by}]] = True
    family = np.array([FAMILY_CODE[e.family] for e in ENTRIES] + [0], dtype=np.int64)[op_code]
    nested = np.flatnonzero(costed)
    origin, ancestor = _ancestors(nearest, nested)
    wraps, covered = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    wraps[ancestor] = True
    hit = takes_over[op_code[ancestor], family[nested[origin]]]
    covered[ancestor[hit]] = True
    under = np.full(n, -1, dtype=np.int64)
    profiled = has_profile[ancestor]
    under[nested[origin[profiled]]] = ancestor[profiled]  # innermost first: the last write is the outermost
    return covered, wraps, under, (ancestor[hit], nested[origin[hit]])


@dataclasses.dataclass
class _Row:
    name: str
    search: str
    category: str
    status: int
    source: str
    in_program: bool
    roof: str = ""


class _Rows:
    """Op occurrences grouped into rows: formula ops by (name, status, shapes, source), others by name;
    FLOPs and bytes per formula-op occurrence (`detailed`; NaN: not observed)."""

    def __init__(self, trace: Trace, op_code: np.ndarray, status: np.ndarray) -> None:
        self.trace, self.op_code, self.status = trace, op_code, status
        self.group = np.full(trace.num_events, -1, dtype=np.int64)
        self.rows: list[_Row] = []
        self.detailed = np.zeros(0, dtype=np.int64)  # the events `flops` and `bytes` are of
        self.conv_outputs: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}
        self.kernel_causal = np.zeros(0, dtype=np.int8)  # per event, `flash_kernels.causal_by_op`
        self.flops, self.bytes = np.zeros(0), np.zeros(0)

    def add_detailed(
        self,
        events: np.ndarray,
        args: list[_Args],
        has: np.ndarray,
        recorded: np.ndarray,
        bits: dict[int, Any],
        under: np.ndarray,
    ) -> None:
        """Formula ops (and ops with recorded FLOPs): estimated once per distinct recorded input.
        What is not in the args text (name, status, gradient parts, the enclosing profiled op,
        recorded FLOPs or not) is one small code per event, so the per-event key is short; `args`
        are those of the events `has` marks (the others recorded none of the fields read)."""
        strings, names = self.trace.strings, self.trace.ev_name
        anchor = np.where(under[events] >= 0, names[np.maximum(under[events], 0)], -1)
        part = np.zeros(events.shape[0], np.int64)
        if bits:
            combined = np.array(sorted(bits), np.int64)
            at = np.minimum(np.searchsorted(combined, events), combined.shape[0] - 1)
            hit = combined[at] == events
            part[hit] = np.array([_BITS[bits[e]] for e in combined.tolist()], np.int64)[at[hit]]
        # (name, status, part, anchor, profiled) in one integer, mixed radix
        radix = len(strings) + 1
        packed = names[events].astype(np.int64) * 5 + self.status[events]
        packed = ((packed * len(_PARTS) + part) * radix + anchor + 1) * 2 + ~np.isnan(recorded[events])
        contexts, code = np.unique(packed, return_inverse=True)
        context = []
        for value in contexts.tolist():
            value, prof = divmod(value, 2)
            value, up = divmod(value, radix)
            value, part_code = divmod(value, len(_PARTS))
            name_id, status = divmod(value, 5)
            context.append((name_id, status, part_code, up - 1, bool(prof)))
        counted = [c[1] == COUNTED for c in context]
        code = code.ravel()
        keys: dict[tuple[Any, ...], int] = {}
        which = np.empty(events.shape[0], dtype=np.int64)
        flash = self.kernel_causal[events[has]].tolist()
        which[has] = [
            keys.setdefault(
                (c, bytes(a.dims), bytes(a.types), bytes(a.concrete) if counted[c] else b"", f), len(keys)
            )
            for c, a, f in zip(code[has].tolist(), args, flash)
        ]
        bare = np.zeros(len(context), dtype=np.int64)
        for c in arrays.unique(code[~has]).tolist():
            bare[c] = keys.setdefault((c, b"", b"", b"", flash_kernels.NOT_KNOWN), len(keys))
        which[~has] = bare[code[~has]]
        # keys numbered by their first event, as the estimates and rows are made in that order
        _, first_of = np.unique(which, return_index=True)
        order = np.argsort(first_of, kind="stable")
        renumber = np.empty(order.shape[0], dtype=np.int64)
        renumber[order] = np.arange(order.shape[0])
        which = renumber[which]
        key_list = list(keys)
        firsts = first_of[order].tolist()
        at_args = (np.cumsum(has) - 1).tolist()
        has_list = has.tolist()
        key_args = [args[at_args[e]] if has_list[e] else _EMPTY for e in firsts]
        groups: dict[tuple[Any, ...], int] = {}
        key_group, key_flops, key_bytes = [], [], []
        for key, first, first_args in zip((key_list[k] for k in order.tolist()), firsts, key_args):
            c, dims, types = key[0], key[1], key[2]
            name_id, status, part_code, up, prof = context[c]
            op_code = self.op_code[events[first]]
            entry = ENTRIES[op_code] if op_code >= 0 else None
            flops = moved = None
            if status == COUNTED:
                flops, moved, source = _estimate(
                    entry, first_args, _PARTS[part_code], self.conv_outputs, key[4]
                )
                source = COST_FROM_PROFILE if prof else source
            elif status == PART:
                source = f"counted in {entry.part_of if entry else ''}"
            elif status == UNDER_PROFILED:
                source = f"counted in {strings[up]} (FLOPs from the profile)"
            else:
                source = ""  # COVERED: `name_covered` names the nested ops
            if (name_id, status, dims, types, source) not in groups:
                groups[name_id, status, dims, types, source] = len(self.rows)
                category = entry.family if entry else strings[int(self.trace.ev_cat[events[first]])]
                name = strings[name_id]
                roof = _roof(entry, first_args) if status == COUNTED else ""
                self.rows.append(
                    _Row(
                        name + _signature(first_args), name, category, status, source, status == COUNTED, roof
                    )
                )
            key_group.append(groups[name_id, status, dims, types, source])
            key_flops.append(np.nan if flops is None else flops)
            key_bytes.append(np.nan if moved is None else moved)
        self.group[events] = np.array(key_group, dtype=np.int64)[which]
        self.detailed = events
        self.flops = np.where(np.isnan(recorded[events]), np.array(key_flops)[which], recorded[events])
        self.bytes = np.array(key_bytes)[which]

    def add_others(self, events: np.ndarray, wraps: np.ndarray) -> None:
        """Ops without formula, one row per name; not in the program when they wrap counted ops."""
        names, firsts, inverse = np.unique(self.trace.ev_name[events], return_index=True, return_inverse=True)
        self.group[events] = len(self.rows) + inverse.ravel()
        wrapping = np.bincount(inverse.ravel(), weights=wraps[events], minlength=names.shape[0]) > 0
        for name_id, first, wrapper in zip(names.tolist(), events[firsts].tolist(), wrapping.tolist()):
            name, category = self.trace.strings[name_id], self.trace.strings[int(self.trace.ev_cat[first])]
            self.rows.append(_Row(name, name, category, OTHER, NO_FORMULA, not wrapper))

    def name_covered(self, covering: tuple[np.ndarray, np.ndarray]) -> None:
        """Rows counted in nested ops name those (the ones that count, not nested composites)."""
        nested: dict[int, set[str]] = {}
        counting = self.status[covering[1]] == COUNTED
        names = len(self.trace.strings)
        pairs = self.group[covering[0][counting]] * names + self.trace.ev_name[covering[1][counting]]
        for pair in arrays.unique(pairs).tolist():
            gid, name_id = divmod(pair, names)
            nested.setdefault(gid, set()).add(self.trace.strings[name_id])
        for gid, row in enumerate(self.rows):
            if row.status == COVERED:
                row.source = "counted in nested " + ", ".join(sorted(nested.get(gid, ())))


# Gradient parts a combined backward op learnt from its nested parts, as a small code.
_PARTS: tuple[tuple[bool, bool] | None, ...] = (
    None,
    (False, False),
    (True, False),
    (False, True),
    (True, True),
)
_BITS = {bits: code for code, bits in enumerate(_PARTS)}


def _sum_known(group: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    """Per group, the sum of `values`; NaN (unknown) when any member is NaN."""
    unknown = np.bincount(group, weights=np.isnan(values), minlength=count) > 0
    return np.where(unknown, np.nan, np.bincount(group, weights=np.nan_to_num(values), minlength=count))


def _estimate(
    entry: Entry | None,
    args: _Args,
    bits: tuple[bool, bool] | None,
    outputs: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]],
    kernel_causal: int = flash_kernels.NOT_KNOWN,
) -> tuple[Any, Any, str]:
    """(FLOPs, bytes, source) of one occurrence from its recorded shapes; a forward convolution
    without Concrete Inputs takes its output shape from `outputs` (`_conv_outputs`), modelled; an
    attention op whose inputs do not say causal, what its flash kernels' names say (`kernel_causal`)."""
    if entry is None or entry.formula is None:
        reason = f"a gradient part of {entry.part_of} recorded outside it" if entry else NO_FORMULA
        return None, None, reason
    if not len(args.dims) or not len(args.types):
        return None, None, NO_SHAPES
    try:
        concrete = msgspec.json.decode(args.concrete) if len(args.concrete) else None
        dims = msgspec.json.decode(args.dims)
        output = None
        if concrete is None and takes_output_shape(entry) and len(dims) > 1:
            output = outputs.get(_shape_key(dims[0], dims[1]))
        kernel = None if kernel_causal == flash_kernels.NOT_KNOWN else kernel_causal == flash_kernels.CAUSAL
        call = Call(dims, msgspec.json.decode(args.types), concrete, bits, output, kernel)
        flops, moved = entry.formula(call)
    except Unknown as e:
        return None, None, str(e)
    except (IndexError, TypeError, ValueError, ZeroDivisionError, msgspec.DecodeError) as e:
        return None, None, f"recorded shapes not understood ({type(e).__name__})"
    return flops, moved, COST_MODELLED if entry.modelled or output is not None else COST_FROM_SHAPES


def _kernel_causal(trace: Trace, nearest: np.ndarray, is_op: np.ndarray) -> np.ndarray:
    """Per event, what the FlashAttention-2 kernels the op launched say about a causal mask
    (`flash_kernels.causal_by_op`); the launching op of a kernel is the innermost op around its
    launch call, as for device time (`_spans`)."""
    device = np.isin(trace.ev_cat, _string_ids(trace, DEVICE_CATEGORIES))
    src, dst = trace.flow_src, trace.flow_dst
    by = np.where(is_op[src], src, nearest[src])
    link = device[dst] & (by >= 0)
    return flash_kernels.causal_by_op(trace, by[link], dst[link])


def _shape_key(x: Any, w: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A convolution's (input shape, weight shape) as a key; ((), ()) for what is not two shapes."""
    if not isinstance(x, list) or not isinstance(w, list):
        return (), ()
    return tuple(x), tuple(w)


def _conv_outputs(
    trace: Trace, events: np.ndarray, args: list[_Args]
) -> dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]]:
    """(input shape, weight shape) → the output shape of the convolutions of those operands: the
    grad_output of their backward ops (`CONV_BACKWARD` positions), where only one is seen (two
    convolutions of the same operand shapes but other strides leave it unknown)."""
    where = {i: CONV_BACKWARD[text] for i, text in enumerate(trace.strings) if text in CONV_BACKWARD}
    seen: dict[tuple[tuple[int, ...], tuple[int, ...]], set[tuple[int, ...]]] = {}
    if not where:
        return {}
    for event, a in zip(events.tolist(), args):
        at = where.get(int(trace.ev_name[event]))
        if at is None or not len(a.dims):
            continue
        dims = msgspec.json.decode(a.dims)
        if len(dims) <= max(at) or not isinstance(dims[at[0]], list) or not dims[at[0]]:
            continue
        key = _shape_key(dims[at[1]], dims[at[2]])
        if key != ((), ()):
            seen.setdefault(key, set()).add(tuple(dims[at[0]]))
    return {key: next(iter(shapes)) for key, shapes in seen.items() if len(shapes) == 1}


def _roof(entry: Entry | None, args: _Args) -> str:
    """The roof of a formula op (`kineto_formulas.roof_of`) from its first recorded tensor's dtype;
    "" (the device's compute roof) when none was recorded."""
    if entry is None or not len(args.types):
        return ""
    try:
        types = msgspec.json.decode(args.types)
    except msgspec.DecodeError:
        return ""
    dtype = next((DTYPES[t][0] for t in types if isinstance(t, str) and t in DTYPES), None)
    return roof_of(entry.family, dtype) if dtype is not None else ""


def _signature(args: _Args) -> str:
    """ "(bf16[141, 512], bf16[512, 512])": the tensor arguments, "" when none were recorded."""
    if not len(args.dims) or not len(args.types):
        return ""
    call = Call(msgspec.json.decode(args.dims), msgspec.json.decode(args.types), None)
    shown = [
        f"{DTYPES[call.types[i]][0]}{list(t.shape)}" for i in range(len(call.types)) if (t := call.tensor(i))
    ]
    return f"({', '.join(shown)})" if shown else ""


def _spans(
    trace: Trace, nearest: np.ndarray, group: np.ndarray, ops: np.ndarray, rows: int
) -> tuple[_Spans, _Spans, np.ndarray]:
    """The activities each occurrence launched (own), the same credited to every op enclosing the
    launching one too, once per row (total), and per row whether all it launched is host copies."""
    device = np.isin(trace.ev_cat, _string_ids(trace, DEVICE_CATEGORIES))
    src, dst = trace.flow_src, trace.flow_dst
    by = np.where(group[src] >= 0, src, nearest[src])
    link = device[dst] & (by >= 0)
    targets = dst[link]
    first = np.argsort(targets, kind="stable")
    first = first[_new_values(targets[first])]  # one launch per activity
    activity, launcher = targets[first], by[link][first]
    start = trace.ev_start_ps[activity]
    end = start + trace.ev_dur_ps[activity]
    occurrence = np.full(trace.num_events, -1, dtype=np.int32 if ops.shape[0] < 1 << 31 else np.int64)
    occurrence[ops] = np.arange(ops.shape[0])
    width = max(activity.shape[0], 1)
    rank = np.empty(activity.shape[0], dtype=np.int64)
    rank[np.argsort(start, kind="stable")] = np.arange(activity.shape[0])
    # (row, start rank) in one integer: sorting it orders spans by (row, start)
    order = np.argsort(group[launcher] * width + rank)
    own = _Spans(
        occurrence[launcher[order]], group[launcher[order]], start[order], end[order], activity[order]
    )
    origin, ancestor = _ancestors(nearest, launcher)
    credited = np.concatenate((launcher, ancestor))
    which = np.concatenate((np.arange(activity.shape[0]), origin))
    # the first of each (row, activity) only: a nested op of the same row adds its activities once
    _, once = np.unique(group[credited] * width + rank[which], return_index=True)
    credited, which = credited[once], which[once]
    total = _Spans(occurrence[credited], group[credited], start[which], end[which], activity[which])
    host = np.isin(trace.ev_name[activity], [i for i, s in enumerate(trace.strings) if HOST_COPY.search(s)])
    copy = np.isin(trace.ev_cat[activity], _string_ids(trace, COPY_CATEGORIES))
    copies = np.bincount(group[launcher], weights=host & copy, minlength=rows)
    launched = np.bincount(group[launcher], minlength=rows)
    return own, total, (launched > 0) & (copies == launched)


def _new_values(ordered: np.ndarray) -> np.ndarray:
    """Mask of the first of each run of equal values in a sorted array."""
    return np.concatenate(([True], ordered[1:] != ordered[:-1])) if ordered.shape[0] else ordered.astype(bool)


def _busy(groups: np.ndarray, start: np.ndarray, end: np.ndarray, count: int) -> np.ndarray:
    """Per group, the length of the union of its [start, end) intervals, given sorted by (group,
    start): a running maximum of the end shows where each busy stretch begins and how far it
    reaches, with each group's times offset above the previous group's (by the time span when
    count × span fits in 62 bits, else by time ranks), so one accumulate serves all groups."""
    busy = np.zeros(count, dtype=np.int64)
    if groups.shape[0] == 0:
        return busy
    low = int(start.min())
    span = int(end.max()) - low + 1
    if count * span < 1 << 62:
        base = groups * span
        s, e = base + (start - low), base + (end - low)
    else:
        times = np.sort(np.concatenate((start, end)))  # rank = number of smaller times: monotone
        base = groups * (times.shape[0] + 1)
        s, e = base + np.searchsorted(times, start), base + np.searchsorted(times, end)
    reach = np.maximum.accumulate(e)
    before = np.concatenate(([np.iinfo(np.int64).min], reach[:-1]))
    first = np.flatnonzero(s >= before)
    stretch_end = np.maximum.reduceat(reach, first) - base[first]
    stretch_start = s[first] - base[first]
    if count * span >= 1 << 62:
        stretch_end, stretch_start = times[stretch_end], times[stretch_start]
    np.add.at(busy, groups[first], stretch_end - stretch_start)
    return busy
