"""Very long compilations: one over a minute, from the CompileTime percentiles or the debug tool's
"too slow" message. Percentiles cover only the runtime's recent samples, and the finding says so."""

from __future__ import annotations

import math

from profscope.analysis.findings import Rule
from profscope.tools.xla.answers import XlaFinding
from profscope.tools.xla.rules.context import Context
from profscope.tools.xla.rules.evidence import Verdict, plural
from profscope.units import format_duration

LONG_COMPILE_NS = 60e9


def check(ctx: Context) -> list[XlaFinding]:
    metric = ctx.snapshot.metrics.get("CompileTime") if ctx.snapshot is not None else None
    values = [v.value for _, v in metric.percentiles if math.isfinite(v.value)] if metric else []
    slow_messages = ctx.messages_of("too_slow", "CompileTime")
    candidates = [max(values)] if values else []
    if slow_messages:
        candidates.append(max(m.duration_ns or 0.0 for m in slow_messages))
    worst = max(candidates) if candidates else None
    if worst is None or worst <= LONG_COMPILE_NS:
        return []
    verdict = Verdict()
    verdict.add("Longest compilation", format_duration(worst))
    if metric is not None and metric.accumulator is not None:
        verdict.add(
            "All compilations",
            f"{plural(metric.total_samples or 0, 'compilation')}, {format_duration(metric.accumulator.value)} in total",
        )
        median = next((v.value for p, v in metric.percentiles if p == 50.0), None)
        if median is not None:
            verdict.add("Median (recent samples)", format_duration(median))
    verdict.add_profiler_messages(slow_messages, decisive=False)
    finding = XlaFinding(
        id=RULE.id,
        severity="medium",
        title="Very long compilations",
        summary=(
            f"A compilation took {format_duration(worst)} (threshold {format_duration(LONG_COMPILE_NS)}). "
            "Percentiles cover the runtime's recent samples only (1024 by default)."
        ),
        evidence=verdict.evidence,
        fix=(
            "Large graphs compile slowly: sync more often to cut the step into smaller graphs, avoid Python loops "
            "that unroll into the graph, and set XLA_PERSISTENT_CACHE_PATH (or `xr.initialize_cache`) so later runs "
            "reuse compiled programs."
        ),
        sources=ctx.sources("metrics", "debug"),
    )
    return [finding]


RULE = Rule("long_compile", check)
