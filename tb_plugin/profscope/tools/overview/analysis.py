"""The overview answer of one or more hosts: each host's analysis (`analysis.host`), then the merged
tables, multi-rank comparisons and findings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from profscope.analysis import breakdown, findings
from profscope.analysis import steps as steps_lib
from profscope.analysis.host import NO_TRACE, analyze_host, device_reason, tables
from profscope.analysis.results import HostInput, HostResult, Options
from profscope.tools.overview import rules
from profscope.tools.overview.answers import OverviewAnswer, OverviewSlowestRank


def slowest_ranks(results: Sequence[HostResult]) -> list[OverviewSlowestRank]:
    """Per step number seen on two or more hosts: the slowest host and its spread."""
    if len(results) < 2:
        return []
    walls: dict[int, list[tuple[float, str]]] = {}
    for r in results:
        for number, wall in zip(r.steps.numbers.tolist(), r.steps.wall_ps.tolist()):
            walls.setdefault(number, []).append((wall / 1e3, r.events.name))
    out = []
    for number, seen in sorted(walls.items()):
        if len(seen) < 2:
            continue
        wall, host = max(seen)
        median = float(np.median([w for w, _ in seen]))
        out.append(
            OverviewSlowestRank(
                step=number,
                hosts=len(seen),
                slowest_host=host,
                slowest_wall_ns=wall,
                median_wall_ns=median,
                spread=wall / median if median > 0 else 1.0,
            )
        )
    return out


def answer(
    subject: str,
    hosts: Sequence[HostInput],
    options: Options,
    xla_logs: Callable[[], object] | None = None,
    warnings: Sequence[str] = (),
    log_hosts: Sequence[str] = (),
) -> OverviewAnswer:
    """The overview of `hosts` under `options`; `xla_logs` opens the PyTorch/XLA logs of the request's
    hosts (for the recompile rule) when there are any. With no trace (`hosts` empty: a host of XLA
    logs only) only the findings from the logs are given, `log_hosts` naming the hosts."""
    results = [analyze_host(h, options) for h in hosts]
    names = [r.events.name for r in results] or list(log_hosts)
    reasons = [None if r.events.has_device() else device_reason(r.events) for r in results]
    labels = sorted({label for r in results for label in r.layers.input_labels})
    out = OverviewAnswer(
        subject=subject,
        hosts=names,
        categories=breakdown.categories(reasons, labels),
        per_host=[r.answer for r in results],
        slowest_ranks=slowest_ranks(results),
        tables=tables(results, options.group_by),
        findings=[],
        warnings=list(warnings),
    )
    if options.step_name:
        out.step_name = options.step_name
    if options.batch_size:
        out.batch_size = options.batch_size
    out.findings = findings.run(rules.RULES, rules.Context(results, out.tables, names, xla_logs))
    if not results:
        out.warnings.append(NO_TRACE)
    if any(r.answer.steps.source_kind == "none" for r in results):
        missing = [r.events.name for r in results if r.answer.steps.source_kind == "none"]
        out.warnings.append(f"no step markers on {', '.join(missing)}: {steps_lib.NO_STEPS}")
    return out
