"""One side of a comparison: the shared analysis (`profscope.analysis`) of one host (steps, warm-up split,
breakdown, devices, op tables, each allocator's peak: `analysis.memory_peaks`), cached per (trace,
step marker), and what the comparison reads from it. Nothing here measures anything the overview does not."""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from profscope.analysis import breakdown, memory_peaks
from profscope.analysis import host as host_analysis
from profscope.analysis.answers import OverviewCategory, OverviewTables
from profscope.analysis.memory_peaks import DevicePeak
from profscope.analysis.results import HostResult, Options
from profscope.context import HostContext
from profscope.engine.timeline import Timeline
from profscope.tools.compare.answers import CompareSide, CompareStep

SIDES_CACHED = 16
# "GPU 0 (NVIDIA A100-SXM4-80GB)" → the model in parentheses; "/device:TPU:3" → "/device:TPU".
_MODEL = re.compile(r"\((?P<model>[^()]+)\)\s*$")
_ORDINAL = re.compile(r"[\s:#]*\d+$")


@dataclasses.dataclass(frozen=True)
class Side:
    """One analysed side: the overview's host result, its tables and categories, the answer's
    `CompareSide`, and each allocator's peak (none without allocator events)."""

    result: HostResult
    tables: OverviewTables
    categories: list[OverviewCategory]
    answer: CompareSide
    memory: list[DevicePeak]

    @property
    def windows(self) -> int:
        return self.answer.windows

    @property
    def steady_wall_ns(self) -> np.ndarray:
        """The steady steps' wall times (ns), empty without steps."""
        steps = self.result.steps
        return (steps.wall_ps[self.result.steady].astype(np.float64) / 1e3) if len(steps) else np.zeros(0)

    @property
    def per_step_parts(self) -> dict[str, float]:
        """The median of each category's part over the steady steps; the whole capture's parts
        when there are no steps."""
        host = self.result.answer
        if len(self.result.steps):
            return dict(host.steady.per_step_median)
        return dict(host.capture.parts)


def device_model(name: str) -> str:
    """The model a device row names, without its ordinal (two GPUs of one model are one model)."""
    found = _MODEL.search(name)
    return found.group("model").strip() if found else _ORDINAL.sub("", name).strip()


def analyse(ctx: HostContext, timeline: Timeline, step_name: str | None) -> Side:
    """The side of `ctx` (one host) over `timeline`, cached by the trace and the step marker."""
    return ctx.cache("compare.sides", SIDES_CACHED).get(
        (timeline.key, step_name), lambda: _build(ctx, timeline, step_name)
    )


def _build(ctx: HostContext, timeline: Timeline, step_name: str | None) -> Side:
    (host,) = ctx.host_inputs(timeline)
    result = host_analysis.analyze_host(host, Options(step_name=step_name))
    tables = host_analysis.tables([result], "name")
    has_device = result.events.has_device()
    reason = None if has_device else host_analysis.device_reason(result.events)
    categories = breakdown.categories(
        [reason], list(result.layers.input_labels), result.layers.runtime_observed
    )
    steps = result.answer.steps
    answer = CompareSide(
        run=ctx.run.name,
        session=ctx.session.name,
        host=ctx.hosts[0].name,
        format=result.answer.format,
        step_source_kind=steps.source_kind,
        step_source=steps.source,
        steps=[CompareStep(number=r.number, wall_ns=r.wall_ns, phase=r.phase) for r in steps.rows],
        scope=result.scope,
        windows=int(result.steady.sum()) if len(result.steps) else 1,
        devices=sorted(device_model(d.name) for d in result.answer.devices.devices),
    )
    if steps.message:
        answer.step_message = steps.message
    if steps.split:
        answer.split_verdict = steps.split.verdict
    if steps.stats:
        answer.stats = steps.stats
    if reason is not None:
        answer.device_reason = reason
    memory = memory_peaks.device_peaks(result.events, result.steps)
    return Side(result=result, tables=tables, categories=categories, answer=answer, memory=memory)
