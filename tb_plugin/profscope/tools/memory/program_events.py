"""The trace events that run an XLA program's instructions, so that the compiler view can link an
instruction to them: the Trace tab selects the first, and its details panel draws the instruction in
its program's HLO graph (the graph opens from an event; it has no link of its own).

An XPlane's XLA op events (CPU thunks, TPU XLA Ops lines) are named by the instruction they run and
name their program in a `program_id` stat (unsigned in the args, as the XPlane writes it; a signed
one is read as its 64-bit pattern). An event runs instruction i of the program stored under key k
when its name is i and its `program_id` names that program as the HLO graph resolves an event's
program: k itself (TPU, GPU), or the module's own HloModuleProto id where the XPlane numbers its
HloProtos 1, 2, … (JAX on CPU), each when no other module claims it. Instructions without such an event (parameters, constants, tuples, ops that
ran in no traced execution, kernels named otherwise) get none. At most `MAX_EVENTS` per instruction,
the first in the trace's order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from profscope.analysis import events as host_events
from profscope.analysis.events import HostEvents
from profscope.formats.hlo.proto import HloModules

MAX_EVENTS = 200  # the Trace tab's link carries at most this many ids (views/trace/linked_walk.ts)
_PROGRAM_ID = re.compile(rb'"program_id":(-?\d+)')


def _module_key(modules: HloModules, program_id: int) -> int | None:
    """The key of the module an event's (signed) program id names, as the HLO graph resolves it: the
    module stored under it when that module's own id is it, else the one module whose own id is it,
    else the module stored under it."""
    if program_id in modules and modules[program_id].id == program_id:
        return program_id
    by_own_id = [k for k in modules if modules[k].id == program_id]
    if len(by_own_id) == 1:
        return by_own_id[0]
    return program_id if program_id in modules else None


def events_program_ids(modules: HloModules, key: int) -> set[int]:
    """The (signed) program ids by which events name the module stored under `key`: its key and its
    own id, each when it resolves to this module (module docstring)."""
    return {p for p in (key, modules[key].id) if _module_key(modules, p) == key}


def instruction_events(
    events: HostEvents, program_ids: set[int], names: Iterable[str], host_index: int
) -> dict[str, list[int]]:
    """Instruction name → the timeline ids of the events that run it in a program named by one of
    `program_ids` (signed or unsigned), for the instructions of `names` that have any."""
    trace = events.trace
    wanted = {p % (1 << 64) for p in program_ids}
    wanted_names = set(names)
    ids = {i: s for i, s in enumerate(trace.strings) if s in wanted_names}
    if not ids:
        return {}
    candidates = np.flatnonzero(np.isin(trace.ev_name, list(ids)))
    found: dict[str, list[int]] = {}
    for index, raw in zip(candidates.tolist(), host_events.args_of(trace, candidates)):
        name = ids[int(trace.ev_name[index])]
        chosen = found.setdefault(name, [])
        if len(chosen) >= MAX_EVENTS:
            continue
        match = _PROGRAM_ID.search(raw)
        if match is not None and int(match.group(1)) % (1 << 64) in wanted:
            chosen.append((host_index << 32) + index)
    return {name: chosen for name, chosen in found.items() if chosen}
