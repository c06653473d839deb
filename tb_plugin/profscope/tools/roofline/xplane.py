"""The device ops of an XPlane trace as per-execution columns: time, FLOPs and bytes per memory level.

One row per execution of a device op, so the program, each step and the infeed option are cheap
masks over the same columns (`op_costs`).

TPU (TensorCore planes, "XLA Ops" line): one event is one execution of an HLO op, keyed by
(program id, op name). Its costs are the op's stats: `flops`, `model_flops` (0 means "same as
flops"), `bytes_accessed` and `memory_access_breakdown` (a serialized MemoryAccessBreakdown: per
(memory space, read/write) bytes; space 1 = HBM, 2 = CMEM, 3 = VMEM). Levels:
    hbm = Σ space-1 bytes (reads and writes), cmem_read/write, vmem_read/write = space 2/3 bytes by
    operation type.
When an op has `bytes_accessed` but no breakdown, its bytes are in no level: libtpu leaves out
memory it does not model (host memory of an offloading copy, `S(5)` in its shape), so XProf's op-row
fallback "HBM = bytes_accessed" counts host traffic as HBM; the row keeps `bytes_accessed` and
says why it has no level bytes (see docs/ROOFLINE.md).
Times are the device's own `device_offset_ps` / `device_duration_ps` stats when every op of the
core has them (the timeline event is the same op converted to the host clock, with jitter), else
the event's. self time = time − time of ops nested inside (timespan inclusion on one core).
Per-core time = last op end − first op start on the core.

GPU (`/device:GPU:N` planes, every stream): kernels that name an HLO op (`hlo_op`, `program_id`)
and follow each other on one stream with the same op and group are one execution (XLA runs one HLO
op as several kernels); time = Σ kernel durations, self = time. Other kernels and memcpys are one
execution each, named by the event. Costs come from the kernels' `flops` / `bytes_accessed` stats
when the profile has them (the same value on every kernel of an execution counts once), else from
the HLO cost model over the program's HloProto, once per execution (`gpu_costs`); a GPU's
`bytes_accessed` is device-memory traffic, so it is the HBM level. An HLO op's compute roof comes
from its instruction's element types in the program's HloProto (`hlo_roofs`: a GPU's units, or a
TPU's MXU / vector unit and an f32 dot's bf16 passes); "" (the device's compute roof) where the
profile has no HloProto of the program. MemcpyH2D/D2H are host↔device transfers. Per-GPU time = last end − first start over the GPU's streams.

Ops count in the program unless they are wrappers whose inner ops are listed themselves (while,
call, conditional, megacore fusion) or an execution has ops nested inside it (only the innermost
ops count). Each execution keeps its first event and its end on the timeline, by which
`xplane_steps.py` gives it a step.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

import msgspec
import numpy as np

from profscope.formats.hlo.proto import HloModule, HloModules
from profscope.formats.xplane.hlo import AttachedProtos
from profscope.model import args as model_args
from profscope.model.columns import Trace
from profscope.tools.roofline.gpu_costs import ProgramCosts
from profscope.tools.roofline.hlo_cost import MODELLED, Cost
from profscope.tools.roofline.hlo_roofs import tpu_instruction_roofs
from profscope.tools.roofline.model import COST_FROM_HLO_MODEL, COST_FROM_PROFILE, COST_MODELLED, OpCost

TPU_OPS_LINE = "XLA Ops"
TPU_CORE = re.compile(r"^/device:TPU:\d+$")
GPU_DEVICE = re.compile(r"^/device:GPU:\d+$")
WRAPPER_CATEGORIES = frozenset({"call", "conditional", "while", "megacore fusion"})
TRANSFER_WORDS = ("infeed", "outfeed")
HOST_COPIES = ("MemcpyH2D", "MemcpyD2H")
# Columns of `Executions.level_bytes`; the memory-space breakdown fills them.
LEVEL_COLUMNS = ("hbm", "cmem_read", "cmem_write", "vmem_read", "vmem_write")
_HBM, _CMEM, _VMEM = 1, 2, 3
_READ, _WRITE = 1, 2
NO_COST_STATS = "no cost stats in this profile"
NOT_XLA = "not an XLA op: the profile has no cost stats for it"
HOST_COPY = "host↔device copy: PCIe traffic, not attributed to a device memory level"
SPACE_NOT_RECORDED = (
    "the profile gives bytes_accessed without a memory-space breakdown (memory it does not model, such "
    "as host memory): not attributed to a level"
)
_SUFFIX = re.compile(r"\.\d+$")


class _Stats(msgspec.Struct):
    """The op stats of one event's args that the roofline reads (others are skipped)."""

    hlo_op: str | None = None
    hlo_category: str | None = None
    program_id: int | str | None = None
    group_id: int = -1
    flops: float | None = None
    model_flops: float | None = None
    bytes_accessed: float | None = None
    memory_access_breakdown: str | None = None
    device_offset_ps: int = -1
    device_duration_ps: int = -1


_decode_stats = msgspec.json.Decoder(list[_Stats], strict=False).decode


@dataclasses.dataclass(frozen=True)
class Op:
    """One distinct device op: how rows name it and what its missing costs mean."""

    name: str
    category: str
    program_id: str | None
    search: str
    transfer: bool
    missing_reason: str
    cost_source: str = COST_FROM_PROFILE
    roof: str = ""  # the compute roof its FLOPs run at ("": the device's; `OpCost.roof`)


@dataclasses.dataclass(frozen=True)
class Executions:
    """Parallel columns, one row per execution; NaN = not observed."""

    op: np.ndarray  # int64 index into DeviceActivity.ops
    section: np.ndarray  # int64 section id
    event: np.ndarray  # int64 the execution's first event in the trace (its launch gives its step)
    start_ps: np.ndarray  # int64 timeline start (for steps)
    end_ps: np.ndarray  # int64 timeline end of its last event (for step device times)
    time_ps: np.ndarray  # int64
    self_ps: np.ndarray  # int64
    flops: np.ndarray  # float64
    model_flops: np.ndarray  # float64
    bytes_accessed: np.ndarray  # float64
    level_bytes: np.ndarray  # float64 (n, len(LEVEL_COLUMNS))
    space_missing: np.ndarray  # bool: bytes_accessed without a breakdown (in no level)
    counted: np.ndarray  # bool: counts in program totals

    def __len__(self) -> int:
        return int(self.op.shape[0])


@dataclasses.dataclass(frozen=True)
class Step:
    """A step seen on `devices` devices; `time_ps` sums its device time over them; `wall_time_ps`
    is its window's length in the host's step analysis (the Overview's step time)."""

    number: int
    time_ps: int
    devices: int
    complete: bool
    wall_time_ps: int | None = None


@dataclasses.dataclass(frozen=True)
class DeviceActivity:
    """The device ops of one host's XPlane, and what the roofline needs besides them."""

    kind: str  # "tpu" or "gpu"
    device_stats: dict[int, dict]  # section id → plane stats, for the active devices
    device_planes: int  # device planes in the file, idle ones included
    ops: list[Op]
    executions: Executions
    device_time_ps: dict[int, int]  # section id → per-device time
    wall_time_ps: int  # first to last device op over all devices


def device_activity(
    trace: Trace, hlo_modules: Mapping[int, HloModule] | None = None
) -> DeviceActivity | None:
    """The XPlane's device ops, None when it has no TPU core or GPU with events. GPU ops without
    cost stats are costed over `hlo_modules` (by signed program id; default: decoded from the
    trace's attachments), and every HLO op takes its compute roof from them."""
    devices = trace.metadata.get("devices", {})
    tpu = [s.id for s in trace.sections if s.kind == "tpu" and TPU_CORE.match(s.name)]
    gpu = [s.id for s in trace.sections if s.kind == "gpu" and GPU_DEVICE.match(s.name)]
    if hlo_modules is None and (tpu or gpu):
        hlo_modules = HloModules(AttachedProtos(trace.attachments))
    if tpu:
        kind, pattern = "tpu", TPU_CORE
        roofs = ProgramCosts(hlo_modules, tpu_instruction_roofs)
        parts = [_tpu_core(trace, sid, roofs) for sid in tpu]
    elif gpu:
        kind, pattern = "gpu", GPU_DEVICE
        costs = ProgramCosts(hlo_modules)
        parts = [_gpu_device(trace, sid, costs) for sid in gpu]
    else:
        return None
    builder = _Builder()
    spans: dict[int, int] = {}
    lows, highs = [], []
    for sid, part in zip(tpu or gpu, parts, strict=True):
        if part is None:
            continue
        builder.add(part)
        spans[sid] = part.span[1] - part.span[0]
        lows.append(part.timeline_span[0])
        highs.append(part.timeline_span[1])
    if not spans:
        return None
    executions, ops = builder.finish()
    planes = sum(1 for p in trace.metadata.get("planes", []) if pattern.match(p.get("name", "")))
    return DeviceActivity(
        kind=kind,
        device_stats={sid: devices.get(str(sid), {}).get("stats", {}) for sid in spans},
        device_planes=max(planes, len(spans)),
        ops=ops,
        executions=executions,
        device_time_ps=spans,
        wall_time_ps=max(highs) - min(lows),
    )


def op_costs(activity: DeviceActivity, mask: np.ndarray, all_counted: bool = False) -> list[OpCost]:
    """The executions under `mask` summed per op. `all_counted` marks every resulting op as counted
    in the program (for program totals built from counted executions only)."""
    whole = np.zeros(len(activity.executions), dtype=np.int64)
    return op_costs_per_bucket(activity, mask, whole, 1, all_counted)[0]


def op_costs_per_bucket(
    activity: DeviceActivity, mask: np.ndarray, bucket: np.ndarray, buckets: int, all_counted: bool = False
) -> list[list[OpCost]]:
    """`op_costs` of each bucket (a step) in one pass: `bucket` gives each execution's (0 …
    buckets − 1; the executions under `mask` must have one)."""
    ex = activity.executions
    rows = np.flatnonzero(mask)
    out: list[list[OpCost]] = [[] for _ in range(buckets)]
    if not rows.shape[0]:
        return out
    keys, inverse = np.unique(bucket[rows] * len(activity.ops) + ex.op[rows], return_inverse=True)
    inverse = inverse.ravel()
    n = keys.shape[0]

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(inverse, weights=values[rows], minlength=n)

    def known(values: np.ndarray) -> np.ndarray:
        return np.bincount(inverse, weights=~np.isnan(values[rows]), minlength=n) > 0

    occurrences = np.bincount(inverse, minlength=n)
    time_ps, self_ps = total(ex.time_ps.astype(np.float64)), total(ex.self_ps.astype(np.float64))
    flops, has_flops = total(np.nan_to_num(ex.flops)), known(ex.flops)
    model_flops = total(np.nan_to_num(ex.model_flops))
    accessed, has_bytes = total(np.nan_to_num(ex.bytes_accessed)), known(ex.bytes_accessed)
    levels = np.stack([total(np.nan_to_num(ex.level_bytes[:, k])) for k in range(len(LEVEL_COLUMNS))], axis=1)
    has_levels = known(ex.level_bytes[:, 0])
    space_missing = np.bincount(inverse, weights=ex.space_missing[rows], minlength=n) > 0
    counted = np.bincount(inverse, weights=~ex.counted[rows], minlength=n) == 0
    for k, key in enumerate(keys.tolist()):
        in_bucket, op_index = divmod(key, len(activity.ops))
        op = activity.ops[op_index]
        by_level = None
        if has_levels[k]:
            by_level = {
                level: float(levels[k, j])
                for j, level in enumerate(LEVEL_COLUMNS)
                if j == 0 or levels[k, j] > 0
            }
        observed = bool(has_flops[k] or has_levels[k] or has_bytes[k])
        out[in_bucket].append(
            OpCost(
                name=op.name,
                category=op.category,
                occurrences=int(occurrences[k]),
                total_time_ps=int(time_ps[k]),
                self_time_ps=int(self_ps[k]),
                flops=float(flops[k]) if has_flops[k] else None,
                bytes_by_level=by_level,
                source=op.cost_source if observed else op.missing_reason,
                search=op.search,
                model_flops=float(model_flops[k]) if has_flops[k] else None,
                bytes_accessed=float(accessed[k]) if has_bytes[k] else None,
                in_program=all_counted or bool(counted[k]),
                transfer=op.transfer,
                note=SPACE_NOT_RECORDED if space_missing[k] else "",
                program=op.program_id or "",
                roof=op.roof,
            )
        )
    return out


# -- per device -------------------------------------------------------------------------------------
@dataclasses.dataclass
class _Part:
    """One device's executions before they are concatenated."""

    key_index: np.ndarray  # int64 per execution: its op in `op_info` (insertion order)
    op_info: dict[tuple, Op]
    section: int
    event: np.ndarray
    start_ps: np.ndarray
    end_ps: np.ndarray
    time_ps: np.ndarray
    self_ps: np.ndarray
    flops: np.ndarray
    model_flops: np.ndarray
    bytes_accessed: np.ndarray
    breakdown: list[str | None]
    nested: np.ndarray  # bool: has ops nested inside
    bytes_are_hbm: bool  # bytes_accessed is device-memory traffic (GPU)
    span: tuple[int, int]  # per-device time span (device clock)
    timeline_span: tuple[int, int]


def _events(trace: Trace, tracks: list[int]) -> np.ndarray:
    """Events of the tracks, in (track, start) order, slices only."""
    mask = np.isin(trace.ev_track, tracks) & (trace.ev_dur_ps >= 0)
    return np.flatnonzero(mask)


def _stats_of(trace: Trace, events: np.ndarray) -> list[_Stats]:
    """Decode the args of many events in one call: their texts joined into one JSON array; an
    empty record reads as {}."""
    parts = [view if len(view) else b"{}" for view in model_args.event_views(trace, events)]
    return _decode_stats(b"[" + b",".join(parts) + b"]")


def _floats(values: list[float | None]) -> np.ndarray:
    try:
        return np.array(values, dtype=np.float64)
    except TypeError:
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _op_keys(names: np.ndarray, programs: list) -> tuple[np.ndarray, np.ndarray]:
    """(index of each event's (program, name) pair among the unique pairs, first event of each)."""
    program_ids: dict = {}
    program_index = np.array([program_ids.setdefault(p, len(program_ids)) for p in programs], dtype=np.int64)
    code = program_index * (int(names.max()) + 1 if names.shape[0] else 1) + names
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return inverse.ravel(), first


def _tpu_core(trace: Trace, sid: int, roofs: ProgramCosts) -> _Part | None:
    tracks = [t.id for t in trace.tracks if t.section == sid and t.name == TPU_OPS_LINE]
    events = _events(trace, tracks)
    if not events.shape[0]:
        return None
    stats = _stats_of(trace, events)
    start = np.array([s.device_offset_ps for s in stats], dtype=np.int64)
    dur = np.array([s.device_duration_ps for s in stats], dtype=np.int64)
    if (start < 0).any() or (dur < 0).any():
        start, dur = trace.ev_start_ps[events], trace.ev_dur_ps[events]
    self_ps, nested = _self_times(start, dur)
    unique_index, firsts = _op_keys(trace.ev_name[events], [s.program_id for s in stats])
    info: dict[tuple, Op] = {}
    position: dict[tuple, int] = {}
    local = []
    for i in firsts.tolist():
        s, name = stats[i], trace.strings[int(trace.ev_name[events[i]])]
        program = None if s.program_id is None else str(s.program_id)
        key = (program, name)
        if key not in info:
            category = s.hlo_category or ""
            transfer = any(word in category for word in TRANSFER_WORDS)
            roof = roofs.roof(s.program_id, name)
            info[key] = Op(name, category, program, name, transfer, NO_COST_STATS, roof=roof)
        local.append(position.setdefault(key, len(position)))
    key_index = np.array(local, dtype=np.int64)[unique_index]
    flops = _floats([s.flops for s in stats])
    model = _floats([s.model_flops for s in stats])
    model = np.where((model > 0) | np.isnan(flops), model, flops)
    ev_start, ev_end = trace.ev_start_ps[events], trace.ev_start_ps[events] + trace.ev_dur_ps[events]
    return _Part(
        key_index=key_index,
        op_info=info,
        section=sid,
        event=events,
        start_ps=ev_start,
        end_ps=ev_end,
        time_ps=dur,
        self_ps=self_ps,
        flops=flops,
        model_flops=model,
        bytes_accessed=_floats([s.bytes_accessed for s in stats]),
        breakdown=[s.memory_access_breakdown for s in stats],
        nested=nested,
        bytes_are_hbm=False,
        span=(int(start.min()), int((start + dur).max())),
        timeline_span=(int(ev_start.min()), int(ev_end.max())),
    )


def _gpu_device(trace: Trace, sid: int, costs: ProgramCosts) -> _Part | None:
    tracks = [t.id for t in trace.tracks if t.section == sid and t.kind == "stream"]
    events = _events(trace, tracks)
    if not events.shape[0]:
        return None
    stats = _stats_of(trace, events)
    names = [trace.strings[i] for i in trace.ev_name[events].tolist()]
    hlo = [s.hlo_op for s in stats]
    # A new execution starts where the stream, the HLO op, its program or the step changes, and at
    # every kernel that names no HLO op.
    group = np.array([s.group_id for s in stats], dtype=np.int64)
    same = np.zeros(events.shape[0], dtype=bool)
    if events.shape[0] > 1:
        track = trace.ev_track[events]
        same[1:] = (track[1:] == track[:-1]) & (group[1:] == group[:-1])
        same[1:] &= np.array(
            [
                a is not None and a == b and stats[i].program_id == stats[i + 1].program_id
                for i, (a, b) in enumerate(zip(hlo[:-1], hlo[1:], strict=True))
            ],
            dtype=bool,
        )
    first = np.flatnonzero(~same)
    dur = trace.ev_dur_ps[events]
    start = trace.ev_start_ps[events]
    time_ps = np.add.reduceat(dur, first)
    keys: list[int] = []
    info: dict[tuple, Op] = {}
    position: dict[tuple, int] = {}
    modeled: dict[tuple, Cost] = {}
    for i in first.tolist():
        s = stats[i]
        if s.hlo_op is not None:
            program = None if s.program_id is None else str(s.program_id)
            key = (program, s.hlo_op)
            if key not in info:
                category = _category_from_name(s.hlo_op)
                transfer = any(word in category for word in TRANSFER_WORDS)
                modeled[key] = cost = costs.of(s.program_id, s.hlo_op)
                known = cost.flops is not None and cost.bytes_accessed is not None
                reason = NO_COST_STATS if known else cost.note
                roof = costs.roof(s.program_id, s.hlo_op)
                info[key] = Op(s.hlo_op, category, program, s.hlo_op, transfer, reason, roof=roof)
        else:
            key = (None, names[i])
            if key not in info:
                copy = names[i] in HOST_COPIES
                category = "host-device copy" if copy else "kernel"
                info[key] = Op(names[i], category, None, names[i], copy, HOST_COPY if copy else NOT_XLA)
        keys.append(position.setdefault(key, len(position)))
    key_index = np.array(keys, dtype=np.int64)
    flops = _once_per_execution(_floats([s.flops for s in stats]), first)
    model_flops = _once_per_execution(_floats([s.model_flops for s in stats]), first)
    accessed = _once_per_execution(_floats([s.bytes_accessed for s in stats]), first)
    per_op = [modeled.get(key) for key in position]
    used = _fill_from_model(key_index, per_op, flops, model_flops, accessed)
    for key, at in position.items():
        if used[at]:
            modelled = modeled[key].note.startswith(MODELLED)
            info[key] = dataclasses.replace(
                info[key], cost_source=COST_MODELLED if modelled else COST_FROM_HLO_MODEL
            )
    end = start + dur
    return _Part(
        key_index=key_index,
        op_info=info,
        section=sid,
        event=events[first],
        start_ps=start[first],
        end_ps=np.maximum.reduceat(end, first),
        time_ps=time_ps,
        self_ps=time_ps,
        flops=flops,
        model_flops=model_flops,
        bytes_accessed=accessed,
        breakdown=[None] * first.shape[0],
        nested=np.zeros(first.shape[0], dtype=bool),
        bytes_are_hbm=True,
        span=(int(start.min()), int(end.max())),
        timeline_span=(int(start.min()), int(end.max())),
    )


def _fill_from_model(
    key_index: np.ndarray,
    per_op: list[Cost | None],
    flops: np.ndarray,
    model_flops: np.ndarray,
    accessed: np.ndarray,
) -> np.ndarray:
    """Give executions without cost stats their op's model cost (one execution's: in place; the
    model's FLOPs are also its model FLOPs). Returns, per op, whether the model costed any."""
    model_f = np.array([np.nan if c is None or c.flops is None else c.flops for c in per_op])[key_index]
    model_b = np.array(
        [np.nan if c is None or c.bytes_accessed is None else c.bytes_accessed for c in per_op]
    )
    model_b = model_b[key_index]
    fill_f = np.isnan(flops) & ~np.isnan(model_f)
    fill_b = np.isnan(accessed) & ~np.isnan(model_b)
    flops[fill_f] = model_f[fill_f]
    fill_m = fill_f & np.isnan(model_flops)
    model_flops[fill_m] = model_f[fill_m]
    accessed[fill_b] = model_b[fill_b]
    return np.bincount(key_index, weights=fill_f | fill_b, minlength=len(per_op)) > 0


def _once_per_execution(values: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Per execution: the kernels' value once when they all agree (a per-HLO-op stat repeated on
    each kernel), their sum when they differ; NaN when no kernel has it."""
    known = ~np.isnan(values)
    filled = np.where(known, values, 0.0)
    total = np.add.reduceat(filled, first)
    count = np.add.reduceat(known.astype(np.int64), first)
    high = np.maximum.reduceat(np.where(known, values, -np.inf), first)
    low = np.minimum.reduceat(np.where(known, values, np.inf), first)
    out = np.where(high == low, high, total)
    return np.where(count > 0, out, np.nan)


def _category_from_name(hlo_op: str) -> str:
    """A GPU HLO op's category from its name (the profile's kernels carry no category): the name
    without its ".N" suffix, "fusion" for fusions."""
    base = _SUFFIX.sub("", hlo_op)
    return "fusion" if "fusion" in base else base


def _self_times(start: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(self time, has nested ops) of events on one core, nesting by timespan inclusion."""
    order = np.lexsort((-dur, start))
    s, d = start[order], dur[order]
    end = s + d
    self_sorted = d.copy()
    nested_sorted = np.zeros(s.shape[0], dtype=bool)
    if s.shape[0] > 1 and (s[1:] < end[:-1]).any():
        stack: list[int] = []
        for i, (lo, hi) in enumerate(zip(s.tolist(), end.tolist(), strict=True)):
            while stack and end[stack[-1]] <= lo:
                stack.pop()
            if stack and hi <= end[stack[-1]]:
                parent = stack[-1]
                self_sorted[parent] -= d[i]
                nested_sorted[parent] = True
            stack.append(i)
    self_ps = np.empty_like(self_sorted)
    nested = np.empty_like(nested_sorted)
    self_ps[order], nested[order] = self_sorted, nested_sorted
    return self_ps, nested


# -- concatenation ----------------------------------------------------------------------------------
class _Builder:
    """Concatenates devices' parts, numbering ops across devices and decoding breakdowns once."""

    def __init__(self) -> None:
        self.parts: list[_Part] = []
        self.op_index: dict[tuple, int] = {}
        self.ops: list[Op] = []

    def add(self, part: _Part) -> None:
        self.parts.append(part)
        for key, op in part.op_info.items():
            if key not in self.op_index:
                self.op_index[key] = len(self.ops)
                self.ops.append(op)

    def finish(self) -> tuple[Executions, list[Op]]:
        op = np.concatenate(
            [np.array([self.op_index[k] for k in p.op_info], dtype=np.int64)[p.key_index] for p in self.parts]
        )
        accessed = np.concatenate([p.bytes_accessed for p in self.parts])
        levels, has_breakdown = self._levels([b for p in self.parts for b in p.breakdown])
        as_hbm = np.concatenate([np.full(p.key_index.shape[0], p.bytes_are_hbm) for p in self.parts])
        without = ~has_breakdown & ~np.isnan(accessed)
        levels[without & as_hbm, 0] = accessed[without & as_hbm]
        space_missing = without & ~as_hbm
        categories = np.array([self.ops[i].category in WRAPPER_CATEGORIES for i in range(len(self.ops))])
        nested = np.concatenate([p.nested for p in self.parts])
        executions = Executions(
            op=op,
            section=np.concatenate(
                [np.full(p.key_index.shape[0], p.section, dtype=np.int64) for p in self.parts]
            ),
            event=np.concatenate([p.event for p in self.parts]).astype(np.int64),
            start_ps=np.concatenate([p.start_ps for p in self.parts]).astype(np.int64),
            end_ps=np.concatenate([p.end_ps for p in self.parts]).astype(np.int64),
            time_ps=np.concatenate([p.time_ps for p in self.parts]).astype(np.int64),
            self_ps=np.concatenate([p.self_ps for p in self.parts]).astype(np.int64),
            flops=np.concatenate([p.flops for p in self.parts]),
            model_flops=np.concatenate([p.model_flops for p in self.parts]),
            bytes_accessed=accessed,
            level_bytes=levels,
            space_missing=space_missing,
            counted=~(categories[op] if len(self.ops) else np.zeros(0, bool)) & ~nested,
        )
        return executions, self.ops

    @staticmethod
    def _levels(breakdowns: list[str | None]) -> tuple[np.ndarray, np.ndarray]:
        """(bytes per level column, has a breakdown) per execution; NaN rows without one."""
        decoded: dict[str, np.ndarray | None] = {}
        rows = np.full((len(breakdowns), len(LEVEL_COLUMNS)), np.nan)
        has = np.zeros(len(breakdowns), dtype=bool)
        for i, text in enumerate(breakdowns):
            if not text:
                continue
            if text not in decoded:
                decoded[text] = _breakdown_levels(text)
            levels = decoded[text]
            if levels is not None:
                rows[i] = levels
                has[i] = True
        return rows, has


def _breakdown_levels(text: str) -> np.ndarray | None:
    """Bytes per level column of a serialized MemoryAccessBreakdown (hex, or text when the reader
    found the bytes printable); None when it cannot be parsed."""
    try:
        data = bytes.fromhex(text)
    except ValueError:
        data = text.encode("utf-8", "surrogateescape")
    out = np.zeros(len(LEVEL_COLUMNS))
    try:
        for accessed in _fields(data, 1):
            values = dict(_varints(accessed))
            operation, space, count = values.get(1, 0), values.get(2, 0), values.get(3, 0)
            if space == _HBM:
                out[0] += count
            elif space in (_CMEM, _VMEM) and operation in (_READ, _WRITE):
                out[(1 if space == _CMEM else 3) + (operation - 1)] += count
    except (IndexError, ValueError):
        return None
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(data: bytes, number: int) -> list[bytes]:
    """Payloads of the length-delimited field `number` of a message."""
    out, pos = [], 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        if tag & 7 == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field")
            if tag >> 3 == number:
                out.append(data[pos : pos + length])
            pos += length
        elif tag & 7 == 0:
            _, pos = _varint(data, pos)
        else:
            raise ValueError(f"unexpected wire type {tag & 7}")
    return out


def _varints(data: bytes) -> list[tuple[int, int]]:
    """(field number, value) of the varint fields of a message."""
    out, pos = [], 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        if tag & 7 != 0:
            raise ValueError(f"unexpected wire type {tag & 7}")
        value, pos = _varint(data, pos)
        out.append((tag >> 3, value))
    return out
