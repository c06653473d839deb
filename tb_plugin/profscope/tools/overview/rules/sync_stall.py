"""`sync_stall`: the device idles while the host waits for it.

Counts host calls that wait for the device (`SYNC_NAMES`: device/stream/event synchronisation,
synchronous `cudaMemcpy`, and `aten::_local_scalar_dense` / `aten::item`, what `.item()` runs) in
scope, on a capture with device activity (on a CPU-only one `.item()` waits for nothing). A host
blocked while its device is busy costs nothing: the device has the work queued. The cost is the
time the device is idle while the host is blocked in such a call (union of the calls minus device
busy time, inside the scope). Fires when it reaches `MIN_SYNC_SHARE` of the scope's wall time and
there are at least `MIN_CALLS_PER_STEP` calls per steady step (one synchronisation at the end of a
capture is no habit of the step).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from profscope.analysis import intervals
from profscope.analysis.events import DEVICE_ROLES, string_table
from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import (
    Context,
    cost_words,
    costed,
    count,
    in_scope,
    per_step,
    scope_link,
    scope_share,
    scope_words,
    share,
)

if TYPE_CHECKING:
    from profscope.analysis.results import HostResult

MIN_SYNC_SHARE = 0.10
MIN_CALLS_PER_STEP = 1.0
SYNC_NAMES = re.compile(
    r"^(?:cuda|hip)(?:Device|Stream|Event)Synchronize$|^cu(?:Ctx|Stream|Event)Synchronize$"
    r"|^(?:cuda|hip)Memcpy$|^cuMemcpyDtoH(?:_v2)?$|^aten::_local_scalar_dense$|^aten::item$"
)


def check(ctx: Context) -> list[OverviewFinding]:
    out = []
    for host in ctx.hosts:
        trace = host.events.trace
        if not host.events.has_device():
            continue
        on_host = host.events.host_track[trace.ev_track]
        named = string_table(trace.strings, SYNC_NAMES.search)[trace.ev_name]
        calls = in_scope(host, np.flatnonzero(named & on_host & (trace.ev_dur_ps > 0)))
        if not calls.shape[0] or calls.shape[0] / per_step(host) < MIN_CALLS_PER_STEP:
            continue
        blocked = scope_share(host, calls)
        cost_ps = _idle_while_blocked(host, calls)
        wall_ps = host.scope_wall_ns * 1e3
        if cost_ps / wall_ps < MIN_SYNC_SHARE:
            continue
        names = [trace.strings[i] for i in trace.ev_name[calls].tolist()]
        top = max(set(names), key=names.count)
        others = len(set(names)) - 1
        which = f"{top} and {others} other kind{'s' if others > 1 else ''}" if others else top
        finding = OverviewFinding(
            kind="sync_stall",
            host=host.events.name,
            title="The device idles while the host waits for it",
            observation=(
                f"Synchronising calls ({which}) hold the host for {blocked * 100:.0f} % of the wall time of "
                f"{scope_words(host)}, {calls.shape[0] / per_step(host):.1f} calls per step, and the device is idle "
                f"for {cost_ps / wall_ps * 100:.0f} % of the wall time while they do. It costs "
                f"{cost_words(host, cost_ps)}."
            ),
            hypothesis=(
                "The code reads a device value on the host each step (`.item()`, printing or logging a "
                "loss, a Python condition on a tensor) or synchronises explicitly, so the host cannot queue "
                "the next work while the device runs."
            ),
            next_check=(
                "Find the call site from the Python stack of these events (record with with_stack=True); "
                "profile again with that read done every N steps (or kept on the device) and compare the "
                "device idle time during synchronising calls."
            ),
            rule=(
                f"device idle while the host is in a synchronising call ≥ {MIN_SYNC_SHARE:.0%} of the wall time in "
                f"scope, ≥ {MIN_CALLS_PER_STEP:g} call per step"
            ),
            evidence=[
                share("device idle while the host waits", cost_ps / wall_ps),
                share("time in synchronising calls", blocked),
                count("calls", calls.shape[0]),
            ],
            link=scope_link(host, top),
        )
        out.append(costed(finding, host, cost_ps))
    return out


def _idle_while_blocked(host: HostResult, calls: np.ndarray) -> float:
    """The time (ps) inside the scope when the host is in one of `calls` and no device works."""
    events = host.events
    start, end = events.trace.ev_start_ps, events.end_ps
    blocked = intervals.merge(start[calls], end[calls])
    device = events.of_roles(*DEVICE_ROLES)
    both = intervals.intersect(blocked, intervals.merge(start[device], end[device]))
    covered = intervals.covered(blocked, host.scope_lo, host.scope_hi).sum()
    return float(covered - intervals.covered(both, host.scope_lo, host.scope_hi).sum())


RULE = Rule("sync_stall", check)
