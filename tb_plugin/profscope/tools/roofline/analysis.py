"""The roofline answer of a timeline: device peaks, program rows (Total, Average step, each step)
and op rows, for XPlane hosts (`xplane.py`, steps `xplane_steps.py`) and Kineto hosts (`kineto.py`,
steps `kineto_steps.py`); both take their steps from the shared step analysis, the Overview's.

Several hosts of one request are summed as XProf sums its devices: op costs per (program, op),
device times and steps; the peaks are the first host's device (a warning names other devices).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from profscope.analysis import events as overview_events
from profscope.answers import UNSET
from profscope.engine.lod import index as lod
from profscope.formats import registry
from profscope.formats.hlo.proto import HloModule
from profscope.model.columns import Trace
from profscope.tools.roofline import kineto, kineto_steps, parts, rows, xplane, xplane_steps
from profscope.tools.roofline import peaks as peaks_lib
from profscope.tools.roofline.answers import RooflineAnswer, RooflineDevice, RooflinePeak, RooflineProgramRow
from profscope.tools.roofline.model import LEVELS, MAX_EVENT_IDS, DevicePeaks, OpCost
from profscope.units import format_duration

NOT_OBSERVED = "no device roofline: device activity not observed"
NO_STEPS = (
    "no step marker observed (an XPlane's Steps line; in a PyTorch trace step markers, e.g. ProfilerStep#N, "
    "or work that repeats): no per-step rows and no average step"
)
UNKNOWN_DEVICE = "unknown device"
NO_PEAKS = (
    "the device's peaks are unknown (not in the profile or the parts table): no roof is drawn; "
    f"give them in {peaks_lib.OVERRIDE_FILE}"
)


@dataclasses.dataclass(frozen=True)
class Options:
    """What a request may change: infeed/outfeed in or out, one step's ops instead of all."""

    include_infeed: bool = True
    step: int | None = None


@dataclasses.dataclass
class HostDevices:
    """One host's device ops, ready for any Options: an XPlane's executions, or a Kineto trace's
    op costs, whole and per step."""

    name: str
    peaks: DevicePeaks | None
    devices: int
    device_planes: int
    device_time_ps: int
    wall_time_ps: int | None
    activity: xplane.DeviceActivity | None = None
    costs: list[OpCost] | None = None
    step_split: kineto_steps.KinetoSteps | xplane_steps.XPlaneSteps | None = None
    warnings: tuple[str, ...] = ()  # what the answer should say about this host's costs

    @property
    def steps(self) -> list[xplane.Step]:
        return self.step_split.steps if self.step_split is not None else []

    @property
    def step_source(self) -> str:
        return self.step_split.source if self.step_split is not None else "no step markers found"

    @property
    def step_of(self) -> np.ndarray:
        """An XPlane host's step number per execution (-1: none)."""
        assert isinstance(self.step_split, xplane_steps.XPlaneSteps)
        return self.step_split.step_of


@dataclasses.dataclass(frozen=True)
class MergedStep:
    """One step over the hosts of a request."""

    time_ps: int
    devices: int
    complete: bool
    wall_time_ps: int | None


class UnknownStep(KeyError):
    """The requested step is not in the trace."""


def host_devices(
    name: str,
    trace: Trace,
    hlo_modules: Mapping[int, HloModule] | None = None,
    events: Callable[[], overview_events.HostEvents] | None = None,
) -> HostDevices | str:
    """A host's device ops, or why the host has none (a sentence for the answer). `hlo_modules`
    (the host's programs, `HostContext.hlo_modules`) cost GPU ops whose kernels have no cost stats;
    without them they are decoded from the trace's attachments. `events` gives the trace's
    classified events (the overview's, cached per host), whose steps split the ops; without it they
    are classified here."""
    if trace.format == registry.XPLANE:
        activity = xplane.device_activity(trace, hlo_modules)
        if activity is None:
            planes = ", ".join(p.get("name", "?") for p in trace.metadata.get("planes", [])) or "none"
            return f"{NOT_OBSERVED}: {name} has no TPU core or GPU with events (planes: {planes})"
        first = next(iter(activity.device_stats.values()))
        if activity.kind == "tpu":
            device = peaks_lib.with_tpu_units(peaks_lib.tpu_peaks(first), first)
            if "bf16" not in device.flops:  # one unnamed peak: every op against it
                activity = dataclasses.replace(
                    activity, ops=[dataclasses.replace(op, roof="") for op in activity.ops]
                )
        else:
            device = peaks_lib.with_parts_table(peaks_lib.gpu_peaks(first), first)
        return HostDevices(
            name=name,
            peaks=device,
            devices=len(activity.device_time_ps),
            device_planes=activity.device_planes,
            device_time_ps=sum(activity.device_time_ps.values()),
            wall_time_ps=activity.wall_time_ps,
            activity=activity,
            step_split=xplane_steps.split(_classified(name, trace, events), activity),
        )
    return _kineto_host(name, trace, events)


def answer(
    subject: str,
    hosts: Sequence[HostDevices | str],
    options: Options,
    override: dict[str, Any] | None,
    warnings: Sequence[str] = (),
) -> RooflineAnswer:
    """The answer for the hosts of one request (their `host_devices`) under `options`; `subject`
    names them in messages."""
    notes = list(warnings)
    ready = [h for h in hosts if isinstance(h, HostDevices)]
    notes += [h for h in hosts if isinstance(h, str) and not h.startswith(NOT_OBSERVED)]
    base = RooflineAnswer(
        subject=subject,
        observed=False,
        include_infeed=options.include_infeed,
        steps=[],
        program=[],
        ops=[],
        ops_total=0,
        warnings=notes,
    )
    if options.step is not None:
        base.step = options.step
    if not ready:
        reasons = [h for h in hosts if isinstance(h, str)]
        base.reason = next(
            (r for r in reasons if r.startswith(NOT_OBSERVED)), reasons[0] if reasons else NOT_OBSERVED
        )
        if options.step is not None:
            raise UnknownStep(f"{subject}: no steps (no device activity)")
        return base
    device = ready[0].peaks or DevicePeaks(UNKNOWN_DEVICE, notes=(NO_PEAKS,))
    others = {h.peaks.name for h in ready[1:] if h.peaks is not None} - {device.name}
    if others:
        notes.append(
            f"hosts have different devices ({', '.join(sorted(others))}); peaks are those of {ready[0].name}"
        )
    device = _with_main_roof(device, [c for h in ready for c in _costs(h, options, counted_only=True)])
    device = peaks_lib.tpu_derived(peaks_lib.apply_override(device, override))
    notes += list(device.notes)
    notes += [w for h in ready for w in h.warnings]
    notes += [w for h in ready if h.step_split is not None for w in h.step_split.warnings]
    steps = _merged_steps(ready)
    if options.step is not None and options.step not in steps:
        known = ", ".join(str(s) for s in sorted(steps)) or "none"
        raise UnknownStep(f"{subject}: no step {options.step} (steps: {known})")
    program = _program_rows(ready, steps, options, device)
    scope = [
        _timeline_ids(_costs(h, options, step=options.step), host_index)
        for host_index, h in enumerate(hosts)
        if isinstance(h, HostDevices)
    ]
    costs = scope[0] if len(scope) == 1 else _merge(cost for part in scope for cost in part)
    scope_time = program[0].device_time_ns * 1e3
    if options.step is not None:
        scope_time = next(r.device_time_ns for r in program if r.step == str(options.step)) * 1e3
    base.observed = True
    base.device = _device(device, ready, list(program[0].flops_by_roof))
    base.steps = sorted(steps)
    base.step_source = "; ".join(dict.fromkeys(h.step_source for h in ready))
    base.program = program
    base.ops = rows.op_rows(costs, scope_time, device)
    base.ops_total = sum(1 for c in costs if c.occurrences > 0)
    if base.ops_total > len(base.ops):
        notes.append(f"{base.ops_total} ops: the {len(base.ops)} with the most self time are listed")
    if not steps:
        notes.append(NO_STEPS)
    if any(r.figures.anomaly is not UNSET for r in base.ops):
        count = sum(1 for r in base.ops if r.figures.anomaly is not UNSET)
        notes.append(
            f"{count} ops measure above a roof; their efficiency is left out (see each op's anomaly)"
        )
    return base


# -- rows -------------------------------------------------------------------------------------------
def _program_rows(
    hosts: list[HostDevices],
    steps: dict[int, MergedStep],
    options: Options,
    device: DevicePeaks,
) -> list[RooflineProgramRow]:
    devices = sum(h.devices for h in hosts)
    counted = [c for h in hosts for c in _costs(h, options, counted_only=True)]
    excluded = 0 if options.include_infeed else sum(_transfer_time(h, None) for h in hosts)
    total_time = sum(h.device_time_ps for h in hosts) - excluded
    walls = [h.wall_time_ps for h in hosts if h.wall_time_ps is not None]
    out = [rows.program_row("Total", counted, total_time, devices, device, max(walls) if walls else None)]
    complete = [n for n, step in sorted(steps.items()) if step.complete]
    per_step = {}
    numbers = sorted(steps)
    by_host = [_step_costs(h, options, numbers) for h in hosts]
    for k, (number, step) in enumerate(sorted(steps.items())):
        step_costs = [c for costs in by_host for c in costs[k]]
        excluded = 0 if options.include_infeed else sum(_transfer_time(h, number) for h in hosts)
        per_step[number] = (step_costs, step.time_ps - excluded, step.devices, step.wall_time_ps)
    if complete:
        merged = _merge(c for n in complete for c in per_step[n][0])
        time_ps = sum(per_step[n][1] for n in complete)
        label = f"Average step ({len(complete)} complete)"
        on_devices = round(sum(per_step[n][2] for n in complete) / len(complete))
        step_walls = [per_step[n][3] for n in complete]
        wall = sum(step_walls) if all(w is not None for w in step_walls) else None  # type: ignore[misc]
        out.append(
            rows.program_row(label, merged, time_ps, on_devices, device, wall, divide_by=len(complete))
        )
    for number, (step_costs, time_ps, on_devices, wall) in per_step.items():
        out.append(rows.program_row(str(number), step_costs, time_ps, on_devices, device, wall))
    return out


def _costs(
    host: HostDevices, options: Options, step: int | None = None, counted_only: bool = False
) -> list[OpCost]:
    if host.activity is None:
        costs = _kineto_costs(host, step)
        costs = [c for c in costs if options.include_infeed or not c.transfer]
        return [c for c in costs if c.in_program] if counted_only else costs
    activity = host.activity
    ex = activity.executions
    mask = np.ones(len(ex), dtype=bool)
    if step is not None:
        mask &= host.step_of == step
    if not options.include_infeed:
        transfer = np.array([op.transfer for op in activity.ops], dtype=bool)
        mask &= ~transfer[ex.op] if len(activity.ops) else mask
    if counted_only:
        mask &= ex.counted
    return xplane.op_costs(activity, mask, all_counted=counted_only)


def _step_costs(host: HostDevices, options: Options, numbers: list[int]) -> list[list[OpCost]]:
    """The counted op costs of each of the steps `numbers` on one host (an XPlane's in one pass
    over its executions)."""
    if host.activity is None:
        return [_costs(host, options, step=n, counted_only=True) for n in numbers]
    activity = host.activity
    ex = activity.executions
    index = np.searchsorted(numbers, host.step_of)
    inside = (host.step_of >= 0) & (index < len(numbers))
    inside[inside] = np.asarray(numbers, dtype=np.int64)[index[inside]] == host.step_of[inside]
    mask = inside & ex.counted
    if not options.include_infeed and len(activity.ops):
        mask &= ~np.array([op.transfer for op in activity.ops], dtype=bool)[ex.op]
    bucket = np.where(inside, index, 0)
    return xplane.op_costs_per_bucket(activity, mask, bucket, len(numbers), all_counted=True)


def _transfer_time(host: HostDevices, step: int | None) -> int:
    if host.activity is None:
        return sum(c.total_time_ps for c in _kineto_costs(host, step) if c.transfer)
    activity = host.activity
    ex = activity.executions
    transfer = np.array([op.transfer for op in activity.ops], dtype=bool)
    if not transfer.any():
        return 0
    mask = transfer[ex.op] & ex.counted
    if step is not None:
        mask &= host.step_of == step
    return int(ex.time_ps[mask].sum())


def _merged_steps(hosts: list[HostDevices]) -> dict[int, MergedStep]:
    """step → its time summed over devices, devices, whether complete on every host that has
    steps, and its wall time (the longest host's window; None when no host gives one)."""
    merged: dict[int, MergedStep] = {}
    with_steps = [h for h in hosts if h.steps]
    for host in with_steps:
        for step in host.steps:
            old = merged.get(step.number, MergedStep(0, 0, True, None))
            walls = [w for w in (old.wall_time_ps, step.wall_time_ps) if w is not None]
            merged[step.number] = MergedStep(
                old.time_ps + step.time_ps,
                old.devices + step.devices,
                old.complete and step.complete,
                max(walls) if walls else None,
            )
    hosts_of = {n: sum(1 for h in with_steps if any(s.number == n for s in h.steps)) for n in merged}
    return {
        n: dataclasses.replace(m, complete=m.complete and hosts_of[n] == len(with_steps))
        for n, m in merged.items()
    }


def _merge(costs: Any) -> list[OpCost]:
    """Sum OpCosts of the same (program, name, search) (the same op on several hosts or steps)."""
    merged: dict[tuple[str, str, str], OpCost] = {}
    for cost in costs:
        key = (cost.program, cost.name, cost.search)
        if key not in merged:
            merged[key] = cost
            continue
        old = merged[key]
        merged[key] = dataclasses.replace(
            old,
            occurrences=old.occurrences + cost.occurrences,
            total_time_ps=old.total_time_ps + cost.total_time_ps,
            self_time_ps=old.self_time_ps + cost.self_time_ps,
            flops=_add(old.flops, cost.flops),
            model_flops=_add(old.model_flops, cost.model_flops),
            bytes_accessed=_add(old.bytes_accessed, cost.bytes_accessed),
            bytes_by_level=_add_levels(old.bytes_by_level, cost.bytes_by_level),
            in_program=old.in_program and cost.in_program,
            note=old.note or cost.note,
            roof=old.roof or cost.roof,
            event_ids=(old.event_ids + cost.event_ids)[:MAX_EVENT_IDS],
        )
    return list(merged.values())


def _timeline_ids(costs: list[OpCost], host_index: int) -> list[OpCost]:
    """The costs with their events' ids on the (merged) timeline: host index · 2³² + index."""
    base = host_index << 32
    return [
        dataclasses.replace(c, event_ids=tuple(base + e for e in c.event_ids)) if c.event_ids else c
        for c in costs
    ]


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)


def _add_levels(a: dict[str, float] | None, b: dict[str, float] | None) -> dict[str, float] | None:
    if a is None and b is None:
        return None
    out = dict(a or {})
    for level, value in (b or {}).items():
        out[level] = out.get(level, 0.0) + value
    return out


def _with_main_roof(peaks: DevicePeaks, costs: list[OpCost]) -> DevicePeaks:
    """The peaks with the compute roof at the roof of most of the FLOPs of ops with a roof of their
    own (a bf16 model's is bf16, not the default fp16), when the device has that peak; unchanged
    when no op names one (TPU XPlanes)."""
    known = [r for r in rows.flops_per_roof([c for c in costs if c.roof], peaks) if r in peaks.flops]
    return dataclasses.replace(peaks, roof_precision=known[0]) if known else peaks


def _device(peaks: DevicePeaks, hosts: list[HostDevices], roofs: list[str]) -> RooflineDevice:
    kind = hosts[0].activity.kind if hosts[0].activity is not None else "gpu"
    devices = sum(h.devices for h in hosts)
    planes = sum(h.device_planes for h in hosts)
    roof = peaks.flop_roof()
    ridges = {}
    if roof is not None:
        ridges = {level: roof[1].value / p.value for level, p in peaks.bandwidth.items() if p.value > 0}
    out = RooflineDevice(
        name=peaks.name,
        kind=kind,
        devices=devices,
        device_planes=planes,
        flops={k: RooflinePeak(value=p.value, unit=p.unit, source=p.source) for k, p in peaks.flops.items()},
        roofs=roofs,
        bandwidth={
            k: RooflinePeak(value=p.value, unit=p.unit, source=p.source) for k, p in peaks.bandwidth.items()
        },
        ridge_points=ridges,
        levels={k: v for k, v in LEVELS.items() if k in peaks.bandwidth},
        attributes=dict(peaks.attributes),
    )
    if roof is not None:
        out.roof_precision = roof[0]
    return out


# -- Kineto -----------------------------------------------------------------------------------------
def _kineto_costs(host: HostDevices, step: int | None) -> list[OpCost]:
    """A Kineto host's op rows: the whole trace's, or one step's."""
    if step is None:
        return host.costs or []
    return host.step_split.costs.get(step, []) if host.step_split is not None else []


def _kineto_host(
    name: str, trace: Trace, events: Callable[[], overview_events.HostEvents] | None
) -> HostDevices | str:
    """A Chrome/Kineto host: its op costs (`kineto.py`), whole and per step (`kineto_steps.py`), and
    its device from `deviceProperties` through `parts.match_part`."""
    spans = kineto.device_spans(trace)
    if not spans:
        return f"{NOT_OBSERVED}: {name} has no GPU activity (kernels, memcpys, memsets)"
    properties = list(trace.metadata.get("deviceProperties") or [])
    part = parts.match_part(properties[0]) if properties else None
    classified = _classified(name, trace, events)
    ops = kineto.prepare(trace, classified.parent)
    triton, triton_ps = kineto.triton_kernels(trace)
    uncosted = (
        f"{name}: {triton} Triton kernel{'s' if triton != 1 else ''} of torch.compile, "
        f"{format_duration(triton_ps / 1e3)} busy, left uncosted: their FLOPs are not derivable from "
        "the trace (the compiled region records its graph's inputs, not each kernel's operands)"
    )
    return HostDevices(
        name=name,
        peaks=peaks_lib.with_default_roof(part.peaks()) if part is not None else None,
        devices=len(spans),
        device_planes=max(len(properties), len(spans)),
        device_time_ps=sum(b - a for a, b in spans.values()),
        wall_time_ps=max(b for _, b in spans.values()) - min(a for a, _ in spans.values()),
        costs=ops.costs()[0],
        step_split=kineto_steps.split(classified, ops),
        warnings=(uncosted,) if triton else (),
    )


def _classified(
    name: str, trace: Trace, events: Callable[[], overview_events.HostEvents] | None
) -> overview_events.HostEvents:
    """The host's classified events: the overview's when given, else classified here."""
    return events() if events is not None else overview_events.build(name, trace, lod.build(trace).self_ps)
