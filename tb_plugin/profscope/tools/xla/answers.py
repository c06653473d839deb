"""The answers of the `xla/*` routes, declared once (the TypeScript types are generated from them:
`frontend/src/api/answers.gen.ts`).

`XlaReport` (`xla/report`), `XlaGraphList` (`xla/graphs`), `XlaGraph` (`xla/graph`) and
`XlaDiff` (`xla/diff`), with the records inside them. Values are in the units
`torch_xla.debug.metrics.metric_data()` gives (`unit` "ns", "B" or ""); null means "not observed";
fields that only some answers carry are `UNSET` and left out of the JSON. The names start with `Xla`
because every tool's Structs become one namespace of generated TypeScript types (`answers.gen.ts`).
"""

from __future__ import annotations

from typing import Literal

from profscope.answers import UNSET, Answer, UnsetType
from profscope.formats.xla.text import Frame

Unit = Literal["ns", "B", ""]
Severity = Literal["high", "medium", "info"]


class XlaFrame(Answer):
    """A stack frame with the label the UI shows (`function (file:line)`)."""

    function: str
    file: str | None
    line: int | None
    label: str


def stack_frame(frame: Frame | None) -> XlaFrame | None:
    """The answer form of a parsed frame (None stays None)."""
    if frame is None:
        return None
    return XlaFrame(function=frame.function, file=frame.file, line=frame.line, label=frame.label())


def stack_frames(frames: list[Frame]) -> list[XlaFrame]:
    return [XlaFrame(function=f.function, file=f.file, line=f.line, label=f.label()) for f in frames]


# -- findings -------------------------------------------------------------------------------------
class XlaEvidence(Answer):
    label: str
    value: str


class XlaLocation(XlaFrame):
    """Where to look: a frame, how often it was seen and what it did there. `file_as_logged`: the bare
    file name an IR location gave, when the frames of the logs resolved it to a full path."""

    count: int
    role: str
    file_as_logged: str | UnsetType = UNSET


class XlaDiffNode(Answer):
    name: str
    op: str
    shape: str
    line: int
    location: XlaFrame | None


class XlaShapeChange(Answer):
    """An aligned node whose shape differs; an `origin` when its operands kept their shapes."""

    a: XlaDiffNode
    b: XlaDiffNode
    op: str
    shape_a: str
    shape_b: str
    origin: bool
    location: XlaFrame | None


class XlaFindingDiff(Answer):
    """A comparison of graph records `a` and `b` behind a finding (the UI links to their diff)."""

    a: int
    b: int
    summary: str
    same_structure: bool
    origins: list[XlaShapeChange]


class XlaFinding(Answer, kw_only=True):
    """One diagnosis: what, how sure, the evidence, where in the code, and the fix to try.
    `frames`: the stacks of the first executions an `unexpected_execution` finding saw."""

    id: str
    severity: Severity
    title: str
    summary: str
    evidence: list[XlaEvidence]
    locations: list[XlaLocation] = []
    steps: list[int] = []
    diffs: list[XlaFindingDiff] = []
    fix: str
    sources: list[str]
    frames: list[list[XlaFrame]] | UnsetType = UNSET


# -- report ---------------------------------------------------------------------------------------
class XlaValue(Answer):
    """One printed value: null `value` when the report printed `nan`, its text kept."""

    value: float | None
    text: str
    resolution: float
    corrected: bool
    unit: Unit | None


class XlaPercentile(Answer):
    p: float
    value: float | None
    text: str
    resolution: float
    corrected: bool
    unit: Unit | None


class XlaMetric(Answer):
    name: str
    unit: Unit | None
    description: str | None
    line: int
    total_samples: int | None
    accumulator: XlaValue | None
    value_rate: XlaValue | None
    rate: XlaValue | None
    mean: XlaValue | None
    stddev: XlaValue | None
    percentiles: list[XlaPercentile]
    corrected: bool
    legacy_counter_field: bool


class XlaCounter(Answer):
    name: str
    value: int | None
    category: Literal["cpu_fallback", "op", "runtime"]
    description: str | None


class XlaTransfer(Answer):
    metric: str | None
    transfers: int | None
    time_ns: float | None
    bytes: float | None


class XlaFallbackOp(Answer):
    name: str
    value: int | None


class XlaSummary(Answer):
    """The numbers on top of the view."""

    uncached_compiles: int | None
    cached_compiles: int | None
    compilations: int | None
    compile_time_ns: float | None
    executions: int | None
    execute_time_ns: float | None
    to_device: XlaTransfer
    from_device: XlaTransfer
    cpu_fallback_calls: int | None
    cpu_fallback_ops: list[XlaFallbackOp]
    steps: int | None


class XlaSnapshot(Answer):
    """Which report the tables show."""

    path: str
    step: int | None
    first_line: int
    last_line: int


class XlaSeriesMetric(Answer):
    unit: Unit | None
    samples: list[int | None]
    accumulator: list[float | None]
    delta_samples: list[float]
    delta_accumulator: list[float]


class XlaSeriesCounter(Answer):
    values: list[int | None]
    deltas: list[float]


class XlaSeries(Answer):
    """Cumulative values per report and what was added in each step, for the per-step charts."""

    source: str
    x_label: Literal["step", "report"]
    steps: list[int]
    resets: list[int]
    metrics: dict[str, XlaSeriesMetric]
    counters: dict[str, XlaSeriesCounter]


class XlaPostCompilation(Answer):
    computation_hash: str | None
    input_bytes: float | None
    output_bytes: float | None
    aliased_input_bytes: float | None
    intermediate_bytes: float | None
    program_bytes: float | None


class XlaAnalysis(Answer):
    """One `Compilation Analysis` / `Execution Analysis` block of the PT_XLA_DEBUG log."""

    kind: str
    cause: str
    step: int | None
    line: int
    graph_hash: str | None
    graph_name: str | None
    num_inputs: int | None
    num_outputs: int | None
    frames: list[XlaFrame]
    user_frame: XlaFrame | None
    post: XlaPostCompilation | None


class XlaCauseCount(Answer):
    kind: str
    cause: str
    count: int


class XlaMessageCount(Answer):
    """One distinct `pt-xla-profiler` message: how often, first and last line."""

    text: str
    kind: str
    count: int
    first_line: int
    last_line: int


class XlaDebugDigest(Answer):
    compilations: list[XlaAnalysis]
    executions: int
    unexpected_executions: int
    causes: list[XlaCauseCount]
    messages: list[XlaMessageCount]


class XlaGraphCounts(Answer):
    records: int
    unique: int


class XlaSource(Answer):
    """One file read: what was skipped and, per format, how much was found."""

    path: str
    format: str
    ordinal: int | None
    skipped: dict[str, int]
    warnings: list[str]
    reports: int | UnsetType = UNSET
    steps: int | UnsetType = UNSET
    analyses: int | UnsetType = UNSET
    messages: int | UnsetType = UNSET
    graphs: int | UnsetType = UNSET


class XlaFileError(Answer):
    """A file that could not be read at all."""

    path: str
    format: str
    error: str


class XlaReport(Answer):
    """`xla/report`: summary cards, findings, metrics, counters and per-step series of one ordinal."""

    ordinal: int | None
    ordinals: list[int | None]
    snapshot: XlaSnapshot | None
    summary: XlaSummary | None
    metrics: list[XlaMetric]
    counters: list[XlaCounter]
    series: XlaSeries | None
    warmup_steps: int
    debug: XlaDebugDigest | None
    graphs: XlaGraphCounts | None
    findings: list[XlaFinding]
    sources: list[XlaSource]
    errors: list[XlaFileError]


# -- graphs ---------------------------------------------------------------------------------------
class XlaGraphRecord(Answer):
    """One graph record; `index` is its position across the view's graph files."""

    index: int
    file: str
    line: int
    step: int | None
    key: str
    graph_hash: str | None
    header: str
    format: str
    num_nodes: int
    complete: bool
    ends_step: bool
    user_frame: XlaFrame | None


class XlaGraphChange(Answer, kw_only=True):
    """X10's note on a graph (`XLA_LOG_GRAPH_CHANGES`); in a group's list, with its record `index`."""

    index: int | UnsetType = UNSET
    kind: Literal["new_structure", "different_shape"]
    line: int
    current_shape: str | None
    previous_shape: str | None
    node: str | None
    current_trace: list[XlaFrame]
    previous_trace: list[XlaFrame]


class XlaFrameCount(Answer):
    frames: list[str]
    count: int


class XlaGraphGroup(Answer):
    """The records of one graph hash: how often, at which steps, from which frames, why compiled."""

    key: str
    graph_hash: str | None
    first_index: int
    indices: list[int]
    steps: list[int]
    format: str
    num_nodes: int
    headers: list[str]
    compile: XlaAnalysis | None
    changes: list[XlaGraphChange]
    count: int
    frames: list[XlaFrameCount]
    user_frame: XlaFrame | None


class XlaGraphList(Answer):
    """`xla/graphs`: every graph record, and the records grouped by graph hash."""

    ordinal: int | None
    ordinals: list[int | None]
    records: list[XlaGraphRecord]
    groups: list[XlaGraphGroup]
    sources: list[XlaSource]
    errors: list[XlaFileError]


class XlaOpCount(Answer):
    op: str
    count: int


class XlaGraph(XlaGraphRecord):
    """`xla/graph`: one record with its text and, when small enough, a DOT drawing."""

    frames: list[XlaFrame]
    frame_kind: str | None
    root_hashes: list[str]
    change: XlaGraphChange | None
    output_sharding: list[str]
    text: str
    dot: str | None
    dot_note: str | None
    ops: list[XlaOpCount]


# -- diff -----------------------------------------------------------------------------------------
class XlaAttrChange(Answer):
    a: XlaDiffNode
    b: XlaDiffNode
    attrs_a: str
    attrs_b: str


class XlaOriginCount(Answer):
    label: str
    count: int


class XlaDiffSide(Answer):
    line: int
    text: str


class XlaDiffRow(Answer):
    """One side-by-side row; a `same` row stands for `count` identical rows folded away."""

    kind: Literal["equal", "changed", "removed", "added", "replaced", "same"]
    a: XlaDiffSide | None | UnsetType = UNSET
    b: XlaDiffSide | None | UnsetType = UNSET
    count: int | UnsetType = UNSET


class XlaDiff(Answer, kw_only=True):
    """`xla/diff`: two graph records compared node by node; without the comparison when the graphs
    were too large to align (`aligned` false, `reason`)."""

    a: XlaGraphRecord
    b: XlaGraphRecord
    aligned: bool
    reason: str | UnsetType = UNSET
    nodes_a: int
    nodes_b: int
    same_structure: bool | UnsetType = UNSET
    shape_changes: list[XlaShapeChange] | UnsetType = UNSET
    origins: list[XlaShapeChange] | UnsetType = UNSET
    origin_locations: list[XlaOriginCount] | UnsetType = UNSET
    attr_changes: list[XlaAttrChange] | UnsetType = UNSET
    added: list[XlaDiffNode] | UnsetType = UNSET
    removed: list[XlaDiffNode] | UnsetType = UNSET
    rows: list[XlaDiffRow] | UnsetType = UNSET


ANSWERS = (XlaReport, XlaGraphList, XlaGraph, XlaDiff)
