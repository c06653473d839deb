"""A bound on a block of test code that may hang (a reader stuck in a Python loop on hostile input).

Timers, not threads: SIGPROF after `seconds` of CPU, SIGALRM after four times that of wall time (a
reader waiting on its helper process), each raising the caller's error in the main thread. CPU time
first, so that a machine shared with other work does not fail the test.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def cpu_bound(seconds: float, error: Callable[[], BaseException]) -> Iterator[None]:
    """Raise `error()` when the block uses more than `seconds` of CPU or 4 × `seconds` of wall time."""

    def expire(signum: int, frame: object) -> None:
        raise error()

    previous = {sig: signal.signal(sig, expire) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, 4 * seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
