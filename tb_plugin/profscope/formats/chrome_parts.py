"""The decoded parts of one Chrome trace file (one per decoding process) seen as one.

Each `ColumnCollector` has its own string and track-key ids; `Parts` maps them to the builder's
string ids and to one track-key table for the whole file (pid / tid normalized, so "25738" and
25738 are one thread). The assembly stages read the collectors' columns through `column`.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from profscope.columns import TraceBuilder
from profscope.formats import chrome_columns as cc

_INT_TEXT = re.compile(r"^-?\d+$")


def norm_id(value: Any) -> Any:
    """pid / tid as Kineto means them: "25738" and 25738 are the same thread."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INT_TEXT.match(value.strip()):
        return int(value.strip())
    return value


def _norm_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    kind = key[0]
    if kind == cc.THREAD:
        return (kind, norm_id(key[1]), norm_id(key[2]))
    if kind == cc.GLOBAL:
        return key
    return (kind, norm_id(key[1]), *key[2:])


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
        for p in parts:
            local = p.keys.values_by_id()
            self.kmaps.append(np.fromiter((self.keys[_norm_key(k)] for k in local), np.int32, len(local)))


def column(table: dict[str, list[np.ndarray]], key: str, dtype: Any) -> np.ndarray:
    """One column of a collector's table as one array (no copy once the collector is finished)."""
    parts = table[key]
    if not parts:
        return np.zeros(0, dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def times(parts: list[cc.ColumnCollector], tables: tuple[str, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    """(whole µs, ps remainder) columns of the named tables of every part that hold events."""
    found = []
    for p in parts:
        for name in tables:
            t = getattr(p, name)
            if t["us"]:
                found.append((column(t, "us", np.int64), column(t, "frac", np.int32)))
    return found


def joined(parts: list[bytes]) -> bytes:
    """A collector's args blob as one bytes object."""
    return parts[0] if len(parts) == 1 else b"".join(parts)


def select_args(blob: bytes, lengths: np.ndarray, keep: np.ndarray) -> bytes:
    """The args texts of the kept events, concatenated: one slice per run of kept events."""
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
