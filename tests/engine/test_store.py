"""Cache store: round trip through memory-mapped files, keying, crash safety."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from profscope.engine import store
from profscope.model.columns import TraceBuilder

pytestmark = pytest.mark.stack_independent


def sample_trace():
    b = TraceBuilder("file:///logs/run/host.trace.json", "chrome_trace")
    b.clock_origin_ns = 1_700_000_000_000_000_000
    b.metadata["device"] = {"name": "A100", "peak_flops": 3.12e14}
    cpu = b.section("host", "cpu", sort_index=2)
    gpu = b.section("GPU 0", "gpu")
    t0 = b.track(cpu, "python", kind="thread")
    t1 = b.track(gpu, "stream 7", kind="stream", sort_index=7)
    c = b.track(gpu, "memory", kind="counter")
    names = [b.intern(s) for s in ("step", "matmul", "ünïcode ✓")]
    first = b.add_events(
        t0, [0, 10, 20], [100, 5, 0], names, cat=b.intern("cpu_op"), args=[b'{"a":1}', None, b'{"s":"x"}']
    )
    b.add_events(t1, [50], [30], [names[1]])
    b.add_flow(first, 3, b.intern("launch"))
    b.add_counter(c, [0, 40], [1.5, -2.0])
    b.warn("something odd")
    b.skip("bad event", 3)
    return b.finalize()


def test_round_trip_memory_maps_every_column(tmp_path):
    trace = sample_trace()
    key = store.fingerprint("file:///logs/run/host.trace.json", 1234, "1.5")
    path = store.write(
        trace, str(tmp_path), key, extra={"extra_thing": np.arange(5)}, extra_meta={"k": [1, 2]}
    )
    assert path == store.entry_dir(str(tmp_path), key)
    back = store.open(path)
    for name in store.COLUMNS:
        col = getattr(back, name)
        assert isinstance(col, np.memmap), name
        np.testing.assert_array_equal(col, getattr(trace, name))
        assert col.dtype == store.COLUMNS[name]
    assert back.strings == trace.strings
    assert back.sections == trace.sections and back.tracks == trace.tracks
    assert back.clock_origin_ns == trace.clock_origin_ns
    assert back.warnings == ["something odd"] and back.skipped == {"bad event": 3}
    assert back.metadata == trace.metadata
    assert back.args_json(0) == b'{"a":1}'
    np.testing.assert_array_equal(store.load_array(path, "extra_thing"), np.arange(5))
    assert store.read_meta(path)["extra_meta"] == {"k": [1, 2]}
    served, extra, extra_meta, entry_id = store.open_with_extra(path)
    assert served.strings == trace.strings and served.num_events == trace.num_events
    assert set(extra) == {"extra_thing"} and isinstance(extra["extra_thing"], np.memmap)
    np.testing.assert_array_equal(extra["extra_thing"], np.arange(5))
    assert extra_meta == {"k": [1, 2]}
    assert entry_id == store.read_meta(path)["entry_id"] and not store.discarded(entry_id)


def test_empty_trace_round_trips(tmp_path):
    trace = TraceBuilder("empty", "xplane").finalize()
    path = store.write(trace, str(tmp_path), "0" * 64)
    back = store.open(path)
    assert back.num_events == 0 and back.strings == [""]


@pytest.mark.parametrize("batch", [1, 2, 3, 1 << 16])
def test_tracks_round_trip_whatever_the_batch(tmp_path, monkeypatch, batch):
    monkeypatch.setattr(store, "TRACK_BATCH", batch)
    trace = sample_trace()
    path = store.write(trace, str(tmp_path), "t" * 64)
    assert store.open(path).tracks == trace.tracks
    with open(os.path.join(path, store.TRACKS_FILE), "rb") as f:
        assert [t["name"] for t in json.load(f)] == ["python", "stream 7", "memory"]


def test_an_edited_track_file_is_refused(tmp_path):
    path = store.write(sample_trace(), str(tmp_path), "t" * 64)
    file = os.path.join(path, store.TRACKS_FILE)
    with open(file, "rb") as f:
        text = f.read()
    with open(file, "wb") as f:
        f.write(text.replace(b"stream 7", b"stream 8"))
    with pytest.raises(store.CacheError, match="tracks.json damaged"):
        store.open(path)


def test_fingerprint_changes_with_size_version_and_url():
    base = store.fingerprint("file:///a", 10, "100.0")
    assert base == store.fingerprint("file:///a", 10, "100.0")
    assert base != store.fingerprint("file:///a", 11, "100.0")
    assert base != store.fingerprint("file:///a", 10, "100.5")
    assert base != store.fingerprint("file:///b", 10, "100.0")


def test_lookup_needs_complete_entry_of_this_version(tmp_path):
    root = str(tmp_path)
    key = "a" * 64
    assert store.lookup(root, key) is None
    path = store.write(sample_trace(), root, key)
    assert store.lookup(root, key) == path
    meta_file = os.path.join(path, store.META_FILE)
    with open(meta_file, encoding="utf-8") as f:
        text = f.read()
    with open(meta_file, "w", encoding="utf-8") as f:
        f.write(text.replace(f'"format_version":{store.FORMAT_VERSION}', '"format_version":0'))
    assert store.lookup(root, key) is None
    with pytest.raises(store.CacheError):
        store.open(path)
    # A rebuild replaces the stale directory.
    assert store.write(sample_trace(), root, key) == path
    assert store.lookup(root, key) == path


def test_crash_while_writing_leaves_no_entry(tmp_path, monkeypatch):
    root = str(tmp_path)
    key = "b" * 64
    calls = []

    def dying_save(file, array):
        calls.append(file)
        if len(calls) == 5:
            raise OSError("disk full")
        with open(file, "wb") as f:
            np.lib.format.write_array(f, np.ascontiguousarray(array))

    monkeypatch.setattr(store, "_save", dying_save)
    with pytest.raises(OSError, match="disk full"):
        store.write(sample_trace(), root, key)
    assert store.lookup(root, key) is None
    assert not os.path.exists(store.entry_dir(root, key))
    assert os.listdir(os.path.join(root, store.TMP_DIR)) == []


def test_half_written_directory_is_never_used(tmp_path):
    """What a killed writer leaves behind (a temp dir, or an entry dir without meta.json)."""
    root = str(tmp_path)
    key = "c" * 64
    path = store.entry_dir(root, key)
    os.makedirs(path)
    np.save(os.path.join(path, "ev_start_ps.npy"), np.arange(3))
    assert store.lookup(root, key) is None
    with pytest.raises(store.CacheError):
        store.open(path)
    assert store.write(sample_trace(), root, key) == path
    assert store.open(path).num_events == 4


def test_concurrent_writer_wins_and_entry_is_kept(tmp_path, monkeypatch):
    """If another process renamed a complete entry into place first, ours is dropped quietly."""
    root = str(tmp_path)
    key = "d" * 64
    real_replace = os.replace
    raced = []

    def racing_replace(src, dst):
        if dst == store.entry_dir(root, key) and not raced:
            raced.append(src)
            real_replace(src, dst)  # stands for the other writer's identical entry landing first
            raise OSError(39, "Directory not empty")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", racing_replace)
    path = store.write(sample_trace(), root, key)
    assert raced and store.lookup(root, key) == path
    assert store.open(path).num_events == 4


def test_clean_tmp_removes_only_old_leftovers(tmp_path):
    root = str(tmp_path)
    old = os.path.join(root, store.TMP_DIR, "old")
    new = os.path.join(root, store.TMP_DIR, "new")
    os.makedirs(old)
    os.makedirs(new)
    os.utime(old, (1, 1))
    assert store.clean_tmp(root, older_than_s=60) == 1
    assert os.listdir(os.path.join(root, store.TMP_DIR)) == ["new"]


def test_index_built_while_columns_are_written(tmp_path):
    root = str(tmp_path)
    trace = sample_trace()
    path = store.write(trace, root, "e" * 64, compute_extra=lambda: ({"x": np.arange(3)}, {"n": 3}))
    assert store.read_meta(path)["extra_meta"] == {"n": 3}
    np.testing.assert_array_equal(store.load_array(path, "x"), np.arange(3))

    def failing():
        raise MemoryError("index too big")

    with pytest.raises(MemoryError):
        store.write(trace, root, "f" * 64, compute_extra=failing)
    assert store.lookup(root, "f" * 64) is None
    assert os.listdir(os.path.join(root, store.TMP_DIR)) == []


@pytest.mark.parametrize(
    "array",
    [
        np.arange(5, dtype=np.int64),
        np.zeros(0, np.int32),
        np.ones(3, bool),
        np.zeros((2, 3), ">f8"),
        np.arange(4, dtype=np.uint8),
    ],
)
def test_npy_headers_are_read_without_building_an_ast(array, tmp_path, monkeypatch):
    """numpy's header parser (ast.literal_eval) fails at random when threads build ASTs at once on
    CPython 3.11 ('AST constructor recursion depth mismatch'); the headers we write need no AST."""
    path = tmp_path / "a.npy"
    np.save(path, array)
    with open(path, "rb") as f:
        np.lib.format.read_magic(f)
        expected = np.lib.format.read_array_header_1_0(f)
        offset = f.tell()

    def no_ast(*args, **kwargs):
        raise AssertionError("parsed with ast")

    monkeypatch.setattr("ast.literal_eval", no_ast)
    with open(path, "rb") as f:
        shape, fortran, dtype = store.read_npy_header(f)
        assert (shape, fortran, dtype) == expected and f.tell() == offset


def test_an_unusual_npy_header_still_reads_through_numpy(tmp_path):
    path = tmp_path / "s.npy"
    np.save(path, np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")]))
    with open(path, "rb") as f:
        shape, fortran, dtype = store.read_npy_header(f)
    assert shape == (2,) and not fortran and dtype.names == ("a", "b")
