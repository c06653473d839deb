"""`POST /data/plugin/profscope/capture` through TensorBoard's own WSGI app, from a real JAX job's
profiler server: the session lands in the logdir, `/runs` lists it and its trace opens with the
loop's XLA ops; and every refusal, each with its status and reason."""

from __future__ import annotations

import argparse
import json
import pathlib
import threading
import time
from typing import Any

from werkzeug.test import Client

from profscope.plugin import ProfscopeLoader
from tests.conftest import PluginFactory

BASE = "/data/plugin/profscope"
SAME_ORIGIN = {"Origin": "http://localhost", "X-XSRF-Protected": "1"}


def post_capture(client: Client, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    return client.post(
        f"{BASE}/capture",
        data=json.dumps(body),
        content_type="application/json",
        headers=SAME_ORIGIN if headers is None else headers,
    )


def ready(client: Client, route: str, query: str) -> Any:
    """The route's answer once its trace is read (202 until then)."""
    for _ in range(600):
        response = client.get(f"{BASE}/{route}?{query}")
        if response.status_code != 202:
            return response
        time.sleep(0.1)
    raise AssertionError(f"{route} still ingesting")


def test_capture_lands_a_session_whose_trace_opens(
    plugin_client: PluginFactory, tmp_path: pathlib.Path, jax_server: str
) -> None:
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    _, client = plugin_client(logdir, profscope_capture="loopback")
    response = post_capture(client, {"addresses": [jax_server], "duration_ms": 400, "run": "jax_loop"})
    assert response.status_code == 200, response.get_data(as_text=True)
    landed = response.get_json()
    assert landed["run"] == "jax_loop" and landed["hosts"] == ["127.0.0.1"]
    session = landed["session"]
    assert (logdir / "jax_loop" / "plugins" / "profile" / session / "127.0.0.1.xplane.pb").stat().st_size > 0

    runs = client.get(f"{BASE}/runs").get_json()["runs"]
    listed = {(r["name"], s["name"]) for r in runs for s in r["sessions"]}
    assert ("jax_loop", session) in listed
    query = f"run=jax_loop&session={session}&host=127.0.0.1"
    assert ready(client, "trace/meta", query).status_code == 200
    found = client.get(f"{BASE}/trace/search?{query}&q=jit_profscope_capture_step&limit=50").get_json()
    assert found["total"] > 0, "the loop's XLA program is not in the captured trace"
    assert any("fusion" in match["name"] for match in found["matches"]), found["matches"]


def test_capture_is_off_without_the_flag(plugin_client: PluginFactory, tmp_path: pathlib.Path) -> None:
    _, client = plugin_client(tmp_path)
    response = post_capture(client, {"addresses": ["127.0.0.1:9012"], "duration_ms": 100, "run": "r"})
    assert response.status_code == 403
    assert "--profscope_capture" in response.get_data(as_text=True)
    status = client.get(f"{BASE}/capture/status").get_json()
    assert status["enabled"] is False and "--profscope_capture" in status["message"]


def test_an_address_outside_the_allow_list_is_refused(
    plugin_client: PluginFactory, tmp_path: pathlib.Path
) -> None:
    _, client = plugin_client(tmp_path, profscope_capture="loopback")
    response = post_capture(client, {"addresses": ["10.1.2.3:9012"], "duration_ms": 100, "run": "r"})
    assert response.status_code == 403
    assert "10.1.2.3:9012 is not allowed" in response.get_data(as_text=True)
    # A gRPC target scheme or a path is not an address at all.
    for address in ("unix:/run/profiler.sock", "dns:///localhost:9012", "localhost"):
        response = post_capture(client, {"addresses": [address], "duration_ms": 100, "run": "r"})
        assert response.status_code == 400, address
    assert not (tmp_path / "r").exists()


def test_nothing_listening_says_so_and_writes_nothing(
    plugin_client: PluginFactory, tmp_path: pathlib.Path, unused_address: str
) -> None:
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    _, client = plugin_client(logdir, profscope_capture="loopback")
    response = post_capture(client, {"addresses": [unused_address], "duration_ms": 100, "run": "new_run"})
    assert response.status_code == 502
    assert f"nothing answers at {unused_address}" in response.get_data(as_text=True)
    assert response.headers["X-Profscope-Capture-Error"] == "unreachable"
    assert list(logdir.iterdir()) == [], "a failed capture left folders behind"


def test_requests_from_other_pages_are_refused(plugin_client: PluginFactory, tmp_path: pathlib.Path) -> None:
    _, client = plugin_client(tmp_path, profscope_capture="loopback")
    body = {"addresses": ["127.0.0.1:9012"], "duration_ms": 100, "run": "r"}
    for headers in (
        {"Origin": "http://localhost"},  # no X-XSRF-Protected: not TensorBoard's own client
        {"Origin": "https://evil.example", "X-XSRF-Protected": "1"},
        {"Referer": "http://evil.example/page", "X-XSRF-Protected": "1"},
        {"X-XSRF-Protected": "1"},  # neither Origin nor Referer
    ):
        assert post_capture(client, body, headers).status_code == 403, headers
    assert client.get(f"{BASE}/capture").status_code == 405
    form = client.post(f"{BASE}/capture", data={"addresses": "127.0.0.1:9012"}, headers=SAME_ORIGIN)
    assert form.status_code == 400


def test_bad_bodies_are_refused(plugin_client: PluginFactory, tmp_path: pathlib.Path) -> None:
    _, client = plugin_client(tmp_path, profscope_capture="loopback")
    good = {"addresses": ["127.0.0.1:9012"], "duration_ms": 100, "run": "r"}
    for change in (
        {"duration_ms": 0},
        {"duration_ms": "100"},
        {"run": "../outside"},
        {"run": "/abs"},
        {"run": "r/plugins"},
        {"host_tracer_level": 9},
        {"delay_ms": -1},
        {"addresses": "127.0.0.1:9012"},
    ):
        response = post_capture(client, {**good, **change})
        assert response.status_code == 400, (change, response.get_data(as_text=True))


def test_one_capture_at_a_time_per_address(
    plugin_client: PluginFactory, tmp_path: pathlib.Path, stand_in_profiler: Any
) -> None:
    from profscope.capture import protocol

    release = threading.Event()

    def slow(request: Any) -> Any:
        release.wait(10)
        return protocol.ProfileResponse(empty_trace=True)

    address = stand_in_profiler(slow)
    _, client = plugin_client(tmp_path, profscope_capture="loopback")
    first: list[Any] = []
    worker = threading.Thread(
        target=lambda: first.append(
            post_capture(client, {"addresses": [address], "duration_ms": 100, "run": "r"})
        )
    )
    worker.start()
    time.sleep(0.5)
    second = post_capture(client, {"addresses": [address], "duration_ms": 100, "run": "r"})
    release.set()
    worker.join(30)
    assert second.status_code == 409 and "already running" in second.get_data(as_text=True)
    assert first[0].status_code == 422  # the stand-in answered an empty trace


def test_the_flag_takes_an_optional_allow_list(plugin_client: PluginFactory, tmp_path: pathlib.Path) -> None:
    parser = argparse.ArgumentParser()
    ProfscopeLoader().define_flags(parser)
    assert parser.parse_args([]).profscope_capture is None
    assert parser.parse_args(["--profscope_capture"]).profscope_capture == "loopback"
    flag = parser.parse_args(["--profscope_capture=loopback,10.0.0.*:9012"]).profscope_capture
    _, client = plugin_client(tmp_path, profscope_capture=flag)
    status = client.get(f"{BASE}/capture/status").get_json()
    assert status["enabled"] is True and status["allowed"] == ["loopback", "10.0.0.*:9012"]
    assert status["logdir"] == str(tmp_path) and status["grpc_installed"] is True
