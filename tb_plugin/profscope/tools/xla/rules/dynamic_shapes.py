"""Dynamic shapes: the same graph (ops and wiring) run with different tensor sizes, each size a new
compilation. Found by comparing the graph dumps (with the nodes where a new size entered and their
source lines), or from X10's `XLA_LOG_GRAPH_CHANGES` notes."""

from __future__ import annotations

from collections import Counter as Tally

from profscope.analysis.findings import Rule
from profscope.formats.xla.text import Frame
from profscope.tools.xla.answers import XlaFinding, XlaFindingDiff
from profscope.tools.xla.graph_list import user_frame
from profscope.tools.xla.rules.context import Context, ShapeFamily
from profscope.tools.xla.rules.evidence import Verdict, plural
from profscope.tools.xla.rules.locations import locations, origin_locations

MAX_SIZE_HISTORIES = 4  # origin nodes whose sizes a family's evidence follows


def _family_evidence(family: ShapeFamily, frame: Frame | None) -> str:
    """The family's members, and each origin node's size from member to member. Members share their
    structure, so a node keeps its name (%N) across them."""
    origin_shapes: dict[str, list[str]] = {}
    for d in family.diffs:
        for o in d.origins:
            where = o.location.label if o.location else "unknown location"
            shapes = origin_shapes.setdefault(f"{o.op} {o.a.name} at {where}", [o.shape_a])
            if shapes[-1] != o.shape_b:
                shapes.append(o.shape_b)
    members = ", ".join(f"{m.record.key[:12]} at step {m.record.step}" for m in family.members)
    sizes = "; ".join(
        f"{where}: {' → '.join(shapes)}" for where, shapes in list(origin_shapes.items())[:MAX_SIZE_HISTORIES]
    )
    return f"{len(family.members)} size variants ({members}); sizes: {sizes}"


def check(ctx: Context) -> list[XlaFinding]:
    families = ctx.shape_families
    changes = [
        e for e in ctx.entries if e.record.change is not None and e.record.change.kind == "different_shape"
    ]
    if not families and not changes:
        return []
    verdict = Verdict()
    diffs: list[XlaFindingDiff] = []
    trigger_frames: Tally[Frame] = Tally()
    for family in families:
        frame = user_frame(family.members[0].record.frames)
        if frame is not None:
            trigger_frames[frame] += len(family.members)
        verdict.add(
            f"Graph from {frame.label() if frame else 'unknown frame'}", _family_evidence(family, frame)
        )
        diffs.extend(family.diffs)
    change_frames: Tally[Frame] = Tally()
    for entry in changes:
        change = entry.record.change
        assert change is not None
        verdict.add(
            f"Graph change logged at record {entry.index}",
            f"{change.node or '?'}: {change.previous_shape} → {change.current_shape}",
        )
        if change.current_trace:
            change_frames[user_frame(change.current_trace) or change.current_trace[0]] += 1
    finding = XlaFinding(
        id=RULE.id,
        severity="high",
        title="Dynamic shapes: the same graph with different tensor sizes",
        summary=(
            f"{plural(len(families) + len(changes), 'graph')} ran with changing tensor sizes; XLA compiles a new "
            "program for every distinct size. The nodes where a size first differs are listed with their source lines."
        ),
        evidence=verdict.evidence,
        locations=[
            *origin_locations(diffs),
            *locations(change_frames, "built the node whose shape changed"),
            *locations(trigger_frames, "triggered the graph"),
        ],
        steps=sorted({m.record.step for f in families for m in f.members if m.record.step is not None}),
        diffs=diffs,
        fix=(
            "Make those sizes constant: pad inputs to a fixed length or to a few bucket sizes, use `drop_last=True` "
            "for the last partial batch, and avoid ops whose output size depends on data (`nonzero`, `x[mask]`, "
            "`unique`)."
        ),
        sources=ctx.sources("graphs"),
    )
    return [finding]


RULE = Rule("dynamic_shapes", check)
