"""Mapped cache pages counted in the server's resident memory stay under `--profscope_resident_mb`.

A real Kineto trace is ingested and served through TensorBoard's WSGI app with every column mapped
from its cache file (`COPY_MAX_BYTES = 0`, as the columns of a big trace are). The pages the
server has resident of each cache file are read from `/proc/self/smaps`.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np
import pytest
from tensorboard.plugins import base_plugin

from profscope.engine import resident, store
from profscope.plugin import ProfscopeLoader, ProfscopePlugin

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="madvise and /proc/self/smaps are Linux's")

BASE = "/data/plugin/profscope"
SUBJECT = {"run": "bert", "session": "pytorch", "host": "bert_small"}


def _resident_kb_under(root: pathlib.Path) -> int:
    """kB of this process's resident pages mapped from files under `root`."""
    total, counting = 0, False
    prefix = str(root.resolve())
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(None, 5)
            if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
                counting = len(head) == 6 and head[5].strip().startswith(prefix)
            elif counting and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


def _ready(client) -> None:
    deadline = time.monotonic() + 120
    while True:
        res = client.get(f"{BASE}/trace/meta", query_string=SUBJECT)
        if res.status_code == 200 and not res.get_json()["pending_hosts"]:
            return
        assert res.status_code in (200, 202), res.get_data(as_text=True)
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _answers(client) -> list:
    out = [client.get(f"{BASE}/trace/summary", query_string=SUBJECT).get_json()]
    for q in ("aten", "cudaLaunchKernel", "1234"):
        out.append(client.get(f"{BASE}/trace/search", query_string={**SUBJECT, "q": q}).get_json())
    for event_id in (0, 777, 2000):
        out.append(client.get(f"{BASE}/trace/event", query_string={**SUBJECT, "id": event_id}).get_json())
    return out


@pytest.fixture
def logdir(bert_logdir: pathlib.Path) -> pathlib.Path:
    return bert_logdir


def test_mapped_pages_past_the_budget_are_released_after_each_request(
    plugin_client, logdir, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(store, "COPY_MAX_BYTES", 0)
    monkeypatch.setattr(resident, "_budget_bytes", resident._budget_bytes)
    cache = tmp_path / "cache"

    plugin, client = plugin_client(logdir, profscope_cache_dir=str(cache), profscope_resident_mb=100_000)
    _ready(client)
    kept = _answers(client)
    held_kb = _resident_kb_under(cache)
    assert held_kb > 0, "under a large budget the touched pages stay mapped"
    plugin.trace_service().manager.close()

    plugin, client = plugin_client(logdir, profscope_cache_dir=str(cache), profscope_resident_mb=0)
    _ready(client)
    assert _resident_kb_under(cache) == 0
    assert _answers(client) == kept, "released pages read back the same"
    assert _resident_kb_under(cache) == 0
    plugin.trace_service().manager.close()


def test_release_keeps_every_array_readable(logdir, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(store, "COPY_MAX_BYTES", 0)
    from profscope.engine.ingest import manager as ingest

    source = ingest.SourceFile(str(logdir / "bert" / "bert_small.pt.trace.json.gz"), "chrome_trace")
    manager = ingest.IngestManager(str(tmp_path / "cache"), in_process=True)
    opened = manager.wait(source)
    columns = {name: getattr(opened.trace, name) for name in store.COLUMNS}
    mapped = [a for a in columns.values() if isinstance(a, np.memmap) and a.nbytes]
    assert mapped
    before = {name: np.array(a) for name, a in columns.items()}
    assert _resident_kb_under(tmp_path / "cache") > 0
    assert resident.release() >= sum(a.nbytes for a in mapped)
    assert _resident_kb_under(tmp_path / "cache") == 0
    for name, array in columns.items():
        assert np.array_equal(np.asarray(array), before[name]), name
    manager.close()


def test_the_flag_sets_the_budget(monkeypatch) -> None:
    monkeypatch.setattr(resident, "_budget_bytes", resident._budget_bytes)
    parser = argparse.ArgumentParser()
    ProfscopeLoader().define_flags(parser)
    ProfscopePlugin(base_plugin.TBContext(logdir="", flags=parser.parse_args([])))
    assert resident._budget_bytes == resident.DEFAULT_BUDGET_MB << 20
    flags = parser.parse_args(["--profscope_resident_mb", "64"])
    ProfscopePlugin(base_plugin.TBContext(logdir="", flags=flags))
    assert resident._budget_bytes == 64 << 20
