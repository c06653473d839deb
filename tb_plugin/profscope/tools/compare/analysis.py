"""The comparison of a run with its base: both sides analysed as the overview analyses one host
(`sides`), the steady step-time difference with its spread (`shift`), the breakdown and op deltas
(`deltas`), the phase deltas (`phase_deltas`), each allocator's peak on both sides (`memory_deltas`),
the cautions (`cautions`) and the method's closing advice.

The difference is never one number: the Hodges–Lehmann shift comes with its distribution-free
interval, or with the words saying why the steps allow none.
"""

from __future__ import annotations

import numpy as np

from profscope.tools.compare import cautions, deltas, memory_deltas
from profscope.tools.compare import shift as shift_lib
from profscope.tools.compare.answers import CompareAnswer, CompareShift
from profscope.tools.compare.phase_deltas import phase_deltas
from profscope.tools.compare.sides import Side
from profscope.units import format_duration

ESTIMATOR = (
    "Hodges–Lehmann shift: the median of every (run step − base step) difference, with Moses' "
    "distribution-free interval from the Mann–Whitney count"
)
ADVICE = (
    "Confirm the gain outside the profiler, with more steps: time a few hundred steps of each version "
    "without the profiler (it adds overhead and records a short window), alternate the two runs on "
    "the same machine, and compare their medians with their spread."
)
NO_STEPS = "no steady steps on {sides}: the step-time difference needs step markers on both sides"


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.3g}%"


def _times(ratio: float) -> str:
    return f"{ratio:.3g}×"


def verdict(estimate: shift_lib.Estimate, ratio: shift_lib.Estimate | None, m: int, n: int) -> str:
    """The difference in words, with its interval (or why there is none)."""
    level = _percent(shift_lib.CONFIDENCE)
    if estimate.low is None or estimate.high is None:
        return (
            f"the run's steps differ from the base's by {format_duration(estimate.estimate)} (Hodges–Lehmann), "
            f"but {m} against {n} steady steps allow no {level} interval: profile more steps before reading "
            "anything into it"
        )
    ratio_text = ""
    if ratio is not None and ratio.low is not None and ratio.high is not None:
        ratio_text = (
            f"; the run takes {_times(ratio.estimate)} the base's step time "
            f"({_times(ratio.low)} to {_times(ratio.high)})"
        )
    interval = f"{level} interval {format_duration(estimate.low)} to {format_duration(estimate.high)}"
    if estimate.high < 0:
        return f"the run's steady steps are shorter by {format_duration(-estimate.estimate)} ({interval}){ratio_text}"
    if estimate.low > 0:
        return f"the run's steady steps are longer by {format_duration(estimate.estimate)} ({interval}){ratio_text}"
    return (
        f"these steps cannot tell the two runs apart: the {interval} of the difference holds 0"
        f" (estimate {format_duration(estimate.estimate)}){ratio_text}"
    )


def step_shift(base: Side, run: Side) -> CompareShift | str:
    """The steady step-time difference run − base, or why there is none."""
    b, r = base.steady_wall_ns, run.steady_wall_ns
    if not b.shape[0] or not r.shape[0]:
        missing = [label for label, x in (("the run", r), ("the base", b)) if not x.shape[0]]
        return NO_STEPS.format(sides=" and ".join(missing))
    estimate = shift_lib.hodges_lehmann(r, b)
    ratio = shift_lib.ratio(r, b)
    base_median, run_median = float(np.median(b)), float(np.median(r))
    out = CompareShift(
        estimator=ESTIMATOR,
        run_steps=int(r.shape[0]),
        base_steps=int(b.shape[0]),
        median_difference_ns=run_median - base_median,
        relative_median_difference=(run_median - base_median) / base_median if base_median > 0 else 0.0,
        shift_ns=estimate.estimate,
        confidence_asked=shift_lib.CONFIDENCE,
        method=estimate.method,
        verdict=verdict(estimate, ratio, int(r.shape[0]), int(b.shape[0])),
    )
    if estimate.low is not None and estimate.high is not None and estimate.coverage is not None:
        out.low_ns, out.high_ns, out.coverage = estimate.low, estimate.high, estimate.coverage
    else:
        out.note = (
            f"{r.shape[0]} run and {b.shape[0]} base steady steps are too few for a "
            f"{_percent(shift_lib.CONFIDENCE)} interval: no ordering of so few steps is rare enough"
        )
    if ratio is not None:
        out.ratio = ratio.estimate
        if ratio.low is not None and ratio.high is not None:
            out.ratio_low, out.ratio_high = ratio.low, ratio.high
    if estimate.reduced:
        note = f"each side reduced to {shift_lib.MAX_STEPS} evenly spaced quantiles of its steps"
        out.note = f"{out.note}; {note}" if out.note else note
    return out


def _breakdown_scope(base: Side, run: Side) -> str:
    def one(side: Side, label: str) -> str:
        if len(side.result.steps):
            return f"{label}: median per step over its {side.result.scope}"
        return f"{label}: its whole capture (no steps)"

    return f"{one(run, 'run')}; {one(base, 'base')}"


def answer(base: Side, run: Side) -> CompareAnswer:
    shift = step_shift(base, run)
    host_ops, kernels, hlo_ops = deltas.op_tables_of(base, run)
    out = CompareAnswer(
        run=run.answer,
        base=base.answer,
        breakdown_scope=_breakdown_scope(base, run),
        categories=deltas.categories(base, run),
        same_within=deltas.SAME_WITHIN,
        host_ops=host_ops,
        kernels=kernels,
        hlo_ops=hlo_ops,
        cautions=cautions.all_cautions(base, run),
        advice=ADVICE,
    )
    if isinstance(shift, str):
        out.shift_reason = shift
    else:
        out.shift = shift
    phases = phase_deltas(base, run)
    if phases is not None:
        out.phases = phases
    out.memory = memory_deltas.memory_rows(base.memory, run.memory)
    if not out.memory:
        out.memory_reason = memory_deltas.NOT_OBSERVED
    return out
