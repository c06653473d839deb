"""`xplane_wire.walk_line_part`: its bulk walk over long runs of events (`_chained_records`) must
walk exactly as the careful loop alone does, on any line and any cut of it by a window.

Synthetic lines, since the real files in tests/data hold no event of 128 bytes or more in a long
run and no run cut by damage; the real files' entries are compared in `test_xplane_streaming.py`.
"""

from __future__ import annotations

import array
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profscope.formats import xplane_wire as wire


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _event(length: int, fill: int, mid: int = 5) -> bytes:
    """An event record: tag 0x22, its length, then as an XEvent starts (metadata id `mid`, offset,
    duration) and int64 stats as far as they fit, padded with `fill` bytes (0x22, 0x08 and 0x10
    among them: payloads hold bytes that look like a record's start, which the walk must not take
    for one). A length too short for that is all `fill`."""
    body = b"\x08" + _varint(mid) + b"\x10" + _varint(1000 + length) + b"\x18" + _varint(7)
    if len(body) > length:
        return b"\x22" + _varint(length) + bytes([fill]) * length
    stat = b"\x08\x03\x20" + bytes([fill & 0x7F])
    while length - len(body) >= 2 + len(stat):
        body += b"\x22" + _varint(len(stat)) + stat
    return b"\x22" + _varint(length) + body + bytes([fill]) * (length - len(body))


def _walk(data: bytes, end: int, whole: bool, guess: bool) -> tuple:
    with mock.patch.object(wire, "GUESS_MIN_BYTES", wire.GUESS_MIN_BYTES if guess else 1 << 62):
        line = wire.LineRecord()
        records = array.array("q")
        result = wire.walk_line_part(data, 0, 0, end, whole, line, records)
    return result, records.tolist(), line


# Mostly lengths of one byte, some of two and a few of three.
_LENGTHS = st.integers(0, 999).map(lambda k: k % 128 if k < 970 else 128 + k if k < 995 else 16_000 + k)


@settings(max_examples=150, deadline=None)
@given(
    runs=st.lists(
        st.lists(
            st.tuples(
                _LENGTHS,
                st.sampled_from([0, 0x22, 0x08, 0x10, 0x7F, 0x80, 0xFF]),
                st.sampled_from([5, 5, 5, 300, 70_000]),  # metadata ids of one, two and three bytes
            ),
            max_size=600,
        ),
        min_size=1,
        max_size=3,
    ),
    cut=st.floats(0.0, 1.2),
    whole=st.booleans(),
    damage=st.sampled_from([None, "long", "tag"]),
)
def test_the_guess_walks_as_the_careful_loop(
    runs: list[list[tuple[int, int, int]]],
    cut: float,
    whole: bool,
    damage: str | None,
) -> None:
    # Runs of events between header fields (duration_ps = 9, display_id = 10), as serializers
    # write lines; a window ends anywhere (before the line's end or past it), and a record may
    # claim more than its line has (damage) or a byte may be no tag at all.
    parts = [b"\x08\x07"]
    for run in runs:
        parts += [_event(length, fill, mid) for length, fill, mid in run]
        parts.append(b"\x48\x05\x50\x01")
    line = b"".join(parts)
    if damage == "long" and len(line) > 8:
        line = line[: len(line) // 2] + b"\x22\xff\xff\x03" + line[len(line) // 2 :]
    elif damage == "tag" and len(line) > 8:
        line = line[: len(line) // 3] + b"\x07" + line[len(line) // 3 :]
    end = len(line)
    size = max(1, min(end + 64, int(end * cut)))
    data = (line + bytes(64))[:size]
    careful = _walk(data, end, whole, False)
    guessed = _walk(data, end, whole, True)
    assert guessed[0] == careful[0]
    assert guessed[1] == careful[1]
    assert guessed[2] == careful[2]


def _walk_counting_bulk(data: bytes, end: int, whole: bool) -> tuple[tuple, int]:
    """`_walk` with the bulk walk on, and how many records the bulk walk kept."""
    kept = 0
    bulk = wire._chained_records

    def counting(data: bytes, pos: int, stop: int, records: array.array) -> int:
        nonlocal kept
        before = len(records)
        out = bulk(data, pos, stop, records)
        kept += len(records) - before
        return out

    with mock.patch.object(wire, "_chained_records", counting):
        return _walk(data, end, whole, True), kept


@pytest.mark.parametrize("block", [4096, wire._GUESS_BLOCK])
def test_a_long_run_of_events_is_walked_in_bulk(block: int) -> None:
    """The case the bulk walk is for: thousands of events, mostly under 128 bytes, with two-byte
    lengths and ids among them, over several blocks."""
    events = [_event(20 + i % 90 if i % 11 else 130 + i % 300, 0x22, 5 if i % 7 else 300) for i in range(6000)]
    events[1500] = _event(200, 0x22)
    events[4000] = _event(3000, 0x10, 300)
    data = b"".join(events) + b"\x48\x05"
    careful = _walk(data, len(data), True, False)
    with mock.patch.object(wire, "_GUESS_BLOCK", block):
        guessed, kept = _walk_counting_bulk(data, len(data), True)
    assert guessed == careful
    starts = np.cumsum([0] + [len(e) for e in events[:-1]])
    assert guessed[1] == starts.tolist() and guessed[0] == (len(data), True)
    assert kept >= len(events) - 5


def test_an_event_the_bulk_walk_misses_is_walked_carefully() -> None:
    """An event that does not start as the bulk walk expects (no offset: its first event at 0) is
    left to the careful loop, and the bulk walk takes the run up again after it."""
    events = [_event(40, 0x7F) for _ in range(3000)]
    events[1000] = b"\x22\x26\x08\x05\x18\x07" + bytes(34)
    data = b"".join(events) + b"\x48\x05"
    careful = _walk(data, len(data), True, False)
    guessed, kept = _walk_counting_bulk(data, len(data), True)
    assert guessed == careful and len(guessed[1]) == 3000
    assert kept >= 2990


@pytest.mark.parametrize("whole", [False, True])
def test_a_window_ending_where_a_record_ends(whole: bool) -> None:
    """The bulk walk runs to the window's end with every record right: the careful loop still takes
    the last one, so a window ending exactly after it keeps it (the next window goes on there)."""
    events = [_event(30, 0x22) for _ in range(1000)]
    line = b"".join(events) + b"\x48\x05"
    size = 600 * len(events[0])
    careful = _walk(line[:size], len(line), whole, False)
    guessed = _walk(line[:size], len(line), whole, True)
    assert guessed == careful
    assert guessed[0] == (size, False) and len(guessed[1]) == 600
