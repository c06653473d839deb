"""`benchmarks/make_many_keys_json.py`: its files have the shape its memory figures are about."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import fsspec
import pytest

from profscope.formats.chrome import reader as chrome_json
from tests.support import REPO

pytestmark = pytest.mark.stack_independent


@pytest.mark.parametrize(
    ("kind", "async_tracks", "thread_tracks", "max_depth"),
    [
        ("threads", 0, 300, 0),
        ("closed_async", 1, 1, 0),
        ("open_async", 1, 1, 298),
        ("nested_async", 300, 1, 1),
    ],
)
def test_the_many_keys_benchmark_files_have_the_shape_they_claim(
    tmp_path: Path, kind: str, async_tracks: int, thread_tracks: int, max_depth: int
) -> None:
    """`benchmarks/make_many_keys_json.py` writes what its memory figures are about: N threads, or N
    async ids sharing one track (one row when they do not overlap; when all stay open, a row for
    each but the last, which begins where the trace ends), or N ids with a track each."""
    spec = importlib.util.spec_from_file_location(
        "make_many_keys_json", REPO / "benchmarks" / "make_many_keys_json.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = tmp_path / f"{kind}.json"
    module.write(kind, 300, str(path))
    trace = chrome_json.read(str(path), fsspec.filesystem("file"))
    asynchronous = [t for t in trace.tracks if t.kind == "async"]
    assert len(asynchronous) == async_tracks
    assert len([t for t in trace.tracks if t.kind == "thread"]) == thread_tracks
    assert max((t.max_depth for t in asynchronous), default=0) == max_depth
    assert trace.skipped == {}
