"""The decoded parts of one Chrome trace file (one per decoding process) seen as one.

Each `ColumnCollector` has its own string and track-key ids; `Parts` maps them to the builder's
string ids and to one track-key table for the whole file (pid / tid normalized, so "25738" and
25738 are one thread). The assembly stages read the parts' chunks back, one at a time and in file
order, through `Parts.chunks` (`prefetched`: the next one read by a thread meanwhile); `clock`
finds the trace's time base from them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from profscope.formats.chrome import columns as cc
from profscope.formats.chrome.async_keys import AsyncKeys
from profscope.formats.chrome.clock import Clock, densest, in_range
from profscope.formats.chrome.meta import norm_id
from profscope.formats.chrome.spill import TRACK_KEY_BYTES, ChunkRef
from profscope.model.columns import TraceBuilder
from profscope.model.spill import files as spill_files

# Tables with times, and the ones whose latest time ends the slices left open.
TIME_TABLES = ("ev", "be", "asy", "ctr")
_OPEN_END_TABLES = ("be", "asy", "ctr")
# Times sampled per table to find the bulk of the trace.
CLOCK_SAMPLE = 50_000
T = TypeVar("T")


class _KeyNormalizer(dict):
    """A reader's track key as one for the whole file: pid / tid normalized (one `norm_id` per
    distinct value, not per key), and an async scope's missing category read as ""."""

    def __missing__(self, value: Any) -> Any:
        normal = self[value] = norm_id(value)
        return normal

    def key(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        kind = key[0]
        if kind == cc.THREAD:
            return (kind, self[key[1]], self[key[2]])
        if kind == cc.GLOBAL:
            return key
        if kind == cc.ASYNC:
            return (kind, self[key[1]], key[2] or "")
        return (kind, self[key[1]], *key[2:])


class Chunk:
    """One chunk of one part, read back column by column; `smap` / `kmap` map its ids."""

    def __init__(self, ids: Parts, part: int, ref: ChunkRef) -> None:
        self.part = part
        self.ref = ref
        self.smap = ids.smaps[part]
        self.kmap = ids.kmaps[part]
        self._ids = ids
        self._spill = ids.parts[part].spill

    def keys(self, table: str, track: np.ndarray) -> np.ndarray:
        """The file-wide track key of each row of `table` (all its rows, `track` its column);
        async rows get their id's key (the `asy` id column read here)."""
        keys = self.kmap[track]
        if table != "asy":
            return keys
        return self._ids.async_keys.keys_of(keys, self.read("asy", "id")["id"])

    def has(self, table: str) -> bool:
        return table in self.ref.rows

    def read(self, table: str, *names: str) -> dict[str, np.ndarray]:
        assert self._spill is not None
        return self._spill.read(self.ref, table, names)

    def release(self, *tables: str) -> None:
        """Tables of this chunk that no stage reads again: their space in the temporary file is
        given back now (`SpillFile.release`)."""
        assert self._spill is not None
        for table in tables:
            if table in self.ref.columns:
                self._spill.release(self.ref, table)

    def args(self, table: str) -> bytes:
        """The args texts of a table, one after another."""
        assert self._spill is not None
        return self._spill.read_bytes(self.ref, table, "args")

    def lend_args(self, table: str) -> spill_files.FileRange | bytes:
        """The args texts of a table, read for the last time, as their range of the temporary
        file (`SpillFile.lend`)."""
        assert self._spill is not None
        return self._spill.lend(self.ref, table, "args")


class Parts:
    """Id maps from each collector's local strings / track keys to the builder's."""

    def __init__(self, builder: TraceBuilder, parts: list[cc.ColumnCollector]) -> None:
        self.parts = parts
        self.keys = cc.Interner()
        self.smaps = []
        for p in parts:
            local = p.strings.values_by_id()
            self.smaps.append(np.fromiter(map(builder.intern, local), np.int32, len(local)))
        # Builder string id → text, for the ids the maps above hand out.
        self.strings = list(builder.string_ids)
        self.kmaps = []
        normal = _KeyNormalizer()
        for p in parts:
            local = p.keys.values_by_id()
            p.keys.clear()  # only the map is read from here on
            self.kmaps.append(
                np.fromiter(map(self.keys.__getitem__, map(normal.key, local)), np.int32, len(local))
            )
        # The async ids are numbered in what the ingest's track budget leaves after these keys.
        limit = parts[0].key_limit
        room = None if limit is None else (limit - len(self.keys)) * TRACK_KEY_BYTES
        self.async_keys = AsyncKeys(self._async_rows, len(self.keys), room)

    @property
    def num_keys(self) -> int:
        """Track keys of the file: the interned ones (async scopes among them), then one per async id."""
        return self.async_keys.base + len(self.async_keys)

    def _async_rows(self) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]]:
        for c in self.chunks("asy"):
            f = c.read("asy", "track", "id", "phase", "name")
            yield c.kmap[f["track"]], f, c.smap

    def release_keys(self) -> list[tuple[Any, ...]]:
        """The track keys by id, for the layout, the one stage that reads them: the table is freed
        (the stages after it read only the maps)."""
        keys = self.keys.values_by_id()
        self.keys.clear()
        return keys

    def chunks(self, table: str | None = None) -> Iterator[Chunk]:
        """The chunks of all parts in file order (those holding `table`, when given)."""
        for i, p in enumerate(self.parts):
            for ref in p.chunks:
                if table is None or table in ref.rows:
                    yield Chunk(self, i, ref)


def prefetched(
    chunks: Iterable[Chunk], reading: Callable[[Chunk], Callable[[], T]]
) -> Iterator[tuple[Chunk, T]]:
    """Each chunk with what its reading gave, the next chunk read by a thread meanwhile.

    `reading(chunk)`, called here in turn as the chunk before is handed out (so it may look at
    what that one's work left, e.g. whether the builder has spilled), gives the reading to do;
    the thread does it. Reading back is copies from the page cache into fresh arrays, the kernel's
    work with the GIL released, which so overlaps the work on the chunk before: the assembly runs
    alone once the helper process is done. One chunk is read ahead at most; a reading that failed
    raises here, and the thread is waited for however the iteration ends."""
    with ThreadPoolExecutor(1, thread_name_prefix="profscope-chrome-fetch") as pool:
        it = iter(chunks)
        c = next(it, None)
        ahead = None if c is None else (c, pool.submit(reading(c)))
        while ahead is not None:
            c, future = ahead
            got = future.result()
            following = next(it, None)
            ahead = None if following is None else (following, pool.submit(reading(following)))
            yield c, got


def clock(ids: Parts) -> tuple[Clock, int]:
    """The trace's clock, and the latest in-range time of B/E, async and counter events in ps from
    its zero (0 if none; slices left open are drawn up to it).

    The bulk of the trace is the densest of every table's times sampled at a stride of
    max(1, rows // CLOCK_SAMPLE) per part; the zero is the earliest time within `OUTLIER_US` of
    it. Only chunks whose time bounds are not all within that range are read a second time.
    """
    samples = []
    for c in ids.chunks():
        for table in TIME_TABLES:
            n = c.ref.rows.get(table, 0)
            if not n:
                continue
            stride = max(1, ids.parts[c.part].rows[table] // CLOCK_SAMPLE)
            us = c.read(table, "us")["us"]
            samples.append(us[(-c.ref.base[table]) % stride :: stride])
    reference = densest(np.concatenate(samples)) if samples else 0
    lowest: tuple[int, int] | None = None
    latest: tuple[int, int] | None = None
    for c in ids.chunks():
        for table in TIME_TABLES:
            if table not in c.ref.bounds:
                continue
            low_us, low_frac, high_us, high_frac = c.ref.bounds[table]
            if in_range(np.array([low_us, high_us]), reference).all():
                low, high = (low_us, low_frac), (high_us, high_frac)
            else:
                cols = c.read(table, "us", "frac")
                ok = in_range(cols["us"], reference)
                if not ok.any():
                    continue
                us, frac = cols["us"][ok], cols["frac"][ok]
                a, b = int(us.min()), int(us.max())
                low, high = (a, int(frac[us == a].min())), (b, int(frac[us == b].max()))
            lowest = low if lowest is None else min(lowest, low)
            if table in _OPEN_END_TABLES:
                latest = high if latest is None else max(latest, high)
    result = Clock(reference, lowest)
    return result, (max(0, result.ps_of(*latest)) if latest is not None else 0)


def select_args(blob: bytes, lengths: np.ndarray, keep: np.ndarray) -> bytes:
    """The args texts of the kept events, concatenated: one slice per run of kept events."""
    if keep.all():
        return blob
    offsets = np.zeros(lengths.shape[0] + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    edges = np.flatnonzero(np.diff(np.concatenate(([False], keep, [False])).astype(np.int8)))
    first, last = edges[0::2], edges[1::2]
    return b"".join([blob[a:b] for a, b in zip(offsets[first].tolist(), offsets[last].tolist())])


def string_table(size: int, ids: list[int]) -> np.ndarray:
    """Boolean table over string ids, True at `ids`: a gather instead of np.isin per event."""
    table = np.zeros(size, bool)
    table[ids] = True
    return table
