"""Typed args records: an event's args kept as stat rows, rendered as JSON only when asked.

A reader whose args are typed values (XPlane stats) stores, per event, a binary record instead of
a JSON text, in the same blob, offsets and spill files as JSON records (`TraceBuilder.add_events`
takes either); the trace holds beside them a table of JSON fragments (`Fragments`, the trace's
`args_frag_off`/`args_frag_blob`): `{` and each opening `{"k":v,` of metadata stats, each `"key":`,
and each non-numeric value followed by a comma (`"text",`, `null,`). A record is little-endian
uint32 words:

- empty (0 bytes): no args;
- a typed record: a header word, the fragment id of its opening (`{` or a `{"k":v,` prefix), then
  per stat 12 bytes: a word `key fragment | class << 30` and the 64-bit value: the bits of an
  int64, uint64 or double (class 1, 2, 3), or the id of the value's fragment (class 0);
- a JSON record: the header word RAW_JSON, then the JSON object text (boxes a reader makes itself).

The JSON of a typed record is its opening, then per stat its key and its value text with a comma,
the last comma written over with `}`: the numbers as Python (and msgspec) print them (integers in
decimal, doubles through `repr`, non-finite as null), written in bulk with numpy (`render`):

- integers four digits at a time from a table of "0000"…"9999" into fixed 24-byte rows,
  right-aligned before a comma (`integer_rows`), so each number's text is a slice of its row;
- one ragged gather copies the pieces (fragments, number texts, JSON records) into place
  (`ragged_gather`).

A 22 M event capture with about 5 stats an event takes 4 + 5 · 12 = 64 bytes an event this way,
against about 125 bytes of JSON.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

RAW_JSON = np.uint32(1 << 31)  # header word of a JSON record
KEY_BITS = 30  # key fragment ids below 2**30; the class in the two bits above
FRAGMENT, INT, UINT, DOUBLE = 0, 1, 2, 3  # value classes
HEADER_BYTES = 4
ROW = np.dtype([("word", "<u4"), ("value", "<u8")])  # one stat, packed (12 bytes)
OPEN, NULL = 0, 1  # fragment ids every table starts with: b"{" and b"null,"
_GATHER_CHUNK = 1 << 18  # output bytes per ragged-gather step
_POWERS_OF_TEN = np.array([10**k for k in range(20)], dtype=np.uint64)
# "0000" … "9999" as little-endian uint32, so a row's uint32 columns are its digit groups.
_DIGITS4 = np.frombuffer("".join(f"{i:04d}" for i in range(10_000)).encode(), dtype="<u4")
TEXT_ROW = 24  # bytes per integer row: 20 digit places, the comma, 3 spare
_COMMA = np.uint32(ord(","))
_CLOSE = ord("}")


class Fragments:
    """The fragment table a reader fills while it writes typed records: each distinct fragment once."""

    def __init__(self) -> None:
        self._ids: dict[bytes, int] = {}
        self._parts: list[bytes] = []
        for fixed in (b"{", b"null,"):
            self.add(fixed)

    def add(self, fragment: bytes) -> int:
        fid = self._ids.get(fragment)
        if fid is None:
            fid = self._ids[fragment] = len(self._parts)
            if fid >= 1 << KEY_BITS:
                raise ValueError("more than 2**30 distinct args fragments")
            self._parts.append(fragment)
        return fid

    def get(self, fragment: bytes) -> int | None:
        return self._ids.get(fragment)

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """(int64 offsets[n+1], uint8 blob) of all fragments."""
        off = np.zeros(len(self._parts) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, self._parts), dtype=np.int64, count=len(self._parts)), out=off[1:])
        return off, np.frombuffer(b"".join(self._parts), dtype=np.uint8).copy()


def encode(
    n_records: int,
    opening: np.ndarray,
    owner: np.ndarray,
    key: np.ndarray,
    value_class: np.ndarray,
    value: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(int64 bytes per record, uint8 blob) of `n_records` typed records.

    `opening[r]`: fragment id record r opens with (OPEN for a bare `{`), -1 for a record that
    holds nothing unless it has stats; stat rows (`owner` non-decreasing, their record) give the
    key fragment, value class and 64-bit value of each stat in order.
    """
    per_record = np.bincount(owner, minlength=n_records) if owner.shape[0] else np.zeros(n_records, np.int64)
    has = (per_record > 0) | (opening >= 0)
    # The stat rows as words, in order; each record's header goes in before its first row.
    stats = np.empty((owner.shape[0], 3), dtype="<u4")
    stats[:, 0] = key.astype(np.uint32) | (value_class.astype(np.uint32) << np.uint32(KEY_BITS))
    stats[:, 1:] = value.astype(np.uint64, copy=False).view("<u4").reshape(-1, 2)
    first_row = np.zeros(n_records + 1, dtype=np.int64)
    np.cumsum(per_record, out=first_row[1:])
    heads = np.flatnonzero(has)
    out = np.insert(stats.ravel(), 3 * first_row[heads], np.maximum(opening[heads], OPEN).astype(np.uint32))
    return np.where(has, 4 + ROW.itemsize * per_record, 0).astype(np.int64), out.view(np.uint8)


def encode_json(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """(int64 bytes per record, uint8 blob) of JSON records (an empty text: no args)."""
    header = RAW_JSON.tobytes()
    parts = [header + t if t else b"" for t in texts]
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    return lengths, np.frombuffer(b"".join(parts), dtype=np.uint8)


@dataclasses.dataclass(frozen=True)
class Records:
    """Records data[lo[i]:hi[i]] taken apart: record i is empty, a JSON record (`raw`: its text is
    data[lo[i] + HEADER_BYTES : hi[i]]) or typed, with its `opening` fragment and `count[i]` stat
    rows (`owner`, `key`, `value_class`, `value`, in record order)."""

    raw: np.ndarray  # bool per record
    typed: np.ndarray  # bool per record
    opening: np.ndarray  # int64 per record, -1 unless typed
    count: np.ndarray  # int64 stat rows per record
    owner: np.ndarray  # int64 record of each stat row
    key: np.ndarray  # int64 key fragment
    value_class: np.ndarray  # int64
    value: np.ndarray  # uint64


def decode(data: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Records:
    """The records data[lo[i]:hi[i]] of a typed trace, taken apart (see `Records`)."""
    n = lo.shape[0]
    lo = lo.astype(np.int64, copy=False)
    size = hi.astype(np.int64, copy=False) - lo
    header = np.zeros(n, dtype=np.uint32)
    full = np.flatnonzero(size > 0)
    if full.shape[0]:
        first = lo[full]
        header[full] = (
            data[first].astype(np.uint32)
            | data[first + 1].astype(np.uint32) << 8
            | data[first + 2].astype(np.uint32) << 16
            | data[first + 3].astype(np.uint32) << 24
        )
    raw = (size > 0) & (header >= RAW_JSON)
    typed = (size > 0) & ~raw
    count = np.where(typed, (size - HEADER_BYTES) // ROW.itemsize, 0)
    t = np.flatnonzero(typed)
    rows = np.frombuffer(ragged_gather(data, lo[t] + HEADER_BYTES, size[t] - HEADER_BYTES), dtype=ROW)
    return Records(
        raw=raw,
        typed=typed,
        opening=np.where(typed, header.astype(np.int64), -1),
        count=count,
        owner=np.repeat(np.arange(n, dtype=np.int64), count),
        key=(rows["word"] & np.uint32((1 << KEY_BITS) - 1)).astype(np.int64),
        value_class=(rows["word"] >> np.uint32(KEY_BITS)).astype(np.int64),
        value=rows["value"],
    )


def render(
    data: np.ndarray, lo: np.ndarray, hi: np.ndarray, frag_off: np.ndarray, frag_blob: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(int64 offsets[n+1], uint8 text): the JSON of the records data[lo[i]:hi[i]] of a typed trace."""
    n = lo.shape[0]
    lo = lo.astype(np.int64, copy=False)
    size = hi.astype(np.int64, copy=False) - lo
    records = decode(data, lo, hi)
    raw, typed, per_record, owner = records.raw, records.typed, records.count, records.owner
    key, value_class = records.key, records.value_class
    t = np.flatnonzero(typed)
    numeric = np.flatnonzero(value_class != FRAGMENT)
    num_text, num_off, num_len = _number_text(records.value[numeric], value_class[numeric])

    opening = records.opening[t]
    value_frag = np.where(value_class == FRAGMENT, records.value, NULL).astype(np.int64)
    # Only the fragments these records use are copied out of the table (a memory map, maybe large).
    used = np.unique(np.concatenate((opening, key, value_frag)))
    used_len = frag_off[used + 1] - frag_off[used]
    fragments = ragged_gather(frag_blob, frag_off[used], used_len)
    frag_len = np.zeros(int(used[-1]) + 1 if used.shape[0] else 0, dtype=np.int64)
    frag_at = np.zeros_like(frag_len)
    frag_len[used] = used_len
    frag_at[used] = np.cumsum(used_len) - used_len
    num_base = fragments.shape[0]
    data_base = num_base + num_text.shape[0]
    src = np.concatenate([fragments, num_text, np.asarray(data, dtype=np.uint8)])

    # Pieces: per typed record its opening, then per stat its key and its value; a JSON record one.
    pieces = np.where(typed, 1 + 2 * per_record, raw.astype(np.int64))
    rec_first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(pieces, out=rec_first[1:])
    total = int(rec_first[-1])
    piece_off = np.zeros(total, dtype=np.int64)
    piece_len = np.zeros(total, dtype=np.int64)
    piece_off[rec_first[t]] = frag_at[opening]
    piece_len[rec_first[t]] = frag_len[opening]
    r = np.flatnonzero(raw)
    piece_off[rec_first[r]] = data_base + lo[r] + HEADER_BYTES
    piece_len[rec_first[r]] = size[r] - HEADER_BYTES
    if owner.shape[0]:
        row_first = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(per_record, out=row_first[1:])
        at = rec_first[owner] + 1 + 2 * (np.arange(owner.shape[0], dtype=np.int64) - row_first[owner])
        piece_off[at] = frag_at[key]
        piece_len[at] = frag_len[key]
        piece_off[at + 1] = frag_at[value_frag]
        piece_len[at + 1] = frag_len[value_frag]
        piece_off[at[numeric] + 1] = num_base + num_off
        piece_len[at[numeric] + 1] = num_len

    out = ragged_gather(src, piece_off, piece_len)
    piece_end = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(piece_len, out=piece_end[1:])
    offsets = piece_end[rec_first]
    # A typed record's text ends with the comma of its last member: close it.
    out[offsets[1:][typed] - 1] = _CLOSE
    return offsets, out


def render_one(record: bytes, frag_off: np.ndarray, frag_blob: np.ndarray) -> bytes:
    """The JSON of one record (non-empty) of a typed trace: `render` for one, without its arrays."""
    header = int.from_bytes(record[:HEADER_BYTES], "little")
    if header >= int(RAW_JSON):
        return record[HEADER_BYTES:]

    def fragment(fid: int) -> bytes:
        return np.asarray(frag_blob[int(frag_off[fid]) : int(frag_off[fid + 1])]).tobytes()

    parts = [fragment(header)]
    rows = np.frombuffer(record, dtype=ROW, offset=HEADER_BYTES)
    for word, value in zip(rows["word"].tolist(), rows["value"].tolist(), strict=True):
        parts.append(fragment(word & ((1 << KEY_BITS) - 1)))
        cls = word >> KEY_BITS
        if cls == FRAGMENT:
            parts.append(fragment(value))
        elif cls == UINT:
            parts.append(b"%d," % value)
        elif cls == INT:
            parts.append(b"%d," % (value - (1 << 64) if value >= 1 << 63 else value))
        else:
            parts.append(double_text(float(np.uint64(value).view(np.float64))).encode() + b",")
    text = b"".join(parts)
    return text[:-1] + b"}"


def double_text(number: float) -> str:
    """A double stat's JSON text: as Python (and msgspec) print it, null when not finite."""
    return repr(number) if math.isfinite(number) else "null"


def integer_rows(values: np.ndarray, signed: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, start, length): decimal text of 64-bit integers, each followed by a comma, in
    `TEXT_ROW`-byte rows: number i is rows[i, start[i] : start[i] + length[i]]."""
    bits = values.view(np.uint64)
    negative = values.view(np.int64) < 0 if signed else np.zeros(values.shape[0], dtype=bool)
    magnitude = np.where(negative, ~bits + np.uint64(1), bits)
    digits = np.maximum(np.searchsorted(_POWERS_OF_TEN, magnitude, side="right"), 1)
    words = np.empty((values.shape[0], TEXT_ROW // 4), dtype="<u4")
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


def _number_text(values: np.ndarray, value_class: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(uint8 text, offset, length) of numeric stat values, each followed by a comma."""
    values = np.ascontiguousarray(values, dtype=np.uint64)
    off = np.zeros(values.shape[0], dtype=np.int64)
    length = np.zeros(values.shape[0], dtype=np.int64)
    parts: list[np.ndarray] = []
    base = 0
    for cls in (INT, UINT):
        sel = np.flatnonzero(value_class == cls)
        if sel.shape[0]:
            rows, start, size = integer_rows(values[sel], signed=cls == INT)
            off[sel] = base + np.arange(sel.shape[0], dtype=np.int64) * TEXT_ROW + start
            length[sel] = size
            parts.append(rows.ravel())
            base += rows.size
    sel = np.flatnonzero(value_class == DOUBLE)
    if sel.shape[0]:
        floats = values[sel].view(np.float64)
        # `double_text` in bulk: repr for all, then null for the few non-finite ones.
        strs = list(map(repr, floats.tolist()))
        for i in np.flatnonzero(~np.isfinite(floats)).tolist():
            strs[i] = "null"
        chunk = (",".join(strs) + ",").encode()
        size = np.fromiter(map(len, strs), dtype=np.int64, count=len(strs)) + 1
        off[sel] = base + np.cumsum(size) - size
        length[sel] = size
        parts.append(np.frombuffer(chunk, dtype=np.uint8))
    return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)), off, length


def ragged_gather(src: np.ndarray, piece_off: np.ndarray, piece_len: np.ndarray) -> np.ndarray:
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
