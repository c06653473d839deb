"""The `memory` route: the allocators of the selected hosts, built once per timeline.

Per host trace (its cache fingerprint) the classified events come from `ctx.host_events` (shared
with the other tools) and the steps from `analysis.steps`; the answer is kept in the plugin's
single-flight cache `ctx.cache("memory", …)` by timeline. While a trace is ingested `ctx.timeline()`
raises and the plugin answers 202.
"""

from __future__ import annotations

import msgspec

from profscope.analysis import steps as host_steps
from profscope.context import HostContext
from profscope.params import Params
from profscope.tools import Handler
from profscope.tools.memory import analysis, records
from profscope.tools.memory.answers import MemoryAnswer, MemoryDevice
from profscope.units import format_count

ANSWERS_CACHED = 32
NOT_OBSERVED = "memory not observed: record with profile_memory=True"


def memory(ctx: HostContext, params: Params) -> MemoryAnswer:
    """`memory?run=&session=&host=`: each allocator's curve, peak, pairs, leaks and op table."""
    timeline = ctx.timeline()

    def build() -> MemoryAnswer:
        devices: list[MemoryDevice] = []
        warnings = list(timeline.warnings)
        step_source: str | None = None
        several = len(timeline.hosts) > 1
        for i, (host, offset) in enumerate(zip(timeline.hosts, timeline.offsets_ps)):
            events = ctx.host_events(host)
            found, skipped = records.read(events)
            if skipped.unreadable or skipped.without_totals:
                warnings.append(
                    f"{host.name}: {format_count(skipped.unreadable + skipped.without_totals)} [memory] events "
                    "without readable Total Allocated left out"
                )
            if not found:
                continue
            steps = host_steps.find(events, None)
            step_source = step_source or steps.source
            clock = analysis.HostClock(host.name, int(offset), i)
            for device in found:
                label = f"{host.name} · {device.label}" if several else device.label
                devices.append(analysis.device(device, events, steps, clock, label))
        if not devices:
            return MemoryAnswer(observed=False, reason=NOT_OBSERVED, devices=[], warnings=warnings)
        return MemoryAnswer(
            observed=True,
            devices=devices,
            step_source=step_source if step_source else msgspec.UNSET,
            warnings=warnings,
        )

    return ctx.cache("memory", ANSWERS_CACHED).get(timeline.key, build)


ROUTES: dict[str, Handler] = {"/memory": memory}
