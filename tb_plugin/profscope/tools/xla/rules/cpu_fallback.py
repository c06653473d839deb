"""Ops falling back to the CPU: `aten::` counters of the metrics report, or the debug tool's
"Op(s) not lowered" message, each explained with the fix that applies to it.

`aten::_local_scalar_dense` is a value read on the host rather than a missing lowering, so alone it
makes the finding medium; the early executions those reads forced are the code locations.
"""

from __future__ import annotations

from profscope.analysis.findings import Rule
from profscope.tools.xla.answers import XlaFinding
from profscope.tools.xla.rules.context import Context
from profscope.tools.xla.rules.evidence import Verdict, plural, steps_text
from profscope.tools.xla.rules.locations import locations

HOST_READ = "aten::_local_scalar_dense"
FALLBACK_EXPLANATIONS = {
    HOST_READ: (
        "reads one tensor value on the host: `.item()`, `float(t)`, `int(t)`, `bool(t)`, `if t:` or printing "
        "a tensor. Each read stops tracing, runs the pending graph and copies the value to the CPU."
    ),
    "aten::nonzero": (
        "has an output size that depends on the data, which XLA's static shapes cannot express, so it runs on "
        "the CPU. `torch.nonzero`, `torch.where(cond)` with one argument, boolean-mask indexing `x[mask]` "
        "and `masked_select` all call it."
    ),
}
GENERIC_FALLBACK = (
    "has no XLA lowering in this PyTorch/XLA version, so the tensors go to the CPU, the op runs there and "
    "the result comes back."
)


def _fixes(ops: set[str], real_fallbacks: list[str]) -> list[str]:
    fixes = []
    if "aten::nonzero" in ops:
        fixes.append(
            "Replace data-dependent shapes with fixed-size masks: `torch.where(mask, x, 0)`, `x * mask`, "
            "`masked_fill`, or count with `mask.sum()` kept on the device instead of `nonzero` / `x[mask]`."
        )
    if HOST_READ in ops:
        fixes.append(
            "Keep values as tensors inside the step; read them (`.item()`, printing) every N steps after "
            "`torch_xla.sync()`, or in `xm.add_step_closure` so the read does not cut the step's graph."
        )
    others = [op for op in real_fallbacks if op not in FALLBACK_EXPLANATIONS]
    if others:
        fixes.append(
            f"{', '.join(others)}: use an equivalent op that XLA lowers, move it out of the training step, or "
            "ask for a lowering on the PyTorch/XLA issue tracker."
        )
    return fixes


def check(ctx: Context) -> list[XlaFinding]:
    counters = {}
    if ctx.snapshot is not None:
        counters = {n: c.value or 0 for n, c in ctx.snapshot.counters.items() if n.startswith("aten::")}
    not_lowered = ctx.messages_of("not_lowered")
    if not counters and not not_lowered:
        return []
    verdict = Verdict()
    series = ctx.series
    for name, value in sorted(counters.items(), key=lambda kv: -kv[1]):
        explanation = FALLBACK_EXPLANATIONS.get(name, GENERIC_FALLBACK)
        verdict.add(f"{name} ran {plural(value, 'time')} on the CPU", f"`{name}` {explanation}")
        if series is not None and series.x_label == "step" and name in series.counter_names():
            per_step = dict(zip(series.steps, series.delta_counter(name)))
            verdict.add(f"{name} per step", steps_text(per_step) or "none")
    verdict.add_profiler_messages(not_lowered[-1:], decisive=False)
    ops = set(counters) | {op for m in not_lowered for op in m.ops}
    real_fallbacks = sorted(op for op in ops if op != HOST_READ)
    forced = ctx.forced_executions()
    if forced:
        verdict.add(
            "Early executions to read a value on the host",
            ", ".join(f"{f.label()} ({n}×)" for f, n in forced.most_common()),
        )
    total = sum(counters.values())
    finding = XlaFinding(
        id=RULE.id,
        severity="high" if real_fallbacks else "medium",
        title="Ops falling back to the CPU",
        summary=(
            f"{plural(total, 'call')} of {plural(len(counters) or len(ops), 'op')} left the XLA graph for the CPU"
            f" ({', '.join(sorted(ops))})."
        ),
        evidence=verdict.evidence,
        locations=locations(forced, "read a tensor value on the host"),
        fix=" ".join(_fixes(ops, real_fallbacks)),
        sources=ctx.sources("metrics", "debug"),
    )
    return [finding]


RULE = Rule("cpu_fallback", check)
