"""An XPlane file's bytes, read window by window so the reader never holds the whole file.

A local file is opened through its `fs` (`common.opening`: a FIFO or a link swapped in is refused
there, never read by name) and read in place with `os.preadv` into padded numpy buffers (page-cache
pages are not the reader's memory, as they would be if the file were memory-mapped and walked); any other
fsspec file is first copied, in chunks, into the scratch directory. `fields` walks the fields of
one message (the XSpace, an XPlane) across windows, reloading when a field's header crosses the
end of the current one, so a plane is stepped through without reading its lines.
"""

from __future__ import annotations

import abc
import dataclasses
import os
from collections.abc import Callable, Iterator
from typing import BinaryIO

import fsspec
import numpy as np
from fsspec.implementations.local import LocalFileSystem

from profscope.errors import UnreadableProfile, describe_error
from profscope.formats.common import opening, wire
from profscope.model.spill import budget as spill_budget
from profscope.model.spill import page_cache as spill_pages

FIELD_WINDOW = 1 << 12  # bytes first read while walking the fields of a space or plane
_MAX_FIELD_WINDOW = 1 << 20
_COPY_CHUNK = 1 << 22
_RUN_GAP = 64  # metadata ranges closer than this are read as one run


@dataclasses.dataclass
class Window:
    """File bytes base … base + len(view), padded for `common.wire.scan` (`buf`)."""

    base: int
    buf: np.ndarray  # uint8: the bytes, then wire.PADDING zeros
    view: memoryview  # the bytes only: indexing past them raises IndexError
    whole: bool  # the window reaches the end of the file


class _Bytes(abc.ABC):
    """Window, read and gather over `_read_into`, which subclasses provide."""

    size: int

    def window(self, start: int, size: int) -> Window:
        """The bytes from `start` on: `size` of them, fewer at the end of the file."""
        n = max(0, min(size, self.size - start))
        buf = np.empty(n + wire.PADDING, dtype=np.uint8)
        buf[n:] = 0
        self._read_into(memoryview(buf)[:n], start)
        return Window(start, buf, memoryview(buf)[:n], start + n >= self.size)

    def read(self, start: int, end: int) -> bytes:
        return bytes(self.window(start, end - start).view)

    def gather(self, ranges: list[tuple[int, int]]) -> tuple[np.ndarray, bytes, np.ndarray]:
        """(padded buffer, its bytes, shift) holding the given file ranges: range i is at
        buf[start_i - shift_i : end_i - shift_i]. Ranges in file order close to each other are
        read as one run, so many small metadata entries cost a few reads."""
        arr = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
        if not arr.shape[0]:
            return np.zeros(wire.PADDING, np.uint8), b"", np.zeros(0, np.int64)
        order = np.argsort(arr[:, 0], kind="stable")
        lo, hi = arr[order, 0], np.maximum.accumulate(arr[order, 1])
        new_run = np.ones(lo.shape[0], dtype=bool)
        new_run[1:] = lo[1:] > hi[:-1] + _RUN_GAP
        run = np.cumsum(new_run) - 1
        first = np.flatnonzero(new_run)
        run_lo = lo[first]
        run_hi = np.maximum.reduceat(hi, first)
        sizes = run_hi - run_lo
        at = np.concatenate(([0], np.cumsum(sizes)))
        total = int(at[-1])
        buf = np.zeros(total + wire.PADDING, dtype=np.uint8)
        view = memoryview(buf)
        for r in range(first.shape[0]):
            self._read_into(view[int(at[r]) : int(at[r + 1])], int(run_lo[r]))
        shift = np.empty(arr.shape[0], dtype=np.int64)
        shift[order] = run_lo[run] - at[:-1][run]
        return buf, bytes(view[:total]), shift

    @abc.abstractmethod
    def _read_into(self, target: memoryview, offset: int) -> None:
        """Fill `target` with the file's bytes from `offset` on."""


class BytesSource(_Bytes):
    """The same access to bytes already in memory (tests, `decode.decode_space`)."""

    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)
        self.size = len(data)

    def _read_into(self, target: memoryview, offset: int) -> None:
        target[:] = self._data[offset : offset + target.nbytes]


class FileBytes(_Bytes):
    """Random access to an open file's bytes (`os.preadv`); its page-cache copy is dropped
    behind the walk over the lines (`read_to`). The helper process reads the reader's file so."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.size = os.fstat(fd).st_size
        self._drop = spill_pages.DropBehind(fd)

    def fileno(self) -> int:
        return self._fd

    def read_to(self, pos: int) -> None:
        """The bytes before `pos` are read (the pass over the lines has gone past them): their
        page-cache copy goes (`spill_pages.DropBehind`); reading them again reads the disk."""
        self._drop.read_to(pos)

    def _read_into(self, target: memoryview, offset: int) -> None:
        while target.nbytes:
            got = os.preadv(self._fd, [target], offset)
            if got <= 0:
                target[:] = b"\0" * target.nbytes
                return
            target = target[got:]
            offset += got


class Source(FileBytes):
    """Random access to one file's bytes; `close` releases it (and removes a scratch copy)."""

    def __init__(
        self,
        path: str,
        fs: fsspec.AbstractFileSystem,
        scratch_dir: Callable[[], str],
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self._copy: str | None = None
        if isinstance(fs, LocalFileSystem):
            try:  # through `fs`, whose checks apply: never the file by name again
                fd = opening.open_descriptor(path, fs)
            except OSError as e:
                raise UnreadableProfile(path, describe_error(e)) from e
        else:
            self._copy = os.path.join(scratch_dir(), "source.xplane.pb")
            with fs.open(path, "rb") as src, _scratch_file(self._copy) as dst:
                total = getattr(src, "size", None) or 0
                done = 0
                while chunk := src.read(_COPY_CHUNK):
                    try:
                        dst.write(chunk)
                    except OSError as e:
                        raise spill_budget.SpillWriteError(e) from e
                    done += len(chunk)
                    if progress is not None:
                        progress(done // 2, max(total, done))
            fd = os.open(self._copy, os.O_RDONLY)
        super().__init__(fd)
        self.copied = self._copy is not None

    def close(self) -> None:
        os.close(self._fd)
        if self._copy is not None:
            os.unlink(self._copy)


def _scratch_file(path: str) -> BinaryIO:
    try:
        return open(path, "wb")
    except OSError as e:
        raise spill_budget.SpillWriteError(e) from e


def fields(source: _Bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """`common.wire.iter_fields` over the file's bytes start … end, with file positions
    (a VARINT field's `a` is its value); raises what iter_fields raises, positions in the file."""
    pos = start
    size = FIELD_WINDOW
    while True:
        win = source.window(pos, size)
        base = win.base
        try:
            for number, wtype, a, b in wire.iter_fields(win.view, pos - base, end - base):
                yield number, wtype, (a if wtype == wire.VARINT else a + base), b + base
                pos = b + base
            return
        except IndexError:
            # A field header lies past the window: read on from that field, with a small window
            # after a jump over a long field (a line), a growing one through runs of small fields
            # (metadata entries) or when not even the header fit.
            streaming = pos <= base + len(win.view)
            size = min(size * 2, _MAX_FIELD_WINDOW) if streaming else FIELD_WINDOW
            if pos == base:
                size = size * 2
        except wire.TruncatedField as exc:
            exc.payload += base
            raise
