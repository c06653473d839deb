"""Decoded columns of a Chrome trace parked in a temporary file until the whole file is known.

Some of what an event becomes depends on the whole file: the time zero (the earliest time of the
bulk of the trace), the tracks and their order (names, sort indices and whether a process is a
device come from metadata and from what runs anywhere in the file). So each decoding process
writes its columns, chunk by chunk as it decodes, to an unnamed temporary file (`SpillFile`), and
keeps in memory only what is needed to resolve those facts; the reader then reads the chunks back
one at a time and hands them to the builder. Memory follows the chunk size, not the file size.

A chunk is a few tables (events, B/E halves, …) of named columns; `ChunkRef` says where each
column is in the file, how many rows each table has, and the time bounds of each table, from which
the time zero is found without reading the chunks that lie wholly inside the bulk of the trace.
Where no temporary file can be made, the chunks stay in memory (`SpillFile(memory=True)`). Inside an
ingest the files go to its temporary entry directory and chunks are sized by the reader's share of
its memory budget (`spill_budget.current()`, see `budget`); a file that cannot be written or read back
raises `spill_budget.SpillWriteError` (the machine's fault, not the trace's).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from typing import Any

import numpy as np

from profscope.model.spill import budget as spill_budget
from profscope.model.spill import files as spill_files
from profscope.model.spill import page_cache as spill_pages

_log = logging.getLogger(__name__)
# A decoding process writes what it gathered as one chunk once it holds about this much (the
# columns of ~200 k Kineto events).
CHUNK_BYTES = 32 << 20
# Inside an ingest, chunks hold at most this share of the reader's budget (main and helper both
# hold one while the next is gathered, plus their read-ahead blocks and decoded windows).
CHUNK_SHARE = 16
MIN_CHUNK_BYTES = 1 << 20
# An in-memory sort takes at most this share of the reader's budget inside an ingest (`sort_bytes`).
SORT_SHARE = 4
SORT_BYTES = 1 << 30
# What an ingest keeps per distinct track key at its peak (the decode's key, the builder's track, its
# label, the nesting's arrays): 0.7 KB measured at a million threads (`benchmarks/README.md`).
TRACK_KEY_BYTES = 768
# However small the budget, this many keys are let through (a 1 MB budget still opens real traces).
MIN_TRACK_KEYS = 4096
# What reading keeps per distinct event name or category besides twice its length (the collector's
# and the builder's dict entries, the strings, the name list): 212 bytes per 12-character name
# measured over 2 M distinct names (`benchmarks/README.md`).
NAME_BYTES = 188
# Names let through on top of a budget the tracks fill (a few thousand: what real traces hold).
MIN_NAME_BYTES = 1 << 20
# What numbering the async ids holds per distinct id of a chunk, besides twice its id text's width
# (`async_keys.AsyncKeys`): tracemalloc's peak over 3 M ids was 80, 90 and 103 bytes per id
# for 7-, 12- and 18-character ids (`benchmarks/README.md`).
ASYNC_ID_BYTES = 68
# A column as written: an array, or byte strings that are written one after another (args texts).
Column = np.ndarray | list[bytes]
# Time bounds of one table of a chunk: (lowest µs, lowest ps remainder at it, highest µs, highest
# ps remainder at it).
Bounds = tuple[int, int, int, int]


class ChunkRef:
    """Where the columns of one chunk are: `columns[table][column]` = (offset, dtype, count)."""

    __slots__ = ("columns", "rows", "base", "bounds")

    def __init__(self) -> None:
        self.columns: dict[str, dict[str, tuple[int, str, int]]] = {}
        self.rows: dict[str, int] = {}
        self.base: dict[str, int] = {}  # index of the table's first row in its part
        self.bounds: dict[str, Bounds] = {}

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.columns, self.rows, self.base, self.bounds)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.columns, self.rows, self.base, self.bounds = state


def time_bounds(us: np.ndarray, frac: np.ndarray) -> Bounds:
    """Lowest and highest (µs, ps remainder) of a non-empty table."""
    low, high = int(us.min()), int(us.max())
    return low, int(frac[us == low].min()), high, int(frac[us == high].max())


def budget() -> tuple[int, str | None]:
    """(chunk bytes, directory of the temporary files): inside an ingest, a share of the reader's
    budget and the ingest's temporary entry; elsewhere CHUNK_BYTES and the system's default."""
    config = spill_budget.current()
    if config is None:
        return CHUNK_BYTES, None
    chunk = CHUNK_BYTES
    if config.reader_bytes:
        chunk = max(MIN_CHUNK_BYTES, min(CHUNK_BYTES, config.reader_bytes // CHUNK_SHARE))
    return chunk, config.spill_dir


def track_key_limit() -> int | None:
    """How many tracks (threads, counter series, processes, async ids with a track of their own)
    an ingest's budget holds at `TRACK_KEY_BYTES` each; None outside an ingest (no budget to keep)."""
    room = spill_budget.track_bytes()
    return None if room is None else max(room // TRACK_KEY_BYTES, MIN_TRACK_KEYS)


class TooManyTracks(Exception):
    """The file holds more tracks than the ingest's budget holds: what an ingest keeps per track
    is not spilled, so the read stops instead of passing it. Subclasses say what else ran out."""

    def __init__(self, count: int, limit: int) -> None:
        self.count, self.limit = count, limit
        super().__init__(self.describe())

    def describe(self) -> str:
        return (
            f"more than {self.limit:,} tracks (distinct threads, counter series and async ids with "
            f"nested events; {self.count:,} when the read stopped): an ingest keeps about "
            f"{TRACK_KEY_BYTES} bytes for each, beyond its memory budget; {spill_budget.RAISE_BUDGET_HINT}"
        )

    def __reduce__(self) -> tuple[type[TooManyTracks], tuple[int, int]]:
        return (type(self), (self.count, self.limit))  # a helper process sends it to its parent


class TooManyNames(TooManyTracks):
    """More distinct event names and categories than what the budget leaves after the tracks
    holds (`limit` in bytes): names are kept per distinct text, not spilled."""

    def describe(self) -> str:
        return (
            f"more distinct event names and categories than about {self.limit:,} bytes hold "
            f"({self.count:,} when the read stopped): reading keeps about {NAME_BYTES} bytes plus "
            "twice the text's length for each, beyond what the ingest's memory budget leaves after "
            f"the tracks; {spill_budget.RAISE_BUDGET_HINT}"
        )


def check_names(tracks: int, names: int, text_bytes: int, track_limit: int, share: int = 1) -> None:
    """`TooManyNames` if `names` distinct texts of `text_bytes` in all pass what `track_limit`
    tracks' worth of budget leaves after `tracks` (and `MIN_NAME_BYTES`), divided by `share` (a
    process reading while another holds names of its own)."""
    room = ((track_limit - tracks) * TRACK_KEY_BYTES + MIN_NAME_BYTES) // share
    if names * NAME_BYTES + 2 * text_bytes > room:
        raise TooManyNames(names, max(room, 0))


class TooManyAsyncIds(TooManyTracks):
    """More async ids than what the budget leaves after the tracks holds while they are numbered:
    ids of one slice each get no track, but numbering them keeps ~80 bytes per id."""

    def describe(self) -> str:
        return (
            f"more than about {self.limit:,} distinct async ids ({self.count:,}, counted chunk by "
            f"chunk, when the read stopped): numbering them keeps about {ASYNC_ID_BYTES} bytes plus "
            "twice the id's length for each, beyond what the ingest's memory budget leaves after the "
            f"tracks; {spill_budget.RAISE_BUDGET_HINT}"
        )


def sort_bytes() -> int:
    """Work an in-memory sort of a reader's rows may take (the halves of B/E or async events out
    of time order); more is sorted in pieces through a temporary file. Inside an ingest a share
    of the reader's budget, elsewhere SORT_BYTES."""
    config = spill_budget.current()
    if config is None or not config.reader_bytes:
        return SORT_BYTES
    return max(MIN_CHUNK_BYTES, config.reader_bytes // SORT_SHARE)


class SpillFile:
    """An unnamed temporary file that chunks are appended to and read back from.

    `fd` writes into a file another process created (the helper writes where its parent reads);
    without it a new file is made in `directory` (default: the system's temporary directory),
    nameless where the OS allows (`tempfile.TemporaryFile`), so nothing is left behind whatever
    happens to the process. With `behind_bytes`, appends are written by a thread of their own
    (`spill_files.WriteBehind`, that many bytes waiting at most): the arrays given to `write` are not
    changed afterwards by their owner. Reads are positional (`pread`): a thread may read one chunk
    while its owner works on another (`parts.prefetched`).
    """

    def __init__(
        self,
        fd: int | None = None,
        memory: bool = False,
        directory: str | None = None,
        behind_bytes: int = 0,
    ) -> None:
        self._arrays: dict[int, np.ndarray] | None = {} if memory else None
        self._file: Any = None
        self._where = directory or tempfile.gettempdir()
        if not memory:
            if fd is None:
                self._file = tempfile.TemporaryFile(buffering=0, dir=directory)  # noqa: SIM115 - closed by close()
            else:
                self._file = os.fdopen(fd, "r+b", buffering=0)
        self._behind = spill_files.WriteBehind(behind_bytes) if behind_bytes and not memory else None
        self._end = 0
        self._released: set[int] = set()  # offsets of the columns given back (`release`, `lend`)
        self._lent: set[int] = set()  # offsets of the columns lent (`lend`), released by the borrower

    @classmethod
    def create(cls, directory: str | None = None, behind_bytes: int = 0) -> SpillFile:
        """A new temporary file, or chunks kept in memory where none can be made."""
        try:
            return cls(directory=directory, behind_bytes=behind_bytes)
        except OSError:
            _log.warning(
                "no temporary file in %s: the reader keeps its columns in memory", directory, exc_info=True
            )
            return cls(memory=True)

    def fileno(self) -> int:
        return self._file.fileno()

    def write(self, tables: dict[str, dict[str, Column]], ref: ChunkRef) -> ChunkRef:
        """Append the columns of `tables` and note where they went in `ref`."""
        for table, columns in tables.items():
            placed = ref.columns.setdefault(table, {})
            for name, column in columns.items():
                placed[name] = self._put(column)
        return ref

    def write_by_bucket(
        self, table: str, columns: dict[str, np.ndarray], bucket: np.ndarray, refs: list[list[ChunkRef]]
    ) -> None:
        """Append the rows of each bucket (`bucket`: each row's, below len(refs)) as a chunk of
        their own, in their order, noted in `refs[bucket]`."""
        order = np.argsort(bucket, kind="stable")  # a radix sort for bucket numbers in bytes
        bounds = np.searchsorted(bucket[order], np.arange(len(refs) + 1)).tolist()
        for k, placed in enumerate(refs):
            sel = order[bounds[k] : bounds[k + 1]]
            if sel.shape[0]:
                ref = ChunkRef()
                ref.rows[table] = sel.shape[0]
                self.write({table: {name: v[sel] for name, v in columns.items()}}, ref)
                placed.append(ref)

    def _put(self, column: Column) -> tuple[int, str, int]:
        at = self._end
        if isinstance(column, list):
            pieces: list[Any] = list(column)  # the caller empties its list once written
            dtype, count = "u1", sum(map(len, column))
        else:
            column = np.ascontiguousarray(column)
            pieces = [column.reshape(-1).view(np.uint8)] if column.shape[0] else []
            dtype, count = column.dtype.str, column.shape[0]
        if self._arrays is not None:
            data = b"".join(pieces) if isinstance(column, list) else column
            self._arrays[at] = data if isinstance(data, np.ndarray) else np.frombuffer(data, np.uint8)
            self._end += 1
            return at, dtype, count
        try:
            if self._behind is not None:
                self._behind.put(self._file.fileno(), at, pieces)
            else:
                spill_files.write_pieces(self._file.fileno(), at, pieces)
        except OSError as exc:
            raise self._write_error(exc) from exc
        self._end += sum(memoryview(p).nbytes for p in pieces)
        return at, dtype, count

    def _written(self, end: int) -> None:
        """Wait until the bytes below `end` are in the file (written behind)."""
        if self._behind is None:
            return
        try:
            self._behind.wait_below(end)
        except OSError as exc:
            raise self._write_error(exc) from exc

    def _write_error(self, exc: OSError) -> spill_budget.SpillWriteError:
        return spill_budget.SpillWriteError(
            OSError(exc.errno, f"writing the reader's temporary columns in {self._where}: {exc.strerror}")
        )

    def read(self, ref: ChunkRef, table: str, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Columns `names` of one table of a chunk, as fresh arrays."""
        placed = ref.columns[table]
        return {name: self._get(*placed[name]) for name in names}

    def read_bytes(self, ref: ChunkRef, table: str, name: str) -> bytes:
        """One column as bytes (args texts: the builder keeps bytes as they are, arrays it copies)."""
        at, dtype, count = ref.columns[table][name]
        self._check_kept(at, count)
        if self._arrays is not None:
            return self._arrays[at].tobytes()
        size = count * np.dtype(dtype).itemsize
        self._written(at + size)
        try:
            data = os.pread(self._file.fileno(), size, at)
            while len(data) < size:  # a short read (over 2 GB at once): read on
                more = os.pread(self._file.fileno(), size - len(data), at + len(data))
                if not more:
                    raise OSError(f"the reader's temporary file in {self._where} ended early")
                data += more
        except OSError as exc:
            raise spill_budget.SpillWriteError(exc) from exc
        return data

    def lend(self, ref: ChunkRef, table: str, name: str) -> spill_files.FileRange | bytes:
        """One column read for the last time, as its range of the file (`spill_files.FileRange`: the
        builder copies args texts file to file), or as bytes where chunks are kept in memory.
        `release` of its table leaves it to the range."""
        at, dtype, count = ref.columns[table][name]
        if self._arrays is not None or not count:
            return self.read_bytes(ref, table, name)
        self._check_kept(at, count)
        size = count * np.dtype(dtype).itemsize
        self._written(at + size)
        self._released.add(at)
        self._lent.add(at)
        return spill_files.FileRange(self._file.fileno(), at, size)

    def _get(self, at: int, dtype: str, count: int) -> np.ndarray:
        self._check_kept(at, count)
        kind = np.dtype(dtype)
        if self._arrays is not None:
            return self._arrays[at]
        out = np.empty(count * kind.itemsize, np.uint8)
        self._written(at + out.shape[0])
        try:
            view = memoryview(out)
            while view.nbytes:
                n = os.preadv(self._file.fileno(), [view], at)
                if not n:
                    raise OSError(f"the reader's temporary file in {self._where} ended early")
                view, at = view[n:], at + n
        except OSError as exc:
            raise spill_budget.SpillWriteError(exc) from exc
        return out.view(kind)

    def release(self, ref: ChunkRef, table: str) -> None:
        """The columns of one table of a chunk are read for the last time: their pages go back to
        the system now (`spill_pages.release_later`), not when the file is closed, so that the writes
        of the assembly that reads them land on those pages. Reading them again is an error."""
        ranges = []
        for at, dtype, count in ref.columns[table].values():
            if count and at not in self._lent:  # an empty column takes no bytes
                self._check_kept(at, count)
                self._released.add(at)
                ranges.append((at, at + count * np.dtype(dtype).itemsize))
        if self._arrays is not None:
            for at, _ in ranges:
                self._arrays.pop(at, None)
            return
        ranges.sort()
        merged = [list(ranges[0])] if ranges else []
        for lo, hi in ranges[1:]:  # columns written one after another make one range
            if lo == merged[-1][1]:
                merged[-1][1] = hi
            else:
                merged.append([lo, hi])
        for lo, hi in merged:
            self._written(hi)
            spill_pages.release_later(self._file.fileno(), lo, hi - lo)

    def _check_kept(self, at: int, count: int) -> None:
        if count and at in self._released:
            raise RuntimeError("a column of the reader's temporary file was read after it was released")

    def close(self) -> None:
        if self._behind is not None:
            with contextlib.suppress(OSError):  # closing after a failed write
                self._behind.drain()
            self._behind = None
        if self._file is not None:
            self._file.close()
            self._file = None
        self._arrays = None if self._arrays is None else {}
