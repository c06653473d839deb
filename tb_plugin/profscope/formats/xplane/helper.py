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
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

from profscope.formats.common import helper_process
from profscope.formats.xplane.source import FileBytes
from profscope.formats.xplane.walk import PlaneWalk, Step

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


class HelperFailed(Exception):
    """The helper died or failed: the reader walks the file itself instead."""


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

    def walk(self, slots: list[list[tuple[int, int]]], batch_bytes: int) -> None:
        """Start a walk over every plane's lines (`slots`, per plane)."""
        try:
            self._started.send.send((slots, batch_bytes))
        except OSError as exc:
            raise HelperFailed(f"the helper process is gone ({exc})") from exc

    def plane_steps(self) -> Iterator[Step]:
        """The steps of the next plane of the walk."""
        recv = self._started.recv
        while True:
            try:
                if not recv.poll():  # nothing ready: the helper is the slower one
                    self._started.send.send(HUNGRY)
                message: Any = helper_process.recv_buffers(recv)
            except (EOFError, OSError) as exc:
                raise HelperFailed(f"the helper process ended ({exc or 'closed'})") from exc
            if isinstance(message, str) and message == PLANE_END:
                return
            if isinstance(message, BaseException):
                raise HelperFailed(str(message)) from message
            yield message

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
                PlaneWalk(source, batch_bytes, waiting.put, lambda: not _hungry(inbox)).run(plane_slots)
                waiting.put(PLANE_END)
        except Exception as exc:  # the reader walks the file itself, and meets it again
            waiting.put(RuntimeError(f"{type(exc).__name__}: {exc}"))
    waiting.put(None)
    sender.join()


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
