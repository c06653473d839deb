"""The records every roofline source fills: per-op costs (`OpCost`) and device limits (`DevicePeaks`).

XPlane (`xplane.py`) and Kineto (`kineto.py`) readers both turn a trace into a list of `OpCost` and
the device into `DevicePeaks`; `rows.py` turns those into the program and op rows, so both trace
kinds share one set of formulas. Units are SI and never converted here: time in picoseconds, FLOPs
and bytes as counts, peaks in FLOP/s and B/s.

Memory levels are named by the keys of `LEVELS` (the same key in `OpCost.bytes_by_level` and in
`DevicePeaks.bandwidth`): a level with bytes but no peak has no roof, a level with a peak but no
bytes is simply not used by the op.
"""

from __future__ import annotations

import dataclasses

# Memory levels, in display order, with the label the answer shows.
LEVELS: dict[str, str] = {
    "hbm": "HBM",
    "cmem_read": "CMEM read",
    "cmem_write": "CMEM write",
    "vmem_read": "VMEM read",
    "vmem_write": "VMEM write",
    "sram_read": "SRAM read",
    "sram_write": "SRAM write",
    "shm_l1": "Shared memory / L1",
}

# `OpCost.source` when the figures are measured or estimated; any other string is the reason why
# the op's FLOPs and bytes were not observed.
COST_FROM_PROFILE = "profile"
COST_FROM_SHAPES = "estimated from shapes"
COST_FROM_HLO_MODEL = "HLO cost model (profscope)"
COST_MODELLED = "modelled from shapes (profscope)"  # an op XLA's cost model does not price (fused attention)

# `Peak.source` values (the parts table adds the datasheet it quotes, see `from_parts_table`).
PEAK_FROM_PROFILE = "from the profile"
PEAK_USER_OVERRIDE = "user override"

# A matrix roof falls back to the vector figure where the part lists no separate matrix peak
# (Nvidia: an fp32 GEMM without TF32 runs on the CUDA cores, at the fp32 rate).
ROOF_FALLBACK = {"fp32_matrix": "fp32", "fp64_matrix": "fp64"}

FLOP_UNIT = "FLOP/s"
BANDWIDTH_UNIT = "B/s"


def from_parts_table(datasheet: str) -> str:
    """`Peak.source` of a figure quoted from the parts table."""
    return f"from the parts table: {datasheet}"


def computed_from_profile(how: str) -> str:
    """`Peak.source` of a figure derived from profile stats (e.g. SMs × FLOPs/cycle × clock)."""
    return f"{PEAK_FROM_PROFILE}, computed: {how}"


@dataclasses.dataclass(frozen=True)
class OpCost:
    """One op (an HLO op, or a kernel/operator of a Kineto trace) summed over all its executions
    on all devices of the host.

    `flops` and `bytes_by_level` are None when not observed; then `source` says why (never 0 for
    unknown). `bytes_accessed` is the op's total memory traffic over all spaces when the profile
    gives it apart from the per-level breakdown (XProf's "Memory BW"); None means "the sum of the
    levels". `search` is the text the Trace tab searches for to find the op's events.

    `in_program` says whether the op counts in the program totals: False for fused children and
    for wrappers (while/call/conditional) whose inner ops are listed themselves, so nothing is
    counted twice. `transfer` marks infeed/outfeed and host↔device copies, which the
    `infeed=0` option removes from the program, its time included. `note` qualifies figures that
    are observed but partial (e.g. bytes whose memory space the profile does not record);
    `program` names the program (XLA module id) the op belongs to, "" when none. `roof` names the
    peak its FLOPs run at (a precision of `DevicePeaks.flops`, e.g. "bf16", "fp32"; see
    `DevicePeaks.compute_roof`); "" is the device's compute roof. `event_ids`: see the field.
    """

    name: str
    category: str
    occurrences: int
    total_time_ps: int
    self_time_ps: int
    flops: float | None
    bytes_by_level: dict[str, float] | None
    source: str
    search: str
    model_flops: float | None = None
    bytes_accessed: float | None = None
    in_program: bool = True
    transfer: bool = False
    note: str = ""
    program: str = ""
    roof: str = ""
    event_ids: tuple[int, ...] = ()
    """The first MAX_EVENT_IDS events its time comes from (device activities), in time order: indices
    in the host's trace until `analysis.answer` makes them the timeline's ids."""


MAX_EVENT_IDS = 200
"""Event ids a row carries to the Trace tab at most."""


@dataclasses.dataclass(frozen=True)
class Peak:
    """One device limit: `value` in `unit` (FLOP/s or B/s) and where the figure comes from."""

    value: float
    unit: str
    source: str


@dataclasses.dataclass(frozen=True)
class DevicePeaks:
    """The limits of one device (per chip / per GPU): FLOP/s per precision ("bf16", "fp32", …, or
    "peak" when the profile names none) and bandwidth per memory level (keys of `LEVELS`).

    `roof_precision` picks the FLOP peak the roofline is drawn against (None: the largest).
    `attributes` are other facts about the device worth showing (e.g. megacore: "yes").
    `notes` explain figures that are missing or derived, for the answer's warnings.
    """

    name: str
    flops: dict[str, Peak] = dataclasses.field(default_factory=dict)
    bandwidth: dict[str, Peak] = dataclasses.field(default_factory=dict)
    roof_precision: str | None = None
    attributes: dict[str, str] = dataclasses.field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def flop_roof(self) -> tuple[str, Peak] | None:
        """(precision, peak) of the compute roof, None when no FLOP peak is known."""
        if self.roof_precision is not None and self.roof_precision in self.flops:
            return self.roof_precision, self.flops[self.roof_precision]
        known = [(k, p) for k, p in self.flops.items() if p.value > 0]
        return max(known, key=lambda item: item[1].value) if known else None

    def compute_roof(self, roof: str) -> tuple[str, Peak] | None:
        """(precision, peak) of the roof an op's `roof` names ("": the compute roof, `flop_roof`),
        through `ROOF_FALLBACK`; None when the device has no such peak (not known)."""
        if not roof:
            return self.flop_roof()
        for key in (roof, ROOF_FALLBACK.get(roof)):
            if key is not None and key in self.flops and self.flops[key].value > 0:
                return key, self.flops[key]
        return None
