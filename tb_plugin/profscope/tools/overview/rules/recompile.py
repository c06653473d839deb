"""`recompile`: XLA (or other) compilations in steady state.

From the trace: compilation slices (breakdown category `compilation`) inside the steady steps,
firing when they cover at least `MIN_COMPILE_SHARE` of the steady steps' wall time. From the
hosts' PyTorch/XLA metrics logs (`ctx.xla_logs()`): the `CompileTime` sample count of the per-step
reports, firing when it still grows after the first `WARMUP_REPORTS` reports (the log's warm-up:
its first steps compile the graphs once).
"""

from __future__ import annotations

import numpy as np

from profscope.analysis import breakdown, intervals
from profscope.analysis.answers import OverviewLink
from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import (
    Context,
    count,
    scope_link,
    scope_words,
    share,
    steady_steps,
)

MIN_COMPILE_SHARE = 0.01
WARMUP_REPORTS = 2
HYPOTHESIS = (
    "Something that changes between steps makes a new graph: a different input shape (a short last batch, "
    "variable sequence lengths), a Python value baked into the graph, or a host read of a tensor that cuts "
    "the graph."
)
NEXT_CHECK = (
    "Compare the input shapes of the steps that compile with those that do not (XLA tab: graph diff of the "
    "compiled graphs), then profile again with that input fixed (e.g. drop_last=True or padding to one "
    "shape) and check that steady steps no longer compile."
)


def check(ctx: Context) -> list[OverviewFinding]:
    out = [f for host in ctx.hosts if (f := _from_trace(host)) is not None]
    if not out and ctx.xla_logs is not None:
        logged = _from_logs(ctx)
        if logged is not None:
            out.append(logged)
    return out


def _from_trace(host) -> OverviewFinding | None:
    if not steady_steps(host):
        return None
    compile_set = host.layers.sets[breakdown.CATEGORY_IDS.index("compilation")]
    covered = intervals.covered(compile_set, host.scope_lo, host.scope_hi)
    wall = float((host.scope_hi - host.scope_lo).sum())
    if wall <= 0 or covered.sum() / wall < MIN_COMPILE_SHARE:
        return None
    compiling = host.steps.numbers[np.flatnonzero(host.steady)][covered > 0].tolist()
    return OverviewFinding(
        kind="recompile",
        host=host.events.name,
        title="Steady steps compile",
        observation=(
            f"Compilation takes {covered.sum() / wall * 100:.1f} % of the wall time of {scope_words(host)}; "
            f"steps {', '.join(str(s) for s in compiling[:10])} compile."
        ),
        hypothesis=HYPOTHESIS,
        next_check=NEXT_CHECK,
        rule=f"compilation ≥ {MIN_COMPILE_SHARE:.0%} of the steady steps' wall time",
        evidence=[
            share("compilation share of wall time", float(covered.sum() / wall)),
            count("steady steps compiling", len(compiling)),
        ],
        link=scope_link(host, "Compile"),
    )


def _from_logs(ctx: Context) -> OverviewFinding | None:
    try:
        loaded = ctx.xla_logs()
    except Exception:  # noqa: BLE001  (unreadable logs must not take the overview down)
        return None
    series = []
    for _, parsed in loaded.metrics:
        for report in parsed.reports:
            metric = report.metrics.get("CompileTime")
            if report.step is not None and metric is not None and metric.total_samples is not None:
                series.append((report.step, metric.total_samples))
    series.sort()
    if len(series) <= WARMUP_REPORTS:
        return None
    baseline = series[WARMUP_REPORTS - 1][1]
    later = [(step, samples) for step, samples in series[WARMUP_REPORTS:] if samples > baseline]
    if not later:
        return None
    extra = series[-1][1] - baseline
    growing = []
    previous = baseline
    for step, samples in series[WARMUP_REPORTS:]:
        if samples > previous:
            growing.append(step)
        previous = samples
    host = ctx.host_names[0] if ctx.host_names else "xla logs"
    return OverviewFinding(
        kind="recompile",
        host=host,
        title="Steady steps compile (XLA metrics)",
        observation=(
            f"The PyTorch/XLA metrics count {extra} compilation(s) after the first {WARMUP_REPORTS} reported "
            f"steps, in steps {', '.join(str(s) for s in growing[:10])}."
        ),
        hypothesis=HYPOTHESIS,
        next_check=NEXT_CHECK,
        rule=f"CompileTime samples grow after the first {WARMUP_REPORTS} per-step metrics reports",
        evidence=[count("compilations after warm-up", extra), count("steps compiling", len(growing))],
        link=OverviewLink(host=host, search="Compile"),
    )


RULE = Rule("recompile", check)
