"""Protobuf wire-format encoding by hand, for the synthetic and rewritten messages of the benchmarks,
the fuzz soak and the tests (the package only decodes). One tag is `varint(number << 3 | wire_type)`:
wire type 0 for a varint, 2 for a length-delimited payload.
"""

from __future__ import annotations


def varint(value: int) -> bytes:
    """Base-128 varint, low group first; a negative value as protobuf writes an int64: its two's
    complement in 64 bits (ten bytes)."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, value: int | bytes) -> bytes:
    """Field `number`: a varint for an int, length-delimited for bytes (a string or a message)."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value
