"""Files replaced after discovery listed them (issue 41): every open of a logdir file checks what it
opened, so a listed file swapped for a link to a file outside the logdir is refused (it was read and
served until the next scan), and one swapped for a FIFO is refused at once (its `open()` blocked a
server thread with no timeout). With --profscope_follow_symlinks links are read, never FIFOs. The
readers open their file once, through the `fs` they are given, and read that descriptor (the Chrome
reader's helper process inherits it), so a swap after that open changes nothing they read.

Real traces and XLA logs in tmp dirs; the swaps are made between the listing and the request, as an
attacker with write access to a shared logdir would make them.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import threading
import time

import fsspec
import numpy as np
import pytest

from profscope import logdir as logdir_lib
from profscope.engine.ingest import manager
from profscope.errors import UnreadableProfile
from profscope.formats import registry
from profscope.formats.chrome import helper as chrome_helper
from profscope.formats.chrome import reader as chrome_reader
from profscope.formats.xplane import reader as xplane_reader
from tests.support import DATA_DIR

BASE = "/data/plugin/profscope"
BERT = DATA_DIR / "trace" / "logdir" / "bert" / "bert_small.pt.trace.json.gz"
RANK0 = DATA_DIR / "trace" / "logdir" / "ranks" / "rank-0.pt.trace.json.gz"
XPLANE = (
    DATA_DIR
    / "layouts"
    / "logdir"
    / "xplane"
    / "mi300_jax_conv"
    / "plugins"
    / "profile"
    / "session1"
    / "tw003.xplane.pb"
)
XLA_RUN = DATA_DIR / "layouts" / "logdir" / "xla" / "pytorch_xla_cpu_recompile"
# A request on a FIFO must be answered well within this (it never was).
ANSWER_WITHIN_S = 10.0
# A refused file is unreadable, as a reader's refusal is (never 503, which asks to come back later).
REFUSED = 422


@pytest.fixture
def logdir(tmp_path: pathlib.Path) -> pathlib.Path:
    """logdir/bert (a Kineto trace), logdir/xp/plugins/profile/s/ (an XPlane), logdir/xla (XLA logs),
    and outside/ beside it with another real trace, an XPlane and a `roofline.json`."""
    root = tmp_path / "logdir"
    (root / "bert").mkdir(parents=True)
    shutil.copy(BERT, root / "bert" / "w.pt.trace.json.gz")
    (root / "xp" / "plugins" / "profile" / "s").mkdir(parents=True)
    shutil.copy(XPLANE, root / "xp" / "plugins" / "profile" / "s")
    shutil.copytree(XLA_RUN, root / "xla")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(RANK0, outside / "rank-0.pt.trace.json.gz")
    shutil.copy(XPLANE, outside / "other.xplane.pb")
    (outside / "roofline.json").write_text(json.dumps({"name": "OUTSIDE", "flops": {"bf16": 1e15}}))
    return root


def _swap_for_link(path: pathlib.Path, target: pathlib.Path) -> None:
    """Replace `path` by a symbolic link to `target` in one rename (no moment without the file)."""
    staged = path.with_name(".staged")
    staged.symlink_to(target)
    os.replace(staged, path)


def _swap_for_fifo(path: pathlib.Path) -> None:
    staged = path.with_name(".staged")
    os.mkfifo(staged)
    os.replace(staged, path)


def _answered(client, route: str, query: dict[str, str]):
    """The route's answer once any ingest it started is done (202 while it runs)."""
    deadline = time.monotonic() + 120
    while True:
        response = client.get(f"{BASE}/{route}", query_string=query)
        if response.status_code != 202 or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


def _answered_within(client, route: str, query: dict[str, str], fifo: pathlib.Path):
    """The answer, asked on a thread that must be done within `ANSWER_WITHIN_S`; a reader stuck in
    `open()` on the FIFO is let go afterwards (a writer opens it) so the test run can end."""
    got: list = []
    worker = threading.Thread(target=lambda: got.append(_answered(client, route, query)), daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(ANSWER_WITHIN_S)
    stuck = worker.is_alive()
    if stuck:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(5)
    assert not stuck, f"{route} was still blocked in open() on a FIFO after {ANSWER_WITHIN_S} s"
    return got[0], time.monotonic() - started


SUBJECTS = {
    "chrome": (
        {"run": "bert", "session": "pytorch", "host": "w"},
        "bert/w.pt.trace.json.gz",
        "rank-0.pt.trace.json.gz",
    ),
    "xplane": (
        {"run": "xp", "session": "s", "host": "tw003"},
        "xp/plugins/profile/s/tw003.xplane.pb",
        "other.xplane.pb",
    ),
}


@pytest.mark.parametrize("kind", sorted(SUBJECTS))
def test_a_listed_trace_swapped_for_a_link_out_is_refused(
    plugin_client, logdir: pathlib.Path, kind: str
) -> None:
    query, listed, outside = SUBJECTS[kind]
    _, client = plugin_client(logdir)
    assert client.get(f"{BASE}/runs").status_code == 200  # listed: the next scan is 5 s away
    _swap_for_link(logdir / listed, logdir.parent / "outside" / outside)
    for route in ("trace/meta", "overview", "roofline"):
        response = _answered(client, route, query)
        text = response.get_data(as_text=True)
        assert response.status_code == REFUSED, (route, text[:300])
        assert f"{pathlib.PurePath(listed).name} resolves to a file outside the logdir; refused" in text
        assert "--profscope_follow_symlinks" in text


@pytest.mark.parametrize("kind", sorted(SUBJECTS))
def test_a_listed_trace_swapped_for_a_fifo_is_refused_at_once(
    plugin_client, logdir: pathlib.Path, kind: str
) -> None:
    query, listed, _ = SUBJECTS[kind]
    _, client = plugin_client(logdir)
    assert client.get(f"{BASE}/runs").status_code == 200
    _swap_for_fifo(logdir / listed)
    response, took = _answered_within(client, "trace/meta", query, logdir / listed)
    assert response.status_code == REFUSED and took < ANSWER_WITHIN_S
    assert f"{pathlib.PurePath(listed).name} is a FIFO, not a regular file; refused" in response.get_data(
        as_text=True
    )


def test_follow_flag_reads_a_swapped_link_but_never_a_fifo(plugin_client, logdir: pathlib.Path) -> None:
    query, listed, outside = SUBJECTS["chrome"]
    _, client = plugin_client(logdir, profscope_follow_symlinks=True)
    assert client.get(f"{BASE}/runs").status_code == 200
    _swap_for_link(logdir / listed, logdir.parent / "outside" / outside)
    assert _answered(client, "trace/meta", query).status_code == 200

    query, listed, _ = SUBJECTS["xplane"]
    _swap_for_fifo(logdir / listed)
    response, _ = _answered_within(client, "trace/meta", query, logdir / listed)
    assert response.status_code == REFUSED and "is a FIFO" in response.get_data(as_text=True)


def test_an_xla_log_swapped_for_a_fifo_or_a_link_out_is_reported(plugin_client, logdir: pathlib.Path) -> None:
    query = {"run": "xla", "session": "xla", "host": "xla"}
    _, client = plugin_client(logdir)
    assert client.get(f"{BASE}/runs").status_code == 200
    _swap_for_fifo(logdir / "xla" / "xla_metrics_report.txt")
    _swap_for_link(logdir / "xla" / "pt_xla_debug.txt", logdir.parent / "outside" / "roofline.json")
    response, _ = _answered_within(client, "xla/report", query, logdir / "xla" / "xla_metrics_report.txt")
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    errors = {e["path"]: e["error"] for e in response.get_json()["errors"]}
    assert (
        "xla/xla_metrics_report.txt is a FIFO, not a regular file; refused"
        in errors["xla/xla_metrics_report.txt"]
    )
    assert "xla/pt_xla_debug.txt resolves to a file outside the logdir" in errors["xla/pt_xla_debug.txt"]


def test_a_roofline_override_linked_out_of_the_logdir_is_not_read(
    plugin_client, logdir: pathlib.Path
) -> None:
    (logdir / "bert" / "roofline.json").symlink_to(logdir.parent / "outside" / "roofline.json")
    _, client = plugin_client(logdir)
    response = _answered(client, "roofline", SUBJECTS["chrome"][0])
    body = response.get_json()
    assert response.status_code == 200 and body["device"]["name"] != "OUTSIDE"
    assert any("roofline.json resolves to a file outside the logdir; refused" in w for w in body["warnings"])


def test_the_ingest_child_refuses_a_fifo_at_once(logdir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    fs = logdir_lib.Logdir(str(logdir)).fs
    fs = type(fs).from_json(fs.to_json())  # as the child rebuilds it from the job spec
    listed = logdir / SUBJECTS["xplane"][1]
    _swap_for_fifo(listed)
    spec = {
        "url": str(listed),
        "format": registry.XPLANE,
        "reader": manager.READERS[registry.XPLANE],
        "fs": fs.to_json(),
        "cache_root": str(tmp_path / "cache"),
        "key": "k" * 32,
        "size": XPLANE.stat().st_size,
    }
    started = time.monotonic()
    assert manager.run_ingest(spec) == 2 and time.monotonic() - started < ANSWER_WITHIN_S


READERS = {"chrome": chrome_reader.read, "xplane": xplane_reader.read}
FILESYSTEMS = {
    "plain": lambda root: fsspec.filesystem("file"),  # a reader used outside the server
    "logdir": lambda root: logdir_lib.LogdirFileSystem(str(root)),
}


@pytest.mark.parametrize("fs_kind", sorted(FILESYSTEMS))
@pytest.mark.parametrize("kind", sorted(SUBJECTS))
def test_a_reader_given_a_fifo_refuses_it_at_once(logdir: pathlib.Path, kind: str, fs_kind: str) -> None:
    """A FIFO swapped in after the server checked the file and before the reader opens it."""
    listed = logdir / SUBJECTS[kind][1]
    _swap_for_fifo(listed)
    failed: list[BaseException] = []

    def read() -> None:
        try:
            READERS[kind](str(listed), FILESYSTEMS[fs_kind](logdir))
        except BaseException as e:
            failed.append(e)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(ANSWER_WITHIN_S)
    stuck = worker.is_alive()
    if stuck:  # let the reader go (a writer opens the FIFO), so the test run can end
        os.close(os.open(listed, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(5)
    assert not stuck, f"the {kind} reader was still blocked in open() on a FIFO after {ANSWER_WITHIN_S} s"
    assert len(failed) == 1 and isinstance(failed[0], UnreadableProfile), failed
    assert "a FIFO, not a regular file; refused" in failed[0].reason


@pytest.mark.parametrize("kind", sorted(SUBJECTS))
def test_a_reader_given_a_link_out_of_the_logdir_refuses_it(logdir: pathlib.Path, kind: str) -> None:
    """The readers open the file through the logdir's filesystem, whose checks apply, not by name."""
    _, listed, outside = SUBJECTS[kind]
    _swap_for_link(logdir / listed, logdir.parent / "outside" / outside)
    refused = pytest.raises(UnreadableProfile, match="resolves to a file outside the logdir; refused")
    with refused:
        READERS[kind](str(logdir / listed), logdir_lib.LogdirFileSystem(str(logdir)))


def _events_file(path: pathlib.Path, prefix: str) -> None:
    events = [
        {"ph": "X", "name": f"{prefix}{i:05}", "pid": 1, "tid": 1, "ts": i, "dur": 1, "args": {"p": "x" * 60}}
        for i in range(4000)
    ]
    path.write_text(json.dumps({"traceEvents": events}, indent=1))


def test_the_chrome_helper_reads_the_file_the_reader_opened(
    logdir: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link swapped in while the reader reads: the helper process reading the second half reads
    the file the reader opened (an inherited descriptor), never the name, which leads elsewhere."""
    listed = logdir / "bert" / "big.pt.trace.json"
    _events_file(listed, "in")
    _events_file(logdir.parent / "outside" / "big.json", "ex")  # the same layout
    split = chrome_helper.split_offset

    def swap_then_split(*args: object) -> int | None:
        _swap_for_link(listed, logdir.parent / "outside" / "big.json")
        return split(*args)

    joined: list[bool] = []
    result = chrome_helper.HelperProcess.result

    def spy_result(self: chrome_helper.HelperProcess) -> chrome_helper.TailResult:
        joined.append(True)
        return result(self)

    monkeypatch.setattr(chrome_reader, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(chrome_helper, "split_offset", swap_then_split)
    monkeypatch.setattr(chrome_helper.HelperProcess, "result", spy_result)
    trace = chrome_reader.read(str(listed), fsspec.filesystem("file"))
    names = {trace.strings[i] for i in np.unique(trace.ev_name)}
    assert joined == [True] and names == {f"in{i:05}" for i in range(4000)}
