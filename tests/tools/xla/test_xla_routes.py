"""The xla/* routes through TensorBoard's own WSGI app, on a logdir holding the real PyTorch/XLA logs."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest

from tests.support import DATA_DIR

DATA = DATA_DIR / "xla" / "pytorch_xla_cpu_recompile"
BASE = "/data/plugin/profscope"
QUERY = "run=job&session=xla&host=xla"


@pytest.fixture
def xla_logdir(tmp_path: pathlib.Path) -> pathlib.Path:
    run = tmp_path / "logdir" / "job"
    run.mkdir(parents=True)
    for name in (
        "xla_metrics_report.txt",
        "xla_metrics_per_step.txt",
        "pt_xla_debug.txt",
        "xla_graphs.txt.0",
    ):
        shutil.copy(DATA / name, run / name)
    return tmp_path / "logdir"


def get_json(client, url: str, status: int = 200) -> dict:  # type: ignore[no-untyped-def]
    response = client.get(url)
    assert response.status_code == status, response.get_data(as_text=True)
    return json.loads(response.get_data(as_text=True))


def test_every_host_of_the_run_sees_all_four_logs(plugin_client, xla_logdir) -> None:  # type: ignore[no-untyped-def]
    """`xla_graphs.txt.0` carries the device ordinal and the other logs do not; wherever discovery
    puts it (host `xla` or `xla.0`), each host's report reads all four logs of the process."""
    _, client = plugin_client(xla_logdir)
    runs = get_json(client, f"{BASE}/runs")["runs"]
    hosts = [h["name"] for h in runs[0]["sessions"][0]["hosts"]]
    assert set(hosts) <= {"xla", "xla.0"}
    for host in hosts:
        report = get_json(client, f"{BASE}/xla/report?run=job&session=xla&host={host}")
        assert {s["path"] for s in report["sources"]} == {
            "job/xla_metrics_report.txt",
            "job/xla_metrics_per_step.txt",
            "job/pt_xla_debug.txt",
            "job/xla_graphs.txt.0",
        }
        ids = [f["id"] for f in report["findings"]]
        assert ids[:4] == ["recompilation", "cpu_fallback", "device_to_host", "dynamic_shapes"]
        assert report["summary"]["uncached_compiles"] == 9
        assert report["graphs"] == {"records": 16, "unique": 9}


def test_ordinal_hosts_are_gathered(plugin_client, xla_logdir) -> None:  # type: ignore[no-untyped-def]
    (xla_logdir / "job" / "xla_graphs.txt.0").rename(xla_logdir / "job" / "xla_graphs.txt.1")
    _, client = plugin_client(xla_logdir)
    hosts = [h["name"] for h in get_json(client, f"{BASE}/runs")["runs"][0]["sessions"][0]["hosts"]]
    assert hosts == ["xla", "xla.1"]
    for host in hosts:
        report = get_json(client, f"{BASE}/xla/report?run=job&session=xla&host={host}")
        assert report["ordinals"] == [1] and len(report["sources"]) == 4


def test_graph_routes(plugin_client, xla_logdir) -> None:  # type: ignore[no-untyped-def]
    _, client = plugin_client(xla_logdir)
    listing = get_json(client, f"{BASE}/xla/graphs?{QUERY}")
    assert len(listing["records"]) == 16 and len(listing["groups"]) == 9
    graph = get_json(client, f"{BASE}/xla/graph?{QUERY}&index=11")
    assert graph["graph_hash"] == "e79051af0f8a44128a612d1a1b3338a" and graph["dot"].startswith("digraph")
    diff = get_json(client, f"{BASE}/xla/diff?{QUERY}&a=10&b=11")
    assert diff["same_structure"] and len(diff["shape_changes"]) == 16


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        (f"/xla/graph?{QUERY}&index=99", 400, "graph index 99 out of range"),
        (f"/xla/graph?{QUERY}&index=-1", 400, "must be a non-negative integer"),
        (f"/xla/graph?{QUERY}", 400, "missing query parameter 'index'"),
        (f"/xla/diff?{QUERY}&a=1", 400, "missing query parameter 'b'"),
        (f"/xla/report?{QUERY}&ordinal=x", 400, "'ordinal' must be a non-negative integer"),
        ("/xla/report?run=nope&session=xla&host=xla", 404, "run 'nope'"),
        ("/xla/report?run=job&session=xla&host=gpu7", 404, "no host 'gpu7'"),
    ],
)
def test_errors_name_what_is_wrong(plugin_client, xla_logdir, url: str, status: int, message: str) -> None:  # type: ignore[no-untyped-def]
    _, client = plugin_client(xla_logdir)
    response = client.get(BASE + url)
    assert response.status_code == status
    assert message in response.get_data(as_text=True)


def test_report_on_a_host_without_xla_logs(plugin_client, layouts_logdir) -> None:  # type: ignore[no-untyped-def]
    _, client = plugin_client(layouts_logdir)
    runs = get_json(client, f"{BASE}/runs")["runs"]
    run = next(
        r
        for r in runs
        if any(h["tools"] and "xla" not in h["tools"] for s in r["sessions"] for h in s["hosts"])
    )
    session = run["sessions"][0]
    host = next(h for h in session["hosts"] if "xla" not in h["tools"])
    response = client.get(
        f"{BASE}/xla/report?run={run['name']}&session={session['name']}&host={host['name']}"
    )
    assert response.status_code == 404
    assert "no PyTorch/XLA logs" in response.get_data(as_text=True)


def test_memory_logdir(plugin_client, memory_fs, copy_to_fs, xla_logdir) -> None:  # type: ignore[no-untyped-def]
    copy_to_fs(xla_logdir, memory_fs, "/xla_logs")
    _, client = plugin_client("memory:///xla_logs")
    report = get_json(client, f"{BASE}/xla/report?{QUERY}")
    assert report["summary"]["steps"] == 10
    assert "recompilation" in [f["id"] for f in report["findings"]]
