"""Steps of one host: found from the profile's own markers, split into warm-up and steady state.

Sources, in the order they are tried (the first that gives steps is used, and named):
1. `step_name` given by the request: host slices with exactly that name, or that name followed by
   `#N` (`user_annotation`); numbered by their `step_num` / `step` arg, the `#N` suffix, or order.
2. `ProfilerStep#N` on host threads (PyTorch profiler; `profiler_step`).
3. The XPlane `Steps` line of device planes (`xplane_steps`): boxes named by the step number; one
   step seen on several devices spans from its first start to its last end.
4. Step annotations (`step_annotation`): host slices with a `step_num` arg (JAX
   `StepTraceAnnotation`, TensorFlow `Trace("train_step", step_num=N)`), looked for among events
   whose name contains "step".
With none, the answer says so and the whole capture is still broken down.

A host-marked step's window runs from its marker's start to the later of the marker's end and the
end of the last device event launched inside it (the device finishes the step's work after the
host moved on), capped at the next step's start, so windows never overlap.

Warm-up: the leading steps, at most half of them, each taking more than `WARMUP_RATIO` × the median
of the steps after it, or spending at least `WARMUP_COMPILE_SHARE` of its wall time compiling. The
rest is steady state. Steady-state figures state a distribution (p10/p90) only from
`MIN_DISTRIBUTION_STEPS` steps on.
"""

from __future__ import annotations

import dataclasses
import re

import msgspec
import numpy as np

from profscope.analysis.events import HostEvents
from profscope.model import arrays
from profscope.units import format_duration

WARMUP_RATIO = 1.5
WARMUP_COMPILE_SHARE = 0.10
MIN_DISTRIBUTION_STEPS = 5
PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")
STEPS_LINE = "Steps"
NO_STEPS = (
    "no step markers: name an annotation (step_name=…) that wraps each step; the whole capture is broken "
    "down below"
)


class _StepArgs(msgspec.Struct):
    step_num: int | None = None
    step: int | None = None
    step_name: str | None = None


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
    markers: np.ndarray  # host marker events (empty for the Steps line)
    message: str | None = None

    def __len__(self) -> int:
        return int(self.numbers.shape[0])

    @property
    def wall_ps(self) -> np.ndarray:
        return self.end_ps - self.start_ps


def find(events: HostEvents, step_name: str | None) -> Steps:
    """The host's steps from the first source that has any (module docstring). A `step_name` that
    names no slice falls back to the other sources, and their `source` text says so."""
    if step_name:
        found = _named(events, step_name)
        if found is not None:
            return found
        fallback = _unnamed(events, step_name)
        if fallback.kind != "none":
            missing = f"no slice named {step_name!r} on a host thread, so "
            return dataclasses.replace(fallback, source=missing + fallback.source)
        return fallback
    return _unnamed(events, None)


def _unnamed(events: HostEvents, step_name: str | None) -> Steps:
    """Steps from the sources that need no name: ProfilerStep#N, the Steps line, step annotations."""
    trace = events.trace
    pattern_ids = [i for i, s in enumerate(trace.strings) if PROFILER_STEP.match(s)]
    if pattern_ids:
        markers = _host_events_named(events, pattern_ids)
        if markers.shape[0]:
            numbers = [int(PROFILER_STEP.match(trace.strings[trace.ev_name[i]]).group(1)) for i in markers]
            return _host_steps(
                events, markers, numbers, "profiler_step", "ProfilerStep#N markers (PyTorch profiler)"
            )
    line = _steps_line(events)
    if line is not None:
        return line
    annotated = _annotated(events)
    if annotated is not None:
        return annotated
    empty = np.zeros(0, np.int64)
    message = NO_STEPS
    if step_name:
        message = f"no slice named {step_name!r} on a host thread; " + NO_STEPS
    return Steps("none", "no step markers found", empty, [], empty, empty, empty, message)


def _host_events_named(events: HostEvents, name_ids: list[int]) -> np.ndarray:
    trace = events.trace
    wanted = np.zeros(len(trace.strings), dtype=bool)
    wanted[name_ids] = True
    on_host = events.host_track[trace.ev_track] if trace.num_events else np.zeros(0, bool)
    hits = np.flatnonzero(wanted[trace.ev_name] & on_host & (trace.ev_dur_ps > 0))
    return hits[np.argsort(trace.ev_start_ps[hits], kind="stable")]


def _named(events: HostEvents, step_name: str) -> Steps | None:
    trace = events.trace
    suffixed = re.compile(rf"^{re.escape(step_name)}#(\d+)$")
    ids = [i for i, s in enumerate(trace.strings) if s == step_name or suffixed.match(s)]
    markers = _host_events_named(events, ids) if ids else np.zeros(0, np.int64)
    if not markers.shape[0]:
        return None
    numbers = []
    for k, i in enumerate(markers.tolist()):
        match = suffixed.match(trace.strings[trace.ev_name[i]])
        number = _arg_number(trace.args_json(i))
        numbers.append(number if number is not None else int(match.group(1)) if match else k)
    return _host_steps(
        events, markers, numbers, "user_annotation", f"the annotation {step_name!r} (asked for)"
    )


def _arg_number(raw: bytes) -> int | None:
    if not raw:
        return None
    try:
        args = _decode_step_args(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return args.step_num if args.step_num is not None else args.step


def _annotated(events: HostEvents) -> Steps | None:
    trace = events.trace
    ids = [i for i, s in enumerate(trace.strings) if "step" in s.lower() and not s.startswith("$")]
    if not ids:
        return None
    candidates = _host_events_named(events, ids)
    markers, numbers = [], []
    for i in candidates.tolist():
        raw = trace.args_json(i)
        if b'"step_num"' in raw:
            number = _arg_number(raw)
            if number is not None:
                markers.append(i)
                numbers.append(number)
    if not markers:
        return None
    # One annotation name only: the most common one carrying step_num.
    names = [trace.strings[trace.ev_name[i]] for i in markers]
    name = max(set(names), key=names.count)
    keep = [k for k, nm in enumerate(names) if nm == name]
    return _host_steps(
        events,
        np.array([markers[k] for k in keep], np.int64),
        [numbers[k] for k in keep],
        "step_annotation",
        f"step annotations {name!r} with step_num (JAX StepTraceAnnotation / TensorFlow Trace)",
    )


def _host_steps(events: HostEvents, markers: np.ndarray, numbers: list[int], kind: str, source: str) -> Steps:
    trace = events.trace
    # Nested markers of the same name (a step inside a step) count once: keep the outermost.
    start = trace.ev_start_ps[markers]
    end = start + trace.ev_dur_ps[markers]
    reach = np.maximum.accumulate(end)
    outer = np.concatenate(([True], start[1:] >= reach[:-1]))
    markers, start, end = markers[outer], start[outer], end[outer]
    numbers_arr = np.asarray(numbers, dtype=np.int64)[outer]
    end = _extended_by_device(events, start, end)
    names = [trace.strings[trace.ev_name[i]] for i in markers.tolist()]
    return Steps(kind, source, numbers_arr, names, start, end, markers)


def _extended_by_device(events: HostEvents, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Marker ends extended to the last device event launched inside each step, capped at the next
    step's start."""
    trace = events.trace
    launched = np.flatnonzero(events.launch >= 0)
    out = end.copy()
    if launched.shape[0]:
        host_start = trace.ev_start_ps[events.launch[launched]]
        k = np.searchsorted(start, host_start, side="right") - 1
        inside = (k >= 0) & (host_start < end[np.maximum(k, 0)])
        device_end = trace.ev_start_ps[launched] + trace.ev_dur_ps[launched]
        np.maximum.at(out, k[inside], device_end[inside])
    cap = np.concatenate((start[1:], [np.iinfo(np.int64).max]))
    return np.minimum(out, cap)


def _steps_line(events: HostEvents) -> Steps | None:
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
        numbers.append(int(text) if text.strip().isdigit() else _arg_number(trace.args_json(i)))
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
    return Steps(
        "xplane_steps",
        f"the XPlane Steps line ({devices} device{'s' if devices != 1 else ''})",
        unique,
        [str(n) for n in unique.tolist()],
        lo,
        hi,
        np.zeros(0, np.int64),
    )


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
