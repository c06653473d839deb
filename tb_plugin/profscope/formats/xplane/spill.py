"""Scratch space of one XPlane read: partitioned record tables.

Records linked across the whole file (events of one flow id, launches and kernels of one
correlation id) go to a `Partitioned` table: each row to one of `PARTS` partitions chosen by the
caller so that rows that must meet share one. The table stays in memory while small and is then
processed as a single group; past its budget every partition goes to its own scratch file and
the partitions are processed one at a time. Callers make their results independent of that
grouping (they link within a key and sort what they produce).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from profscope.model import arrays
from profscope.model.spill import budget as spill_budget

PARTS = 32


class Scratch:
    """A private directory under `parent` (the system's temporary directory when None), made on
    first use and removed by `close`."""

    def __init__(self, parent: str | None) -> None:
        self._parent = parent
        self._dir: str | None = None

    def dir(self) -> str:
        if self._dir is None:
            try:
                self._dir = tempfile.mkdtemp(prefix="profscope-xplane-", dir=self._parent)
            except OSError as e:
                raise spill_budget.SpillWriteError(e) from e
        return self._dir

    def open(self, name: str) -> BinaryIO:
        try:
            return open(os.path.join(self.dir(), name), "w+b")
        except OSError as e:
            raise spill_budget.SpillWriteError(e) from e

    def close(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


# The dtypes recorded arrays have; a record is [count, (dtype, length) per array] as int64, then
# each array's bytes (np.save would cost a parsed header per array).
_DTYPES = tuple(np.dtype(t) for t in ("<i8", "<i4", "<u8", "<f8", "|u1", "|b1", "|i1", "<i2", "<u4"))


def _write(f: BinaryIO, arrays: tuple[np.ndarray, ...]) -> None:
    head = np.empty(1 + 2 * len(arrays), dtype=np.int64)
    head[0] = len(arrays)
    head[1::2] = [_DTYPES.index(a.dtype) for a in arrays]
    head[2::2] = [a.shape[0] for a in arrays]
    try:
        f.write(head.tobytes())
        for a in arrays:
            f.write(np.ascontiguousarray(a).data)
    except OSError as e:
        # The scratch directory's problem (full, unwritable), not the file's.
        raise spill_budget.SpillWriteError(e) from e


def _read(f: BinaryIO) -> tuple[np.ndarray, ...]:
    count = int(np.frombuffer(f.read(8), dtype=np.int64)[0])
    head = np.frombuffer(f.read(16 * count), dtype=np.int64)
    out = []
    for code, length in zip(head[0::2].tolist(), head[1::2].tolist(), strict=True):
        a = np.empty(length, dtype=_DTYPES[code])
        f.readinto(memoryview(a).cast("B"))  # type: ignore[attr-defined]
        out.append(a)
    return tuple(out)


class Partitioned:
    """Rows of fixed columns, each in one of PARTS partitions (see the module docstring)."""

    def __init__(self, scratch: Scratch, name: str, budget: int) -> None:
        self._scratch = scratch
        self._name = name
        self._budget = budget
        self._chunks: list[tuple[np.ndarray, tuple[np.ndarray, ...]]] = []
        self._held = 0
        self._files: list[BinaryIO] | None = None
        self._counts = [0] * PARTS
        self.rows = 0

    def add(self, part: np.ndarray, *columns: np.ndarray) -> None:
        if not part.shape[0]:
            return
        self._chunks.append((part, columns))
        self._held += part.nbytes + sum(c.nbytes for c in columns)
        self.rows += int(part.shape[0])
        if self._held > self._budget:
            self._spill()

    def _spill(self) -> None:
        if self._files is None:
            self._files = [self._scratch.open(f"{self._name}.{p}.npy") for p in range(PARTS)]
        part = np.concatenate([p for p, _ in self._chunks])
        columns = [np.concatenate(c) for c in zip(*(c for _, c in self._chunks), strict=True)]
        order = arrays.stable_argsort(part)
        bounds = np.searchsorted(part[order], np.arange(PARTS + 1))
        for p in np.flatnonzero(np.diff(bounds)).tolist():
            rows = order[bounds[p] : bounds[p + 1]]
            _write(self._files[p], tuple(c[rows] for c in columns))
            self._counts[p] += 1
        self._chunks.clear()
        self._held = 0

    def groups(self) -> Iterator[tuple[np.ndarray, ...]]:
        """The rows, in the order they were added: all together while they were held in memory,
        else partition by partition. The table is empty afterwards."""
        if self._files is None:
            if self._chunks:
                yield tuple(np.concatenate(c) for c in zip(*(c for _, c in self._chunks), strict=True))
            self._chunks.clear()
            return
        if self._chunks:
            self._spill()
        for p, f in enumerate(self._files):
            if not self._counts[p]:
                continue
            f.seek(0)
            pieces = [_read(f) for _ in range(self._counts[p])]
            # Read for the last time: its pages go back now, for the writes that follow.
            f.truncate(0)
            yield tuple(np.concatenate(c) for c in zip(*pieces, strict=True))
        self.close()

    def close(self) -> None:
        for f in self._files or ():
            f.close()
        self._files = None
        self._chunks.clear()
