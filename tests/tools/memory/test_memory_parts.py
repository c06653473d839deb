"""The Memory tab's two algorithms on arrays made to test them: the chart's downsampling keeps the
exact peak within its bound, and pairing names what it cannot pair (reused addresses, frees of
blocks older than the capture, size mismatches)."""

from __future__ import annotations

import numpy as np

from profscope.analysis import memory_pairing as pairing
from profscope.analysis.memory_records import MemoryRecords
from profscope.tools.memory import series


def test_downsampling_keeps_the_peak_first_and_last_within_the_bound() -> None:
    rng = np.random.default_rng(7)
    values = np.cumsum(rng.integers(-1000, 1001, 100_000)).astype(np.int64)
    keep = series.downsample(values, 2000)
    assert keep.shape[0] <= 2002 and np.all(np.diff(keep) > 0)
    assert values[keep].max() == values.max() and values[keep].min() == values.min()
    assert keep[0] == 0 and keep[-1] == values.shape[0] - 1
    small = np.array([3, 1, 4], dtype=np.int64)
    assert series.downsample(small, 2000).tolist() == [0, 1, 2]


def _records(addr: list[int], size: list[int]) -> MemoryRecords:
    n = len(addr)
    total = np.cumsum(size).astype(np.int64)
    return MemoryRecords(
        device_type=1,
        device_id=0,
        event=np.arange(n, dtype=np.int64),
        time_ps=np.arange(n, dtype=np.int64) * 10,
        addr=np.array(addr, dtype=np.uint64),
        size=np.array(size, dtype=np.int64),
        allocated=total,
        reserved=total,
        op=np.full(n, -1, dtype=np.int64),
    )


def test_pairs_by_address_in_time_order_with_what_cannot_pair_named() -> None:
    # 0: A+8  1: B+4  2: A-8  3: C-16 (older than the capture)  4: A+8 again  5: B+4 (no free of B)
    # 6: A-4 (frees another size)
    pairs = pairing.pair(_records([1, 2, 1, 3, 1, 2, 1], [8, 4, -8, -16, 8, 4, -4]))
    assert pairs.alloc.tolist() == [0, 1, 4, 5]
    assert pairs.free.tolist() == [2, -1, 6, -1]
    assert pairs.reused_without_free == 1
    assert pairs.freed_before_capture.tolist() == [3]
    assert pairs.size_mismatches == 1
    assert pairs.never_freed.tolist() == [1, 3]
    assert _records([1], [8]).label == "CUDA 0"
