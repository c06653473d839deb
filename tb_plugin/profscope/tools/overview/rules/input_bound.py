"""`input_bound`: the step waits in a phase that reads or builds the batch.

The phase the steady steps wait in (`waiting.find`: its time with nothing driving the device, or
with no model op on a CPU-only capture, reaches `waiting.MIN_DEVICE_WAIT_SHARE` resp.
`waiting.MIN_WAIT_SHARE` of their wall time) in which framework ops run that drive no model work
(CPU-only: by the threshold they take little of it; with a device they launch nothing): tensors
made from Python data, a collate, a transform, a copy. Judged by what runs in the phase, never by its
name, so a label in any language (or torch's `unknown` for a non-ASCII one) is found. Cost: the
phase's waiting time per step and its share of the step.
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
        if wait is None or not wait.builds_input:
            continue
        hypothesis = (
            f"`{wait.name}` and not the model's compute sets the step time: it reads or builds the batch (what "
            "runs in it makes tensors and drives no model work; the rest of its time is reading, decoding or "
            "Python), and the step cannot start its compute before it is done."
        )
        out.append(waiting.finding(host, wait, "input_bound", hypothesis))
    return out


RULE = Rule("input_bound", check)
