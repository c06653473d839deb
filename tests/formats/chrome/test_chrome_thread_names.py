"""Track, category and name ids looked up once per event (`ThreadNames`) are the ones the fields
looked up one by one get: same ids, same interning order, through the cache's resets and its
switch-off where most tuples are new (synthetic events: real traces repeat their names)."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from profscope.formats.chrome import columns as cc
from profscope.formats.chrome.decode import Event


def _batches() -> list[list[Event]]:
    """Complete events, instants (some process- or global-scoped) and flow points over a few
    threads; names repeating at first, then unique per event; a missing category and an int/float
    pid that are equal keys."""
    batches = []
    for b in range(12):
        batch = []
        for i in range(200):
            k = b * 200 + i
            name = f"op{k % 7}" if b < 4 else f"unique{k}"
            pid: int | float = 1.0 if k % 11 == 0 else 1
            ts = msgspec.Raw(str(1000 + k).encode())
            if k % 5 == 0:
                ph, extra = ("s" if k % 10 == 0 else "f"), {"id": msgspec.Raw(str(k // 10).encode())}
                batch.append(Event(ph=ph, cat="flow", name="link", pid=pid, tid=k % 3, ts=ts, **extra))
            elif k % 17 == 0:
                batch.append(
                    Event(ph="i", cat=None, name=name, pid=pid, tid=k % 3, ts=ts, s="p" if b == 5 else None)
                )
            else:
                cat = None if k % 13 == 0 else f"cat{k % 4}"
                batch.append(
                    Event(ph="X", cat=cat, name=name, pid=pid, tid=k % 3, ts=ts, dur=msgspec.Raw(b"2"))
                )
        batches.append(batch)
    return batches


def _fill(collector: cc.ColumnCollector) -> dict[str, object]:
    for batch in _batches():
        collector.add(batch)
    return {
        "strings": list(collector.strings.items()),
        "keys": list(collector.keys.items()),
        **{
            f"ev.{k}": np.concatenate(v).tolist()
            for k, v in collector.ev.items()
            if k in ("track", "name", "cat")
        },
        **{
            f"flow.{k}": np.concatenate(v).tolist()
            for k, v in collector.flow.items()
            if k in ("track", "name", "cat")
        },
    }


def test_one_lookup_per_event_gives_the_ids_of_one_lookup_per_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cc, "THREAD_NAMES_LIMIT", 50)  # forgotten and found again, several times
    monkeypatch.setattr(cc, "THREAD_NAMES_TRIAL", 1000)  # switched off once names turn unique
    cached = cc.ColumnCollector()
    by_field = cc.ColumnCollector()
    by_field._thread_names_seen = by_field._thread_names_new = cc.THREAD_NAMES_TRIAL  # off from the start
    expected = _fill(by_field)
    assert _fill(cached) == expected
    assert cached._thread_names_seen >= cc.THREAD_NAMES_TRIAL
    assert 2 * cached._thread_names_new > cached._thread_names_seen  # the switch-off was reached
