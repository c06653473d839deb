"""XEvents and XStats as protobuf serializers write them, decoded a field per numpy step.

`common.wire.scan` decodes any field order, but pays for it on every step: a tag decode and a
dispatch over every requested field. Serializers write fields in number order, each at most once,
so an XEvent is [08 metadata_id] [10 offset_ps] [18 duration_ps] (22 stat)* and an XStat is
[08 metadata_id] [one value field], any of them missing when zero. These functions read exactly
that layout, with one tag-byte comparison per field, and hand every message that departs from it
(another order, a repeated field, num_occurrences, unknown fields, damage) to `scan`, so the
results are the same as scan's for every input.
"""

from __future__ import annotations

import numpy as np

from profscope.formats.common import wire

_EVENT_FIELDS = {1: wire.VARINT, 2: wire.VARINT, 3: wire.VARINT, 4: wire.LEN, 5: wire.VARINT}
# XStat value tags: (tag byte, kind = field number, how the value is written).
_FIXED, _VARINT, _LEN = 0, 1, 2
_VALUE_TAGS = ((0x11, 2, _FIXED), (0x18, 3, _VARINT), (0x20, 4, _VARINT), (0x2A, 5, _LEN),
               (0x32, 6, _LEN), (0x38, 7, _VARINT))  # fmt: skip


def _optional_varint(
    buf: np.ndarray, windows: np.ndarray, pos: np.ndarray, ends: np.ndarray, good: np.ndarray, tag: int
) -> np.ndarray:
    """The varint field `tag` where it comes next (0 elsewhere); advances `pos`, clears `good`
    where it does not decode."""
    value = np.zeros(pos.shape[0], dtype=np.uint64)
    sel = np.flatnonzero((pos < ends) & (buf[pos] == tag))
    if sel.shape[0]:
        v, p, ok = wire.varints(buf, windows, pos[sel] + 1, ends[sel])
        value[sel] = v
        pos[sel] = p
        good[sel[~ok]] = False
    return value


def events(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(metadata id, offset, duration, broken, aggregated, stat owner, stat start, stat length)
    of the XEvents buf[starts[i]:ends[i]]; stats grouped by event in source order."""
    n = starts.shape[0]
    windows = wire.byte_windows(buf)
    ends = np.minimum(ends, buf.shape[0] - wire.PADDING)
    pos = starts.copy()
    good = np.ones(n, dtype=bool)
    mid = _optional_varint(buf, windows, pos, ends, good, 0x08)
    offset = _optional_varint(buf, windows, pos, ends, good, 0x10)
    duration = _optional_varint(buf, windows, pos, ends, good, 0x18)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []
    count = np.zeros(n, dtype=np.int64)
    active = np.flatnonzero(good & (pos < ends))
    step = 0
    while active.shape[0]:
        p = pos[active]
        is_stat = buf[p] == 0x22
        good[active[~is_stat]] = False
        active, p = active[is_stat], p[is_stat]
        length, q, ok = wire.varints(buf, windows, p + 1, ends[active])
        ok &= length <= (ends[active] - q).astype(np.uint64)
        good[active[~ok]] = False
        active, q, length = active[ok], q[ok], length[ok].astype(np.int64)
        parts.append((active, q, length, step))
        count[active] += 1
        pos[active] = q + length
        active = active[pos[active] < ends[active]]
        step += 1
    slow = np.flatnonzero(~good)
    broken = np.zeros(n, dtype=bool)
    aggregated = np.zeros(n, dtype=bool)
    mid_s, offset_s, duration_s = mid.view(np.int64), offset.view(np.int64), duration.view(np.int64)
    slow_blocks = (np.zeros(0, np.int64),) * 3
    count[slow] = 0
    if slow.shape[0]:
        sc = wire.scan(buf, starts[slow], ends[slow], _EVENT_FIELDS, repeated=(4,))
        mid_s[slow], offset_s[slow], duration_s[slow] = sc.signed(1), sc.signed(2), sc.signed(3)
        broken[slow] = sc.broken
        aggregated[slow] = sc.step[5] > sc.step[2]
        owner, start, length = sc.blocks[4]
        order = np.argsort(owner, kind="stable")
        slow_blocks = (slow[owner[order]], start[order], length[order])
        count[slow] = np.bincount(owner, minlength=slow.shape[0])
    first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(count, out=first[1:])
    total = int(first[-1])
    st_owner = np.empty(total, dtype=np.int64)
    st_start = np.empty(total, dtype=np.int64)
    st_len = np.empty(total, dtype=np.int64)
    for owners, q, length, k in parts:
        keep = good[owners]
        at = first[owners[keep]] + k
        st_owner[at], st_start[at], st_len[at] = owners[keep], q[keep], length[keep]
    if slow.shape[0]:
        owner, start, length = slow_blocks
        # Rank of each block within its event: blocks are grouped by event, in order.
        rank = np.arange(owner.shape[0]) - np.searchsorted(owner, owner, side="left")
        at = first[owner] + rank
        st_owner[at], st_start[at], st_len[at] = owner, start, length
    return mid_s, offset_s, duration_s, broken, aggregated, st_owner, st_start, st_len


def stats(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(metadata id, kind, value, start, length, broken) of the XStats buf[starts[i]:ends[i]]:
    kind is the value's field number (0: none), value the varint, the double's bits or, for
    strings and bytes, their payload start (= start; length their size)."""
    n = starts.shape[0]
    windows = wire.byte_windows(buf)
    ends = np.minimum(ends, buf.shape[0] - wire.PADDING)
    pos = starts.copy()
    good = np.ones(n, dtype=bool)
    mid = _optional_varint(buf, windows, pos, ends, good, 0x08)
    kind = np.zeros(n, dtype=np.int8)
    value = np.zeros(n, dtype=np.uint64)
    vstart = np.zeros(n, dtype=np.int64)
    vlen = np.zeros(n, dtype=np.int64)
    has = pos < ends
    tag = np.where(has, buf[pos], 0)
    good &= ~has | np.isin(tag, [t for t, _, _ in _VALUE_TAGS])
    for tag_byte, number, how in _VALUE_TAGS:
        sel = np.flatnonzero(good & has & (tag == tag_byte))
        if not sel.shape[0]:
            continue
        kind[sel] = number
        p = pos[sel] + 1
        if how == _FIXED:
            fits = p + 8 <= ends[sel]
            value[sel[fits]] = windows[p[fits]]
            good[sel[~fits]] = False
            pos[sel] = p + 8
            continue
        v, q, ok = wire.varints(buf, windows, p, ends[sel])
        if how == _VARINT:
            value[sel] = v
            pos[sel] = q
        else:
            ok &= v <= (ends[sel] - q).astype(np.uint64)
            length = np.where(ok, v, 0).astype(np.int64)
            value[sel] = q.astype(np.uint64)
            vstart[sel], vlen[sel] = q, length
            pos[sel] = q + length
        good[sel[~ok]] = False
    good &= pos == ends
    mid_s = mid.view(np.int64)
    broken = np.zeros(n, dtype=bool)
    slow = np.flatnonzero(~good)
    if slow.shape[0]:
        fields = {1: wire.VARINT, **{number: (wire.I64 if how == _FIXED else wire.LEN if how == _LEN else wire.VARINT)
                                     for _, number, how in _VALUE_TAGS}}  # fmt: skip
        sc = wire.scan(buf, starts[slow], ends[slow], fields, oneof=tuple(k for _, k, _ in _VALUE_TAGS))
        k = sc.which
        v = sc.value[wire.ONEOF]
        blob = (k == 5) | (k == 6)
        mid_s[slow] = sc.signed(1)
        kind[slow] = k
        value[slow] = v
        vstart[slow] = np.where(blob, v.view(np.int64), 0)
        vlen[slow] = np.where(blob, sc.length[wire.ONEOF], 0)
        broken[slow] = sc.broken
    return mid_s, kind, value, vstart, vlen, broken
