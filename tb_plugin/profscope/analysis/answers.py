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
StepSourceKind = Literal[
    "profiler_step", "xplane_steps", "step_annotation", "user_annotation", "inferred", "none"
]
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
    warm-up or steady state, and its breakdown (`parts` as in `OverviewBreakdown`; device work
    counts in the step that launched it). `launched_device_ns`: the union of the device work
    launched in the step, wherever it ran (UNSET: no device event is linked to its launch); what of
    it ran after the step's window ended is in no step's parts. `examples_per_s` when the request
    gave `batch_size`."""

    number: int
    name: str
    start_ns: float
    end_ns: float
    wall_ns: float
    phase: Phase
    parts: dict[str, float]
    launched_device_ns: float | UnsetType = UNSET
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
    """The steps of one host: which markers were used (`source_kind`, `source` in words; `inferred`
    when no marker exists and the steps come from what repeats, never to be shown as marked), or
    `message` when none were found (then `rows` is empty and only the whole-capture breakdown is
    given), the split, the per-step rows and the steady-state figures. `candidates`: the other
    marker names found, each one a `step_name=` the request can pick. `before_first`: how many
    device events launched before the first step run into its window (the previous iteration's
    tail), and `before_first_ns` their time inside it; `before_first_note` says so in words."""

    source_kind: StepSourceKind
    source: str
    message: str | UnsetType = UNSET
    rows: list[OverviewStep]
    split: OverviewSplit | UnsetType = UNSET
    stats: OverviewStepStats | UnsetType = UNSET
    candidates: list[str] | UnsetType = UNSET
    before_first: int | UnsetType = UNSET
    before_first_ns: float | UnsetType = UNSET
    before_first_note: str | UnsetType = UNSET


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


class OverviewLaunchExclusion(Answer, kw_only=True):
    """Linked device events left out of the launch-delay distribution by one rule
    (analysis/launch_delay.py): `kind`, how many, the `rule` and the sentence the view shows
    (`text`); `max_ns` for negative delays: the largest amount the device started before its call
    returned."""

    kind: Literal["graph", "synchronous", "negative"]
    count: int
    rule: str
    text: str
    max_ns: float | UnsetType = UNSET


class OverviewDevices(Answer, kw_only=True):
    """Device activity of one host in `scope` (steady steps; without steps the device's active
    region, from its first to its last event, and `window_note` says how much of the capture that
    is). `observed` is False with `reason` when the profile holds no device activity: then every
    device figure is "not observed". `graph_note`: kernels recorded into a CUDA/HIP graph by
    stream capture (not run) or run through graph launches. `launch_delay`: device start − end of
    the launch call, for the events linked to their launch (UNSET with `launch_reason` when none
    are), less the ones `launch_excluded` lists by rule."""

    observed: bool
    reason: str | UnsetType = UNSET
    scope: str
    window_note: str | UnsetType = UNSET
    graph_note: str | UnsetType = UNSET
    devices: list[OverviewDevice]
    launch_delay: OverviewDistribution | UnsetType = UNSET
    launch_reason: str | UnsetType = UNSET
    launch_excluded: list[OverviewLaunchExclusion] | UnsetType = UNSET


class OverviewOverlap(Answer, kw_only=True):
    """Communication/computation overlap of one host (HTA's ratio): time spent computing while
    communicating ÷ time communicating, on the device, over `scope`."""

    communication_ns: float
    overlapped_ns: float
    fraction: float


class OverviewPhase(Answer, kw_only=True):
    """One phase of the steps (analysis/phases.py) over the steady steps: its per-step wall time
    (median; p10/p90 from `MIN_DISTRIBUTION_STEPS` steady steps on), `share` = its summed time ÷
    the steps' summed wall time, the fraction of its time the device is busy (UNSET: no device
    observed) and the fraction spent in framework ops (0: no model op runs in it; UNSET for the
    `outside` row, the step time under no phase)."""

    name: str
    median_ns: float
    p10_ns: float | UnsetType = UNSET
    p90_ns: float | UnsetType = UNSET
    share: float
    device_busy_fraction: float | UnsetType = UNSET
    model_ops_fraction: float | UnsetType = UNSET
    outside: bool = False


class OverviewPhases(Answer, kw_only=True):
    """The phases of one host's steps: who wrote them (`source`), the rows over `scope` (the phases
    in the order they first appear in a step, then "(outside your phases)"), and `per_step`: for
    every step (`step_numbers`, warm-up included) the ns of each row, in the rows' order. No phases:
    `phases` is empty and `source` says why. `device_reason` says why device figures are absent."""

    source: str
    scope: str
    phases: list[OverviewPhase]
    step_numbers: list[int]
    per_step: list[list[float]]
    device_reason: str | UnsetType = UNSET


class OverviewMemoryPeak(Answer, kw_only=True):
    """The allocator's peak of one host (`analysis.memory.peak`, `analysis.memory_xplane.peak`): the
    highest `Total Allocated` of its Kineto `[memory]` events over its devices, or `bytes_allocated`
    of its XPlane allocator events over its allocators; the device (`"CPU"`, `"CUDA 0"`, or the
    allocator's name, `"GPU_0_bfc"`), the step whose window holds the first event reaching it (marker
    name and number; absent outside every step) and the op the event names itself (XPlane `tf_op`),
    else the innermost host op enclosing that event (absent when none does). The Memory tab shows
    that device's curve."""

    allocated_bytes: int
    device: str
    step: str | UnsetType = UNSET
    step_number: int | UnsetType = UNSET
    op: str | UnsetType = UNSET


class OverviewHost(Answer, kw_only=True):
    """Everything per host (per rank in a multi-rank session): steps, whole-capture and
    steady-state breakdowns, devices, overlap (when collectives were observed), the steps' phases
    (when there are steps), the allocator's peak (Overview only, when the trace has memory events:
    never a peak of 0)."""

    host: str
    format: str
    steps: OverviewSteps
    capture: OverviewBreakdown
    steady: OverviewBreakdown | UnsetType = UNSET
    devices: OverviewDevices
    overlap: OverviewOverlap | UnsetType = UNSET
    phases: OverviewPhases | UnsetType = UNSET
    memory_peak: OverviewMemoryPeak | UnsetType = UNSET


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
    total ÷ the scope's wall time (summed over hosts; a share of wall time, not of device busy
    time: kernels on concurrent streams can add up past 1); `framework_op` = the host op that launched most of its
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
    total and self time, average, min, max, `fraction` = self ÷ the scope's wall time (summed over
    hosts)."""

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
