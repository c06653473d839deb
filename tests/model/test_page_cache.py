"""What the ingest gives back of the page cache. Inputs read once leave it behind their reader
(`spill_pages.DropBehind`): only what was read, in order, and never what the reading comes back to (the
advice itself is recorded here: a test cannot see the page cache; the benchmarks measure what it
saves). Temporary files' ranges read for the last time are released by a thread
(`spill_pages.release_later`)."""

from __future__ import annotations

import gzip
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import fsspec
import pytest

from profscope.formats.chrome.blocks import BlockReader
from profscope.formats.xplane import reader as xplane
from profscope.model.spill import page_cache as spill_pages
from tests.formats.chrome.test_chrome_streaming import _punches_holes
from tests.formats.xplane.test_xplane_streaming import assert_same
from tests.support import DATA_DIR

DATA = DATA_DIR


class _Recorder:
    """`os.preadv` and `os.posix_fadvise(DONTNEED)` calls on one file, in order."""

    def __init__(self, path: Path) -> None:
        self.ino = os.stat(path).st_ino
        self.events: list[tuple[str, int, int]] = []  # (what, start, end)
        self._preadv, self._fadvise = os.preadv, os.posix_fadvise

    def _ours(self, fd: int) -> bool:
        return os.fstat(fd).st_ino == self.ino

    def preadv(self, fd: int, buffers: list, offset: int) -> int:
        got = self._preadv(fd, buffers, offset)
        if self._ours(fd) and got > 0:
            self.events.append(("read", offset, offset + got))
        return got

    def fadvise(self, fd: int, offset: int, length: int, advice: int) -> None:
        if self._ours(fd) and advice == os.POSIX_FADV_DONTNEED:
            self.events.append(("drop", offset, offset + length))
        self._fadvise(fd, offset, length, advice)

    def drops(self) -> list[tuple[int, int]]:
        return [(a, b) for what, a, b in self.events if what == "drop"]


@pytest.fixture
def small_steps() -> Iterator[None]:
    with (
        mock.patch.object(spill_pages, "DROP_BEHIND_MIN_BYTES", 0),
        mock.patch.object(spill_pages, "DROP_BEHIND_STEP_BYTES", 64 << 10),
    ):
        yield


@pytest.mark.parametrize("name", ["gpu_8x_tf_training.xplane.pb", "tpu_v6e_inference.xplane.pb"])
def test_an_xplane_is_dropped_behind_its_pass(name: str, small_steps: None) -> None:
    path = DATA / "xplane" / name
    fs = fsspec.filesystem("file")
    want = xplane.read(str(path), fs, batch_bytes=64 << 10)  # type: ignore[arg-type]
    rec = _Recorder(path)
    with mock.patch.object(os, "preadv", rec.preadv), mock.patch.object(os, "posix_fadvise", rec.fadvise):
        got = xplane.read(str(path), fs, batch_bytes=64 << 10)  # type: ignore[arg-type]
    assert_same(got, want)
    drops = rec.drops()
    # In order from the start, each one after the last, most of the file and within it.
    assert drops[0][0] == 0
    assert all(a == prev_end for (_, prev_end), (a, _) in zip(drops, drops[1:]))
    assert os.path.getsize(path) // 2 <= drops[-1][1] <= os.path.getsize(path)
    # Nothing dropped is read again, and nothing is dropped before it was read.
    dropped_to, read_to = 0, 0
    for what, a, b in rec.events:
        if what == "drop":
            assert b <= read_to
            dropped_to = b
        else:
            assert a >= dropped_to
            read_to = max(read_to, b)


def test_a_small_xplane_is_left_in_the_page_cache() -> None:
    """Under DROP_BEHIND_MIN_BYTES (small files are read again by tests and tools)."""
    path = DATA / "xplane" / "gpu_8x_tf_training.xplane.pb"
    rec = _Recorder(path)
    with (
        mock.patch.object(spill_pages, "DROP_BEHIND_STEP_BYTES", 64 << 10),
        mock.patch.object(os, "posix_fadvise", rec.fadvise),
    ):
        xplane.read(str(path), fsspec.filesystem("file"), batch_bytes=64 << 10)  # type: ignore[arg-type]
    assert rec.drops() == []


@pytest.mark.parametrize("compressed", [False, True])
def test_a_chrome_trace_is_dropped_behind_its_blocks(
    tmp_path: Path, compressed: bool, small_steps: None
) -> None:
    source = DATA / "kineto" / "worker0.1623143089861.pt.trace.json.gz"
    path = tmp_path / "trace.json"
    data = gzip.decompress(source.read_bytes())
    path.write_bytes(source.read_bytes() if compressed else data)
    start = 1000
    rec = _Recorder(path)
    with (
        mock.patch.object(os, "posix_fadvise", rec.fadvise),
        mock.patch("profscope.formats.chrome.blocks.READ_BLOCK_BYTES", 32 << 10),
        open(path, "rb") as f,
    ):
        reader = BlockReader(f, start=0 if compressed else start, gzip=compressed)
        blocks = []
        while (block := reader.next_block()) is not None:
            blocks.append(block)
        reader.close()
    assert b"".join(blocks) == (data if compressed else data[start:])
    drops = rec.drops()
    size = os.path.getsize(path)
    assert len(drops) >= size // (128 << 10)
    assert drops[0][0] == (0 if compressed else start)
    assert all(a == prev_end for (_, prev_end), (a, _) in zip(drops, drops[1:]))
    assert drops[-1][1] <= size


def test_a_file_with_no_descriptor_is_not_advised(small_steps: None) -> None:
    """A remote file (no `fileno`): nothing to advise, and no error."""
    drop = spill_pages.DropBehind(object())
    with mock.patch.object(os, "posix_fadvise") as fadvise:
        drop.read_to(1 << 30)
    fadvise.assert_not_called()


def _blocks(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def test_a_range_is_released_after_its_file_is_closed(tmp_path: Path) -> None:
    """The thread punches through its own descriptor: closing the file right away is safe."""
    if not _punches_holes(tmp_path):
        pytest.skip("this file system does not punch holes")
    path = tmp_path / "scratch"
    with open(path, "w+b", buffering=0) as f:
        f.write(b"y" * (4 << 20))
        os.fsync(f.fileno())
        spill_pages.release_later(f.fileno(), 0, 3 << 20)
    spill_pages.wait_released()
    assert _blocks(path) <= 1 << 20
    assert path.read_bytes() == bytes(3 << 20) + b"y" * (1 << 20)


def test_a_failing_release_does_not_stop_the_next_ones(tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    real = spill_pages.release_range

    def failing_first(fd: int, at: int, size: int) -> bool:
        calls.append((at, size))
        if len(calls) == 1:
            raise OSError("no")
        return real(fd, at, size)

    with (
        open(tmp_path / "scratch", "w+b", buffering=0) as f,
        mock.patch.object(spill_pages, "release_range", failing_first),
    ):
        f.write(b"z" * (1 << 20))

        def release_all() -> None:
            for k in range(100):  # more than the queue holds
                spill_pages.release_later(f.fileno(), k * 4096, 4096)
            spill_pages.wait_released()

        worker = threading.Thread(target=release_all, daemon=True)
        worker.start()
        worker.join(30)
        assert not worker.is_alive(), "the releases stopped"
    assert len(calls) == 100


def test_a_forked_child_releases_with_a_thread_of_its_own(tmp_path: Path) -> None:
    """A child forked after the parent started its thread has none: it starts one."""
    if not _punches_holes(tmp_path):
        pytest.skip("this file system does not punch holes")
    with open(tmp_path / "probe", "r+b", buffering=0) as f:
        spill_pages.release_later(f.fileno(), 0, 4096)  # the parent's thread
        spill_pages.wait_released()
    path = tmp_path / "scratch"
    path.write_bytes(b"w" * (1 << 20))
    with open(path, "r+b", buffering=0) as f:
        os.fsync(f.fileno())
        pid = os.fork()
        if pid == 0:  # the child: exit at once, whatever happens
            code = 1
            try:
                spill_pages.release_later(f.fileno(), 0, 1 << 20)
                spill_pages.wait_released()
                code = 0
            finally:
                os._exit(code)
        deadline = time.monotonic() + 30
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        if done[0] == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the child's release never happened")
    assert os.waitstatus_to_exitcode(done[1]) == 0
    assert _blocks(path) == 0
