"""The files a spilled builder writes: fixed-size record files and `.npy` columns written by
positional I/O (threads may share one), bytes lent file to file (`FileRange`), and writes done by a
thread while their writer goes on (`WriteBehind`). Record layouts: `EVENT_RECORD` and its siblings.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import io
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from profscope.model.spill.page_cache import release_later

EVENT_RECORD = np.dtype([("track", "<i4"), ("start", "<i8"), ("dur", "<i8"), ("name", "<i4"), ("cat", "<i4")])
FLOW_RECORD = np.dtype([("src", "<i8"), ("dst", "<i8"), ("name", "<i8")])
POINT_RECORD = np.dtype(
    [("kid", "<i8"), ("name", "<i8"), ("phase", "<i8"), ("track", "<i8"), ("ts", "<i8"), ("next", "u1")]
)
COUNTER_RECORD = np.dtype([("track", "<i4"), ("time", "<i8"), ("value", "<f8")])


def npy_header(dtype: np.dtype, count: int) -> bytes:
    """The `.npy` header `np.save` writes for a 1-d array of `count` items of `dtype`."""
    out = io.BytesIO()
    header = {
        "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
        "fortran_order": False,
        "shape": (count,),
    }
    np.lib.format.write_array_header_1_0(out, header)
    return out.getvalue()


def _read_exact(f: Any, offset: int, out: np.ndarray) -> np.ndarray:
    """Fill `out` from `f` at `offset` (positional reads: threads may share a file)."""
    view = memoryview(out.reshape(-1).view(np.uint8))
    fd = f.fileno()
    while view.nbytes:
        got = os.preadv(fd, [view], offset)
        if not got:
            raise OSError(f"{getattr(f, 'name', 'file')}: ends before {offset + view.nbytes} bytes")
        view, offset = view[got:], offset + got
    return out


def _write_all(f: Any, offset: int, values: np.ndarray) -> None:
    pwrite_all(f.fileno(), np.ascontiguousarray(values).reshape(-1).view(np.uint8), offset)


def pwrite_all(fd: int, piece: Any, at: int) -> None:
    """Write all of `piece` (a buffer) at offset `at` of `fd`."""
    view = memoryview(piece).cast("B")
    while view.nbytes:
        done = os.pwrite(fd, view, at)
        view, at = view[done:], at + done


# Bytes copied at a time where the kernel cannot copy between the files itself (`FileRange`).
COPY_PIECE_BYTES = 8 << 20


class FileRange:
    """Bytes [at, at + size) of a temporary file, lent to whoever writes them elsewhere: copied
    file to file by the kernel (`copy_file_range`) instead of read into memory and written out.
    On the 2-core VM, moving 4 GB of a cached file into another took 1.2–1.4 s of system time that
    way, against 4.4–14 s through `pread`/`write`. The range holds a duplicate of the file's
    descriptor, so the lender may close its own; once the bytes are out (`copy_to`, `take`) the
    range is released (`release_later`) and the duplicate closed."""

    def __init__(self, fd: int, at: int, size: int) -> None:
        self.at, self.size = at, size
        self._fd = os.dup(fd)

    def copy_to(self, fd: int, at: int) -> None:
        """Write the bytes at offset `at` of `fd`, then release the range."""
        done = 0
        if hasattr(os, "copy_file_range"):
            try:
                while done < self.size:
                    moved = os.copy_file_range(self._fd, fd, self.size - done, self.at + done, at + done)
                    if not moved:
                        raise OSError(f"a temporary file ends before {self.at + self.size} bytes")
                    done += moved
            except OSError as e:
                if e.errno not in _NO_KERNEL_COPY:
                    raise
        while done < self.size:  # another file system, or a platform without the call
            piece = self._read(done, COPY_PIECE_BYTES)
            pwrite_all(fd, piece, at + done)
            done += len(piece)
        self.close()

    def take(self) -> bytes:
        """The bytes, read into memory; the range is released."""
        pieces = []
        done = 0
        while done < self.size:  # one read but for a short one
            pieces.append(self._read(done, self.size))
            done += len(pieces[-1])
        self.close()
        return b"".join(pieces)  # one piece: that piece itself

    def _read(self, done: int, most: int) -> bytes:
        """What one read gives of the range from `done` on, at most `most` bytes (never none)."""
        piece = os.pread(self._fd, min(most, self.size - done), self.at + done)
        if not piece:
            raise OSError(f"a temporary file ends before {self.at + self.size} bytes")
        return piece

    def close(self) -> None:
        """Release the range (read for the last time) and close the duplicate descriptor."""
        if self._fd < 0:
            return
        fd, self._fd = self._fd, -1
        try:
            release_later(fd, self.at, self.size)
        finally:
            os.close(fd)

    def __del__(self) -> None:  # a builder dropped with ranges it never wrote
        with contextlib.suppress(Exception):
            self.close()


# copy_file_range errors that mean "not between these files": copied through memory instead.
_NO_KERNEL_COPY = frozenset(
    {errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EPERM, errno.EBADF}
)


class WriteBehind:
    """Writes handed over in order, done by a thread while their writer goes on.

    Most of writing a scratch file is the kernel finding pages for it (about 2.5 s per GiB of
    memory not touched recently on the 2-core VM), which a step alone on its core (the Chrome
    reader's assembly, a partition pass) would otherwise wait through. At most `limit` bytes wait
    (`put` blocks beyond); the thread runs while there is something to write, so nothing needs
    closing. A write that fails stops the ones after it, and its error is raised by the next
    `put`, `wait_below` or `drain`. A target is a file descriptor, or a path opened for the write.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._queue: collections.deque[tuple[int | str, int, list[Any], int]] = collections.deque()
        self._waiting = 0  # bytes handed over, not yet written
        self._running = False
        self._error: BaseException | None = None
        self._changed = threading.Condition()

    def put(self, target: int | str, at: int, pieces: list[Any]) -> None:
        """Write `pieces` (buffers) one after another from offset `at` of `target`; they are not
        changed afterwards by their owner."""
        size = sum(memoryview(p).nbytes for p in pieces)
        with self._changed:
            while self._waiting and self._waiting + size > self._limit and self._error is None:
                self._changed.wait()
            self._raise()
            self._queue.append((target, at, pieces, size))
            self._waiting += size
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, name="profscope-write-behind", daemon=True).start()

    def wait_below(self, end: int) -> None:
        """Wait until every write starting below offset `end` is done (appends to one target,
        handed over in file order)."""
        with self._changed:
            while self._queue and self._queue[0][1] < end and self._error is None:
                self._changed.wait()
            self._raise()

    def drain(self) -> None:
        """Wait until everything handed over is written."""
        with self._changed:
            while self._queue and self._error is None:
                self._changed.wait()
            self._raise()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while True:
            with self._changed:
                if not self._queue:
                    self._running = False
                    return
                target, at, pieces, size = self._queue[0]
            if self._error is None:
                try:
                    write_pieces(target, at, pieces)
                except BaseException as exc:  # raised to the writer, never lost with the thread
                    self._error = exc
            del pieces  # given back with the queue's entry, as `drain` returns, not at the next turn
            with self._changed:
                self._queue.popleft()
                self._waiting -= size
                self._changed.notify_all()


def write_pieces(target: int | str, at: int, pieces: list[Any]) -> None:
    """Write `pieces` one after another from offset `at` of `target` (a descriptor, or a path)."""
    fd = target if isinstance(target, int) else os.open(target, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for piece in pieces:
            pwrite_all(fd, piece, at)
            at += memoryview(piece).nbytes
    finally:
        if not isinstance(target, int):
            os.close(fd)


class RecordFile:
    """An append-only file of fixed-size records (no header), read back by row ranges. Reads and
    `write_at` are positional, so threads may share one (appends may not)."""

    def __init__(self, path: str, dtype: np.dtype, header: int = 0) -> None:
        self.path = path
        self.dtype = np.dtype(dtype)
        self.header = header
        self.count = 0
        self._f = open(path, "w+b", buffering=0)  # noqa: SIM115 - closed by `close`
        self._fix: tuple[int, Callable[[np.ndarray], None]] | None = None

    def fix_below(self, rows: int, fix: Callable[[np.ndarray], None]) -> None:
        """Records below row `rows` are read through `fix` (which changes them in place): what
        they hold is settled after they were written, and the file is not written twice."""
        self._fix = (rows, fix)

    def append(self, values: np.ndarray) -> None:
        if values.shape[0]:
            _write_all(
                self._f, self.header + self.count * self.dtype.itemsize, values.astype(self.dtype, copy=False)
            )
            self.count += int(values.shape[0])

    def append_range(self, source: FileRange) -> None:
        """Append the bytes of `source` (whole records), copied file to file."""
        if source.size % self.dtype.itemsize:
            raise ValueError("a file range of part of a record")
        source.copy_to(self._f.fileno(), self.header + self.count * self.dtype.itemsize)
        self.count += source.size // self.dtype.itemsize

    def write_at(self, row: int, values: np.ndarray) -> None:
        _write_all(self._f, self.header + row * self.dtype.itemsize, values.astype(self.dtype, copy=False))

    def read(self, lo: int, hi: int) -> np.ndarray:
        out = _read_exact(
            self._f, self.header + lo * self.dtype.itemsize, np.empty(max(hi - lo, 0), self.dtype)
        )
        if self._fix is not None and lo < self._fix[0]:
            self._fix[1](out[: self._fix[0] - lo])
        return out

    def release(self, lo: int, hi: int) -> None:
        """Rows [lo, hi) are read for the last time: their pages go back now (`release_later`)."""
        size = self.dtype.itemsize
        release_later(self._f.fileno(), self.header + lo * size, (hi - lo) * size)

    def chunks(self, rows: int) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, records) of consecutive pieces of at most `rows` records."""
        for lo in range(0, self.count, max(rows, 1)):
            yield lo, self.read(lo, min(lo + rows, self.count))

    def close(self) -> None:
        self._f.close()

    def remove(self) -> None:
        self.close()
        with contextlib.suppress(OSError):
            os.remove(self.path)


class NpyColumn(RecordFile):
    """A 1-d `.npy` file: of `count` rows written at any offset, or (count None) appended to, its
    header rewritten with the final length by `close`. The bytes are those of `np.save`."""

    def __init__(self, path: str, dtype: np.dtype, count: int | None = None) -> None:
        header = npy_header(dtype, 0 if count is None else count)
        super().__init__(path, dtype, len(header))
        _write_all(self._f, 0, np.frombuffer(header, np.uint8))
        self._fixed = count is not None
        if count is not None:
            self.count = count
            self._f.truncate(len(header) + count * self.dtype.itemsize)

    def close(self) -> None:
        if self._f.closed:
            return
        if not self._fixed:
            header = npy_header(self.dtype, self.count)
            if len(header) != self.header:
                self._shift_data(header)
            else:
                _write_all(self._f, 0, np.frombuffer(header, np.uint8))
        super().close()

    def _shift_data(self, header: bytes) -> None:
        """Rewrite the file with a header of another length (numpy versions without growth padding)."""
        moved = self.path + ".moving"
        with open(moved, "wb") as out:
            out.write(header)
            for _, piece in self.chunks(1 << 20):
                out.write(piece.tobytes())
        self._f.close()
        os.replace(moved, self.path)
        self._f = open(self.path, "r+b", buffering=0)  # noqa: SIM115 - closed by `close`

    def mapped(self) -> np.ndarray:
        """The finished column, memory-mapped read-only (a plain empty array when it has no rows)."""
        self.close()
        if self.count == 0:
            return np.zeros(0, self.dtype)
        return np.memmap(self.path, dtype=self.dtype, mode="r", offset=self.header, shape=(self.count,))


class ColumnReader:
    """Row ranges of a column: read through the file of a memory-mapped one (no mapped page stays
    resident), sliced from an in-memory one."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.count = int(array.shape[0])
        self._f = None
        if isinstance(array, np.memmap) and array.filename is not None:
            self._f = open(array.filename, "rb", buffering=0)  # noqa: SIM115 - closed by `close`
            self._offset = int(array.offset)

    def read(self, lo: int, hi: int) -> np.ndarray:
        hi = min(hi, self.count)
        if self._f is None:
            return np.array(self.array[lo:hi])
        return _read_exact(
            self._f,
            self._offset + lo * self.array.dtype.itemsize,
            np.empty(max(hi - lo, 0), self.array.dtype),
        )

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
