"""More time compiling than executing (info): normal in a short run, a sign of changing graphs in a
long one. Read from the CompileTime and ExecuteTime accumulators of the report."""

from __future__ import annotations

from profscope.analysis.findings import Rule
from profscope.tools.xla.answers import XlaEvidence, XlaFinding
from profscope.tools.xla.rules.context import Context
from profscope.tools.xla.rules.evidence import plural
from profscope.units import format_duration


def check(ctx: Context) -> list[XlaFinding]:
    if ctx.snapshot is None:
        return []
    compile_metric = ctx.snapshot.metrics.get("CompileTime")
    execute_metric = ctx.snapshot.metrics.get("ExecuteTime")
    if compile_metric is None or execute_metric is None:
        return []
    if compile_metric.accumulator is None or execute_metric.accumulator is None:
        return []
    compile_ns, execute_ns = compile_metric.accumulator.value, execute_metric.accumulator.value
    if not compile_ns > execute_ns:
        return []
    finding = XlaFinding(
        id=RULE.id,
        severity="info",
        title="More time compiling than executing",
        summary=(
            f"Compilation took {format_duration(compile_ns)} ({plural(compile_metric.total_samples or 0, 'compilation')}), "
            f"execution {format_duration(execute_ns)} ({plural(execute_metric.total_samples or 0, 'execution')}). "
            "Normal for a short run; in a long run it means graphs keep changing."
        ),
        evidence=[
            XlaEvidence(label="CompileTime", value=format_duration(compile_ns)),
            XlaEvidence(label="ExecuteTime", value=format_duration(execute_ns)),
        ],
        fix="If the run is long, look at the recompilation and dynamic-shape findings; otherwise nothing to do.",
        sources=ctx.sources("metrics"),
    )
    return [finding]


RULE = Rule("compile_share", check)
