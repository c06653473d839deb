"""The records the shared analyses hand each other: request options, one host's input, and
one host's result (what the findings read)."""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.analysis import breakdown, launch_delay
from profscope.analysis import phases as phases_lib
from profscope.analysis import steps as steps_lib
from profscope.analysis.answers import OverviewHost
from profscope.analysis.events import HostEvents


@dataclasses.dataclass(frozen=True)
class Options:
    """What a request may change."""

    step_name: str | None = None
    batch_size: int | None = None
    group_by: str = "name"


@dataclasses.dataclass(frozen=True)
class HostInput:
    """One host of the timeline: its classified events, where its clock sits on the session
    timeline (`offset_ps`) and the timeline id of its first track."""

    events: HostEvents
    offset_ps: int
    track_base: int


@dataclasses.dataclass
class HostResult:
    """One host's figures, as the findings read them (ps, host-local)."""

    events: HostEvents
    offset_ps: int
    steps: steps_lib.Steps
    steady: np.ndarray  # bool per step
    layers: breakdown.Layers
    step_parts: list[dict[str, float]]
    scope_lo: np.ndarray
    scope_hi: np.ndarray
    scope: str
    scope_parts: dict[str, float]  # ns summed over the scope windows
    launches: launch_delay.Launches
    excluded: np.ndarray
    phases: phases_lib.Phases
    answer: OverviewHost

    @property
    def scope_wall_ns(self) -> float:
        return float((self.scope_hi - self.scope_lo).sum()) / 1e3

    def ns(self, ps: float) -> float:
        """A host-local instant in ns on the session timeline."""
        return (float(ps) + self.offset_ps) / 1e3
