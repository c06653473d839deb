"""The memory budget of an ingest, and the files a `TraceBuilder` spills to once it is exceeded.

An ingest child runs its reader inside `use(IngestMemory(spill_dir, budget_bytes))`; every builder
made there without explicit arguments takes that budget. `spill_dir` is the cache's temporary entry
directory (`<cache>/tmp/<key>.<uuid>/`, removed when the ingest fails, never in the logdir): a
spilled builder writes the finished `.npy` columns there under their entry names, so the cache write
moves them into place instead of copying, and keeps its scratch files in `spill_dir/scratch/`.

Budget arithmetic (B = the builder's budget):
- the builder stays in memory while the peak of its in-memory path stays within B, predicted as
      P = PEAK_EVENT_BYTES * events + PEAK_ARGS_FACTOR * args bytes
          + PEAK_FLOW_BYTES * (flows + flow points) + PEAK_COUNTER_BYTES * counter samples + attachments
  (tracemalloc on the 3.2 M-event Kineto trace of `benchmarks/make_big_json.py`, 15 % flows: 171 B
  per event while the level-of-detail index is built next to the finished trace; the args bytes
  are held twice while `finalize()` joins them). Below that nothing changes;
- past it the builder spills: its buffers (36 B per event, the args bytes, 24 per flow, 41 per flow
  point, 20 per counter sample, the attachments) are appended to files, and later ones each time
  they reach B / FLUSH_DIVISOR, by a thread while the next fill (so at most 2 B / FLUSH_DIVISOR
  are held); `spill_finalize` then sorts from the files in pieces of about B.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import ctypes
import dataclasses
import errno
import functools
import io
import mmap
import os
import queue
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

PEAK_EVENT_BYTES = 175
PEAK_ARGS_FACTOR = 2
PEAK_FLOW_BYTES = 100
PEAK_COUNTER_BYTES = 60
FLUSH_DIVISOR = 8
SCRATCH_DIR = "scratch"
# One event in every SAMPLE_EVERY (by position) is kept in memory while spilling: the start times
# that split a track too big for the budget into pieces of about equal size.
SAMPLE_EVERY = 64
# Track ids are int32 in every record; references to tracks not made yet (`TraceBuilder.settle`)
# are checked against this until they are settled.
MAX_TRACKS = 1 << 31
# Bytes a buffered row costs (see the module doc).
EVENT_BYTES = 4 + 8 + 8 + 4 + 4 + 8
FLOW_BYTES = 24
POINT_BYTES = 41
COUNTER_BYTES = 20
# Python objects of one `add_flow` / `add_flow_point` call kept in a list (estimate), buffered
# and with what the in-memory path makes of them.
SINGLE_FLOW_BYTES = 100
SINGLE_POINT_BYTES = 200
SINGLE_PEAK_BYTES = 300
# Bulk flow ids are counted per block of this many ids (sizes the pieces of the flow chaining).
KID_BLOCK = 4096

EVENT_RECORD = np.dtype([("track", "<i4"), ("start", "<i8"), ("dur", "<i8"), ("name", "<i4"), ("cat", "<i4")])
FLOW_RECORD = np.dtype([("src", "<i8"), ("dst", "<i8"), ("name", "<i8")])
POINT_RECORD = np.dtype(
    [("kid", "<i8"), ("name", "<i8"), ("phase", "<i8"), ("track", "<i8"), ("ts", "<i8"), ("next", "u1")]
)
COUNTER_RECORD = np.dtype([("track", "<i4"), ("time", "<i8"), ("value", "<f8")])


@dataclasses.dataclass(frozen=True)
class IngestMemory:
    """Where an ingest may spill and how much memory its builder may use (bytes)."""

    spill_dir: str
    budget_bytes: int
    # What the reader may hold for its own buffers besides (readers that stream size chunks by it).
    reader_bytes: int = 0


class SpillWriteError(Exception):
    """A spill file could not be written (the cache directory is full or unwritable). Not the
    source's fault, and no OSError, so that readers which turn OSErrors into "unreadable file"
    let it through."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


_CURRENT: contextvars.ContextVar[IngestMemory | None] = contextvars.ContextVar(
    "profscope_ingest_memory", default=None
)


@contextlib.contextmanager
def use(config: IngestMemory | None) -> Iterator[None]:
    """Builders made inside the block (in this thread) take `config` as their budget."""
    token = _CURRENT.set(config)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> IngestMemory | None:
    """The budget in force (`use`), or None outside an ingest."""
    return _CURRENT.get()


# What a reader's error says when a file holds more per-key state than the ingest's budget.
RAISE_BUDGET_HINT = "raise --profscope_ingest_memory_mb (`profscope ingest --memory-mb`) to open it"


def track_bytes() -> int | None:
    """What an ingest's budget holds of the state readers keep per distinct key and cannot spill
    (threads, XPlane lines, async ids while numbered, names): the reader's share, since the
    builder's fills with event columns before they spill (both full at once stay within the
    child's budget); a budget given without a reader share counts whole. None outside an ingest."""
    config = current()
    if config is None:
        return None
    return config.reader_bytes or config.budget_bytes


def remove_scratch(out_dir: str) -> None:
    """Remove what spilled builders left in `out_dir` besides the entry's files."""
    for name in os.listdir(out_dir):
        if name.startswith(SCRATCH_DIR):
            shutil.rmtree(os.path.join(out_dir, name), ignore_errors=True)


def is_spilled(trace: Any) -> bool:
    """Whether `trace` came from a spilled builder (its columns are files of a temporary entry)."""
    return isinstance(trace.ev_start_ps, np.memmap)


# -- files ---------------------------------------------------------------------------------------
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


_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
_PAGE_BYTES = mmap.PAGESIZE


@functools.cache
def libc_call(name: str, *argtypes: Any) -> Any:
    """A function of the C library (None where there is none of that name: not Linux / glibc)."""
    try:
        call = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError, TypeError):  # no C library of that name (Windows: no CDLL(None))
        return None
    call.argtypes = list(argtypes)
    return call


# The heap policy of ingest processes (`ingest_memory.heap_for_ingest` sets it in an ingest, a
# reader's helper process starts with it): malloc's mmap threshold and its trim threshold.
INGEST_MMAP_BYTES = 32 << 20
INGEST_TRIM_BYTES = 64 << 20


def trim_heap() -> None:
    """Hand the heap's free pages back to the system (glibc's `malloc_trim`; nothing without
    glibc). Ingests keep freed memory for reuse (`ingest_memory.heap_for_ingest`, which trims when
    it ends); the spilled finalize trims first too, since what the reading freed lies in pieces
    among what lives on, which the finalize's larger arrays cannot reuse: they would grow the
    heap past it."""
    call = libc_call("malloc_trim", ctypes.c_size_t)
    if call is not None:
        call(0)


def release_range(fd: int, at: int, size: int) -> bool:
    """Give the whole pages of bytes [at, at + size) of a temporary file back to the system at
    once (`fallocate` punching a hole; the file keeps its size), for bytes read for the last time.

    Pages freed while the reader goes on writing are the ones its next writes get: on the 2-core
    VM, whose host takes back memory left free for about 2 s, writing onto pages freed just before
    took 0.1 s per 512 MB against about 1 s onto pages not touched recently. False where the file
    system or the platform cannot (the pages are then freed when the file is closed)."""
    lo, hi = -(-at // _PAGE_BYTES) * _PAGE_BYTES, (at + size) // _PAGE_BYTES * _PAGE_BYTES
    if hi <= lo:
        return True
    call = libc_call("fallocate", ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
    return call is not None and call(fd, _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE, lo, hi - lo) == 0


class _Releaser:
    """`release_range` on a thread of its own, for `release_later`: punching a hole waits for
    the writeback of any of its pages the kernel has begun writing to disk (a temporary file's
    pages too, once the ingest's writes pass the system's dirty threshold), which readers need
    not wait for. On the 2-core VM, the 10 GB Kineto trace's assembly spent 4.1 s in 3,781 calls
    of which 0.6 s on the CPU. Each range is queued with a duplicate of its descriptor, closed
    once the hole is punched, so closing the file meanwhile is safe; at most _MAX_QUEUED wait."""

    _MAX_QUEUED = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[int, int, int]] | None = None
        self._pid = 0

    def put(self, fd: int, at: int, size: int) -> None:
        with self._lock:
            if self._queue is None or self._pid != os.getpid():  # none yet, or a forked child's
                self._queue = queue.Queue(self._MAX_QUEUED)
                self._pid = os.getpid()
                threading.Thread(
                    target=self._run, args=(self._queue,), name="profscope-release", daemon=True
                ).start()
            pending = self._queue
        pending.put((os.dup(fd), at, size))

    def wait(self) -> None:
        with self._lock:
            pending = self._queue if self._pid == os.getpid() else None
        if pending is not None:
            pending.join()

    @staticmethod
    def _run(pending: queue.Queue[tuple[int, int, int]]) -> None:
        while True:
            fd, at, size = pending.get()
            try:
                # Never fails the reader: unreleased pages go back when the file is closed.
                with contextlib.suppress(Exception):
                    release_range(fd, at, size)
            finally:
                os.close(fd)
                pending.task_done()


_RELEASER = _Releaser()


def release_later(fd: int, at: int, size: int) -> None:
    """`release_range`, done by a thread while the caller goes on (`_Releaser`)."""
    _RELEASER.put(fd, at, size)


def wait_released() -> None:
    """Wait until every range given to `release_later` in this process is released."""
    _RELEASER.wait()


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


# Inputs at least this big are dropped from the page cache behind their reader, every this many
# bytes (`DropBehind`).
DROP_BEHIND_MIN_BYTES = 256 << 20
DROP_BEHIND_STEP_BYTES = 64 << 20


class DropBehind:
    """The page cache's copy of an input read once, handed back to the system as its reader moves
    on (`posix_fadvise(POSIX_FADV_DONTNEED)` on what was read, as `dd iflag=nocache` does; the file
    is not touched). Without it a 10 GB trace would fill the page cache and the ingest's own writes
    would get their pages by reclaim: on the 2-core VM, reading 10 GB while writing 9 GB took 14.2 s
    of system time with the input kept cached, 7.9 s with it dropped behind. Nothing for inputs under
    DROP_BEHIND_MIN_BYTES, files with no descriptor (remote ones) or platforms without fadvise."""

    def __init__(self, fileobj: Any, start: int = 0) -> None:
        self._fd = -1
        self._done = start
        try:
            fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
            if hasattr(os, "posix_fadvise") and os.fstat(fd).st_size >= DROP_BEHIND_MIN_BYTES:
                self._fd = fd
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            pass

    def read_to(self, pos: int) -> None:
        """Bytes before `pos` are read for the last time."""
        if self._fd >= 0 and pos - self._done >= DROP_BEHIND_STEP_BYTES:
            with contextlib.suppress(OSError):
                os.posix_fadvise(self._fd, self._done, pos - self._done, os.POSIX_FADV_DONTNEED)
            self._done = pos


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


class FileAttachments(Mapping[str, bytes]):
    """`Trace.attachments` of a spilled builder: each read from its scratch file when looked up."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(files)

    def __getitem__(self, name: str) -> bytes:
        with open(self._files[name], "rb") as f:
            return f.read()

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)
