"""Starting a reader's helper process: `python -m MODULE IN_FD OUT_FD [FD…]`, not `multiprocessing`.

So the helper neither re-imports the caller's `__main__` (TensorBoard, a script) nor depends on
the caller not being a daemonic process (ingest runs readers in one, Dask workers are ones). It
gets a pipe to read from, one to write to and any other files as inherited descriptors (POSIX
`pass_fds`), and finds this package where the caller found it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: readers start no helper there
    fcntl = None  # type: ignore[assignment]


@dataclasses.dataclass
class Started:
    """A helper process and the caller's ends of its two pipes."""

    proc: subprocess.Popen[bytes]
    send: Connection
    recv: Connection

    def stop(self) -> None:
        """End the helper, whatever it is doing, and close the pipes (again: nothing happens)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.send.close()
        self.recv.close()


def start(module: str, *extra_fds: int) -> Started:
    """Start `python -m module IN_FD OUT_FD extra_fd…`; raises OSError when it cannot."""
    to_child, child_in = os.pipe()
    child_out, from_child = os.pipe()
    for fd in (child_in, from_child):
        _widen(fd)
    os.set_inheritable(to_child, True)
    os.set_inheritable(from_child, True)
    fds = (to_child, from_child, *extra_fds)
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, *map(str, fds)], pass_fds=fds, stdin=subprocess.DEVNULL, env=env
        )
    except BaseException:
        os.close(child_in)
        os.close(child_out)
        raise
    finally:
        os.close(to_child)
        os.close(from_child)
    return Started(proc, Connection(child_in, readable=False), Connection(child_out, writable=False))


def _widen(fd: int) -> None:
    """Give a pipe the largest buffer an unprivileged process may ask for (1 MiB by default on
    Linux, 64 KiB otherwise): a message of a few MB then crosses in a few writes, each of which,
    in a helper busy on another thread, waits for the GIL."""
    if fcntl is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20)
