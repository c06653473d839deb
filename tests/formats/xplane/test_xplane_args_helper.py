"""The args JSON written by the helper process (`xplane_args_helper`) is byte for byte what the
reader writes itself: on every real XPlane, cut into batches of several sizes; when the helper dies
in the middle of a read (the reader writes the jobs it had sent); and the reader uses a helper only
for big files with room for it in the budget. The synthetic stat kinds, repeated and missing names,
shadowed metadata stats and a read in two passes go through the helper in
`test_xplane_edge_cases.py::test_the_args_helper_writes_what_the_reader_writes`. Jobs and answers
cross the pipes with their arrays out of band, whole and writable."""

from __future__ import annotations

import os
import pickle
import threading
from multiprocessing.connection import Connection

import fsspec
import numpy as np
import pytest

from profscope.formats.common import helper_process
from profscope.formats.xplane import args_helper as xplane_args_helper
from profscope.formats.xplane import reader as xplane
from profscope.model.columns import Trace
from tests.support import DATA_DIR
from tests.support.same_trace import assert_same_trace

pytestmark = pytest.mark.stack_independent

DATA = DATA_DIR / "xplane"
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


def test_buffers_cross_a_pipe_out_of_band_whole_and_writable() -> None:
    """`helper_process.send_buffers` / `recv_buffers`: arrays bigger than the pipe's buffer come back
    equal and writable, beside bytes, strings and arrays that cannot go out of band; a pipe closed
    inside a message is an EOFError."""
    r, w = os.pipe()
    reader, writer = Connection(r, writable=False), Connection(w, readable=False)
    big = np.arange(3 << 20, dtype=np.int64)
    message = {"big": big, "strided": big[::7], "empty": np.zeros(0, np.int32), "text": b"\x00x", "n": "ok"}
    sender = threading.Thread(target=helper_process.send_buffers, args=(writer, message))
    sender.start()
    got = helper_process.recv_buffers(reader)
    sender.join()
    assert got.keys() == message.keys() and got["text"] == b"\x00x" and got["n"] == "ok"
    for name in ("big", "strided", "empty"):
        assert got[name].dtype == message[name].dtype and np.array_equal(got[name], message[name])
    got["big"][0] = -1  # writable, as the helper's jobs are written into
    # The other end gone after the head and part of an array.
    head = pickle.dumps(
        (pickle.dumps(big, protocol=5, buffer_callback=lambda b: None), [big.nbytes]),
        protocol=5,
    )
    writer.send_bytes(head)
    os.write(w, b"\x00" * 64)
    writer.close()
    with pytest.raises(EOFError):
        helper_process.recv_buffers(reader)
    reader.close()
