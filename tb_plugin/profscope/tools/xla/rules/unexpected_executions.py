"""Executions inside a compiled region: the debug tool's Unexpected Execution Analysis blocks, where
PyTorch/XLA did not allow one (`torch_xla.compile`), usually a value read on the host."""

from __future__ import annotations

from collections import Counter as Tally

from profscope.analysis.findings import Rule
from profscope.formats.xla.text import Frame
from profscope.tools.xla.answers import XlaEvidence, XlaFinding, stack_frames
from profscope.tools.xla.graph_list import user_frame
from profscope.tools.xla.rules.context import Context
from profscope.tools.xla.rules.evidence import plural
from profscope.tools.xla.rules.locations import locations

MAX_LISTED = 10  # executions described one by one
MAX_STACKS = 3  # executions whose whole stack the finding carries


def check(ctx: Context) -> list[XlaFinding]:
    found = [a for a in ctx.analyses if a.kind == "unexpected_execution"]
    if not found:
        return []
    frames: Tally[Frame] = Tally()
    for a in found:
        frame = user_frame(a.frames)
        if frame is not None:
            frames[frame] += 1
    finding = XlaFinding(
        id=RULE.id,
        severity="high",
        title="Execution inside a compiled region",
        summary=f"{plural(len(found), 'execution')} happened where PyTorch/XLA did not allow one (torch_xla.compile).",
        evidence=[XlaEvidence(label=f"Line {a.line}", value=a.cause) for a in found[:MAX_LISTED]],
        locations=locations(frames, "forced the execution"),
        fix="Remove host reads (`.item()`, printing, `.cpu()`) from the compiled function.",
        sources=ctx.sources("debug"),
        frames=[stack_frames(a.frames) for a in found[:MAX_STACKS]],
    )
    return [finding]


RULE = Rule("unexpected_execution", check)
