"""One host's analysis, shared by the tools that show it (Overview, Compare): its steps, breakdowns,
device figures and launch delays (`analyze_host`), and the op tables of one or more hosts.

The scope of the device figures and the tables is the steady-state steps when the host has steps,
else its whole capture (from its first to its last activity); every part of the answer says which.
Without steps the device figures (busy, idle, launch delay) take the device's active region, from
its first to its last device event, not the capture: a device that works 66 ms of a 43 s capture
spent loading data is not "99.8 % idle" of a window it had no work in; `window_note` says how
much of the capture was analysed ("analysed 12.9 s of device activity out of a 43.4 s capture").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from profscope.analysis import breakdown, device_idle, intervals, launch_delay, op_tables, phases
from profscope.analysis import events as ev
from profscope.analysis import steps as steps_lib
from profscope.analysis.answers import (
    OverviewBreakdown,
    OverviewDevices,
    OverviewHost,
    OverviewLink,
    OverviewOverlap,
    OverviewSplit,
    OverviewStep,
    OverviewSteps,
    OverviewStepStats,
    OverviewTables,
)
from profscope.analysis.events import HostEvents
from profscope.analysis.results import HostInput, HostResult, Options
from profscope.answers import UNSET
from profscope.units import format_duration

NO_TRACE = "no trace file for these hosts: steps, breakdowns and tables need a trace (XPlane or Kineto)"


def analyze_host(host: HostInput, options: Options) -> HostResult:
    events = host.events
    trace = events.trace
    found = steps_lib.find(events, options.step_name)
    layers = breakdown.layers(events, found)
    device_observed = events.has_device()
    span_lo, span_hi = events.span_ps
    capture_lo, capture_hi = np.array([span_lo], np.int64), np.array([span_hi], np.int64)
    capture_parts = breakdown.parts(layers, capture_lo, capture_hi, device_observed)[0]

    def session_ns(ps: float) -> float:
        return (float(ps) + host.offset_ps) / 1e3

    capture = OverviewBreakdown(
        label="whole capture",
        start_ns=session_ns(span_lo),
        end_ns=session_ns(span_hi),
        wall_ns=(span_hi - span_lo) / 1e3,
        steps=len(found),
        parts=capture_parts,
        fractions=_fractions(capture_parts, (span_hi - span_lo) / 1e3),
    )
    steps_answer = _steps_answer(found)
    steady = np.zeros(len(found), dtype=bool)
    step_parts: list[dict[str, float]] = []
    steady_answer = UNSET
    scope_lo, scope_hi, scope = capture_lo, capture_hi, "whole capture"
    if len(found):
        wall = found.wall_ps
        by_launch = breakdown.step_layers(events, layers, found.start_ps, found.end_ps)
        step_parts = breakdown.parts(by_launch, found.start_ps, found.end_ps, device_observed)
        launched_ps = breakdown.launched_device_ps(events, found.start_ps, found.end_ps)
        compile_index = breakdown.CATEGORY_IDS.index("compilation")
        compile_ps = intervals.covered(layers.sets[compile_index], found.start_ps, found.end_ps)
        split = steps_lib.split(found.numbers, wall, compile_ps)
        steady = ~split.warmup
        steps_answer.split = OverviewSplit(
            rule=split.rule,
            verdict=split.verdict,
            warmup=found.numbers[split.warmup].tolist(),
            steady=found.numbers[steady].tolist(),
        )
        for k in range(len(found)):
            row = OverviewStep(
                number=int(found.numbers[k]),
                name=found.names[k],
                start_ns=session_ns(found.start_ps[k]),
                end_ns=session_ns(found.end_ps[k]),
                wall_ns=float(wall[k]) / 1e3,
                phase="steady" if steady[k] else "warmup",
                parts=step_parts[k],
                link=OverviewLink(
                    start_ns=session_ns(found.start_ps[k]),
                    end_ns=session_ns(found.end_ps[k]),
                    search=found.names[k],
                ),
            )
            if launched_ps is not None:
                row.launched_device_ns = float(launched_ps[k]) / 1e3
            if options.batch_size and wall[k] > 0:
                row.examples_per_s = options.batch_size / (float(wall[k]) / 1e12)
            steps_answer.rows.append(row)
        steps_answer.stats = _stats(wall[steady], options.batch_size)
        scope_lo, scope_hi = found.start_ps[steady], found.end_ps[steady]
        scope = _steps_label("steady steps", found.numbers[steady])
        chosen = [step_parts[k] for k in np.flatnonzero(steady).tolist()]
        summed = {c: float(sum(p[c] for p in chosen)) for c in chosen[0]}
        steady_wall = float(wall[steady].sum()) / 1e3
        steady_answer = OverviewBreakdown(
            label=scope,
            start_ns=session_ns(scope_lo.min()),
            end_ns=session_ns(scope_hi.max()),
            wall_ns=steady_wall,
            steps=int(steady.sum()),
            parts=summed,
            fractions=_fractions(summed, steady_wall),
            per_step_median={c: float(np.median([p[c] for p in chosen])) for c in chosen[0]},
        )
    scope_parts = (
        steady_answer.parts if steady_answer is not UNSET else {c: v for c, v in capture_parts.items()}
    )
    device_lo, device_hi, device_scope = scope_lo, scope_hi, scope
    if not len(found) and device_observed:
        device_lo, device_hi = _device_region(events)
        device_scope = "device active region"
    launches = launch_delay.launches(events, device_lo, device_hi)
    devices = OverviewDevices(observed=device_observed, scope=device_scope, devices=[])
    graphs = ev.graph_calls(events)
    if graphs:
        devices.graph_note = graph_note(events, graphs)
    if device_observed:
        if device_scope != scope:
            devices.window_note = _window_note(device_lo, device_hi, span_lo, span_hi)
        devices.devices = device_idle.devices(events, device_lo, device_hi, host.track_base)
        kept = launches.kept_delay_ps
        if kept.shape[0]:
            devices.launch_delay = launch_delay.distribution(kept)
        else:
            devices.launch_reason = (
                launch_delay.ALL_EXCLUDED if launches.device.shape[0] else launch_delay.NO_LINKS
            )
        excluded = launch_delay.exclusions(launches)
        if excluded:
            devices.launch_excluded = excluded
    else:
        devices.reason = device_reason(events)
    excluded = np.zeros(0, np.int64)
    if found.markers.shape[0]:
        excluded = np.concatenate((found.markers, ev.ancestors(events, found.markers)))
    answer = OverviewHost(
        host=events.name,
        format=trace.format,
        steps=steps_answer,
        capture=capture,
        steady=steady_answer,
        devices=devices,
    )
    overlap = _overlap(events, scope_lo, scope_hi)
    if overlap is not None:
        answer.overlap = overlap
    found_phases = phases.find(events, found)
    if len(found):
        # The reason is read only without a device (then `devices.reason` holds it).
        reason = "" if device_observed else devices.reason
        answer.phases = phases.summary(found_phases, found, steady, scope, reason)
    return HostResult(
        events=events,
        offset_ps=host.offset_ps,
        steps=found,
        steady=steady,
        layers=layers,
        step_parts=step_parts,
        scope_lo=scope_lo,
        scope_hi=scope_hi,
        scope=scope,
        scope_parts=scope_parts,
        launches=launches,
        excluded=excluded,
        phases=found_phases,
        answer=answer,
    )


def _steps_answer(found: steps_lib.Steps) -> OverviewSteps:
    """The steps answer without its rows: the source, the other candidates, the device events
    launched before the first step."""
    answer = OverviewSteps(source_kind=found.kind, source=found.source, rows=[])
    if found.message:
        answer.message = found.message
    if found.candidates:
        answer.candidates = list(found.candidates)
    if found.before_first:
        answer.before_first = found.before_first
        answer.before_first_ns = found.before_first_ps / 1e3
        answer.before_first_note = steps_lib.before_first_note(found)
    return answer


def _device_region(events: HostEvents) -> tuple[np.ndarray, np.ndarray]:
    """The window from the host's first device event to the end of its last."""
    device = events.of_roles(*ev.DEVICE_ROLES)
    lo = int(events.trace.ev_start_ps[device].min())
    hi = int(events.end_ps[device].max())
    return np.array([lo], np.int64), np.array([hi], np.int64)


def _window_note(lo: np.ndarray, hi: np.ndarray, span_lo: int, span_hi: int) -> str:
    active = float(hi[0] - lo[0]) / 1e3
    capture = float(span_hi - span_lo) / 1e3
    return (
        f"analysed {format_duration(active)} of device activity out of a {format_duration(capture)} capture: "
        "without steps the device figures run from the first to the last device event, the time before "
        "and after it held no device work"
    )


def graph_note(events: HostEvents, graphs: ev.GraphCalls) -> str:
    """What the graph calls mean for the device figures, in words."""
    trace = events.trace
    said = []
    if graphs.captures.shape[0]:
        name = trace.strings[int(trace.ev_name[graphs.captures[0]])]
        n, c = graphs.captured.shape[0], graphs.captures.shape[0]
        said.append(
            f"{n} launch call{'s' if n != 1 else ''} in {c} stream capture{'s' if c != 1 else ''} ({name}) "
            "were recorded into a graph, not executed: no device event ran for them"
        )
    if graphs.launches.shape[0]:
        name = trace.strings[int(trace.ev_name[graphs.launches[0]])]
        n, g = graphs.launched.shape[0], graphs.launches.shape[0]
        said.append(
            f"{n} device event{'s' if n != 1 else ''} ran through {g} graph launch{'es' if g != 1 else ''} "
            f"({name}): one call runs the whole graph, so their launch delays are left out"
        )
    elif graphs.captures.shape[0]:
        said.append("the trace holds no graph launch: the captured work did not run in this capture")
    return "; ".join(said)


def device_reason(events: HostEvents) -> str:
    """Why this host has no device figures."""
    graphs = ev.graph_calls(events)
    if graphs.captured.shape[0]:
        return f"device activity not observed: {graph_note(events, graphs)}"
    if events.device_declared:
        return f"device activity not observed: {events.device_declared}, but none of its events were recorded"
    return "device activity not observed: CPU-only capture (no GPU or TPU activity in the profile)"


def _fractions(parts: dict[str, float], wall_ns: float) -> dict[str, float]:
    return {c: (v / wall_ns if wall_ns > 0 else 0.0) for c, v in parts.items()}


def _steps_label(prefix: str, numbers: np.ndarray) -> str:
    values = numbers.tolist()
    if not values:
        return f"{prefix}: none"
    if values == list(range(values[0], values[0] + len(values))) and len(values) > 1:
        return f"{prefix} {values[0]}–{values[-1]}"
    return f"{prefix} " + ", ".join(str(v) for v in values[:12]) + ("…" if len(values) > 12 else "")


def _stats(wall_ps: np.ndarray, batch_size: int | None) -> OverviewStepStats:
    ns = wall_ps.astype(np.float64) / 1e3
    median = float(np.median(ns))
    stats = OverviewStepStats(
        count=int(ns.shape[0]), median_ns=median, min_ns=float(ns.min()), max_ns=float(ns.max())
    )
    if ns.shape[0] >= steps_lib.MIN_DISTRIBUTION_STEPS:
        stats.p10_ns, stats.p90_ns = (float(x) for x in np.percentile(ns, [10, 90]))
    else:
        stats.note = (
            f"{ns.shape[0]} steady step{'s' if ns.shape[0] != 1 else ''}: the window is too short to state a "
            f"distribution (p10/p90 need at least {steps_lib.MIN_DISTRIBUTION_STEPS}); profile more steps"
        )
    if batch_size and median > 0:
        stats.examples_per_s = batch_size / (median / 1e9)
    return stats


def _overlap(events: HostEvents, lo: np.ndarray, hi: np.ndarray) -> OverviewOverlap | None:
    trace = events.trace
    comm = events.of_roles(ev.ROLE_COMM)
    if not comm.shape[0]:
        return None
    compute = events.of_roles(ev.ROLE_COMPUTE)
    comm_set = intervals.merge(trace.ev_start_ps[comm], events.end_ps[comm])
    compute_set = intervals.merge(trace.ev_start_ps[compute], events.end_ps[compute])
    communication = float(intervals.covered(comm_set, lo, hi).sum()) / 1e3
    if communication <= 0:
        return None
    both = float(intervals.covered(intervals.intersect(comm_set, compute_set), lo, hi).sum()) / 1e3
    return OverviewOverlap(communication_ns=communication, overlapped_ns=both, fraction=both / communication)


def tables(results: Sequence[HostResult], group_by: str) -> OverviewTables:
    scopes = [op_tables.Scope(r.events, r.scope_lo, r.scope_hi, r.excluded) for r in results]
    wall_ns = sum(r.scope_wall_ns for r in results)
    if not results:
        scope = "none: no trace"
    else:
        scope = results[0].scope if len(results) == 1 else f"{results[0].scope} of each host"
    host_ops, host_total = op_tables.host_ops(scopes, wall_ns, group_by)
    kernel_rows, kernel_total = op_tables.kernels(scopes, wall_ns)
    hlo_rows, hlo_total = op_tables.hlo_ops(scopes, wall_ns)
    out = OverviewTables(
        scope=scope,
        group_by=group_by,
        host_ops=host_ops,
        host_ops_total=host_total,
        kernels=kernel_rows,
        kernels_total=kernel_total,
        hlo_ops=hlo_rows,
        hlo_ops_total=hlo_total,
    )
    if not results:
        out.kernels_reason = NO_TRACE
    elif not any(r.events.has_device() for r in results):
        out.kernels_reason = device_reason(results[0].events)
    return out
