"""Kernel launch delay: how long after its launch call returned a device event started.

delay = device start − (launch start + launch duration), for every device event a flow (Kineto:
the launch → kernel flow built from the correlation id; XPlane: the host → device flow) links to
its launch call, in scope. Negative delays happen where host and device clocks disagree; they are
kept (the distribution shows them). The same pairs give the launch/kernel comparison the
`launch_bound` rule reads: how many device events run for less time than their launch call took.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.analysis.answers import OverviewDistribution, OverviewHistogramBin
from profscope.analysis.device_idle import in_windows
from profscope.analysis.events import DEVICE_ROLES, HostEvents

HISTOGRAM_BINS = 12
NO_LINKS = "no device event is linked to its launch call (no launch flows or correlation ids in the profile)"


@dataclasses.dataclass(frozen=True)
class Launches:
    """Device events in scope linked to their launch, with the launch's and the event's durations."""

    device: np.ndarray  # event indices
    delay_ps: np.ndarray
    launch_ps: np.ndarray
    kernel_ps: np.ndarray


def launches(events: HostEvents, lo: np.ndarray, hi: np.ndarray) -> Launches:
    trace = events.trace
    device = events.of_roles(*DEVICE_ROLES)
    device = device[(events.launch[device] >= 0) & in_windows(trace.ev_start_ps[device], lo, hi)]
    launch = events.launch[device]
    launch_end = trace.ev_start_ps[launch] + trace.ev_dur_ps[launch]
    return Launches(
        device=device,
        delay_ps=trace.ev_start_ps[device] - launch_end,
        launch_ps=trace.ev_dur_ps[launch],
        kernel_ps=trace.ev_dur_ps[device],
    )


def distribution(values_ps: np.ndarray) -> OverviewDistribution:
    """Quantiles and a log-spaced histogram of durations (ps in, ns out); values ≤ 0 get a bin of
    their own."""
    ns = values_ps.astype(np.float64) / 1e3
    p10, median, p90 = np.percentile(ns, [10, 50, 90]).tolist()
    bins = []
    low = ns[ns <= 0]
    if low.shape[0]:
        bins.append(OverviewHistogramBin(lo_ns=float(low.min()), hi_ns=0.0, count=int(low.shape[0])))
    high = ns[ns > 0]
    if high.shape[0]:
        lo_edge, hi_edge = float(high.min()), float(high.max())
        if hi_edge <= lo_edge:
            bins.append(OverviewHistogramBin(lo_ns=lo_edge, hi_ns=hi_edge, count=int(high.shape[0])))
        else:
            edges = np.geomspace(lo_edge, hi_edge, HISTOGRAM_BINS + 1)
            counts, _ = np.histogram(high, bins=edges)
            bins.extend(
                OverviewHistogramBin(lo_ns=float(a), hi_ns=float(b), count=int(c))
                for a, b, c in zip(edges[:-1], edges[1:], counts)
            )
    return OverviewDistribution(
        count=int(ns.shape[0]),
        median_ns=median,
        p10_ns=p10,
        p90_ns=p90,
        min_ns=float(ns.min()),
        max_ns=float(ns.max()),
        histogram=bins,
    )
