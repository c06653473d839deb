"""The XPlane helper process (`formats.xplane.helper`): a trace read with the walk and part of the
decoding in a second process is the one read in one process, for every real XPlane in
tests/data/xplane, whoever decodes each window, and whether the helper is a fresh interpreter or a
fork of the reading process (a local ingest child: `helper_process.allow_fork`); a helper that
fails or dies leaves the reader to walk the file itself, and one that falls behind (stopped, or
slow) leaves the rest of it to the reader, from a window's end; damaged files read the same."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest

from profscope.errors import UnreadableProfile
from profscope.formats.common import helper_process
from profscope.formats.xplane import decode as xplane_decode
from profscope.formats.xplane import helper as xplane_helper
from profscope.formats.xplane import reader as xplane
from profscope.formats.xplane import walk as xplane_walk
from profscope.formats.xplane.source import FileBytes
from profscope.model.columns import Trace
from tests.formats.xplane.test_xplane_streaming import DATA, FILES, assert_same

pytestmark = pytest.mark.skipif(not xplane_helper.can_help(1 << 62), reason="needs two cores and POSIX")


def read(path: Path, **options: int) -> Trace:
    return xplane.read(str(path), fsspec.filesystem("file"), **options)  # type: ignore[arg-type]


@pytest.fixture
def helpers(monkeypatch: pytest.MonkeyPatch) -> list[xplane_helper.Helper]:
    """Every file gets a helper from now on; the helpers started."""
    started: list[xplane_helper.Helper] = []
    original = xplane_helper.Helper.__init__

    def spy(self: xplane_helper.Helper, source_fd: int) -> None:
        original(self, source_fd)
        started.append(self)

    monkeypatch.setattr(xplane_helper, "HELPER_MIN_BYTES", 0)
    monkeypatch.setattr(xplane_helper.Helper, "__init__", spy)
    return started


@pytest.fixture
def forked(
    helpers: list[xplane_helper.Helper], monkeypatch: pytest.MonkeyPatch
) -> list[xplane_helper.Helper]:
    """As `helpers`, in a process that forks its helpers (as a local ingest child does)."""
    monkeypatch.setattr(helper_process, "_fork_allowed", False)
    helper_process.allow_fork()
    monkeypatch.setattr(xplane_helper, "FORKED_HELPER_MIN_BYTES", 0)
    monkeypatch.setattr(helper_process, "core_free", lambda: True)
    return helpers


def one_process(path: Path, batch_bytes: int) -> Trace:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(xplane_helper, "HELPER_MIN_BYTES", 1 << 62)
        mp.setattr(xplane_helper, "FORKED_HELPER_MIN_BYTES", 1 << 62)
        return read(path, batch_bytes=batch_bytes)


@functools.cache
def one_process_trace(name: str) -> Trace:
    """`one_process` of a file of tests/data/xplane in 4 kB windows, read once for all the tests."""
    return one_process(DATA / name, 4096)


@pytest.mark.parametrize("started_by", ["helpers", "forked"])
@pytest.mark.parametrize("name", FILES)
def test_a_helper_gives_the_one_process_trace(
    name: str, started_by: str, request: pytest.FixtureRequest
) -> None:
    """A helper started as an interpreter of its own (`helpers`) or forked (`forked`)."""
    started: list[xplane_helper.Helper] = request.getfixturevalue(started_by)
    path = DATA / name
    want = one_process(path, 1 << 30)
    # 4 kB windows: hundreds of steps, most lines cut many times, some windows decoded by the
    # helper (while steps wait to be sent) and some by the reader.
    got = read(path, batch_bytes=4096)
    assert len(started) == 1
    proc = started[0]._started.proc
    assert isinstance(proc, helper_process.Forked) == (started_by == "forked")
    assert proc.poll() is not None  # stopped (and a fork reaped) once the pass is done
    assert got.num_events == want.num_events > 1000
    assert_same(got, want)


def test_small_files_get_a_helper_only_where_it_is_forked_and_a_core_is_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(helper_process, "_fork_allowed", False)
    monkeypatch.setattr(helper_process, "usable_cores", lambda: 2)
    running = [1]  # threads running now, the reader's included
    monkeypatch.setattr(helper_process, "_running_now", lambda: running[0])
    monkeypatch.setattr(helper_process, "_LOOKS", 1)
    small, big = xplane_helper.FORKED_HELPER_MIN_BYTES, xplane_helper.HELPER_MIN_BYTES
    assert small < big
    assert not xplane_helper.can_help(small) and xplane_helper.can_help(big)
    helper_process.allow_fork()
    assert xplane_helper.can_help(small) and not xplane_helper.can_help(small - 1)
    running[0] = 2  # the second core is busy: the small file is read in one process, the big one not
    assert not xplane_helper.can_help(small) and xplane_helper.can_help(big)


def test_a_free_core_is_one_no_other_thread_ran_on_at_one_look(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(helper_process, "usable_cores", lambda: 2)
    looks = iter([3, 1, 2])
    monkeypatch.setattr(helper_process, "_running_now", lambda: next(looks))
    assert helper_process.core_free()
    looks = iter([2, 2, 3])
    assert not helper_process.core_free()

    def unreadable() -> int:
        raise OSError("no /proc here")

    monkeypatch.setattr(helper_process, "_running_now", unreadable)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.6, 2.0, 2.0))
    assert helper_process.core_free()
    monkeypatch.setattr(os, "getloadavg", lambda: (1.4, 0.2, 0.2))
    assert not helper_process.core_free()


def test_the_usable_cores_are_the_affinity_capped_by_the_cgroup_quota(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process pinned to one core, or a container given one core's quota, gets no helper:
    the helper would share that core with the reader."""
    cpu_max = tmp_path / "cpu.max"
    monkeypatch.setattr(helper_process, "_CGROUP_CPU_MAX", cpu_max)
    affinity = len(os.sched_getaffinity(0))
    assert helper_process.usable_cores() == affinity  # no quota file
    cpu_max.write_text("max 100000\n")
    assert helper_process.usable_cores() == affinity
    cpu_max.write_text("150000 100000\n")  # one and a half cores: the second is worth a helper
    assert helper_process.usable_cores() == min(affinity, 2)
    cpu_max.write_text("100000 100000\n")
    assert helper_process.usable_cores() == 1
    assert not helper_process.possible()
    assert not xplane_helper.can_help(xplane_helper.HELPER_MIN_BYTES)

    monkeypatch.undo()
    first_core = min(os.sched_getaffinity(0))
    pinned = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os; from profscope.formats.common import helper_process as h; "
            f"os.sched_setaffinity(0, {{{first_core}}}); print(h.usable_cores(), h.possible())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert pinned.stdout.split() == ["1", "False"]


@pytest.mark.parametrize("name", FILES)
def test_who_decodes_a_window_does_not_change_the_trace(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = DATA / name
    want = read(path, batch_bytes=4096)
    turns = itertools.cycle([True, False, False])

    class Alternating(xplane_walk.PlaneWalk):
        def __init__(self, *args: object) -> None:
            super().__init__(*args, decode_now=lambda: next(turns))  # type: ignore[arg-type]

    monkeypatch.setattr(xplane, "PlaneWalk", Alternating)
    assert_same(read(path, batch_bytes=4096), want)


def test_a_failing_helper_leaves_the_reading_to_the_reader(
    helpers: list[xplane_helper.Helper], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = DATA / FILES[0]
    want = one_process_trace(FILES[0])
    original = xplane_helper.Helper.plane_steps

    def failing(self: xplane_helper.Helper):  # type: ignore[no-untyped-def]
        steps = original(self)
        yield next(steps)
        raise xplane_helper.HelperFailed("broken on purpose")

    monkeypatch.setattr(xplane_helper.Helper, "plane_steps", failing)
    assert_same(read(path, batch_bytes=4096), want)
    assert len(helpers) == 1 and helpers[0]._started.proc.poll() is not None


@pytest.mark.parametrize("started_by", ["helpers", "forked"])
def test_a_helper_that_dies_leaves_the_reading_to_the_reader(
    started_by: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper started as an interpreter of its own (`helpers`) or forked (`forked`), killed
    before its first walk: the reader reads the file alone."""
    started: list[xplane_helper.Helper] = request.getfixturevalue(started_by)
    path = DATA / FILES[0]
    want = one_process_trace(FILES[0])
    original = xplane_helper.Helper.walk

    def killed_first(
        self: xplane_helper.Helper, slots: list[list[tuple[int, int]]], batch_bytes: int
    ) -> None:
        self._started.proc.kill()
        assert self._started.proc.wait() == -9
        original(self, slots, batch_bytes)

    monkeypatch.setattr(xplane_helper.Helper, "walk", killed_first)
    assert_same(read(path, batch_bytes=4096), want)
    assert len(started) == 1
    assert isinstance(started[0]._started.proc, helper_process.Forked) == (started_by == "forked")


def test_progress_moves_with_a_helper(helpers: list[xplane_helper.Helper]) -> None:
    path = DATA / max(FILES, key=lambda n: (DATA / n).stat().st_size)
    seen: list[tuple[int, int]] = []
    xplane.read(str(path), fsspec.filesystem("file"), lambda d, t: seen.append((d, t)), batch_bytes=4096)
    size = path.stat().st_size
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == size
    assert len(set(done)) > 10  # it moved through the lines, not only at the end


@pytest.mark.parametrize("keep", [0.3, 0.7])
def test_a_truncated_file_reads_the_same_with_a_helper(
    keep: float, tmp_path: Path, helpers: list[xplane_helper.Helper]
) -> None:
    data = (DATA / FILES[0]).read_bytes()
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(data[: int(len(data) * keep)])
    got = read(path, batch_bytes=4096)
    want = one_process(path, 4096)
    assert got.warnings and any("damaged input" in w for w in got.warnings)
    assert_same(got, want)


def test_garbage_gives_the_same_error_with_a_helper(
    tmp_path: Path, helpers: list[xplane_helper.Helper]
) -> None:
    path = tmp_path / "noise.xplane.pb"
    path.write_bytes(os.urandom(1 << 16))
    with pytest.raises(UnreadableProfile) as with_helper:
        read(path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(xplane_helper, "HELPER_MIN_BYTES", 1 << 62)
        with pytest.raises(UnreadableProfile) as without:
            read(path)
    assert str(with_helper.value) == str(without.value)


@pytest.mark.parametrize("name", FILES)
def test_a_decoded_window_crosses_the_pipe_unchanged(name: str) -> None:
    """What `Decoded` leaves out of its pickle comes back the same, dtypes included."""
    steps: list[xplane_walk.Step] = []
    source = FileBytes(os.open(DATA / name, os.O_RDONLY))
    try:
        index = xplane_decode.index_space(source)
        for slots in index.slots:
            xplane_walk.PlaneWalk(source, 1 << 16, steps.append).run(slots)
    finally:
        os.close(source.fileno())
    decoded = [s.decoded for s in steps if isinstance(s, xplane_walk.Flush) and s.decoded is not None]
    assert sum(d.batch.st_kind.shape[0] for d in decoded) > 1000
    for d in decoded:
        back = pickle.loads(pickle.dumps(d, protocol=5))
        assert back.skipped == d.skipped and np.array_equal(back.readable, d.readable)
        for field in dataclasses.fields(d.batch):
            if field.name != "_data":
                a, b = getattr(back.batch, field.name), getattr(d.batch, field.name)
                assert a.dtype == b.dtype and np.array_equal(a, b), field.name


@pytest.fixture
def no_hang() -> Iterator[None]:
    """Fail a test still running after 60 s (a reader waiting for a stopped helper for ever)."""

    def expired(signum: int, frame: object) -> None:
        pytest.fail("still waiting after 60 s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def took_over(monkeypatch: pytest.MonkeyPatch) -> list[xplane_helper.HelperBehind]:
    """The take-overs of the reads from now on (each `HelperBehind` the reader caught)."""
    seen: list[xplane_helper.HelperBehind] = []
    original = xplane_helper.HelperBehind.__init__

    def spy(self: xplane_helper.HelperBehind, *args: Any) -> None:
        original(self, *args)
        seen.append(self)

    monkeypatch.setattr(xplane_helper.HelperBehind, "__init__", spy)
    return seen


@pytest.mark.usefixtures("no_hang")
@pytest.mark.parametrize(("name", "after"), [(n, a) for n in FILES for a in (1, 2, 7, 40)])
def test_a_stopped_helper_leaves_the_rest_to_the_reader(
    name: str, after: int, forked: list[xplane_helper.Helper], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forked helper stops itself (SIGSTOP) as its walk hands on step `after`, so the steps
    before it are all the reader gets: the reader walks the rest itself, from the last window's
    end before them, and the trace is the one-process one."""
    path = DATA / name
    want = one_process_trace(name)
    behind = took_over(monkeypatch)
    original = xplane_helper._Timed.put
    counts = itertools.count(1)

    def stopping(self: xplane_helper._Timed, step: xplane_walk.Step) -> None:
        if next(counts) == after:
            os.kill(os.getpid(), signal.SIGSTOP)
        original(self, step)

    monkeypatch.setattr(xplane_helper._Timed, "put", stopping)  # the fork runs this process's code
    got = read(path, batch_bytes=4096)
    assert len(forked) == 1 and len(behind) == 1
    assert forked[0]._started.proc.poll() is not None  # killed and reaped
    assert_same(got, want)


@pytest.mark.usefixtures("no_hang")
def test_a_stopped_helper_of_its_own_interpreter_leaves_the_rest_to_the_reader(
    helpers: list[xplane_helper.Helper], monkeypatch: pytest.MonkeyPatch
) -> None:
    name = max(FILES, key=lambda n: (DATA / n).stat().st_size)  # hundreds of steps
    path, want = DATA / name, one_process_trace(name)
    behind = took_over(monkeypatch)
    original = xplane_helper.Helper.plane_steps

    def stopping(self: xplane_helper.Helper) -> Iterator[xplane_walk.Step]:
        for count, step in enumerate(original(self)):
            if count == 2:
                os.kill(self._started.proc.pid, signal.SIGSTOP)
            yield step

    monkeypatch.setattr(xplane_helper.Helper, "plane_steps", stopping)
    got = read(path, batch_bytes=4096)
    assert len(helpers) == 1 and len(behind) == 1
    assert helpers[0]._started.proc.poll() is not None
    assert_same(got, want)


@pytest.mark.usefixtures("no_hang")
def test_a_slow_helper_leaves_the_rest_to_the_reader(
    forked: list[xplane_helper.Helper], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper whose steps come 20 ms after the walk has them (each cost it a fraction of that in
    CPU) is dropped for the reader's own walk; the trace does not change."""
    name = max(FILES, key=lambda n: (DATA / n).stat().st_size)
    path, want = DATA / name, one_process_trace(name)
    behind = took_over(monkeypatch)
    original = xplane_helper._Timed.put

    def late(self: xplane_helper._Timed, step: xplane_walk.Step) -> None:
        original(self, step)
        time.sleep(0.02)  # not CPU time: what the steps cost the helper stays as it was

    monkeypatch.setattr(xplane_helper._Timed, "put", late)  # the fork runs this process's code
    got = read(path, batch_bytes=4096)
    assert len(forked) == 1 and len(behind) == 1
    assert_same(got, want)


def test_the_reader_takes_over_when_its_waits_exceed_the_helpers_cpu_at_its_own_pace() -> None:
    lag = xplane_helper.Lag(0.5)
    lag.applied(0.02, 0.01)  # the reader's work goes at half speed: it shares its core
    assert lag.pace() == pytest.approx(2.0)
    flush = xplane_walk.Flush([], [], np.zeros(0, dtype=np.int64))
    lag.received(flush, waited=0.015, cpu=0.01)  # waited less than the 0.02 s walking it would take
    assert lag.excess == 0.0
    assert lag.patience() == pytest.approx(xplane_helper.BEHIND_S + 0.02)
    lag.received(flush, waited=0.05, cpu=0.01)
    assert lag.excess == pytest.approx(0.03)
    assert lag.patience() == pytest.approx(xplane_helper.BEHIND_S + 0.02 - 0.03)
    lag.applied(0.01, 0.01)  # full speed again: the older pace counts half
    assert lag.pace() == pytest.approx(0.02 / 0.015)


@pytest.mark.parametrize("name", FILES)
def test_a_walk_resumed_after_any_windows_end_gives_the_same_steps(name: str) -> None:
    """From the `Resume` of a flush (40 of them, spread over the file), a new walk, skipping none,
    one or two steps, hands on exactly the steps that followed it, to the plane's end."""

    def plain(step: xplane_walk.Step) -> tuple[Any, ...]:
        if isinstance(step, xplane_walk.Flush):
            raw = [None if a is None else a.tobytes() for a in (step.buf, step.records, step.limits)]
            return (
                "flush",
                step.slots,
                step.headers,
                step.counts.tolist(),
                step.ended,
                step.pos,
                raw,
                step.resume,
            )
        if isinstance(step, xplane_walk.Others):
            return ("others", step.slot, step.header, [(b.num_events, skipped) for b, skipped in step.chunks])
        return ("line", step.slot, step.pos)

    source = FileBytes(os.open(DATA / name, os.O_RDONLY))
    try:
        index = xplane_decode.index_space(source)
        walks = []
        for slots in index.slots:
            steps: list[xplane_walk.Step] = []
            xplane_walk.PlaneWalk(source, 4096, steps.append, decode_now=lambda: False).run(slots)
            walks.append((slots, steps, [plain(s) for s in steps]))
        ends = [(p, i) for p, (_, steps, _) in enumerate(walks) for i, s in enumerate(steps)
                if isinstance(s, xplane_walk.Flush) and s.resume is not None]  # fmt: skip
        assert len(ends) > 20
        for p, i in ends[:: max(1, len(ends) // 40)]:
            slots, steps, want = walks[p]
            skip = i % 3
            got: list[xplane_walk.Step] = []
            walk = xplane_walk.PlaneWalk(source, 4096, got.append, decode_now=lambda: False, skip=skip)
            walk.run(slots, steps[i].resume)  # type: ignore[union-attr]
            assert [plain(s) for s in got] == want[i + 1 + skip :]
    finally:
        os.close(source.fileno())
