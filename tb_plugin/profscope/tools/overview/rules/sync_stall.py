"""`sync_stall`: the host blocks on the device.

Counts host calls that wait for the device (`SYNC_NAMES`: device/stream/event synchronisation,
synchronous `cudaMemcpy`, and `aten::_local_scalar_dense` / `aten::item`, what `.item()` runs) in
scope. Fires when their union covers at least `MIN_SYNC_SHARE` of the scope's wall time and there
are at least `MIN_CALLS_PER_STEP` of them per steady step (one synchronisation at the end of a
capture is no habit of the step).
"""

from __future__ import annotations

import re

import numpy as np

from profscope.analysis.events import string_table
from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import (
    Context,
    count,
    in_scope,
    per_step,
    scope_link,
    scope_share,
    scope_words,
    share,
)

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
        on_host = host.events.host_track[trace.ev_track] if trace.num_events else np.zeros(0, bool)
        named = string_table(trace.strings, SYNC_NAMES.search)[trace.ev_name]
        calls = in_scope(host, np.flatnonzero(named & on_host & (trace.ev_dur_ps > 0)))
        if not calls.shape[0]:
            continue
        blocked = scope_share(host, calls)
        if blocked < MIN_SYNC_SHARE or calls.shape[0] / per_step(host) < MIN_CALLS_PER_STEP:
            continue
        names = [trace.strings[i] for i in trace.ev_name[calls].tolist()]
        top = max(set(names), key=names.count)
        others = len(set(names)) - 1
        which = f"{top} and {others} other kind{'s' if others > 1 else ''}" if others else top
        out.append(
            OverviewFinding(
                kind="sync_stall",
                host=host.events.name,
                title="The host waits for the device",
                observation=(
                    f"Synchronising calls ({which}) hold the host for "
                    f"{blocked * 100:.0f} % of the wall time of {scope_words(host)}, "
                    f"{calls.shape[0] / per_step(host):.1f} calls per step."
                ),
                hypothesis=(
                    "The code reads a device value on the host each step (`.item()`, printing or logging a "
                    "loss, a Python condition on a tensor) or synchronises explicitly, so the host cannot queue "
                    "the next work while the device runs."
                ),
                next_check=(
                    "Find the call site from the Python stack of these events (record with with_stack=True); "
                    "profile again with that read done every N steps (or kept on the device) and compare the "
                    "share of time in synchronising calls."
                ),
                rule=(
                    f"synchronising calls ≥ {MIN_SYNC_SHARE:.0%} of the wall time in scope, ≥ {MIN_CALLS_PER_STEP:g} "
                    "per step"
                ),
                evidence=[share("time in synchronising calls", blocked), count("calls", calls.shape[0])],
                link=scope_link(host, top),
            )
        )
    return out


RULE = Rule("sync_stall", check)
