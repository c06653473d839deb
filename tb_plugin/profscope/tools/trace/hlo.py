"""`hlo`: an XLA op in its HLO module, for the Graph section of the trace's details panel.

`hlo?run=&session=&host=&program_id=&op=[&host_index=0][&radius=2][&full=1]`, or `event=ID` instead
of the last three: the op a trace event names (`event_op`). JavaScript cannot hold a 64-bit
`program_id`, so the view starts from the event and walks on with the `program_id` string the
answers give. An `HloOp` holds the module's name, the instruction as XLA prints it, the fused
computation of a fusion, the instructions around it as nodes, edges and DOT (`hlo_graph`), and with
`full=1` the whole module's text. Only the program asked for is decoded (all of them to find the
module of an event without a `program_id`), and `HostContext.hlo_modules` keeps them decoded. A
profile without HloProtos (PyTorch traces, some TensorFlow XPlanes) answers `NoHloModule`, an event
that names no instruction `NotAnXlaOp`; a missing program or op is a 404.
"""

from __future__ import annotations

import re

from tensorboard import errors

from profscope.answers import UNSET, Answer, UnsetType
from profscope.context import HostContext
from profscope.engine.answers import TraceEvent
from profscope.formats.hlo.proto import HloInstruction, HloModule, HloModules
from profscope.formats.hlo.text import computation_lines, instruction_text, module_text
from profscope.formats.xplane.hlo import signed_program_id
from profscope.params import Params
from profscope.tools.trace import hlo_graph

DEFAULT_RADIUS = 2
MAX_RADIUS = 6
# Nodes drawn at most: the nearest ones are kept (a graph of more is unreadable in the panel).
MAX_GRAPH_NODES = 80
# Instruction lines of the whole-module text at most (about 200 bytes each).
MAX_MODULE_INSTRUCTIONS = 20_000
NO_HLO_MODULE = "the profile carries no HLO module"
_UINT64 = re.compile(r"^\d{1,20}$")
_LONG_NAME = re.compile(r"^%(\S+) = ")


class HloNode(Answer, gc=False):
    """An instruction of the graph: `distance` edges from the op, `hidden` neighbours not drawn."""

    name: str
    opcode: str
    shape: str
    distance: int
    hidden: int


class HloEdge(Answer, gc=False):
    """`operand` is the `position`-th operand of `user` (its first position, if used more often)."""

    operand: str
    user: str
    position: int


class HloFusion(Answer):
    """A fusion's fused computation: each instruction as XLA prints it, the root's after `ROOT `."""

    name: str
    instructions: list[str]


class HloModuleText(Answer):
    """The whole module as text; `truncated` when only the first `shown` of `total` instructions are."""

    text: str
    shown: int
    total: int
    truncated: bool


class HloOp(Answer, kw_only=True, tag_field="kind", tag="op"):
    """`hlo`: the op `op` of program `program_id` (unsigned decimal, as events name it) on the
    timeline's `host_index`-th host. `callers` call the op's computation (the fusion of a fused
    instruction). `capped`: instructions within `radius` were left out (`note` says how many)."""

    subject: str
    host_index: int
    program_id: str
    module: str
    computation: str
    op: str
    opcode: str
    text: str
    op_name: str
    source: str
    callers: list[str]
    fusion: HloFusion | UnsetType = UNSET
    radius: int
    nodes: list[HloNode]
    edges: list[HloEdge]
    capped: bool
    note: str | UnsetType = UNSET
    dot: str
    module_text: HloModuleText | UnsetType = UNSET


class NoHloModule(Answer, tag_field="kind", tag="no-module"):
    """`hlo` where the host's profile carries no HloProto: nothing to draw, and `reason` says so."""

    subject: str
    host_index: int
    reason: str


class NotAnXlaOp(Answer, tag_field="kind", tag="not-an-op"):
    """`hlo?event=` for an event that names no instruction of the host's HLO modules (a host thread's
    own span, a compiler pass): the view shows no Graph section for it."""

    subject: str
    host_index: int
    reason: str


def parse_program_id(text: str) -> int:
    """The unsigned 64-bit decimal events carry, as the signed key the HloProtos are stored by."""
    if not _UINT64.match(text) or int(text) >= 1 << 64:
        raise errors.InvalidArgumentError(
            f"query parameter 'program_id' must be an unsigned 64-bit integer, got {text[:40]!r}"
        )
    return signed_program_id(int(text))


def unsigned(program_id: int) -> str:
    return str(program_id % (1 << 64))


def find_module(modules: HloModules, program_id: int) -> HloModule | None:
    """The module of a (signed) program id. HloProtos are keyed by the id of their metadata-plane
    event; where that is no program id (JAX CPU XPlanes number them 1, 2, … and name the program id
    in a `program_id` stat), the module whose own HloModuleProto id is the program's is the one."""
    keyed = modules.get(program_id)
    if keyed is not None and keyed.id == program_id:
        return keyed
    by_module_id = [modules[key] for key in modules if modules[key].id == program_id]
    return by_module_id[0] if len(by_module_id) == 1 else keyed


def program_of(modules: HloModules, key: int) -> int:
    """The program id events name for the module stored under `key` (see `find_module`)."""
    return key if find_module(modules, key) is modules[key] else modules[key].id


def _event(ctx: HostContext, event_id: int) -> TraceEvent:
    try:
        return ctx.timeline().event(event_id)
    except KeyError as e:
        raise errors.NotFoundError(f"{ctx.label}: no event with id {event_id}") from e


def _op_names(event: TraceEvent) -> list[str]:
    """The instruction an event may name, most specific first: the `%name` its `long_name` starts
    with (TPU XLA ops; async ones are named after their kind), its `hlo_op` (GPU kernels, CPU
    thunks), its own name (host-side thunks and derived XLA Ops lines of GPU XPlanes)."""
    long_name = _LONG_NAME.match(str(event.args.get("long_name", "")))
    hlo_op = event.args.get("hlo_op")
    found = [long_name.group(1) if long_name else "", hlo_op if isinstance(hlo_op, str) else "", event.name]
    return list(dict.fromkeys(name for name in found if name))


def event_op(
    ctx: HostContext, modules: HloModules, event: TraceEvent
) -> tuple[int, HloModule, HloInstruction] | None:
    """(program id, module, instruction) of the op an event names, None when it names none. With a
    `program_id` argument the program must hold it (404 otherwise); without one, the instruction's
    name must be in one module only (of the `hlo_module` argument's name, when it has one)."""
    names, program = _op_names(event), event.args.get("program_id")
    if isinstance(program, int) and not isinstance(program, bool) and 0 <= program < 1 << 64:
        module = find_module(modules, signed_program_id(program))
        if module is None:
            raise errors.NotFoundError(f"{ctx.label}: no XLA program {program} in the profile")
        for name in names:
            op = module.instruction(name)
            if op is not None:
                return signed_program_id(program), module, op
        raise errors.NotFoundError(
            f"{ctx.label}: no op {names[0]!r} in XLA program {program} (module {module.name!r})"
        )
    wanted_module = event.args.get("hlo_module")
    for name in names:
        holders = [
            (key, module, op)
            for key in modules
            if wanted_module in (None, (module := modules[key]).name) and (op := module.instruction(name))
        ]
        if len(holders) == 1:
            key, module, op = holders[0]
            return program_of(modules, key), module, op
    return None


def _source(ins: HloInstruction) -> str:
    meta = ins.metadata
    return f"{meta.source_file}:{meta.source_line}" if meta.source_file else ""


def _callers(module: HloModule, ins: HloInstruction) -> list[str]:
    computation_id = ins.computation.id
    return [c.name for c in module.instructions() if computation_id in c.called_computation_ids]


def op_answer(
    subject: str,
    host_index: int,
    program_id: int,
    module: HloModule,
    op: HloInstruction,
    radius: int,
    full: bool,
) -> HloOp:
    """The answer for `op` of `module`; reads only its computation and the neighbours drawn."""
    hood = hlo_graph.neighbourhood(op, radius, MAX_GRAPH_NODES)
    fused = op.fused_computation
    listing = UNSET
    if full:
        text, shown, total = module_text(module, MAX_MODULE_INSTRUCTIONS)
        listing = HloModuleText(text=text, shown=shown, total=total, truncated=shown < total)
    return HloOp(
        subject=subject,
        host_index=host_index,
        program_id=unsigned(program_id),
        module=module.name,
        computation=op.computation.name,
        op=op.name,
        opcode=op.opcode,
        text=instruction_text(module, op),
        op_name=op.metadata.op_name,
        source=_source(op),
        callers=_callers(module, op),
        fusion=HloFusion(name=fused.name, instructions=computation_lines(module, fused)) if fused else UNSET,
        radius=radius,
        nodes=[
            HloNode(
                name=ins.name,
                opcode=ins.opcode,
                shape=ins.shape.text(layout=False),
                distance=distance,
                hidden=hood.hidden[ins.id],
            )
            for ins, distance in hood.nodes
        ],
        edges=[HloEdge(operand=a.name, user=b.name, position=p) for a, b, p in hood.edges],
        capped=hood.capped,
        note=f"showing the {len(hood.nodes)} nearest of {hood.within} instructions within {radius} edges"
        if hood.capped
        else UNSET,
        dot=hlo_graph.dot(hood),
        module_text=listing,
    )


def _modules(ctx: HostContext, host_index: int) -> HloModules | None:
    try:
        return ctx.hlo_modules(host_index)
    except IndexError as e:
        raise errors.NotFoundError(str(e)) from e


def hlo(ctx: HostContext, params: Params) -> HloOp | NoHloModule | NotAnXlaOp:
    """`hlo?program_id=&op=` or `hlo?event=`: the op in its module, or why there is none to show."""
    radius = params.int("radius", DEFAULT_RADIUS)
    if radius > MAX_RADIUS:
        raise errors.InvalidArgumentError(f"query parameter 'radius' must be within 0..{MAX_RADIUS}")
    full = params.int("full", 0)
    if full > 1:
        raise errors.InvalidArgumentError("query parameter 'full' must be 0 or 1")
    event_id = params.optional_int("event")
    if event_id is not None:
        return _event_answer(ctx, event_id, radius, bool(full))
    host_index = params.int("host_index", 0)
    program_id, op_name = parse_program_id(params.required("program_id")), params.required("op")
    modules = _modules(ctx, host_index)
    if not modules:
        return NoHloModule(subject=ctx.label, host_index=host_index, reason=NO_HLO_MODULE)
    module = find_module(modules, program_id)
    if module is None:
        raise errors.NotFoundError(
            f"{ctx.label}: no XLA program {unsigned(program_id)} in the profile "
            f"(it holds {len(modules)} program{'s' * (len(modules) != 1)})"
        )
    op = module.instruction(op_name)
    if op is None:
        raise errors.NotFoundError(
            f"{ctx.label}: no op {op_name!r} in XLA program {unsigned(program_id)} (module {module.name!r})"
        )
    return op_answer(ctx.label, host_index, program_id, module, op, radius, bool(full))


def _event_answer(
    ctx: HostContext, event_id: int, radius: int, full: bool
) -> HloOp | NoHloModule | NotAnXlaOp:
    event = _event(ctx, event_id)
    modules = _modules(ctx, event.host)
    if not modules:
        return NoHloModule(subject=ctx.label, host_index=event.host, reason=NO_HLO_MODULE)
    found = event_op(ctx, modules, event)
    if found is None:
        reason = f"event {event_id} ({event.name!r}) names no instruction of the profile's HLO modules"
        return NotAnXlaOp(subject=ctx.label, host_index=event.host, reason=reason)
    program_id, module, op = found
    return op_answer(ctx.label, event.host, program_id, module, op, radius, full)
