"""Event stats of an XSpace as named columns, and every event's args as JSON, built in bulk.

Stats reference their name through per-plane stat metadata ids; `StatTable` resolves them once to
global name ids so analyses can pull a column ("hlo_op", "correlation_id", …) with one mask.
`args_json` writes all events' args objects with numpy gathers over fragment tables instead of
one dict and one encode call per event, which would cost more than decoding the whole file.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import msgspec
import numpy as np

from profscope.formats.xplane_decode import BYTES, DOUBLE, INT64, NO_VALUE, REF, STR, UINT64, RawSpace, text

_encode = msgspec.json.Encoder().encode
_GATHER_CHUNK = 1 << 21  # output bytes per ragged-gather step, bounds the index buffer's memory


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


class StatTable:
    """The event stats of a RawSpace with names resolved to ids into `names`."""

    def __init__(self, raw: RawSpace, ev_plane: np.ndarray) -> None:
        self.raw = raw
        self.names: list[str] = []
        self.name_ids: dict[str, int] = {}
        # Planes are contiguous in event order, and stats are grouped by event, so each plane's
        # stats are one slice.
        st_plane = ev_plane[raw.st_event]
        self.row_name = np.full(raw.st_mid.shape[0], -1, dtype=np.int32)
        self.ref_name = np.full(raw.st_mid.shape[0], -1, dtype=np.int32)
        bounds = np.searchsorted(st_plane, np.arange(len(raw.planes) + 1))
        is_ref = raw.st_kind == REF
        for plane in raw.planes:
            lo, hi = int(bounds[plane.index]), int(bounds[plane.index + 1])
            if hi == lo or not plane.stat_names:
                continue
            mids = np.array(sorted(plane.stat_names), dtype=np.int64)
            ids = np.array([self.name_id(plane.stat_names[m]) for m in mids.tolist()], dtype=np.int32)
            self.row_name[lo:hi] = _lookup(mids, ids, raw.st_mid[lo:hi])
            refs = lo + np.flatnonzero(is_ref[lo:hi])
            self.ref_name[refs] = _lookup(mids, ids, raw.st_value[refs].view(np.int64))
        self.unknown_names = int((self.row_name < 0).sum())
        self.unknown_refs = int(((self.ref_name < 0) & is_ref).sum())

    def name_id(self, name: str) -> int:
        nid = self.name_ids.get(name)
        if nid is None:
            nid = self.name_ids[name] = len(self.names)
            self.names.append(name)
        return nid

    def rows(self, *names: str) -> np.ndarray:
        """Stat rows whose name is any of `names` (grouped by event, source order)."""
        ids = [self.name_ids[n] for n in names if n in self.name_ids]
        if not ids:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(np.isin(self.row_name, ids))

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
        raw, data = self.raw, self.raw.data
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

    def args_json(
        self, prefixes: list[bytes], ev_prefix: np.ndarray, stat_rows: np.ndarray, owner: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(offsets[n+1], uint8 blob): each event's args object as JSON, built in bulk.

        Events are numbered 0…n-1 (n = len(ev_prefix)). `prefixes[ev_prefix[e]]` is a ready
        fragment `{"k":v,` (at least one member, trailing comma) that opens event e's object, -1
        for none; `stat_rows` are the stats that follow, `owner` (non-decreasing) their event. An
        event with neither gets no args (empty). Keys are the source's stat names; a name repeated
        within one event gets " (2)", " (3)"… so no value is lost to duplicate keys.
        """
        raw = self.raw
        n_events = ev_prefix.shape[0]
        rows = stat_rows
        kind = raw.st_kind[rows]
        key = self._keys(rows, owner)

        frags: list[bytes] = [b"{"]
        frag_of_prefix = np.array([_add(frags, p) for p in prefixes] or [0], dtype=np.int64)
        numeric = (kind == INT64) | (kind == UINT64) | (kind == DOUBLE)
        num_rows = np.flatnonzero(numeric)
        used_keys = np.unique(key[num_rows])
        key_frag = np.zeros(len(self.names), dtype=np.int64)
        key_frag[used_keys] = [_add(frags, _encode(self.names[k]) + b":") for k in used_keys.tolist()]
        num_key = key_frag[key[num_rows]]

        # Whole `"key":value,` fragments for refs (one per distinct key and target), strings and
        # bytes (one per distinct content) and missing values.
        pair_frag = np.zeros(rows.shape[0], dtype=np.int64)
        refs = np.flatnonzero(kind == REF)
        if refs.shape[0]:
            target = self.ref_name[rows[refs]].astype(np.int64)
            for i in np.flatnonzero(target < 0).tolist():
                target[i] = self.name_id(f"?ref {int(raw.st_value[rows[refs[i]]])}")
            width = len(self.names) + 1
            combos, inverse = np.unique(key[refs] * width + target, return_inverse=True)
            ids = [
                _add(frags, _encode({self.names[c // width]: self.names[c % width]})[1:-1] + b",")
                for c in combos.tolist()
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
                    fid = seen[(k, kd, chunk)] = _add(frags, _encode({self.names[k]: value})[1:-1] + b",")
                pair_frag[i] = fid
        empty = np.flatnonzero(kind == NO_VALUE)
        for k in np.unique(key[empty]).tolist():
            pair_frag[empty[key[empty] == k]] = _add(frags, _encode({self.names[k]: None})[1:-1] + b",")

        pool = b"".join(frags)
        frag_len = np.fromiter(map(len, frags), dtype=np.int64, count=len(frags))
        frag_off = np.zeros(len(frags), dtype=np.int64)
        np.cumsum(frag_len[:-1], out=frag_off[1:])
        num_text, num_off, num_len = _number_text(raw, rows[num_rows], kind[num_rows])
        src = np.frombuffer(pool + num_text, dtype=np.uint8)
        num_off = num_off + len(pool)

        # Piece layout: per event [open] then per stat row [key, number] or [pair].
        row_pieces = np.where(numeric, 2, 1)
        has_rows = np.zeros(n_events, dtype=bool)
        has_rows[owner] = True
        opens = has_rows | (ev_prefix >= 0)
        ev_pieces = opens.astype(np.int64)
        np.add.at(ev_pieces, owner, row_pieces)
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

        # Each row's first piece: its event's first piece, the open piece, then the pieces of
        # the event's earlier rows.
        before = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(row_pieces, out=before[1:])
        first_row_of_owner = np.searchsorted(owner, owner, side="left")
        row_at = ev_first[owner] + 1 + before[:-1] - before[first_row_of_owner]
        at = row_at[num_rows]
        piece_off[at] = frag_off[num_key]
        piece_len[at] = frag_len[num_key]
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

    def _keys(self, rows: np.ndarray, owner: np.ndarray) -> np.ndarray:
        """Args key (id into `names`) of each stat row: its stat name, "stat#<id>" when the
        metadata is missing, with " (2)", " (3)"… for repeats of a name inside one event."""
        raw = self.raw
        key = self.row_name[rows].astype(np.int64)
        lost = np.flatnonzero(key < 0)
        if lost.shape[0]:
            mids, inverse = np.unique(raw.st_mid[rows[lost]], return_inverse=True)
            ids = np.array([self.name_id(f"stat#{m}") for m in mids.tolist()], dtype=np.int64)
            key[lost] = ids[inverse.ravel()]
        rank = _repeat_rank(owner, key)
        repeats = np.flatnonzero(rank > 0)
        if not repeats.shape[0]:
            return key
        labels: dict[tuple[int, int], int] = {}
        for r, k, n in zip(repeats.tolist(), key[repeats].tolist(), rank[repeats].tolist(), strict=True):
            nid = labels.get((k, n))
            if nid is None:
                nid = labels[(k, n)] = self.name_id(f"{self.names[k]} ({n + 1})")
            key[r] = nid
        return key


_MAX_LAG = 32  # events with more stats than this find repeated names by sorting instead


def _repeat_rank(owner: np.ndarray, key: np.ndarray) -> np.ndarray:
    """How many earlier rows of the same event have the same key (`owner` non-decreasing).

    Events hold a few stats each, so comparing every row with the rows 1…L before it is cheaper
    than sorting all rows; an event with more than `_MAX_LAG` stats falls back to the sort.
    """
    n = owner.shape[0]
    rank = np.zeros(n, dtype=np.int64)
    if n < 2:
        return rank
    longest = int(np.bincount(owner - owner[0]).max())
    if longest <= _MAX_LAG:
        for lag in range(1, longest):
            rank[lag:] += (owner[lag:] == owner[:-lag]) & (key[lag:] == key[:-lag])
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


def _lookup(keys: np.ndarray, ids: np.ndarray, query: np.ndarray) -> np.ndarray:
    """ids[i] where keys[i] == query (keys sorted), -1 where the query is not a key."""
    pos = np.searchsorted(keys, query)
    pos_c = np.minimum(pos, keys.shape[0] - 1)
    found = (pos < keys.shape[0]) & (keys[pos_c] == query)
    return np.where(found, ids[pos_c], -1).astype(np.int32)


_POWERS_OF_TEN = np.array([10**k for k in range(20)], dtype=np.uint64)


def _integer_text(values: np.ndarray, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    """Decimal text of 64-bit integers, each followed by a comma: (uint8 text, end offsets).

    Written digit by digit from the right for all numbers at once (one numpy pass per digit
    position over the numbers that still have digits), about 3x faster than str() per number.
    """
    bits = values.view(np.uint64)
    negative = values.view(np.int64) < 0 if signed else np.zeros(values.shape[0], dtype=bool)
    magnitude = np.where(negative, ~bits + np.uint64(1), bits)
    digits = np.maximum(np.searchsorted(_POWERS_OF_TEN, magnitude, side="right"), 1)
    width = digits + negative + 1
    ends = np.cumsum(width)
    text = np.empty(int(ends[-1]) if ends.shape[0] else 0, dtype=np.uint8)
    text[ends - 1] = ord(",")
    text[(ends - width)[negative]] = ord("-")
    last_digit = ends - 2
    live = np.arange(values.shape[0])
    rest = magnitude.copy()
    ten = np.uint64(10)
    for place in range(int(digits.max()) if digits.shape[0] else 0):
        live = live[digits[live] > place]
        chunk = rest[live]
        quotient = chunk // ten
        text[last_digit[live] - place] = (chunk - quotient * ten).astype(np.uint8) + ord("0")
        rest[live] = quotient
    return text, ends


def _number_text(raw: RawSpace, rows: np.ndarray, kind: np.ndarray) -> tuple[bytes, np.ndarray, np.ndarray]:
    """Decimal JSON text of numeric stat rows, each followed by a comma: (text, offset, length)."""
    values = raw.st_value[rows]
    texts: list[bytes] = []
    ends_parts: list[np.ndarray] = []
    order: list[np.ndarray] = []
    base = 0
    for k in (INT64, UINT64, DOUBLE):
        sel = np.flatnonzero(kind == k)
        if not sel.shape[0]:
            continue
        if k == DOUBLE:
            strs = [
                repr(f) + "," if math.isfinite(f) else "null," for f in values[sel].view(np.float64).tolist()
            ]
            chunk = "".join(strs).encode()
            ends = np.cumsum(np.fromiter(map(len, strs), dtype=np.int64, count=len(strs)))
        else:
            array, ends = _integer_text(values[sel], signed=k == INT64)
            chunk = array.tobytes()
        texts.append(chunk)
        ends_parts.append(ends + base)
        order.append(sel)
        base += len(chunk)
    off = np.zeros(rows.shape[0], dtype=np.int64)
    length = np.zeros(rows.shape[0], dtype=np.int64)
    if not texts:
        return b"", off, length
    ends = np.concatenate(ends_parts)
    starts = np.concatenate(([0], ends[:-1]))
    which = np.concatenate(order)
    off[which] = starts
    length[which] = ends - starts
    return b"".join(texts), off, length


def _ragged_gather(src: np.ndarray, piece_off: np.ndarray, piece_len: np.ndarray) -> np.ndarray:
    """Concatenate src[piece_off[i]:piece_off[i]+piece_len[i]] for all i, in bounded chunks.

    The source index of every output byte is built with one cumulative sum: 1 everywhere, and at
    each piece's first byte the jump from the previous piece's last source byte. One index buffer
    is reused for all chunks, so large outputs do not keep faulting in fresh pages.
    """
    total = int(piece_len.sum())
    out = np.empty(total, dtype=np.uint8)
    nonempty = piece_len > 0
    piece_off, piece_len = piece_off[nonempty], piece_len[nonempty]
    if not total:
        return out
    index_type = np.int32 if src.shape[0] < 2**31 - 1 else np.int64
    out_end = np.cumsum(piece_len)
    buffer = np.empty(min(total, _GATHER_CHUNK) + int(piece_len.max()), dtype=index_type)
    lo = 0
    written = 0
    n = piece_len.shape[0]
    while lo < n:
        hi = max(int(np.searchsorted(out_end, written + _GATHER_CHUNK, side="right")), lo + 1)
        lens = piece_len[lo:hi]
        offs = piece_off[lo:hi]
        size = int(out_end[hi - 1]) - written
        idx = buffer[:size]
        idx.fill(1)
        jumps = offs.copy()
        jumps[1:] -= offs[:-1] + lens[:-1] - 1
        idx[out_end[lo:hi] - lens - written] = jumps
        np.cumsum(idx, out=idx)
        out[written : written + size] = src[idx]
        written += size
        lo = hi
    return out
