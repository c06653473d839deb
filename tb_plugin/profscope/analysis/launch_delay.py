"""Kernel launch delay: how long after its launch call returned a device event started.

delay = device start − (launch start + launch duration), for every device event a flow (Kineto:
the launch → kernel flow built from the correlation id; XPlane: the host → device flow) links to
its launch call, in scope. The same pairs give the launch/kernel comparison the `launch_bound` rule
reads: how many device events run for less time than their launch call took.

Left out of the distribution (each counted, with its rule), first rule that matches:
- graph: the launch call is a graph launch (`events.GRAPH_LAUNCH_NAMES`): one call runs a whole
  graph, so a kernel's delay after it is the graph's earlier kernels, not a launch delay;
- synchronous: the call is a synchronous copy or set (`cudaMemcpy`, `hipMemset`, `cuMemcpyDtoH`,
  … without `Async`) or it returned only after its device event ended: the call waited for the
  device, so the gap says how long it waited, not how late the device started;
- negative: the device event started before its launch call returned (delay < 0): the call
  returned late after handing the work over, or host and device clocks disagree; by up to the
  most negative delay.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from profscope.analysis import events as ev
from profscope.analysis.answers import OverviewDistribution, OverviewHistogramBin, OverviewLaunchExclusion
from profscope.analysis.device_idle import in_windows
from profscope.analysis.events import DEVICE_ROLES, HostEvents
from profscope.units import format_duration

HISTOGRAM_BINS = 12
NO_LINKS = "no device event is linked to its launch call (no launch flows or correlation ids in the profile)"
ALL_EXCLUDED = "every linked device event is left out of the launch delay (see the exclusions)"
SYNCHRONOUS_CALLS = re.compile(r"^(?:cuda|hip|cu)Mem(?:cpy|set)(?!.*Async)")
KEPT, GRAPH, SYNCHRONOUS, NEGATIVE = 0, 1, 2, 3
EXCLUSION_RULES = {
    GRAPH: "the launch call is a graph launch: one call runs the whole graph, so a kernel's delay is the "
    "graph's earlier kernels",
    SYNCHRONOUS: "the launch call is a synchronous copy or set, or returned only after its device event "
    "ended: the call waited for the device",
    NEGATIVE: "the device event started before its launch call returned: the call returned late, or host "
    "and device clocks disagree",
}


@dataclasses.dataclass(frozen=True)
class Launches:
    """Device events in scope linked to their launch, with the launch's and the event's durations and
    why each is left out of the delay distribution (`excluded`: `KEPT` or the rule)."""

    device: np.ndarray  # event indices
    delay_ps: np.ndarray
    launch_ps: np.ndarray
    kernel_ps: np.ndarray
    excluded: np.ndarray  # int8 per launch

    @property
    def kept_delay_ps(self) -> np.ndarray:
        return self.delay_ps[self.excluded == KEPT]


def launches(events: HostEvents, lo: np.ndarray, hi: np.ndarray) -> Launches:
    trace = events.trace
    device = events.of_roles(*DEVICE_ROLES)
    device = device[(events.launch[device] >= 0) & in_windows(trace.ev_start_ps[device], lo, hi)]
    launch = events.launch[device]
    launch_end = trace.ev_start_ps[launch] + trace.ev_dur_ps[launch]
    delay = trace.ev_start_ps[device] - launch_end
    by_graph = ev.named(trace, launch, ev.GRAPH_LAUNCH_NAMES)
    waited = ev.named(trace, launch, SYNCHRONOUS_CALLS) | (events.end_ps[device] <= launch_end)
    excluded = np.full(device.shape[0], KEPT, np.int8)
    excluded[delay < 0] = NEGATIVE
    excluded[waited] = SYNCHRONOUS
    excluded[by_graph] = GRAPH
    return Launches(
        device=device,
        delay_ps=delay,
        launch_ps=trace.ev_dur_ps[launch],
        kernel_ps=trace.ev_dur_ps[device],
        excluded=excluded,
    )


def exclusions(found: Launches) -> list[OverviewLaunchExclusion]:
    """What was left out of the distribution, rule by rule, with its count in words."""
    out = []
    for kind, label in ((GRAPH, "graph"), (SYNCHRONOUS, "synchronous"), (NEGATIVE, "negative")):
        chosen = found.excluded == kind
        n = int(chosen.sum())
        if not n:
            continue
        launches_word = f"{n} launch{'es' if n != 1 else ''} excluded"
        item = OverviewLaunchExclusion(kind=label, count=n, rule=EXCLUSION_RULES[kind], text="")
        if kind == GRAPH:
            item.text = f"{launches_word}: device events run through graph launches"
        elif kind == SYNCHRONOUS:
            item.text = f"{launches_word}: synchronous calls (the call waited for the device)"
        else:
            most = float(-found.delay_ps[chosen].min()) / 1e3
            item.max_ns = most
            item.text = (
                f"{launches_word}: negative, the device started up to {format_duration(most)} before the call "
                "returned (host and device clocks disagree, or the call returned late)"
            )
        out.append(item)
    return out


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
