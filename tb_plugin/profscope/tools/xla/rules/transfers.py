"""Frequent device→host transfers: more than PyTorch/XLA's 0.5 per step, from the transfer metric
and the step count, or from the debug tool's own "too frequent" message. Each one waits for the
device; the early executions that read values on the host are the code locations."""

from __future__ import annotations

from profscope.analysis.findings import Rule
from profscope.tools.xla.answers import XlaFinding
from profscope.tools.xla.rules.context import PER_STEP_THRESHOLD, TRANSFER_FROM_DEVICE, Context
from profscope.tools.xla.rules.evidence import Verdict, plural, steps_text
from profscope.tools.xla.rules.locations import locations
from profscope.units import format_bytes, format_duration


def check(ctx: Context) -> list[XlaFinding]:
    snapshot = ctx.snapshot
    name = next((n for n in TRANSFER_FROM_DEVICE if n in snapshot.metrics), None) if snapshot else None
    messages = [m for n in TRANSFER_FROM_DEVICE for m in ctx.messages_of("too_frequent", n)]
    if name is None and not messages:
        return []
    verdict = Verdict()
    steps_run = ctx.steps_run()
    per_step = ctx.per_step(TRANSFER_FROM_DEVICE)
    if name is not None and snapshot is not None:
        metric = snapshot.metrics[name]
        transfers = metric.total_samples or 0
        inbound = snapshot.metrics.get("InboundData")
        total_time = format_duration(metric.accumulator.value if metric.accumulator else None)
        verdict.add(name, f"{plural(transfers, 'transfer')}, {total_time} in total")
        if inbound is not None and inbound.accumulator is not None:
            verdict.add("InboundData", format_bytes(inbound.accumulator.value))
        if steps_run:
            rate = transfers / steps_run
            verdict.add("Per step", f"{rate:.2f} over {plural(steps_run, 'step')}")
            if rate > PER_STEP_THRESHOLD:
                verdict.conclude(
                    "high",
                    f"{plural(transfers, 'device→host transfer')} in {plural(steps_run, 'step')} ({rate:.2f} per "
                    f"step; PyTorch/XLA flags more than {PER_STEP_THRESHOLD}). Each one waits for the device and "
                    "stops the host from tracing ahead.",
                )
    if per_step is not None:
        counts, metric_name = per_step
        verdict.add(f"{metric_name} per step", steps_text(counts) or "none")
    verdict.add_profiler_messages(messages, decisive=True)
    if verdict.severity is None:
        return []
    finding = XlaFinding(
        id=RULE.id,
        severity=verdict.severity,
        title="Frequent device→host transfers",
        summary=verdict.summary,
        evidence=verdict.evidence,
        locations=locations(ctx.forced_executions(), "read a tensor value on the host"),
        steps=sorted(s for s, n in (per_step[0] if per_step else {}).items() if n),
        fix=(
            "Values read on the host (`.item()`, `float(loss)`, `print(tensor)`, `tensor.cpu()`, Python `if` on a "
            "tensor) each force an execution and a copy. Accumulate metrics on the device and read them every N "
            "steps after `torch_xla.sync()`, or use `xm.add_step_closure`."
        ),
        sources=ctx.sources("metrics", "debug"),
    )
    return [finding]


RULE = Rule("device_to_host", check)
