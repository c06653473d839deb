"""Event stats of a batch of XEvents as named columns.

Stats reference their name through per-plane stat metadata ids; `StatTable` resolves them once to
the ids of one `StatNames` (shared by all batches of a file) so the reader can pull a column
("hlo_op", "correlation_id", …) with one mask; `args` writes the typed args records from it.
"""

from __future__ import annotations

import math
import struct
from typing import Any, NamedTuple

import numpy as np

from profscope.formats.xplane.decode import BYTES, DOUBLE, INT64, REF, STR, UINT64, EventBatch, text

# Stat metadata ids below this are resolved through a table indexed by id (producers number them
# from 1 up), others by binary search.
_DENSE_KEYS = 1 << 16


def bytes_text(raw: bytes) -> str:
    """Bytes stat value as text: the UTF-8 string when it is readable text, else hex digits."""
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.hex()
    if all(c.isprintable() or c in "\t\n\r" for c in decoded):
        return decoded
    return raw.hex()


def json_value(kind: int, value: Any, stat_names: dict[int, str]) -> Any:
    """A decoded stat value as it appears in args (refs resolved, bytes as text, NaN/inf as null)."""
    if kind == REF:
        return stat_names.get(value, f"?ref {value}")
    if kind == BYTES:
        return bytes_text(value)
    if kind == DOUBLE and not math.isfinite(value):
        return None
    return value


class StatNames:
    """The names a reader gives stats and their text values: stat metadata names, args keys and
    every text value looked up, each with an id (shared by all batches of one file)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.name_ids: dict[str, int] = {}

    def name_id(self, name: str) -> int:
        nid = self.name_ids.get(name)
        if nid is None:
            nid = self.name_ids[name] = len(self.names)
            self.names.append(name)
        return nid

    def lookup(self, stat_names: dict[int, str]) -> PlaneStats:
        """How one plane's stat metadata ids map to name ids, for `StatTable`."""
        mids = np.array(sorted(stat_names), dtype=np.int64)
        ids = np.array([self.name_id(stat_names[m]) for m in mids.tolist()], dtype=np.int32)
        return PlaneStats(mids, ids, frozenset(ids.tolist()))


class PlaneStats(NamedTuple):
    """A plane's stat metadata ids (sorted), the name id of each, and the set of those names."""

    mids: np.ndarray
    ids: np.ndarray
    present: frozenset[int]


class StatTable:
    """The event stats of one EventBatch with names resolved to ids into `names`."""

    def __init__(self, raw: EventBatch, vocab: StatNames, lookup: PlaneStats) -> None:
        self.raw = raw
        self.vocab = vocab
        self.names = vocab.names
        self.name_ids = vocab.name_ids
        self._present = lookup.present
        self._rows: dict[str, np.ndarray] = {}
        mids, ids = lookup.mids, lookup.ids
        n = raw.st_mid.shape[0]
        is_ref = raw.st_kind == REF
        if mids.shape[0]:
            self.row_name = _lookup(mids, ids, raw.st_mid)
            self.ref_name = np.full(n, -1, dtype=np.int32)
            refs = np.flatnonzero(is_ref)
            self.ref_name[refs] = _lookup(mids, ids, raw.st_value[refs].view(np.int64))
        else:
            self.row_name = np.full(n, -1, dtype=np.int32)
            self.ref_name = np.full(n, -1, dtype=np.int32)
        self.unknown_names = int((self.row_name < 0).sum())
        self.unknown_refs = int(((self.ref_name < 0) & is_ref).sum())

    def name_id(self, name: str) -> int:
        return self.vocab.name_id(name)

    def rows(self, name: str) -> np.ndarray:
        """Stat rows named `name` (grouped by event, source order)."""
        rows = self._rows.get(name)
        if rows is None:
            nid = self.name_ids.get(name)
            if nid is None or nid not in self._present:
                rows = np.zeros(0, dtype=np.int64)
            else:
                rows = np.flatnonzero(self.row_name == nid)
            self._rows[name] = rows
        return rows

    def ints(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(int64 value, valid) of integer-valued stat rows (int, uint and whole doubles)."""
        raw = self.raw
        kind = raw.st_kind[rows]
        values = raw.st_value[rows].view(np.int64).copy()
        valid = (kind == INT64) | (kind == UINT64)
        dbl = np.flatnonzero(kind == DOUBLE)
        if dbl.shape[0]:
            as_float = raw.st_value[rows[dbl]].view(np.float64)
            whole = np.isfinite(as_float) & (np.abs(as_float) < 2.0**62)
            values[dbl[whole]] = as_float[whole].astype(np.int64)
            valid[dbl[whole]] = True
        return values, valid

    def text_ids(self, rows: np.ndarray) -> np.ndarray:
        """Id into `names` of each stat row's value as text, -1 where it has none.

        Ref values are already ids; strings are decoded once per distinct value, so columns like
        hlo_op or tf_op cost Python time per distinct string rather than per event.
        """
        raw = self.raw
        kind = raw.st_kind[rows]
        out = np.full(rows.shape[0], -1, dtype=np.int32)
        is_ref = kind == REF
        out[is_ref] = self.ref_name[rows[is_ref]]
        other = np.flatnonzero(~is_ref & (kind != 0))
        if not other.shape[0]:
            return out
        data = raw.data
        cache: dict[tuple[int, bytes], int] = {}
        sub = rows[other]
        strs = np.flatnonzero(raw.st_kind[sub] == STR)
        for i, start, length in zip(
            strs.tolist(), raw.st_start[sub[strs]].tolist(), raw.st_len[sub[strs]].tolist(), strict=True
        ):
            chunk = data[start : start + length]
            key = (STR, chunk)
            nid = cache.get(key)
            if nid is None:
                nid = cache[key] = self.name_id(text(chunk))
            out[other[i]] = nid
        rest = np.flatnonzero(raw.st_kind[sub] != STR)
        if rest.shape[0]:
            for i, value in zip(rest.tolist(), self.texts(sub[rest]), strict=True):
                if value is not None:
                    out[other[i]] = self.name_id(value)
        return out

    def texts(self, rows: np.ndarray) -> list[str | None]:
        """Text value of each stat row (str, bytes, ref; numbers as their decimal text)."""
        raw = self.raw
        blobs = (raw.st_kind[rows] == STR) | (raw.st_kind[rows] == BYTES)
        data = raw.data if blobs.any() else b""
        out: list[str | None] = []
        cache: dict[bytes, str] = {}
        for kind, value, start, length, ref in zip(
            raw.st_kind[rows].tolist(),
            raw.st_value[rows].tolist(),
            raw.st_start[rows].tolist(),
            raw.st_len[rows].tolist(),
            self.ref_name[rows].tolist(),
            strict=True,
        ):
            if kind == STR:
                chunk = data[start : start + length]
                s = cache.get(chunk)
                if s is None:
                    s = cache[chunk] = text(chunk)
                out.append(s)
            elif kind == REF:
                out.append(self.names[ref] if ref >= 0 else None)
            elif kind == BYTES:
                out.append(bytes_text(data[start : start + length]))
            elif kind == INT64:
                out.append(str(value - (1 << 64) if value >= 1 << 63 else value))
            elif kind == UINT64:
                out.append(str(value))
            elif kind == DOUBLE:
                out.append(repr(struct.unpack("<d", struct.pack("<Q", value))[0]))
            else:
                out.append(None)
        return out


def _lookup(keys: np.ndarray, ids: np.ndarray, query: np.ndarray) -> np.ndarray:
    """ids[i] where keys[i] == query (keys sorted), -1 where the query is not a key."""
    top = int(keys[-1])
    if int(keys[0]) >= 0 and top < _DENSE_KEYS:  # the usual small ids: one table look-up each
        table = np.full(top + 2, -1, dtype=np.int32)
        table[keys] = ids
        return table[np.where((query >= 0) & (query <= top), query, top + 1)]
    pos = np.searchsorted(keys, query)
    pos_c = np.minimum(pos, keys.shape[0] - 1)
    found = (pos < keys.shape[0]) & (keys[pos_c] == query)
    return np.where(found, ids[pos_c], -1).astype(np.int32)
