"""Second process for big XPlane files: walks the lines and decodes their events while the reader
turns the windows before into builder calls.

Started as `python -m profscope.formats.xplane.helper IN_FD OUT_FD SOURCE_FD` (`common.helper_process`,
not `multiprocessing`), or forked from a local ingest child (files of FORKED_HELPER_MIN_BYTES and
more there, since a fork costs no interpreter start), it reads the file the reader opened (`SOURCE_FD`, inherited, read by
`pread`, never by name). For each pass of the reader it gets the line slots of every plane and
the batch size, walks the planes in order (`walk.PlaneWalk`) and sends each step, then PLANE_END
after each plane's last one; the reader applies them in order, so the trace is the one a walk in
the reader's own process gives.

The two processes share the work: walking and decoding a window's events costs about half again
what applying them costs the reader (in the profile of the 1 GB JAX capture), so the reader says
when it has waited for a step (HUNGRY) and the helper sends its next flush raw, for the reader to
decode; otherwise the helper decodes it. Who decodes never changes the steps' results. At most
QUEUE_STEPS steps wait in the helper (each a window's bytes and columns: about 3 MB for a 1 MB
window of the JAX capture, `walk.Decoded`), and one more in the pipe: the helper's memory stays
that of a few batches (its peak RSS on the 1 GB JAX capture: about 90 MB).

A helper can fall behind after it started: load that arrives during the read may leave it less
of a core than the reader has, or it may be stopped. The reader then walks the rest itself, on
what it measured (`Lag`): each step comes with the CPU time the helper's walk spent on it (its
walk thread's: the sending thread's pickling is work that a reader walking alone does not do),
and the reader times its waits for the steps and its own work applying them. Walking and decoding
a step would have taken the reader that CPU time at its own pace (its wall seconds per CPU second
while applying, lately: 1 with a core of its own, about 2 while it shares one). The excess of its
waits over that is summed over the steps, never below zero (steps that came early excuse no
later wait); once waiting for the next step would take that sum past BEHIND_S, the reader kills
the helper and walks the rest of the plane, and the planes after it, from the last flush that
ended a window (`walk.Resume`), the steps it applied since skipped: the steps, so the trace, are
the ones the helper would have sent. Why these numbers: BEHIND_S (50 ms) is what the reader may
lose to a helper before it acts, a tenth of the read of the 375 k-event JAX capture on the 2-core
VM (0.35-0.5 s), where with a free core, or one or two CPU burners arriving mid-read, the sum
stayed under 5 ms at each of its 22 steps (waits of 0.1-17 ms against 1-30 ms of the helper's
CPU), and a helper starved mid-read (reniced, two burners) was left 0.1-0.2 s after the load came;
before the first step the patience covers the helper's start, whose CPU the first step's counts:
FORKED_START_CPU_S (a fork's first 1 MB window cost it 5-8 ms of CPU), SPAWNED_START_CPU_S (an
interpreter importing numpy: about 0.3 s of CPU, several times that in wall time under load, which
the reader cannot measure yet; too long a wait costs only where a helper hangs at its start, too
short one loses the helper for a file of 64 MB or more). _PACE_DECAY (0.5) lets the pace follow
load within two or three steps. What the rule does not see: a helper that keeps up while the
reader's own work slows because the two share a core (the reader's pace then counts the helper's
share too: pinned to one core, the helper cost the capture's read 9-18 %, benchmarks/README).
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

from profscope.formats.common import helper_process
from profscope.formats.xplane.source import FileBytes
from profscope.formats.xplane.walk import Flush, PlaneWalk, Resume, Step

# Files at least this big are walked by a helper: below, its start (a fresh interpreter importing
# numpy, about 0.3 s of CPU) costs more than it saves.
HELPER_MIN_BYTES = 64 << 20
# The same for a helper forked from a local ingest child (`helper_process.allow_fork`), which starts
# in milliseconds: the 17.6 MB JAX CPU capture was read in 0.52 s instead of 0.64 s with one (a quiet
# 2-core VM); smaller files were not measured on a quiet machine, so they stay in one process.
FORKED_HELPER_MIN_BYTES = 16 << 20
QUEUE_STEPS = 3
PLANE_END = "plane_end"
HUNGRY = "hungry"
_SWITCH_S = 0.0005
# When the reader walks on alone (see the module's docstring for why these numbers).
BEHIND_S = 0.05
FORKED_START_CPU_S = 0.05
SPAWNED_START_CPU_S = 2.0
_PACE_DECAY = 0.5


class HelperFailed(Exception):
    """The helper died or failed: the reader walks the file itself instead."""


class HelperBehind(Exception):
    """The reader would be faster alone (`Lag`): it walks the rest of the plane itself, from
    after the last flush that said where (`resume`; None: from the plane's start), less the
    `applied` steps it applied since."""

    def __init__(self, resume: Resume | None, applied: int) -> None:
        super().__init__(f"the helper fell behind, {applied} steps after the last window's end")
        self.resume = resume
        self.applied = applied


class Lag:
    """By how much the reader's waits for the helper's steps have exceeded the time it would have
    taken the reader to walk and decode them itself: the helper's CPU time for each (its walk
    thread's, sent with the step) at the pace the reader's own work goes now (its wall time per
    CPU second while it applies the steps: above 1 where it shares its core). Summed over the
    steps, never below zero, so steps that a free core brought early excuse no later wait."""

    def __init__(self, start_cpu: float) -> None:
        self.excess = 0.0
        # What the next step may cost: the last flush's CPU; the first one's includes the helper's start.
        self.step_cpu = start_cpu
        self._wall = self._cpu = 0.0  # the reader's applying, older steps counting less and less

    def pace(self) -> float:
        """The reader's wall seconds per CPU second of its own work, lately (1 before any)."""
        return self._wall / self._cpu if self._cpu > 0 else 1.0

    def patience(self) -> float:
        """How long the reader may wait for the next step before it walks on alone."""
        return BEHIND_S + self.step_cpu * self.pace() - self.excess

    def received(self, step: Step, waited: float, cpu: float) -> None:
        """The reader waited `waited` s for `step`, which cost the helper `cpu` s."""
        self.excess = max(0.0, self.excess + waited - cpu * self.pace())
        if isinstance(step, Flush):
            self.step_cpu = cpu

    def applied(self, wall: float, cpu: float) -> None:
        """The reader applied a step in `wall` s, `cpu` s of them its own CPU time."""
        self._wall = self._wall * _PACE_DECAY + wall
        self._cpu = self._cpu * _PACE_DECAY + cpu


def can_help(size: int) -> bool:
    """Whether a file of `size` bytes is worth a helper, where a helper can run at all
    (`helper_process.possible`): a big file, or one of a few MB where the helper is forked and a
    core is free for it (`helper_process.core_free`)."""
    if size >= HELPER_MIN_BYTES:
        return helper_process.possible()
    forked = size >= FORKED_HELPER_MIN_BYTES and helper_process.fork_allowed()
    return forked and helper_process.possible() and helper_process.core_free()


class Helper:
    """Handle on a running helper: ask it to walk the planes, take its steps, or stop it."""

    def __init__(self, source_fd: int) -> None:
        self._started = helper_process.start("profscope.formats.xplane.helper", source_fd, fork=True)
        forked = isinstance(self._started.proc, helper_process.Forked)
        self.lag = Lag(FORKED_START_CPU_S if forked else SPAWNED_START_CPU_S)

    def walk(self, slots: list[list[tuple[int, int]]], batch_bytes: int) -> None:
        """Start a walk over every plane's lines (`slots`, per plane)."""
        try:
            self._started.send.send((slots, batch_bytes))
        except OSError as exc:
            raise HelperFailed(f"the helper process is gone ({exc})") from exc

    def plane_steps(self) -> Iterator[Step]:
        """The steps of the next plane of the walk, each applied before the next is asked for;
        raises HelperBehind where the reader has waited too long (`Lag`)."""
        recv = self._started.recv
        resume, applied = None, 0
        while True:
            began = time.monotonic()
            try:
                if not recv.poll():  # nothing ready: the helper is the slower one
                    self._started.send.send(HUNGRY)
                message: Any = helper_process.recv_buffers(recv, began + self.lag.patience())
            except TimeoutError:
                raise HelperBehind(resume, applied) from None
            except (EOFError, OSError) as exc:
                raise HelperFailed(f"the helper process ended ({exc or 'closed'})") from exc
            if isinstance(message, str) and message == PLANE_END:
                return
            if isinstance(message, BaseException):
                raise HelperFailed(str(message)) from message
            step, cpu = message
            self.lag.received(step, time.monotonic() - began, cpu)
            applying, applying_cpu = time.monotonic(), time.thread_time()
            yield step
            self.lag.applied(time.monotonic() - applying, time.thread_time() - applying_cpu)
            if isinstance(step, Flush) and step.resume is not None:
                resume, applied = step.resume, 0
            else:
                applied += 1

    def kill(self) -> None:
        """End the helper now, without waiting for it (`stop` does)."""
        self._started.proc.kill()

    def stop(self) -> None:
        self._started.stop()


def run(inbox: Connection, outbox: Connection, source_fd: int) -> None:
    """Helper body: walk the planes for each order until the reader closes the pipe."""
    source = FileBytes(source_fd)
    # The sending thread waits for the GIL each time it has a step to send: not 5 ms behind the walk.
    sys.setswitchinterval(_SWITCH_S)
    waiting: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_STEPS)
    sender = threading.Thread(target=_send_all, args=(waiting, outbox), daemon=True)
    sender.start()
    timed = _Timed(waiting)
    while True:
        try:
            order = inbox.recv()
        except EOFError:
            break
        if order == HUNGRY:  # from the end of the last walk
            continue
        slots, batch_bytes = order
        try:
            for plane_slots in slots:
                PlaneWalk(source, batch_bytes, timed.put, lambda: not _hungry(inbox)).run(plane_slots)
                waiting.put(PLANE_END)
        except Exception as exc:  # the reader walks the file itself, and meets it again
            waiting.put(RuntimeError(f"{type(exc).__name__}: {exc}"))
    waiting.put(None)
    sender.join()


class _Timed:
    """Queues each step of the walk with the CPU time the walk spent on it (this thread's: not
    the sending thread's pickling, which a reader walking alone does not do)."""

    def __init__(self, waiting: queue.Queue[Any]) -> None:
        self.waiting = waiting
        self.last = 0.0  # the first step's CPU counts the helper's start (this thread's since it began)

    def put(self, step: Step) -> None:
        now = time.thread_time()
        self.waiting.put((step, now - self.last))
        self.last = now


def _hungry(inbox: Connection) -> bool:
    """Whether the reader has waited for a step since the last call (its HUNGRY messages read)."""
    hungry = False
    while inbox.poll():
        hungry |= inbox.recv() == HUNGRY
    return hungry


def _send_all(waiting: queue.Queue[Any], outbox: Connection) -> None:
    """Send the steps as they come (by another thread: writing waits for the reader to read)."""
    while (item := waiting.get()) is not None:
        try:
            helper_process.send_buffers(outbox, item)
        except OSError:  # the reader is gone: nothing more to do
            os._exit(1)


if __name__ == "__main__":
    # Run through the module's real name, so what it pickles refers to importable classes.
    from profscope.formats.xplane import helper as xplane_helper

    xplane_helper.run(
        Connection(int(sys.argv[1]), writable=False),
        Connection(int(sys.argv[2]), readable=False),
        int(sys.argv[3]),
    )
