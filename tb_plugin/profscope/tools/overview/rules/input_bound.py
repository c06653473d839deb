"""`input_bound`: the step waits while input is read.

Fires for a host whose input part (breakdown: input-labelled slices on the step thread, where no
device work and no runtime call covers them) is at least `MIN_INPUT_SHARE` of the scope's wall
time. The evidence gives the share, the input time per step and, when a device was observed, its
busy share over the same steps.
"""

from __future__ import annotations

from profscope.analysis.events import ROLE_INPUT
from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import (
    Context,
    duration,
    in_scope,
    per_step,
    scope_link,
    scope_words,
    share,
)
from profscope.units import format_duration

MIN_INPUT_SHARE = 0.10


def check(ctx: Context) -> list[OverviewFinding]:
    out = []
    for host in ctx.hosts:
        wall = host.scope_wall_ns
        input_ns = host.scope_parts.get("input", 0.0)
        if wall <= 0 or input_ns / wall < MIN_INPUT_SHARE:
            continue
        trace = host.events.trace
        labels = in_scope(host, host.events.of_roles(ROLE_INPUT))
        names = [trace.strings[i] for i in trace.ev_name[labels].tolist()]
        top = max(set(names), key=names.count) if names else "input"
        evidence = [
            share("input share of wall time", input_ns / wall),
            duration("input per step", input_ns / per_step(host)),
            duration("wall time per step", wall / per_step(host)),
        ]
        busy = ""
        if host.answer.devices.observed and host.answer.devices.devices:
            device = host.answer.devices.devices[0]
            evidence.append(share(f"{device.name} busy", device.busy_fraction))
            busy = f" while {device.name} is busy {device.busy_fraction * 100:.0f} % of the time"
        out.append(
            OverviewFinding(
                kind="input_bound",
                host=host.events.name,
                title="The step waits for input",
                observation=(
                    f"Reading input ({top}) takes {input_ns / wall * 100:.0f} % of the wall time of "
                    f"{scope_words(host)}: {format_duration(input_ns / per_step(host))} of "
                    f"{format_duration(wall / per_step(host))} per step{busy}."
                ),
                hypothesis=(
                    "The input pipeline (reading, decoding, collating) runs on the training thread and is slower "
                    "than the step's compute, so each step waits for its batch."
                ),
                next_check=(
                    "Time the input alone (iterate the data loader without the model for the same number of "
                    "batches) and compare it with the input time per step here; then profile again with the "
                    "loading moved off the step thread (DataLoader num_workers > 0 with prefetching, or "
                    "tf.data prefetch) and compare the input share."
                ),
                rule=f"input ≥ {MIN_INPUT_SHARE:.0%} of the wall time of the steady steps (or the capture)",
                evidence=evidence,
                link=scope_link(host, top),
            )
        )
    return out


RULE = Rule("input_bound", check)
