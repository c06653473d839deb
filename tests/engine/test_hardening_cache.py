"""Cache faults: damaged, truncated or edited entries are rebuilt, never served, never a 500; no
truncation of a copied column can end the server with SIGBUS; a same-size, same-mtime replacement
of a source is noticed; an unwritable or full cache falls back to a temporary one, with a warning.

What is covered for real and what is simulated: damage and truncation are done to real entries of
a real Kineto trace; "not writable" is a cache path under a regular file (ENOTDIR: root may write
anywhere else), and, where the test can make a private mount namespace (`unshare -m`, as root), a
read-only tmpfs (EROFS) and a tiny tmpfs that fills up during the ingest (ENOSPC); without that
namespace those two are skipped.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import fsspec
import numpy as np
import pytest

from profscope.engine import service, store
from profscope.engine.ingest import manager as ingest
from profscope.model.columns import TraceBuilder
from profscope.tools.trace import routes as trace_routes
from tests.support import DATA_DIR

DATA = DATA_DIR / "trace" / "logdir"
BASE = "/data/plugin/profscope"
SUBJECT = {"run": "bert", "session": "pytorch", "host": "bert_small"}


@pytest.fixture
def logdir(bert_logdir: pathlib.Path) -> pathlib.Path:
    return bert_logdir


def _ready(client, params=SUBJECT, timeout_s: float = 120) -> tuple[dict, bool]:
    """trace/meta once it is 200, and whether a 202 (an ingest) came first."""
    deadline = time.monotonic() + timeout_s
    ingested = False
    while True:
        res = client.get(f"{BASE}/trace/meta", query_string=params)
        if res.status_code == 200 and not res.get_json()["pending_hosts"]:
            return res.get_json(), ingested
        assert res.status_code in (200, 202), res.get_data(as_text=True)
        ingested = True
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _answers(client) -> list:
    """What a damaged column would change: event details, a search, a range summary."""
    out = []
    for event_id in (0, 1, 777, 2000):
        out.append(client.get(f"{BASE}/trace/event", query_string={**SUBJECT, "id": event_id}).get_json())
    out.append(
        client.get(f"{BASE}/trace/search", query_string={**SUBJECT, "q": "aten", "limit": 50}).get_json()
    )
    out.append(client.get(f"{BASE}/trace/summary", query_string=SUBJECT).get_json())
    return out


def _entry(cache: pathlib.Path) -> pathlib.Path:
    (entry,) = [p for p in (cache / f"v{store.FORMAT_VERSION}").iterdir() if p.is_dir()]
    return entry


def _flip_middle(file: pathlib.Path) -> None:
    """Same-size damage: one byte of the array data (past the .npy header) changed."""
    with open(file, "rb") as f:
        version = np.lib.format.read_magic(f)
        read_header = (
            np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        )
        read_header(f)
        offset = f.tell()
    data = bytearray(file.read_bytes())
    middle = offset + (len(data) - offset) // 2
    data[middle] ^= 0x5A
    file.write_bytes(bytes(data))


def _truncate(entry: pathlib.Path, name: str) -> None:
    with open(entry / f"{name}.npy", "r+b") as f:
        f.truncate(0)


def _edit_meta_events(entry: pathlib.Path, _name: str) -> None:
    text = (entry / store.META_FILE).read_text()
    (entry / store.META_FILE).write_text(re.sub(r'"num_events":\d+', '"num_events":0', text))


def _empty_tracks(entry: pathlib.Path, _name: str) -> None:
    (entry / store.TRACKS_FILE).write_text("[]")


DAMAGE = [
    ("ev_start_ps", _truncate),
    ("args_blob", _truncate),
    ("lod/order", _truncate),
    ("ev_name", "flip"),
    ("ev_start_ps", "flip"),
    ("ev_track", "flip"),
    ("args_blob", "flip"),
    ("args_off", "flip"),
    ("meta.json", _edit_meta_events),
    ("tracks.json", _empty_tracks),
]


@pytest.mark.parametrize(
    ("name", "damage"), DAMAGE, ids=[f"{n}-{getattr(d, '__name__', d)}" for n, d in DAMAGE]
)
def test_damaged_entry_is_rebuilt_and_never_served(
    plugin_client, logdir, tmp_path, monkeypatch, name, damage
) -> None:
    """Today: a truncated .npy answered 500 on every request (never rebuilt); same-size damage to
    ev_name/ev_start_ps 500s, to ev_track/args_blob/args_off wrong data with 200; an edited
    meta.json (tracks=[], when they were kept there) 500s on trace/event."""
    monkeypatch.setattr(trace_routes, "META_WAIT_S", 0.0)
    cache = tmp_path / "cache"
    plugin, client = plugin_client(logdir, profscope_cache_dir=str(cache))
    meta, _ = _ready(client)
    expected = _answers(client)
    plugin.trace_service().manager.close()
    entry = _entry(cache)
    if damage == "flip":
        _flip_middle(entry / f"{name}.npy")
    else:
        damage(entry, name)

    restarted, client = plugin_client(logdir, profscope_cache_dir=str(cache))
    again, ingested = _ready(client)
    assert ingested, "the damaged entry was served instead of rebuilt"
    # The rebuilt entry is the same trace under a new version (its entry id), so no cached tile of
    # the damaged one is taken for it.
    assert again.pop("version") != meta.pop("version")
    assert again == meta
    assert _answers(client) == expected
    assert store.verify(str(_entry(cache))) == []
    restarted.trace_service().manager.close()


def test_a_big_array_is_checked_block_by_block_after_it_is_opened(tmp_path, monkeypatch) -> None:
    """Arrays above COPY_MAX_BYTES are mapped after their first and last blocks are checked; the
    other blocks are checked in the background, and damage found there discards the entry."""
    monkeypatch.setattr(store, "CHECK_BLOCK_BYTES", 4096)
    monkeypatch.setattr(store, "COPY_MAX_BYTES", 0)
    source = tmp_path / "w.pt.trace.json.gz"
    shutil.copy(DATA / "bert" / "bert_small.pt.trace.json.gz", source)
    src = ingest.SourceFile(str(source), "chrome_trace")
    first = ingest.IngestManager(str(tmp_path / "cache"), in_process=True)
    written = first.wait(src)
    assert isinstance(written.trace.ev_start_ps, np.memmap) and written.trace.ev_start_ps.filename
    record = store.read_meta(written.path)["arrays"]["args_blob"]
    assert len(record["crc"]) > 4
    _flip_middle(pathlib.Path(written.path) / "args_blob.npy")
    damaged_block = (record["offset"] + (record["bytes"] - record["offset"]) // 2) // 4096
    assert store.verify(written.path) == [
        f"array args_blob: block {damaged_block} is damaged (checksum mismatch)"
    ]

    fresh = ingest.IngestManager(str(tmp_path / "cache"), in_process=True)
    opened = fresh.ensure(src)
    assert isinstance(opened, ingest.OpenedTrace), "head and tail blocks are intact: it opens"
    deadline = time.monotonic() + 30
    while os.path.exists(opened.path):
        assert time.monotonic() < deadline, "the background check did not discard the damaged entry"
        time.sleep(0.02)
    rebuilt = fresh.wait(src)
    assert rebuilt is not opened and store.verify(rebuilt.path) == []
    assert rebuilt.trace.args_json(5) == written.trace.args_json(5)


_TOUCH_AFTER_TRUNCATION = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    from profscope.engine import store
    path = sys.argv[1]
    trace, extra, _, _ = store.open_with_extra(path)
    names = [n for n in store.COLUMNS if n != "args_blob"]  # the args blob stays mapped (search streams it)
    for name in names:
        with open(os.path.join(path, name + ".npy"), "r+b") as f:
            f.truncate(0)
    for name in os.listdir(os.path.join(path, "lod")):
        with open(os.path.join(path, "lod", name), "r+b") as f:
            f.truncate(0)
    total = sum(float(np.asarray(getattr(trace, n), dtype=np.float64).sum()) for n in names)
    total += sum(float(np.asarray(a, dtype=np.float64).sum()) for a in extra.values())
    print("served after truncation", total)
    """
)


def test_truncating_copied_columns_while_served_cannot_sigbus(tmp_path) -> None:
    """Today a column truncated in place while served killed TensorBoard with SIGBUS (its pages
    were mapped from the cache file). Columns up to COPY_MAX_BYTES now live in sealed memory."""
    trace = ingest.registry.import_reader(ingest.READERS["chrome_trace"])(
        str(DATA / "bert" / "bert_small.pt.trace.json.gz"), ingest.fsspec.filesystem("file")
    )
    arrays, meta = ingest.build_extras(trace)
    path = store.write(trace, str(tmp_path), "a" * 64, extra=arrays, extra_meta=meta)
    done = subprocess.run(
        [sys.executable, "-c", _TOUCH_AFTER_TRUNCATION, path], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "served after truncation" in done.stdout


def test_same_size_same_mtime_replacement_is_noticed(plugin_client, tmp_path, monkeypatch) -> None:
    """Today a source replaced by one of the same size and mtime was served stale, also after a
    restart: the fingerprint now holds a hash of the file's head and tail."""
    monkeypatch.setattr(service, "RECHECK_S", 0.0)
    logdir = tmp_path / "logdir"
    (logdir / "bert").mkdir(parents=True)
    source = logdir / "bert" / "bert_small.pt.trace.json"
    text = gzip.decompress((DATA / "bert" / "bert_small.pt.trace.json.gz").read_bytes())
    source.write_bytes(text)
    stat = source.stat()
    cache = str(tmp_path / "cache")
    plugin, client = plugin_client(logdir, profscope_cache_dir=cache)
    _ready(client)
    query = {**SUBJECT, "q": "zzzz::linear"}
    assert client.get(f"{BASE}/trace/search", query_string=query).get_json()["total"] == 0

    replaced = text.replace(b"aten::linear", b"zzzz::linear")
    assert len(replaced) == len(text)
    source.write_bytes(replaced)
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert source.stat().st_mtime_ns == stat.st_mtime_ns and source.stat().st_size == stat.st_size
    _ready(client)
    assert client.get(f"{BASE}/trace/search", query_string=query).get_json()["total"] > 0
    plugin.trace_service().manager.close()

    restarted, client = plugin_client(logdir, profscope_cache_dir=cache)
    _ready(client)
    assert client.get(f"{BASE}/trace/search", query_string=query).get_json()["total"] > 0
    restarted.trace_service().manager.close()


def test_fingerprint_holds_the_content_tag() -> None:
    base = store.fingerprint("file:///a", 10, "100.0", "head-tail-1")
    assert base != store.fingerprint("file:///a", 10, "100.0", "head-tail-2")
    assert base == store.fingerprint("file:///a", 10, "100.0", "head-tail-1")


def _warnings(client) -> list[str]:
    meta, _ = _ready(client)
    return meta["warnings"]


def test_cache_path_that_cannot_be_a_directory_falls_back_with_a_warning(
    plugin_client, logdir, tmp_path
) -> None:
    """Today every trace route answered 500 when the cache directory could not be made or written."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    cache = blocker / "cache"
    plugin, client = plugin_client(logdir, profscope_cache_dir=str(cache))
    (warning,) = _warnings(client)
    manager = plugin.trace_service().manager
    assert warning.startswith(
        f"cache directory {cache} is not writable (Not a directory): traces are cached in "
    )
    assert manager.cache_root in warning and manager.cache_root.startswith(tempfile.gettempdir())
    assert os.listdir(os.path.join(manager.cache_root, f"v{store.FORMAT_VERSION}"))
    manager.close()
    shutil.rmtree(manager.cache_root)


def test_no_writable_cache_at_all_is_a_503_naming_both(plugin_client, logdir, tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setattr(tempfile, "tempdir", str(blocker / "tmp"))
    _, client = plugin_client(logdir, profscope_cache_dir=str(blocker / "cache"))
    res = client.get(f"{BASE}/trace/meta", query_string=SUBJECT)
    assert res.status_code == 503 and res.headers["Retry-After"]
    text = res.get_data(as_text=True)
    assert f"cache directory {blocker / 'cache'} is not writable (Not a directory)" in text
    assert "no temporary directory could be made" in text


def test_cache_problem_messages() -> None:
    full = ingest.describe_cache_problem("/", OSError(errno.ENOSPC, "No space left on device"))
    assert full.startswith("cache directory / is full (") and full.endswith(" MB free)")
    assert ingest.describe_cache_problem("/c", OSError(errno.EROFS, "Read-only file system")) == (
        "cache directory /c is not writable (Read-only file system)"
    )


_IN_A_MOUNT = textwrap.dedent(
    """
    import argparse, json, sys, time
    from tensorboard.backend import application
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client
    from profscope.plugin import ProfscopePlugin
    logdir, cache = sys.argv[1], sys.argv[2]
    flags = argparse.Namespace(profscope_cache_dir=cache)
    plugin = ProfscopePlugin(base_plugin.TBContext(logdir=logdir, flags=flags))
    client = Client(application.TensorBoardWSGI([plugin]))
    query = {"run": "bert", "session": "pytorch", "host": "bert_small"}
    deadline = time.monotonic() + 120
    while True:
        res = client.get("/data/plugin/profscope/trace/meta", query_string=query)
        if res.status_code != 202 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    print(json.dumps({"status": res.status_code, "body": res.get_data(as_text=True)}))
    plugin.trace_service().manager.close()
    """
)


def _in_private_mount(mount_options: str, mount_point: pathlib.Path, logdir: pathlib.Path) -> dict:
    """Run the plugin in a private mount namespace where `mount_point` is a fresh tmpfs."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) for a private tmpfs mount")
    mount_point.mkdir()
    script = (
        f"mount -t tmpfs -o {mount_options} profscope-test {mount_point} || exit 97; "
        f'exec "{sys.executable}" -c "$0" "$1" "$2"'
    )
    cache = mount_point / "cache"
    fallback_parent = mount_point.parent / f"{mount_point.name}-tmp"
    fallback_parent.mkdir()
    done = subprocess.run(
        [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            _IN_A_MOUNT,
            str(logdir),
            str(cache),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(fallback_parent)},  # the fallback cache lands in tmp_path
    )
    if done.returncode == 97 or "unshare failed" in done.stderr:
        pytest.skip(f"no private tmpfs mount here: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_read_only_cache_falls_back_with_a_warning(logdir, tmp_path) -> None:
    """A read-only file system (EROFS, which root cannot write either)."""
    got = _in_private_mount("ro,size=1m", tmp_path / "ro", logdir)
    assert got["status"] == 200, got
    (warning,) = json.loads(got["body"])["warnings"]
    assert warning.startswith(
        f"cache directory {tmp_path / 'ro' / 'cache'} is not writable (Read-only file system)"
    )
    assert "traces are cached in " in warning


def test_full_cache_falls_back_with_a_warning_that_says_how_full(logdir, tmp_path) -> None:
    """Today a full disk answered 400 "stopped (exit code 1)" with no reason. The tmpfs takes the
    probe but not the entry (ENOSPC during the write in the child)."""
    got = _in_private_mount("size=128k", tmp_path / "tiny", logdir)
    assert got["status"] == 200, got
    (warning,) = json.loads(got["body"])["warnings"]
    assert warning.startswith(f"cache directory {tmp_path / 'tiny' / 'cache'} is full (")
    assert " MB free): traces are cached in " in warning


def tiny_read(path, fs, progress=None):
    """A reader (imported by the ingest by name) that makes a one-event trace."""
    b = TraceBuilder(path, "scripted")
    track = b.track(b.section("host", "cpu"), "main")
    b.add_events(track, [0], [1], [b.intern("op")])
    return b.finalize()


def test_full_cache_in_the_ingest_says_how_full(tmp_path, monkeypatch) -> None:
    """The same failure where no mount can be made, in the ingest's own body: the entry's write
    hits ENOSPC (simulated at the third array)."""
    real_save = store._save
    calls = []

    def full_disk(file, array):
        calls.append(file)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(file, array)

    monkeypatch.setattr(store, "_save", full_disk)
    spec = {
        "cache_root": str(tmp_path / "c"),
        "key": "f" * 64,
        "url": "x",
        "size": 1,
        "reader": "tests.engine.test_hardening_cache:tiny_read",
        "fs": fsspec.filesystem("memory").to_json(),
    }
    assert ingest.run_ingest(spec) == ingest.EXIT_CACHE_UNUSABLE
    error = json.loads((tmp_path / "c" / ingest.PROGRESS_DIR / ("f" * 32 + ".error")).read_text())
    assert error["cache"] is True
    assert error["message"].startswith(f"cache directory {tmp_path / 'c'} is full (")
    assert store.lookup(str(tmp_path / "c"), "f" * 64) is None
