"""The plugin's analysis caches: one computation per key under concurrency, bounded by count and,
where the values' sizes follow the trace's, by bytes."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from profscope.caches import SingleFlightCache, array_bytes

pytestmark = pytest.mark.stack_independent


def test_concurrent_requests_for_one_key_compute_it_once() -> None:
    cache = SingleFlightCache(4)
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        time.sleep(0.05)
        return 7

    threads = [threading.Thread(target=cache.get, args=("k", compute)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [1]
    assert cache.get("k", lambda: 0) == 7


def test_count_bound_evicts_the_least_recently_used() -> None:
    cache = SingleFlightCache(2)
    cache.get("a", lambda: 1)
    cache.get("b", lambda: 2)
    cache.get("a", lambda: 0)  # a is now the most recent
    cache.get("c", lambda: 3)
    assert list(cache.values) == ["a", "c"]


def test_byte_budget_evicts_old_values_and_keeps_the_newest_however_big() -> None:
    cache = SingleFlightCache(100, weigh=len, budget=10)
    cache.get("a", lambda: "x" * 4)
    cache.get("b", lambda: "x" * 4)
    assert list(cache.values) == ["a", "b"]
    cache.get("c", lambda: "x" * 4)  # 12 bytes > 10: a goes
    assert list(cache.values) == ["b", "c"]
    cache.get("huge", lambda: "x" * 50)  # alone over the budget, still kept
    assert list(cache.values) == ["huge"]
    cache.clear()
    assert not cache.values and not cache.weights


def test_array_bytes_counts_owned_arrays_not_views_or_memory_maps(tmp_path) -> None:  # type: ignore[no-untyped-def]
    mapped = np.lib.format.open_memmap(tmp_path / "m.npy", mode="w+", dtype=np.int64, shape=(1000,))

    class Holder:
        def __init__(self) -> None:
            self.owned = np.zeros(100, dtype=np.int64)  # 800 bytes
            self.view = self.owned[10:]
            self.mapped = mapped
            self.name = "not an array"

    assert array_bytes(Holder()) == 800
