"""The `overview` route through TensorBoard's WSGI app: 202 while ingesting, then the answer (which
decodes as `OverviewAnswer`); several hosts; a host of PyTorch/XLA logs only; the allocator's peak,
the Memory tab's; parameter errors."""

from __future__ import annotations

import shutil
import time

import msgspec
import pytest

from profscope.tools.overview.answers import OverviewAnswer
from tests.support import DATA_DIR
from tests.support.overview import DEMO_LOGDIR, RANK0, RANK1, SLOW_INPUT

BASE = "/data/plugin/profscope"


@pytest.fixture
def logdir(tmp_path):
    root = tmp_path / "logdir"
    (root / "slow").mkdir(parents=True)
    shutil.copy(SLOW_INPUT, root / "slow" / "worker0.1796129356689315979.pt.trace.json.gz")
    (root / "peak").mkdir()
    shutil.copy(
        DATA_DIR / "memory" / "peak_backward.pt.trace.json.gz", root / "peak" / "worker0.pt.trace.json.gz"
    )
    (root / "ranks").mkdir()
    shutil.copy(RANK0, root / "ranks" / "rank-0.pt.trace.json.gz")
    shutil.copy(RANK1, root / "ranks" / "rank-1.pt.trace.json.gz")
    (root / "xla").mkdir()
    shutil.copy(DEMO_LOGDIR / "pytorch_xla_cpu_recompile" / "train.xla_metrics.txt", root / "xla")
    yield root


def subject(client, run: str) -> dict[str, str]:
    runs = client.get(f"{BASE}/runs").get_json()["runs"]
    (session,) = next(r for r in runs if r["name"] == run)["sessions"]
    return {"run": run, "session": session["name"], "host": ",".join(h["name"] for h in session["hosts"])}


def get(client, **params):
    return client.get(f"{BASE}/overview?" + "&".join(f"{k}={v}" for k, v in params.items()))


def ready(client, timeout_s=120, **params):
    deadline, seen_202 = time.monotonic() + timeout_s, False
    while True:
        res = get(client, **params)
        if res.status_code != 202:
            return res, seen_202
        assert res.get_json()["state"] == "ingesting"
        seen_202 = True
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_route_answers_202_then_the_overview(plugin_client, logdir):
    _, client = plugin_client(logdir)
    params = subject(client, "slow")
    res, seen_202 = ready(client, **params)
    assert seen_202 and res.status_code == 200
    answer = msgspec.json.decode(res.get_data(), type=OverviewAnswer)
    assert [f.kind for f in answer.findings] == ["input_bound"]
    assert answer.per_host[0].steps.source_kind == "profiler_step"
    again = get(client, **params, batch_size=16, step_name="train")
    body = again.get_json()
    assert body["batch_size"] == 16 and body["step_name"] == "train"
    assert body["per_host"][0]["steps"]["source_kind"] == "user_annotation"
    assert "examples_per_s" in body["per_host"][0]["steps"]["stats"]


def test_route_merges_ranks_of_one_session(plugin_client, logdir):
    _, client = plugin_client(logdir)
    params = subject(client, "ranks")
    assert params["host"] == "rank-0,rank-1"
    res, _ = ready(client, **params)
    body = res.get_json()
    assert [h["host"] for h in body["per_host"]] == ["rank-0", "rank-1"]
    assert [s["step"] for s in body["ranks"]["steps"]] == [551, 552]
    assert body["tables"]["scope"] == "steady steps 551–552 of each host"


def test_route_on_a_host_of_xla_logs_only(plugin_client, logdir):
    _, client = plugin_client(logdir)
    params = subject(client, "xla")
    res = get(client, **params)
    assert res.status_code == 200
    body = res.get_json()
    assert body["per_host"] == [] and any("no trace file" in w for w in body["warnings"])
    assert [f["kind"] for f in body["findings"]] == ["recompile"]


def test_route_gives_the_memory_tab_s_peak(plugin_client, logdir):
    """Per host the peak of the Memory tab's device (bytes, device, step, op); a trace recorded
    without memory events has none, not a peak of 0."""
    _, client = plugin_client(logdir)
    params = subject(client, "peak")
    res, _ = ready(client, **params)
    (host,) = res.get_json()["per_host"]
    query = "&".join(f"{k}={v}" for k, v in params.items())
    (device,) = client.get(f"{BASE}/memory?{query}").get_json()["devices"]
    peak = device["peak"]
    assert host["memory_peak"] == {
        "allocated_bytes": peak["allocated_bytes"],
        "device": device["label"],
        "step": peak["step"],
        "step_number": peak["step_number"],
        "op": peak["op"],
    }
    assert peak["step"] == "ProfilerStep#3" and peak["allocated_bytes"] > 16 << 20
    plain, _ = ready(client, **subject(client, "slow"))
    assert "memory_peak" not in plain.get_json()["per_host"][0]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"group_by": "kernel"}, "group_by"),
        ({"batch_size": "0"}, "batch_size"),
        ({"batch_size": "-3"}, "batch_size"),
    ],
)
def test_route_parameter_errors_are_400(plugin_client, logdir, extra, message):
    _, client = plugin_client(logdir)
    res = get(client, **subject(client, "slow"), **extra)
    assert res.status_code == 400 and message in res.get_data(as_text=True)
