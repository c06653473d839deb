"""The args JSON the model renders from an XPlane's typed records is, for every event of every
XPlane in tests/data, byte for byte the text one JSON encode of the event's args writes: built here
from the file decoded by protobuf (`xspace_reference`), independently of the reader, with the
rules the reader documents (metadata members first, an event stat shadowing a metadata stat of
its name, " (2)" for a repeated name, "stat#<id>" and "?ref <id>" for missing metadata, bytes as
text or hex, doubles as `repr` and non-finite ones as null)."""

from __future__ import annotations

import collections
import hashlib
import math
from pathlib import Path
from typing import Any

import fsspec
import msgspec
import numpy as np
import pytest

from profscope.formats.xplane import args as xplane_args
from profscope.formats.xplane import reader as xplane
from profscope.formats.xplane.stats import bytes_text
from profscope.model import args as model_args
from tests.support import DATA_DIR
from tests.support.xplane_messages import space_class

_encode = msgspec.json.encode


def _distinct_xplanes() -> list[Path]:
    """Each XPlane of tests/data once (some are copies under several layouts)."""
    seen: dict[str, Path] = {}
    for path in sorted(DATA_DIR.rglob("*.xplane.pb")):
        seen.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), path)
    return sorted(seen.values())


XPLANES = _distinct_xplanes()


def _value(stat: Any, stat_names: dict[int, str]) -> Any:
    which = stat.WhichOneof("value")
    if which is None:
        return None
    if which == "ref_value":
        return stat_names.get(stat.ref_value, f"?ref {stat.ref_value}")
    if which == "bytes_value":
        return bytes_text(stat.bytes_value)
    if which == "double_value" and not math.isfinite(stat.double_value):
        return None
    return getattr(stat, which)


def _member(key: str, value: Any) -> bytes:
    text = repr(value).encode() if isinstance(value, float) else _encode(value)
    return _encode(key) + b":" + text


def expected_texts(path: Path) -> collections.Counter[bytes]:
    """The args JSON of every event of the file's non-counter lines (`long_name`, from the
    metadata's name when a display name replaces it, is never shadowed: the reader keeps it)."""
    space = space_class()()
    space.ParseFromString(path.read_bytes())
    out: collections.Counter[bytes] = collections.Counter()
    for plane in space.planes:
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            if line.name == "_counters_":
                continue
            for event in line.events:
                own = [s for s in event.stats]
                names = [stat_names.get(s.metadata_id, f"stat#{s.metadata_id}") for s in own]
                shadowed = {stat_names[s.metadata_id] for s in own if s.metadata_id in stat_names}
                members: dict[str, Any] = {}
                meta = plane.event_metadata.get(event.metadata_id)
                if meta is not None:
                    if meta.display_name and meta.display_name != meta.name:
                        members["long_name"] = meta.name
                    for s in meta.stats:
                        name = stat_names.get(s.metadata_id, f"stat#{s.metadata_id}")
                        if name not in shadowed:
                            members[name] = _value(s, stat_names)
                pairs = [_member(k, v) for k, v in members.items()]
                seen: collections.Counter[str] = collections.Counter()
                for name, stat in zip(names, own, strict=True):
                    seen[name] += 1
                    key = name if seen[name] == 1 else f"{name} ({seen[name]})"
                    pairs.append(_member(key, _value(stat, stat_names)))
                out[b"{" + b",".join(pairs) + b"}" if pairs else b""] += 1
    return out


@pytest.mark.parametrize("path", XPLANES, ids=lambda p: str(p.relative_to(DATA_DIR)))
def test_every_event_renders_the_json_of_its_stats(path: Path) -> None:
    trace = xplane.read(str(path), fsspec.filesystem("file"))
    assert model_args.typed(trace)
    derived = np.array([t.kind == "derived" for t in trace.tracks], dtype=bool)
    events = np.flatnonzero(~derived[trace.ev_track])
    offsets, text = model_args.event_texts(trace, events)
    blob = text.tobytes()
    got = collections.Counter(
        blob[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)
    )
    assert got == expected_texts(path)
    # One event at a time, and whole-trace windows, render the same texts.
    for k in range(0, events.shape[0], 97):
        assert trace.args_json(int(events[k])) == blob[offsets[k] : offsets[k + 1]]
    every = np.zeros(trace.num_events + 1, dtype=np.int64)
    parts = []
    for window in model_args.windows(trace, 1 << 14):
        every[window.events + 1] = np.diff(window.offsets)
        parts.append(window.text.tobytes())
    assert np.array_equal(every[events + 1], np.diff(offsets))
    assert sum(len(p) for p in parts) == int(every.sum())


@pytest.mark.parametrize("shifted", [True, False])
def test_repeat_ranks_count_the_earlier_rows_of_the_event_with_the_key(
    shifted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both ways `_repeat_rank` counts (shifted comparisons for events of few stats, a sort for
    events of many) give what a plain count gives."""
    monkeypatch.setattr(xplane_args, "SHIFTED_MAX_STATS", 1 << 20 if shifted else 0)
    owner = np.array([0, 0, 0, 1, 1, 3, 3, 3, 3])
    key = np.array([5, 5, 2, 1, 1, 4, 5, 4, 4])
    assert xplane_args._repeat_rank(owner, key).tolist() == [0, 1, 0, 0, 1, 0, 0, 1, 2]
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(0, 60))
        owner = np.sort(rng.integers(0, n // 4 + 1, n))
        key = rng.integers(0, 3, n)
        seen: collections.Counter[tuple[int, int]] = collections.Counter()
        want = []
        for o, k in zip(owner.tolist(), key.tolist(), strict=True):
            want.append(seen[(o, k)])
            seen[(o, k)] += 1
        assert xplane_args._repeat_rank(owner, key).tolist() == want
