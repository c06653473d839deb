"""A cache entry found damaged while the server runs is never served again, and a full or read-only
cache directory leaves one temporary cache behind per cache directory, not one per run.

Today (issue 41): after the background check found an entry damaged and it was rebuilt, the server
kept the timeline mapped from the damaged files (same fingerprint, same key), so tiles, event
details and cached analyses stayed the damaged ones, 500s for a damaged name column, and tiles
kept the ETag of the intact ones. The damage is done in place (same size, no truncation) to a real
entry of a real Kineto trace, served by a real plugin app, between its opening and its check.
"""

from __future__ import annotations

import os
import pathlib
import tempfile
import threading
import time

import numpy as np
import pytest
from werkzeug.test import Client

from profscope.engine import store
from profscope.tools.trace import routes as trace_routes

BASE = "/data/plugin/profscope"
SUBJECT = {"run": "bert", "session": "pytorch", "host": "bert_small"}
# ev_dur_ps: what the probe of the issue saw (a span of 6.5e15 ns); ev_name: past the string table.
DAMAGE = [("ev_dur_ps", 6_500_000_000_000_000_000), ("ev_name", 2**31 - 1)]


def _meta(client: Client) -> dict:
    """trace/meta once it is 200 (202 while ingesting)."""
    deadline = time.monotonic() + 120
    while True:
        res = client.get(f"{BASE}/trace/meta", query_string=SUBJECT)
        if res.status_code == 200:
            return res.get_json()
        assert res.status_code == 202, res.get_data(as_text=True)
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _requests(meta: dict, victim: int) -> dict[str, tuple[str, dict]]:
    """What damage to one event shows in: its details, the whole-trace tile, a summary of the
    whole span and the overview (an analysis the plugin caches by the timeline's key)."""
    top = meta["tile"]["max_level"]
    return {
        "event": ("trace/event", {"id": victim}),
        "tile": ("trace/tile", {"level": top, "index": 0}),
        "summary": ("trace/summary", {}),
        "overview": ("overview", {}),
    }


def _ask(client: Client, route: str, params: dict) -> tuple[int, bytes, str | None]:
    """Status, body and ETag of one request; an exception out of the app is what a served
    TensorBoard answers 500 (the test client lets it through)."""
    try:
        res = client.get(f"{BASE}/{route}", query_string={**SUBJECT, **params})
    except Exception as e:  # noqa: BLE001 - any of them is a 500
        return 500, repr(e).encode(), None
    return res.status_code, res.get_data(), res.headers.get("ETag")


def _damage_in_place(file: pathlib.Path, index: int, value: int) -> None:
    """Overwrite one element of a `.npy` column in place: the file keeps its size and inode."""
    with open(file, "rb") as f:
        shape, _, dtype = store.read_npy_header(f)
        offset = f.tell()
    assert 0 <= index < shape[0]
    with open(file, "r+b") as f:
        f.seek(offset + index * dtype.itemsize)
        f.write(np.array([value], dtype=dtype).tobytes())


@pytest.mark.parametrize(("column", "value"), DAMAGE, ids=[c for c, _ in DAMAGE])
def test_an_entry_found_damaged_while_served_is_never_served_again(
    plugin_client, bert_logdir, tmp_path, monkeypatch, column, value
) -> None:
    monkeypatch.setattr(trace_routes, "META_WAIT_S", 0.0)
    cache = tmp_path / "cache"
    first, client = plugin_client(bert_logdir, profscope_cache_dir=str(cache))
    meta = _meta(client)
    victim = meta["num_events"] // 2
    requests = _requests(meta, victim)
    intact = {name: _ask(client, *request) for name, request in requests.items()}
    assert all(status == 200 for status, _, _ in intact.values()), intact
    first.trace_service().manager.close()

    # The restarted server maps every column (as it does the big ones of a big trace) and its
    # background check of the entry waits until the damage is done.
    monkeypatch.setattr(store, "COPY_MAX_BYTES", 0)
    damaged, found = threading.Event(), threading.Event()
    real_verify, real_discard = store.verify, store.discard

    def verify_after_damage(path: str) -> list[str]:
        assert damaged.wait(60)
        return real_verify(path)

    def discard_and_tell(path: str) -> None:
        real_discard(path)
        found.set()

    monkeypatch.setattr(store, "verify", verify_after_damage)
    monkeypatch.setattr(store, "discard", discard_and_tell)
    server, client = plugin_client(bert_logdir, profscope_cache_dir=str(cache))
    assert _meta(client) == meta
    (entry,) = [p for p in (cache / f"v{store.FORMAT_VERSION}").iterdir() if p.is_dir()]
    _damage_in_place(entry / f"{column}.npy", victim, value)
    before = {name: _ask(client, *request) for name, request in requests.items()}
    assert any(before[name][:2] != intact[name][:2] for name in requests), "the damage is not served"
    # The restarted server serves the entry the first one wrote: the same ETags until the damage is found.
    old_etags = {etag for _, _, etag in [*intact.values(), *before.values()] if etag}
    assert old_etags

    damaged.set()
    assert found.wait(60), "the background check did not find the damage"
    assert not entry.exists()
    statuses = []
    deadline = time.monotonic() + 120
    while not statuses or any(status != 200 for status in statuses[-1]):
        assert time.monotonic() < deadline, statuses[-1]
        now = {name: _ask(client, *request) for name, request in requests.items()}
        statuses.append([status for status, _, _ in now.values()])
        for name, (status, body, etag) in now.items():
            assert status in (200, 202), (name, status, body[:300])
            if status == 200:
                assert body == intact[name][1], f"{name}: an answer of the damaged entry"
                assert etag not in old_etags, f"{name}: the ETag of the damaged entry"
        time.sleep(0.05)
    assert 202 in statuses[0], "the first request after the damage was found did not wait for the rebuild"
    assert store.verify(str(entry)) == []
    _check_version_changed(client, meta, _meta(client))
    server.trace_service().manager.close()


def _check_version_changed(client: Client, intact: dict, rebuilt: dict) -> None:
    """The rebuilt entry's timeline has a new version (tile URLs carry it, so a browser cannot
    serve a tile of the damaged entry from its cache), and a tile of the old version is a 409."""
    assert intact["version"] and rebuilt["version"] and rebuilt["version"] != intact["version"]
    assert {**rebuilt, "version": ""} == {**intact, "version": ""}
    tile = {"level": intact["tile"]["max_level"], "index": 0}
    stale, _, _ = _ask(client, "trace/tile", {**tile, "v": intact["version"]})
    assert stale == 409
    fresh, _, _ = _ask(client, "trace/tile", {**tile, "v": rebuilt["version"]})
    assert fresh == 200


def test_the_fallback_cache_is_one_per_cache_directory_reused_by_the_next_run(
    plugin_client, bert_logdir, tmp_path, monkeypatch
) -> None:
    """Today every run that found the cache directory unusable made a new `profscope-cache-*`
    folder in the system's temporary directory and left it there (223 MB for one trace)."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    roots = []
    for _ in range(2):
        plugin, client = plugin_client(bert_logdir, profscope_cache_dir=str(blocker / "cache"))
        assert _meta(client)["warnings"][0].startswith(f"cache directory {blocker / 'cache'} is not writable")
        roots.append(plugin.trace_service().manager.cache_root)
        plugin.trace_service().manager.close()
    assert roots[0] == roots[1] and os.listdir(temporary) == [os.path.basename(roots[0])]
    assert oct(os.stat(roots[0]).st_mode & 0o777) == "0o700"
    (entry,) = (pathlib.Path(roots[0]) / f"v{store.FORMAT_VERSION}").iterdir()
    assert store.verify(str(entry)) == []


def test_a_fallback_cache_someone_else_can_write_is_not_reused(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    shared = pathlib.Path(store.fallback_cache_root("/some/cache"))
    assert shared.parent == tmp_path and store.fallback_cache_root("/some/cache") == str(shared)
    shared.chmod(0o777)
    other = store.fallback_cache_root("/some/cache")
    assert other != str(shared) and pathlib.Path(other).parent == tmp_path
