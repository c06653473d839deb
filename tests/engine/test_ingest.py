"""Ingest: single flight (threads and processes), progress, cache keying, failures, crash safety.

The child process imports its reader by "module:function"; this module provides a scriptable one
(`scripted_read`) so the tests can make a read slow, fail or die, and count how often it ran.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import threading
import time
from typing import Any

import fsspec
import pytest

from profscope.engine import store
from profscope.engine.ingest import manager as ingest
from profscope.errors import UnreadableProfile
from profscope.model.columns import TraceBuilder
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

READERS = {
    "scripted": "tests.engine.test_ingest:scripted_read",
    "chrome_trace": ingest.READERS["chrome_trace"],
}
DATA = DATA_DIR / "trace" / "logdir"


def scripted_read(path, fs, progress=None):
    """Reader driven by the JSON file it reads; appends its pid and its parent's to `<file>.calls`
    each run."""
    with fs.open(path, "rb") as f:
        raw = f.read()
    script = json.loads(raw)
    with open(path + ".calls", "a") as log:
        log.write(f"{os.getpid()} {os.getppid()}\n")
    steps = script.get("steps", 1)
    for i in range(steps):
        if progress is not None:
            progress(len(raw) * i // steps, len(raw))
        time.sleep(script.get("sleep", 0.0) / steps)
    if "exit" in script:
        os._exit(script["exit"])
    if "unreadable" in script:
        raise UnreadableProfile(path, script["unreadable"])
    if "raise" in script:
        raise RuntimeError(script["raise"])
    b = TraceBuilder(path, "scripted")
    track = b.track(b.section("host", "cpu"), "main")
    events = script.get("events", [[0, 10]])
    b.add_events(track, [e[0] for e in events], [e[1] for e in events], [b.intern("op")] * len(events))
    return b.finalize()


def _running(pid: int) -> bool:
    """Running, not a zombie (nobody may reap a child whose parent is gone)."""
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def write_script(path: pathlib.Path, **script) -> ingest.SourceFile:
    path.write_text(json.dumps(script))
    return ingest.SourceFile(str(path), "scripted")


def calls(source: ingest.SourceFile) -> int:
    try:
        return len(pathlib.Path(source.url + ".calls").read_text().splitlines())
    except FileNotFoundError:
        return 0


@pytest.fixture
def manager(tmp_path):
    made = []

    def make(**kwargs):
        kwargs.setdefault("readers", READERS)
        m = ingest.IngestManager(str(tmp_path / "cache"), **kwargs)
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()


def test_first_ensure_reports_progress_then_opens(manager, tmp_path):
    m = manager()
    src = write_script(tmp_path / "a.json", sleep=1.5, steps=30, events=[[0, 5], [10, 5]])
    first = m.ensure(src)
    assert isinstance(first, ingest.Progress)
    assert first.bytes_total == os.path.getsize(src.url)
    seen = []
    deadline = time.monotonic() + 60
    while True:
        got = m.ensure(src)
        if isinstance(got, ingest.OpenedTrace):
            break
        seen.append((got.bytes_done, got.stage))
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert any(0 < done < first.bytes_total and stage == "reading" for done, stage in seen), seen
    assert got.trace.num_events == 2
    assert m.ensure(src) is got  # kept open
    assert calls(src) == 1


def test_progress_is_written_beside_the_reading_not_in_its_way(tmp_path, monkeypatch):
    """Replacing the progress file can wait on a disk busy with the ingest's own writes: the
    reader's progress calls return at once, and the latest value reaches the file afterwards."""
    written = []
    disk_free = threading.Event()
    write_json = ingest._write_json

    def busy_disk_write(path, value):
        if written:  # every write after the first waits for the disk
            disk_free.wait(15)
        written.append(value)
        write_json(path, value)

    monkeypatch.setattr(ingest, "_write_json", busy_disk_write)
    monkeypatch.setattr(ingest, "PROGRESS_EVERY_S", 0.0)
    path = tmp_path / "progress.json"
    progress = ingest._ProgressWriter(str(path), 100)
    assert json.loads(path.read_text())["bytes_done"] == 0
    started = time.monotonic()
    progress(1, 100)
    assert time.monotonic() - started < 5, "a progress call waited for the disk"
    for done in range(2, 101):
        progress(done, 100)
    assert time.monotonic() - started < 5, "progress calls waited for the disk"
    disk_free.set()
    deadline = time.monotonic() + 30
    while json.loads(path.read_text())["bytes_done"] != 100:
        assert time.monotonic() < deadline, written
        time.sleep(0.01)
    progress.close()
    assert len(written) < 100, "values a waiting write made stale were written anyway"
    assert not progress._thread.is_alive()


def test_concurrent_requests_ingest_once(manager, tmp_path):
    m = manager()
    src = write_script(tmp_path / "b.json", sleep=0.5)
    results = []

    def ask():
        results.append(m.wait(src, timeout_s=60))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and all(r.key == results[0].key for r in results)
    assert calls(src) == 1


def test_two_server_processes_ingest_once(manager, tmp_path):
    """Two managers stand for two servers sharing one cache: the second child waits for the
    first one's lock and then finds the entry instead of reading again."""
    a, b = manager(), manager()
    src = write_script(tmp_path / "c.json", sleep=1.0)
    assert isinstance(a.ensure(src), ingest.Progress)
    time.sleep(0.3)
    assert isinstance(b.ensure(src), ingest.Progress)
    ta, tb = a.wait(src, timeout_s=60), b.wait(src, timeout_s=60)
    assert ta.path == tb.path
    assert calls(src) == 1


def test_cache_is_keyed_by_size_and_mtime(manager, tmp_path):
    m = manager()
    src = write_script(tmp_path / "d.json", events=[[0, 5]])
    assert m.wait(src).trace.num_events == 1
    # A new server process reopens the entry from disk without reading the file.
    assert manager().wait(src).trace.num_events == 1
    assert calls(src) == 1
    # Same size, new mtime: read again.
    stat = os.stat(src.url)
    os.utime(src.url, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert m.wait(src).trace.num_events == 1
    assert calls(src) == 2
    # New size: read again, new content.
    write_script(tmp_path / "d.json", events=[[0, 5], [7, 1], [9, 1]])
    assert m.wait(src).trace.num_events == 3
    assert calls(src) == 3
    # Size and version given by the caller (as discovery does) skip the stat and key the entry.
    info = os.stat(src.url)
    known = ingest.SourceFile(src.url, "scripted", size=info.st_size, version="v1")
    assert m.wait(known).trace.num_events == 3
    assert calls(src) == 4
    assert m.wait(known).trace.num_events == 3
    assert calls(src) == 4


def test_unreadable_file_error_comes_back_and_is_remembered(manager, tmp_path, monkeypatch):
    m = manager()
    src = write_script(tmp_path / "e.json", unreadable="no XPlane planes in it")
    with pytest.raises(ingest.IngestError) as info:
        m.wait(src)
    assert info.value.unreadable
    assert str(info.value) == f"cannot read profile {pathlib.Path(src.url).name}: no XPlane planes in it"
    with pytest.raises(ingest.IngestError):
        m.ensure(src)
    assert calls(src) == 1, "a failed version is not retried on every request"
    monkeypatch.setattr(ingest, "RETRY_FAILED_AFTER_S", 0.0)
    with pytest.raises(ingest.IngestError):
        m.wait(src)
    assert calls(src) == 2


def test_reader_bug_and_dying_child_are_reported(manager, tmp_path):
    m = manager()
    bug = write_script(tmp_path / "f.json", **{"raise": "boom"})
    with pytest.raises(ingest.IngestError, match=r"f\.json failed: RuntimeError: boom") as info:
        m.wait(bug)
    assert not info.value.unreadable
    dead = write_script(tmp_path / "g.json", exit=3)
    with pytest.raises(ingest.IngestError, match=r"g\.json stopped \(exit code 3\)"):
        m.wait(dead)


def _slow_job_inside_its_reader(m: ingest.IngestManager, path: pathlib.Path) -> tuple[ingest.SourceFile, Any]:
    """Start a 30 s scripted ingest and return (source, job) once the child is inside the reader."""
    src = write_script(path, sleep=30, steps=300)
    assert isinstance(m.ensure(src), ingest.Progress)
    job = next(iter(m._jobs.values()))
    deadline = time.monotonic() + 30
    while calls(src) == 0:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return src, job


def test_killed_ingest_leaves_nothing_usable_and_is_redone(manager, tmp_path):
    m = manager(prewarm=False)
    src, job = _slow_job_inside_its_reader(m, tmp_path / "h.json")
    job.process.send_signal(signal.SIGKILL)
    with pytest.raises(ingest.IngestError, match="stopped"):
        m.wait(src)
    key, _ = ingest.source_key(src)
    assert store.lookup(m.cache_root, key) is None
    # The file is fixed (fast now): the next attempt reads it again and succeeds.
    write_script(tmp_path / "h.json", events=[[1, 2]])
    assert m.wait(src).trace.num_events == 1


def test_a_waiting_template_forks_each_job_and_takes_the_next(manager, tmp_path):
    """Jobs run in children forked from a pre-imported template (no interpreter start per job),
    each in a process of its own, and the template waits for the next job."""
    m = manager()
    templates = m._children.idle_pids()
    assert len(templates) == m._slots.size, "one template per slot, started ahead of need"
    pids = []
    for name in ("i.json", "j.json", "k.json"):
        src = write_script(tmp_path / name)
        m.wait(src)
        pid, parent = map(int, pathlib.Path(src.url + ".calls").read_text().split())
        assert parent in templates and pid not in templates
        pids.append(pid)
    assert len(set(pids)) == 3, "each job in a process of its own"
    assert sorted(m._children.idle_pids()) == sorted(templates), "the same templates wait for the next"


def test_a_killed_template_fails_its_job_and_the_next_job_gets_a_new_one(manager, tmp_path):
    m = manager(prewarm=False)
    src, job = _slow_job_inside_its_reader(m, tmp_path / "k.json")
    child, template = job.process.pid, job.process._template.pid
    os.kill(template, signal.SIGKILL)
    with pytest.raises(ingest.IngestError, match="stopped"):
        m.wait(src)
    deadline = time.monotonic() + 5
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(child), "the job outlived its template"
    write_script(tmp_path / "k.json", events=[[1, 2]])
    assert m.wait(src).trace.num_events == 1
    assert template not in m._children.idle_pids()


def test_memory_filesystem_is_ingested_in_process(manager, tmp_path, memory_fs):
    memory_fs.pipe_file(
        "/logs/w.pt.trace.json.gz", (DATA / "bert" / "bert_small.pt.trace.json.gz").read_bytes()
    )
    m = manager()
    src = ingest.SourceFile("/logs/w.pt.trace.json.gz", "chrome_trace", fs=memory_fs)
    opened = m.wait(src)
    assert opened.trace.num_events > 2000
    assert opened.trace.source.endswith("w.pt.trace.json.gz")


def test_real_chrome_trace_in_a_child_and_logdir_untouched(manager, tmp_path):
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    target = logdir / "bert_small.pt.trace.json.gz"
    target.write_bytes((DATA / "bert" / "bert_small.pt.trace.json.gz").read_bytes())
    before = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in logdir.iterdir())
    m = manager()
    opened = m.wait(ingest.SourceFile(str(target), "chrome_trace", fsspec.filesystem("file")))
    assert opened.trace.num_events > 2000 and opened.index.self_ps.shape[0] == opened.trace.num_events
    assert sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in logdir.iterdir()) == before
    assert opened.path.startswith(str(tmp_path / "cache"))


def test_unknown_format_and_missing_file(manager, tmp_path):
    m = manager()
    with pytest.raises(ingest.IngestError, match="no trace reader for format 'pdf'"):
        m.ensure(ingest.SourceFile(str(tmp_path / "x.pdf"), "pdf"))
    with pytest.raises(ingest.IngestError, match="cannot stat"):
        m.ensure(ingest.SourceFile(str(tmp_path / "missing.json"), "scripted"))


def test_damaged_entry_is_rebuilt(manager, tmp_path):
    m = manager()
    src = write_script(tmp_path / "j.json", events=[[0, 5], [6, 5]])
    opened = m.wait(src)
    os.remove(os.path.join(opened.path, "lod", "order.npy"))
    fresh = manager()  # another server process: the entry looks complete but cannot be opened
    assert fresh.wait(src).trace.num_events == 2
    assert calls(src) == 2
