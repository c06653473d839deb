"""The binary tile: the one payload the trace view streams, in the layout of docs/ARCHITECTURE.md.

Typed arrays instead of JSON keep a screen of tiles small and let the browser read columns with
zero-copy `TypedArray` views; every array starts 8-aligned for that reason. `decode` is the
reference reader of the same layout (tests and benchmarks use it; the frontend has its own).
"""

from __future__ import annotations

import dataclasses
import json
import struct
from typing import Any

import numpy as np

MAGIC = b"PST1"

# Column name, dtype, in the documented order; widths are part of the frontend contract.
EVENT_COLUMNS = (
    ("id", "<u4"),
    ("track", "<u4"),
    ("name", "<u4"),
    ("start", "<f4"),
    ("dur", "<f4"),
    ("depth", "<u2"),
)
SUMMARY_COLUMNS = (
    ("track", "<u4"),
    ("depth", "<u2"),
    ("start", "<f4"),
    ("width", "<f4"),
    ("count", "<u4"),
    ("busy", "<f4"),
)
COUNTER_COLUMNS = (
    ("track", "<u4"),
    ("start", "<f4"),
    ("width", "<f4"),
    ("min", "<f8"),
    ("max", "<f8"),
    ("last", "<f8"),
)
FLOW_COLUMNS = (
    ("src_id", "<u4"),
    ("src_track", "<u4"),
    ("src_time", "<f4"),
    ("src_depth", "<u2"),
    ("dst_id", "<u4"),
    ("dst_track", "<u4"),
    ("dst_time", "<f4"),
    ("dst_depth", "<u2"),
)
GROUPS = (
    ("events", "n_events", EVENT_COLUMNS),
    ("summaries", "n_summaries", SUMMARY_COLUMNS),
    ("counters", "n_counters", COUNTER_COLUMNS),
    ("flows", "n_flows", FLOW_COLUMNS),
)


@dataclasses.dataclass
class Tile:
    """A tile's content with times already in ns from the tile start (timeline track ids)."""

    level: int
    index: int
    start_ns: float
    width_ns: float
    names: list[str]
    events: dict[str, np.ndarray]
    summaries: dict[str, np.ndarray]
    counters: dict[str, np.ndarray]
    flows: dict[str, np.ndarray]
    extra_header: dict[str, Any] = dataclasses.field(default_factory=dict)


def encode(tile: Tile) -> bytes:
    """Serialize `tile`; raises ValueError when a group's columns differ in length."""
    counts = {}
    for group, count_key, columns in GROUPS:
        data = getattr(tile, group)
        lengths = {np.asarray(data[name]).shape[0] for name, _ in columns}
        if len(lengths) > 1:
            raise ValueError(f"tile {group} columns differ in length: {sorted(lengths)}")
        counts[count_key] = lengths.pop() if lengths else 0
    header = {
        "level": tile.level,
        "index": tile.index,
        "start_ns": tile.start_ns,
        "width_ns": tile.width_ns,
        "names": tile.names,
        **counts,
        **tile.extra_header,
    }
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    head += b" " * (-(8 + len(head)) % 8)
    parts = [MAGIC, struct.pack("<I", len(head)), head]
    size = 8 + len(head)
    for group, _, columns in GROUPS:
        data = getattr(tile, group)
        for name, dtype in columns:
            raw = np.ascontiguousarray(data[name], dtype=dtype).tobytes()
            parts.append(raw)
            size += len(raw)
            pad = -size % 8
            if pad:
                parts.append(b"\0" * pad)
                size += pad
    return b"".join(parts)


def decode(data: bytes) -> Tile:
    """Parse a tile produced by `encode` (strict: wrong magic or sizes raise ValueError)."""
    if data[:4] != MAGIC:
        raise ValueError("not a profscope tile (bad magic)")
    (head_len,) = struct.unpack_from("<I", data, 4)
    header = json.loads(data[8 : 8 + head_len].decode("utf-8"))
    offset = 8 + head_len
    groups: dict[str, dict[str, np.ndarray]] = {}
    for group, count_key, columns in GROUPS:
        n = int(header[count_key])
        cols = {}
        for name, dtype in columns:
            nbytes = n * np.dtype(dtype).itemsize
            if offset + nbytes > len(data):
                raise ValueError(f"tile truncated in {group}.{name}")
            cols[name] = np.frombuffer(data, dtype=dtype, count=n, offset=offset)
            offset += nbytes + (-(offset + nbytes) % 8)
        groups[group] = cols
    known = {"level", "index", "start_ns", "width_ns", "names"} | {g[1] for g in GROUPS}
    return Tile(
        level=header["level"],
        index=header["index"],
        start_ns=header["start_ns"],
        width_ns=header["width_ns"],
        names=header["names"],
        extra_header={k: v for k, v in header.items() if k not in known},
        **groups,
    )
