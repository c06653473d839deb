"""The `memory` route through the plugin: 202 while the trace is read, the answer once it is, and
"memory not observed" for a real trace recorded without `profile_memory=True` (the tab still applies
to it)."""

from __future__ import annotations

import argparse
import shutil
import time

import pytest
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from profscope.plugin import ProfscopePlugin
from profscope.tools.memory import routes
from tests.support import DATA_DIR

BASE = "/data/plugin/profscope"
RUNS = {
    "peak": DATA_DIR / "memory" / "peak_backward.pt.trace.json.gz",
    "plain": DATA_DIR / "overview" / "slow_input.pt.trace.json.gz",
}


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Client:
    root = tmp_path_factory.mktemp("memory")
    for run, source in RUNS.items():
        (root / "logdir" / run).mkdir(parents=True)
        shutil.copy(source, root / "logdir" / run / f"worker0.{source.name}")
    context = base_plugin.TBContext(
        logdir=str(root / "logdir"), flags=argparse.Namespace(profscope_cache_dir=str(root / "cache"))
    )
    return Client(application.TensorBoardWSGI([ProfscopePlugin(context)]))


def subject(client: Client, run: str) -> str:
    runs = client.get(f"{BASE}/runs").get_json()["runs"]
    (session,) = next(r for r in runs if r["name"] == run)["sessions"]
    (host,) = session["hosts"]
    assert "memory" in host["tools"]
    return f"run={run}&session={session['name']}&host={host['name']}"


def memory(client: Client, run: str, timeout_s: float = 120) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        res = client.get(f"{BASE}/memory?{subject(client, run)}")
        if res.status_code != 202:
            assert res.status_code == 200, res.get_data(as_text=True)
            return res.get_json()
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_memory_profile_answers_its_allocator(client: Client) -> None:
    answer = memory(client, "peak")
    assert answer["observed"] and "reason" not in answer
    (device,) = answer["devices"]
    assert device["label"] == "CPU" and device["peak"]["step"] == "ProfilerStep#3"
    assert answer["step_source"].startswith("ProfilerStep#N")
    # the peak's ids are the timeline's event ids: the trace route finds the [memory] event and its op
    event = client.get(f"{BASE}/trace/event?{subject(client, 'peak')}&id={device['peak']['memory_event_id']}")
    assert event.get_json()["name"] == "[memory]"
    op = client.get(f"{BASE}/trace/event?{subject(client, 'peak')}&id={device['peak']['op_event_id']}")
    assert op.get_json()["name"] == device["peak"]["op"]


def test_a_trace_without_memory_events_says_how_to_record_them(client: Client) -> None:
    answer = memory(client, "plain")
    assert answer == {"observed": False, "reason": routes.NOT_OBSERVED, "devices": [], "warnings": []}
    assert routes.NOT_OBSERVED == "memory not observed: record with profile_memory=True"
