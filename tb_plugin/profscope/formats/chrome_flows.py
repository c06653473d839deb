"""Flows of a Chrome trace: host → device links rebuilt from Kineto ids, Chrome flow events.

Kineto tags a kernel launch and the kernel it started with one `correlation` id, and the host and
device annotations of one range with one `External id`; those become flows by joining the ids
(the innermost host event of an id launched it). Kineto's own launch flow events (`ac2g`, legacy
`async`/`launch`) are then redundant and left out. Other Chrome flow events (`s`/`t`/`f`) become
flow points bound by the builder to their enclosing or next slice; flow v2 (`bind_id` with
`flow_out` / `flow_in`) links each source to the next sink in time.
"""

from __future__ import annotations

import numpy as np

from profscope.columns import TraceBuilder
from profscope.formats import chrome_columns as cc
from profscope.formats.chrome_clock import Clock
from profscope.formats.chrome_decode import Damage
from profscope.formats.chrome_events import SimpleEvents
from profscope.formats.chrome_layout import Layout
from profscope.formats.chrome_parts import Parts, column, string_table

# Flow categories Kineto writes for host launch → device work; these are rebuilt from correlation ids.
_LAUNCH_FLOW_CATEGORIES = frozenset({"ac2g"})
_LEGACY_LAUNCH_FLOW = ("async", "launch")


def launch_flows(
    builder: TraceBuilder, ids: Parts, events: SimpleEvents, layout: Layout
) -> tuple[np.ndarray, int]:
    """Host → device flows joined on Kineto ids: launches on correlation ids ("launch"), host →
    device annotations of one range on External ids ("annotation").

    Returns the correlation ids linked (their Kineto flow events are then redundant) and the number
    of annotation flows.
    """
    linked = _join_host_device(builder, ids, events, layout, "corr", "launch")
    annotations = _join_host_device(builder, ids, events, layout, "ext", "annotation")
    return linked, int(annotations.shape[0])


def _join_host_device(
    builder: TraceBuilder, ids: Parts, events: SimpleEvents, layout: Layout, kind: str, flow_name: str
) -> np.ndarray:
    """Link every device event to the host event carrying the same id; returns the linked ids."""
    host_v, host_t, host_i, dev_v, dev_i = [], [], [], [], []
    for p, index, start, keys in zip(ids.parts, events.index, events.start, events.track):
        event_parts, value_parts = getattr(p, f"{kind}_event"), getattr(p, f"{kind}_value")
        if not event_parts:
            continue
        local = np.concatenate(event_parts)
        values = np.concatenate(value_parts)
        builder_index = index[local]
        ok = builder_index >= 0
        local, values, builder_index = local[ok], values[ok], builder_index[ok]
        on_device = layout.device_key[keys[local]]
        host_v.append(values[~on_device])
        host_t.append(start[local[~on_device]])
        host_i.append(builder_index[~on_device])
        dev_v.append(values[on_device])
        dev_i.append(builder_index[on_device])
    if not host_v:
        return np.zeros(0, bytes)
    hv, ht, hi = np.concatenate(host_v), np.concatenate(host_t), np.concatenate(host_i)
    dv, di = np.concatenate(dev_v), np.concatenate(dev_i)
    if not hv.shape[0] or not dv.shape[0]:
        return np.zeros(0, bytes)
    hv, dv = _comparable_ids(hv, dv)
    # Several host events may share an id (a runtime call and the driver call inside it): sorted
    # by (id, start), the last of a run is the innermost, the one that launched.
    order = np.lexsort((ht, hv))
    hv, hi = hv[order], hi[order]
    pos = np.searchsorted(hv, dv, side="right") - 1
    found = (pos >= 0) & (hv[np.maximum(pos, 0)] == dv)
    builder.add_flows(hi[pos[found]], di[found], builder.intern(flow_name))
    return np.unique(dv[found])


def flow_points(
    builder: TraceBuilder, ids: Parts, clock: Clock, layout: Layout, linked: np.ndarray, damage: Damage
) -> None:
    """Chrome flow events (s/t/f), except Kineto launch flows already rebuilt from correlations.

    The points of all parts are considered together: a flow may start before the split offset of
    a two-process read and end after it.
    """
    columns: list[tuple[np.ndarray, ...]] = []
    for p, smap, kmap in zip(ids.parts, ids.smaps, ids.kmaps):
        if not p.flow["us"]:
            continue
        ts, ok = clock.to_ps(column(p.flow, "us", np.int64), column(p.flow, "frac", np.int32))
        dropped = int((~ok).sum())
        if dropped:
            damage.skipped["flow events more than 25 days away from the rest of the trace"] += dropped
        columns.append(
            (
                ok,
                ts,
                layout.track_of_key[kmap[column(p.flow, "track", np.int32)]],
                smap[column(p.flow, "name", np.int32)],
                smap[column(p.flow, "cat", np.int32)],
                column(p.flow, "id", bytes),
                column(p.flow, "phase", np.int8),
                column(p.flow, "next", bool),
            )
        )
    if not columns:
        return
    ok, ts, track, name, cat, ident, phase, bind_next = (np.concatenate(c) for c in zip(*columns))
    if linked.shape[0]:
        ids_known = builder.string_ids
        launch_cats = [ids_known[c] for c in _LAUNCH_FLOW_CATEGORIES if c in ids_known]
        is_launch = string_table(len(ids_known), launch_cats)[cat]
        legacy_cat, legacy_name = (ids_known.get(x, -1) for x in _LEGACY_LAUNCH_FLOW)
        is_launch |= (cat == legacy_cat) & (name == legacy_name)
        ok &= ~(is_launch & _member(ident, linked))
    # A flow is identified by (category, name, id). An id seen once cannot link anything: count
    # it here instead of binding it.
    sel = np.flatnonzero(ok)
    flow = _flow_ids(cat[sel].astype(np.int64) << 32 | name[sel], ident[sel])
    single = np.bincount(flow)[flow] == 1 if flow.shape[0] else np.zeros(0, bool)
    if single.any():
        damage.skipped["flow with a single endpoint"] += int(single.sum())
    sel, flow = sel[~single], flow[~single]
    if sel.shape[0]:
        builder.add_flow_points(flow, name[sel], phase[sel], track[sel], ts[sel], bind_next[sel])


def _comparable_ids(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Digit-string ids as uint64 when they all fit (sorting numbers is much faster), else as
    byte strings of one width."""
    width = max(a.dtype.itemsize, b.dtype.itemsize)
    if width <= 19:  # below 10**19 < 2**64; the id patterns capture digits only
        return a.astype(np.uint64), b.astype(np.uint64)
    return a.astype(f"S{width}"), b.astype(f"S{width}")


def _member(values: np.ndarray, members: np.ndarray) -> np.ndarray:
    """values ∈ members, compared as texts: `values` are byte strings, `members` sorted byte
    strings or sorted numbers (uint64) that stand for their decimal text without leading zeros."""
    if members.dtype.kind == "u":
        # Only a text written the way a number prints can equal one: compare those as numbers.
        decimal, number = _decimal_numbers(values)
        found = np.zeros(values.shape[0], bool)
        if members.shape[0] and decimal.any():
            number = number[decimal]
            at = np.minimum(np.searchsorted(members, number), members.shape[0] - 1)
            found[decimal] = members[at] == number
        return found
    width = max(values.dtype.itemsize, members.dtype.itemsize)
    values, members = values.astype(f"S{width}"), np.sort(members.astype(f"S{width}"))
    pos = np.minimum(np.searchsorted(members, values), members.shape[0] - 1)
    return members[pos] == values


def _decimal_numbers(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mask, uint64 value) of the byte strings that are a number below 10**19 written in decimal
    without leading zeros ("0", "17"); value 0 where the mask is False."""
    n, width = values.shape[0], values.dtype.itemsize
    number = np.zeros(n, np.uint64)
    if n == 0 or width == 0:
        return np.zeros(n, bool), number
    chars = np.ascontiguousarray(values).view(np.uint8).reshape(n, width)
    digit = chars - np.uint8(ord("0"))  # wraps for bytes below "0"
    length = (chars != 0).sum(axis=1)
    ok = (length > 0) & (length <= 19) & ((chars[:, 0] != ord("0")) | (length == 1))
    for k in range(width):  # digits exactly up to the length, then only the NUL padding
        inside = k < length
        ok &= (digit[:, k] <= 9) == inside
        number = np.where(inside, number * np.uint64(10) + digit[:, k], number)
    number[~ok] = 0
    return ok, number


def _flow_ids(kind: np.ndarray, ident: np.ndarray) -> np.ndarray:
    """Dense id per flow point, equal for points with the same (kind, id)."""
    n = kind.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort((ident, kind))
    k, i = kind[order], ident[order]
    new = np.concatenate(([True], (k[1:] != k[:-1]) | (i[1:] != i[:-1])))
    flow = np.empty(n, np.int64)
    flow[order] = np.cumsum(new) - 1
    return flow


def bind_flows(
    builder: TraceBuilder,
    parts: list[cc.ColumnCollector],
    events: SimpleEvents,
    begin_end: tuple[list[np.ndarray], list[np.ndarray]],
    damage: Damage,
) -> None:
    """Flow v2 (`bind_id` with `flow_out` / `flow_in`): link each source to the next sink in time."""
    points: dict[bytes, list[tuple[int, int, bool, bool]]] = {}
    for part_no, p in enumerate(parts):
        for kind, local, ident, flow_in, flow_out in p.binds:
            if kind == "ev":
                index = int(events.index[part_no][local])
                start = int(events.start[part_no][local])
            else:
                index = int(begin_end[0][part_no][local])
                start = int(begin_end[1][part_no][local])
            if index < 0:
                continue
            points.setdefault(ident, []).append((start, index, flow_in, flow_out))
    if not points:
        return
    name = builder.intern("flow")
    unmatched = 0
    for chain in points.values():
        chain.sort()
        for k, (_, src, _, out) in enumerate(chain):
            if not out:
                continue
            dst = next((c[1] for c in chain[k + 1 :] if c[2]), None)
            if dst is None:
                unmatched += 1
            else:
                builder.add_flow(src, dst, name)
    if unmatched:
        damage.skipped["flow_out events with no later flow_in"] += unmatched
