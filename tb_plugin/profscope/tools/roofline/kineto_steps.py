"""The steps of a PyTorch profiler (Kineto) trace for the roofline: which op occurrences and which
device time make each step, so a step row has the program row's formulas (`rows.py`).

Steps are those the overview finds (`analysis/steps.py`, from the classified events): the
`ProfilerStep#N` markers of the PyTorch profiler, else host annotations with a `step_num` arg.

- Ops. An op occurrence belongs to step N when its start lies inside a marker of step N,
  [marker start, marker end), on any host thread (the autograd engine runs backward ops on its
  own thread, inside the main thread's marker in time). Its FLOPs, bytes and device time are those
  of the GPU activities it and the ops nested in it launched (`kineto.py`), wherever the GPU ran
  them: a GPU that lags the host runs step N's kernels while the host is in step N+1, and they
  still count in step N. Ops outside every marker count in the Total only.
- Device activity. A kernel, memcpy or memset belongs to the step whose marker contains the start
  of its launch (the runtime call its flow comes from).
- Step time, per GPU g, the steps in marker order:
      end_N(g)   = max(last end of step N's activity on g, end_{N-1}(g))   (a running maximum)
      start_N(g) = end of the previous step with activity on g; the first: its first activity's start
      time_N     = Σ_g (end_N(g) − start_N(g))    over the GPUs with activity in step N
  The steps tile each GPU's time from the first step's first activity to the last step's last one,
  idle gaps included, as the Total's device time includes them (the Total spans each GPU's first
  to last event): a GPU waiting for the host's next step (its input, its launches) counts that wait
  in the next step. So Σ step times ≤ the Total's device time, and the step rows' FLOPs and bytes
  sum to the Total's less those of the ops outside every step.
- devices = the GPUs with activity in the step; a step is complete when it has activity on every
  GPU with activity in the capture (as an XPlane step is complete when every device has it). A
  step without device activity (the step the last `prof.step()` opens just before the profiler
  stops) is listed, with no time, and left out of the average step.
- Markers of one number (a file stitched from several captures) are one step: their ops and times
  are summed, and a warning says so.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.analysis import events as overview_events
from profscope.analysis import steps as steps_lib
from profscope.tools.roofline.kineto import KinetoOps
from profscope.tools.roofline.model import OpCost
from profscope.tools.roofline.xplane import Step

NO_ACTIVITY = (
    "steps that launched no device activity on some GPU are listed but left out of the average step "
    "(GPUs with activity in the step, of those with activity in the capture)"
)


@dataclasses.dataclass(frozen=True)
class KinetoSteps:
    """A host's steps (time order of their first marker), the op rows of each step by number,
    where the steps come from, and what the answer should say about them."""

    steps: list[Step]
    costs: dict[int, list[OpCost]]
    source: str
    warnings: list[str]


def split(events: overview_events.HostEvents, ops: KinetoOps) -> KinetoSteps:
    """The steps of `events`' trace and the rows of `ops` in each (see the module docstring)."""
    found = steps_lib.find(events, None)
    if not len(found) or not found.markers.shape[0]:
        return KinetoSteps([], {}, found.source, [])
    trace = events.trace
    start = found.start_ps
    end = trace.ev_start_ps[found.markers] + trace.ev_dur_ps[found.markers]
    numbers, per_marker = np.unique(found.numbers, return_inverse=True)
    per_marker = per_marker.ravel()
    marker = _marker_of(start, end, trace.ev_start_ps[ops.ops])
    bucket = np.where(marker >= 0, per_marker[np.maximum(marker, 0)], -1)
    costs = ops.costs(bucket, numbers.shape[0])
    time_ps, devices, gpus = _device_times(events, start, end)
    step_time = np.bincount(per_marker, weights=time_ps, minlength=numbers.shape[0])
    covered = devices > 0  # (marker, GPU): the step has activity there
    on_every = covered.all(axis=1) & (gpus > 0)
    complete = np.bincount(per_marker, weights=~on_every, minlength=numbers.shape[0]) == 0
    seen = np.zeros((numbers.shape[0], covered.shape[1]), bool)
    np.logical_or.at(seen, per_marker, covered)
    in_time_order = np.argsort(np.unique(per_marker, return_index=True)[1], kind="stable")
    steps = [
        Step(int(numbers[k]), int(step_time[k]), int(seen[k].sum()), bool(complete[k]))
        for k in in_time_order.tolist()
    ]
    warnings = []
    if numbers.shape[0] < start.shape[0]:
        warnings.append(
            f"{events.name}: {start.shape[0]} step markers carry {numbers.shape[0]} step numbers; the "
            "markers of one number are summed as one step"
        )
    idle = [f"{s.number} ({s.devices} of {gpus})" for s in steps if not s.complete]
    if idle:
        warnings.append(f"{events.name}: {NO_ACTIVITY}: step{'s' if len(idle) > 1 else ''} {', '.join(idle)}")
    by_number = {int(numbers[k]): costs[k] for k in range(numbers.shape[0])}
    return KinetoSteps(steps, by_number, found.source, warnings)


def _marker_of(start: np.ndarray, end: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Index of the marker [start, end) containing each time of `at` (markers sorted and disjoint),
    -1 for none."""
    k = np.searchsorted(start, at, side="right") - 1
    inside = (k >= 0) & (at < end[np.maximum(k, 0)])
    return np.where(inside, k, -1)


def _device_times(
    events: overview_events.HostEvents, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """Per marker the device time of its step (summed over GPUs), per (marker, GPU) the count of
    its activities, and the number of GPUs with activity in the capture."""
    trace = events.trace
    device = events.of_roles(*overview_events.DEVICE_ROLES)
    section_of_track = np.array([t.section for t in trace.tracks], dtype=np.int64)
    sections, gpu = np.unique(section_of_track[trace.ev_track[device]], return_inverse=True)
    gpus = sections.shape[0]
    markers = start.shape[0]
    counts = np.zeros((markers, max(gpus, 1)), dtype=np.int64)
    time_ps = np.zeros(markers, dtype=np.int64)
    launched = events.launch[device] >= 0
    device, gpu = device[launched], gpu.ravel()[launched]
    marker = _marker_of(start, end, trace.ev_start_ps[events.launch[device]])
    inside = marker >= 0
    device, gpu, marker = device[inside], gpu[inside], marker[inside]
    np.add.at(counts, (marker, gpu), 1)
    a_start = trace.ev_start_ps[device]
    a_end = a_start + trace.ev_dur_ps[device]
    for g in range(gpus):
        mine = gpu == g
        first = np.full(markers, np.iinfo(np.int64).max)
        last = np.full(markers, np.iinfo(np.int64).min)
        np.minimum.at(first, marker[mine], a_start[mine])
        np.maximum.at(last, marker[mine], a_end[mine])
        active = np.flatnonzero(counts[:, g] > 0)
        if not active.shape[0]:
            continue
        ends = np.maximum.accumulate(last[active])
        begins = np.concatenate(([first[active[0]]], ends[:-1]))
        time_ps[active] += ends - begins
    return time_ps, counts, gpus
