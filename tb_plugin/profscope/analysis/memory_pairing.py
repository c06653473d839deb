"""Allocations paired with their frees: by address, in time order, on one device.

The records are grouped by address (stable, so each address keeps time order). Within an address a
free closes the allocation just before it; what is left over is named, never guessed:
- an allocation followed by another allocation at the same address, or by nothing, was not freed
  inside the capture (the second case is the usual one; the first means the allocator reused the
  address without a recorded free, and is counted in `reused_without_free`);
- a free with no allocation before it at its address frees a block allocated before the capture
  started (`freed_before_capture`, with its bytes).
A pair whose free size differs from its allocation size is still a pair; `size_mismatches` counts
them (the allocation's size is the one reported).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.analysis.memory_records import MemoryRecords


@dataclasses.dataclass(frozen=True)
class Pairs:
    """Every allocation of one device (by record position, in time order) and its free."""

    alloc: np.ndarray  # int64 record position of each allocation, ascending
    free: np.ndarray  # int64 record position of its free, -1 when not freed in the capture
    reused_without_free: int
    freed_before_capture: np.ndarray  # int64 record positions of frees without an allocation
    size_mismatches: int

    @property
    def never_freed(self) -> np.ndarray:
        """Positions (in `alloc`) of the allocations not freed inside the capture."""
        return np.flatnonzero(self.free < 0)

    def live_at(self, at: int) -> np.ndarray:
        """Which allocations (bool per `alloc`) hold their block at record `at`: allocated at or before
        it, freed after it or never inside the capture (the peak's live blocks, at the peak's record)."""
        return (self.alloc <= at) & ((self.free < 0) | (self.free > at))


def pair(records: MemoryRecords) -> Pairs:
    """Pairs of `records` (module docstring)."""
    n = len(records)
    by_addr = np.lexsort((np.arange(n), records.addr))
    size = records.size[by_addr]
    same_as_next = np.zeros(n, dtype=bool)
    if n > 1:
        same_as_next[:-1] = records.addr[by_addr][1:] == records.addr[by_addr][:-1]
    is_alloc = size > 0
    is_free = size < 0
    next_is_free = np.zeros(n, dtype=bool)
    next_is_free[:-1] = is_free[1:]
    closed = is_alloc & same_as_next & next_is_free
    free_of = np.full(n, -1, dtype=np.int64)
    free_of[closed] = by_addr[np.flatnonzero(closed) + 1]
    prev_closes = np.zeros(n, dtype=bool)
    prev_closes[1:] = closed[:-1]
    orphan_free = is_free & ~prev_closes
    next_is_alloc = np.zeros(n, dtype=bool)
    next_is_alloc[:-1] = is_alloc[1:]
    reused = is_alloc & same_as_next & next_is_alloc
    mismatch = closed.copy()
    mismatch[closed] = size[closed] != -size[np.flatnonzero(closed) + 1]
    alloc_positions = by_addr[is_alloc]
    frees = free_of[is_alloc]
    order = np.argsort(alloc_positions, kind="stable")
    return Pairs(
        alloc=alloc_positions[order].astype(np.int64),
        free=frees[order],
        reused_without_free=int(reused.sum()),
        freed_before_capture=np.sort(by_addr[orphan_free]).astype(np.int64),
        size_mismatches=int(mismatch.sum()),
    )
