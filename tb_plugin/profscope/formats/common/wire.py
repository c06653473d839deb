"""Protobuf wire-format decoding for XPlane files, in bulk and without the protobuf runtime.

Why not a generated or descriptor-built protobuf class: reading a column out of parsed messages costs
about a microsecond of Python per event (attribute access on every XEvent and XStat), which is most of
a second for a few hundred thousand events, and generated code ties us to one protobuf major version.
Instead the few top-level messages (XSpace, XPlane, XLine) are walked in Python and the many small
ones (XEvent, XStat, metadata entries) are decoded all at once by `scan`, which advances one field of
every message per numpy step. Damage is contained: a broken message is flagged, the rest still loads.
"""

from __future__ import annotations

import array
import dataclasses
from collections.abc import Iterator

import numpy as np

VARINT, I64, LEN, I32 = 0, 1, 2, 5
ONEOF = 0  # Scan slot shared by the members of a oneof (field numbers start at 1)
_MAX_VARINT_BYTES = 10


class WireError(ValueError):
    """The bytes do not follow the protobuf wire format at some point (truncation, bad tag…)."""


def encode_varint(value: int) -> bytes:
    """The varint encoding of the non-negative `value` (what `read_varint` reads back)."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if not value:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def read_varint(data: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) of the varint at `pos`; raises WireError past `end` or after 10 bytes."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise WireError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 7 * _MAX_VARINT_BYTES:
            raise WireError("varint longer than 10 bytes")


def as_int64(value: int) -> int:
    """Reinterpret a decoded 64-bit varint as the signed int64 protobuf means for int64 fields."""
    return value - (1 << 64) if value >= 1 << 63 else value


class TruncatedField(WireError):
    """A length-delimited field declares more bytes than its enclosing message has left."""

    def __init__(self, number: int, payload: int, declared: int, available: int) -> None:
        super().__init__(f"field {number} declares {declared} bytes but only {available} remain")
        self.number = number
        self.payload = payload
        self.declared = declared
        self.available = available


def iter_fields(data: bytes | memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """Yield (field number, wire type, a, b) for each field of the message in data[start:end].

    VARINT: a = value, b = next position. LEN: payload is data[a:b]. I64 / I32: the fixed bytes are
    data[a:b]. Raises WireError where the bytes stop making sense; fields before that were yielded.
    A LEN field that claims more bytes than remain raises with its payload start in `.args[1]`, so a
    caller can salvage a truncated container message.
    """
    pos = start
    while pos < end:
        tag, pos = read_varint(data, pos, end)
        number, wtype = tag >> 3, tag & 7
        if number == 0:
            raise WireError("field number 0")
        if wtype == VARINT:
            value, pos = read_varint(data, pos, end)
            yield number, VARINT, value, pos
        elif wtype == LEN:
            length, payload = read_varint(data, pos, end)
            stop = payload + length
            if stop > end:
                raise TruncatedField(number, payload, length, end - payload)
            pos = stop
            yield number, LEN, payload, stop
        elif wtype == I64:
            if pos + 8 > end:
                raise WireError("truncated 64-bit field")
            yield number, I64, pos, pos + 8
            pos += 8
        elif wtype == I32:
            if pos + 4 > end:
                raise WireError("truncated 32-bit field")
            yield number, I32, pos, pos + 4
            pos += 4
        else:
            raise WireError(f"wire type {wtype} (groups or invalid) in field {number}")


@dataclasses.dataclass
class LineRecord:
    """The scalar fields of one XLine, where its unusual event records are, and its damage.

    The usual event records (a 0x22 tag byte: field 4, LEN) are collected by `walk_line_part`
    into an int64 array per window, for `event_ranges` to decode their length prefixes in bulk; events
    written any other way are listed here as file payload ranges in `other_events`.
    """

    id: int = 0
    name: bytes = b""
    display_name: bytes = b""
    display_id: int = 0
    timestamp_ns: int = 0
    duration_ps: int = 0
    other_events: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    damage: str | None = None


# Runs of event records with this many bytes or more left in the window are first walked in bulk
# (`_chained_records`). After a bulk walk that kept GUESS_MIN_RECORDS records or more, the careful
# loop walks the record it stopped at and the next one (which the bulk walk missed), then the bulk
# walk goes on; after one that kept fewer, the bulk walk is tried again only after as many records
# walked carefully, twice as many after each such walk in a row (up to _MAX_BACKOFF): a run the
# bulk walk does not fit costs little more than the careful loop.
GUESS_MIN_BYTES = 4096
GUESS_MIN_RECORDS = 256
_MAX_BACKOFF = 1 << 16
_FIRST_BLOCK = 1 << 14  # bytes looked at by a bulk walk's first step, doubled at each next one
_GUESS_BLOCK = 1 << 18  # up to this many
_LOOKAHEAD = 16  # bytes past a candidate's tag that a bulk step reads


def _chained_records(data: bytes | memoryview, pos: int, stop: int, records: array.array[int]) -> int:
    """Walk the event records from `pos` (one, whose length byte lies before `stop`) in bulk,
    block by block; returns where the careful loop goes on from, having added the records before.

    Serializers write an XEvent's fields in number order, so a record usually starts `0x22 <length>
    0x08 <metadata id> 0x10 <offset>`; a stat record starts the same up to its id, then never 0x10
    (field 2 of XStat is a double). Such starts (one-byte length and id, or one of them of two
    bytes) are the candidates, found with whole-block comparisons; one that no candidate's length
    leads to (bytes inside a payload) is dropped. The candidates are then kept from `pos` for as long
    as each one's length leads exactly to the next: by induction those are the records the careful
    loop steps through, whatever the guess missed or took wrongly, which only shortens the run
    kept. The careful loop goes on from the first record whose successor was not the next
    candidate, or from the last candidate of the last block (its length is checked there)."""
    view = np.frombuffer(data, np.uint8)
    limit = stop - _LOOKAHEAD
    at = pos
    size = min(_FIRST_BLOCK, _GUESS_BLOCK)
    while at < limit:
        n = min(size, limit - at)
        block = view[at : at + n + _LOOKAHEAD]
        is_id_tag = block[: n + 3] == 0x08
        is_offset_tag = block[4 : n + 5] == 0x10
        is_long = block[1 : n + 4] >= 0x80  # at k: byte k + 1 continues a varint
        # Length and id of one byte each: 0x08 two bytes on, 0x10 four on.
        start = is_id_tag[2 : n + 2] & is_offset_tag[:n]
        # Either of two bytes: 0x10 five on, after the id of two bytes or the length of two.
        start |= is_offset_tag[1 : n + 1] & (
            (is_id_tag[2 : n + 2] & is_long[2 : n + 2] & ~is_long[:n]) | (is_id_tag[3 : n + 3] & is_long[:n])
        )
        start &= block[:n] == 0x22
        cand = np.flatnonzero(start)
        if not cand.shape[0] or cand[0] != 0:
            return at
        first = block[cand + 1].astype(np.int64)
        two = first >= 0x80
        after = cand + 2 + first
        if two.any():
            second = block[cand + 2].astype(np.int64)
            after[two] = (cand + 3 + ((first & 0x7F) | (second << 7)))[two]
            after[two & (second >= 0x80)] = -1  # a longer length: never a candidate's start
        reached = np.zeros(n + 2 * _LOOKAHEAD, dtype=bool)
        reached[np.minimum(after, n + _LOOKAHEAD)] = True
        reached[0] = True
        keep = reached[cand]
        if not keep.all():
            cand, after = cand[keep], after[keep]
        broken = np.flatnonzero(after[:-1] != cand[1:])
        kept = int(broken[0]) if broken.shape[0] else cand.shape[0] - 1
        records.frombytes((cand[:kept] + at).tobytes())
        if broken.shape[0] or not kept:
            return at + int(cand[kept])
        at += int(cand[kept])
        size = min(2 * size, _GUESS_BLOCK)
    return at


def walk_line_part(
    data: bytes | memoryview,
    base: int,
    pos: int,
    end: int,
    whole: bool,
    line: LineRecord,
    records: array.array[int],
) -> tuple[int, bool]:
    """Walk an XLine's fields from `pos` within a window of the file; returns (pos, done).

    `data` holds the file bytes from offset `base` on and positions are relative to it; `end`
    is the line's end, possibly past the window. Event records go to `records` (window
    positions, int64), header fields and damage to `line`. Events dominate a line, so a run of
    them is stepped through by a tight loop that only jumps from record to record (one- and
    two-byte lengths inline), a long run first in bulk by `_chained_records`; everything else goes
    through the general field reader. When the window ends before the next record or field
    does, the walk stops there (done False) for the caller to go on from `pos` with the next
    window; `whole` says the window reaches the end of the file, so running past it is damage.
    On damage the events before it are kept.
    """
    add = records.append
    size = len(data)
    soft_end = min(end, size)
    in_run = False
    wait, backoff = 0, GUESS_MIN_RECORDS  # records to walk carefully before the next bulk walk
    field_start = pos
    try:
        while pos < end:
            field_start = pos
            if data[pos] == 0x22:
                in_run = True
                while True:
                    if wait <= 0 and soft_end - pos >= GUESS_MIN_BYTES:
                        before = len(records)
                        pos = _chained_records(data, pos, soft_end, records)
                        if len(records) - before >= GUESS_MIN_RECORDS:
                            wait, backoff = 2, GUESS_MIN_RECORDS
                        else:
                            wait, backoff = backoff, min(2 * backoff, _MAX_BACKOFF)
                    wait -= 1
                    add(pos)
                    first = data[pos + 1]
                    if first < 0x80:
                        pos += 2 + first
                    else:
                        second = data[pos + 2]
                        if second < 0x80:
                            pos += 3 + ((first & 0x7F) | (second << 7))
                        else:
                            length, payload = read_varint(data, pos + 1, end)
                            pos = payload + length
                    if pos >= soft_end or data[pos] != 0x22:
                        break
                in_run = False
                if pos > end:
                    record = records.pop()
                    raise WireError(f"event at byte {base + record} runs past the end of its line")
                if pos > size:
                    return records.pop(), False
                if pos == size and pos < end:
                    return pos, False
                continue
            tag, pos = read_varint(data, pos, end)
            number, wtype = tag >> 3, tag & 7
            if wtype == VARINT:
                value, pos = read_varint(data, pos, end)
                if number == 1:
                    line.id = as_int64(value)
                elif number == 3:
                    line.timestamp_ns = as_int64(value)
                elif number == 9:
                    line.duration_ps = as_int64(value)
                elif number == 10:
                    line.display_id = as_int64(value)
            elif wtype == LEN:
                length, payload = read_varint(data, pos, end)
                stop = payload + length
                if stop > end:
                    raise TruncatedField(number, base + payload, length, end - payload)
                if number in (2, 11):
                    if stop > size:
                        return field_start, False
                    if number == 2:
                        line.name = bytes(data[payload:stop])
                    else:
                        line.display_name = bytes(data[payload:stop])
                elif number == 4:
                    line.other_events.append((base + payload, base + stop))
                pos = stop
            elif wtype in (I64, I32):
                pos += 8 if wtype == I64 else 4
                if pos > end:
                    raise WireError("truncated fixed-size field")
            else:
                raise WireError(f"wire type {wtype} in field {number}")
    except IndexError:
        if not whole:
            return (records.pop() if in_run else field_start), False
        # Only the run loop reads past the end of the file, right after recording an event: drop it.
        if in_run:
            records.pop()
        line.damage = "the file ends inside an event"
    except WireError as exc:
        line.damage = str(exc)
    return pos, True


def event_ranges(
    buf: np.ndarray, records: np.ndarray, limits: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(payload start, payload end, ok) of the event records found by `walk_line_part`: each is a 0x22
    tag byte followed by a varint length, decoded here for all records at once."""
    length, payload, ok = varints(buf, byte_windows(buf), records + 1, limits)
    room = (limits - payload).astype(np.uint64)
    ok &= length <= room
    stop = payload + np.where(ok, length, np.uint64(0)).astype(np.int64)
    return payload, stop, ok


@dataclasses.dataclass
class Scan:
    """The requested fields of a batch of messages, as per-message columns.

    For every requested field, `value[n]` holds its last occurrence in each message (the varint,
    the fixed-size bits, or for LEN fields the payload start, with `length[n]`), and `step[n]` the
    index of that field within the message (-1 when absent), which settles oneofs: the member
    seen last is the one set. Members of a `oneof` share one slot, key ONEOF, and `which` says
    which member filled it. Fields listed as repeated also get every occurrence in
    `blocks[n]` = (owner, start, length). `broken[i]` is true when message i could not be decoded
    to its end; the fields read before the damage are still reported.
    """

    count: int
    value: dict[int, np.ndarray]
    length: dict[int, np.ndarray]
    step: dict[int, np.ndarray]
    blocks: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]
    broken: np.ndarray
    which: np.ndarray  # int8: for the `oneof` fields, the member set last (0 = none)

    def signed(self, number: int, default: int = 0) -> np.ndarray:
        """int64 column of a varint field, `default` where the field is absent."""
        out = self.value[number].view(np.int64).copy()
        out[self.step[number] < 0] = default
        return out

    def text_range(self, number: int) -> tuple[np.ndarray, np.ndarray]:
        """(start, length) of the last occurrence of LEN field `number`; length -1 if absent."""
        start = self.value[number].view(np.int64)
        length = np.where(self.step[number] < 0, -1, self.length[number])
        return start, length


_HIGH_BITS = np.uint64(0x8080808080808080)
_LOW_BITS = np.uint64(0x7F7F7F7F7F7F7F7F)
PADDING = 16  # zero bytes `padded` appends so 8-byte windows never run off the buffer


def padded(data: bytes) -> np.ndarray:
    """The file bytes as uint8 with PADDING zero bytes after them, as `scan` requires."""
    buf = np.zeros(len(data) + PADDING, dtype=np.uint8)
    buf[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return buf


def byte_windows(buf: np.ndarray) -> np.ndarray:
    """Overlapping little-endian uint64 view: element i is bytes buf[i:i+8] (no copy)."""
    return np.ndarray(shape=(buf.shape[0] - 7,), dtype="<u8", buffer=buf.data, offset=0, strides=(1,))


def _compact7(x: np.ndarray) -> np.ndarray:
    """Squeeze the low 7 bits of each of 8 bytes into 56 contiguous bits (SWAR varint decode)."""
    x = ((x & np.uint64(0x7F007F007F007F00)) >> np.uint64(1)) | (x & np.uint64(0x007F007F007F007F))
    x = ((x & np.uint64(0x3FFF00003FFF0000)) >> np.uint64(2)) | (x & np.uint64(0x00003FFF00003FFF))
    return ((x & np.uint64(0x0FFFFFFF00000000)) >> np.uint64(4)) | (x & np.uint64(0x000000000FFFFFFF))


def varints(
    buf: np.ndarray, windows: np.ndarray, pos: np.ndarray, limit: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode one varint at each `pos` without reading at or past `limit`: (value, next pos, ok).

    Each varint is read as one 8-byte window: the first byte without its high bit ends it, a mask
    keeps the bytes up to there and `_compact7` joins their 7-bit groups. The rare 9- and 10-byte
    varints (negative int64, 64-bit hashes) get their last bytes added separately.
    """
    first = buf[pos]
    multi = np.flatnonzero(first >= 0x80)
    if multi.shape[0] * 4 < pos.shape[0]:
        # Mostly one-byte varints (tags, small ids): decode the few longer ones separately.
        value = first.astype(np.uint64)
        nxt = pos + 1
        if multi.shape[0]:
            v, p, good = _varints_windowed(buf, windows, pos[multi], limit[multi])
            value[multi] = v
            nxt[multi] = p
            ok = nxt <= limit
            ok[multi] &= good
            return value, nxt, ok
        return value, nxt, nxt <= limit
    return _varints_windowed(buf, windows, pos, limit)


def _varints_windowed(
    buf: np.ndarray, windows: np.ndarray, pos: np.ndarray, limit: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    win = windows[pos]
    stop_bits = ~win & _HIGH_BITS
    lowest = stop_bits & (~stop_bits + np.uint64(1))
    # lowest is 0x80 << 8k = 2**(8k + 7) for a (k+1)-byte varint, whose frexp exponent is 8k + 8
    # exactly; 0 (no end within 8 bytes: 9 or 10 bytes, set below) gives 0.
    nbytes = np.frexp(lowest.astype(np.float64))[1].astype(np.int64) >> 3
    keep = (lowest << np.uint64(1)) - np.uint64(1)
    value = _compact7(win & keep & _LOW_BITS)
    ok = np.ones(pos.shape[0], dtype=bool)
    long = np.flatnonzero(lowest == 0)
    if long.shape[0]:
        at = pos[long]
        ninth = buf[at + 8].astype(np.uint64)
        value[long] |= (ninth & np.uint64(0x7F)) << np.uint64(56)
        tenth_needed = ninth >= 0x80
        tenth = buf[at + 9].astype(np.uint64)
        value[long] |= np.where(tenth_needed, (tenth & np.uint64(1)) << np.uint64(63), np.uint64(0))
        nbytes[long] = np.where(tenth_needed, 10, 9)
        ok[long] = ~tenth_needed | (tenth < 0x80)
    nxt = pos + nbytes
    ok &= nxt <= limit
    return value, nxt, ok


def _fixed(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Little-endian unsigned integers of `width` bytes starting at each pos (caller bounds-checks)."""
    raw = np.ascontiguousarray(buf[pos[:, None] + np.arange(width)])
    return raw.view("<u8" if width == 8 else "<u4").ravel().astype(np.uint64)


_BATCH = 1 << 17  # messages decoded together; bounds the per-step temporaries
_LOCKSTEP_STEPS = 32  # after this many fields, messages still going …
_PYTHON_TAIL = 256  # … are finished one by one when at most this many are left


def scan(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    fields: dict[int, int],
    repeated: tuple[int, ...] = (),
    oneof: tuple[int, ...] = (),
) -> Scan:
    """Decode the messages buf[starts[i]:ends[i]] all at once, keeping the `fields` asked for
    ({field number: wire type}; an occurrence with another wire type is skipped as malformed).

    `buf` comes from `padded`. One loop iteration decodes the next field of every message that
    has bytes left, so the number of numpy steps is the largest field count of any one message
    (a handful for XEvent and XStat) while the work per step is vectorized over the messages
    (in batches of `_BATCH`, to bound memory).
    """
    windows = byte_windows(buf)
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.minimum(np.asarray(ends, dtype=np.int64), buf.shape[0] - PADDING)
    count = starts.shape[0]
    slots = {_slot(n, oneof) for n in fields}
    out = Scan(
        count=count,
        value={n: np.zeros(count, dtype=np.uint64) for n in slots},
        length={_slot(n, oneof): np.zeros(count, dtype=np.int64) for n, wt in fields.items() if wt == LEN},
        step={n: np.full(count, -1, dtype=np.int32) for n in slots},
        blocks={},
        broken=np.zeros(count, dtype=bool),
        which=np.zeros(count if oneof else 0, dtype=np.int8),
    )
    block_parts: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {n: [] for n in repeated}
    for lo in range(0, count, _BATCH):
        active = lo + np.flatnonzero(starts[lo : lo + _BATCH] < ends[lo : lo + _BATCH])
        _scan_batch(buf, windows, active, starts[active], ends[active], fields, oneof, out, block_parts)
    for n, parts in block_parts.items():
        if parts:
            out.blocks[n] = tuple(np.concatenate(c) for c in zip(*parts))
        else:
            out.blocks[n] = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    return out


def _slot(number: int, oneof: tuple[int, ...]) -> int:
    return ONEOF if number in oneof else number


def _scan_batch(
    buf: np.ndarray,
    windows: np.ndarray,
    active: np.ndarray,
    pos: np.ndarray,
    limit: np.ndarray,
    fields: dict[int, int],
    oneof: tuple[int, ...],
    out: Scan,
    block_parts: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]],
) -> None:
    step = 0
    while active.shape[0]:
        if step >= _LOCKSTEP_STEPS and active.shape[0] <= _PYTHON_TAIL:
            # A few messages with very many fields (hostile or odd input): one numpy step per
            # field would cost far more than reading them field by field.
            _scan_tail(buf, active, pos, limit, fields, oneof, out, block_parts, step)
            return
        tag, pos, ok = varints(buf, windows, pos, limit)
        number = tag >> np.uint64(3)
        wtype = tag & np.uint64(7)
        ok &= number > 0
        # VARINT fields and LEN prefixes are both one varint right after the tag.
        is_len = wtype == LEN
        has_varint = ok & ((wtype == VARINT) | is_len)
        if has_varint.all():
            v, p, good = varints(buf, windows, pos, limit)
        else:
            sel = np.flatnonzero(has_varint)
            v_sel, p_sel, good_sel = varints(buf, windows, pos[sel], limit[sel])
            v = np.zeros(active.shape[0], dtype=np.uint64)
            v[sel] = v_sel
            p = pos.copy()
            p[sel] = p_sel
            good = np.ones(active.shape[0], dtype=bool)
            good[sel] = good_sel
        ok &= good
        payload = p.copy()
        lens = np.flatnonzero(is_len & ok)
        if lens.shape[0]:
            fits = v[lens] <= (limit[lens] - p[lens]).astype(np.uint64)
            ok[lens[~fits]] = False
            lens = lens[fits]
            p[lens] += v[lens].astype(np.int64)
        pos = p
        fixed = np.flatnonzero(ok & ((wtype == I64) | (wtype == I32)))
        if fixed.shape[0]:
            width = np.where(wtype[fixed] == I64, 8, 4)
            fits = pos[fixed] + width <= limit[fixed]
            ok[fixed[~fits]] = False
            fixed, width = fixed[fits], width[fits]
            wide = width == 8
            v[fixed[wide]] = _fixed(buf, pos[fixed[wide]], 8)
            v[fixed[~wide]] = _fixed(buf, pos[fixed[~wide]], 4)
            pos[fixed] += width
        ok &= (wtype == VARINT) | is_len | (wtype == I64) | (wtype == I32)

        for n, wt in fields.items():
            hit = np.flatnonzero(ok & (number == n) & (wtype == wt))
            if not hit.shape[0]:
                continue
            owners = active[hit]
            slot = _slot(n, oneof)
            out.step[slot][owners] = step
            if slot == ONEOF:
                out.which[owners] = n
            if wt == LEN:
                out.value[slot][owners] = payload[hit]
                out.length[slot][owners] = v[hit].astype(np.int64)
                if n in block_parts:
                    block_parts[n].append((owners, payload[hit], v[hit].astype(np.int64)))
            else:
                out.value[slot][owners] = v[hit]
        if ok.all():
            cont = pos < limit
        else:
            out.broken[active[~ok]] = True
            cont = ok & (pos < limit)
        active, pos, limit = active[cont], pos[cont], limit[cont]
        step += 1


def _scan_tail(
    buf: np.ndarray,
    active: np.ndarray,
    pos: np.ndarray,
    limit: np.ndarray,
    fields: dict[int, int],
    oneof: tuple[int, ...],
    out: Scan,
    block_parts: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]],
    step: int,
) -> None:
    """Finish the remaining fields of a few messages with the sequential reader (same results)."""
    data = memoryview(buf)
    blocks: dict[int, list[tuple[int, int, int]]] = {n: [] for n in block_parts}
    for msg, start, end in zip(active.tolist(), pos.tolist(), limit.tolist(), strict=True):
        index = step
        try:
            for number, wtype, a, b in iter_fields(data, start, end):
                if fields.get(number) == wtype:
                    slot = _slot(number, oneof)
                    out.step[slot][msg] = index
                    if slot == ONEOF:
                        out.which[msg] = number
                    if wtype == VARINT:
                        out.value[slot][msg] = a
                    elif wtype == LEN:
                        out.value[slot][msg] = a
                        out.length[slot][msg] = b - a
                        if number in blocks:
                            blocks[number].append((msg, a, b - a))
                    else:
                        out.value[slot][msg] = int.from_bytes(data[a:b], "little")
                index += 1
        except WireError:
            out.broken[msg] = True
    for number, rows in blocks.items():
        if rows:
            owner, start, length = (np.array(c, dtype=np.int64) for c in zip(*rows))
            block_parts[number].append((owner, start, length))
