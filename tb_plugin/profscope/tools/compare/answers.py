"""The shape of the `compare` route's answer (the TypeScript types are generated from it).

Two subjects, the run and its base, each one host. Times are ns; every difference is run − base
(negative: the run is faster) and every relative figure is that difference ÷ the base's value.
Per-step figures divide by the number of steady steps of each side (its whole capture counts as one
window when it has no step markers). A figure one side cannot give is left out (`UNSET`) with the
reason beside it, never sent as 0. Formulas, the estimator and the cautions: docs/COMPARE.md.
"""

from __future__ import annotations

from typing import Literal

from profscope.analysis.answers import OverviewStepStats, Phase, Side, StepSourceKind
from profscope.answers import UNSET, Answer, UnsetType

Change = Literal["added", "removed", "faster", "slower", "same"]
CautionKind = Literal[
    "same_subject",
    "markers",
    "labels",
    "no_steps",
    "few_steps",
    "format",
    "device",
    "shapes",
    "shapes_unknown",
]
CautionSubject = Literal["run", "base", "both"]
Method = Literal["exact", "normal"]


class CompareStep(Answer):
    """One step of a side: its number, wall time (the overview's step window) and phase."""

    number: int
    wall_ns: float
    phase: Phase


class CompareSide(Answer, kw_only=True):
    """One side of the comparison: which subject it is, how its steps were found (`step_source_kind`,
    `step_source`, `step_message` when none were), the warm-up verdict, every step, the steady-state
    figures (`stats`: median, p10/p90, min/max, count, as the overview gives them), the scope of its
    breakdown and op figures (`scope`, over `windows` windows: its steady steps, or 1 for the whole
    capture) and its devices (the model its profile names for each active device, sorted; empty
    with `device_reason` when none was active)."""

    run: str
    session: str
    host: str
    format: str
    step_source_kind: StepSourceKind
    step_source: str
    step_message: str | UnsetType = UNSET
    split_verdict: str | UnsetType = UNSET
    steps: list[CompareStep]
    stats: OverviewStepStats | UnsetType = UNSET
    scope: str
    windows: int
    devices: list[str]
    device_reason: str | UnsetType = UNSET


class CompareShift(Answer, kw_only=True):
    """The steady step-time difference run − base, with its spread. `median_difference_ns` is the
    difference of the two medians (`relative_median_difference` ÷ the base median); `shift_ns` the
    Hodges–Lehmann estimate (median of every run step − base step difference) with its
    distribution-free interval `low_ns`..`high_ns`, which covers at least `confidence_asked` and
    exactly `coverage` (`method`: "exact" or "normal" distribution of the Mann–Whitney count);
    `ratio` run ÷ base (the same on log times) with `ratio_low`..`ratio_high`. When the steps are too
    few for any interval, the bounds are left out and `note` says why. `verdict` states it in words."""

    estimator: str
    run_steps: int
    base_steps: int
    median_difference_ns: float
    relative_median_difference: float
    shift_ns: float
    low_ns: float | UnsetType = UNSET
    high_ns: float | UnsetType = UNSET
    confidence_asked: float
    coverage: float | UnsetType = UNSET
    method: Method
    ratio: float | UnsetType = UNSET
    ratio_low: float | UnsetType = UNSET
    ratio_high: float | UnsetType = UNSET
    note: str | UnsetType = UNSET
    verdict: str


class CompareCategory(Answer, kw_only=True):
    """One breakdown category (the overview's, in priority order): the median over the steady
    steps of its part of each step, base and run, the difference and the difference ÷ base
    (`relative`, left out when the base part is 0). A side whose profile cannot show the category
    (a CPU-only capture's device parts) has no value and `reason` says why."""

    id: str
    label: str
    priority: int
    side: Side
    base_ns: float | UnsetType = UNSET
    run_ns: float | UnsetType = UNSET
    delta_ns: float | UnsetType = UNSET
    relative: float | UnsetType = UNSET
    reason: str | UnsetType = UNSET


class CompareOpDelta(Answer, kw_only=True):
    """One op (host op, device kernel or HLO op, by name) on both sides: calls in the scope
    (`*_calls`) and per step, self time per step (a kernel's time: kernels do not nest), the
    difference run − base and its relative size. `change`: added (only the run has it), removed
    (only the base), faster / slower (self time per step changed by at least `same_within` of the
    base's), or same. `kind`: the kernel kind or HLO category, "host op" for host ops."""

    name: str
    kind: str
    change: Change
    base_calls: int
    run_calls: int
    base_calls_per_step: float
    run_calls_per_step: float
    base_self_ns: float
    run_self_ns: float
    delta_self_ns: float
    relative: float | UnsetType = UNSET
    search: str


class CompareOpTable(Answer, kw_only=True):
    """The op deltas of one table, largest |difference| first: `rows` (at most `ROW_LIMIT`) of
    `total` ops seen on either side, `changes` counting each kind of change over all of them.
    `reason` when neither side has such ops (no device activity, no XLA ops line)."""

    rows: list[CompareOpDelta]
    total: int
    changes: dict[str, int]
    reason: str | UnsetType = UNSET


class ComparePhaseDelta(Answer, kw_only=True):
    """One phase of the steps (the overview's phases), matched by name and order on both sides
    (`unknown (2)` is the second `unknown` of a step): its median time per steady step and share
    of the step on each side, the difference run − base and ÷ base. A phase only one side has has
    no value on the other. `outside`: the step time under no phase."""

    name: str
    outside: bool = False
    base_ns: float | UnsetType = UNSET
    run_ns: float | UnsetType = UNSET
    base_share: float | UnsetType = UNSET
    run_share: float | UnsetType = UNSET
    delta_ns: float | UnsetType = UNSET
    relative: float | UnsetType = UNSET


class ComparePhases(Answer, kw_only=True):
    """The phase deltas (run's phase order, the base's own phases placed where they first appear),
    with who wrote each side's phases (`run_source`, `base_source`)."""

    run_source: str
    base_source: str
    rows: list[ComparePhaseDelta]


class CompareCaution(Answer):
    """Why the comparison may not compare like with like, in words (`kind` is stable; `subject`
    says which side it is about)."""

    kind: CautionKind
    subject: CautionSubject
    text: str


class CompareMemoryOp(Answer):
    """An op's blocks live at a side's peak: their bytes and how many."""

    op: str
    bytes: int
    count: int


class CompareMemoryDevice(Answer, kw_only=True):
    """One allocator (device) of either side, matched by name ("CPU", "CUDA 0", "GPU_0_bfc"): each
    side's peak allocated bytes, its highest reserved bytes (absent where not observed), the step
    and op at its peak, and the ops holding the most at its peak (`memory_peaks.TOP_OPS` at most);
    `delta_bytes` = run − base and `relative` = that ÷ base, only when both sides have the device
    (and, for reserved, both observe it). A side without the device leaves its figures out."""

    device: str
    base_peak_bytes: int | UnsetType = UNSET
    run_peak_bytes: int | UnsetType = UNSET
    delta_bytes: int | UnsetType = UNSET
    relative: float | UnsetType = UNSET
    base_reserved_bytes: int | UnsetType = UNSET
    run_reserved_bytes: int | UnsetType = UNSET
    reserved_delta_bytes: int | UnsetType = UNSET
    base_step: str | UnsetType = UNSET
    run_step: str | UnsetType = UNSET
    base_op: str | UnsetType = UNSET
    run_op: str | UnsetType = UNSET
    base_before_capture_bytes: int | UnsetType = UNSET
    run_before_capture_bytes: int | UnsetType = UNSET
    base_ops: list[CompareMemoryOp] = []
    run_ops: list[CompareMemoryOp] = []


class CompareAnswer(Answer, kw_only=True):
    """The `compare` route: the run and its base side by side, the step-time difference with its
    spread (`shift`, or `shift_reason` when a side has no steady steps), the breakdown categories'
    per-step medians and deltas over `breakdown_scope`, op deltas (host ops, device kernels, HLO
    ops), the phase deltas (`phases`, when a side's steps have phases), each allocator's peak on both
    sides (`memory`, the run's devices first, then the base's own; `memory_reason` when neither side
    has allocator events), the cautions, and the method's closing `advice`."""

    run: CompareSide
    base: CompareSide
    shift: CompareShift | UnsetType = UNSET
    shift_reason: str | UnsetType = UNSET
    breakdown_scope: str
    categories: list[CompareCategory]
    same_within: float
    host_ops: CompareOpTable
    kernels: CompareOpTable
    hlo_ops: CompareOpTable
    cautions: list[CompareCaution]
    phases: ComparePhases | UnsetType = UNSET
    memory: list[CompareMemoryDevice] = []
    memory_reason: str | UnsetType = UNSET
    advice: str
