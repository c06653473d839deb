"""`dominant_op`: one op takes most of the step.

When a device was observed the step's time is the device's: candidates are device kernels by total
time. Without a device, candidates are host framework ops (labels such as `record_function` ranges,
input labels, step markers and Python frames are left out: their self time is untraced Python) by
self time. A candidate's share is the smaller of that time and the union of its calls' intervals,
so calls on concurrent devices or threads never count as more than the wall time. Fires when the top candidate reaches `MIN_OP_SHARE` of the scope's wall time.
"""

from __future__ import annotations

import numpy as np

from profscope.analysis import intervals, op_tables
from profscope.analysis.events import DEVICE_ROLES, ROLE_OP, string_table
from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import (
    Context,
    count,
    duration,
    in_scope,
    scope_link,
    scope_words,
    share,
)

MIN_OP_SHARE = 0.5
LABEL_CATEGORIES = frozenset({"user_annotation", "gpu_user_annotation"})


def _top_kernel(host) -> tuple[str, str, float, int, str] | None:
    trace = host.events.trace
    device = in_scope(host, host.events.of_roles(*DEVICE_ROLES))
    if not device.shape[0]:
        return None
    total = np.bincount(trace.ev_name[device], weights=trace.ev_dur_ps[device])
    top = int(total.argmax())
    mine = device[trace.ev_name[device] == top]
    ns = min(float(total[top]), _union(host, mine)) / 1e3
    return "kernel", trace.strings[top], ns, int(mine.shape[0]), "total time"


def _union(host, chosen: np.ndarray) -> float:
    """The time (ps) of the union of the events' intervals inside the host's scope."""
    merged = intervals.merge(host.events.trace.ev_start_ps[chosen], host.events.end_ps[chosen])
    return float(intervals.covered(merged, host.scope_lo, host.scope_hi).sum())


def _top_host_op(host) -> tuple[str, str, float, int, str] | None:
    events = host.events
    trace = events.trace
    chosen = op_tables.host_op_events(op_tables.Scope(events, host.scope_lo, host.scope_hi, host.excluded))
    labels = string_table(trace.strings, LABEL_CATEGORIES.__contains__)
    chosen = chosen[(events.role[chosen] == ROLE_OP) & ~labels[trace.ev_cat[chosen]]]
    if not chosen.shape[0]:
        return None
    self_ps = np.bincount(trace.ev_name[chosen], weights=events.self_ps[chosen])
    top = int(self_ps.argmax())
    mine = chosen[trace.ev_name[chosen] == top]
    ns = min(float(self_ps[top]), _union(host, mine)) / 1e3
    return "host op", trace.strings[top], ns, int(mine.shape[0]), "self time"


def check(ctx: Context) -> list[OverviewFinding]:
    out = []
    for host in ctx.hosts:
        wall = host.scope_wall_ns
        top = _top_kernel(host) if host.events.has_device() else _top_host_op(host)
        if wall <= 0 or top is None or top[2] / wall < MIN_OP_SHARE:
            continue
        kind, name, ns, calls, measure = top
        out.append(
            OverviewFinding(
                kind="dominant_op",
                host=host.events.name,
                title=f"One {kind} takes most of the step",
                observation=(
                    f"{name} takes {ns / wall * 100:.0f} % of the wall time of {scope_words(host)} ({measure}), "
                    f"in {calls:,} calls."
                ),
                hypothesis=(
                    f"The step is bound by this one {kind}: its input shapes or its number of calls decide the step "
                    "time."
                ),
                next_check=(
                    "Group the op table by input shapes to see which calls take the time, then time this op alone "
                    "on those shapes (a micro-benchmark) and compare it with the device's peak for that work "
                    "(roofline tab) before changing the model."
                ),
                rule=f"one op ≥ {MIN_OP_SHARE:.0%} of the wall time in scope",
                evidence=[
                    share(f"{measure} share of wall time", ns / wall),
                    duration(measure, ns),
                    count("calls", calls),
                ],
                link=scope_link(host, name),
            )
        )
    return out


RULE = Rule("dominant_op", check)
