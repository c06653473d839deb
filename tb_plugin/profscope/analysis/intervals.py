"""Sets of time intervals as sorted, disjoint (start, end) int64 columns, and how much of each set
lies inside many windows at once.

Everything the breakdown and the device figures add up goes through `merge` first: overlapping or
nested events (a kernel on two streams, an op inside an op) count once, so no figure adds concurrent
time up as if it were wall time.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Intervals:
    """Disjoint intervals sorted by start: [start[k], end[k]), end[k] < start[k+1]."""

    start: np.ndarray
    end: np.ndarray

    def __len__(self) -> int:
        return int(self.start.shape[0])

    @staticmethod
    def empty() -> Intervals:
        return Intervals(np.zeros(0, np.int64), np.zeros(0, np.int64))

    def total(self) -> int:
        return int((self.end - self.start).sum())


def merge(start: np.ndarray, end: np.ndarray) -> Intervals:
    """The union of possibly overlapping intervals (empty ones dropped)."""
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    keep = end > start
    if not keep.all():  # copied only when some interval is empty
        start, end = start[keep], end[keep]
    if start.shape[0] == 0:
        return Intervals.empty()
    if not (start[1:] >= start[:-1]).all():  # events of one track come sorted: no sort needed
        order = np.argsort(start, kind="stable")
        start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)
    # A new run starts where an interval begins after everything before it has ended.
    begins = np.empty(start.shape[0], dtype=bool)
    begins[0] = True
    np.greater(start[1:], reach[:-1], out=begins[1:])
    first = np.flatnonzero(begins)
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1] = start.shape[0] - 1
    return Intervals(start[first], reach[last])


def union(*sets: Intervals) -> Intervals:
    if not sets:
        return Intervals.empty()
    return merge(np.concatenate([s.start for s in sets]), np.concatenate([s.end for s in sets]))


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """The time in both sets."""
    if not len(a) or not len(b):
        return Intervals.empty()
    # Each piece of the intersection starts at a start of one set inside an interval of the other.
    starts, ends = [], []
    for x, y in ((a, b), (b, a)):
        k = np.searchsorted(y.start, x.start, side="right") - 1
        ok = k >= 0
        k, xs, xe = k[ok], x.start[ok], x.end[ok]
        inside = xs < y.end[k]
        starts.append(xs[inside])
        ends.append(np.minimum(xe[inside], y.end[k[inside]]))
    return merge(np.concatenate(starts), np.concatenate(ends))


def covered(sets: Intervals, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For each window [lo[i], hi[i]), how much time of `sets` lies inside it (int64)."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    if not len(sets) or lo.shape[0] == 0:
        return np.zeros(lo.shape[0], np.int64)
    return _cumulative(sets, hi) - _cumulative(sets, lo)


def _cumulative(sets: Intervals, t: np.ndarray) -> np.ndarray:
    """Time of `sets` before each instant t."""
    prefix = np.concatenate(([0], np.cumsum(sets.end - sets.start)))
    k = np.searchsorted(sets.start, t, side="right")  # intervals starting at or before t
    before = prefix[k]
    last = np.maximum(k - 1, 0)
    overshoot = np.where(k > 0, np.maximum(sets.end[last] - t, 0), 0)
    return before - overshoot


def clip(sets: Intervals, lo: int, hi: int) -> Intervals:
    """The part of `sets` inside [lo, hi)."""
    return merge(np.clip(sets.start, lo, hi), np.clip(sets.end, lo, hi))


def partition(layers: list[Intervals], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Priority sweep: for each window and layer, the time where that layer is the first active one.

    Returns (len(layers) + 1, windows) int64; the last row is the time no layer covers. Each
    window's column adds up to its length exactly: layer k gets |U_k ∩ w| − |U_{k−1} ∩ w| where
    U_k is the union of layers 0..k.
    """
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    out = np.zeros((len(layers) + 1, lo.shape[0]), np.int64)
    cumulative = Intervals.empty()
    before = np.zeros(lo.shape[0], np.int64)
    for k, layer in enumerate(layers):
        cumulative = union(cumulative, layer) if len(layer) else cumulative
        now = covered(cumulative, lo, hi)
        out[k] = now - before
        before = now
    out[-1] = (hi - lo) - before
    return out
