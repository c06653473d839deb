"""The analysis caches of a plugin: one computation per key, bounded, thread-safe.

Analyses over a trace (roofline, overview) take seconds on a big one; their answers are cached per
(cache entry, options) the way tiles are, since an entry never changes under its fingerprint. The
plugin owns one `Caches` and hands it to every request's `HostContext`.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


class SingleFlightCache:
    """A small LRU whose values are computed once per key, under that key's lock only: a request
    computing one analysis never blocks requests for others, and concurrent requests for the same
    key wait for the one computation instead of repeating it.

    It holds at most `size` values and, given `weigh` (a value's bytes), at most `budget` bytes of
    them, the newest value always kept: a count alone is wrong both ways for values whose size
    follows the trace's (64 small ranks' events fit where 16 big ones would not)."""

    def __init__(self, size: int, weigh: Callable[[Any], int] | None = None, budget: int = 0) -> None:
        self.size = size
        self.weigh = weigh
        self.budget = budget
        self.values: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()
        self.weights: dict[Hashable, int] = {}
        self.locks: dict[Hashable, threading.Lock] = {}
        self.lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self.lock:
            if key in self.values:
                self.values.move_to_end(key)
                return self.values[key]
            slot = self.locks.setdefault(key, threading.Lock())
        with slot:
            with self.lock:
                if key in self.values:
                    return self.values[key]
            value = compute()
            weight = self.weigh(value) if self.weigh is not None else 0
            with self.lock:
                self.values[key] = value
                self.weights[key] = weight
                self.locks.pop(key, None)
                while len(self.values) > 1 and (
                    len(self.values) > self.size or (self.weigh is not None and self._weight() > self.budget)
                ):
                    old, _ = self.values.popitem(last=False)
                    self.weights.pop(old, None)
            return value

    def _weight(self) -> int:
        return sum(self.weights.values())

    def clear(self) -> None:
        with self.lock:
            self.values.clear()
            self.weights.clear()


class Caches:
    """The analysis caches of one plugin instance, by name: each tool keeps its answers here, and
    the host context its shared per-trace results (classified events, decoded HLO modules), so
    two plugins (two TensorBoard apps in one process, or two tests) never share an answer, and
    nothing is a module global for tests to clear by hand."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._caches: dict[str, SingleFlightCache] = {}

    def named(
        self, name: str, size: int, weigh: Callable[[Any], int] | None = None, budget: int = 0
    ) -> SingleFlightCache:
        """The cache called `name`, made with `size` slots (and `weigh`, `budget`: see
        `SingleFlightCache`) the first time it is asked for."""
        with self._lock:
            cache = self._caches.get(name)
            if cache is None:
                cache = self._caches[name] = SingleFlightCache(size, weigh, budget)
            return cache

    def clear(self) -> None:
        """Forget every cached value (benchmarks measuring a cold answer)."""
        with self._lock:
            caches = list(self._caches.values())
        for cache in caches:
            cache.clear()


def array_bytes(value: object) -> int:
    """The bytes of the numpy arrays a value owns as attributes, a `weigh` for values made of
    arrays: views and memory-mapped arrays are not counted (their pages belong to the array they
    view, or to the page cache)."""
    return sum(
        item.nbytes
        for item in vars(value).values()
        if isinstance(item, np.ndarray) and not isinstance(item, np.memmap) and item.base is None
    )
