"""`recompile`: XLA (or other) compilations in steady state.

From the trace: compilation slices (breakdown category `compilation`) inside the steady steps,
firing when they cover at least `MIN_COMPILE_SHARE` of the steady steps' wall time. Without steps
the steady state is what follows the program's first run: compilation after the first framework
op that starts once the first compilation has ended, as a share of the capture. Cost: that
compilation time, per steady step (over the capture without steps) and as that share.
From the hosts' PyTorch/XLA metrics logs (`ctx.xla_logs()`): the `CompileTime` sample count of the
per-step reports, firing when it still grows after the first `WARMUP_REPORTS` reports (the log's
warm-up: its first steps compile the graphs once); the logs give no step time, so that finding
states no cost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from profscope.analysis import breakdown, intervals
from profscope.analysis.answers import OverviewLink
from profscope.analysis.events import ROLE_OP
from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import (
    Context,
    cost_words,
    costed,
    count,
    scope_link,
    scope_words,
    share,
    steady_steps,
)

if TYPE_CHECKING:
    from profscope.analysis.results import HostResult

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


def _from_trace(host: HostResult) -> OverviewFinding | None:
    compile_set = host.layers.sets[breakdown.CATEGORY_IDS.index("compilation")]
    if steady_steps(host):
        lo, hi = host.scope_lo, host.scope_hi
    else:
        after = _after_first_run(host, compile_set)
        if after is None:
            return None
        lo, hi = np.array([after], np.int64), host.scope_hi[-1:]
    covered = intervals.covered(compile_set, lo, hi)
    cost_ps = float(covered.sum())
    wall = float((host.scope_hi - host.scope_lo).sum())
    if wall <= 0 or cost_ps / wall < MIN_COMPILE_SHARE:
        return None
    if steady_steps(host):
        compiling = host.steps.numbers[np.flatnonzero(host.steady)][covered > 0].tolist()
        where = f"steps {', '.join(str(s) for s in compiling[:10])} compile"
    else:
        compiling = []
        where = "it compiles after the program's first run"
    finding = OverviewFinding(
        kind="recompile",
        host=host.events.name,
        title="Steady steps compile",
        observation=(
            f"Compilation takes {cost_ps / wall * 100:.1f} % of the wall time of {scope_words(host)}; {where}. "
            f"It costs {cost_words(host, cost_ps)}."
        ),
        hypothesis=HYPOTHESIS,
        next_check=NEXT_CHECK,
        rule=f"compilation ≥ {MIN_COMPILE_SHARE:.0%} of the steady steps' wall time",
        evidence=[
            share("compilation share of wall time", cost_ps / wall),
            count("steady steps compiling", len(compiling)),
        ],
        link=scope_link(host, "Compile"),
    )
    return costed(finding, host, cost_ps)


def _after_first_run(host: HostResult, compile_set: intervals.Intervals) -> int | None:
    """Without steps: the start of the first framework op after the first compilation ended (the
    program's first run), or None when nothing compiles or nothing runs after it."""
    if not len(compile_set):
        return None
    events = host.events
    ops = events.of_roles(ROLE_OP)
    starts = events.trace.ev_start_ps[ops]
    later = starts[starts >= compile_set.end[0]]
    return int(later.min()) if later.shape[0] else None


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
