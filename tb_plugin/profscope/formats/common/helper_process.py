"""Starting a reader's helper process: `python -m MODULE IN_FD OUT_FD [FD…]`, not `multiprocessing`.

So the helper neither re-imports the caller's `__main__` (TensorBoard, a script) nor depends on
the caller not being a daemonic process (ingest runs readers in one, Dask workers are ones). It
gets a pipe to read from, one to write to and any other files as inherited descriptors (POSIX
`pass_fds`), and finds this package where the caller found it.

A process that exists for one ingest and has every reader imported already (a local ingest
child, forked by its template: `allow_fork`) may instead fork the helper (`start(…, fork=True)`):
the fork runs the module's `run(inbox, outbox, *fds)` at once, where a fresh interpreter costs
about 0.3 s of CPU before its first step (numpy's import), which is what kept the helper off
files below tens of MB. The child's other threads at that moment (the progress writer, the
parent watch) are not in the fork and hold nothing the walk uses; the fork ends with `os._exit`
(nothing of the child's to flush or clean up twice). The helper ends, forked or not, when the
reader closes its pipe or is gone. A reader that would start a helper only because one is cheap
here asks `core_free` first (R: threads running or ready to run now, this one included):
    core free  ⇔  R − 1 ≤ cores − 2   (where R is not known: load average ≤ cores − 1)
(cores: those this process may use, `usable_cores`)

`send_buffers` / `recv_buffers` pass objects holding large arrays (the XPlane walk's steps,
megabytes each): the pickle goes without the arrays' data (protocol 5, out of band), then
each array's bytes are written from its own memory and read straight into the buffer the
received array keeps. `Connection.send` would copy every array into the pickle and, receiving,
through a `BytesIO` into a new bytes object and again into the array.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import math
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
import traceback
import warnings
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from profscope.model.spill import page_cache as spill_pages

try:
    import fcntl
except ImportError:  # not POSIX: readers start no helper there
    fcntl = None  # type: ignore[assignment]


# A helper exists for one ingest, so it starts with the ingest's heap policy (`spill.INGEST_*`), in
# glibc's environment variables, whatever the caller's: with glibc's defaults each batch's arrays
# were mapped afresh and unmapped again (the XPlane args helper of the 214 MB file of
# `bench_xplane.py --replicate 2000`: 149-171 k page faults, 0.5 s of system time; 23 k and 0.2 s
# so), and a Dask worker's environment pins the thresholds lower still. One arena, as in the child.
_HEAP_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(spill_pages.INGEST_MMAP_BYTES),
    "MALLOC_TRIM_THRESHOLD_": str(spill_pages.INGEST_TRIM_BYTES),
    "MALLOC_ARENA_MAX": "1",
}


# Whether this process may fork its helpers (`allow_fork`).
_fork_allowed = False


def allow_fork() -> None:
    """Let helpers be forked from this process (`start(…, fork=True)`): for a process that exists
    for one ingest, with the readers imported (a template's child), where POSIX has `fork`."""
    global _fork_allowed
    _fork_allowed = hasattr(os, "fork")


def fork_allowed() -> bool:
    """Whether `allow_fork` was called here (a helper then starts in milliseconds)."""
    return _fork_allowed


class Forked:
    """A helper forked from this process, with what `Started` and the tests use of
    `subprocess.Popen`: `pid`, `poll`, `wait`, `kill`."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


@dataclasses.dataclass
class Started:
    """A helper process and the caller's ends of its two pipes."""

    proc: subprocess.Popen[bytes] | Forked
    send: Connection
    recv: Connection

    def stop(self) -> None:
        """End the helper, whatever it is doing, and close the pipes (again: nothing happens)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.send.close()
        self.recv.close()


def possible() -> bool:
    """Whether a helper process can help here: a second core this process may use
    (`usable_cores`), and POSIX (the helper gets its pipe ends and the source as inherited
    descriptors, `pass_fds`)."""
    return usable_cores() >= 2 and os.name == "posix"


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (a helper inherits it), capped by its
    cgroup's CPU quota (`cpu.max`). The machine's core count shows neither: pinned to one core,
    a helper shares it with the reader and the read is slower than in one process (9-18 % for
    the 375 k-event JAX capture, benchmarks/README)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    try:
        quota, period = _CGROUP_CPU_MAX.read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):  # no cgroup v2 quota here
        pass
    return cores


_CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def core_free() -> bool:
    """Whether a core is free for a helper now: besides this process, at most `cores - 2`
    threads running or ready to run (the fewest of a few looks at Linux's count, the fourth field
    of /proc/loadavg; elsewhere the one-minute load average at most `cores - 1`). A helper of
    a small file needs one to pay: it costs a third more CPU than it takes off the reader
    (pickling, the pipe), so sharing one core with it made the 375 k-event JAX capture's read
    1.5-2 times slower (load 2.7-3.9 on 2 cores), where a free core made it faster. The count
    of now, not the load average: after a busy minute the average stays above 1 for a minute or
    two on an idle machine. The count is the machine's, the cores this process's
    (`usable_cores`): where other processes run on cores it may not use, it says no."""
    cores = usable_cores()
    try:
        running = min(_running_now() for _ in range(_LOOKS))
    except (OSError, ValueError, IndexError):
        try:
            return os.getloadavg()[0] <= cores - 1
        except (AttributeError, OSError):  # no way to know
            return False
    return running - 1 <= cores - 2


_LOOKS = 3


def _running_now() -> int:
    """Threads running or ready to run on the whole machine, this one included (Linux)."""
    with open("/proc/loadavg", "rb") as f:
        return int(f.read().split()[3].split(b"/")[0])


def start(module: str, *extra_fds: int, fork: bool = False) -> Started:
    """Start `python -m module IN_FD OUT_FD extra_fd…`, or with `fork` where `fork_allowed`,
    fork this process to run `module.run(inbox, outbox, *extra_fds)`; raises OSError when it
    cannot."""
    to_child, child_in = os.pipe()
    child_out, from_child = os.pipe()
    for fd in (child_in, from_child):
        _widen(fd)
    try:
        if fork and _fork_allowed:
            proc: subprocess.Popen[bytes] | Forked = _fork(
                module, (to_child, from_child), (child_in, child_out), extra_fds
            )
        else:
            proc = _spawn(module, (to_child, from_child), extra_fds)
    except BaseException:
        os.close(child_in)
        os.close(child_out)
        raise
    finally:
        os.close(to_child)
        os.close(from_child)
    return Started(proc, Connection(child_in, readable=False), Connection(child_out, writable=False))


def _spawn(module: str, helper_ends: tuple[int, int], extra_fds: tuple[int, ...]) -> subprocess.Popen[bytes]:
    """Start `python -m module IN_FD OUT_FD extra_fd…` with the pipes' `helper_ends` inherited."""
    for fd in helper_ends:
        os.set_inheritable(fd, True)
    fds = (*helper_ends, *extra_fds)
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env.update(_HEAP_ENV)
    return subprocess.Popen(
        [sys.executable, "-m", module, *map(str, fds)], pass_fds=fds, stdin=subprocess.DEVNULL, env=env
    )


def _fork(
    module: str, helper_ends: tuple[int, int], own_ends: tuple[int, int], extra_fds: tuple[int, ...]
) -> Forked:
    """Fork a helper running `module.run` on the pipes' `helper_ends` (the fork closes this
    process's `own_ends`, so it sees the end of its input when this process closes or dies)."""
    run = importlib.import_module(module).run
    with warnings.catch_warnings():  # Python 3.12+ warns of forking with threads: see the module doc
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid:
        return Forked(pid)
    code = 1
    try:
        for fd in own_ends:
            os.close(fd)
        run(
            Connection(helper_ends[0], writable=False), Connection(helper_ends[1], readable=False), *extra_fds
        )
        code = 0
    except BaseException:  # noqa: BLE001 - the fork must end here, whatever happened
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        os._exit(code)


def _widen(fd: int) -> None:
    """Give a pipe the largest buffer an unprivileged process may ask for (1 MiB by default on
    Linux, 64 KiB otherwise): a message of a few MB then crosses in a few writes, each of which,
    in a helper busy on another thread, waits for the GIL."""
    if fcntl is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20)


def send_buffers(conn: Connection, obj: Any) -> None:
    """Send `obj`, its contiguous arrays out of band (see the module's docstring): a length, the
    pickle, then the arrays' bytes, by as few `writev` calls as the pipe takes (a sending thread
    waits for the GIL again after each call, behind a busy thread for up to its switch interval)."""
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    meta = pickle.dumps((head, [v.nbytes for v in views]), protocol=5)
    parts = [memoryview(_LENGTH.pack(len(meta)) + meta), *(v for v in views if v.nbytes)]
    fd = conn.fileno()
    while parts:
        done = os.writev(fd, parts[:_IOV_MAX])
        parts = _after(parts, done)


def recv_buffers(conn: Connection, deadline: float | None = None) -> Any:
    """What `send_buffers` sent; raises EOFError when the other end closed before its end, and
    TimeoutError when `deadline` (a `time.monotonic()`) passes before all of it came (the rest
    of the message is then left in the pipe)."""
    fd = conn.fileno()
    length = bytearray(_LENGTH.size)
    _read_into(fd, [memoryview(length)], deadline)
    meta = bytearray(_LENGTH.unpack(length)[0])
    _read_into(fd, [memoryview(meta)], deadline)
    head, sizes = pickle.loads(meta)
    buffers = [bytearray(size) for size in sizes]  # writable, so the arrays made on them are too
    _read_into(fd, [memoryview(b) for b in buffers if len(b)], deadline)
    return pickle.loads(head, buffers=buffers)


_LENGTH = struct.Struct("<Q")
_IOV_MAX = 512


def _after(parts: list[memoryview], count: int) -> list[memoryview]:
    """`parts` less their first `count` bytes."""
    while parts and count >= parts[0].nbytes:
        count -= parts[0].nbytes
        parts = parts[1:]
    if count:
        parts = [parts[0][count:], *parts[1:]]
    return parts


def _read_into(fd: int, parts: list[memoryview], deadline: float | None = None) -> None:
    """Fill `parts` from `fd`; raises EOFError where it closes first, TimeoutError where nothing
    more comes before `deadline`."""
    while parts:
        if deadline is not None and not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise TimeoutError("the helper sent nothing more in time")
        got = os.readv(fd, parts[:_IOV_MAX])
        if got == 0:
            raise EOFError("the helper's pipe closed inside a message")
        parts = _after(parts, got)
