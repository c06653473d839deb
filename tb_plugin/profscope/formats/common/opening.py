"""Opening a reader's local file so that no open waits on a FIFO and every check its `fs` makes applies.

A listed file can be replaced before a reader opens it: by a FIFO, whose `open()` would block the
reader for ever, or by a link to a file elsewhere. A filesystem that checks its opens (the
logdir's) refuses both, so readers open local files through `fs` and read the descriptor it
opened, never the file by name again (a helper process inherits that descriptor). fsspec's own
local filesystem opens by name and would wait on a FIFO: there `open_regular` opens the file
without waiting and refuses anything but a regular file.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:  # imported where a file is opened: a helper process reading by descriptor never needs it
    import fsspec

# How a refusal names a file that is not a regular one (discovery's refusals too).
SPECIAL_FILES = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def kind_of(mode: int) -> str:
    """What a file that is not a regular one is, as a refusal names it ("a FIFO", "a device"…)."""
    return next((k for test, k in SPECIAL_FILES if test(mode)), "a special file")


class NotRegularFile(OSError):
    """The file is a FIFO, a device, a socket or a folder: readers read only regular files."""

    def __init__(self, mode: int) -> None:
        super().__init__(f"it is {kind_of(mode)}, not a regular file; refused")


def open_regular(path: str) -> int:
    """A blocking read-only descriptor of the regular file `path`; `NotRegularFile` otherwise.

    A special file is refused before it is opened when it already is one, and by `fstat` on the
    descriptor when it became one meanwhile (opened with `O_NONBLOCK`, so a FIFO waits for no writer)."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile(mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(path: str, fs: fsspec.AbstractFileSystem) -> BinaryIO:
    """`fs.open(path, "rb")`, except where that is fsspec's plain local open by name (which waits on
    a FIFO): there the file of `open_regular`."""
    from fsspec.implementations.local import LocalFileSystem

    if type(fs)._open is LocalFileSystem._open:
        return os.fdopen(open_regular(fs._strip_protocol(path)), "rb")
    return fs.open(path, "rb")


def open_descriptor(path: str, fs: fsspec.AbstractFileSystem) -> int:
    """A descriptor of the local file `path` of `fs`, opened as `open_file` opens it (the caller
    closes it)."""
    with open_file(path, fs) as opened:
        return os.dup(opened.fileno())


class PositionalFile:
    """`read` / `seek` over a descriptor by `os.pread`, so a descriptor whose file offset is shared
    (one inherited from the reader, which reads on through its own) keeps a position of its own."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pos = 0

    def fileno(self) -> int:
        return self._fd

    def seek(self, pos: int) -> int:
        self._pos = pos
        return pos

    def read(self, size: int) -> bytes:
        data = os.pread(self._fd, size, self._pos)
        self._pos += len(data)
        return data
