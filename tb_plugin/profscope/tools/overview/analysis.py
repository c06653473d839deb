"""The overview answer of one or more hosts: each host's analysis (`analysis.host`) with its
allocator's peak (`analysis.memory` for Kineto's `[memory]` events, `analysis.memory_xplane` for an
XPlane's allocator events: the higher of the two, Kineto's on a tie; added here, not in the host
analysis Compare shares), then the
merged tables, the ranks compared through their collectives (`analysis.collectives`) and findings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from profscope.analysis import breakdown, collectives, findings, memory, memory_xplane
from profscope.analysis import steps as steps_lib
from profscope.analysis.host import NO_TRACE, analyze_host, device_reason, tables
from profscope.analysis.results import HostInput, Options
from profscope.answers import UNSET
from profscope.tools.overview import rules
from profscope.tools.overview.answers import OverviewAnswer, OverviewFinding


def by_cost(found: list[OverviewFinding]) -> list[OverviewFinding]:
    """Findings by cost, highest share first (then the larger time per step); those without a cost
    (notes, costs the profile cannot give) after them, in rule order."""
    costed = [f for f in found if f.cost_share is not UNSET]
    rest = [f for f in found if f.cost_share is UNSET]
    return sorted(costed, key=lambda f: (-f.cost_share, -f.cost_ns)) + rest


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
    for r in results:
        peaks = [p for p in (memory.peak(r.events, r.steps), memory_xplane.peak(r.events, r.steps)) if p]
        if peaks:
            r.answer.memory_peak = max(peaks, key=lambda p: p.allocated_bytes)
    names = [r.events.name for r in results] or list(log_hosts)
    reasons = [None if r.events.has_device() else device_reason(r.events) for r in results]
    labels = sorted({label for r in results for label in r.layers.input_labels})
    out = OverviewAnswer(
        subject=subject,
        hosts=names,
        categories=breakdown.categories(reasons, labels, any(r.layers.runtime_observed for r in results)),
        per_host=[r.answer for r in results],
        tables=tables(results, options.group_by),
        findings=[],
        warnings=list(warnings),
    )
    ranks = collectives.ranks(results) if len(results) > 1 else None
    if ranks is not None:
        out.ranks = ranks
    if options.step_name:
        out.step_name = options.step_name
    if options.batch_size:
        out.batch_size = options.batch_size
    out.findings = by_cost(
        findings.run(rules.RULES, rules.Context(results, out.tables, names, xla_logs, ranks))
    )
    if not results:
        out.warnings.append(NO_TRACE)
    if any(r.answer.steps.source_kind == "none" for r in results):
        missing = [r.events.name for r in results if r.answer.steps.source_kind == "none"]
        out.warnings.append(f"no step markers on {', '.join(missing)}: {steps_lib.NO_STEPS}")
    return out
