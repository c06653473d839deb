"""`dominant_op`: one op call takes most of the step.

"One op" is one call: per steady step (the capture without steps) the longest single call of each
op name, and the op whose longest call reaches `MIN_OP_SHARE` of the step's wall time in the median
step. An op called many times (the matmuls of an MLP, a kernel template run per layer) is the
model's compute spread over its layers, not one target to time alone.

With a device the candidates are device kernels (duration), collectives left out: a long
collective is waiting for peers and transfer, not a kernel to micro-benchmark. Without a device
they are host framework ops (self time), leaving out what is not an op: Python frames, labels
(`record_function` ranges, the phases under the step marker), the step markers and what encloses
them, and a call that encloses work on another thread or the device (a jitted function or
compiled graph dispatching its program: its self time is the program's, not its own).
Cost: the chosen op's calls per step (their union inside the scope), as time and share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from profscope.analysis import intervals, op_tables
from profscope.analysis.events import DEVICE_ROLES, ROLE_COMM, ROLE_OP, string_table
from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import (
    Context,
    cost_words,
    costed,
    count,
    duration,
    in_scope,
    is_label,
    scope_link,
    scope_words,
    share,
)

if TYPE_CHECKING:
    from profscope.analysis.results import HostResult

MIN_OP_SHARE = 0.5


def _kernels(host: HostResult) -> tuple[np.ndarray, np.ndarray, str]:
    device = in_scope(host, host.events.of_roles(*[r for r in DEVICE_ROLES if r != ROLE_COMM]))
    return device, host.events.trace.ev_dur_ps[device], "kernel"


def _host_ops(host: HostResult) -> tuple[np.ndarray, np.ndarray, str]:
    events = host.events
    trace = events.trace
    chosen = op_tables.host_op_events(op_tables.Scope(events, host.scope_lo, host.scope_hi, host.excluded))
    is_phase = string_table(trace.strings, set(host.phases.names).__contains__)
    chosen = chosen[(events.role[chosen] == ROLE_OP) & ~is_label(trace)[trace.ev_cat[chosen]]]
    chosen = chosen[~is_phase[trace.ev_name[chosen]]]
    return chosen, events.self_ps[chosen], "host op"


def _dispatches(host: HostResult, chosen: np.ndarray) -> np.ndarray:
    """Bool per event of `chosen`: it encloses an event of another host thread or of the device."""
    events = host.events
    trace = events.trace
    work = np.flatnonzero((events.role == ROLE_OP) | np.isin(events.role, DEVICE_ROLES))
    out = np.zeros(chosen.shape[0], dtype=bool)
    if not work.shape[0]:
        return out
    order = np.argsort(trace.ev_start_ps[work], kind="stable")
    work = work[order]
    starts = trace.ev_start_ps[work]
    ends = events.end_ps[work]
    for k, i in enumerate(chosen.tolist()):
        lo, hi = np.searchsorted(starts, [trace.ev_start_ps[i], events.end_ps[i]], side="left")
        inside = work[lo:hi]
        inside = inside[(ends[lo:hi] <= events.end_ps[i]) & (trace.ev_track[inside] != trace.ev_track[i])]
        out[k] = bool(inside.shape[0])
    return out


def _top(host: HostResult, chosen: np.ndarray, time_ps: np.ndarray) -> tuple[int, np.ndarray] | None:
    """The op name whose longest call per step is the largest share of the step in the median
    step (at least `MIN_OP_SHARE`), with its calls in scope; names whose calls dispatch work
    elsewhere are passed over."""
    if not chosen.shape[0]:
        return None
    trace = host.events.trace
    window = np.searchsorted(host.scope_lo, trace.ev_start_ps[chosen], side="right") - 1
    walls = (host.scope_hi - host.scope_lo).astype(np.float64)
    names = trace.ev_name[chosen]
    ranked = []
    for name in np.unique(names).tolist():
        mine = names == name
        longest = np.zeros(walls.shape[0])
        np.maximum.at(longest, window[mine], time_ps[mine].astype(np.float64))
        median = float(np.median(longest / walls))
        if median >= MIN_OP_SHARE:
            ranked.append((median, name))
    for _, name in sorted(ranked, reverse=True):
        calls = chosen[names == name]
        if not _dispatches(host, calls).any():
            return name, calls
    return None


def check(ctx: Context) -> list[OverviewFinding]:
    out = []
    for host in ctx.hosts:
        if host.scope_wall_ns <= 0:
            continue
        chosen, time_ps, kind = _kernels(host) if host.events.has_device() else _host_ops(host)
        top = _top(host, chosen, time_ps)
        if top is None:
            continue
        name_id, calls = top
        name = host.events.trace.strings[name_id]
        trace = host.events.trace
        union = intervals.merge(trace.ev_start_ps[calls], host.events.end_ps[calls])
        calls_ps = float(time_ps[np.isin(chosen, calls)].sum())
        cost_ps = min(calls_ps, float(intervals.covered(union, host.scope_lo, host.scope_hi).sum()))
        wall_ps = host.scope_wall_ns * 1e3
        measure = "self time" if kind == "host op" else "total time"
        finding = OverviewFinding(
            kind="dominant_op",
            host=host.events.name,
            title=f"One {kind} takes most of the step",
            observation=(
                f"One call of {name} takes at least {MIN_OP_SHARE:.0%} of the step in the median step of "
                f"{scope_words(host)}; its {calls.shape[0]:,} calls take {cost_ps / wall_ps * 100:.0f} % of the "
                f"wall time ({measure}). It costs {cost_words(host, cost_ps)}."
            ),
            hypothesis=(
                f"The step is bound by this one {kind}: its input shapes and how it is implemented decide the step "
                "time."
            ),
            next_check=(
                "Group the op table by input shapes to see which calls take the time, then time this op alone "
                "on those shapes (a micro-benchmark) and compare it with the device's peak for that work "
                "(roofline tab) before changing the model."
            ),
            rule=f"one call ≥ {MIN_OP_SHARE:.0%} of the step's wall time in the median step",
            evidence=[
                share(f"{measure} share of wall time", cost_ps / wall_ps),
                duration(measure, cost_ps / 1e3),
                count("calls", calls.shape[0]),
            ],
            link=scope_link(host, name),
        )
        out.append(costed(finding, host, cost_ps))
    return out


RULE = Rule("dominant_op", check)
