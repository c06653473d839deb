"""Every event's args object as JSON, for a batch of events at once.

An event's args are `{` + its metadata's members (a ready prefix) + one `"key":value,` per event
stat + the closing `}` written over the last comma. The text is assembled from pieces with numpy
instead of one dict and one encode call per event, which would cost more than decoding the file:

- fragments made once per distinct thing: the prefixes, `"key":` of numeric stats, whole
  `"key":value,` pairs for refs (per key and target), strings and bytes (per content) and stats
  without a value;
- numbers written in bulk: integers four digits at a time from a table of "0000"…"9999" into
  fixed 24-byte rows, right-aligned before a comma (`_integer_rows`), so each number's text is a
  slice of its row; doubles through `repr`, as Python (and msgspec) print them, non-finite as null;
- one ragged gather copies the pieces into place (`_ragged_gather`).

Keys are the source's stat names ("stat#<id>" when the metadata is missing); a name repeated within
one event gets " (2)", " (3)"… so no value is lost to duplicate keys.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profscope.formats.xplane.decode import BYTES, DOUBLE, INT64, NO_VALUE, REF, STR, UINT64, text
from profscope.formats.xplane.stats import StatTable, bytes_text
from profscope.model import arrays

_encode = msgspec.json.Encoder().encode
_GATHER_CHUNK = 1 << 18  # output bytes per ragged-gather step
_MAX_LAG = 32  # events with more stats than this find repeated names by sorting instead
_POWERS_OF_TEN = np.array([10**k for k in range(20)], dtype=np.uint64)
# "0000" … "9999" as little-endian uint32, so a row's uint32 columns are its digit groups.
_DIGITS4 = np.frombuffer("".join(f"{i:04d}" for i in range(10_000)).encode(), dtype="<u4")
_ROW = 24  # bytes per integer row: 20 digit places, the comma, 3 spare
_COMMA = np.uint32(ord(","))


def args_json(
    table: StatTable, prefixes: list[bytes], ev_prefix: np.ndarray, stat_rows: np.ndarray, owner: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(offsets[n+1], uint8 blob): each event's args object as JSON.

    Events are numbered 0…n-1 (n = len(ev_prefix)). `prefixes[ev_prefix[e]]` is a ready fragment
    `{"k":v,` (at least one member, trailing comma) that opens event e's object, -1 for none;
    `stat_rows` (rows of `table`) are the stats that follow, `owner` (non-decreasing) their event.
    An event with neither gets no args (empty).
    """
    raw = table.raw
    names = table.names
    n_events = ev_prefix.shape[0]
    rows = stat_rows
    kind = raw.st_kind[rows]
    first_row = _group_first(owner)
    key = _keys(table, rows, owner, first_row)

    frags: list[bytes] = [b"{"]
    used_prefixes = arrays.unique(ev_prefix[ev_prefix >= 0])
    frag_of_prefix = np.zeros(len(prefixes) + 1, dtype=np.int64)
    frag_of_prefix[used_prefixes] = [_add(frags, prefixes[p]) for p in used_prefixes.tolist()]
    numeric = (kind == INT64) | (kind == UINT64) | (kind == DOUBLE)
    num_rows = np.flatnonzero(numeric)
    used = np.zeros(len(names), dtype=bool)
    used[key[num_rows]] = True
    used_keys = np.flatnonzero(used)
    key_frag = np.zeros(len(names), dtype=np.int64)
    key_frag[used_keys] = [_add(frags, _encode(names[k]) + b":") for k in used_keys.tolist()]

    # Whole `"key":value,` fragments for refs (one per distinct key and target), strings and
    # bytes (one per distinct content) and missing values.
    pair_frag = np.zeros(rows.shape[0], dtype=np.int64)
    refs = np.flatnonzero(kind == REF)
    if refs.shape[0]:
        target = table.ref_name[rows[refs]].astype(np.int64)
        for i in np.flatnonzero(target < 0).tolist():
            target[i] = table.name_id(f"?ref {int(raw.st_value[rows[refs[i]]])}")
        width = len(names) + 1
        combos, inverse = np.unique(key[refs] * width + target, return_inverse=True)
        ids = [
            _add(frags, _encode({names[c // width]: names[c % width]})[1:-1] + b",") for c in combos.tolist()
        ]
        pair_frag[refs] = np.asarray(ids, dtype=np.int64)[inverse.ravel()]
    blobs = np.flatnonzero((kind == STR) | (kind == BYTES))
    if blobs.shape[0]:
        data = raw.data
        seen: dict[tuple[int, int, bytes], int] = {}
        for i, k, kd, start, length in zip(
            blobs.tolist(),
            key[blobs].tolist(),
            kind[blobs].tolist(),
            raw.st_start[rows[blobs]].tolist(),
            raw.st_len[rows[blobs]].tolist(),
            strict=True,
        ):
            chunk = data[start : start + length]
            fid = seen.get((k, kd, chunk))
            if fid is None:
                value = text(chunk) if kd == STR else bytes_text(chunk)
                fid = seen[(k, kd, chunk)] = _add(frags, _encode({names[k]: value})[1:-1] + b",")
            pair_frag[i] = fid
    empty = np.flatnonzero(kind == NO_VALUE)
    for k in arrays.unique(key[empty]).tolist():
        pair_frag[empty[key[empty] == k]] = _add(frags, _encode({names[k]: None})[1:-1] + b",")

    pool = b"".join(frags)
    frag_len = np.fromiter(map(len, frags), dtype=np.int64, count=len(frags))
    frag_off = np.zeros(len(frags), dtype=np.int64)
    np.cumsum(frag_len[:-1], out=frag_off[1:])
    num_text, num_off, num_len = _number_text(raw.st_value[rows[num_rows]], kind[num_rows])
    src = np.concatenate([np.frombuffer(pool, dtype=np.uint8), num_text])
    num_off += len(pool)

    # Piece layout: per event [open] then per stat row [key, number] or [pair].
    row_pieces = numeric.astype(np.int64) + 1
    per_event = np.bincount(owner, minlength=n_events)
    opens = (per_event > 0) | (ev_prefix >= 0)
    ev_pieces = opens + per_event + np.bincount(owner[num_rows], minlength=n_events)
    ev_first = np.zeros(n_events + 1, dtype=np.int64)
    np.cumsum(ev_pieces, out=ev_first[1:])
    total = int(ev_first[-1])
    piece_off = np.zeros(total, dtype=np.int64)
    piece_len = np.zeros(total, dtype=np.int64)

    open_events = np.flatnonzero(opens)
    prefix = ev_prefix[open_events]
    open_frag = np.where(prefix >= 0, frag_of_prefix[np.maximum(prefix, 0)], 0)
    piece_off[ev_first[open_events]] = frag_off[open_frag]
    piece_len[ev_first[open_events]] = frag_len[open_frag]

    # Each row's first piece: its event's first piece, the open piece, then the pieces of the
    # event's earlier rows.
    before = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(row_pieces, out=before[1:])
    row_at = ev_first[owner] + 1 + before[:-1] - before[first_row]
    at = row_at[num_rows]
    piece_off[at] = frag_off[key_frag[key[num_rows]]]
    piece_len[at] = frag_len[key_frag[key[num_rows]]]
    piece_off[at + 1] = num_off
    piece_len[at + 1] = num_len
    pairs = np.flatnonzero(~numeric)
    at = row_at[pairs]
    piece_off[at] = frag_off[pair_frag[pairs]]
    piece_len[at] = frag_len[pair_frag[pairs]]

    out = _ragged_gather(src, piece_off, piece_len)
    piece_end = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(piece_len, out=piece_end[1:])
    ev_bytes = piece_end[ev_first[1:]] - piece_end[ev_first[:-1]]
    offsets = np.zeros(n_events + 1, dtype=np.int64)
    np.cumsum(ev_bytes, out=offsets[1:])
    # Every object was written with a trailing comma: close it.
    out[offsets[1:][ev_bytes > 0] - 1] = ord("}")
    return offsets, out


def _group_first(owner: np.ndarray) -> np.ndarray:
    """Per row, the index of the first row with the same owner (`owner` non-decreasing)."""
    n = owner.shape[0]
    if not n:
        return np.zeros(0, dtype=np.int64)
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = owner[1:] != owner[:-1]
    return np.maximum.accumulate(np.where(new_group, np.arange(n), 0))


def _keys(table: StatTable, rows: np.ndarray, owner: np.ndarray, first_row: np.ndarray) -> np.ndarray:
    """Args key (id into `names`) of each stat row: its stat name, "stat#<id>" when the metadata
    is missing, with " (2)", " (3)"… for repeats of a name inside one event."""
    raw = table.raw
    key = table.row_name[rows].astype(np.int64)
    lost = np.flatnonzero(key < 0)
    if lost.shape[0]:
        mids, inverse = np.unique(raw.st_mid[rows[lost]], return_inverse=True)
        ids = np.array([table.name_id(f"stat#{m}") for m in mids.tolist()], dtype=np.int64)
        key[lost] = ids[inverse.ravel()]
    rank = _repeat_rank(owner, key, first_row)
    repeats = np.flatnonzero(rank > 0)
    if not repeats.shape[0]:
        return key
    # Some producers repeat a name on every event (JAX's `_src`): label each (key, rank) once.
    width = int(rank.max()) + 1
    combos, inverse = np.unique(key[repeats] * width + rank[repeats], return_inverse=True)
    labels = [table.name_id(f"{table.names[c // width]} ({c % width + 1})") for c in combos.tolist()]
    key[repeats] = np.asarray(labels, dtype=np.int64)[inverse.ravel()]
    return key


def _repeat_rank(owner: np.ndarray, key: np.ndarray, first_row: np.ndarray) -> np.ndarray:
    """How many earlier rows of the same event have the same key (`owner` non-decreasing,
    `first_row` the first row of each row's event).

    Events hold a few stats each, so comparing each row with the rows 1…L before it in its event
    (only rows at least L into their event take part at lag L) is cheaper than sorting all rows;
    an event with more than `_MAX_LAG` stats falls back to the sort.
    """
    n = owner.shape[0]
    rank = np.zeros(n, dtype=np.int64)
    if n < 2:
        return rank
    place = np.arange(n) - first_row
    if int(place.max()) < _MAX_LAG:
        rows = np.flatnonzero(place >= 1)
        lag = 1
        while rows.shape[0]:
            rank[rows] += key[rows] == key[rows - lag]
            lag += 1
            rows = rows[place[rows] >= lag]
        return rank
    combined = owner.astype(np.int64) * (int(key.max()) + 1) + key
    order = np.argsort(combined, kind="stable")
    grouped = combined[order]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = grouped[1:] != grouped[:-1]
    group_start = np.flatnonzero(new_group)
    rank[order] = np.arange(n) - group_start[np.cumsum(new_group) - 1]
    return rank


def _add(frags: list[bytes], frag: bytes) -> int:
    frags.append(frag)
    return len(frags) - 1


def _integer_rows(values: np.ndarray, signed: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, start, length): decimal text of 64-bit integers, each followed by a comma, in
    `_ROW`-byte rows: number i is rows[i, start[i] : start[i] + length[i]]."""
    bits = values.view(np.uint64)
    negative = values.view(np.int64) < 0 if signed else np.zeros(values.shape[0], dtype=bool)
    magnitude = np.where(negative, ~bits + np.uint64(1), bits)
    digits = np.maximum(np.searchsorted(_POWERS_OF_TEN, magnitude, side="right"), 1)
    words = np.empty((values.shape[0], _ROW // 4), dtype="<u4")
    words[:, 5] = _COMMA
    rest = magnitude
    group = np.uint64(10_000)
    for column in range(4, -1, -1):
        quotient = rest // group
        words[:, column] = _DIGITS4[(rest - quotient * group).astype(np.intp)]
        rest = quotient
    rows = words.view(np.uint8)
    start = 20 - digits - negative
    rows[np.flatnonzero(negative), start[negative]] = ord("-")
    return rows, start, digits + negative + 1


def _number_text(values: np.ndarray, kind: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(uint8 text, offset, length) of numeric stat values, each followed by a comma."""
    off = np.zeros(values.shape[0], dtype=np.int64)
    length = np.zeros(values.shape[0], dtype=np.int64)
    parts: list[np.ndarray] = []
    base = 0
    for k in (INT64, UINT64):
        sel = np.flatnonzero(kind == k)
        if sel.shape[0]:
            rows, start, size = _integer_rows(values[sel], signed=k == INT64)
            off[sel] = base + np.arange(sel.shape[0], dtype=np.int64) * _ROW + start
            length[sel] = size
            parts.append(rows.ravel())
            base += rows.size
    sel = np.flatnonzero(kind == DOUBLE)
    if sel.shape[0]:
        floats = values[sel].view(np.float64)
        strs = list(map(repr, floats.tolist()))
        for i in np.flatnonzero(~np.isfinite(floats)).tolist():
            strs[i] = "null"
        chunk = (",".join(strs) + ",").encode()
        size = np.fromiter(map(len, strs), dtype=np.int64, count=len(strs)) + 1
        off[sel] = base + np.cumsum(size) - size
        length[sel] = size
        parts.append(np.frombuffer(chunk, dtype=np.uint8))
    return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)), off, length


def _ragged_gather(src: np.ndarray, piece_off: np.ndarray, piece_len: np.ndarray) -> np.ndarray:
    """Concatenate src[piece_off[i]:piece_off[i]+piece_len[i]] for all i, in chunks.

    The source index of every output byte is built with one cumulative sum: 1 everywhere, and at
    each piece's first byte the jump from the previous piece's last source byte. Chunks of a few
    hundred kB keep the index buffer in cache; it is reused for all of them.
    """
    total = int(piece_len.sum())
    out = np.empty(total, dtype=np.uint8)
    nonempty = piece_len > 0
    piece_off, piece_len = piece_off[nonempty], piece_len[nonempty]
    if not total:
        return out
    index_type = np.int32 if src.shape[0] < 2**31 - 1 else np.int64
    out_end = np.cumsum(piece_len)
    out_start = out_end - piece_len
    jumps = piece_off.copy()
    jumps[1:] -= piece_off[:-1] + piece_len[:-1] - 1
    buffer = np.empty(min(total, _GATHER_CHUNK) + int(piece_len.max()), dtype=index_type)
    lo = 0
    written = 0
    n = piece_len.shape[0]
    while lo < n:
        hi = max(int(np.searchsorted(out_end, written + _GATHER_CHUNK, side="right")), lo + 1)
        size = int(out_end[hi - 1]) - written
        idx = buffer[:size]
        idx.fill(1)
        idx[out_start[lo:hi] - written] = jumps[lo:hi]
        idx[0] = piece_off[lo]
        np.cumsum(idx, out=idx)
        np.take(src, idx, out=out[written : written + size])
        written += size
        lo = hi
    return out
