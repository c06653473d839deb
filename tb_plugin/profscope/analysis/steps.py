"""Steps of one host: found from the profile's markers, whatever their name, or inferred from what
repeats; split into warm-up and steady state.

Markers (host-thread slices with a duration, Python frames left out) are grouped into candidates,
one per name:
- root markers (tier 0): slices whose args carry `_r` and a step number (`step_num`, `step`,
  `iter_num`): JAX `StepTraceAnnotation`, TensorFlow `Trace(..., step_num=N, _r=1)`;
- `ProfilerStep#N` (tier 1, `profiler_step`): the PyTorch profiler's steps, numbered in the name;
- the XPlane `Steps` line of device planes (tier 2, `xplane_steps`): boxes named by the step
  number; one step seen on several devices spans from its first start to its last end;
- other slices numbered by an arg (tier 3): Keras `Profiled batch` (`step_num`, no `_r`), any
  `Trace(name, step_num=N)`;
- other slices numbered in their name, `<name>#N` or `<name> N` (tier 4): Keras' JAX backend
  `Profiled batch <n>`.
Markers of one candidate that nest or repeat one number while overlapping (by time, not by the
reader's depth, which a marker starting inside a short Python-tracer frame gets wrong) are one
step, numbered by its own number. A candidate numbered by args or name counts only when its numbers
advance regularly: at least half of the steps after the first add the same positive increment
(`iter_num` = 0 on every TensorFlow executor call is no step). The lowest tier wins; within a
tier, a candidate whose steps no other one's contain (the outermost), then the most regular, then
the one with the most steps. The answer names the source and lists the other candidates (the
names `step_name=` takes). A `step_name` asked for picks the candidate of that name, or else host
slices named exactly so or `<step_name>#N` (`user_annotation`), numbered by args, name or order.

Without markers, steps are inferred (`inferred`, module `step_inference`) from the same XLA
program executed again and again or from the main thread's repeating top-level call pattern.
With neither, the answer says so and the whole capture is still broken down.

A host-marked step's window runs from its marker's start to the later of the marker's end and the
end of the last device event launched inside it (the device finishes the step's work after the
host moved on), capped at the next step's start, so windows never overlap. Device events launched
before the first step (the tail of the iteration before the capture's first marker) belong to no
step: they are counted apart (`before_first`), left out of the first step's breakdown, and the
answer says so.

Warm-up: the leading steps, at most half of them, each taking more than `WARMUP_RATIO` × the median
of the steps after it, or spending at least `WARMUP_COMPILE_SHARE` of its wall time compiling. The
rest is steady state. Steady-state figures state a distribution (p10/p90) only from
`MIN_DISTRIBUTION_STEPS` steps on.
"""

from __future__ import annotations

import collections
import dataclasses
import re

import msgspec
import numpy as np

from profscope.analysis import events as ev
from profscope.analysis import intervals, step_inference
from profscope.analysis.events import HostEvents
from profscope.model import arrays
from profscope.units import format_duration

WARMUP_RATIO = 1.5
WARMUP_COMPILE_SHARE = 0.10
MIN_DISTRIBUTION_STEPS = 5
MIN_REGULAR_SHARE = 0.5
ARG_SAMPLES = 3
PROBE_MARKERS = 64
NUMBERED_NAME = re.compile(r"^(.*\S)(?:#| )(\d+)$")
STEP_KEYS = (b'"step_num"', b'"step"', b'"iter_num"')
STEPS_LINE = "Steps"
PROFILER_STEP_NAME = "ProfilerStep"
NO_STEPS = (
    "no step markers: name an annotation (step_name=…) that wraps each step; the whole capture is broken "
    "down below"
)
TIER_ROOT, TIER_PROFILER, TIER_LINE, TIER_ARG, TIER_NAME = range(5)
KIND_OF_TIER = {
    TIER_ROOT: "step_annotation",
    TIER_PROFILER: "profiler_step",
    TIER_LINE: "xplane_steps",
    TIER_ARG: "step_annotation",
    TIER_NAME: "step_annotation",
}


class _StepArgs(msgspec.Struct):
    """The step number args (a Chrome-trace export of an XPlane writes them as strings)."""

    step_num: int | str | None = None
    step: int | str | None = None
    iter_num: int | str | None = None
    root: object = msgspec.field(default=None, name="_r")  # any value marks a root


_decode_step_args = msgspec.json.Decoder(_StepArgs).decode


@dataclasses.dataclass(frozen=True)
class Steps:
    """The steps of one host, in time order (empty arrays when none were found)."""

    kind: str
    source: str
    numbers: np.ndarray  # int64
    names: list[str]
    start_ps: np.ndarray  # int64, host-local
    end_ps: np.ndarray  # int64, host-local
    markers: np.ndarray  # host marker events (empty for the Steps line and inferred steps)
    message: str | None = None
    marker: str = ""  # the chosen candidate's name (what `step_name=` picks), or what repeats
    candidates: tuple[str, ...] = ()  # the other marker names `step_name=` can pick
    # Device events launched before the first step that run into its window, and their time inside it.
    before_first_events: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    before_first_ps: int = 0

    def __len__(self) -> int:
        return int(self.numbers.shape[0])

    @property
    def before_first(self) -> int:
        return int(self.before_first_events.shape[0])

    @property
    def wall_ps(self) -> np.ndarray:
        return self.end_ps - self.start_ps


@dataclasses.dataclass(frozen=True)
class _Candidate:
    """One marker name: its steps once nested duplicates are merged (module docstring)."""

    name: str
    tier: int
    source: str
    markers: np.ndarray  # the outermost marker of each step (empty for the Steps line)
    numbers: np.ndarray
    start_ps: np.ndarray
    end_ps: np.ndarray

    @property
    def regular_share(self) -> float:
        """Share of the steps after the first that add the commonest positive increment."""
        steps = self.numbers.shape[0]
        if steps < 2:
            return 1.0
        increments = collections.Counter(np.diff(self.numbers).tolist())
        positive = [count for step, count in increments.items() if step > 0]
        return max(positive, default=0) / (steps - 1)


def find(events: HostEvents, step_name: str | None) -> Steps:
    """The host's steps from the best candidate, or inferred (module docstring). A `step_name` that
    names no slice falls back to the other sources, and their `source` text says so."""
    candidates = _candidates(events)
    names = tuple(c.name for c in candidates)
    if step_name:
        asked = next((c for c in candidates if c.name == step_name), None) or _named(events, step_name)
        if asked is not None:
            kind = "xplane_steps" if asked.tier == TIER_LINE else "user_annotation"
            source = f"{asked.source} (asked for)"
            found = _steps(events, dataclasses.replace(asked, source=source), kind)
            return dataclasses.replace(found, candidates=tuple(n for n in names if n != asked.name))
    if candidates:
        best = candidates[0]
        found = _steps(events, best, KIND_OF_TIER[best.tier])
        found = dataclasses.replace(found, candidates=names[1:])
    else:
        found = _inferred(events)
    if step_name:
        missing = f"no slice named {step_name!r} on a host thread"
        if found.kind == "none":
            return dataclasses.replace(found, message=f"{missing}; {NO_STEPS}")
        return dataclasses.replace(found, source=f"{missing}, so {found.source}")
    return found


def _candidates(events: HostEvents) -> list[_Candidate]:
    """Every marker candidate of the host, best first (module docstring)."""
    found = _numbered_markers(events)
    line = _steps_line(events)
    if line is not None:
        found.append(line)
    kept = [c for c in found if c.tier in (TIER_PROFILER, TIER_LINE) or c.regular_share >= MIN_REGULAR_SHARE]
    inner = {c.name for c in kept if any(_contains(o, c) for o in kept if o is not c and o.tier == c.tier)}
    return sorted(kept, key=lambda c: (c.tier, c.name in inner, -c.regular_share, -len(c.numbers), c.name))


def _contains(outer: _Candidate, inner: _Candidate) -> bool:
    """Whether most of `inner`'s steps start inside one of `outer`'s steps (by time)."""
    k = np.searchsorted(outer.start_ps, inner.start_ps, side="right") - 1
    inside = (k >= 0) & (inner.start_ps < outer.end_ps[np.maximum(k, 0)])
    inside &= (outer.start_ps[np.maximum(k, 0)] < inner.start_ps) | (
        outer.end_ps[np.maximum(k, 0)] > inner.end_ps
    )
    return bool(inside.sum() * 2 > inner.start_ps.shape[0])


def _host_slices(events: HostEvents) -> np.ndarray:
    """Host-thread slices that may be markers (Python frames are not), in event order."""
    trace = events.trace
    if not trace.num_events:
        return np.zeros(0, np.int64)
    role = events.role
    keep = events.host_track[trace.ev_track] & (trace.ev_dur_ps > 0) & (role != ev.ROLE_PYTHON)
    return np.flatnonzero(keep)


def _numbered_markers(events: HostEvents) -> list[_Candidate]:
    """Candidates numbered by args (`_r` roots first), `ProfilerStep#N` and `<name>#N` names."""
    trace = events.trace
    slices = _host_slices(events)
    if not slices.shape[0]:
        return []
    by_name = _grouped_by_name(trace.ev_name, slices)
    out = []
    for name_id, members in by_name.items():
        name = trace.strings[name_id]
        # A name that carries its number (`ProfilerStep#2`) is grouped by the name before it.
        if not NUMBERED_NAME.match(name) and _has_step_arg(trace, members[:ARG_SAMPLES]):
            candidate = _arg_candidate(events, name, members)
            if candidate is not None:
                out.append(candidate)
    out.extend(_name_candidates(events, by_name))
    return out


def _grouped_by_name(ev_name: np.ndarray, slices: np.ndarray) -> dict[int, np.ndarray]:
    """The slices of each name id, in event order (the first ones are those probed for a step arg)."""
    names = ev_name[slices]
    order = arrays.stable_argsort(names)
    names, grouped = names[order], slices[order]
    first = np.flatnonzero(np.concatenate(([True], names[1:] != names[:-1])))
    bounds = np.concatenate((first, [names.shape[0]])).tolist()
    return {name: grouped[lo:hi] for name, lo, hi in zip(names[first].tolist(), bounds, bounds[1:])}


def _has_step_arg(trace, indices: np.ndarray) -> bool:
    return any(key in bytes(raw) for raw in ev.args_of(trace, indices) for key in STEP_KEYS)


def _arg_candidate(events: HostEvents, name: str, indices: np.ndarray) -> _Candidate | None:
    """The slices of one name numbered by a step arg (those without a number are left out). A
    name with many slices is first probed on its first `PROBE_MARKERS`: TensorFlow numbers every
    executor call (`iter_num`), and decoding them all to find them irregular would be slow."""
    if indices.shape[0] > PROBE_MARKERS:
        probe = _arg_candidate(events, name, indices[:PROBE_MARKERS])
        if probe is None or probe.regular_share < MIN_REGULAR_SHARE:
            return None
    markers, numbers, roots = [], [], 0
    for i, raw in zip(indices.tolist(), ev.args_of(events.trace, indices)):
        args = _decoded(bytes(raw))
        number = _number_of(args)
        if number is not None:
            markers.append(i)
            numbers.append(number)
            roots += args.root is not None
    if not markers:
        return None
    root = roots * 2 > len(markers)
    tier = TIER_ROOT if root else TIER_ARG
    what = "root step markers" if root else "step markers"
    source = f"{what} {name!r} numbered by their step arg"
    if root:
        source += " (JAX StepTraceAnnotation / TensorFlow Trace with _r)"
    return _merged(events, name, tier, source, np.asarray(markers, np.int64), numbers)


def _name_candidates(events: HostEvents, by_name: dict[int, np.ndarray]) -> list[_Candidate]:
    """`ProfilerStep#N` and other names ending in `#N` or ` N`, grouped by the name before it."""
    trace = events.trace
    stems: dict[str, tuple[list[int], list[int]]] = collections.defaultdict(lambda: ([], []))
    for name_id, members in by_name.items():
        match = NUMBERED_NAME.match(trace.strings[name_id])
        if match:
            markers, numbers = stems[match.group(1)]
            markers.extend(members.tolist())
            numbers.extend([int(match.group(2))] * members.shape[0])
    out = []
    for stem, (markers, numbers) in stems.items():
        profiler = stem == PROFILER_STEP_NAME
        tier = TIER_PROFILER if profiler else TIER_NAME
        source = (
            "ProfilerStep#N markers (PyTorch profiler)"
            if profiler
            else f"markers '{stem} N' numbered in their names"
        )
        out.append(_merged(events, stem, tier, source, np.asarray(markers, np.int64), numbers))
    return out


def _decoded(raw: bytes) -> _StepArgs:
    try:
        return _decode_step_args(raw) if raw else _StepArgs()
    except (msgspec.DecodeError, msgspec.ValidationError):
        return _StepArgs()


def _number_of(args: _StepArgs) -> int | None:
    for number in (args.step_num, args.step, args.iter_num):
        if isinstance(number, int):
            return number
        if isinstance(number, str) and number.strip().lstrip("-").isdigit():
            return int(number)
    return None


def _merged(
    events: HostEvents, name: str, tier: int, source: str, markers: np.ndarray, numbers: list[int | None]
) -> _Candidate:
    """One step per outermost marker: a marker inside an earlier one (by time), or overlapping it
    with the same number, joins its step; the steps without a number are numbered by order."""
    trace = events.trace
    # In start order, the longer first where two start together (the outer one of a nested pair).
    order = np.lexsort((-trace.ev_dur_ps[markers], trace.ev_start_ps[markers]))
    markers, numbers = markers[order], [numbers[k] for k in order.tolist()]
    start = trace.ev_start_ps[markers].tolist()
    end = (trace.ev_start_ps[markers] + trace.ev_dur_ps[markers]).tolist()
    kept: list[int] = []
    for k in range(len(start)):
        if kept:
            last = kept[-1]
            nested = start[k] < end[last] and end[k] <= end[last]
            repeated = start[k] < end[last] and numbers[k] == numbers[last]
            if nested or repeated:
                end[last] = max(end[last], end[k])
                continue
        kept.append(k)
    step_numbers = [numbers[k] if numbers[k] is not None else order for order, k in enumerate(kept)]
    return _Candidate(
        name,
        tier,
        source,
        markers[kept],
        np.asarray(step_numbers, np.int64),
        np.asarray([start[k] for k in kept], np.int64),
        np.asarray([end[k] for k in kept], np.int64),
    )


def _named(events: HostEvents, step_name: str) -> _Candidate | None:
    """Host slices named `step_name` or `<step_name>#N` (the request's choice)."""
    trace = events.trace
    suffixed = re.compile(rf"^{re.escape(step_name)}#(\d+)$")
    ids = np.zeros(len(trace.strings), dtype=bool)
    ids[[i for i, s in enumerate(trace.strings) if s == step_name or suffixed.match(s)]] = True
    slices = _host_slices(events)
    markers = slices[ids[trace.ev_name[slices]]] if slices.shape[0] else slices
    if not markers.shape[0]:
        return None
    numbers: list[int | None] = []
    for i, raw in zip(markers.tolist(), ev.args_of(trace, markers)):
        match = suffixed.match(trace.strings[trace.ev_name[i]])
        number = _number_of(_decoded(bytes(raw)))
        numbers.append(number if number is not None else int(match.group(1)) if match else None)
    return _merged(events, step_name, TIER_ARG, f"the annotation {step_name!r}", markers, numbers)


def _steps(events: HostEvents, candidate: _Candidate, kind: str) -> Steps:
    """The candidate's steps, windows extended by the device work launched inside them."""
    trace = events.trace
    start, end = candidate.start_ps, candidate.end_ps
    if candidate.markers.shape[0]:
        end = _extended_by_device(events, start, end)
        names = [trace.strings[trace.ev_name[i]] for i in candidate.markers.tolist()]
    else:
        names = [str(n) for n in candidate.numbers.tolist()]
    found = Steps(
        kind, candidate.source, candidate.numbers, names, start, end, candidate.markers, None, candidate.name
    )
    # The Steps line is device time: what was launched before it started is its own work.
    return _with_before_first(events, found) if candidate.markers.shape[0] else found


def _inferred(events: HostEvents) -> Steps:
    """Steps inferred from repetition, or none (the answer then says so)."""
    empty = np.zeros(0, np.int64)
    inferred = step_inference.infer(events)
    if inferred is None:
        return Steps("none", "no step markers found", empty, [], empty, empty, empty, NO_STEPS)
    end = _extended_by_device(events, inferred.start_ps, inferred.end_ps)
    numbers = np.arange(1, inferred.start_ps.shape[0] + 1, dtype=np.int64)
    names = [inferred.name] * numbers.shape[0]
    # What repeats on a host thread is a name `step_name=` can pick (then numbered as markers).
    offered = (inferred.name,) if inferred.from_host else ()
    found = Steps(
        "inferred",
        inferred.source,
        numbers,
        names,
        inferred.start_ps,
        end,
        empty,
        None,
        inferred.name,
        offered,
    )
    return _with_before_first(events, found) if inferred.from_host else found


def _extended_by_device(events: HostEvents, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Step ends extended to the last device event launched inside each step, capped at the next
    step's start."""
    trace = events.trace
    launched = np.flatnonzero(events.launch >= 0)
    out = end.copy()
    if launched.shape[0] and start.shape[0]:
        host_start = trace.ev_start_ps[events.launch[launched]]
        k = np.searchsorted(start, host_start, side="right") - 1
        inside = (k >= 0) & (host_start < end[np.maximum(k, 0)])
        device_end = trace.ev_start_ps[launched] + trace.ev_dur_ps[launched]
        np.maximum.at(out, k[inside], device_end[inside])
    cap = np.concatenate((start[1:], [np.iinfo(np.int64).max]))
    return np.minimum(out, cap)


def _with_before_first(events: HostEvents, found: Steps) -> Steps:
    """Count the device events launched before the first step that run into its window: the
    previous iteration's tail, not the first step's work."""
    if not len(found):
        return found
    trace = events.trace
    launched = np.flatnonzero(events.launch >= 0)
    first_lo, first_hi = int(found.start_ps[0]), int(found.end_ps[0])
    launch_start = trace.ev_start_ps[events.launch[launched]]
    device_end = trace.ev_start_ps[launched] + trace.ev_dur_ps[launched]
    early = launched[(launch_start < first_lo) & (device_end > first_lo)]
    if not early.shape[0]:
        return found
    covered = intervals.merge(trace.ev_start_ps[early], events.end_ps[early])
    inside = intervals.covered(covered, np.array([first_lo]), np.array([first_hi]))
    return dataclasses.replace(found, before_first_events=early, before_first_ps=int(inside[0]))


def before_first_note(found: Steps) -> str:
    """The sentence that says which device events were counted apart."""
    many = found.before_first != 1
    return (
        f"{found.before_first} device event{'s' if many else ''} launched before the first step "
        f"{'run' if many else 'runs'} into it for {format_duration(found.before_first_ps / 1e3)}: "
        "the tail of the iteration before the capture's first step, left out of the first step's breakdown"
    )


def _steps_line(events: HostEvents) -> _Candidate | None:
    trace = events.trace
    lines = [t.id for t in trace.tracks if t.name == STEPS_LINE and t.kind == "line"]
    if not lines:
        return None
    hits = np.flatnonzero(np.isin(trace.ev_track, lines) & (trace.ev_dur_ps > 0))
    if not hits.shape[0]:
        return None
    numbers = []
    for i in hits.tolist():
        text = trace.strings[trace.ev_name[i]]
        numbers.append(int(text) if text.strip().isdigit() else _number_of(_decoded(trace.args_json(i))))
    known = np.array([n is not None for n in numbers], dtype=bool)
    hits = hits[known]
    if not hits.shape[0]:
        return None
    number = np.array([n for n in numbers if n is not None], dtype=np.int64)
    start = trace.ev_start_ps[hits]
    end = start + trace.ev_dur_ps[hits]
    unique, inverse = np.unique(number, return_inverse=True)
    lo = np.full(unique.shape[0], np.iinfo(np.int64).max)
    hi = np.full(unique.shape[0], np.iinfo(np.int64).min)
    np.minimum.at(lo, inverse, start)
    np.maximum.at(hi, inverse, end)
    order = np.argsort(lo, kind="stable")
    lo, hi, unique = lo[order], hi[order], unique[order]
    cap = np.concatenate((lo[1:], [np.iinfo(np.int64).max]))
    hi = np.minimum(hi, cap)
    devices = len({trace.tracks[t].section for t in arrays.unique(trace.ev_track[hits]).tolist()})
    source = f"the XPlane Steps line ({devices} device{'s' if devices != 1 else ''})"
    return _Candidate(STEPS_LINE, TIER_LINE, source, np.zeros(0, np.int64), unique, lo, hi)


# -- warm-up / steady state ------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Split:
    warmup: np.ndarray  # bool per step
    rule: str
    verdict: str


RULE = (
    f"leading steps (at most half of them) that each take over {WARMUP_RATIO}× the median of the steps after "
    f"them, or spend {WARMUP_COMPILE_SHARE:.0%} or more of their wall time compiling, are warm-up; the rest is "
    "steady state"
)


def split(numbers: np.ndarray, wall_ps: np.ndarray, compile_ps: np.ndarray) -> Split:
    """Apply `RULE` to the steps' wall and compile times (in step order)."""
    n = wall_ps.shape[0]
    warmup = np.zeros(n, dtype=bool)
    if n < 2:
        return Split(warmup, RULE, "one step: nothing to compare it with, it is counted as steady")
    reasons = []
    for k in range(n // 2):
        rest = float(np.median(wall_ps[k + 1 :]))
        slow = rest > 0 and wall_ps[k] > WARMUP_RATIO * rest
        compiling = wall_ps[k] > 0 and compile_ps[k] >= WARMUP_COMPILE_SHARE * wall_ps[k]
        if not (slow or compiling):
            break
        warmup[k] = True
        reasons.append((k, float(wall_ps[k]) / rest if rest > 0 else float("inf"), bool(compiling)))
    if not reasons:
        verdict = (
            f"no leading step takes over {WARMUP_RATIO}× the median of the later ones or compiles: all {n} steps "
            "are steady"
        )
        return Split(warmup, RULE, verdict)
    k_last = reasons[-1][0]
    rest = float(np.median(wall_ps[k_last + 1 :]))
    first, last = int(numbers[0]), int(numbers[k_last])
    label = f"step {first}" if first == last else f"steps {first}–{last}"
    mean_ratio = float(np.mean(wall_ps[: k_last + 1])) / rest if rest > 0 else float("inf")
    verb = "takes" if first == last else "take"
    verdict = (
        f"{label} {verb} {mean_ratio:.1f}× the median of the rest ({format_duration(float(np.mean(wall_ps[: k_last + 1])) / 1e3)} "
        f"vs {format_duration(rest / 1e3)})"
    )
    if any(c for _, _, c in reasons):
        verdict += "; compiling in " + ", ".join(str(int(numbers[k])) for k, _, c in reasons if c)
    return Split(warmup, RULE, verdict + ": warm-up")
