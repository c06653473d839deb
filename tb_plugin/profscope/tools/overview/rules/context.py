"""What every finding rule reads (`Context`) and the helpers that write its evidence and links."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from profscope.analysis import intervals
from profscope.analysis.answers import OverviewLink, OverviewTables
from profscope.analysis.device_idle import in_windows
from profscope.analysis.events import string_table
from profscope.analysis.rank_answers import OverviewRanks
from profscope.tools.overview.answers import OverviewEvidence, OverviewFinding
from profscope.units import format_count, format_duration

if TYPE_CHECKING:
    from profscope.analysis.results import HostResult
    from profscope.model.columns import Trace

T = TypeVar("T")

LABEL_CATEGORIES = frozenset({"user_annotation", "gpu_user_annotation"})
"""Kineto categories of labels (`record_function` ranges): they mark time, no work runs in them."""


@dataclasses.dataclass(frozen=True)
class Context:
    """What the rules read: each host's result, the merged tables, the request's host names, the
    hosts' PyTorch/XLA logs (`xla_logs()` opens them; None when the hosts have none), and the ranks
    compared through their collectives (`analysis.collectives.ranks`; None for one host)."""

    hosts: list[HostResult]
    tables: OverviewTables
    host_names: list[str]
    xla_logs: Callable[[], Any] | None = None
    ranks: OverviewRanks | None = None
    _derived: dict[tuple[str, int], Any] = dataclasses.field(default_factory=dict, repr=False)

    def derived(self, name: str, host: HostResult, compute: Callable[[HostResult], T]) -> T:
        """What several rules read of one host (`name`: what `compute` gives), computed once per
        answer: the input-bound and host-wait rules both read the phase a host waits in."""
        key = (name, id(host))
        if key not in self._derived:
            self._derived[key] = compute(host)
        return self._derived[key]


def scope_link(host: HostResult, search: str | None = None) -> OverviewLink:
    """The host's scope as a time range on the session timeline, with an optional search text."""
    link = OverviewLink(
        start_ns=host.ns(float(host.scope_lo.min())),
        end_ns=host.ns(float(host.scope_hi.max())),
        host=host.events.name,
    )
    if search:
        link.search = search
    return link


def share(label: str, value: float) -> OverviewEvidence:
    return OverviewEvidence(label=label, value=float(value), text=f"{value * 100:.1f} %")


def duration(label: str, ns: float) -> OverviewEvidence:
    return OverviewEvidence(label=label, value=float(ns), text=format_duration(float(ns)))


def count(label: str, n: float) -> OverviewEvidence:
    return OverviewEvidence(label=label, value=float(n), text=format_count(n))


def steady_steps(host: HostResult) -> int:
    """How many steady steps the host's scope holds (0 when it has no steps: the capture)."""
    return int(host.steady.sum()) if len(host.steps) else 0


def per_step(host: HostResult) -> int:
    """The divisor that turns scope totals into per-step figures (1 for a capture)."""
    return max(steady_steps(host), 1)


def scope_words(host: HostResult) -> str:
    """How texts name the scope: "the steady steps (3–9)" or "the capture"."""
    return f"the {host.scope}" if len(host.steps) else "the capture (no step markers)"


def in_scope(host: HostResult, indices: np.ndarray) -> np.ndarray:
    """The events of `indices` that start inside the host's scope windows."""
    starts = host.events.trace.ev_start_ps[indices]
    return indices[in_windows(starts, host.scope_lo, host.scope_hi)]


def scope_share(host: HostResult, indices: np.ndarray) -> float:
    """The union of the events' time inside the scope, as a share of the scope's wall time."""
    trace = host.events.trace
    merged = intervals.merge(trace.ev_start_ps[indices], host.events.end_ps[indices])
    wall = float((host.scope_hi - host.scope_lo).sum())
    return float(intervals.covered(merged, host.scope_lo, host.scope_hi).sum()) / wall if wall > 0 else 0.0


def is_label(trace: Trace) -> np.ndarray:
    """A bool per string id: a label category (index with `ev_cat`)."""
    return string_table(trace.strings, LABEL_CATEGORIES.__contains__)


def costed(finding: OverviewFinding, host: HostResult, cost_ps: float) -> OverviewFinding:
    """The finding with its cost: `cost_ps`, the time it accounts for over the scope, per steady
    step (the capture without steps) and as a share of the scope's wall time."""
    wall_ps = float((host.scope_hi - host.scope_lo).sum())
    finding.cost_ns = cost_ps / 1e3 / per_step(host)
    finding.cost_share = cost_ps / wall_ps if wall_ps > 0 else 0.0
    return finding


def cost_words(host: HostResult, cost_ps: float) -> str:
    """The cost as the observation states it: "≈ 14 ms per step (81 % of the wall time)"."""
    wall_ps = float((host.scope_hi - host.scope_lo).sum())
    unit = "per step" if len(host.steps) else "over the capture"
    share = cost_ps / wall_ps if wall_ps > 0 else 0.0
    return (
        f"≈ {format_duration(cost_ps / 1e3 / per_step(host))} {unit} ({share * 100:.0f} % of the wall time)"
    )
