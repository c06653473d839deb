"""Graphs growing step after step: the same code builds a larger graph every step (an unrolled loop,
a tensor accumulating history), so every step compiles. Seen in the graph dumps (node counts per
triggering frame) or in the series (mean TensorsGraphSize per step after warm-up)."""

from __future__ import annotations

from collections import Counter as Tally

from profscope.analysis.findings import Rule
from profscope.formats.xla.text import Frame
from profscope.tools.xla.answers import XlaFinding
from profscope.tools.xla.graph_list import Entry, user_frame
from profscope.tools.xla.rules.context import WARMUP_STEPS, Context
from profscope.tools.xla.rules.evidence import Verdict
from profscope.tools.xla.rules.locations import locations
from profscope.units import format_count

GROWTH_MIN_RECORDS = 4


def _longest_growth(group: list[Entry]) -> list[Entry]:
    """The longest run of records whose node count grows (a repeat of the same graph continues it)."""
    best: list[Entry] = []
    current: list[Entry] = []
    for entry in group:
        if current and entry.record.num_nodes > current[-1].record.num_nodes:
            current.append(entry)
        elif (
            current
            and entry.record.num_nodes == current[-1].record.num_nodes
            and entry.record.key == current[-1].record.key
        ):
            continue
        else:
            current = [entry]
        if len(current) > len(best):
            best = list(current)
    return best


def _growth_in_series(ctx: Context) -> list[tuple[int, float]]:
    """The longest run of steps after warm-up whose mean TensorsGraphSize grows."""
    series = ctx.series
    if series is None or series.x_label != "step" or "TensorsGraphSize" not in series.metric_names():
        return []
    sizes = series.delta_accumulator("TensorsGraphSize")
    counts = series.delta_samples("TensorsGraphSize")
    means = [(s, a / c) for s, a, c in zip(series.steps, sizes, counts) if c]
    best: list[tuple[int, float]] = []
    current: list[tuple[int, float]] = []
    for item in means[WARMUP_STEPS:]:
        current = current + [item] if current and item[1] > current[-1][1] else [item]
        if len(current) > len(best):
            best = current
    return best


def check(ctx: Context) -> list[XlaFinding]:
    by_frame: dict[Frame | None, list[Entry]] = {}
    for entry in ctx.entries:
        by_frame.setdefault(user_frame(entry.record.frames), []).append(entry)
    verdict = Verdict()
    frames: Tally[Frame] = Tally()
    steps: set[int] = set()
    for frame, group in by_frame.items():
        run = _longest_growth(group)
        if len(run) >= GROWTH_MIN_RECORDS:
            verdict.add(
                f"Graphs from {frame.label() if frame else 'unknown frame'}",
                " → ".join(format_count(e.record.num_nodes) for e in run)
                + f" nodes (records {run[0].index}–{run[-1].index})",
            )
            if frame is not None:
                frames[frame] += len(run)
            steps.update(e.record.step for e in run if e.record.step is not None)
    growth = _growth_in_series(ctx)
    if len(growth) >= GROWTH_MIN_RECORDS:
        verdict.add(
            "Mean TensorsGraphSize per step",
            ", ".join(f"step {s}: {format_count(round(m))} nodes" for s, m in growth),
        )
        steps.update(s for s, _ in growth)
    if not verdict.evidence:
        return []
    finding = XlaFinding(
        id=RULE.id,
        severity="high",
        title="Graphs grow step after step",
        summary=(
            "The same code builds a larger graph every step, so every step compiles a new program. A Python loop "
            "whose trip count grows is being unrolled into the graph, or a tensor keeps accumulating history."
        ),
        evidence=verdict.evidence,
        locations=locations(frames, "triggered the growing graph"),
        steps=sorted(steps),
        fix=(
            "Sync inside the loop (`torch_xla.sync()`), `.detach()` tensors that carry state across steps "
            "(running sums of the loss), or express the loop with `torch_xla.experimental.fori_loop` / `scan`."
        ),
        sources=ctx.sources("graphs", "metrics"),
    )
    return [finding]


RULE = Rule("growing_graph", check)
