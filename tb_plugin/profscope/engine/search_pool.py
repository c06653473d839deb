"""At most a few whole-trace searches at once, so tiles and event details never wait behind them.

A search scans every event's args (tens to hundreds of ms of CPU at a few million events). Under
16 clients on 2 cores, unbounded searches took both cores and the GIL, and tile p99 rose to
seconds. A `SearchPool` lets `max_running` searches scan at once, in the requests' own threads;
up to `max_waiting` more wait their turn in arrival order, and past that a search is refused
(`SearchBusy`: the route answers 503 with Retry-After). A newer search of the same client cancels
its earlier ones, queued or running, and so does the client going away (its connection closed: a
viewer that typed on, or left): the scan stops at its next `checkpoint` (`query.py` calls it between
chunks, and it hands the GIL to the other requests' threads there), a waiting search within
`GONE_POLL_S`.
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# Searches scanning at once: one per two cores, at most two, so the other cores serve tiles.
DEFAULT_RUNNING = min(2, max(1, (os.cpu_count() or 2) // 2))
# Searches waiting beyond those: at a million events one takes about 0.1 s alone, so the last waits about 1 s.
DEFAULT_WAITING = 8
# What a refused search is told to wait before asking again.
RETRY_AFTER_S = 1
# How often a waiting search looks whether its client is still there.
GONE_POLL_S = 0.2


class SearchBusy(Exception):
    """Too many searches are waiting; ask again after `retry_after_s`."""

    def __init__(self, waiting: int, retry_after_s: int) -> None:
        super().__init__(f"{waiting} searches are already waiting; try again in {retry_after_s} s")
        self.retry_after_s = retry_after_s


class SearchCancelled(Exception):
    """The search was cancelled (a newer search of the same client, or its client went away)
    before it finished."""


def _never_gone() -> bool:
    return False


class _Ticket:
    """One search's place in the pool, its cancel flag and the check of its client's connection."""

    def __init__(self, client: str | None, gone: Callable[[], bool]) -> None:
        self.client = client
        self.gone = gone
        self.cancelled = threading.Event()
        self.reason = "a newer search of the same client"

    def leave_if_gone(self) -> bool:
        """Cancel the search when its client went away; whether it is cancelled (for any reason)."""
        if not self.cancelled.is_set() and self.gone():
            self.reason = "its client went away"
            self.cancelled.set()
        return self.cancelled.is_set()


_CURRENT: contextvars.ContextVar[_Ticket | None] = contextvars.ContextVar("profscope_search", default=None)


def checkpoint() -> None:
    """Between two chunks of a scan: stop if this thread's search was cancelled or its client went
    away, else let other threads take the GIL before going on (numpy keeps it between its calls)."""
    ticket = _CURRENT.get()
    if ticket is not None and ticket.leave_if_gone():
        raise SearchCancelled(f"search cancelled: {ticket.reason}")
    time.sleep(0)


class SearchPool:
    """Admission of searches: `run(search)` waits for a free slot, then runs `search` in the
    calling thread with a cancel flag `checkpoint` sees."""

    def __init__(
        self,
        max_running: int = DEFAULT_RUNNING,
        max_waiting: int = DEFAULT_WAITING,
        retry_after_s: int = RETRY_AFTER_S,
    ) -> None:
        if max_running < 1 or max_waiting < 0:
            raise ValueError(
                f"a search pool needs max_running >= 1 and max_waiting >= 0, got {max_running}, {max_waiting}"
            )
        self.max_running = max_running
        self.max_waiting = max_waiting
        self.retry_after_s = retry_after_s
        self._changed = threading.Condition()
        self._waiting: list[_Ticket] = []
        self._running: set[_Ticket] = set()

    def run(
        self, search: Callable[[], T], client: str | None = None, gone: Callable[[], bool] = _never_gone
    ) -> T:
        """`search()` once a slot is free, in arrival order. Raises `SearchBusy` when
        `max_waiting` searches already wait, `SearchCancelled` when a newer search of `client`
        arrives before this one ends (a search without a client is never superseded) or when
        `gone()` says its client went away (`Params.disconnected`)."""
        ticket = _Ticket(client, gone)
        watch_client = gone is not _never_gone
        with self._changed:
            self._supersede(client)
            # Cancelled searches are leaving (at their next checkpoint): they hold no place.
            waiting = sum(not t.cancelled.is_set() for t in self._waiting)
            if (
                waiting >= self.max_waiting
                and sum(not t.cancelled.is_set() for t in self._running) >= self.max_running
            ):
                raise SearchBusy(waiting, self.retry_after_s)
            self._waiting.append(ticket)
            while not ticket.leave_if_gone() and not (
                self._waiting[0] is ticket and len(self._running) < self.max_running
            ):
                self._changed.wait(GONE_POLL_S if watch_client else None)
            self._waiting.remove(ticket)
            self._changed.notify_all()  # the next in line may start, or see that it is first now
            if ticket.cancelled.is_set():
                raise SearchCancelled(f"search cancelled while waiting: {ticket.reason}")
            self._running.add(ticket)
        token = _CURRENT.set(ticket)
        try:
            return search()
        finally:
            _CURRENT.reset(token)
            with self._changed:
                self._running.discard(ticket)
                self._changed.notify_all()

    def counts(self) -> tuple[int, int]:
        """(running, waiting) searches now."""
        with self._changed:
            return len(self._running), len(self._waiting)

    def _supersede(self, client: str | None) -> None:
        """Cancel the searches of `client` already here (the caller holds the lock)."""
        if client is None:
            return
        for ticket in [*self._running, *self._waiting]:
            if ticket.client == client:
                ticket.cancelled.set()
        self._changed.notify_all()
