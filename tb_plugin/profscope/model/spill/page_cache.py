"""The page cache and the heap of an ingest: memory handed back to the system as soon as it is used
for the last time, so that a spilling ingest stays within its budget in RSS and in the pages it dirties.

- temporary ranges read for the last time: whole pages punched out of the file (`release_range`), by a
  thread of their own (`release_later`);
- inputs read once: dropped from the page cache behind their reader (`DropBehind`);
- the heap: malloc's thresholds of ingest processes, and `trim_heap`.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import io
import mmap
import os
import queue
import threading
from typing import Any

_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
_PAGE_BYTES = mmap.PAGESIZE


@functools.cache
def libc_call(name: str, *argtypes: Any) -> Any:
    """A function of the C library (None where there is none of that name: not Linux / glibc)."""
    try:
        call = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError, TypeError):  # no C library of that name (Windows: no CDLL(None))
        return None
    call.argtypes = list(argtypes)
    return call


# The heap policy of ingest processes (`engine.ingest.memory.heap_for_ingest` sets it in an ingest, a
# reader's helper process starts with it): malloc's mmap threshold and its trim threshold.
INGEST_MMAP_BYTES = 32 << 20
INGEST_TRIM_BYTES = 64 << 20


def trim_heap() -> None:
    """Hand the heap's free pages back to the system (glibc's `malloc_trim`; nothing without
    glibc). Ingests keep freed memory for reuse (`engine.ingest.memory.heap_for_ingest`, which trims when
    it ends); the spilled finalize trims first too, since what the reading freed lies in pieces
    among what lives on, which the finalize's larger arrays cannot reuse: they would grow the
    heap past it."""
    call = libc_call("malloc_trim", ctypes.c_size_t)
    if call is not None:
        call(0)


def release_range(fd: int, at: int, size: int) -> bool:
    """Give the whole pages of bytes [at, at + size) of a temporary file back to the system at
    once (`fallocate` punching a hole; the file keeps its size), for bytes read for the last time.

    Pages freed while the reader goes on writing are the ones its next writes get: on the 2-core
    VM, whose host takes back memory left free for about 2 s, writing onto pages freed just before
    took 0.1 s per 512 MB against about 1 s onto pages not touched recently. False where the file
    system or the platform cannot (the pages are then freed when the file is closed)."""
    lo, hi = -(-at // _PAGE_BYTES) * _PAGE_BYTES, (at + size) // _PAGE_BYTES * _PAGE_BYTES
    if hi <= lo:
        return True
    call = libc_call("fallocate", ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
    return call is not None and call(fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE, lo, hi - lo) == 0


class _Releaser:
    """`release_range` on a thread of its own, for `release_later`: punching a hole waits for
    the writeback of any of its pages the kernel has begun writing to disk (a temporary file's
    pages too, once the ingest's writes pass the system's dirty threshold), which readers need
    not wait for. On the 2-core VM, the 10 GB Kineto trace's assembly spent 4.1 s in 3,781 calls
    of which 0.6 s on the CPU. Each range is queued with a duplicate of its descriptor, closed
    once the hole is punched, so closing the file meanwhile is safe; at most _MAX_QUEUED wait."""

    _MAX_QUEUED = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[int, int, int]] | None = None
        self._pid = 0

    def put(self, fd: int, at: int, size: int) -> None:
        with self._lock:
            if self._queue is None or self._pid != os.getpid():  # none yet, or a forked child's
                self._queue = queue.Queue(self._MAX_QUEUED)
                self._pid = os.getpid()
                threading.Thread(
                    target=self._run, args=(self._queue,), name="profscope-release", daemon=True
                ).start()
            pending = self._queue
        pending.put((os.dup(fd), at, size))

    def wait(self) -> None:
        with self._lock:
            pending = self._queue if self._pid == os.getpid() else None
        if pending is not None:
            pending.join()

    @staticmethod
    def _run(pending: queue.Queue[tuple[int, int, int]]) -> None:
        while True:
            fd, at, size = pending.get()
            try:
                # Never fails the reader: unreleased pages go back when the file is closed.
                with contextlib.suppress(Exception):
                    release_range(fd, at, size)
            finally:
                os.close(fd)
                pending.task_done()


_RELEASER = _Releaser()


def release_later(fd: int, at: int, size: int) -> None:
    """`release_range`, done by a thread while the caller goes on (`_Releaser`)."""
    _RELEASER.put(fd, at, size)


def wait_released() -> None:
    """Wait until every range given to `release_later` in this process is released."""
    _RELEASER.wait()


# Inputs at least this big are dropped from the page cache behind their reader, every this many
# bytes (`DropBehind`).
DROP_BEHIND_MIN_BYTES = 256 << 20
DROP_BEHIND_STEP_BYTES = 64 << 20


class DropBehind:
    """The page cache's copy of an input read once, handed back to the system as its reader moves
    on (`posix_fadvise(POSIX_FADV_DONTNEED)` on what was read, as `dd iflag=nocache` does; the file
    is not touched). Without it a 10 GB trace would fill the page cache and the ingest's own writes
    would get their pages by reclaim: on the 2-core VM, reading 10 GB while writing 9 GB took 14.2 s
    of system time with the input kept cached, 7.9 s with it dropped behind. Nothing for inputs under
    DROP_BEHIND_MIN_BYTES, files with no descriptor (remote ones) or platforms without fadvise."""

    def __init__(self, fileobj: Any, start: int = 0) -> None:
        self._fd = -1
        self._done = start
        try:
            fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
            if hasattr(os, "posix_fadvise") and os.fstat(fd).st_size >= DROP_BEHIND_MIN_BYTES:
                self._fd = fd
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            pass

    def read_to(self, pos: int) -> None:
        """Bytes before `pos` are read for the last time."""
        if self._fd >= 0 and pos - self._done >= DROP_BEHIND_STEP_BYTES:
            with contextlib.suppress(OSError):
                os.posix_fadvise(self._fd, self._done, pos - self._done, os.POSIX_FADV_DONTNEED)
            self._done = pos
