"""The memory budget of an ingest: when a `TraceBuilder` spills to files (`files`) instead of holding on.

An ingest child runs its reader inside `use(IngestMemory(spill_dir, budget_bytes))`; every builder
made there without explicit arguments takes that budget. `spill_dir` is the cache's temporary entry
directory (`<cache>/tmp/<key>.<uuid>/`, removed when the ingest fails, never in the logdir): a
spilled builder writes the finished `.npy` columns there under their entry names, so the cache write
moves them into place instead of copying, and keeps its scratch files in `spill_dir/scratch/`.

Budget arithmetic (B = the builder's budget):
- the builder stays in memory while the peak of its in-memory path stays within B, predicted as
      P = PEAK_EVENT_BYTES * events + PEAK_ARGS_FACTOR * args bytes
          + PEAK_FLOW_BYTES * (flows + flow points) + PEAK_COUNTER_BYTES * counter samples + attachments
  (tracemalloc on the 3.2 M-event Kineto trace of `benchmarks/make_big_json.py`, 15 % flows: 171 B
  per event while the level-of-detail index is built next to the finished trace; the args bytes
  are held twice while `finalize()` joins them). Below that nothing changes;
- past it the builder spills: its buffers (36 B per event, the args bytes, 24 per flow, 41 per flow
  point, 20 per counter sample, the attachments) are appended to files, and later ones each time
  they reach B / FLUSH_DIVISOR, by a thread while the next fill (so at most 2 B / FLUSH_DIVISOR
  are held); `spill.finalize` then sorts from the files in pieces of about B.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import shutil
from collections.abc import Iterator
from typing import Any

import numpy as np

PEAK_EVENT_BYTES = 175
PEAK_ARGS_FACTOR = 2
PEAK_FLOW_BYTES = 100
PEAK_COUNTER_BYTES = 60
FLUSH_DIVISOR = 8
SCRATCH_DIR = "scratch"
# One event in every SAMPLE_EVERY (by position) is kept in memory while spilling: the start times
# that split a track too big for the budget into pieces of about equal size.
SAMPLE_EVERY = 64
# Track ids are int32 in every record; references to tracks not made yet (`TraceBuilder.settle`)
# are checked against this until they are settled.
MAX_TRACKS = 1 << 31
# Bytes a buffered row costs (see the module doc).
EVENT_BYTES = 4 + 8 + 8 + 4 + 4 + 8
FLOW_BYTES = 24
POINT_BYTES = 41
COUNTER_BYTES = 20
# Python objects of one `add_flow` / `add_flow_point` call kept in a list (estimate), buffered
# and with what the in-memory path makes of them.
SINGLE_FLOW_BYTES = 100
SINGLE_POINT_BYTES = 200
SINGLE_PEAK_BYTES = 300
# Bulk flow ids are counted per block of this many ids (sizes the pieces of the flow chaining).
KID_BLOCK = 4096


@dataclasses.dataclass(frozen=True)
class IngestMemory:
    """Where an ingest may spill and how much memory its builder may use (bytes)."""

    spill_dir: str
    budget_bytes: int
    # What the reader may hold for its own buffers besides (readers that stream size chunks by it).
    reader_bytes: int = 0


class SpillWriteError(Exception):
    """A spill file could not be written (the cache directory is full or unwritable). Not the
    source's fault, and no OSError, so that readers which turn OSErrors into "unreadable file"
    let it through."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


_CURRENT: contextvars.ContextVar[IngestMemory | None] = contextvars.ContextVar(
    "profscope_ingest_memory", default=None
)


@contextlib.contextmanager
def use(config: IngestMemory | None) -> Iterator[None]:
    """Builders made inside the block (in this thread) take `config` as their budget."""
    token = _CURRENT.set(config)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> IngestMemory | None:
    """The budget in force (`use`), or None outside an ingest."""
    return _CURRENT.get()


# What a reader's error says when a file holds more per-key state than the ingest's budget.
RAISE_BUDGET_HINT = "raise --profscope_ingest_memory_mb (`profscope ingest --memory-mb`) to open it"


def track_bytes() -> int | None:
    """What an ingest's budget holds of the state readers keep per distinct key and cannot spill
    (threads, XPlane lines, async ids while numbered, names): the reader's share, since the
    builder's fills with event columns before they spill (both full at once stay within the
    child's budget); a budget given without a reader share counts whole. None outside an ingest."""
    config = current()
    if config is None:
        return None
    return config.reader_bytes or config.budget_bytes


def remove_scratch(out_dir: str) -> None:
    """Remove what spilled builders left in `out_dir` besides the entry's files."""
    for name in os.listdir(out_dir):
        if name.startswith(SCRATCH_DIR):
            shutil.rmtree(os.path.join(out_dir, name), ignore_errors=True)


def is_spilled(trace: Any) -> bool:
    """Whether `trace` came from a spilled builder (its columns are files of a temporary entry)."""
    return isinstance(trace.ev_start_ps, np.memmap)
