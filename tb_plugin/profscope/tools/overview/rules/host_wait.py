"""`host_wait`: the step waits in a phase where nothing traced runs.

The phase the steady steps wait in (`waiting.find`: its time with nothing driving the device, or
with no model op on a CPU-only capture, reaches `waiting.MIN_DEVICE_WAIT_SHARE` resp.
`waiting.MIN_WAIT_SHARE` of their wall time) in which no framework op, runtime call or TraceMe runs
at all: the step's thread sleeps, blocks (on I/O, a lock, another process) or runs Python the
profile does not trace. Judged by what runs in the phase, never by its name. Cost: the phase's
waiting time per step and its share of the step.
"""

from __future__ import annotations

from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules import waiting
from profscope.tools.overview.rules.context import Context


def check(ctx: Context) -> list[OverviewFinding]:
    out = []
    for host in ctx.hosts:
        wait = ctx.derived("wait", host, waiting.find)
        if wait is None or wait.builds_input:
            continue
        hypothesis = (
            f"`{wait.name}` and not the model's compute sets the step time: nothing the profiler traces runs in it, "
            "so the thread waits there (a sleep, I/O, a lock, a peer or another process) or runs untraced Python "
            "(reading or decoding data without framework ops)."
        )
        out.append(waiting.finding(host, wait, "host_wait", hypothesis))
    return out


RULE = Rule("host_wait", check)
