"""Phases of a step: the labels directly under each step marker, timed per step.

A phase is a phase by its position, never by its words (labels can be in any language):
- Candidates are the host slices on the step marker's own thread/line that start inside the marker
  (by time, not by `ev_depth`: the XPlane reader nests a JAX step annotation under the Python-tracer
  frame it partially overlaps, and its phases beside it), Python-tracer frames left out (an
  annotation inside a frame of the user's loop is still directly under the step). "Directly under"
  = not inside another candidate.
- Your labels: among those, the annotations. Kineto: category `user_annotation` (`record_function`).
  XPlane (TraceMes carry no category): a TraceMe with no stats (framework TraceMes that run work
  carry them: `tf_function_call`, `eager_op`, `hlo_op`…) whose name appears in the whole capture
  only directly under step markers, at most once per step (framework internals recur inside a step
  or elsewhere: `Wait for usage holds`, `PjitFunction(…)` nested in itself, `TFE_DeleteTensorHandle`).
- Framework phases: labels the framework writes itself (`FRAMEWORK_LABELS`, by name, so that older
  Kineto, which writes labels and ops alike as `Operator`, has them too: torch.optim
  `Optimizer.step#…`, DataLoader `enumerate(DataLoader)#…`, DDP `DistributedDataParallel.forward`,
  Lightning `[pl]…`, PyTorch/XLA `StepMarker`) are phases too, and the autograd engine's top-level calls
  (`autograd::engine::evaluate_function: …`, the backward pass) form one phase. `source` says
  whether the phases are your labels, the framework's, or both. No annotation: no phases.
- Several phases of one name in a step are told apart by order: `unknown`, `unknown (2)`… (torch
  writes every non-ASCII `record_function` name as `unknown`). `names` are in the order they first
  appear in a step.

Per step and phase (ps): wall time = the union of the phase's slices clipped to the step window;
device busy = the union of device activity inside those slices; model ops = the union of framework
op events inside them (Kineto `cpu_op`, or `Operator` in older Kineto, on the step's thread; XPlane
events with an `hlo_op` or `long_name` stat, XLA and TensorFlow ops, on any host line, where XLA
and TF run them), the labels and step markers themselves left out. Only the
step's thread for Kineto, so that a prefetch thread's ops do not hide a phase that waits; on GPU
PyTorch runs backward on its own autograd thread, whose ops are then not counted (the device busy
figure shows that work). The step's time under no phase is `outside_ps`, "(outside your phases)".
"""

from __future__ import annotations

import collections
import dataclasses
import re

import numpy as np

from profscope.analysis import intervals
from profscope.analysis.answers import OverviewPhase, OverviewPhases
from profscope.analysis.events import DEVICE_ROLES, ROLE_PYTHON, HostEvents, ancestors, args_of
from profscope.analysis.steps import MIN_DISTRIBUTION_STEPS, Steps
from profscope.formats import registry

OUTSIDE = "(outside your phases)"
ORDINAL = re.compile(r"^(.*) \((\d+)\)$")
UNKNOWN = "unknown"
ANNOTATION_CATEGORY = "user_annotation"
OP_CATEGORIES = ("cpu_op", "Operator")  # "Operator": older Kineto (torch ≤ 1.9), for labels too
OP_STATS = (b'"hlo_op"', b'"long_name"')
AUTOGRAD = re.compile(r"^autograd::engine::evaluate_function\b")
AUTOGRAD_PHASE = "autograd::engine::evaluate_function"
FRAMEWORK_LABELS = (
    ("torch.optim", re.compile(r"^Optimizer\.\w+#")),
    ("DataLoader", re.compile(r"^enumerate\(DataLoader\)#")),
    ("DDP", re.compile(r"^DistributedDataParallel\.")),
    ("Lightning", re.compile(r"^\[pl\]")),
    # PyTorch/XLA's `StepTrace` ends each step with its own `StepMarker`, where the graph is synced.
    ("PyTorch/XLA", re.compile(r"^StepMarker$")),
)


@dataclasses.dataclass(frozen=True)
class Phases:
    """The phases of a host's steps (arrays are (steps, phases) int64 ps; empty without phases)."""

    names: list[str]
    source: str
    per_step_ps: np.ndarray
    device_busy_ps: np.ndarray  # 0 where no device: see has_device
    has_device: bool
    model_ops_ps: np.ndarray
    outside_ps: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))  # per step
    # Per step, per phase (in `names` order): the event ids of the phase's slices in that step, kept
    # from `find` so that a reader of the phases (the waiting rules) takes the very slices timed
    # here instead of finding them again; empty without phases.
    slice_ids: list[list[np.ndarray]] = dataclasses.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.names)


def _empty(steps: Steps, source: str) -> Phases:
    none = np.zeros((len(steps), 0), np.int64)
    return Phases([], source, none, none, False, none, np.asarray(steps.wall_ps, np.int64))


def find(events: HostEvents, steps: Steps) -> Phases:
    """The phases under the step markers (module docstring); no names when no step has any."""
    if not len(steps) or steps.markers.shape[0] != len(steps):
        return _empty(steps, "no step markers on a host thread")
    marker = _marker_label(steps)
    children = _direct_children(events, steps.markers)
    xplane = events.trace.format == registry.XPLANE
    labels = _xplane_labels(events, children) if xplane else None
    keyed = [_phase_slices(events, kids, labels) for kids in children]
    names = first_appearance([list(k) for k in keyed])
    if not names:
        return _empty(steps, f"no labels directly under {marker!r}")
    lo, hi = np.asarray(steps.start_ps, np.int64), np.asarray(steps.end_ps, np.int64)
    sets = {name: _phase_set(events, keyed, name, lo, hi) for name in names}
    per_step = np.stack([intervals.covered(sets[n], lo, hi) for n in names], axis=1)
    device = _device_set(events)
    busy = np.stack([intervals.covered(intervals.intersect(sets[n], device), lo, hi) for n in names], axis=1)
    labels = [i for slices in keyed for name, ids in slices.items() if name != AUTOGRAD_PHASE for i in ids]
    ops = _model_op_set(events, steps, xplane, np.asarray(labels, np.int64), lo.min(), hi.max())
    model = np.stack([intervals.covered(intervals.intersect(sets[n], ops), lo, hi) for n in names], axis=1)
    inside = intervals.covered(intervals.union(*sets.values()), lo, hi)
    return Phases(
        names=names,
        source=_source(names, marker),
        per_step_ps=per_step,
        device_busy_ps=busy,
        has_device=events.has_device(),
        model_ops_ps=model,
        outside_ps=(hi - lo) - inside,
        slice_ids=[[np.asarray(slices.get(n, ()), np.int64) for n in names] for slices in keyed],
    )


def _marker_label(steps: Steps) -> str:
    return re.sub(r"#\d+$", "#N", steps.names[0]) if steps.names else "the step"


def _direct_children(events: HostEvents, markers: np.ndarray) -> list[np.ndarray]:
    """Per marker: the slices on its track that start inside it (not around it) and lie in no other
    such slice (Python frames left out), in start order. A track's events, in start order, are
    read once, not once per marker."""
    trace = events.trace
    tracks = trace.ev_track[markers]
    by_track = {}
    for track in np.unique(tracks).tolist():
        lo, hi = np.searchsorted(trace.ev_track, [track, track + 1]).tolist()  # a track's events lie together
        may_be_phase = (trace.ev_dur_ps[lo:hi] > 0) & (events.role[lo:hi] != ROLE_PYTHON)
        start = np.asarray(trace.ev_start_ps)[lo:hi]
        by_track[track] = (np.arange(lo, hi), start, events.end_ps[lo:hi], may_be_phase)
    out = []
    for marker, track in zip(markers.tolist(), tracks.tolist()):
        on_track, start, end, may_be_phase = by_track[track]
        lo, hi = int(events.trace.ev_start_ps[marker]), int(events.end_ps[marker])
        k0, k1 = np.searchsorted(start, [lo, hi], side="left")
        starts, ends = start[k0:k1], end[k0:k1]
        encloses = (starts == lo) & (ends >= hi)  # the marker itself, or a slice around it
        keep = ~encloses & may_be_phase[k0:k1]
        inside, starts, ends = on_track[k0:k1][keep], starts[keep], ends[keep]
        order = np.lexsort((-ends, starts))
        inside, ends = inside[order], ends[order]
        reach = np.maximum.accumulate(ends) if ends.shape[0] else ends
        out.append(inside[np.concatenate(([True], ends[1:] > reach[:-1]))] if ends.shape[0] else inside)
    return out


def _xplane_labels(events: HostEvents, children: list[np.ndarray]) -> np.ndarray:
    """A bool per string id: a TraceMe name that is the user's label (module docstring)."""
    trace = events.trace
    labels = np.zeros(len(trace.strings), dtype=bool)
    kids = np.concatenate(children) if children else np.zeros(0, np.int64)
    if not kids.shape[0]:
        return labels
    no_stats = np.array([len(a) == 0 or bytes(a) == b"{}" for a in args_of(trace, kids)], dtype=bool)
    direct = collections.Counter(trace.ev_name[kids].tolist())
    once_per_step = set(direct)
    for step_kids in children:
        counts = collections.Counter(trace.ev_name[step_kids].tolist())
        once_per_step -= {n for n, c in counts.items() if c > 1}
    on_host = events.host_track[trace.ev_track] & (trace.ev_dur_ps > 0)
    everywhere = collections.Counter(trace.ev_name[on_host].tolist())
    for name in set(trace.ev_name[kids[no_stats]].tolist()):
        labels[name] = name in once_per_step and everywhere[name] == direct[name]
    return labels


def _phase_slices(
    events: HostEvents, children: np.ndarray, xplane_labels: np.ndarray | None
) -> dict[str, list[int]]:
    """Phase name → its slices (event ids) among one step's direct children, in order."""
    trace = events.trace
    out: dict[str, list[int]] = {}
    seen: collections.Counter[str] = collections.Counter()
    for i in children.tolist():
        name = trace.strings[trace.ev_name[i]]
        category = trace.strings[trace.ev_cat[i]]
        if xplane_labels is None and category in OP_CATEGORIES and AUTOGRAD.match(name):
            out.setdefault(AUTOGRAD_PHASE, []).append(i)
            continue
        if xplane_labels is None:
            label = category == ANNOTATION_CATEGORY or bool(_writers(name))
        else:
            label = bool(xplane_labels[trace.ev_name[i]])
        if not label:
            continue
        seen[name] += 1
        out[name if seen[name] == 1 else f"{name} ({seen[name]})"] = [i]
    return out


def first_appearance(sequences: list[list[str]]) -> list[str]:
    """Every name once, each placed after the name before it in the first step that has it."""
    order: list[str] = []
    for sequence in sequences:
        at = -1
        for name in sequence:
            if name in order:
                at = order.index(name)
            else:
                at += 1
                order.insert(at, name)
    return order


def _phase_set(
    events: HostEvents, keyed: list[dict[str, list[int]]], name: str, lo: np.ndarray, hi: np.ndarray
) -> intervals.Intervals:
    """The phase's slices over all steps, each clipped to its step's window."""
    ids = [i for slices in keyed for i in slices.get(name, ())]
    step_of = [k for k, slices in enumerate(keyed) for _ in slices.get(name, ())]
    if not ids:
        return intervals.Intervals.empty()
    trace = events.trace
    ids_array, k = np.asarray(ids, np.int64), np.asarray(step_of, np.int64)
    start = np.maximum(trace.ev_start_ps[ids_array], lo[k])
    end = np.minimum(trace.ev_start_ps[ids_array] + trace.ev_dur_ps[ids_array], hi[k])
    return intervals.merge(start, end)


def _device_set(events: HostEvents) -> intervals.Intervals:
    device = events.of_roles(*DEVICE_ROLES)
    return intervals.merge(events.trace.ev_start_ps[device], events.end_ps[device])


def _model_op_set(
    events: HostEvents, steps: Steps, xplane: bool, labels: np.ndarray, lo: int, hi: int
) -> intervals.Intervals:
    """The framework op events of the steps' span (module docstring), the phases' labels, the step
    markers and what encloses them left out (older Kineto files them all as ops)."""
    trace = events.trace
    start, end = trace.ev_start_ps, events.end_ps
    span = (start < hi) & (end > lo) & (trace.ev_dur_ps > 0)
    span[labels] = False
    span[steps.markers] = False
    span[ancestors(events, steps.markers)] = False
    if xplane:
        candidates = np.flatnonzero(span & events.host_track[trace.ev_track])
        blobs = args_of(trace, candidates)
        ops = candidates[[any(key in bytes(a) for key in OP_STATS) for a in blobs]]
    else:
        op_ids = [i for i, s in enumerate(trace.strings) if s in OP_CATEGORIES]
        tracks = np.unique(trace.ev_track[steps.markers])
        ops = np.flatnonzero(span & np.isin(trace.ev_cat, op_ids) & np.isin(trace.ev_track, tracks))
    return intervals.merge(start[ops], end[ops])


def _writers(name: str) -> list[str]:
    """The frameworks whose own label `name` is (empty: the user's)."""
    if name == AUTOGRAD_PHASE:
        return ["autograd backward"]
    return [label for label, pattern in FRAMEWORK_LABELS if pattern.match(name)]


def _source(names: list[str], marker: str) -> str:
    """Who wrote the phases: the user, the framework (which), or both."""
    frameworks = []
    yours = False
    for name in names:
        match = ORDINAL.match(name)
        written_by = _writers(match.group(1) if match else name)
        frameworks += [w for w in written_by if w not in frameworks]
        yours |= not written_by
    framework_text = f"framework phases ({', '.join(frameworks)})"
    if yours and frameworks:
        text = f"your labels and {framework_text} directly under {marker!r}"
    elif yours:
        text = f"your labels directly under {marker!r}"
    else:
        text = f"{framework_text} directly under {marker!r}"
    return text + _shared_names(names)


def _shared_names(names: list[str]) -> str:
    """The note on phases that share a name, told apart by order."""
    shared = sorted({m.group(1) for m in map(ORDINAL.match, names) if m and m.group(1) in names})
    if not shared:
        return ""
    note = f"; several phases named {', '.join(repr(n) for n in shared)} in a step, told apart by their order"
    if UNKNOWN in shared:
        note += f" (torch writes every non-ASCII record_function name as {UNKNOWN!r})"
    return note


def summary(
    phases: Phases, steps: Steps, steady: np.ndarray, scope: str, device_reason: str
) -> OverviewPhases:
    """The answer's rows over the steady steps (share = summed phase time ÷ summed step wall time)
    and every step's row for the per-step chart."""
    columns = np.concatenate((phases.per_step_ps, phases.outside_ps[:, None]), axis=1)
    answer = OverviewPhases(
        source=phases.source,
        scope=scope,
        phases=[],
        step_numbers=[int(n) for n in steps.numbers.tolist()],
        per_step=(columns / 1e3).tolist() if phases.names else [],
    )
    if not phases.names or not steady.any():
        return answer
    if not phases.has_device:
        answer.device_reason = device_reason
    wall = float(steps.wall_ps[steady].sum())
    for j, name in enumerate([*phases.names, OUTSIDE]):
        ns = columns[steady, j].astype(np.float64) / 1e3
        total = float(ns.sum())
        row = OverviewPhase(
            name=name, median_ns=float(np.median(ns)), share=total * 1e3 / wall if wall > 0 else 0.0
        )
        if ns.shape[0] >= MIN_DISTRIBUTION_STEPS:
            row.p10_ns, row.p90_ns = (float(x) for x in np.percentile(ns, [10, 90]))
        outside = j == len(phases.names)
        row.outside = outside
        if phases.has_device and not outside:
            row.device_busy_fraction = _fraction(phases.device_busy_ps[steady, j], total)
        if not outside:
            row.model_ops_fraction = _fraction(phases.model_ops_ps[steady, j], total)
        answer.phases.append(row)
    return answer


def _fraction(part_ps: np.ndarray, total_ns: float) -> float:
    return float(part_ps.sum()) / 1e3 / total_ns if total_ns > 0 else 0.0
