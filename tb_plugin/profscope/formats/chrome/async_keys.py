"""The async track keys of a Chrome trace — one per (pid, category, id) — numbered in numpy arrays.

A serving trace can hold an async id per request: interned as Python tuples in a dict, each id cost
~360 bytes while decoding, unbounded by the ingest budget. Instead the collector interns only the
scope (pid, category) and keeps each event's id text as a column of its chunk; `AsyncKeys` numbers
the distinct (scope, id) pairs in the order they first appear in the file, in arrays: 21 bytes
plus the id's length per key until the layout has read them, 12 after (what `keys_of` needs);
about 68 bytes plus twice the id's length per key while they are numbered (tracemalloc over 3 M
ids of 7, 12 and 18 characters: 80, 90 and 103 bytes). Inside an ingest that is counted against
what the budget leaves after the file's tracks (`room_bytes`): past it, `TooManyAsyncIds`.

Keys are found by a 64-bit hash of (scope, id bytes): sorting and searching fixed-width byte
strings in numpy is several times slower than integers. The hash is only an index, never trusted:
every pair of events with the same hash is compared byte for byte, and a collision makes the table
be built again with another seed (`SEEDS` of them before giving up, which 64-bit hashes of a few
million keys never reach: a collision among 10⁷ keys has a chance of about 3·10⁻⁶).

Per key, what the layout needs: its scope (the file-wide track key of its pid and category), its
id text, the builder string id of the name of its first event, and whether it holds
one slice (one begin and at most one end, or one instant alone).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from profscope.formats.chrome import columns as cc
from profscope.formats.chrome.spill import ASYNC_ID_BYTES, TooManyAsyncIds

SEEDS = 8
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


class HashCollision(Exception):
    """Two different (scope, id) pairs with one hash: the table is built again with another seed."""


def key_hashes(scope: np.ndarray, ids: np.ndarray, seed: int) -> np.ndarray:
    """A 64-bit hash per (scope, id), the same whatever width the id array has (ids have no NULs,
    so an id's length is where its padding starts)."""
    n, width = ids.shape[0], ids.dtype.itemsize
    words = -(-width // 8)
    raw = np.zeros((n, words * 8), np.uint8)
    if n and width:
        raw[:, :width] = ids.view(np.uint8).reshape(n, width)
    length = np.count_nonzero(raw, axis=1)
    h = _mix(scope.astype(np.uint64) ^ (length.astype(np.uint64) << np.uint64(40)) ^ np.uint64(seed))
    for j, word in enumerate(raw.view("<u8").T):
        h = np.where(length > 8 * j, _mix(h ^ word), h)
    return h.view(np.int64)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: every input bit moves every output bit."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (x ^ (x >> np.uint64(31))) * _MULTIPLIER


class _ChunkKeys:
    """The distinct keys of one chunk: hash, scope, id, first row, first name, b / e / n counts."""

    FIELDS = ("hash", "ids", "scope", "first", "name", "begins", "ends", "instants")

    def __init__(
        self, position: int, scope: np.ndarray, f: dict[str, np.ndarray], smap: np.ndarray, seed: int
    ) -> None:
        ids = f["id"]
        h = key_hashes(scope, ids, seed)
        self.hash, first, inverse = np.unique(h, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        if not (np.array_equal(ids, ids[first][inverse]) and np.array_equal(scope, scope[first][inverse])):
            raise HashCollision
        self.scope = scope[first]
        self.ids = ids[first]
        self.first = (np.int64(position) << 32) | first.astype(np.int64)
        self.name = smap[f["name"][first]]
        groups = self.hash.shape[0]
        self.begins, self.ends, self.instants = (
            np.bincount(inverse[f["phase"] == code], minlength=groups).astype(np.int32)
            for code in (cc.ASYNC_BEGIN, cc.ASYNC_END, cc.ASYNC_INSTANT)
        )


class _Column:
    """A field of every chunk's keys, grown in one buffer of doubling capacity. Pieces kept per
    chunk and joined at the end fragmented the heap: the pieces are small enough for malloc's
    heap, the joined arrays are mapped apart from it, and the freed pieces stayed resident
    (10 M ids: 1.1 GB of RSS for 0.8 GB of arrays). A big buffer is mapped, its untouched
    capacity takes no memory, and freeing it gives its pages back."""

    def __init__(self) -> None:
        self.buffer: np.ndarray | None = None
        self.size = 0

    def append(self, values: np.ndarray) -> None:
        end = self.size + values.shape[0]
        old = self.buffer
        if old is None or end > old.shape[0] or values.dtype.itemsize > old.dtype.itemsize:
            dtype = values.dtype if old is None else np.result_type(old.dtype, values.dtype)
            self.buffer = np.empty(max(2 * end, 1024), dtype)
            if old is not None:
                self.buffer[: self.size] = old[: self.size]
        assert self.buffer is not None
        self.buffer[self.size : end] = values
        self.size = end

    def take(self) -> np.ndarray:
        """The values appended (a view of the buffer, which goes with it)."""
        assert self.buffer is not None
        out, self.buffer = self.buffer[: self.size], None
        return out


class AsyncKeys:
    """The async keys of a file, numbered `base`, `base` + 1, … in the order they first appear."""

    def __init__(self, chunks: Callable[[], Iterable[Any]], base: int, room_bytes: int | None = None) -> None:
        """`chunks()` yields, in file order, (scope key per row, the chunk's "asy" columns id,
        phase and name, the chunk's string map) — read again if a seed must be changed. Past
        `room_bytes` of ids held while numbering (None: no bound), `TooManyAsyncIds`."""
        self.base = base
        self.room_bytes = room_bytes
        for seed in range(SEEDS):
            try:
                self._build(chunks(), seed)
                return
            except HashCollision:
                continue
        raise RuntimeError(f"async ids: {SEEDS} hash seeds all collided")

    def _build(self, chunks: Iterable[Any], seed: int) -> None:
        self.seed = seed
        grown = {k: _Column() for k in _ChunkKeys.FIELDS}
        held = held_bytes = 0
        for i, (scope, f, smap) in enumerate(chunks):
            part = _ChunkKeys(i, scope, f, smap, seed)
            for k, column in grown.items():
                column.append(getattr(part, k))
            per_id = ASYNC_ID_BYTES + 2 * part.ids.dtype.itemsize
            held += part.hash.shape[0]
            held_bytes += part.hash.shape[0] * per_id
            if self.room_bytes is not None and held_bytes > self.room_bytes:
                raise TooManyAsyncIds(held, max(self.room_bytes, 0) // per_id)
        if not held:
            self._set_empty()
            return
        fields = {k: column.take() for k, column in grown.items()}
        del grown
        # One field at a time, each freed once sorted: a few arrays per id at most.
        h = fields.pop("hash")
        order = np.argsort(h, kind="stable")  # chunks in file order: a key's first chunk first
        h = h[order]
        new = np.concatenate(([True], h[1:] != h[:-1]))
        starts = np.flatnonzero(new)
        # Rows whose hash is the one before theirs (a key seen in several chunks): each must be
        # that row's key, which makes every group of equal hashes one key.
        repeat, before = order[~new], order[np.flatnonzero(~new) - 1]
        del new
        self.hash_sorted = h if starts.shape[0] == h.shape[0] else h[starts]
        del h
        first_rows = order[starts]
        distinct: dict[str, np.ndarray] = {}
        for k in ("ids", "scope"):
            column = fields.pop(k)
            if not np.array_equal(column[repeat], column[before]):
                raise HashCollision
            distinct[k] = column[first_rows]
        del column, repeat, before
        first = fields.pop("first")[first_rows]
        name = fields.pop("name")[first_rows]
        begins, ends, instants = (
            np.add.reduceat(fields.pop(k)[order], starts, dtype=np.int32)
            for k in ("begins", "ends", "instants")
        )
        single = ((begins == 1) & (ends <= 1) & (instants == 0)) | (
            (begins == 0) & (ends == 0) & (instants == 1)
        )
        del order, first_rows, begins, ends, instants
        # Number by first appearance: key number of each sorted hash, and per number its fields.
        by_first = np.argsort(first, kind="stable")
        del first
        self.number_of_sorted = np.empty(
            by_first.shape[0], np.int32 if by_first.shape[0] < 2**31 else np.int64
        )
        self.number_of_sorted[by_first] = np.arange(by_first.shape[0])
        self.scope = distinct["scope"][by_first]
        self.ids = distinct["ids"][by_first]
        self.first_name = name[by_first]
        self.single = single[by_first]

    def _set_empty(self, keep_lookup: bool = False) -> None:
        if not keep_lookup:
            self.hash_sorted = np.zeros(0, np.int64)
            self.number_of_sorted = np.zeros(0, np.int32)
        self.scope = np.zeros(0, np.int32)
        self.ids = np.zeros(0, "S1")
        self.first_name = np.zeros(0, np.int32)
        self.single = np.zeros(0, bool)

    def __len__(self) -> int:
        return int(self.number_of_sorted.shape[0])

    def release_layout_fields(self) -> None:
        """Free what only the layout reads (scopes, id texts, names, slice counts): the stages
        after it only look keys up."""
        self._set_empty(keep_lookup=True)

    def keys_of(self, scope: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The file-wide track key of each (scope, id) of a chunk that was read into the table."""
        # The chunk's distinct hashes, sorted, are looked up: a sorted search walks the table in
        # order instead of jumping about it (3 M ids: 5x faster than the chunk's rows as they come).
        h, inverse = np.unique(key_hashes(scope, ids, self.seed), return_inverse=True)
        pos = np.searchsorted(self.hash_sorted, h)
        if pos.shape[0] and (pos.max() >= self.hash_sorted.shape[0] or (self.hash_sorted[pos] != h).any()):
            raise RuntimeError("an async id not seen when the ids were numbered")
        return self.base + self.number_of_sorted[pos][inverse.reshape(-1)]
