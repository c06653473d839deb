"""The shape of the `memory` route's answer.

Sizes are bytes, times ns from the start of the session timeline (floats), durations ns. A figure
the profile cannot give is left out (UNSET) and its `*_reason` or the view says "not observed";
it is never sent as 0. Formulas: docs/MEMORY.md.
"""

from __future__ import annotations

from profscope.answers import UNSET, Answer, UnsetType


class MemorySeries(Answer, kw_only=True):
    """An allocator total over time, as a step function: `bytes[i]` holds from `time_ns[i]` until the
    next point. Downsampled to at most about 2,000 points (each run of events keeps its lowest and
    highest point, so the peak is exact); `events` is how many points the full curve has."""

    time_ns: list[float]
    bytes: list[int]
    events: int


class MemoryFractionSeries(Answer, kw_only=True):
    """A fraction over time, as a step function like `MemorySeries` (`fraction[i]` holds from
    `time_ns[i]` until the next point), downsampled the same way (the maximum kept)."""

    time_ns: list[float]
    fraction: list[float]
    events: int


class MemoryAllocatorStats(Answer, kw_only=True):
    """What an XPlane allocator says of itself with each event beyond its totals (TensorFlow's BFC
    allocator: `bytes_available`, `fragmentation`, `peak_bytes_in_use`; Kineto's `[memory]` events
    say none of it), as XProf's memory_profile summarises it (docs/MEMORY.md). At the peak: the
    figures of the peak event (`MemoryPeak`): `capacity_bytes` = allocated + reserved + free there,
    `free_at_peak_bytes` its free bytes, `fragmentation_at_peak` its fragmentation (a fraction: 1 −
    largest free chunk ÷ free bytes). `peak_fragmentation` is the highest over the capture, first
    reached at `peak_fragmentation_ns`; `lifetime_peak_bytes` the allocator's high-water mark since
    it was created (the highest `peak_bytes_in_use`; it may lie before the capture);
    `peak_in_use_bytes` the highest allocated + reserved (XProf's "stack + heap"), first reached at
    `peak_in_use_ns`. A figure no event reports is absent."""

    capacity_bytes: int | UnsetType = UNSET
    free_at_peak_bytes: int | UnsetType = UNSET
    fragmentation_at_peak: float | UnsetType = UNSET
    peak_fragmentation: float | UnsetType = UNSET
    peak_fragmentation_ns: float | UnsetType = UNSET
    lifetime_peak_bytes: int | UnsetType = UNSET
    peak_in_use_bytes: int
    peak_in_use_ns: float
    fragmentation: MemoryFractionSeries | UnsetType = UNSET


class MemoryPeak(Answer, kw_only=True):
    """The first event at which `Total Allocated` reaches its maximum over the capture."""

    allocated_bytes: int
    reserved_bytes: int | UnsetType = UNSET
    time_ns: float
    step: str | UnsetType = UNSET
    step_number: int | UnsetType = UNSET
    op: str | UnsetType = UNSET
    op_path: list[str]
    memory_event_id: int
    op_event_id: int | UnsetType = UNSET
    trace_start_ns: float
    trace_end_ns: float


class MemoryAllocation(Answer, kw_only=True):
    """One allocation and its free. `free_ns` and `lifetime_ns` are absent when the block was not
    freed inside the capture; an op is absent when the event names none and no host op encloses it;
    `dtype` and `region` (the allocator's region type) only when the event gives them (XPlane)."""

    addr: str
    size_bytes: int
    alloc_ns: float
    free_ns: float | UnsetType = UNSET
    lifetime_ns: float | UnsetType = UNSET
    alloc_op: str | UnsetType = UNSET
    free_op: str | UnsetType = UNSET
    shape: str | UnsetType = UNSET
    dtype: str | UnsetType = UNSET
    region: str | UnsetType = UNSET
    step: str | UnsetType = UNSET


class MemoryLiveGroup(Answer, kw_only=True):
    """Blocks live at the peak, allocated by one op (and shape and dtype): their bytes and how many."""

    op: str
    shape: str | UnsetType = UNSET
    dtype: str | UnsetType = UNSET
    bytes: int
    count: int


class MemoryOpRow(Answer, kw_only=True):
    """One allocating op: `allocated_bytes` summed over its `allocations`; `freed` of them freed in
    the capture; `peak_bytes` of its blocks live at the peak; `never_freed_bytes` not freed in the
    capture."""

    op: str
    allocated_bytes: int
    allocations: int
    freed: int
    peak_bytes: int
    never_freed_bytes: int


class MemoryStep(Answer, kw_only=True):
    """One step: `peak_bytes` the highest `Total Allocated` within it (the value carried in counts),
    `start_bytes` / `end_bytes` the value at its start and end, `never_freed_bytes` the bytes of the
    allocations made in it that the capture never frees. Values before the first event are those
    the first event implies (its total minus its own bytes)."""

    name: str
    number: int
    start_ns: float
    end_ns: float
    start_bytes: int
    end_bytes: int
    peak_bytes: int
    allocations: int
    never_freed_bytes: int


class MemoryPeakStepRow(Answer, kw_only=True):
    """Blocks of one size, op, shape, dtype and region allocated in the peak's step and live at the
    peak (XProf's identical allocations merged): `count` of them, `bytes` = size × count. The texts
    are the events' own (`tf_op`, `shape`, `data_type`, `region_type`), absent where they name none."""

    size_bytes: int
    count: int
    bytes: int
    op: str | UnsetType = UNSET
    shape: str | UnsetType = UNSET
    dtype: str | UnsetType = UNSET
    region: str | UnsetType = UNSET


class MemoryPeakStep(Answer, kw_only=True):
    """XProf memory_profile's breakdown of the peak (tools/memory/peak_step.py): the blocks allocated in
    the peak's step (`step`: the events' `group_id`) and live at the peak, and `before_step_bytes`,
    the rest of the peak (what XProf names "unused preallocated device memory"). At most 200 rows,
    largest size first; `count` and `bytes` count them all."""

    step: int
    rows: list[MemoryPeakStepRow]
    count: int
    bytes: int
    before_step_bytes: int


class MemoryDevice(Answer, kw_only=True):
    """One allocator (a device of one host). `reserved` is absent when the profile does not report
    it (`reserved_reason` says why); `allocator_stats` only for an XPlane allocator.
    `live_at_peak_bytes` sums the blocks allocated in the capture
    and live at the peak; `peak_step`, for an XPlane allocator whose events name their step, XProf's
    breakdown of the peak's step (else `peak_step_reason` says why there is none); `before_capture_bytes` = peak allocated − that sum: bytes allocated before
    the capture started and still held. Tables list at most `TABLE_ROWS` rows, largest first; the
    `*_count` and `*_bytes` fields count them all."""

    host: str
    label: str
    device_type: int
    device_id: int
    events: int
    start_ns: float
    end_ns: float
    allocated: MemorySeries
    reserved: MemorySeries | UnsetType = UNSET
    reserved_reason: str | UnsetType = UNSET
    peak: MemoryPeak
    steps: list[MemoryStep]
    live_at_peak: list[MemoryLiveGroup]
    live_at_peak_bytes: int
    live_at_peak_count: int
    before_capture_bytes: int
    allocations: list[MemoryAllocation]
    allocations_count: int
    allocated_bytes: int
    never_freed: list[MemoryAllocation]
    never_freed_count: int
    never_freed_bytes: int
    freed_before_capture_count: int
    freed_before_capture_bytes: int
    ops: list[MemoryOpRow]
    notes: list[str]
    allocator_stats: MemoryAllocatorStats | UnsetType = UNSET
    peak_step: MemoryPeakStep | UnsetType = UNSET
    peak_step_reason: str | UnsetType = UNSET


class ProgramBuffer(Answer, kw_only=True):
    """A buffer live at a program's peak: one logical buffer of the heap simulation, or a whole-program
    allocation (parameter, output, constant) shown by the largest buffer assigned to it.
    `size_bytes` is what it occupies (the allocation's size for a whole-program one); `unpadded_bytes`
    what its shape needs without layout padding (elements × element bytes; 8 bytes per element of a
    tuple)."""

    buffer_id: int
    size_bytes: int
    unpadded_bytes: int
    kind: str  # parameter, output, constant, temporary
    instruction: str
    opcode: str
    shape: str
    dtype: str
    op_name: str | UnsetType = UNSET
    allocation: int
    offset_bytes: int
    timeline_box: int | UnsetType = UNSET  # its bytes' box in `ProgramMemory.timeline` (heap buffers)


class ProgramHeap(Answer, kw_only=True):
    """Bytes in use after each heap-simulator event (`bytes[k]` after `position[k]` events, whole-program
    allocations included), at most about 2,000 points (each run keeps its lowest and highest point);
    `instruction[k]` is the instruction scheduled at that event. `events` counts the full trace."""

    position: list[int]
    bytes: list[int]
    instruction: list[str]
    events: int


class TimelineBand(Answer, kw_only=True):
    """One temporary allocation of the allocation timeline, stacked at `base_bytes` (the sizes of
    the bands below it)."""

    allocation: int
    base_bytes: int
    size_bytes: int


class ProgramTimeline(Answer, kw_only=True):
    """XProf memory_viewer's allocation timeline (tools/memory/program_timeline.py): one box per
    canonical buffer of the heap simulation, column by column (box i is `buffer_id[i]`, …). A box
    spans heap-simulator events `start[i]` … `end[i]` (x: 0 … `events`) and bytes
    `bands[band[i]].base_bytes + offset_bytes[i]` … + `size_bytes[i]` (y: 0 … `height_bytes`);
    `offset_bytes` is its offset in its allocation. `at_peak[i]`: it holds bytes at the peak.
    `instruction` is the defining instruction with the shape index (`fusion{0}`). At most 2,000
    boxes: `boxes` counts all, `left_out_bytes` the sizes of those not listed."""

    events: int
    bands: list[TimelineBand]
    height_bytes: int
    boxes: int
    left_out_bytes: int
    buffer_id: list[int]
    band: list[int]
    offset_bytes: list[int]
    size_bytes: list[int]
    unpadded_bytes: list[int]
    start: list[int]
    end: list[int]
    at_peak: list[bool]
    instruction: list[str]
    shape: list[str]
    dtype: list[str]
    op_name: list[str]


class ProgramSummary(Answer, kw_only=True):
    """One XLA program of a host, for the selector. `program_id` is the unsigned decimal key of its
    HloProto (a string: TPU ids pass 2**53); `peak_bytes` in memory space 0."""

    host: str
    host_index: int
    program_id: str
    name: str
    peak_bytes: int


class ProgramMemory(Answer, kw_only=True):
    """The compiler's view of one program's memory in one memory space (docs/MEMORY.md).
    `peak_bytes` = `whole_program_bytes` + `temporary_peak_bytes`, reached first after event
    `peak_position` (0 when the heap simulation is empty); the live rows add up to it.
    `timeline`: XProf's allocation timeline (absent when no temporary allocation of the memory space
    owns a heap-simulator trace). `instruction_events`: for the peak's and the live buffers'
    instructions, the timeline ids of the trace events that run them in this program (at most 200
    each; none for an instruction no event runs), the Trace tab's way to the instruction's HLO graph."""

    host: str
    host_index: int
    program_id: str
    name: str
    memory_space: int
    memory_spaces: list[int]
    peak_bytes: int
    peak_position: int
    peak_instruction: str | UnsetType = UNSET
    whole_program_bytes: int
    temporary_peak_bytes: int
    padding_bytes: int
    temporary_padding_bytes: int
    bytes_by_kind: dict[str, int]
    allocations: int
    allocation_bytes: int
    heap: ProgramHeap
    heap_reason: str | UnsetType = UNSET
    timeline: ProgramTimeline | UnsetType = UNSET
    live_at_peak: list[ProgramBuffer]
    live_at_peak_count: int
    live_at_peak_bytes: int
    instruction_events: dict[str, list[int]] = {}


class MemoryAnswer(Answer, kw_only=True):
    """The `memory` route: each allocator the profile records, or why there is none (`reason`); the
    XLA programs whose HloProtos carry a buffer assignment (`programs`, largest peak first; why none
    in `programs_reason` when the profile has HloProtos without one) and the selected one's
    compiler view (`program`)."""

    observed: bool
    reason: str | UnsetType = UNSET
    devices: list[MemoryDevice]
    step_source: str | UnsetType = UNSET
    warnings: list[str]
    programs: list[ProgramSummary]
    program: ProgramMemory | UnsetType = UNSET
    programs_reason: str | UnsetType = UNSET
