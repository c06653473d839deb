"""The Chrome reader's helper forked from the reading process, as in a local ingest child
(`helper_process.allow_fork`): the trace is the one a single process reads, the helper is a fork
(no interpreter started) and is reaped, the split counts no interpreter start, and a forked helper
that fails or dies leaves the reader to read on alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from profscope.formats.chrome import helper as chrome_helper
from profscope.formats.chrome import reader as chrome_json
from profscope.formats.common import helper_process
from tests.formats.chrome.test_chrome_json import (
    NS_TRACE,
    OLD_TRACE,
    assert_a_failing_helper_falls_back_to_one_process,
    assert_a_helper_gives_the_one_process_trace,
)

pytestmark = pytest.mark.skipif(not helper_process.possible(), reason="needs two cores and POSIX")


def forked(monkeypatch: pytest.MonkeyPatch) -> list[chrome_helper.HelperProcess]:
    """Every file read from now on gets a helper, forked; the helpers started."""
    monkeypatch.setattr(helper_process, "_fork_allowed", False)
    helper_process.allow_fork()
    monkeypatch.setattr(chrome_json, "PARALLEL_MIN_BYTES", 0)
    started: list[chrome_helper.HelperProcess] = []
    original = chrome_helper.HelperProcess.__init__

    def spy(self: chrome_helper.HelperProcess, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        started.append(self)

    monkeypatch.setattr(chrome_helper.HelperProcess, "__init__", spy)
    return started


@pytest.mark.parametrize("name", [NS_TRACE, OLD_TRACE])
def test_a_forked_helper_gives_the_one_process_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    (helper,) = assert_a_helper_gives_the_one_process_trace(tmp_path, monkeypatch, name, forked)
    proc = helper._started.proc
    assert isinstance(proc, helper_process.Forked)
    assert proc.poll() is not None  # stopped and reaped once its half was in


def test_the_split_counts_no_interpreter_start_for_a_forked_helper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spawned helper starts `HELPER_LAG_BYTES` late, a forked one `FORKED_HELPER_LAG_BYTES`."""
    event = b'{"ph":"X","ts":1},'  # 18 bytes
    text = b'{"traceEvents":[' + event * 1000 + b"]}"
    path = tmp_path / "t.json"
    path.write_bytes(text)
    events_start = text.index(b"[") + 1
    monkeypatch.setattr(chrome_helper, "MAIN_SPEED", 1)
    monkeypatch.setattr(chrome_helper, "HELPER_LAG_BYTES", 3600)  # the reader's share: 0.6
    monkeypatch.setattr(chrome_helper, "FORKED_HELPER_LAG_BYTES", 0)  # 0.5
    monkeypatch.setattr(helper_process, "_fork_allowed", False)
    shares = []
    for fork in (False, True):
        if fork:
            helper_process.allow_fork()
        with open(path, "rb") as source:
            offset = chrome_helper.split_offset(source.fileno(), events_start, len(text))
        assert offset is not None
        shares.append((offset - events_start) / (len(text) - events_start))
    assert shares == [pytest.approx(0.6, abs=0.01), pytest.approx(0.5, abs=0.01)]


@pytest.mark.parametrize("failure", ["helper raises", "helper dies"])
def test_a_failing_forked_helper_falls_back_to_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    helpers = assert_a_failing_helper_falls_back_to_one_process(tmp_path, monkeypatch, failure, forked)
    assert isinstance(helpers[0]._started.proc, helper_process.Forked)
