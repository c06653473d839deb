"""Bounded ingest memory, the threads of a spilled build: writes behind the builder land in order and
their failures reach it; the spilled index (shared async tracks, many rows and tracks, pieces sorted
on two threads) equals the in-memory one; a piece failing on the second thread fails the index.
Real inputs from tests/data, read with budgets far below their size (tests/model/test_spill.py)."""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np
import pytest

from profscope.engine.lod import spilled as lod_spilled
from profscope.model.spill import budget as spill_budget
from profscope.model.spill import files as spill_files
from profscope.model.spill import sort as spill_sort
from tests.model.test_spill import assert_same_index, read
from tests.support import DATA_DIR
from tests.support.same_trace import assert_same_trace

DATA = DATA_DIR


def _writers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "profscope-write-behind"]


def test_writes_behind_land_in_order_and_their_thread_ends_when_idle(tmp_path):
    path = tmp_path / "chunks"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDWR)
    try:
        behind = spill_files.WriteBehind(limit=64)  # a few writes waiting at most: `put` waits too
        pieces = [bytes([i]) * 10 for i in range(50)]
        for i, piece in enumerate(pieces):
            behind.put(fd, 10 * i, [piece[:4], piece[4:]])
        behind.wait_below(250)
        assert os.pread(fd, 250, 0) == b"".join(pieces[:25])
        behind.drain()
        assert path.read_bytes() == b"".join(pieces)
    finally:
        os.close(fd)
    deadline = time.monotonic() + 5
    while _writers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _writers()


def test_a_write_behind_that_fails_is_raised_by_the_next_call(tmp_path):
    behind = spill_files.WriteBehind(limit=1 << 20)
    behind.put(str(tmp_path / "no such folder" / "bucket-0"), 0, [b"records"])
    with pytest.raises(FileNotFoundError):
        behind.drain()
    with pytest.raises(FileNotFoundError):
        behind.put(str(tmp_path / "bucket-1"), 0, [b"more"])
    assert not (tmp_path / "bucket-1").exists()


def test_a_shared_async_track_spilled_equals_the_in_memory_one(tmp_path):
    """Single-slice async ids of one name share a track whose overlaps take extra rows (greedy rows
    carried from piece to piece when spilled): the same trace and index either way."""
    events = []
    for i in range(20000):
        begin = {"ph": "b", "cat": "net", "name": "request", "id": i, "pid": 1, "tid": 1, "ts": 10 * i}
        events += [begin, {**begin, "ph": "e", "ts": 10 * i + 10 + (i % 7) * 4}]
    events += [{"ph": "X", "name": "work", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5} for i in range(20000)]
    path = tmp_path / "async.json"
    path.write_text(json.dumps({"traceEvents": events}))
    memory = read(path, "chrome_trace")
    spilled = read(path, "chrome_trace", spill_budget.IngestMemory(str(tmp_path / "spill"), 1))
    assert spill_budget.is_spilled(spilled)
    shared = [t for t in memory.tracks if t.kind == "async"]
    assert len(shared) == 1 and shared[0].max_depth >= 2
    on_shared = np.asarray(memory.ev_track) == shared[0].id
    durations_us = set((np.asarray(memory.ev_dur_ps)[on_shared] // 1_000_000).tolist())
    assert durations_us == {10 + 4 * k for k in range(7)}  # each end closed its own id
    assert_same_trace(memory, spilled)
    assert_same_index(memory, spilled, str(tmp_path), 1)


@pytest.mark.parametrize("shape", ["nested ids", "open ids", "one long parent"])
def test_many_rows_and_tracks_spilled_index_equals_the_in_memory_one(shape, tmp_path):
    """The spilled self times carry each row's last slice from window to window as arrays: ids
    with a nested pair each (a track per id), ids left open on one shared track (a row per id),
    and one slice whose children fill many windows give the index of the in-memory build."""
    events: list[dict[str, object]] = []
    if shape == "nested ids":
        for i in range(3000):
            for ph, name, ts in (("b", "req", 0), ("b", "inner", 1), ("e", "inner", 2), ("e", "req", 5)):
                events.append(
                    {"ph": ph, "name": name, "cat": "c", "pid": 1, "tid": 1, "id": i, "ts": 10 * i + ts}
                )
    elif shape == "open ids":
        events = [
            {"ph": "b", "name": "req", "cat": "c", "pid": 1, "tid": 1, "id": i, "ts": 10 * i}
            for i in range(3000)
        ]
    else:
        events = [{"ph": "X", "name": "step", "pid": 1, "tid": 1, "ts": 0, "dur": 100_000}]
        events += [
            {"ph": "X", "name": f"op{i % 5}", "pid": 1, "tid": 1, "ts": 3 * i + 1, "dur": 2 + i % 3}
            for i in range(20000)
        ]
    events.append({"ph": "X", "name": "end", "pid": 1, "tid": 2, "ts": 0, "dur": 1})
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"traceEvents": events}))
    memory = read(path, "chrome_trace")
    spilled = read(path, "chrome_trace", spill_budget.IngestMemory(str(tmp_path / "spill"), 1))
    assert spill_budget.is_spilled(spilled)
    assert_same_trace(memory, spilled)
    arrays = assert_same_index(memory, spilled, str(tmp_path), 1)
    assert int(np.asarray(arrays["self_ps"]).min()) >= 0


def _slow_main_loads(monkeypatch: pytest.MonkeyPatch, fail_on_side: bool) -> list[str]:
    """Record which thread loads each order piece; the main thread's loads wait a little, so the
    second thread, done with its own arrays, takes pieces too (and fails there if asked)."""
    loaders: list[str] = []
    load = spill_sort.Buckets.load

    def slow_load(self: spill_sort.Buckets, i: int, keep: bool = False) -> np.ndarray:
        main = threading.current_thread() is threading.main_thread()
        if self.dtype.names and "group" in self.dtype.names:  # the order pieces
            loaders.append("main" if main else "side")
            if main:
                time.sleep(0.05)
            elif fail_on_side:
                raise OSError("a piece the second thread could not read")
        return load(self, i, keep)

    monkeypatch.setattr(spill_sort.Buckets, "load", slow_load)
    return loaders


def test_both_threads_sort_order_pieces_into_the_in_memory_index(tmp_path, monkeypatch):
    path = DATA / "xplane/mi300_jax_conv.xplane.pb"
    memory = read(path, "xplane")
    spilled = read(path, "xplane", spill_budget.IngestMemory(str(tmp_path / "spill"), 1))
    loaders = _slow_main_loads(monkeypatch, fail_on_side=False)
    assert_same_index(memory, spilled, str(tmp_path), 1)
    assert "main" in loaders and "side" in loaders


def test_a_piece_failing_on_the_second_thread_fails_the_index(tmp_path, monkeypatch):
    path = DATA / "xplane/mi300_jax_conv.xplane.pb"
    spilled = read(path, "xplane", spill_budget.IngestMemory(str(tmp_path / "spill"), 1))
    loaders = _slow_main_loads(monkeypatch, fail_on_side=True)
    with pytest.raises(OSError, match="could not read"):
        lod_spilled.build_extras(spilled, str(tmp_path), 1)
    # The failure stops the handing out: the main thread takes no piece after it (one at most,
    # taken as it happened), though many were left.
    after = loaders[loaders.index("side") + 1 :]
    assert loaders.count("side") == 1 and after.count("main") <= 1
