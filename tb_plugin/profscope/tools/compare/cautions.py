"""Why two captures may not compare like with like, said in words before any figure.

A step-time difference means something only between runs that mark the same steps, do the same
work per step and run on the same device, with enough steady steps to state a spread. Each rule
below names what differs (docs/COMPARE.md lists them):

- `same_subject`: the run is its own base.
- `markers` / `labels`: the step sources differ in kind (ProfilerStep markers against an
  annotation) or, of one kind, in what they name.
- `no_steps`: a side has no step markers: its whole capture stands in for one step.
- `few_steps`: a side has fewer than `MIN_STEPS` steady steps.
- `format`: one side is an XPlane, the other a Chrome/Kineto trace.
- `device`: the active devices differ (model or count).
- `shapes`: the most common input shapes (`Input Dims`) of the top host ops both runs share differ,
  the usual sign of another batch size; `shapes_unknown` when a side records none.
"""

from __future__ import annotations

import collections

import numpy as np

from profscope.analysis import op_tables
from profscope.analysis.steps import MIN_DISTRIBUTION_STEPS
from profscope.tools.compare.answers import CompareCaution
from profscope.tools.compare.sides import Side

MIN_STEPS = MIN_DISTRIBUTION_STEPS
# Host ops whose shapes are compared, among how many of the run's largest ops both sides share,
# reading the shapes of at most how many calls of each.
SHAPE_OPS = 5
SHAPE_CANDIDATES = 20
SHAPE_CALLS = 200
SHAPES_SHOWN = 3
SHAPE_CHARS = 120


def _name(side: Side, label: str) -> str:
    a = side.answer
    return f"the {label} ({a.run} · {a.host})"


def _devices(models: list[str]) -> str:
    if not models:
        return "no device (CPU only)"
    counts = collections.Counter(models)
    return ", ".join(f"{n} × {model}" for model, n in sorted(counts.items()))


def _short(text: str) -> str:
    return text if len(text) <= SHAPE_CHARS else text[: SHAPE_CHARS - 1] + "…"


def steps(base: Side, run: Side) -> list[CompareCaution]:
    b, r = base.answer, run.answer
    out = []
    if (b.run, b.session, b.host) == (r.run, r.session, r.host):
        out.append(
            CompareCaution(
                "same_subject",
                "both",
                "the run is compared with itself: every difference is 0 by construction",
            )
        )
    marked = "none" not in (b.step_source_kind, r.step_source_kind)
    if marked and b.step_source_kind != r.step_source_kind:
        out.append(
            CompareCaution(
                "markers",
                "both",
                f"the step markers differ: the run's steps are {r.step_source}, the base's {b.step_source}; "
                "their windows may not hold the same work",
            )
        )
    elif marked and b.step_source != r.step_source:
        out.append(
            CompareCaution(
                "labels",
                "both",
                f"the step labels differ: the run's steps are {r.step_source}, the base's {b.step_source}",
            )
        )
    for side, label in ((run, "run"), (base, "base")):
        a = side.answer
        if a.step_source_kind == "none":
            out.append(
                CompareCaution(
                    "no_steps",
                    label,
                    f"{_name(side, label)} has no step markers: its whole capture stands in for one step, so "
                    f"step times cannot be compared; name the annotation that wraps each step "
                    f"({'step_name' if label == 'run' else 'base_step_name'}=…)",
                )
            )
        steady = a.stats.count if a.stats else 0
        if steady < MIN_STEPS:
            out.append(
                CompareCaution(
                    "few_steps",
                    label,
                    f"{_name(side, label)} has {steady} steady step{'s' if steady != 1 else ''}, fewer than "
                    f"{MIN_STEPS}: too few to state a distribution, and the interval of the difference is wide "
                    "or absent; profile more steps",
                )
            )
    return out


def platform(base: Side, run: Side) -> list[CompareCaution]:
    b, r = base.answer, run.answer
    out = []
    if b.format != r.format:
        out.append(
            CompareCaution(
                "format",
                "both",
                f"the profile formats differ (run: {r.format}, base: {b.format}): op names and step markers "
                "come from different profilers",
            )
        )
    if b.devices != r.devices:
        out.append(
            CompareCaution(
                "device",
                "both",
                f"the devices differ: the run ran on {_devices(r.devices)}, the base on {_devices(b.devices)}; "
                "a difference may be the hardware's, not the change's",
            )
        )
    return out


def _most_common_shapes(side: Side, names: list[str]) -> dict[str, str]:
    """The most common non-empty input shapes of each named op (absent: none recorded)."""
    result = side.result
    events = result.events
    trace = events.trace
    chosen = op_tables.host_op_events(
        op_tables.Scope(events, result.scope_lo, result.scope_hi, result.excluded)
    )
    ids = {s: i for i, s in enumerate(trace.strings) if s in set(names)}
    names_of = trace.ev_name[chosen]
    out = {}
    for name in names:
        if name not in ids:
            continue
        mine = chosen[np.flatnonzero(names_of == ids[name])[:SHAPE_CALLS]]
        counts = collections.Counter(s for s in op_tables.shapes_of(events, mine) if s)
        if counts:
            out[name] = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    return out


def shapes(base: Side, run: Side) -> list[CompareCaution]:
    base_names = {r.name for r in base.tables.host_ops}
    common = [r.name for r in run.tables.host_ops if r.name in base_names][:SHAPE_CANDIDATES]
    if not common:
        return []
    run_shapes, base_shapes = _most_common_shapes(run, common), _most_common_shapes(base, common)
    out = []
    for side, found, label in ((run, run_shapes, "run"), (base, base_shapes, "base")):
        if not found:
            out.append(
                CompareCaution(
                    "shapes_unknown",
                    label,
                    f"{_name(side, label)} records no input shapes (profile with record_shapes=True): its batch "
                    "shapes could not be compared",
                )
            )
    both = [n for n in common if n in run_shapes and n in base_shapes][:SHAPE_OPS]
    differ = [n for n in both if run_shapes[n] != base_shapes[n]]
    if differ:
        shown = "; ".join(
            f"{n} takes {_short(run_shapes[n])} in the run, {_short(base_shapes[n])} in the base"
            for n in differ[:SHAPES_SHOWN]
        )
        more = f" (and {len(differ) - SHAPES_SHOWN} more)" if len(differ) > SHAPES_SHOWN else ""
        out.append(
            CompareCaution(
                "shapes",
                "both",
                f"the input shapes of the top ops differ: {shown}{more}; another batch size changes the step "
                "time by itself: compare equal batches, or time per example",
            )
        )
    return out


def all_cautions(base: Side, run: Side) -> list[CompareCaution]:
    return [*steps(base, run), *platform(base, run), *shapes(base, run)]
