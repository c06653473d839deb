"""The events of one device plane as the reader placed them, for the code that derives lines.

`xplane.read` decodes a file batch by batch and keeps, per GPU or TPU plane, only what
`derived` builds its lines from: the plane's events on the timeline that are kernels or
carry a step (GPU), or carry a framework op or source line, or are XLA module runs (TPU). Once
the plane's last line is read, a `PlaneEvents` of those rows is handed over, so that code depends
on this documented object, never on the reader's internals. Rows keep the file's order.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.formats.xplane.decode import RawPlane
from profscope.formats.xplane.hlo import InstructionMetadata
from profscope.formats.xplane.stats import StatNames

# The columns of a PlaneEvents, in the order `plane` collects them.
COLUMNS = (
    "start_ps", "duration_ps", "track", "kernel", "group", "has_group", "program", "has_program",
    "module", "op", "tf_op", "source", "is_async", "module_line",
)  # fmt: skip


@dataclasses.dataclass(frozen=True, slots=True)
class PlaneEvents:
    """Some events of one device plane (see the module docstring), one row each."""

    plane: RawPlane
    """The plane: its name, and its lines (name, number of events) as walked."""
    section: int
    """The plane's builder section id."""
    names: StatNames
    """Stat names and text values: the text columns below are ids into `names.names`, and text
    found later is interned there too (`names.name_id`)."""
    streams: list[tuple[int, int]]
    """GPU: the plane's streams as (stream number, builder track id)."""
    hlo: InstructionMetadata
    """The framework op and source line of HLO instructions, from the HloProtos of the metadata
    plane (none when the file has no such plane)."""
    start_ps: np.ndarray
    """int64: start in ps, in the reader's frame (a constant away from the timeline's zero)."""
    duration_ps: np.ndarray
    """int64: duration in ps (0 for instants)."""
    track: np.ndarray
    """int32: the builder track id of the event's box."""
    kernel: np.ndarray
    """bool: the event carries `kernel_details` (itself or through its metadata)."""
    group: np.ndarray
    """int64: the `group_id` stat (the step), valid where `has_group`."""
    has_group: np.ndarray
    program: np.ndarray
    """int64: the `program_id` stat, valid where `has_program`."""
    has_program: np.ndarray
    module: np.ndarray
    """int32 text ids of the `hlo_module`, `hlo_op`, `tf_op` and `source` stats; -1 for none or
    "" (the event's own stat wins over its metadata's)."""
    op: np.ndarray
    tf_op: np.ndarray
    source: np.ndarray
    is_async: np.ndarray
    """bool: a TPU op marked asynchronous (`_a` or `is_async` not 0)."""
    module_line: np.ndarray
    """bool: the event is on the plane's "XLA Modules" line."""

    @property
    def num_events(self) -> int:
        return int(self.start_ps.shape[0])
