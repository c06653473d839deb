"""The steps of a PyTorch profiler (Kineto) trace for the roofline: which op occurrences and which
device time make each step, so a step row has the program row's formulas (`rows.py`).

Steps are the host's steps of the shared step analysis (`analysis/steps.py` `find`), the very steps
the Overview shows: markers of any name (`ProfilerStep#N`, step annotations, …), else steps
inferred from what repeats. Each has a window [start, end): its marker's start to the later of the
marker's end and the end of the device work launched inside it, capped at the next step's start,
so windows never overlap. wall time = end − start, the Overview's step time.

- Ops. An op occurrence belongs to the step whose window contains its start, on any host thread
  (the autograd engine runs backward ops on its own thread, inside the main thread's marker). Its
  FLOPs, bytes and device time are those of the GPU activities it and the ops nested in it
  launched (`kineto.py`), wherever the GPU ran them. Ops outside every window count in the Total
  only.
- Device activity. A kernel, memcpy or memset belongs to the step whose window contains the start
  of its launch (`HostEvents.launch`: the runtime call its flow comes from), not to the step whose
  window it runs in: a GPU that lags the host runs step N's kernels while the host is in step N+1.
  Activity launched before the first step (the tail of the iteration before the capture's first
  marker), after the last one, or with no launch link belongs to no step: it is kept apart, in the
  Total only, and a warning counts it with its busy time (union of its [start, end)).
- Device time, per GPU g, the steps in window order (`step_windows.tiled`):
      end_N(g)   = max(last end of step N's activity on g, end_{N-1}(g))   (a running maximum)
      start_N(g) = end of the previous step with activity on g; the first: its first activity's start
      time_N     = Σ_g (end_N(g) − start_N(g))    over the GPUs with activity in step N
  The steps tile each GPU's time from the first step's first activity to the last step's last one,
  idle gaps included, as the Total's device time includes them (the Total spans each GPU's first
  to last event): a GPU waiting for the host's next step counts that wait in the next step. So
  Σ step times ≤ the Total's device time, and the step rows' FLOPs and bytes sum to the Total's
  less those of the ops outside every window.
- devices = the GPUs with activity in the step; a step is complete when it has activity on every
  GPU with activity in some step (`step_windows.steps_of`, as for an XPlane's steps). A
  step without device activity (the step the last `prof.step()` opens just before the profiler
  stops) is listed, with no device time, and left out of the average step.
- Windows of one number (a file stitched from several captures) are one step: their ops, device
  and wall times are summed, and a warning says so.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.analysis import events as overview_events
from profscope.analysis import steps as steps_lib
from profscope.tools.roofline import step_windows
from profscope.tools.roofline.kineto import KinetoOps
from profscope.tools.roofline.model import OpCost
from profscope.tools.roofline.xplane import Step


@dataclasses.dataclass(frozen=True)
class KinetoSteps:
    """A host's steps (time order of their first window), the op rows of each step by number,
    where the steps come from, and what the answer should say about them."""

    steps: list[Step]
    costs: dict[int, list[OpCost]]
    source: str
    warnings: list[str]


@dataclasses.dataclass(frozen=True)
class _DeviceTimes:
    """Per window its device time (summed over GPUs) and per (window, GPU) its activity count, the
    GPUs with activity in the capture, and the activity that belongs to no step."""

    tiled: step_windows.Tiled
    gpus: int
    before_first: tuple[int, int]  # (activities, busy ps) launched before the first step
    after_last: tuple[int, int]  # … launched after the last step's window
    unlinked: tuple[int, int]  # … with no launch link


def split(events: overview_events.HostEvents, ops: KinetoOps) -> KinetoSteps:
    """The steps of `events`' trace and the rows of `ops` in each (see the module docstring)."""
    found = steps_lib.find(events, None)
    if not len(found):
        return KinetoSteps([], {}, found.source, [])
    trace = events.trace
    start, end = found.start_ps, found.end_ps
    numbers, per_window = np.unique(found.numbers, return_inverse=True)
    per_window = per_window.ravel()
    window = step_windows.window_of(start, end, trace.ev_start_ps[ops.ops])
    bucket = np.where(window >= 0, per_window[np.maximum(window, 0)], -1)
    costs = ops.costs(bucket, numbers.shape[0])
    device = _device_times(events, start, end)
    steps, warnings = step_windows.steps_of(events.name, found, per_window, numbers, device.tiled)
    warnings += [
        step_windows.apart(events.name, counted, ("device activity", "device activities"), why)
        for counted, why in (
            (device.before_first, "launched before the first step (the tail of the iteration before it)"),
            (device.after_last, "launched after the last step"),
            (device.unlinked, "with no launch link"),
        )
        if counted[0]
    ]
    by_number = {int(numbers[k]): costs[k] for k in range(numbers.shape[0])}
    return KinetoSteps(steps, by_number, found.source, warnings)


def _busy(trace, events: np.ndarray) -> tuple[int, int]:
    """(count, busy ps) of device events."""
    start = trace.ev_start_ps[events]
    return step_windows.busy(start, start + trace.ev_dur_ps[events])


def _device_times(events: overview_events.HostEvents, start: np.ndarray, end: np.ndarray) -> _DeviceTimes:
    """The steps' device times and activity counts (module docstring), and what is kept apart."""
    trace = events.trace
    device = events.of_roles(*overview_events.DEVICE_ROLES)
    section_of_track = np.array([t.section for t in trace.tracks], dtype=np.int64)
    sections, gpu = np.unique(section_of_track[trace.ev_track[device]], return_inverse=True)
    gpus = sections.shape[0]
    windows = start.shape[0]
    linked = events.launch[device] >= 0
    unlinked = _busy(trace, device[~linked])
    device, gpu = device[linked], gpu.ravel()[linked]
    launched_at = trace.ev_start_ps[events.launch[device]]
    window = step_windows.window_of(start, end, launched_at)
    outside = window < 0
    before = outside & (launched_at < start[0])
    before_first, after_last = _busy(trace, device[before]), _busy(trace, device[outside & ~before])
    inside = ~outside
    device, gpu, window = device[inside], gpu[inside], window[inside]
    a_start = trace.ev_start_ps[device]
    tiled = step_windows.tiled(window, gpu, a_start, a_start + trace.ev_dur_ps[device], windows, gpus)
    return _DeviceTimes(tiled, gpus, before_first, after_last, unlinked)
