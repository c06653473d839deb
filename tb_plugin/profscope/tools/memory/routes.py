"""The `memory` route: the allocators of the selected hosts, built once per timeline, and the
compiler's view of one XLA program (`&program=` unsigned program id, `&program_host=` host index,
`&memory_space=` colour, default 0; without `program`, the program with the largest peak).

Per host trace (its cache fingerprint) the classified events come from `ctx.host_events` (shared
with the other tools) and the steps from `analysis.steps`; the answer is kept in the plugin's
single-flight cache `ctx.cache("memory", …)` by timeline. The programs come from
`ctx.hlo_modules`: their list per host trace (`memory_programs`), one program's view per (trace,
program, memory space) (`memory_program`), with the events that run its instructions
(`program_events`). While a trace is ingested `ctx.timeline()` raises and
the plugin answers 202.
"""

from __future__ import annotations

import functools

import msgspec
from tensorboard import errors

from profscope.analysis import memory_records, memory_xplane_records
from profscope.analysis import steps as host_steps
from profscope.context import HostContext
from profscope.engine.timeline import Timeline
from profscope.formats.hlo.buffers import buffer_assignment
from profscope.formats.registry import XPLANE
from profscope.formats.xplane.hlo import signed_program_id
from profscope.params import Params
from profscope.tools import Handler
from profscope.tools.memory import analysis, program, program_events
from profscope.tools.memory.answers import MemoryAnswer, MemoryDevice, ProgramMemory, ProgramSummary
from profscope.units import format_count

ANSWERS_CACHED = 32
NOT_OBSERVED = "memory not observed: record with profile_memory=True"
# What records allocator events in an XPlane: TensorFlow's BFC allocator (GPU, or the CPU with
# TF_CPU_ALLOCATOR_USE_BFC=true; its default CPU allocator writes none, docs/MEMORY.md).
NOT_OBSERVED_XPLANE = (
    "memory not observed: this XPlane holds no allocator events (TensorFlow's BFC allocator writes "
    "them: on GPU, or on CPU with TF_CPU_ALLOCATOR_USE_BFC=true) and no XLA program with a buffer assignment"
)
NOT_OBSERVED_XLA = (
    "allocator memory not observed: this profile has no allocator records; the compiler's plan of "
    "each XLA program is shown instead"
)
NO_ASSIGNMENT = "the XLA programs' HloProtos carry no buffer assignment"


def memory(ctx: HostContext, params: Params) -> MemoryAnswer:
    """`memory?run=&session=&host=[&program=&program_host=&memory_space=]`: each allocator's curve,
    peak, pairs, leaks and op table; the programs and one program's compiler view."""
    timeline = ctx.timeline()
    answer = _allocators(ctx, timeline)
    programs, with_protos = _programs(ctx, timeline)
    chosen = _chosen(ctx, timeline, programs, params)
    reason = answer.reason
    if not answer.observed and programs:
        reason = NOT_OBSERVED_XLA
    return msgspec.structs.replace(
        answer,
        reason=reason,
        programs=programs,
        program=chosen if chosen is not None else msgspec.UNSET,
        programs_reason=NO_ASSIGNMENT if with_protos and not programs else msgspec.UNSET,
    )


def _programs(ctx: HostContext, timeline: Timeline) -> tuple[list[ProgramSummary], bool]:
    """Every host's programs with a buffer assignment, and whether any host has HloProtos at all."""
    found: list[ProgramSummary] = []
    with_protos = False
    for i, host in enumerate(timeline.hosts):
        modules = ctx.hlo_modules(i)
        if not modules:
            continue
        with_protos = True
        cache = ctx.cache("memory_programs", ANSWERS_CACHED)
        found += cache.get(host.key, functools.partial(program.summaries, host.name, i, modules))
    return found, with_protos


def _chosen(
    ctx: HostContext, timeline: Timeline, programs: list[ProgramSummary], params: Params
) -> ProgramMemory | None:
    """The program `params` names (400 when it is no program id, 404 when the host has none of
    that id), else the one with the largest peak."""
    text = params.text("program")
    color = params.int("memory_space", 0)
    if text is None:
        if not programs:
            return None
        top = max(programs, key=lambda p: p.peak_bytes)
        host_index, key = top.host_index, signed_program_id(int(top.program_id))
    else:
        if not text.isdigit() or len(text) > 20 or int(text) >= 1 << 64:
            raise errors.InvalidArgumentError(
                f"query parameter 'program' must be an unsigned 64-bit integer, got {text[:40]!r}"
            )
        key = signed_program_id(int(text))
        named = params.optional_int("program_host")
        hosts = [named] if named is not None else [p.host_index for p in programs if p.program_id == text]
        if not hosts:
            raise errors.NotFoundError(f"{ctx.label}: no XLA program {text} with a buffer assignment")
        host_index = hosts[0]
    if not 0 <= host_index < len(timeline.hosts):
        raise errors.NotFoundError(
            f"{ctx.label}: no host {host_index} (the timeline has {len(timeline.hosts)})"
        )
    host = timeline.hosts[host_index]
    modules = ctx.hlo_modules(host_index)
    if not modules or key not in modules:
        raise errors.NotFoundError(f"{ctx.label}: host {host.name} has no XLA program {text}")

    def build() -> ProgramMemory:
        module = modules[key]
        assignment = buffer_assignment(module.data)
        if assignment is None:
            raise errors.NotFoundError(f"{ctx.label}: XLA program {text} carries no buffer assignment")
        view = program.program_memory((host.name, host_index), key, module, assignment, color)
        names = [b.instruction for b in view.live_at_peak]
        if view.peak_instruction:
            names.append(view.peak_instruction)
        named_as = program_events.events_program_ids(modules, key)
        found = program_events.instruction_events(ctx.host_events(host), named_as, names, host_index)
        return msgspec.structs.replace(view, instruction_events=found)

    return ctx.cache("memory_program", ANSWERS_CACHED).get((host.key, key, color), build)


def _allocators(ctx: HostContext, timeline: Timeline) -> MemoryAnswer:
    """The allocators' figures, once per timeline."""

    def build() -> MemoryAnswer:
        devices: list[MemoryDevice] = []
        warnings = list(timeline.warnings)
        step_source: str | None = None
        several = len(timeline.hosts) > 1
        for i, (host, offset) in enumerate(zip(timeline.hosts, timeline.offsets_ps)):
            events = ctx.host_events(host)
            found, skipped = memory_records.read(events)
            from_xplane, skipped_xplane = memory_xplane_records.read(events)
            found += from_xplane
            skipped = memory_records.Skipped(
                skipped.unreadable + skipped_xplane.unreadable,
                skipped.without_totals + skipped_xplane.without_totals,
            )
            if skipped.unreadable or skipped.without_totals:
                warnings.append(
                    f"{host.name}: {format_count(skipped.unreadable + skipped.without_totals)} allocator events "
                    "without readable allocator totals left out"
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
            xplanes = all(host.trace.format == XPLANE for host in timeline.hosts)
            reason = NOT_OBSERVED_XPLANE if xplanes else NOT_OBSERVED
            return MemoryAnswer(observed=False, reason=reason, devices=[], warnings=warnings, programs=[])
        return MemoryAnswer(
            observed=True,
            devices=devices,
            step_source=step_source if step_source else msgspec.UNSET,
            warnings=warnings,
            programs=[],
        )

    return ctx.cache("memory", ANSWERS_CACHED).get(timeline.key, build)


ROUTES: dict[str, Handler] = {"/memory": memory}
