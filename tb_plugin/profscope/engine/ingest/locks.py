"""File locks of ingest: the per-fingerprint lock a child holds while it builds an entry, and the
test whether a live process holds one (what lets a starting manager remove what dead ones left)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator


def held(path: str) -> bool:
    """Whether a live process holds the lock on `path` (False when nobody does or it is absent).
    Without `fcntl` (Windows) every file counts as held: only the age rule of `clean_tmp` applies."""
    try:
        import fcntl
    except ImportError:
        return True
    try:
        with open(path, "rb") as f:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
            return False
    except OSError:
        return False


@contextlib.contextmanager
def exclusive(path: str) -> Iterator[None]:
    """Hold an exclusive lock on `path` (blocks while another process holds it)."""
    with open(path, "a+b") as f:
        if sys.platform == "win32":
            import msvcrt

            while True:
                try:
                    msvcrt.locking(f.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:
                    time.sleep(0.05)
            try:
                yield
            finally:
                f.seek(0)
                msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
