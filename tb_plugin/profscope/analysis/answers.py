"""The shapes of the shared analysis' results as the API gives them: steps, breakdowns, devices,
launch delays, op tables, one host's figures (the TypeScript types are generated from them).

Times are ns (floats), from the start of the session timeline like every time on the API; fractions
are 0..1 (the view multiplies by 100). A figure the profile cannot give is left out (`UNSET`, or
absent from a `parts` dict) and the `OverviewCategory` / `OverviewDevices` it belongs to says why:
the view writes "not observed", never 0. Definitions, priorities and thresholds: docs/OVERVIEW.md.
The names start with `Overview`, the tab that shows them first: every tool's Structs share one
TypeScript namespace, and the Compare tab shows the same records.
"""

from __future__ import annotations

from typing import Literal

from profscope.answers import UNSET, Answer, UnsetType

Phase = Literal["warmup", "steady"]
StepSourceKind = Literal["profiler_step", "xplane_steps", "step_annotation", "user_annotation", "none"]
Side = Literal["device", "host", "none"]
GroupBy = Literal["name", "shapes"]


class OverviewLink(Answer, kw_only=True):
    """Where the Trace tab shows the events behind a figure: a time range of the session timeline
    (`start_ns`..`end_ns`), a search text (as `trace/search?q=` takes it), or both. `host` names the
    host when the answer covers several."""

    start_ns: float | UnsetType = UNSET
    end_ns: float | UnsetType = UNSET
    search: str | UnsetType = UNSET
    host: str | UnsetType = UNSET


class OverviewCategory(Answer, kw_only=True):
    """One part of wall time in the breakdown. Categories are listed in priority order: where
    activities overlap, the instant goes to the first (lowest `priority`) that is active, so the
    parts of a window add up to its wall time. `counts` says which events count; `observed` is
    False (with `reason`) when the profile cannot show this activity at all (e.g. device parts of
    a CPU-only capture): the view then writes "not observed", not 0."""

    id: str
    label: str
    priority: int
    side: Side
    counts: str
    observed: bool
    reason: str | UnsetType = UNSET


class OverviewBreakdown(Answer, kw_only=True):
    """Where the wall time of a window went. `parts[category]` in ns adds up to `wall_ns` over the
    observed categories (idle/other takes the rest); `fractions` = parts ÷ wall. For a set of
    steps (`steps` > 1) `wall_ns` is their summed wall time and `per_step_median` the median of
    each part over those steps (medians do not add up to anything: they are shown apart)."""

    label: str
    start_ns: float
    end_ns: float
    wall_ns: float
    steps: int
    parts: dict[str, float]
    fractions: dict[str, float]
    per_step_median: dict[str, float] | UnsetType = UNSET


class OverviewStep(Answer, kw_only=True):
    """One step: its number, the marker's name, its window and wall time, whether it counts as
    warm-up or steady state, and its breakdown (`parts` as in `OverviewBreakdown`).
    `examples_per_s` when the request gave `batch_size`."""

    number: int
    name: str
    start_ns: float
    end_ns: float
    wall_ns: float
    phase: Phase
    parts: dict[str, float]
    examples_per_s: float | UnsetType = UNSET
    link: OverviewLink


class OverviewSplit(Answer, kw_only=True):
    """The warm-up / steady-state split: the general `rule`, the `verdict` it gave on this capture
    (with the numbers, e.g. "step 2 takes 3.5× the median of the rest"), and the step numbers on
    each side (both kept and shown)."""

    rule: str
    verdict: str
    warmup: list[int]
    steady: list[int]


class OverviewStepStats(Answer, kw_only=True):
    """Step time over the steady steps: median, p10/p90, min/max and count (ns per step), and
    examples/s (batch_size ÷ median) when `batch_size` was given. With fewer than
    `MIN_DISTRIBUTION_STEPS` steady steps p10/p90 are left out and `note` says the window is too
    short to state a distribution."""

    count: int
    median_ns: float
    min_ns: float
    max_ns: float
    p10_ns: float | UnsetType = UNSET
    p90_ns: float | UnsetType = UNSET
    examples_per_s: float | UnsetType = UNSET
    note: str | UnsetType = UNSET


class OverviewSteps(Answer, kw_only=True):
    """The steps of one host: which markers were used (`source_kind`, `source` in words), or
    `message` when none were found (then `rows` is empty and only the whole-capture breakdown is
    given), the split, the per-step rows and the steady-state figures."""

    source_kind: StepSourceKind
    source: str
    message: str | UnsetType = UNSET
    rows: list[OverviewStep]
    split: OverviewSplit | UnsetType = UNSET
    stats: OverviewStepStats | UnsetType = UNSET


class OverviewIdle(Answer, kw_only=True):
    """The idle gaps between consecutive device events of a stream, split as HTA does: `host_wait`
    (the launch call of the next event started after the previous one ended: the host was late),
    `kernel_wait` (not host wait, gap under the threshold: the back-to-back launch overhead) and
    `other` (not attributable, e.g. waits on events of other streams, or no launch linked)."""

    gaps: int
    host_wait_ns: float
    kernel_wait_ns: float
    other_ns: float


class OverviewStream(Answer, kw_only=True):
    """One device stream (or XLA ops line): its events in the scope, busy time (union of its
    events), and its idle split. `track` is the timeline track id (for the Trace tab)."""

    name: str
    track: int
    events: int
    busy_ns: float
    idle: OverviewIdle


class OverviewDevice(Answer, kw_only=True):
    """One device (GPU or TPU core): busy = union of its streams' events inside `window_ns`, idle
    = window − busy, and its streams."""

    name: str
    kind: str
    window_ns: float
    busy_ns: float
    idle_ns: float
    busy_fraction: float
    streams: list[OverviewStream]


class OverviewHistogramBin(Answer):
    """Events whose value lies in [lo_ns, hi_ns)."""

    lo_ns: float
    hi_ns: float
    count: int


class OverviewDistribution(Answer, kw_only=True):
    """A distribution of durations: count, median, p10/p90, min/max (ns) and a log-spaced histogram."""

    count: int
    median_ns: float
    p10_ns: float
    p90_ns: float
    min_ns: float
    max_ns: float
    histogram: list[OverviewHistogramBin]


class OverviewDevices(Answer, kw_only=True):
    """Device activity of one host in `scope` (steady steps, or the whole capture). `observed` is
    False with `reason` when the profile holds no device activity: then every device figure is
    "not observed". `launch_delay`: device start − end of the launch call, for the events linked
    to their launch (UNSET with `launch_reason` when none are)."""

    observed: bool
    reason: str | UnsetType = UNSET
    scope: str
    devices: list[OverviewDevice]
    launch_delay: OverviewDistribution | UnsetType = UNSET
    launch_reason: str | UnsetType = UNSET


class OverviewOverlap(Answer, kw_only=True):
    """Communication/computation overlap of one host (HTA's ratio): time spent computing while
    communicating ÷ time communicating, on the device, over `scope`."""

    communication_ns: float
    overlapped_ns: float
    fraction: float


class OverviewHost(Answer, kw_only=True):
    """Everything per host (per rank in a multi-rank session): steps, whole-capture and
    steady-state breakdowns, devices, overlap (when collectives were observed)."""

    host: str
    format: str
    steps: OverviewSteps
    capture: OverviewBreakdown
    steady: OverviewBreakdown | UnsetType = UNSET
    devices: OverviewDevices
    overlap: OverviewOverlap | UnsetType = UNSET


class OverviewOpRow(Answer, kw_only=True):
    """One host op group (by name, or name + input shapes): calls, total (inclusive) and self
    (exclusive) time, average, min and max per call; `total_fraction` / `self_fraction` = time ÷
    the scope's wall time (steady-state step time when steps were found). `search` finds its
    events in the Trace tab."""

    name: str
    shapes: str | UnsetType = UNSET
    calls: int
    total_ns: float
    self_ns: float
    avg_ns: float
    min_ns: float
    max_ns: float
    total_fraction: float
    self_fraction: float
    search: str


class OverviewKernelDetails(Answer, kw_only=True):
    """Launch configuration of a kernel as the profile records it (first call seen)."""

    grid: list[int] | UnsetType = UNSET
    block: list[int] | UnsetType = UNSET
    registers_per_thread: int | UnsetType = UNSET
    shared_memory: int | UnsetType = UNSET
    blocks_per_sm: float | UnsetType = UNSET
    warps_per_sm: float | UnsetType = UNSET
    occupancy: float | UnsetType = UNSET


class OverviewKernelRow(Answer, kw_only=True):
    """One device kernel (or memcpy/memset) name: calls, total, average, min, max; `fraction` =
    total ÷ the scope's device wall time; `framework_op` = the host op that launched most of its
    calls (through the launch flows), `framework_ops` how many distinct ones did."""

    name: str
    kind: str
    calls: int
    total_ns: float
    avg_ns: float
    min_ns: float
    max_ns: float
    fraction: float
    framework_op: str | UnsetType = UNSET
    framework_ops: int
    details: OverviewKernelDetails | UnsetType = UNSET
    search: str


class OverviewHloRow(Answer, kw_only=True):
    """One XLA (HLO) op of an XPlane: its category and framework op (from the op's stats), calls,
    total and self time, average, min, max, `fraction` = self ÷ the scope's device time."""

    name: str
    category: str
    framework_op: str | UnsetType = UNSET
    program: str | UnsetType = UNSET
    calls: int
    total_ns: float
    self_ns: float
    avg_ns: float
    min_ns: float
    max_ns: float
    fraction: float
    search: str


class OverviewTables(Answer, kw_only=True):
    """Op and kernel tables over `scope`. Rows are the `ROW_LIMIT` largest by total time; `*_total`
    give how many groups there were. `kernels_reason` when no device activity was observed."""

    scope: str
    group_by: GroupBy
    host_ops: list[OverviewOpRow]
    host_ops_total: int
    kernels: list[OverviewKernelRow]
    kernels_total: int
    kernels_reason: str | UnsetType = UNSET
    hlo_ops: list[OverviewHloRow]
    hlo_ops_total: int
