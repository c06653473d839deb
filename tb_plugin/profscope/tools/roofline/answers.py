"""The shape of the `roofline` route's answer.

Units are SI throughout: durations in ns (floats, as every time on the API), FLOP/s, B/s, FLOP per
byte. Fractions are 0..1 (the view multiplies by 100). A figure that
is not observed is left out (UNSET) or None, never sent as 0; the row's `source` says why.
"""

from __future__ import annotations

from profscope.answers import UNSET, Answer, UnsetType


class RooflinePeak(Answer, kw_only=True):
    """One device limit: FLOP/s or B/s, and where the figure comes from ("from the profile", "from
    the parts table: <datasheet>", "user override", or "from the profile, computed: <how>")."""

    value: float
    unit: str
    source: str


class RooflineDevice(Answer, kw_only=True):
    """The device the roofline is drawn for (per chip / per GPU). `flops` per precision, `bandwidth`
    per memory level (keys of `levels`); `ridge_points` = compute roof ÷ each level's roof, FLOP/B.
    `roof_precision` is the compute roof of most of the program's FLOPs, `roofs` every roof the
    ops run at, most FLOPs first (a roof not in `flops` is a peak not known)."""

    name: str
    kind: str
    devices: int
    device_planes: int
    flops: dict[str, RooflinePeak]
    roof_precision: str | UnsetType = UNSET
    roofs: list[str]
    bandwidth: dict[str, RooflinePeak]
    ridge_points: dict[str, float]
    levels: dict[str, str]
    attributes: dict[str, str]


class RooflineFigures(Answer, kw_only=True):
    """What a row achieves against the roofs. Absent figures were not observed.

    flop_rate = FLOPs ÷ time; bandwidth[level] = level bytes ÷ time; intensity[level] = FLOPs ÷
    level bytes; flop_utilization = flop_rate ÷ the compute roof named by `roof` (a precision of
    `RooflineDevice.flops`, e.g. "bf16", "fp32"; a program row whose ops run at several roofs names
    them joined by " + ", and its utilization is Σ FLOPs at each roof ÷ its peak, ÷ time; a roof
    not in `RooflineDevice.flops` is a peak not known, whose FLOPs are left out); bandwidth_utilization[level] =
    bandwidth ÷ level roof; bound_by = the resource ("compute" or a level) with the highest
    utilization; roofline_efficiency = that highest utilization, absent when it exceeds 1 (then
    `anomaly` says why the measurement cannot be read against the roof).
    """

    flop_rate: float | UnsetType = UNSET
    model_flop_rate: float | UnsetType = UNSET
    bandwidth: dict[str, float]
    intensity: dict[str, float]
    flop_utilization: float | UnsetType = UNSET
    roof: str | UnsetType = UNSET
    bandwidth_utilization: dict[str, float]
    bound_by: str | UnsetType = UNSET
    roofline_efficiency: float | UnsetType = UNSET
    anomaly: str | UnsetType = UNSET


class RooflineProgramRow(Answer, kw_only=True):
    """The program as a whole ("Total"), its average complete step ("Average step") or one step.

    `device_time_ns` is the rates' denominator: the per-device busy spans summed over the devices
    (idle gaps inside a device's span included), minus infeed/outfeed when excluded;
    `time_per_device_ns` divides it by the active devices, `wall_time_ns` is the span over all.
    `coverage` is the fraction of the counted ops' time whose costs were observed. `flops_by_roof`
    splits `flops` by the compute roof the ops run at (most first).
    """

    step: str
    device_time_ns: float
    time_per_device_ns: float
    wall_time_ns: float | UnsetType = UNSET
    devices: int
    flops: float | UnsetType = UNSET
    model_flops: float | UnsetType = UNSET
    flops_by_roof: dict[str, float]
    bytes_by_level: dict[str, float]
    coverage: float
    figures: RooflineFigures
    source: str


class RooflineOpRow(Answer, kw_only=True):
    """One op over all its executions. `search` is the text the Trace tab searches for to find its
    events, `event_ids` (Kineto traces) the timeline's ids of the first 200 device activities its
    time comes from, in time order, which the Trace tab selects; `source` is "profile", "estimated
    from shapes", "HLO cost model (profscope)", "modelled from shapes (profscope)" (a cost model of
    profscope's own: fused attention, GEMM epilogues, norms, grouped GEMM) or why the costs were
    not observed."""

    rank: int
    name: str
    category: str
    program: str
    occurrences: int
    total_time_ns: float
    avg_time_ns: float
    self_time_ns: float
    avg_self_time_ns: float
    time_fraction: float
    cumulative_time_fraction: float
    flops: float | UnsetType = UNSET
    bytes_by_level: dict[str, float]
    bytes_accessed: float | UnsetType = UNSET
    figures: RooflineFigures
    source: str
    note: str | UnsetType = UNSET
    search: str
    event_ids: list[int] | UnsetType = UNSET
    in_program: bool
    transfer: bool


class RooflineAnswer(Answer, kw_only=True):
    """`roofline?run=&session=&host=[&infeed=0|1][&step=N]`. `observed` is false when the trace has
    no device activity (then `reason` says why and nothing else is drawn). `ops_total` counts all
    ops, of which the first `len(ops)` by self time are listed. `step_source` says where the steps
    come from, as the Overview says it (the shared step analysis: an XPlane's Steps line,
    ProfilerStep#N markers, steps inferred from a repeated program, …, or that none were found)."""

    subject: str
    observed: bool
    reason: str | UnsetType = UNSET
    device: RooflineDevice | UnsetType = UNSET
    include_infeed: bool
    step: int | UnsetType = UNSET
    steps: list[int]
    step_source: str | UnsetType = UNSET
    program: list[RooflineProgramRow]
    ops: list[RooflineOpRow]
    ops_total: int
    warnings: list[str]
