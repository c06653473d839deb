"""Each way a capture fails, said clearly and leaving nothing in the logdir: a busy server (the real
JAX one), a job that wrote to its own disk, an empty capture, a timeout, gRPC not installed, one of
several servers failing; and several servers captured into one session."""

from __future__ import annotations

import os
import pathlib
import shutil
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from profscope.capture import client, protocol
from profscope.capture.client import CaptureError, ProfileCall
from profscope.capture.session import CaptureRequest, capture
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

XPLANE = (
    DATA_DIR
    / "multirank"
    / "jax2_cpu"
    / "process0"
    / "plugins"
    / "profile"
    / "2026_12_07_03_20_34"
    / "vm.xplane.pb"
)


def writes_like_a_job(request: Any) -> Any:
    """A stand-in's answer as a job on this machine gives it: the XSpace written where it was told."""
    folder = pathlib.Path(request.repository_root) / request.session_id
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(XPLANE, folder / f"{request.host_name}.xplane.pb")
    return protocol.ProfileResponse()


def test_several_servers_land_in_one_session(
    tmp_path: pathlib.Path, jax_server: str, stand_in_profiler: Any
) -> None:
    seen: list[Any] = []

    def answer(request: Any) -> Any:
        seen.append(request)
        return writes_like_a_job(request)

    other = stand_in_profiler(answer)
    captured = capture(str(tmp_path), CaptureRequest((jax_server, other), "both", 300))
    folder = tmp_path / "both" / "plugins" / "profile" / captured.session
    assert captured.hosts == (
        "127.0.0.1_" + jax_server.rsplit(":", 1)[1],
        "127.0.0.1_" + other.rsplit(":", 1)[1],
    )
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{h}.xplane.pb" for h in captured.hosts)
    (request,) = seen
    assert request.session_id == captured.session
    assert request.repository_root == str(tmp_path / "both" / "plugins" / "profile")
    assert request.duration_ms == 300 and request.tools == (protocol.XPLANE_TOOL,)
    assert request.opts.host_tracer_level == 2 and request.opts.enable_hlo_proto


def test_a_busy_server_is_named(tmp_path: pathlib.Path, jax_server: str) -> None:
    """The JAX server records one session at a time: a second request meanwhile is refused."""
    first_error: list[BaseException] = []

    def long_capture() -> None:
        try:
            client.profile(ProfileCall(jax_server, 3000, str(tmp_path / "a"), "long", "h"))
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            first_error.append(e)

    worker = threading.Thread(target=long_capture)
    worker.start()
    try:
        time.sleep(1.0)  # the first request reaches the server (a loopback connection) well before
        with pytest.raises(CaptureError) as refused:
            client.profile(ProfileCall(jax_server, 100, str(tmp_path / "b"), "short", "h"))
    finally:
        worker.join(30)
    assert refused.value.kind == "busy"
    assert f"the profiler at {jax_server} is busy" in str(refused.value)
    assert first_error == []


def test_a_job_on_another_machine_is_said_with_where_it_wrote(
    tmp_path: pathlib.Path, stand_in_profiler: Any
) -> None:
    address = stand_in_profiler(lambda request: protocol.ProfileResponse())  # wrote to its own disk
    with pytest.raises(CaptureError) as failed:
        capture(str(tmp_path), CaptureRequest((address,), "remote", 100))
    assert failed.value.kind == "elsewhere"
    assert f"wrote to {tmp_path / 'remote' / 'plugins' / 'profile'}/" in str(failed.value)
    assert "on its own disk" in str(failed.value)
    assert list(tmp_path.iterdir()) == []


def test_an_empty_capture_keeps_nothing(tmp_path: pathlib.Path, stand_in_profiler: Any) -> None:
    def empty(request: Any) -> Any:
        writes_like_a_job(request)
        return protocol.ProfileResponse(empty_trace=True)

    (tmp_path / "existing").mkdir()
    address = stand_in_profiler(empty)
    with pytest.raises(CaptureError) as failed:
        capture(str(tmp_path), CaptureRequest((address,), "existing", 100))
    assert failed.value.kind == "empty" and "captured nothing" in str(failed.value)
    assert [p.name for p in tmp_path.iterdir()] == ["existing"]
    assert list((tmp_path / "existing").iterdir()) == [], "the folders the capture made are gone"


def test_one_failing_server_of_several_keeps_nothing(
    tmp_path: pathlib.Path, stand_in_profiler: Any, unused_address: str
) -> None:
    good = stand_in_profiler(writes_like_a_job)
    with pytest.raises(CaptureError) as failed:
        capture(str(tmp_path), CaptureRequest((good, unused_address), "half", 100))
    assert failed.value.kind == "unreachable" and unused_address in str(failed.value)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def silent_listener() -> Iterator[str]:
    """A loopback port that accepts connections and never says anything."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield f"127.0.0.1:{sock.getsockname()[1]}"


def test_a_server_that_never_answers_times_out(tmp_path: pathlib.Path, silent_listener: str) -> None:
    with pytest.raises(CaptureError) as failed:
        capture(str(tmp_path), CaptureRequest((silent_listener,), "slow", 100), timeout_s=1.0)
    assert failed.value.kind == "timeout" and "did not answer within 1 s" in str(failed.value)
    assert list(tmp_path.iterdir()) == []


def test_without_grpc_the_install_command_is_given(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "grpc", None)  # what `import grpc` meets where it is not installed
    with pytest.raises(CaptureError) as failed:
        capture(str(tmp_path), CaptureRequest(("127.0.0.1:9012",), "r", 100))
    assert failed.value.kind == "grpc_missing"
    assert "pip install 'profscope[capture]'" in str(failed.value)
    assert os.listdir(tmp_path) == []


def test_a_run_linked_out_of_the_logdir_is_refused(tmp_path: pathlib.Path) -> None:
    logdir, outside = tmp_path / "logdir", tmp_path / "outside"
    logdir.mkdir()
    outside.mkdir()
    (logdir / "linked").symlink_to(outside)
    with pytest.raises(CaptureError) as failed:
        capture(str(logdir), CaptureRequest(("127.0.0.1:9012",), "linked", 100))
    assert failed.value.kind == "outside_logdir"
    assert list(outside.iterdir()) == []
