"""numpy helpers the readers and indexes share, where numpy's own call is much slower than it needs be.

`unique`: since numpy 2.3, `np.unique(a)` with no `return_*` flag finds integer values through a
hash set, which is far slower than a sort for the arrays ingest handles: on this project's 2-core
VM (numpy 2.4.6, 1.6 M uint64 ids) 1.1 s against 0.04 s for a sort and one comparison pass, and
four times slower even at 100 distinct values. The sort is what numpy did before.

`ranges`: the indices of many ranges at once, where a loop of `np.arange` would be one call each.

`stable_argsort`: `np.argsort(keys, kind="stable")` for small non-negative integer keys (track ids,
rows, piece numbers). numpy sorts int64 stably by timsort and 8- and 16-bit keys by a radix sort:
1 M random rows below 144 take 50 ms as int64, 10 ms as uint16 (numpy 2.4.6, the 2-core VM).

`grouped_records`: the rows of a structured (record) array grouped by a small key, stably, as
`records[np.argsort(key, kind="stable")]`. numpy gathers records field by field through its
generic structured copy: on the 2-core VM (numpy 2.4.6) 3 M records of 25 bytes by a permutation
take 0.24 s, the same bytes viewed as one opaque (void) item each 0.02 s. And a gather by such a
permutation reads the records once per group (each group's rows lie all over them), so each row is
rather scattered to its place, the records read once in order: 1.31 M records of 25 bytes in 7
groups, 14.5 ms against 29.5-37.6 ms gathered (the 2-core VM, 2026-12-06).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def unique(values: Any) -> np.ndarray:
    """The sorted distinct values of `values` (flattened), as `np.unique(values)` returns them.

    Floating and complex arrays go to `np.unique`, which counts every NaN as one value."""
    a = np.asarray(values)
    if a.dtype.kind in "fc":
        return np.unique(a)
    out = np.sort(a, axis=None)
    if out.shape[0] > 1:
        keep = np.empty(out.shape[0], bool)
        keep[0] = True
        np.not_equal(out[1:], out[:-1], out=keep[1:])
        out = out[keep]
    return out


def ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of arange(lo[i], hi[i]) for all i, without a Python loop."""
    lengths = hi - lo
    offsets = np.repeat(lo - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return np.arange(int(lengths.sum()), dtype=np.int64) + offsets


def stable_argsort(keys: np.ndarray) -> np.ndarray:
    """`np.argsort(keys, kind="stable")`, as a radix sort when the keys fit in 16 bits."""
    if keys.shape[0] and keys.dtype.kind in "iu" and int(keys.min()) >= 0 and int(keys.max()) < 1 << 16:
        keys = keys.astype(np.uint16)
    return np.argsort(keys, kind="stable")


def grouped_records(records: np.ndarray, key: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(`records` stably grouped by `key`, the `count` + 1 offsets of the groups): group g, the
    rows whose key is g in their order, is rows [offsets[g], offsets[g + 1]). Keys lie in
    [0, count); each record is moved as one block of bytes."""
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(key, minlength=count), out=offsets[1:])
    place = np.empty(key.shape[0], dtype=np.int64)
    place[stable_argsort(key)] = np.arange(key.shape[0], dtype=np.int64)
    out = np.empty_like(records)
    if records.dtype.names is None or records.dtype.hasobject:
        out[place] = records
    else:
        whole = np.dtype((np.void, records.dtype.itemsize))
        out.view(whole)[place] = records.view(whole)
    return out, offsets
