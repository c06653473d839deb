"""Keeps the mapped cache pages counted in the server's resident memory under a budget.

Large cache columns are memory-mapped (`store`), and every page a request touches stays counted in
the server's RSS (`VmRSS = RssAnon + RssFile + RssShmem`) until the kernel needs the memory back,
although it is page cache, not memory the server holds: a search of a 29 M-event trace touches
every page of several columns and leaves 1.5 GB counted. That number is what `top`, container
dashboards and memory-limit tooling show, and mapped pages are the last the kernel reclaims.

So `store` registers each column it maps from a cache file, and after each request the plugin
calls `trim()`: when the process's file-backed and shared resident pages (`/proc/self/statm`,
third field) exceed the budget, every registered mapping is told `MADV_DONTNEED`. The pages
leave this process's page tables but stay in the page cache, so the next touch is a minor fault,
not a disk read, and nothing changes for a reader of the array (the mappings are read-only views
of unchanged files). Columns copied into sealed memory files (`store._sealed_map`, ≤ 4 MiB each)
are not registered: dropping their pages would drop the only copy's mapping for no gain.

Linux only (elsewhere `trim` does nothing); the budget is `--profscope_resident_mb`.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import weakref

import numpy as np

DEFAULT_BUDGET_MB = 512
_MADV_DONTNEED = 4
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

_lock = threading.Lock()
# Weak references (arrays are not hashable, so no WeakSet); dead ones are pruned as it grows.
_mapped: list[weakref.ref[np.memmap]] = []
_pruned_at = 64
_budget_bytes = DEFAULT_BUDGET_MB << 20
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
if _libc is not None:
    _libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    _libc.madvise.restype = ctypes.c_int


def set_budget_mb(mb: int) -> None:
    """Mapped pages (MB) the process may keep counted before `trim` releases them."""
    global _budget_bytes
    _budget_bytes = max(0, int(mb)) << 20


def register(array: np.memmap) -> np.memmap:
    """Count `array` (a read-only map of a cache file) among the mappings `trim` may release."""
    global _pruned_at
    if _libc is not None:
        with _lock:
            _mapped.append(weakref.ref(array))
            if len(_mapped) >= 2 * _pruned_at:
                _mapped[:] = [ref for ref in _mapped if ref() is not None]
                _pruned_at = max(64, len(_mapped))
    return array


def shared_resident_bytes() -> int:
    """Resident pages of this process backed by files or shared memory (`/proc/self/statm`)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[2]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def trim() -> int:
    """Release the registered mappings' pages when the shared resident pages exceed the budget;
    the bytes of mappings advised (0 when under budget or not on Linux)."""
    if _libc is None or shared_resident_bytes() <= _budget_bytes:
        return 0
    return release()


def release() -> int:
    """Tell the kernel this process no longer needs the pages of any registered mapping."""
    with _lock:
        arrays = [array for array in (ref() for ref in _mapped) if array is not None]
        _mapped[:] = [weakref.ref(array) for array in arrays]
    return sum(_advise(array) for array in arrays)


def _advise(array: np.memmap) -> int:
    nbytes = int(array.nbytes)
    if _libc is None or nbytes == 0:
        return 0
    start = int(array.ctypes.data)
    # The map begins at or before the data's page and ends at or after its last page.
    lo = start - start % _PAGE
    hi = -(-(start + nbytes) // _PAGE) * _PAGE
    if _libc.madvise(lo, hi - lo, _MADV_DONTNEED) != 0:
        return 0
    return hi - lo
