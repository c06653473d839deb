"""What the step rows of every trace kind share (`kineto_steps.py`, `xplane_steps.py`): which step
window holds a time, and each step's device time, tiled per device so that the steps of one device
never count the same time twice.

Windows are the shared step analysis' (`analysis/steps.py`): sorted, disjoint [start, end).
Device time of the activity assigned to the windows, per device d, the windows with activity on d
in time order:
    end_N(d)   = max(last end of window N's activity on d, end_{N-1}(d))   (a running maximum)
    start_N(d) = end_{N-1}(d); the first window with activity on d: its first activity's start
    time_N     = Σ_d (end_N(d) − start_N(d))    over the devices with activity in window N
The windows tile each device's time from its first step's first activity to its last step's last
one, idle gaps included, as a Total row's device time (each device's first to last activity)
includes them: a device waiting for the host's next step counts that wait in the next step.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.analysis import intervals
from profscope.analysis import steps as steps_lib
from profscope.tools.roofline.xplane import Step
from profscope.units import format_duration

NO_ACTIVITY = (
    "steps that launched no device activity on some device are listed but left out of the average step "
    "(devices with activity in the step, of those with activity in any step)"
)


@dataclasses.dataclass(frozen=True)
class Tiled:
    """Per window its device time summed over devices, and per (window, device) its activity count."""

    time_ps: np.ndarray  # int64 (windows,)
    counts: np.ndarray  # int64 (windows, devices)


def window_of(start: np.ndarray, end: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Index of the window [start, end) containing each time of `at` (windows sorted and
    disjoint), -1 for none."""
    k = np.searchsorted(start, at, side="right") - 1
    inside = (k >= 0) & (at < end[np.maximum(k, 0)])
    return np.where(inside, k, -1)


def tiled(
    window: np.ndarray, device: np.ndarray, a_start: np.ndarray, a_end: np.ndarray, windows: int, devices: int
) -> Tiled:
    """The device time of each window (module docstring) from activities already given their
    window (≥ 0) and their device index (0 … devices − 1)."""
    counts = np.zeros((windows, max(devices, 1)), dtype=np.int64)
    time_ps = np.zeros(windows, dtype=np.int64)
    np.add.at(counts, (window, device), 1)
    for d in range(devices):
        mine = device == d
        first = np.full(windows, np.iinfo(np.int64).max)
        last = np.full(windows, np.iinfo(np.int64).min)
        np.minimum.at(first, window[mine], a_start[mine])
        np.maximum.at(last, window[mine], a_end[mine])
        active = np.flatnonzero(counts[:, d] > 0)
        if not active.shape[0]:
            continue
        ends = np.maximum.accumulate(last[active])
        begins = np.concatenate(([first[active[0]]], ends[:-1]))
        time_ps[active] += ends - begins
    return Tiled(time_ps, counts)


def steps_of(
    host: str, found: steps_lib.Steps, per_window: np.ndarray, numbers: np.ndarray, times: Tiled
) -> tuple[list[Step], list[str]]:
    """The steps (time order of their first window) of `found`'s windows, numbered `numbers` through
    `per_window` (windows of one number summed), with their tiled device times: a step's devices =
    the devices with activity in it; complete = activity on every device with activity in some step
    (a device whose only work lies outside every window, such as a few host-to-device copies after
    the last step, leaves no step incomplete); a step that is not is left out of the average step.
    And the warnings that say so."""
    steps_count = numbers.shape[0]
    step_time = np.bincount(per_window, weights=times.time_ps, minlength=steps_count)
    wall = np.bincount(per_window, weights=found.wall_ps, minlength=steps_count)
    covered = times.counts > 0  # (window, device): the step has activity there
    in_steps = covered.any(axis=0)
    devices = int(in_steps.sum())
    on_every = covered[:, in_steps].all(axis=1) & (devices > 0)
    complete = np.bincount(per_window, weights=~on_every, minlength=steps_count) == 0
    seen = np.zeros((steps_count, covered.shape[1]), bool)
    np.logical_or.at(seen, per_window, covered)
    in_time_order = np.argsort(np.unique(per_window, return_index=True)[1], kind="stable")
    steps = [
        Step(int(numbers[k]), int(step_time[k]), int(seen[k].sum()), bool(complete[k]), int(wall[k]))
        for k in in_time_order.tolist()
    ]
    warnings = []
    if steps_count < len(found):
        warnings.append(
            f"{host}: {len(found)} step windows carry {steps_count} step numbers; the "
            "windows of one number are summed as one step"
        )
    idle = [f"{s.number} ({s.devices} of {devices})" for s in steps if not s.complete]
    if idle:
        warnings.append(f"{host}: {NO_ACTIVITY}: step{'s' if len(idle) > 1 else ''} {', '.join(idle)}")
    return steps, warnings


def busy(start: np.ndarray, end: np.ndarray) -> tuple[int, int]:
    """(count, busy ps: the union of their [start, end)) of device activities."""
    merged = intervals.merge(start, end)
    return int(start.shape[0]), int((merged.end - merged.start).sum())


def apart(host: str, counted: tuple[int, int], what: tuple[str, str], why: str) -> str:
    """The warning that counts device activity kept out of every step; `what` names one and many."""
    activities, busy_ps = counted
    return (
        f"{host}: {activities} {what[activities != 1]} {why}, "
        f"{format_duration(busy_ps / 1e3)} busy, belong to no step: counted in the Total only"
    )
