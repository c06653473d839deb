"""A real JAX program with its profiler server, for the capture tests (`tests/capture/`, and the
Capture dialog's browser test): `tests/capture/jax_job.py` in a child process, CPU only. JAX's
server listens on every interface of the port it is given; the tests only ever reach it on loopback.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import select
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.support import REPO

JAX_MISSING = "JAX is not installed here (pip install -e '.[test]' installs it): no real profiler server to capture from"
READY_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_jax_job() -> Iterator[str]:
    """`127.0.0.1:PORT` of a JAX program running a jitted loop with its profiler server started;
    skips the test where JAX is not installed."""
    if importlib.util.find_spec("jax") is None:
        pytest.skip(JAX_MISSING)
    port = free_port()
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO)}
    job = subprocess.Popen(
        [sys.executable, "-m", "tests.capture.jax_job", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert job.stdout is not None
        started, _, _ = select.select([job.stdout], [], [], READY_TIMEOUT_S)
        line = job.stdout.readline() if started else ""
        assert line.strip() == "ready", (
            f"the JAX job did not start in {READY_TIMEOUT_S:.0f} s (exit {job.poll()})"
        )
        yield f"127.0.0.1:{port}"
    finally:
        job.kill()
        job.wait(timeout=30)
