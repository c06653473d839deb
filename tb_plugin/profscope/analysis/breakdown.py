"""Where the wall time of a window goes: an interval sweep over activity layers with a priority.

Each category is one layer: the union of its events' intervals (so nested or concurrent events of
one kind count once). At every instant of a window the first active layer in `CATEGORIES` order
takes the time; what no layer covers is idle/other. The parts of a window therefore add up to its
wall time exactly, and nothing concurrent is added up twice (XProf's `event_span` and the PyTorch
plugin's step breakdown work the same way, with their own category lists).

Priority, first wins: device compute > collective communication > memcpy host→device > device→host
> device→device > memset > compilation > kernel launch / runtime > input > host compute > idle.
Device activity first: while the device works the step is not waiting for the host. Exposed
communication is the communication no compute overlaps. On the host, runtime calls (launches and
synchronisations) win over the input and compute around them; input labels win over the ops they
contain (the data loader's `aten::stack` is input).

Which events count: see `events` (roles). Input counts only on the threads that hold the step
markers (the thread that waits for the batch; a background prefetch thread working while the step
computes is not the step waiting for input); with no host step markers, on every host thread. Host
compute leaves out the step markers themselves and the slices enclosing them (Python frames or
loops around the whole training loop would otherwise cover every step).

Steps (`step_layers`): device work counts in the step that launched it. A device event linked to
its launch call belongs to the step whose window holds the call's start, and only there: the
device still running step k's kernels after step k+1 began is not step k+1's device time (step
k+1's window shows what its host did meanwhile), and what step k launched past its own window
(`launched_device_ps` minus its device parts) is in no step's parts. Device events linked to no
launch (TPU, XPlanes without flows) count where they run. Launched outside every step (before the
first): in no step.

Kernel launch / runtime is observed where the host made runtime calls or the device was observed;
a CPU-only capture without them leaves it out of the parts ("not observed", never 0).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.analysis import events as ev
from profscope.analysis import intervals
from profscope.analysis.answers import OverviewCategory
from profscope.analysis.events import HostEvents
from profscope.analysis.steps import Steps
from profscope.model import arrays


@dataclasses.dataclass(frozen=True)
class Category:
    id: str
    label: str
    side: str
    counts: str
    roles: tuple[int, ...]


CATEGORIES: tuple[Category, ...] = (
    Category(
        "device_compute",
        "Device compute",
        "device",
        "kernels on the device's streams (TPU: XLA ops) other than collectives",
        (ev.ROLE_COMPUTE,),
    ),
    Category(
        "communication",
        "Collective communication",
        "device",
        "NCCL/RCCL kernels and XLA collectives, where no compute overlaps them",
        (ev.ROLE_COMM,),
    ),
    Category(
        "memcpy_h2d", "Memcpy host→device", "device", "host→device copies (TPU: infeed)", (ev.ROLE_H2D,)
    ),
    Category(
        "memcpy_d2h", "Memcpy device→host", "device", "device→host copies (TPU: outfeed)", (ev.ROLE_D2H,)
    ),
    Category(
        "memcpy_d2d",
        "Memcpy device→device",
        "device",
        "device→device and peer copies (and copies whose direction the name does not tell)",
        (ev.ROLE_D2D,),
    ),
    Category("memset", "Memset", "device", "device memsets", (ev.ROLE_MEMSET,)),
    Category(
        "compilation",
        "Compilation",
        "host",
        "host slices named compile/compiler/compilation (XLA, JAX, torch.compile), any thread",
        (ev.ROLE_COMPILE,),
    ),
    Category(
        "runtime",
        "Kernel launch / runtime",
        "host",
        "CUDA/HIP runtime and driver calls (launches, copies, synchronisations), any thread",
        (ev.ROLE_RUNTIME,),
    ),
    Category(
        "input",
        "Input",
        "host",
        "slices whose name matches the input labels, on the threads holding the step markers",
        (ev.ROLE_INPUT,),
    ),
    Category(
        "host_compute",
        "Host compute",
        "host",
        "other host slices (framework ops, record_function labels) except Python-stack frames and the "
        "step markers with what encloses them",
        (ev.ROLE_OP,),
    ),
    Category(
        "idle",
        "Idle / other",
        "none",
        "no traced activity: Python between ops, waits the profile does not show, the device idle with the "
        "host not traced",
        (),
    ),
)
CATEGORY_IDS = tuple(c.id for c in CATEGORIES)
DEVICE_CATEGORIES = frozenset(c.id for c in CATEGORIES if c.side == "device")
NO_DEVICE = "no device activity in the profile"


RUNTIME_INDEX = CATEGORY_IDS.index("runtime")
NO_RUNTIME = "no device runtime call (kernel launch, copy, synchronisation) in the profile"


@dataclasses.dataclass(frozen=True)
class Layers:
    """One host's activity layers (host-local ps), in `CATEGORIES` order without idle."""

    sets: list[intervals.Intervals]
    input_labels: list[str]

    @property
    def runtime_observed(self) -> bool:
        return bool(len(self.sets[RUNTIME_INDEX]))


def layers(events: HostEvents, steps: Steps) -> Layers:
    """The host's layers; input and host compute depend on the step markers (module docstring)."""
    trace = events.trace
    start = trace.ev_start_ps
    end = events.end_ps
    excluded = np.zeros(0, np.int64)
    step_threads = None
    if steps.markers.shape[0]:
        excluded = np.concatenate((steps.markers, ev.ancestors(events, steps.markers)))
        step_threads = arrays.unique(trace.ev_track[steps.markers])
    sets = []
    input_labels: list[str] = []
    for category in CATEGORIES[:-1]:
        chosen = events.of_roles(*category.roles)
        if category.id == "input" and step_threads is not None:
            on_step_thread = np.zeros(len(trace.tracks), dtype=bool)
            on_step_thread[step_threads] = True
            chosen = chosen[on_step_thread[trace.ev_track[chosen]]]
        if category.id == "input":
            input_labels = sorted({trace.strings[i] for i in arrays.unique(trace.ev_name[chosen]).tolist()})
        if category.id == "host_compute" and excluded.shape[0]:
            chosen = chosen[~events.mask(excluded)[chosen]]
        sets.append(intervals.merge(start[chosen], end[chosen]))
    return Layers(sets, input_labels)


def _step_of_launch(events: HostEvents, device: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For each linked device event of `device`, the window holding its launch call's start (-1: none)."""
    launch_start = events.trace.ev_start_ps[events.launch[device]]
    k = np.searchsorted(lo, launch_start, side="right") - 1
    inside = (k >= 0) & (launch_start < hi[np.maximum(k, 0)])
    return np.where(inside, k, -1)


def step_layers(events: HostEvents, host_layers: Layers, lo: np.ndarray, hi: np.ndarray) -> Layers:
    """The layers for the step windows [lo, hi): device events linked to a launch clipped to the
    window of their launch's step (module docstring), the host layers as they are."""
    trace = events.trace
    sets = list(host_layers.sets)
    for k, category in enumerate(CATEGORIES[:-1]):
        if category.side != "device":
            continue
        chosen = events.of_roles(*category.roles)
        linked = chosen[events.launch[chosen] >= 0]
        step = _step_of_launch(events, linked, lo, hi)
        linked, step = linked[step >= 0], step[step >= 0]
        unlinked = chosen[events.launch[chosen] < 0]
        start = np.concatenate((np.maximum(trace.ev_start_ps[linked], lo[step]), trace.ev_start_ps[unlinked]))
        end = np.concatenate((np.minimum(events.end_ps[linked], hi[step]), events.end_ps[unlinked]))
        sets[k] = intervals.merge(start, end)
    return Layers(sets, host_layers.input_labels)


def launched_device_ps(events: HostEvents, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """Per window, the union (ps) of the device work launched in it, wherever it ran; None when no
    device event is linked to its launch."""
    device = events.of_roles(*ev.DEVICE_ROLES)
    linked = device[events.launch[device] >= 0]
    if not linked.shape[0]:
        return None
    step = _step_of_launch(events, linked, lo, hi)
    linked, step = linked[step >= 0], step[step >= 0]
    order = arrays.stable_argsort(step)  # grouped by step once, each group in event order
    linked, step = linked[order], step[order]
    start, end = events.trace.ev_start_ps[linked], events.end_ps[linked]
    bounds = np.searchsorted(step, np.arange(lo.shape[0] + 1)).tolist()
    out = np.zeros(lo.shape[0], np.int64)
    for k in range(lo.shape[0]):
        out[k] = intervals.merge(start[bounds[k] : bounds[k + 1]], end[bounds[k] : bounds[k + 1]]).total()
    return out


def parts(
    host_layers: Layers, lo: np.ndarray, hi: np.ndarray, device_observed: bool
) -> list[dict[str, float]]:
    """Per window, ns per category id; device categories are left out when not observed, kernel
    launch / runtime too when neither the device nor a runtime call was."""
    table = intervals.partition(host_layers.sets, lo, hi)
    runtime_observed = device_observed or host_layers.runtime_observed
    out = []
    for w in range(lo.shape[0]):
        row = {}
        for k, category in enumerate(CATEGORIES):
            if category.side == "device" and not device_observed:
                continue
            if category.id == "runtime" and not runtime_observed:
                continue
            row[category.id] = float(table[k, w]) / 1e3
        out.append(row)
    return out


def categories(
    device_reasons: list[str | None], input_labels: list[str], runtime_observed: bool = True
) -> list[OverviewCategory]:
    """The category list of the answer; device ones observed when any host has device activity
    (`device_reasons[h]` is None for a host with device activity), kernel launch / runtime when a
    device or a runtime call was (`runtime_observed`: any host's `Layers.runtime_observed`)."""
    observed = any(r is None for r in device_reasons)
    runtime_observed = runtime_observed or observed
    reason = next((r for r in device_reasons if r is not None), NO_DEVICE)
    out = []
    for priority, category in enumerate(CATEGORIES):
        counts = category.counts
        if category.id == "input":
            labels = ", ".join(input_labels[:12]) or "none in this profile"
            counts = f"{counts} (pattern: {ev.INPUT_LABELS.pattern}); seen here: {labels}"
        item = OverviewCategory(
            id=category.id,
            label=category.label,
            priority=priority,
            side=category.side,
            counts=counts,
            observed=observed or category.side != "device",
        )
        if category.side == "device" and not observed:
            item.reason = reason
        if category.id == "runtime" and not runtime_observed:
            item.observed = False
            item.reason = NO_RUNTIME
        out.append(item)
    return out
