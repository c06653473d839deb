"""Recompiling after warm-up: compilations in the steps after the first few, each a training stall.

Counted per step from the series (CompileTime samples) or from the PT_XLA_DEBUG log's Compilation
Analysis blocks; with one report only, judged on the run's whole rate as torch_xla's own tool does.
Each late compilation is compared with the closest earlier graph from the same user frame, so the
finding says what changed (a tensor size, and where it entered) and links the diff.
"""

from __future__ import annotations

from collections import Counter as Tally

from profscope.analysis.findings import Rule
from profscope.formats.xla.text import Frame
from profscope.tools.xla import graph_diff
from profscope.tools.xla.answers import XlaFinding, XlaFindingDiff, XlaShapeChange
from profscope.tools.xla.graph_list import Entry, user_frame
from profscope.tools.xla.rules.context import MAX_DIFF_ORIGINS, PER_STEP_THRESHOLD, WARMUP_STEPS, Context
from profscope.tools.xla.rules.evidence import Verdict, plural, steps_text
from profscope.tools.xla.rules.locations import locations, origin_locations
from profscope.units import format_duration

SINGLE_REPORT_MIN_STEPS = 10  # without a series, judge rates only after this many steps (as torch_xla does)
MAX_LISTED = 10  # late compilations described one by one; the rest are counted


def _compiles_per_step(ctx: Context) -> tuple[dict[int, float], str] | None:
    per_step = ctx.per_step(("CompileTime",))
    if per_step is not None:
        return per_step[0], f"CompileTime samples per step in {ctx.series.source if ctx.series else ''}"
    compiled = [a for a in ctx.analyses if a.kind == "compilation" and a.step is not None]
    if compiled:
        last = max(a.step for a in ctx.analyses if a.step is not None)
        counts: dict[int, float] = {s: 0.0 for s in range(last + 1)}
        for a in compiled:
            counts[a.step] = counts.get(a.step, 0.0) + 1
        return counts, "Compilation Analysis blocks of the PT_XLA_DEBUG log (steps counted from syncs)"
    return None


def _judge_late_steps(ctx: Context, verdict: Verdict) -> dict[int, float]:
    """Judge the compilations after warm-up; returns the late steps that compiled (with counts)."""
    per_step = _compiles_per_step(ctx)
    if per_step is None:
        _judge_single_report(ctx, verdict)
        return {}
    counts, source = per_step
    steps = sorted(counts)
    after = steps[WARMUP_STEPS:]
    if not after:
        return {}
    late_steps = {s: counts[s] for s in after if counts[s] > 0}
    total = sum(late_steps.values())
    if not total:
        return late_steps
    rate = total / len(after)
    verdict.conclude(
        "high" if rate > PER_STEP_THRESHOLD else "medium",
        f"{plural(int(total), 'compilation')} in the {len(after)} steps after warm-up "
        f"({rate:.2f} per step; PyTorch/XLA flags more than {PER_STEP_THRESHOLD}). Each one stalls "
        "training while XLA compiles.",
    )
    verdict.add("Steps with compilations after warm-up", steps_text(late_steps))
    warmup = sum(counts[s] for s in steps[:WARMUP_STEPS])
    verdict.add(
        "Warm-up", f"steps {steps[0]}–{steps[WARMUP_STEPS - 1]}: {plural(int(warmup), 'compilation')}"
    )
    verdict.add("Counted from", source)
    if ctx.series is not None and "CompileTime" in ctx.series.metric_names():
        times = dict(zip(ctx.series.steps, ctx.series.delta_accumulator("CompileTime")))
        verdict.add("Compile time after warm-up", format_duration(sum(times[s] for s in late_steps)))
    return late_steps


def _judge_single_report(ctx: Context, verdict: Verdict) -> None:
    if ctx.snapshot is None or "CompileTime" not in ctx.snapshot.metrics:
        return
    compiles = ctx.snapshot.metrics["CompileTime"].total_samples or 0
    steps_run = ctx.steps_run()
    if steps_run and steps_run > SINGLE_REPORT_MIN_STEPS and compiles / steps_run > PER_STEP_THRESHOLD:
        verdict.conclude(
            "high",
            f"{plural(compiles, 'compilation')} in {plural(steps_run, 'step')} ({compiles / steps_run:.2f} per "
            f"step). Only one report was found, so warm-up compilations are included; capture XLA_METRICS_FILE "
            "for a per-step count.",
        )


def check(ctx: Context) -> list[XlaFinding]:
    verdict = Verdict()
    late_steps = _judge_late_steps(ctx, verdict)
    verdict.add_profiler_messages(ctx.messages_of("too_frequent", "CompileTime"), decisive=True)
    if verdict.severity is None:
        return []
    frames: Tally[Frame] = Tally()
    diffs: list[XlaFindingDiff] = []
    late_compiles = [
        a for a in ctx.analyses if a.kind == "compilation" and a.step is not None and a.step in late_steps
    ]
    by_key = {e.record.key: e for e in reversed(ctx.entries)}
    listed = 0
    explained: set[str] = set()
    for analysis in late_compiles:
        frame = user_frame(analysis.frames)
        if frame is not None:
            frames[frame] += 1
        if listed >= MAX_LISTED:
            continue
        listed += 1
        text = (
            f"graph {(analysis.graph_hash or '?')[:12]} ({analysis.num_inputs} inputs, {analysis.num_outputs} outputs) "
            f"compiled because: {analysis.cause}"
        )
        entry = by_key.get(analysis.graph_hash or "")
        if entry is not None and entry.record.key not in explained:
            explained.add(entry.record.key)
            change = _explain_new_graph(ctx, entry)
            if change is not None:
                text += f"; {change.summary}"
                diffs.append(change)
        verdict.add(f"Step {analysis.step}", text)
    if len(late_compiles) > listed:
        distinct = len({a.graph_hash for a in late_compiles})
        verdict.add(
            "Not listed",
            f"{len(late_compiles) - listed} more compilations after warm-up ({distinct} distinct graphs "
            "in all); the Graphs tab lists every graph",
        )
    origins = origin_locations(diffs)
    fix = (
        "Keep every step's graph identical: same tensor shapes, same Python control flow on tensors. "
        "Compare the graph compiled after warm-up with the one it replaced (diff links below) to see what changed."
    )
    if origins:
        fix = (
            "The graphs compiled after warm-up differ only in tensor sizes, and the new sizes enter at the code "
            "location(s) below. Give those tensors a fixed size: pad or bucket variable batches and sequence "
            "lengths, use `drop_last=True` in the DataLoader for a smaller last batch. " + fix
        )
    elif ctx.shape_families:
        fix = "Some graphs differ only in tensor sizes (see the dynamic-shapes finding). " + fix
    finding = XlaFinding(
        id=RULE.id,
        severity=verdict.severity,
        title="Recompiling after warm-up",
        summary=verdict.summary,
        evidence=verdict.evidence,
        locations=[*origins, *locations(frames, "triggered the compilation")],
        steps=sorted(late_steps),
        diffs=diffs,
        fix=fix,
        sources=ctx.sources("metrics", "debug", "graphs"),
    )
    return [finding]


def _explain_new_graph(ctx: Context, entry: Entry) -> XlaFindingDiff | None:
    """Compare a newly compiled graph with the closest earlier graph from the same user frame."""
    frame = ctx.user_frames[entry.index]
    candidates = [
        e
        for e in ctx.entries[: entry.index]
        if e.record.key != entry.record.key and ctx.user_frames[e.index] == frame
    ]
    if not candidates:
        return None
    key = ctx.structure(entry)
    same = [e for e in candidates if key is not None and ctx.structure(e) == key]
    previous = (same or candidates)[-1]
    result = graph_diff.compare(previous.nodes(), entry.nodes())
    if result is None:
        return None
    if result.same_structure:
        where = "; ".join(_distinct_origins(result.origins)[:3])
        summary = (
            f"same graph as {previous.record.key[:12]} (step {previous.record.step}) but "
            f"{plural(len(result.shape_changes), 'node')} changed shape; the new size enters at: {where}"
        )
    else:
        summary = (
            f"differs from {previous.record.key[:12]} (step {previous.record.step}): "
            f"{len(result.added)} nodes added, {len(result.removed)} removed, "
            f"{len(result.shape_changes)} changed shape"
        )
    return XlaFindingDiff(
        a=previous.index,
        b=entry.index,
        summary=summary,
        same_structure=result.same_structure,
        origins=result.origins[:MAX_DIFF_ORIGINS],
    )


def _distinct_origins(origins: list[XlaShapeChange]) -> list[str]:
    """`op old → new at location`, each once (a size often enters through several identical nodes)."""
    out: list[str] = []
    for o in origins:
        where = o.location.label if o.location else "unknown location"
        text = f"{o.op} {o.shape_a} → {o.shape_b} at {where}"
        if text not in out:
            out.append(text)
    return out


RULE = Rule("recompilation", check)
