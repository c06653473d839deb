"""A bound on a block of test code that may hang (a reader stuck in a Python loop on hostile input).

A watcher thread reads the CPU clock of the calling thread, not of the process: threads that earlier
tests leave behind (a cache entry's background verification, a Dask client's IO loop) would count
in a process timer and fail an innocent input. Past `seconds` of that CPU time, or four times that of
wall time (a reader waiting on its helper process), it sends SIGALRM to the calling thread, whose
handler raises the caller's error there. CPU time first, so that a machine shared with other work
does not fail the test. Python runs signal handlers in the main thread only: call it from there.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator

POLL_S = 0.02


@contextlib.contextmanager
def cpu_bound(seconds: float, error: Callable[[], BaseException]) -> Iterator[None]:
    """Raise `error()` when the block uses more than `seconds` of its thread's CPU or 4 × `seconds`
    of wall time."""
    caller = threading.get_ident()
    clock = time.pthread_getcpuclockid(caller)
    cpu_start, wall_start = time.clock_gettime(clock), time.monotonic()
    done = threading.Event()

    def watch() -> None:
        while not done.wait(POLL_S):
            over_cpu = time.clock_gettime(clock) - cpu_start > seconds
            if over_cpu or time.monotonic() - wall_start > 4 * seconds:
                signal.pthread_kill(caller, signal.SIGALRM)
                return

    def expire(signum: int, frame: object) -> None:
        raise error()

    previous = signal.signal(signal.SIGALRM, expire)
    watcher = threading.Thread(target=watch, name="cpu-bound watcher", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
        signal.signal(signal.SIGALRM, previous)
