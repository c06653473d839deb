"""`launch_bound`: many short kernels, launch time comparable to kernel time.

Reads the device events linked to their launch call in scope (`launch_delay.launches`). Fires when
there are at least `MIN_KERNELS` of them, at least `MIN_SHORT_SHARE` run for less time than their
launch call took (HTA's "short GPU kernels"), and the first device is idle at least
`MIN_IDLE_SHARE` of the scope's wall time (short kernels on a busy device cost nothing).
"""

from __future__ import annotations

import numpy as np

from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import (
    Context,
    count,
    duration,
    per_step,
    scope_link,
    scope_words,
    share,
    steady_steps,
)
from profscope.units import format_duration

MIN_KERNELS = 100
MIN_SHORT_SHARE = 0.5
MIN_IDLE_SHARE = 0.2


def check(ctx: Context) -> list[OverviewFinding]:
    out = []
    for host in ctx.hosts:
        launches = host.launches
        n = launches.device.shape[0]
        devices = host.answer.devices.devices
        if n < MIN_KERNELS or not devices:
            continue
        short = float((launches.kernel_ps < launches.launch_ps).mean())
        device = devices[0]
        idle = 1.0 - device.busy_fraction
        if short < MIN_SHORT_SHARE or idle < MIN_IDLE_SHARE:
            continue
        kernel_ns = float(np.median(launches.kernel_ps)) / 1e3
        launch_ns = float(np.median(launches.launch_ps)) / 1e3
        rate = f", {n / per_step(host):.0f} per step" if steady_steps(host) else ""
        host_wait = sum(s.idle.host_wait_ns for s in device.streams)
        idle_gaps = sum(s.idle.host_wait_ns + s.idle.kernel_wait_ns + s.idle.other_ns for s in device.streams)
        out.append(
            OverviewFinding(
                kind="launch_bound",
                host=host.events.name,
                title="Kernels are as short as their launches",
                observation=(
                    f"{short * 100:.0f} % of the {n:,} device events in {scope_words(host)} run for less time "
                    f"than their launch call (median kernel {format_duration(kernel_ns)}, median launch "
                    f"{format_duration(launch_ns)}){rate}, and {device.name} is idle {idle * 100:.0f} % of the time."
                ),
                hypothesis=(
                    "The host issues many small kernels one by one and the device finishes each before the next "
                    "arrives: the step is bound by launch overhead, not by device work."
                ),
                next_check=(
                    "Check the idle split of the streams: a large host-wait part confirms it. Then profile again "
                    "with the step's kernels captured in a CUDA graph (or fused, e.g. torch.compile) and compare "
                    "the device idle share."
                ),
                rule=(
                    f"≥ {MIN_KERNELS} linked device events, ≥ {MIN_SHORT_SHARE:.0%} shorter than their launch, "
                    f"device idle ≥ {MIN_IDLE_SHARE:.0%}"
                ),
                evidence=[
                    count("device events", n),
                    share("shorter than their launch", short),
                    duration("median kernel", kernel_ns),
                    duration("median launch call", launch_ns),
                    share("device idle", idle),
                    share("host wait share of idle gaps", host_wait / idle_gaps if idle_gaps > 0 else 0.0),
                ],
                link=scope_link(host),
            )
        )
    return out


RULE = Rule("launch_bound", check)
