"""How much memory ingest processes use: each child's budget and how many children run at once.

`--profscope_ingest_memory_mb M` (default DEFAULT_TOTAL_MB) bounds the peak RSS of all the server's
local ingest processes together:
    slots = max(1, min(MAX_LOCAL_INGESTS, M // (MIN_CHILD_MB + IDLE_CHILD_MB)))
children ingest at once (a later job waits, "queued", until one ends), each forked by a template
process (`children`; IDLE_CHILD_MB: an interpreter with the readers imported, 44 MB
measured; one per slot at most), and each gets
    child budget = (M - slots * IDLE_CHILD_MB) / slots
for itself and its helper processes (a child shares its template's pages, but RSS counts them in
both, so a template's share comes off each slot), sent in the job spec (`memory_bytes`; a Dask task gets the one
of `profscope ingest --memory-mb` per worker process). Inside the child, CHILD_BASELINE_MB (the
interpreter, imports and a reader's fixed tables: 44 MB idle, about 100 MB while reading a 3 MB
XPlane, measured) comes off, and the rest is split in halves: the
`TraceBuilder` budget (its buffers, `finalize()`, the level-of-detail index, the cache write: see
`spill`) and what the reader may hold for its own buffers (`IngestMemory.reader_bytes`).

The child reads inside `TempEntry`: the cache's temporary entry directory made before the reader
starts, where a spilled builder writes the entry's columns (so the cache write moves them), and
removed, with whatever was spilled there, when the ingest fails.
"""

from __future__ import annotations

import collections
import ctypes
import os
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from profscope.engine import store
from profscope.engine.lod import spilled as lod_spilled
from profscope.model.columns import Trace
from profscope.model.spill import budget as spill_budget
from profscope.model.spill import page_cache as spill_pages

DEFAULT_TOTAL_MB = 2048
MAX_LOCAL_INGESTS = 2
IDLE_CHILD_MB = 64
MIN_CHILD_MB = 256
CHILD_BASELINE_MB = 100
MIN_BUILDER_MB = 16


# glibc's `mallopt` parameters, and its default mmap threshold (restored where the environment sets
# the trim threshold alone, which pins the mmap threshold there).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_GLIBC_MMAP_BYTES = 128 << 10


@contextmanager
def heap_for_ingest(trim: bool = True) -> Iterator[None]:
    """Let malloc keep freed memory for reuse while an ingest runs: its mmap threshold at 32 MiB
    and its trim threshold at 64 MiB, where glibc's dynamic threshold ends up after the first
    large free anyway, from the start.

    A reader makes and drops large temporary arrays batch after batch; each one malloc serves
    from a mapping of its own is unmapped when freed and its pages fault in anew for the next.
    Where the environment pins the thresholds low (`MALLOC_TRIM_THRESHOLD_`, which Dask's
    workers get: 64 KiB, and which also fixes the mmap threshold at 128 KiB), an 8-host ingest of
    378 k-event XPlanes took 3.7 M page faults and 8.1 s instead of 0.25 M and 3.4 s; from a
    clean environment 4.3-4.8 s (measured on the 2-core VM). Afterwards the environment's
    thresholds are restored (a Dask worker keeps its own policy) and, with `trim`, the heap
    trimmed (a process that exits next skips that: 11 ms after the 375 k-event JAX capture, on
    the path to its first view). Without glibc nothing changes."""
    mallopt = _mallopt()
    if mallopt is None:
        yield
        return
    mallopt(_M_MMAP_THRESHOLD, spill_pages.INGEST_MMAP_BYTES)
    mallopt(_M_TRIM_THRESHOLD, spill_pages.INGEST_TRIM_BYTES)
    try:
        yield
    finally:
        trim_bytes = _env_bytes("MALLOC_TRIM_THRESHOLD_")
        mmap = _env_bytes("MALLOC_MMAP_THRESHOLD_")
        if trim_bytes is not None:
            mallopt(_M_TRIM_THRESHOLD, trim_bytes)
            # The trim variable alone also pins the mmap threshold at glibc's default.
            mallopt(_M_MMAP_THRESHOLD, _GLIBC_MMAP_BYTES if mmap is None else mmap)
        elif mmap is not None:
            mallopt(_M_MMAP_THRESHOLD, mmap)
        if trim:
            spill_pages.trim_heap()


def one_malloc_arena() -> None:
    """Make every thread of this process allocate from glibc's main arena; for processes that
    exist for ingests only (the templates and their children), since glibc fixes its arena limit
    for good at the next thread.

    An ingest's threads (a finalize piece prepared ahead, the two halves of the summaries, the
    index's second thread) free what others allocated, and what is freed into a thread's own
    arena serves that thread alone. Through one ingest child the 214 MB XPlane of
    `bench_xplane.py --replicate 2000` peaked at 784-813 MB with an arena per thread, 708-713 MB
    with one, in the same time (`bench_ingest_memory.py`, MALLOC_ARENA_MAX=1)."""
    mallopt = _mallopt()
    if mallopt is not None:
        mallopt(_M_ARENA_MAX, 1)


def _env_bytes(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None


def _mallopt() -> Any:
    """glibc's `mallopt`, or None without glibc."""
    return spill_pages.libc_call("mallopt", ctypes.c_int, ctypes.c_int)


def local_slots(total_mb: int) -> int:
    """How many local ingest children may run at once within `total_mb`."""
    return max(1, min(MAX_LOCAL_INGESTS, int(total_mb) // (MIN_CHILD_MB + IDLE_CHILD_MB)))


def child_budget(total_mb: int) -> int:
    """Bytes one working child (and its helpers) may use when `total_mb` bounds them all."""
    slots = local_slots(total_mb)
    return max((int(total_mb) - slots * IDLE_CHILD_MB) // slots, MIN_CHILD_MB // 2) << 20


def shares(process_bytes: int) -> tuple[int, int]:
    """(builder bytes, reader bytes) of a child whose whole budget is `process_bytes`."""
    usable = max(int(process_bytes) - (CHILD_BASELINE_MB << 20), 2 * MIN_BUILDER_MB << 20)
    return usable // 2, usable - usable // 2


class Slots:
    """At most `size` local ingests at a time; the others start, in order, as earlier ones end."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._used = 0
        self._waiting: collections.deque[Callable[[], None]] = collections.deque()
        self._lock = threading.Lock()

    def take(self, start: Callable[[], None]) -> bool:
        """True: a slot is taken, the caller starts its job now; False: `start` is called (in a
        thread of its own) once one is free."""
        with self._lock:
            if self._used >= self.size:
                self._waiting.append(start)
                return False
            self._used += 1
        return True

    def release(self) -> None:
        """A job ended: its slot goes to the next waiting one."""
        with self._lock:
            if not self._waiting:
                self._used -= 1
                return
            start = self._waiting.popleft()
        threading.Thread(target=start, name="profscope-ingest-slot", daemon=True).start()


class TempEntry:
    """The temporary entry directory of one ingest and the memory budget its reader runs with."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.path = os.path.join(spec["cache_root"], store.TMP_DIR, store.tmp_name(spec["key"]))
        process = int(spec.get("memory_bytes") or child_budget(DEFAULT_TOTAL_MB))
        builder, reader = shares(process)
        self.memory = spill_budget.IngestMemory(self.path, builder, reader)
        os.makedirs(self.path)

    def __enter__(self) -> TempEntry:
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Builders made inside spill into this entry within its budget."""
        with spill_budget.use(self.memory):
            yield

    def extras(
        self, trace: Trace, in_memory: Callable[[Trace], tuple[dict[str, np.ndarray], dict[str, Any]]]
    ) -> Callable[[], tuple[Mapping[str, np.ndarray], Mapping[str, Any]]]:
        """The level-of-detail index maker for `store.write`: `in_memory` (`ingest.build_extras`)
        for a trace in memory, the bounded one writing into this entry for a spilled trace."""
        if spill_budget.is_spilled(trace):
            return lambda: lod_spilled.build_extras(trace, self.path, self.memory.budget_bytes)
        return lambda: in_memory(trace)
