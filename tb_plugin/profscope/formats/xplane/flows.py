"""Flows of an XPlane (from `flow` stats and host↔device correlation ids) and kernel launches.

Both link events anywhere in the file, so the reader hands every batch's records to this module
(`FlowRecords.flow_stats`, `.correlations`) and the links are made once the whole file is read,
partition by partition (`xplane.spill.Partitioned`: rows of one flow id or correlation id share a
partition):

- a `flow` stat is (direction 2 bits, flow id 56 bits, category 6 bits); events of one flow id are
  chained in time order, out (2) first, in (1) last, in-out (3) and unspecified (0) between, and
  each link is named after the category of its first event (XProf's ContextType names);
- a device event links to the host event with its correlation id; when several host events carry
  it, to the last one that starts at or before the device event (none: counted, not linked).

Links are then sorted by (source, destination) event, a link found both ways is kept once (the
flow stat's), and a link from an event to itself is dropped. The correlation links also give the
"Launch Stats" of each GPU: per step (the host event's group_id), the span, number, longest and
mean duration of the host events that launched work on that GPU, each host event counted once.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from profscope.formats.xplane.spill import PARTS, Partitioned, Scratch
from profscope.model import arrays

# XProf's flow categories (tsl ContextType), indexed by the flow stat's top 6 bits.
FLOW_CATEGORIES = (
    "flow", "flow", "tf_exec", "tfrt_exec", "batch_sched", "PjRt", "as_batch_sched", "tfrt_rt",
    "tpu_embed", "gpu_launch", "batcher", "tpu_stream", "tpu_launch", "pathways_exec",
    "pjrt_library_call", "threadpool_event",
)  # fmt: skip
_GPU_LAUNCH = FLOW_CATEGORIES.index("gpu_launch")
_HASH = np.uint64(0x9E3779B97F4A7C15)
# A link made from a flow stat wins over the same link made from a correlation id.
_FROM_FLOW, _FROM_CORRELATION = 0, 1


def _partition(key: np.ndarray) -> np.ndarray:
    """Partition of each key (a multiplicative hash, so ids with a common stride still spread)."""
    return ((key.view(np.uint64) * _HASH) >> np.uint64(59)).astype(np.int64) % PARTS


def _ranges(index: np.ndarray, total: int) -> np.ndarray:
    """Partition of each builder event index: contiguous ranges, so partitions sort together."""
    return index * PARTS // max(total, 1)


class FlowRecords:
    """The records of one read, and the links and launch totals made from them at the end."""

    def __init__(self, scratch: Scratch, budget: int) -> None:
        self._scratch = scratch
        self._budget = budget
        self._flows = Partitioned(scratch, "flows", budget)
        self._correlations = Partitioned(scratch, "correlations", budget)
        self.launches = Partitioned(scratch, "launches", budget)
        self.has_host = False
        self.has_device = False
        self.unmatched = 0

    def flow_stats(self, value: np.ndarray, start: np.ndarray, event: np.ndarray) -> None:
        """Events (builder index) with a `flow` stat (its raw 64 bits) starting at `start`."""
        flow_id = ((value >> np.uint64(2)) & np.uint64((1 << 56) - 1)).astype(np.int64)
        self._flows.add(_partition(flow_id), flow_id, value.view(np.int64), start, event)

    def correlations(
        self,
        correlation: np.ndarray,
        start: np.ndarray,
        event: np.ndarray,
        host: bool,
        where: int,
        duration: np.ndarray,
        group: np.ndarray,
        has_group: np.ndarray,
    ) -> None:
        """Events carrying a correlation id: host events (with duration and group id) or device
        events (`where`: the device plane's index)."""
        if not event.shape[0]:
            return
        n = event.shape[0]
        if host:
            self.has_host = True
        else:
            self.has_device = True
        side = np.full(n, 0 if host else 1, dtype=np.int64)
        plane = np.full(n, where, dtype=np.int64)
        self._correlations.add(
            _partition(correlation), correlation, start, event, side, plane, duration, group, has_group
        )

    def links(self, total: int, names: list[int]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(source, destination, name) of every link, in chunks sorted by (source, destination);
        `total` is the number of builder events, `names` the builder ids of FLOW_CATEGORIES."""
        made = Partitioned(self._scratch, "links", self._budget)
        name_of = np.array(names, dtype=np.int64)
        for flow_id, value, start, event in self._flows.groups():
            src, dst, category, tiebreak = _chain(flow_id, value, start, event)
            name = name_of[np.minimum(category, len(names) - 1)]
            name[category >= len(names)] = names[0]
            origin = np.full(src.shape[0], _FROM_FLOW, dtype=np.int64)
            made.add(_ranges(src, total), src, dst, name, origin, tiebreak)
        if self.has_host and self.has_device:
            for columns in self._correlations.groups():
                host, device, plane, group, has_group, start, duration = self._match(*columns)
                origin = np.full(host.shape[0], _FROM_CORRELATION, dtype=np.int64)
                name = np.full(host.shape[0], names[_GPU_LAUNCH], dtype=np.int64)
                made.add(_ranges(host, total), host, device, name, origin, np.zeros_like(host))
                grouped = has_group != 0
                self.launches.add(
                    _ranges(host[grouped], total),
                    *(c[grouped] for c in (plane, host, group, start, duration)),
                )
        for src, dst, name, origin, tiebreak in made.groups():
            keep = src != dst
            src, dst, name, origin, tiebreak = src[keep], dst[keep], name[keep], origin[keep], tiebreak[keep]
            order = np.lexsort((tiebreak, origin, dst, src))
            src, dst, name = src[order], dst[order], name[order]
            first = np.ones(src.shape[0], dtype=bool)
            first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
            yield src[first], dst[first], name[first]
        self._correlations.close()

    def _match(
        self,
        correlation: np.ndarray,
        start: np.ndarray,
        event: np.ndarray,
        side: np.ndarray,
        plane: np.ndarray,
        duration: np.ndarray,
        group: np.ndarray,
        has_group: np.ndarray,
    ) -> tuple[np.ndarray, ...]:
        """(host event, device event, device plane, host group id, has group id, host start,
        host duration) of each device event's launch."""
        host = side == 0
        h = np.flatnonzero(host)
        d = np.flatnonzero(~host)
        h = h[np.lexsort((start[h], correlation[h]))]
        h_id = correlation[h]
        lo = np.searchsorted(h_id, correlation[d], side="left")
        hi = np.searchsorted(h_id, correlation[d], side="right")
        single = hi - lo == 1
        pairs = [np.stack([h[lo[single]], d[single]], axis=1)]
        several = np.flatnonzero(hi - lo > 1)
        for k, a, z in zip(d[several].tolist(), lo[several].tolist(), hi[several].tolist(), strict=True):
            cands = h[a:z]
            before = cands[start[cands] <= start[k]]
            if before.shape[0]:
                pairs.append(np.array([[before[-1], k]], dtype=np.int64))
            else:
                self.unmatched += 1
        rows = np.concatenate(pairs).astype(np.int64)
        hr, dr = rows[:, 0], rows[:, 1]
        return event[hr], event[dr], plane[dr], group[hr], has_group[hr], start[hr], duration[hr]

    def launch_totals(self) -> dict[int, tuple[np.ndarray, ...]]:
        """Per device plane: (group ids ascending, span start, span end, count, longest, total
        duration) of the host launches of each step, over the links made by `links`."""
        parts: list[np.ndarray] = []
        for plane, host, group, start, duration in self.launches.groups():
            # Each host event once per device plane (a host event is in one partition only).
            _, once = np.unique(np.stack([plane, host], axis=1), axis=0, return_index=True)
            plane, group, start, duration = plane[once], group[once], start[once], duration[once]
            keys, inverse = np.unique(np.stack([plane, group], axis=1), axis=0, return_inverse=True)
            k = keys.shape[0]
            inverse = inverse.ravel()
            lo = np.full(k, np.iinfo(np.int64).max, dtype=np.int64)
            hi = np.full(k, np.iinfo(np.int64).min, dtype=np.int64)
            longest = np.zeros(k, dtype=np.int64)
            np.minimum.at(lo, inverse, start)
            np.maximum.at(hi, inverse, start + duration)
            np.maximum.at(longest, inverse, duration)
            count = np.bincount(inverse, minlength=k).astype(np.int64)
            total = np.zeros(k, dtype=np.int64)
            np.add.at(total, inverse, duration)
            parts.append(np.column_stack([keys, lo, hi, count, longest, total]))
        if not parts:
            return {}
        rows = np.concatenate(parts)
        keys, inverse = np.unique(rows[:, :2], axis=0, return_inverse=True)
        inverse = inverse.ravel()
        k = keys.shape[0]
        merged = np.zeros((k, 5), dtype=np.int64)
        merged[:, 0] = np.iinfo(np.int64).max
        merged[:, 1] = np.iinfo(np.int64).min
        np.minimum.at(merged[:, 0], inverse, rows[:, 2])
        np.maximum.at(merged[:, 1], inverse, rows[:, 3])
        np.add.at(merged[:, 2], inverse, rows[:, 4])
        np.maximum.at(merged[:, 3], inverse, rows[:, 5])
        np.add.at(merged[:, 4], inverse, rows[:, 6])
        out: dict[int, tuple[np.ndarray, ...]] = {}
        for p in arrays.unique(keys[:, 0]).tolist():
            sel = keys[:, 0] == p
            out[p] = (keys[sel, 1], *(merged[sel, c] for c in range(5)))
        return out

    def close(self) -> None:
        self._flows.close()
        self._correlations.close()
        self.launches.close()


def _chain(
    flow_id: np.ndarray, value: np.ndarray, start: np.ndarray, event: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(source, destination, category, flow id) of the links between the events of each flow id,
    in time order (see the module docstring)."""
    bits = value.view(np.uint64)
    direction = (bits & np.uint64(3)).astype(np.int64)
    category = (bits >> np.uint64(58)).astype(np.int64)
    rank = np.array([1, 2, 0, 1])[direction]
    order = np.lexsort((rank, start, flow_id))
    ev, fid, category = event[order], flow_id[order], category[order]
    link = np.flatnonzero(fid[1:] == fid[:-1])
    return ev[link], ev[link + 1], category[link], fid[link]
