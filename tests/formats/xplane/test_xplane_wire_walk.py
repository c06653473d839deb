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

from profscope.formats.common import wire

pytestmark = pytest.mark.stack_independent


def _event(length: int, fill: int, mid: int = 5) -> bytes:
    """An event record: tag 0x22, its length, then as an XEvent starts (metadata id `mid`, offset,
    duration) and int64 stats as far as they fit, padded with `fill` bytes (0x22, 0x08 and 0x10
    among them: payloads hold bytes that look like a record's start, which the walk must not take
    for one). A length too short for that is all `fill`."""
    body = (
        b"\x08"
        + wire.encode_varint(mid)
        + b"\x10"
        + wire.encode_varint(1000 + length)
        + b"\x18"
        + wire.encode_varint(7)
    )
    if len(body) > length:
        return b"\x22" + wire.encode_varint(length) + bytes([fill]) * length
    stat = b"\x08\x03\x20" + bytes([fill & 0x7F])
    while length - len(body) >= 2 + len(stat):
        body += b"\x22" + wire.encode_varint(len(stat)) + stat
    return b"\x22" + wire.encode_varint(length) + body + bytes([fill]) * (length - len(body))


# A display name (field 11) whose bytes start as an event's would, but for the tag.
_NAME_LIKE_AN_EVENT = b"\x5a\x07\x08\x05\x10\x01\x18\x02\x22"


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
    # Runs of events between header fields (duration_ps = 9, display_id = 10, display_name = 11),
    # as serializers write lines; a window ends anywhere (before the line's end or past it), and a record may
    # claim more than its line has (damage) or a byte may be no tag at all.
    parts = [b"\x08\x07"]
    for run in runs:
        parts += [_event(length, fill, mid) for length, fill, mid in run]
        parts.append(_NAME_LIKE_AN_EVENT + b"\x48\x05\x50\x01")
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
    lengths or ids among them (not both: no candidate then), over several blocks; in two runs,
    between which a header field's bytes look like an event's but for the tag."""
    events = [
        _event(130 + i % 300 if i % 7 == 3 else 20 + i % 90, 0x22, 300 if i % 7 == 0 else 5)
        for i in range(6000)
    ]
    events[1500] = _event(200, 0x22)
    events[4000] = _event(3000, 0x10, 300)
    between = _NAME_LIKE_AN_EVENT + b"\x48\x05"
    data = b"".join(events[:3000]) + between + b"".join(events[3000:]) + between
    careful = _walk(data, len(data), True, False)
    with mock.patch.object(wire, "_GUESS_BLOCK", block):
        guessed, kept = _walk_counting_bulk(data, len(data), True)
    assert guessed == careful
    starts = np.cumsum([0] + [len(e) for e in events[:-1]])
    starts[3000:] += len(between)
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


def test_a_record_start_inside_a_payload_is_not_taken_for_one() -> None:
    """Payloads holding what looks like the start of an event: the bulk walk drops those starts
    (no record leads to them) and goes on."""
    fake = b"\x22\x05\x08\x05\x10\x01\x18"
    events = [_event(60, 0x7F) for _ in range(3000)]
    events = [e[:40] + fake + e[40 + len(fake) :] for e in events]
    data = b"".join(events) + b"\x48\x05"
    careful = _walk(data, len(data), True, False)
    guessed, kept = _walk_counting_bulk(data, len(data), True)
    assert guessed == careful and len(guessed[1]) == 3000
    assert kept >= 2990


def test_a_three_byte_length_is_left_to_the_careful_loop() -> None:
    """An event of 132 072 bytes, whose three-byte length ends in 0x08 and whose payload's second
    byte is 0x10, so it starts as a candidate would; its payload holds event starts from right
    where a two-byte reading of its length would lead, each leading to the next and the last to
    the event after it. Read as two bytes, the length would chain through them."""
    length = (8 << 14) + 1000
    header = b"\x22" + wire.encode_varint(length)
    assert header[3] == 0x08
    first, second = header[1], header[2]
    real_after = len(header) + length
    payload = bytearray(length)
    payload[1] = 0x10
    at = 3 + ((first & 0x7F) | (second << 7))
    while at < real_after:
        step = min(16_000, real_after - at - 3)
        fake = b"\x22" + wire.encode_varint(step) + b"\x08\x05\x10\x01"
        payload[at - len(header) : at - len(header) + len(fake)] = fake
        at += 1 + len(wire.encode_varint(step)) + step
    assert at == real_after
    events = [_event(40, 0)] * 300 + [header + bytes(payload)] + [_event(40, 0)] * 300
    data = b"".join(events) + _NAME_LIKE_AN_EVENT + b"\x48\x05"
    careful = _walk(data, len(data), True, False)
    guessed, _ = _walk_counting_bulk(data, len(data), True)
    assert guessed == careful and len(guessed[1]) == 601
