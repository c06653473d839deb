"""`launch_bound`: the device idles between short kernels while the host launches them.

Reads the device events linked to their launch call in scope (`launch_delay.launches`): at least
`MIN_KERNELS` of them, at least `MIN_SHORT_SHARE` running for less time than their launch call took
(HTA's "short GPU kernels"), and a median launch delay under `MAX_MEDIAN_DELAY_NS` (a delay of
milliseconds means the host runs ahead of a queued device: launches are not what it waits for).
The cost is the host-wait idle time (`device_idle.host_wait_idle`: no device event runs while a
stream is in a gap before an event whose launch call began after the previous event ended); fires
when it reaches `MIN_IDLE_SHARE` of the scope's wall time (short kernels on a busy device cost
nothing).
"""

from __future__ import annotations

import numpy as np

from profscope.analysis import device_idle
from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import (
    Context,
    cost_words,
    costed,
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
MAX_MEDIAN_DELAY_NS = 1_000_000


def check(ctx: Context) -> list[OverviewFinding]:
    out = []
    for host in ctx.hosts:
        launches = host.launches
        n = launches.device.shape[0]
        if n < MIN_KERNELS:
            continue
        short = float((launches.kernel_ps < launches.launch_ps).mean())
        delay_ns = float(np.median(launches.delay_ps)) / 1e3
        if short < MIN_SHORT_SHARE or delay_ns >= MAX_MEDIAN_DELAY_NS:
            continue
        cost_ps = device_idle.host_wait_idle(host.events, host.scope_lo, host.scope_hi)
        wall_ps = host.scope_wall_ns * 1e3
        if cost_ps / wall_ps < MIN_IDLE_SHARE:
            continue
        kernel_ns = float(np.median(launches.kernel_ps)) / 1e3
        launch_ns = float(np.median(launches.launch_ps)) / 1e3
        rate = f", {n / per_step(host):.0f} per step" if steady_steps(host) else ""
        finding = OverviewFinding(
            kind="launch_bound",
            host=host.events.name,
            title="The device idles between short kernels while the host launches them",
            observation=(
                f"{short * 100:.0f} % of the {n:,} device events in {scope_words(host)} run for less time "
                f"than their launch call (median kernel {format_duration(kernel_ns)}, median launch "
                f"{format_duration(launch_ns)}, median launch delay {format_duration(delay_ns)}){rate}, and the "
                f"device waits for the next launch {cost_ps / wall_ps * 100:.0f} % of the time. It costs "
                f"{cost_words(host, cost_ps)}."
            ),
            hypothesis=(
                "The host issues many small kernels one by one and the device finishes each before the next "
                "arrives: the step is bound by launch overhead, not by device work."
            ),
            next_check=(
                "Profile again with the step's kernels captured in a CUDA graph (or fused, e.g. torch.compile) "
                "and compare the device's host-wait idle time."
            ),
            rule=(
                f"≥ {MIN_KERNELS} linked device events, ≥ {MIN_SHORT_SHARE:.0%} shorter than their launch, median "
                f"launch delay < {format_duration(MAX_MEDIAN_DELAY_NS)}, device waiting for launches ≥ "
                f"{MIN_IDLE_SHARE:.0%} of the wall time"
            ),
            evidence=[
                count("device events", n),
                share("shorter than their launch", short),
                duration("median kernel", kernel_ns),
                duration("median launch call", launch_ns),
                duration("median launch delay", delay_ns),
                share("device waiting for launches", cost_ps / wall_ps),
            ],
            link=scope_link(host),
        )
        out.append(costed(finding, host, cost_ps))
    return out


RULE = Rule("launch_bound", check)
