"""The args JSON written by the helper process (`xplane_args_helper`) is byte for byte what the
reader writes itself: on every real XPlane, cut into batches of several sizes; when the helper dies
in the middle of a read (the reader writes the jobs it had sent); and the reader uses a helper only
for big files with room for it in the budget. The synthetic stat kinds, repeated and missing names,
shadowed metadata stats and a read in two passes go through the helper in
`test_xplane_edge_cases.py::test_the_args_helper_writes_what_the_reader_writes`."""

from __future__ import annotations

from pathlib import Path

import fsspec
import pytest

from profscope.columns import Trace
from profscope.formats import xplane, xplane_args_helper
from same_trace import assert_same_trace

pytestmark = pytest.mark.stack_independent

DATA = Path(__file__).parent / "data" / "xplane"
FILES = sorted(p.name for p in DATA.glob("*.xplane.pb"))


def read(name: str, batch_bytes: int | None = None) -> Trace:
    return xplane.read(str(DATA / name), fsspec.filesystem("file"), batch_bytes=batch_bytes)


@pytest.mark.parametrize("batch_bytes", [None, 1 << 14])
@pytest.mark.parametrize("name", FILES)
def test_the_helper_writes_the_args_the_reader_writes(name, batch_bytes, monkeypatch, request):
    here = read(name, batch_bytes)
    assert here.args_off[-1] > 0
    helpers = request.getfixturevalue("forced_args_helper")
    there = read(name, batch_bytes)
    assert helpers.started and helpers.jobs_sent > 0
    assert not any(h.failed for h in helpers.started)
    assert_same_trace(there, here)


def test_a_helper_that_dies_mid_read_leaves_its_jobs_to_the_reader(forced_args_helper, monkeypatch):
    name = "gpu_8x_tf_training.xplane.pb"
    original = xplane_args_helper.ArgsHelper.submit
    submitted = []

    def submit(self, job, *rest):
        submitted.append(job)
        if len(submitted) == 5:
            self._started.proc.kill()  # jobs sent before and after this are unanswered
        return original(self, job, *rest)

    monkeypatch.setattr(xplane_args_helper.ArgsHelper, "submit", submit)
    there = read(name, 1 << 14)
    [helper] = forced_args_helper.started
    assert helper.failed and len(submitted) > 10
    monkeypatch.setattr(xplane, "_start_helper", lambda: None)
    assert_same_trace(there, read(name, 1 << 14))


def test_only_big_files_with_room_in_the_budget_get_a_helper(monkeypatch):
    big, room = xplane_args_helper.MIN_FILE_BYTES, 3 * xplane_args_helper.HELPER_BYTES
    monkeypatch.setattr(xplane_args_helper.os, "cpu_count", lambda: 2)
    assert xplane_args_helper.wanted(big, room)
    assert not xplane_args_helper.wanted(big - 1, room)
    assert not xplane_args_helper.wanted(big, room - 1)
    monkeypatch.setattr(xplane_args_helper.os, "cpu_count", lambda: 1)
    assert not xplane_args_helper.wanted(big, room)
