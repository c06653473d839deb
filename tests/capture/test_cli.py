"""`profscope capture`, the Capture dialog's twin, against a real JAX job's profiler server."""

from __future__ import annotations

import io
import pathlib

from profscope import logdir as logdir_lib
from profscope.cli import main


def test_the_cli_captures_a_session(tmp_path: pathlib.Path, jax_server: str) -> None:
    out = io.StringIO()
    status = main(
        ["capture", jax_server, "--logdir", str(tmp_path), "--run", "cli_run", "--duration-ms", "300"], out
    )
    assert status == 0, out.getvalue()
    (run,) = logdir_lib.discover(str(tmp_path)).runs
    (session,) = run.sessions
    assert run.name == "cli_run" and f"session {session.name!r}" in out.getvalue()
    (host,) = session.hosts
    assert host.name == "127.0.0.1" and host.files[0].format == "xplane"


def test_the_cli_says_why_it_failed(tmp_path: pathlib.Path, unused_address: str) -> None:
    out = io.StringIO()
    assert main(["capture", unused_address, "--logdir", str(tmp_path), "--run", "r"], out) == 1
    assert f"nothing answers at {unused_address}" in out.getvalue()
    out = io.StringIO()
    assert main(["capture", "not-an-address", "--logdir", str(tmp_path), "--run", "r"], out) == 3
    assert "is not a profiler server address" in out.getvalue()
    assert list(tmp_path.iterdir()) == []
