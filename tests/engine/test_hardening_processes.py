"""Process hygiene: ingest children end when the server dies, and what dead ingests left in the
cache directory (temporary entries, progress, error and log files) is removed when a server starts.

Today: killed TensorBoard left its ingest children running (parent 1), every start left a
`spare-*.log`, and `tmp/` entries of killed ingests stayed up to an hour.
"""

from __future__ import annotations

import fcntl
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from profscope.engine import store
from profscope.engine.ingest import children as ingest_children
from profscope.engine.ingest import manager as ingest
from tests.support import REPO

_SERVER = textwrap.dedent(
    """
    import json, sys, time
    sys.path.insert(0, sys.argv[3])
    from profscope.engine.ingest import manager as ingest
    manager = ingest.IngestManager(sys.argv[1], readers={"scripted": "tests.engine.test_ingest:scripted_read"})
    assert not isinstance(manager.ensure(ingest.SourceFile(sys.argv[2], "scripted")), ingest.OpenedTrace)
    (job,) = manager._jobs.values()
    (waiting,) = manager._children.idle_pids()  # the other slot's template
    print(json.dumps({"job": job.process.pid, "template": job.process._template.pid, "spare": waiting}), flush=True)
    time.sleep(600)
    """
)


def _alive(pid: int) -> bool:
    """Running (a zombie has exited: nobody may reap it once its parent is gone)."""
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not pathlib.Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_children_end_when_the_server_is_killed(tmp_path: pathlib.Path) -> None:
    script = tmp_path / "slow.json"
    script.write_text(json.dumps({"sleep": 120, "steps": 1200}))
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(tmp_path / "cache"), str(script), str(REPO)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pids = json.loads(server.stdout.readline())
        deadline = time.monotonic() + 60
        while not pathlib.Path(f"{script}.calls").exists():  # the child is inside the reader
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert all(_alive(pid) for pid in pids.values())
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in pids.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pids["job"]), "the ingest child outlived its server"
        assert not _alive(pids["template"]), "the job's template outlived its server"
        assert not _alive(pids["spare"]), "the waiting template outlived its server"
    finally:
        server.kill()
        for pid in pids.values() if "pids" in locals() else ():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_start_removes_what_dead_ingests_left_and_keeps_what_live_ones_hold(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "cache"
    dead, live = "d" * 64, "e" * 64
    progress = root / ingest.PROGRESS_DIR
    for key in (dead, live):
        tmp = root / store.TMP_DIR / f"{key[:32]}.0f0f0f0f"  # named as store.tmp_name names them
        tmp.mkdir(parents=True)
        (tmp / "ev_start_ps.npy").write_bytes(b"\0" * 4096)  # fresh: the one-hour rule would keep it
        progress.mkdir(exist_ok=True)
        for suffix in (".json", ".error", ".log"):
            (progress / f"{key[:32]}{suffix}").write_text("{}")
    (root / store.TMP_DIR / "0123abcd").mkdir()  # an old-style name nobody can hold
    (progress / "spare-0a1b.log").write_text("left by an old version")
    (progress / f"{ingest.CHILD_LOG_PREFIX}dead.log").write_text("its child is gone")
    held_log = progress / f"{ingest.CHILD_LOG_PREFIX}live.log"
    held_log.write_text("its child runs")
    (root / ingest.LOCK_DIR).mkdir()
    lock_path = root / ingest.LOCK_DIR / f"{live[:32]}.lock"
    with open(lock_path, "a+b") as lock, open(held_log, "rb") as log:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # stands for a live ingest of `live` elsewhere
        fcntl.flock(log.fileno(), fcntl.LOCK_EX)  # and a live child's log
        manager = ingest.IngestManager(str(root), prewarm=False)
        manager.close()
    assert [p.name[:32] for p in (root / store.TMP_DIR).iterdir()] == [live[:32]]
    assert sorted(p.name for p in progress.iterdir()) == sorted(
        [f"{live[:32]}.json", f"{live[:32]}.error", f"{live[:32]}.log", held_log.name]
    )


def test_no_log_is_left_by_a_start_a_job_or_a_close(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "cache"
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"events": [[0, 1]]}))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"raise": "boom"}))
    manager = ingest.IngestManager(str(root), readers={"scripted": "tests.engine.test_ingest:scripted_read"})
    try:
        assert manager.wait(ingest.SourceFile(str(good), "scripted")).trace.num_events == 1
        with pytest.raises(ingest.IngestError, match="RuntimeError: boom"):
            manager.wait(ingest.SourceFile(str(bad), "scripted"))
    finally:
        manager.close()
    logs = [p.name for p in (root / ingest.PROGRESS_DIR).iterdir() if p.suffix == ".log"]
    assert logs == []


def test_the_job_spec_is_not_on_the_command_line(tmp_path: pathlib.Path) -> None:
    """The spec names the filesystem with its storage options; a command line is public (ps)."""
    script = tmp_path / "slow.json"
    script.write_text(json.dumps({"sleep": 30, "steps": 300}))
    manager = ingest.IngestManager(
        str(tmp_path / "cache"), readers={"scripted": "tests.engine.test_ingest:scripted_read"}, prewarm=False
    )
    try:
        manager.ensure(ingest.SourceFile(str(script), "scripted"))
        (job,) = manager._jobs.values()
        assert job.process.args[-1] == ingest_children.TEMPLATE_MODULE
        assert str(script) not in " ".join(map(str, job.process.args))
        assert str(script) not in pathlib.Path(f"/proc/{job.process.pid}/cmdline").read_text()
    finally:
        for job in manager._jobs.values():
            job.process.kill()
        manager.close()
