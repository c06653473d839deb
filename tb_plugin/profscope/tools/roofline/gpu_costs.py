"""Costs of GPU XPlane ops from the HLO cost model, for kernels that carry no cost stats.

XLA's GPU kernels name their HLO instruction (`hlo_op`) and its module (`program_id`) but, unlike
libtpu's ops, no FLOPs or bytes. XProf reruns XLA's GpuHloCostAnalysis over the module's HloProto;
profscope runs its own model (`hlo_cost.instruction_costs`, HloCostAnalysis's counts) over the
HloProtos the XPlane carries (the trace's "hlo/<id>.pb" attachments, `HostContext.hlo_modules`),
once per program. The cost is that of one execution of the instruction, and the roofline charges it
once per execution of the HLO op (consecutive kernels of one op), not once per kernel launch as
XProf does (its quirk Q6). The bytes are HloCostAnalysis's `bytes_accessed` (operands read and
results written), all of them HBM traffic on a GPU. Each instruction's compute roof (the unit and
number format its FLOPs run in) comes from the same module (`hlo_roofs.py`): a GPU's by
`instruction_roofs`, a TPU's (whose ops carry libtpu's costs, so only the roofs are used) by
`tpu_instruction_roofs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from profscope.formats.hlo.proto import HloModule
from profscope.formats.xplane.hlo import signed_program_id
from profscope.tools.roofline.hlo_cost import Cost, instruction_costs
from profscope.tools.roofline.hlo_roofs import instruction_roofs

NO_HLO_PROTO = "no cost stats and no HloProto in this profile"
NO_PROGRAM = "the kernels name no program (program_id stat)"
UNKNOWN_TO_MODEL = "the HLO cost model does not know this op"
DECODE_ERRORS = (ValueError, IndexError, KeyError, UnicodeDecodeError)  # a damaged HloProto


class ProgramCosts:
    """The cost of one execution of each instruction of a host's programs, by (program id, name);
    each program's costs are computed on first use and kept."""

    def __init__(
        self,
        modules: Mapping[int, HloModule] | None,
        roofs_of: Callable[[HloModule], dict[str, str]] = instruction_roofs,
    ) -> None:
        self._modules = modules or {}
        self._roofs_of = roofs_of
        self._costs: dict[int, dict[str, Cost] | str] = {}
        self._roofs: dict[int, dict[str, str]] = {}

    def roof(self, program_id: int | str | None, hlo_op: str) -> str:
        """The compute roof of `hlo_op` in the program (`roofs_of`, `hlo_roofs.py`); "" (the device's compute
        roof) when the program's HloProto is not in the profile or cannot be decoded."""
        if program_id is None or not str(program_id).isdigit():
            return ""
        program = signed_program_id(int(program_id))
        if program not in self._roofs:
            roofs: dict[str, str] = {}
            if program in self._modules:
                try:
                    roofs = self._roofs_of(self._modules[program])
                except DECODE_ERRORS:
                    roofs = {}
            self._roofs[program] = roofs
        return self._roofs[program].get(hlo_op, "")

    def of(self, program_id: int | str | None, hlo_op: str) -> Cost:
        """The cost of `hlo_op` in the program (the `program_id` stat of its kernels, unsigned as
        events carry it); unknown figures are None and `note` says why."""
        if not self._modules:
            return _unknown(NO_HLO_PROTO)
        if program_id is None or not str(program_id).isdigit():
            return _unknown(NO_PROGRAM)
        program = signed_program_id(int(program_id))
        costs = self._program(program)
        if isinstance(costs, str):
            return _unknown(costs)
        cost = costs.get(hlo_op)
        if cost is None:
            return _unknown(f"{hlo_op} is not an instruction of the HloProto of program {program}")
        if cost.flops is None or cost.bytes_accessed is None:
            return Cost(cost.flops, cost.bytes_accessed, cost.transcendentals, cost.note or UNKNOWN_TO_MODEL)
        return cost

    def _program(self, program: int) -> dict[str, Cost] | str:
        """The program's instruction costs, or why there are none."""
        if program not in self._costs:
            if program not in self._modules:
                self._costs[program] = f"no HloProto of program {program} in this profile"
            else:
                try:
                    self._costs[program] = instruction_costs(self._modules[program])
                except DECODE_ERRORS as e:
                    self._costs[program] = f"the HloProto of program {program} cannot be decoded ({e})"
        return self._costs[program]


def _unknown(reason: str) -> Cost:
    return Cost(None, None, None, reason)
