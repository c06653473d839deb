"""The steps of an XPlane for the roofline: which executions of device ops (`xplane.Executions`) and
which device time make each step, so a step row has the program row's formulas (`rows.py`).

Steps are the host's steps of the shared step analysis (`analysis/steps.py` `find`), the steps
the Overview shows: root step markers (JAX `StepTraceAnnotation`, TensorFlow `Trace(..., _r=1)`),
the devices' Steps line, other numbered markers, else steps inferred from what repeats (a TPU
inference loop: one step per execution of its jitted program, `analysis/step_inference.py`).
Each step has a window [start, end) on the timeline; wall time = end − start, the Overview's step
time.

- Executions. An execution belongs to the step whose window contains the start of its launch (the
  host call its first kernel's flow comes from), as the Overview's breakdown assigns device work
  (`analysis/breakdown.py`): a GPU that lags the host runs step N's kernels while the host is in
  step N+1. An execution linked to no launch (TPU ops, XPlanes without flows) belongs to the window
  containing its own start. Executions outside every window (launched before the first step: the
  tail of the iteration before the capture; after the last; between two windows) count in the Total only, and a
  warning counts them with their busy time (union of their [start, end)).
- Device time: `step_windows.tiled` per device (TPU core, GPU) over the executions' [start, end)
  on the timeline (a GPU execution ends with its last kernel), so the steps tile each device's time
  from the first step's first execution to the last step's last one, idle gaps included.
- devices = the devices with executions in the step; complete = executions on every device with
  executions in some step (`step_windows.steps_of`; else listed, left out of the average step, and
  a warning says so).
- Windows of one number are one step: their executions, device and wall times summed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.analysis import events as overview_events
from profscope.analysis import steps as steps_lib
from profscope.tools.roofline import step_windows
from profscope.tools.roofline.xplane import DeviceActivity, Step

EXECUTIONS = ("device op execution", "device op executions")


@dataclasses.dataclass(frozen=True)
class XPlaneSteps:
    """A host's steps (time order of their first window), the step number of each execution (-1:
    none), where the steps come from, and what the answer should say about them."""

    steps: list[Step]
    step_of: np.ndarray
    source: str
    warnings: list[str]


def split(events: overview_events.HostEvents, activity: DeviceActivity) -> XPlaneSteps:
    """The steps of `events`' trace and the step of each execution of `activity` (module docstring)."""
    ex = activity.executions
    found = steps_lib.find(events, None)
    if not len(found):
        return XPlaneSteps([], np.full(len(ex), -1, np.int64), found.source, [])
    trace = events.trace
    numbers, per_window = np.unique(found.numbers, return_inverse=True)
    per_window = per_window.ravel()
    launch = events.launch[ex.event]
    at = np.where(launch >= 0, trace.ev_start_ps[np.maximum(launch, 0)], ex.start_ps)
    window = step_windows.window_of(found.start_ps, found.end_ps, at)
    inside = window >= 0
    sections, device = np.unique(ex.section, return_inverse=True)
    device = device.ravel()
    times = step_windows.tiled(
        window[inside], device[inside], ex.start_ps[inside], ex.end_ps[inside], len(found), sections.shape[0]
    )
    steps, warnings = step_windows.steps_of(events.name, found, per_window, numbers, times)
    before, after = ~inside & (at < found.start_ps[0]), ~inside & (at >= found.end_ps[-1])
    for outside, why in (
        (before, "launched before the first step (the tail of the iteration before it)"),
        (after, "launched after the last step"),
        (~inside & ~before & ~after, "launched between step windows"),
    ):
        if outside.any():
            counted = step_windows.busy(ex.start_ps[outside], ex.end_ps[outside])
            warnings.append(step_windows.apart(events.name, counted, EXECUTIONS, why))
    step_of = np.where(inside, numbers[per_window[np.maximum(window, 0)]], -1)
    return XPlaneSteps(steps, step_of, found.source, warnings)
