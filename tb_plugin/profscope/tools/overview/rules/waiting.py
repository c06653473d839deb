"""The phase the step waits in: what `input_bound` and `host_wait` read (not a rule itself).

A phase is one of the user's (or the framework's) labels directly under the step marker
(`analysis.phases`); its slices in each step are the ones `analysis.phases` timed
(`Phases.slice_ids`), not found again here, so the waiting time is read from the same slices as
the phase's wall time. Per steady step `s` and phase `X`, its waiting time is the part of `X`'s wall
time in which nothing drives the model:
- with a device: `X` minus the time in it when the device is busy, a runtime call runs on any host
  thread, or a host op that launches device work runs (an op enclosing a runtime call: the forward
  on the step's thread, the backward on the autograd thread; a device idle while the host launches
  is `launch_bound`'s, not a wait);
- on a CPU-only capture: `X` minus the time a model op runs in it, the larger of the phase's
  `model_ops_ps` and the union of the traced slices nested in `X` on the step's thread (framework
  ops, runtime calls, TraceMes; Python frames and `record_function` labels are not work).
The phase with the most waiting time over the steady steps is the one the step waits in; it is
reported when that time reaches, of the steady steps' wall time:
- `MIN_DEVICE_WAIT_SHARE` (a quarter) with a device: an idle device that nothing drives is a
  direct cost;
- `MIN_WAIT_SHARE` (half) on a CPU-only capture, where "no model op" is a weaker sign (the model's
  untraced work reads as none: a PyTorch/XLA phase that records the lazy graph waits ≈ 28 %, a JAX
  `device_put` ≈ 27 %); the input-bound and waiting jobs sit at 70–92 %.
Cost: the waiting time, per steady step and as a share of the steady steps' wall time.

What runs in `X` decides which finding it is, never its name (labels come in any language): when
framework ops run in it that drive no model work (tensors made from Python data, a collate, a
transform, a copy) it reads or builds the batch (`input_bound`); when nothing traced runs in it the
thread sleeps, blocks on I/O or a peer, or runs untraced Python (`host_wait`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from profscope.analysis import intervals
from profscope.analysis.events import DEVICE_ROLES, ROLE_PYTHON, ROLE_RUNTIME, ancestors
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import (
    cost_words,
    costed,
    count,
    duration,
    is_label,
    scope_link,
    scope_words,
    share,
)
from profscope.units import format_duration

if TYPE_CHECKING:
    from profscope.analysis.results import HostResult

MIN_WAIT_SHARE = 0.5
MIN_DEVICE_WAIT_SHARE = 0.25


@dataclasses.dataclass(frozen=True)
class Wait:
    """The phase a host's steady steps wait in, with its figures (ps per steady step)."""

    name: str
    phase_ps: np.ndarray
    waiting_ps: np.ndarray
    wall_ps: np.ndarray
    ops: int  # traced slices nested in the phase over the steady steps
    ops_ps: np.ndarray  # time they cover, per steady step
    device: bool

    @property
    def share(self) -> float:
        """Waiting time ÷ wall time over the steady steps."""
        return float(self.waiting_ps.sum() / self.wall_ps.sum())

    @property
    def builds_input(self) -> bool:
        """Framework ops run in the phase (driving no model work): it makes the batch."""
        return self.ops > 0


def find(host: HostResult) -> Wait | None:
    """The phase the host's steady steps wait in most, when its waiting time reaches the
    threshold (module docstring); None without phases or below it."""
    phases = host.phases
    steady = np.flatnonzero(host.steady)
    if not len(phases) or not steady.shape[0] or not host.steps.markers.shape[0]:
        return None
    slices = [phases.slice_ids[s] for s in steady.tolist()]  # per steady step, per phase
    phase_ids = np.concatenate([c for chosen in slices for c in chosen] or [np.zeros(0, np.int64)])
    thread_work = _thread_work(host, phase_ids)
    work = _device_work(host, phase_ids) if phases.has_device else _merged(host, thread_work)
    lo, hi = host.steps.start_ps[steady], host.steps.end_ps[steady]
    wall = (hi - lo).astype(np.float64)
    best = None
    for k, name in enumerate(phases.names):
        phase = _merged(host, np.concatenate([chosen[k] for chosen in slices]))
        per = phases.per_step_ps[steady, k].astype(np.float64)
        done = intervals.covered(intervals.intersect(phase, work), lo, hi).astype(np.float64)
        if not phases.has_device:
            done = np.maximum(done, phases.model_ops_ps[steady, k])
        waiting = np.maximum(per - done, 0.0)
        if best is None or waiting.sum() > best.waiting_ps.sum():
            ops, ops_ps = _nested(host, thread_work, phase, lo, hi)
            best = Wait(name, per, waiting, wall, ops, ops_ps, phases.has_device)
    if best is None or wall.sum() <= 0 or best.share < threshold(best.device):
        return None
    return best


def threshold(device: bool) -> float:
    """The waiting share a phase must reach (module docstring)."""
    return MIN_DEVICE_WAIT_SHARE if device else MIN_WAIT_SHARE


def _merged(host: HostResult, chosen: np.ndarray) -> intervals.Intervals:
    return intervals.merge(host.events.trace.ev_start_ps[chosen], host.events.end_ps[chosen])


def _thread_work(host: HostResult, phase_ids: np.ndarray) -> np.ndarray:
    """The traced slices on the step's thread that are work: framework ops, runtime calls,
    TraceMes; not Python frames, labels, the step markers (and what encloses them) nor the phases."""
    events = host.events
    trace = events.trace
    track = int(trace.ev_track[host.steps.markers[0]])
    lo, hi = np.searchsorted(trace.ev_track, [track, track + 1])  # a track's events lie together
    chosen = lo + np.flatnonzero(
        (trace.ev_dur_ps[lo:hi] > 0)
        & (events.role[lo:hi] != ROLE_PYTHON)
        & ~is_label(trace)[trace.ev_cat[lo:hi]]
    )
    return chosen[~events.mask(np.concatenate((host.excluded, phase_ids)))[chosen]]


def _device_work(host: HostResult, phase_ids: np.ndarray) -> intervals.Intervals:
    """What keeps a device capture's step going: device activity, runtime calls on any host thread,
    and the host slices that enclose a runtime call (the ops that drive the device: the forward on the
    step's thread, the backward on the autograd thread), labels, markers and phases left out."""
    events = host.events
    trace = events.trace
    device = events.of_roles(*DEVICE_ROLES)
    runtime = events.of_roles(ROLE_RUNTIME)
    drivers = ancestors(events, runtime)
    drivers = drivers[(events.role[drivers] != ROLE_PYTHON) & ~is_label(trace)[trace.ev_cat[drivers]]]
    drivers = drivers[~events.mask(np.concatenate((host.excluded, phase_ids)))[drivers]]
    return _merged(host, np.concatenate((device, runtime, drivers)))


def _nested(
    host: HostResult, work: np.ndarray, phase: intervals.Intervals, lo: np.ndarray, hi: np.ndarray
) -> tuple[int, np.ndarray]:
    """Of the step thread's work slices, those inside the phase: how many over the steady steps
    (windows `lo`–`hi`), and their union's time per step."""
    start, end = host.events.trace.ev_start_ps[work], host.events.end_ps[work]
    if not len(phase):
        return 0, np.zeros(lo.shape[0])
    k = np.maximum(np.searchsorted(phase.start, start, side="right") - 1, 0)
    inside = (start >= phase.start[k]) & (end <= phase.end[k])
    nested = intervals.merge(start[inside], end[inside])
    return int(inside.sum()), intervals.covered(nested, lo, hi).astype(np.float64)


def finding(host: HostResult, wait: Wait, kind: str, hypothesis: str) -> OverviewFinding:
    """The "step waits in `X`" finding of either kind: the phase's share and median, what the
    step does meanwhile, the cost, and the controlled check (the step with `X` done beforehand)."""
    steps = wait.wall_ps.shape[0]
    phase_share = float(wait.phase_ps.sum() / wait.wall_ps.sum())
    meanwhile = "the device is idle" if wait.device else "no model op runs"
    work = (
        f"{wait.ops:,} framework ops run in it ({format_duration(float(wait.ops_ps.sum()) / steps / 1e3)} per step)"
        if wait.ops
        else "no framework op runs in it"
    )
    cost_ps = float(wait.waiting_ps.sum())
    out = OverviewFinding(
        kind=kind,
        host=host.events.name,
        title=f"The step waits in `{wait.name}`",
        observation=(
            f"`{wait.name}` takes {phase_share * 100:.0f} % of the wall time of {scope_words(host)} (median "
            f"{format_duration(float(np.median(wait.phase_ps)) / 1e3)} of "
            f"{format_duration(float(np.median(wait.wall_ps)) / 1e3)} per step), and in it {meanwhile} "
            f"for {wait.share * 100:.0f} % of the step time; {work}. It costs {cost_words(host, cost_ps)}."
        ),
        hypothesis=hypothesis,
        next_check=(
            f"Profile the same steps with `{wait.name}`'s result prepared in advance (its output computed once "
            "before the loop, or made by a background worker and handed over ready) and compare the step time "
            f"with the {format_duration(float(np.median(wait.wall_ps)) / 1e3)} median here."
        ),
        rule=(
            f"a phase's time without {'device work' if wait.device else 'model ops'} ≥ "
            f"{threshold(wait.device):.0%} of the steady steps' wall time"
        ),
        evidence=[
            share(f"`{wait.name}` share of wall time", phase_share),
            duration(f"`{wait.name}` median per step", float(np.median(wait.phase_ps)) / 1e3),
            share("waiting share of wall time", wait.share),
            duration("median step", float(np.median(wait.wall_ps)) / 1e3),
            count("framework ops in it", wait.ops),
        ],
        link=scope_link(host, wait.name),
    )
    return costed(out, host, cost_ps)
