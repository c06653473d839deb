"""`spill_sort.RunPieces`: each piece's rows come back in source order, with their source index,
whether their chunk was kept as ranges of the source (long runs of one piece) or written to the
piece files (rows that interleave), and for a mix of both; on the real traces, the spilled finalize
takes both ways (the result is checked against the in-memory finalize in `test_spill.py`)."""

from __future__ import annotations

import os
import pathlib

import fsspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profscope.engine.ingest import manager as ingest
from profscope.formats import registry
from profscope.model.spill import budget as spill_budget
from profscope.model.spill import page_cache as spill_pages
from profscope.model.spill import sort as spill_sort
from profscope.model.spill.files import RecordFile
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

DATA = DATA_DIR
RECORD = np.dtype([("track", "<i4"), ("start", "<i8")])


def _pieces(
    tmp: pathlib.Path, which: np.ndarray, chunk: int, min_run: int
) -> tuple[np.ndarray, list[dict[str, np.ndarray]], list[bool]]:
    n = which.shape[0]
    source = RecordFile(str(tmp / "source"), RECORD)
    records = np.empty(n, RECORD)
    records["track"] = which
    records["start"] = np.arange(n) * 7 + 3
    source.append(records)
    count = int(which.max()) + 1 if n else 1
    pieces = spill_sort.RunPieces(source, str(tmp), "p", count)
    pieces.MIN_RUN_ROWS = min_run
    for lo in range(0, n, chunk):
        pieces.add(lo, source.read(lo, min(lo + chunk, n)), which[lo : lo + chunk])
    kinds = [from_source for segments in pieces.segments for from_source, _, _ in segments]
    loaded = [pieces.load(p) for p in range(count)]
    source.remove()
    return records, loaded, kinds


def _check(records: np.ndarray, loaded: list[dict[str, np.ndarray]]) -> None:
    which = records["track"]
    for piece, got in enumerate(loaded):
        expected = np.flatnonzero(which == piece)
        assert got["idx"].dtype == np.int64 and np.array_equal(got["idx"], expected)
        for name in RECORD.names:
            assert got[name].dtype == RECORD[name] and got[name].flags.c_contiguous
            assert np.array_equal(got[name], records[name][expected])


def test_long_runs_stay_in_the_source_and_interleaved_rows_go_to_files(tmp_path):
    runs = np.repeat(np.arange(4), 3000)  # four long runs: ranges of the source
    interleaved = np.tile(np.arange(4), 3000)  # every row another piece: piece files
    which = np.concatenate([runs, interleaved, runs[::-1]])
    records, loaded, kinds = _pieces(tmp_path, which, chunk=2048, min_run=1024)
    assert True in kinds and False in kinds
    _check(records, loaded)
    assert not list(tmp_path.iterdir())  # every piece file removed once loaded


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 400), min_size=0, max_size=40),
    pieces=st.lists(st.integers(0, 5), min_size=40, max_size=40),
    chunk=st.integers(1, 700),
    min_run=st.sampled_from([1, 16, 128, 10**9]),
)
def test_any_mix_of_runs_comes_back_in_source_order(tmp_path_factory, lengths, pieces, chunk, min_run):
    which = np.repeat(np.array(pieces[: len(lengths)], dtype=np.int64), lengths)
    records, loaded, _ = _pieces(tmp_path_factory.mktemp("runs"), which, chunk, min_run)
    _check(records, loaded)


@pytest.mark.parametrize(
    "name,fmt,budget",
    [
        # Pieces are planned at half the capacity: 400 kB gives the pieces 200 kB gave before.
        ("xplane/gpu_8x_tf_training.xplane.pb", "xplane", 400_000),
        ("kineto/bert_small.pt.trace.json.gz", "chrome_trace", 1),
    ],
)
def test_the_spilled_finalize_keeps_runs_of_real_traces_in_the_source(
    name, fmt, budget, tmp_path, monkeypatch
):
    """The XPlane's events come line by line, so most of them stay where the builder spilled them;
    the Kineto trace's threads interleave, so its events are written to the piece files."""
    kept = []
    original = spill_sort.RunPieces.load

    def load(self: spill_sort.RunPieces, piece: int) -> dict[str, np.ndarray]:
        kept.extend((f, hi - lo) for f, lo, hi in self.segments[piece])
        return original(self, piece)

    monkeypatch.setattr(spill_sort.RunPieces, "load", load)
    reader = registry.import_reader(ingest.READERS[fmt])
    with spill_budget.use(spill_budget.IngestMemory(str(tmp_path), budget)):
        trace = reader(str(DATA / name), fsspec.filesystem("file"))
    assert spill_budget.is_spilled(trace)
    in_source = sum(rows for from_source, rows in kept if from_source)
    assert sum(rows for _, rows in kept) == trace.num_events
    if fmt == "xplane":
        assert in_source > 0.9 * trace.num_events
    else:
        assert in_source < 0.1 * trace.num_events


@pytest.mark.parametrize("interleaved", [False, True])
def test_source_pages_go_back_once_their_rows_are_read(tmp_path, interleaved):
    """Rows kept as ranges of the source are given back as their piece is loaded; a source whose
    rows all went to the piece files is given back once they are added (`release_unread`)."""
    n = 200_000
    which = np.tile(np.arange(4), n // 4) if interleaved else np.repeat(np.arange(4), n // 4)
    source = RecordFile(str(tmp_path / "source"), RECORD)
    records = np.zeros(n, RECORD)
    records["track"] = which
    source.append(records)
    with open(tmp_path / "probe", "w+b", buffering=0) as probe:
        probe.write(b"x" * (1 << 16))
        if not spill_pages.release_range(probe.fileno(), 0, 1 << 16):
            pytest.skip("this file system does not punch holes")
    pieces = spill_sort.RunPieces(source, str(tmp_path), "p", 4)
    for lo in range(0, n, 10_000):
        pieces.add(lo, source.read(lo, lo + 10_000), which[lo : lo + 10_000])
    pieces.release_unread()
    spill_pages.wait_released()  # released by a thread of their own
    held = os.stat(source.path).st_blocks * 512
    assert held < 64 << 10 if interleaved else held >= n * RECORD.itemsize
    loaded = [pieces.load(p) for p in range(4)]
    spill_pages.wait_released()
    assert os.stat(source.path).st_blocks * 512 < 64 << 10
    _check(records, loaded)
    source.remove()
