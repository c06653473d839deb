"""Browser-test harness: a real `tensorboard` subprocess and headless Debian Chromium via Playwright.

Fixtures (reuse them for view tests):
- `tensorboard_server(logdir, *extra_flags)` starts `tensorboard --logdir LOGDIR` on a free port with a
  private `--profscope_cache_dir` and returns a `TensorBoardServer` (url, get(), raw_get()), its log kept
  in the test's output folder. A logdir inside the test's own `tmp_path` gets a server of its own,
  stopped after the test; any other logdir (the repository's data, a module's copy) is read-only to
  the tests, so the module's tests share one server per logdir and flags, stopped after the module:
  starting TensorBoard and reading its profiles again costs seconds a test.
- `browser_page`: a fresh Playwright `Page` in a Chromium with its own empty user-data-dir; a screenshot
  is saved when the test fails. `page_errors` collects uncaught page errors and console errors of it.
- `open_profscope(page, server)` opens `http://127.0.0.1:PORT/#profscope` and returns the plugin iframe's
  `Frame`, where the profscope UI lives.
- `screenshot(page, name)` saves `test-output/e2e/<test>/<name>.png` (the folder:
  `$PROFSCOPE_TEST_OUTPUT`) and returns its path.

Chromium is `/usr/bin/chromium` or `$PROFSCOPE_CHROMIUM`; never downloaded. Without it these tests
skip, unless `PROFSCOPE_REQUIRE_BROWSER=1` (set by tests/run_all.sh and so CI), which turns that into
a failure.
"""

from __future__ import annotations

import dataclasses
import http.client
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# $PROFSCOPE_TEST_OUTPUT (relative to the repository) lets a pass running beside another keep its own.
OUTPUT = REPO / os.environ.get("PROFSCOPE_TEST_OUTPUT", "test-output/e2e")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
STARTUP_TIMEOUT_S = 90.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if pathlib.Path(str(item.fspath)).is_relative_to(pathlib.Path(__file__).parent):
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def _output_dir(request: pytest.FixtureRequest) -> pathlib.Path:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_")
    path = OUTPUT / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def _chromium() -> str:
    path = os.environ.get("PROFSCOPE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        reason = f"Chromium not found at {path} (apt-get install -y chromium, or set PROFSCOPE_CHROMIUM)"
        if os.environ.get("PROFSCOPE_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def _tensorboard_command() -> list[str]:
    """The `tensorboard` console script of the running interpreter's environment, as a user runs it."""
    script = pathlib.Path(sys.executable).parent / "tensorboard"
    return [str(script)] if script.exists() else [sys.executable, "-m", "tensorboard.main"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class TensorBoardServer:
    """A running `tensorboard` subprocess."""

    url: str
    port: int
    logdir: str
    process: subprocess.Popen
    log_path: pathlib.Path

    def get(self, route: str, timeout: float = 30.0) -> tuple[int, dict[str, str], bytes]:
        """GET `route` (e.g. "/data/plugins_listing"): (status, headers, body); 4xx/5xx are returned too."""
        try:
            with urllib.request.urlopen(self.url + route, timeout=timeout) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def raw_get(self, raw_path: str, timeout: float = 30.0) -> tuple[int, bytes]:
        """GET a path exactly as written (no client-side normalisation of `..` or `%2e`)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.putrequest("GET", raw_path, skip_accept_encoding=True)
            conn.endheaders()
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def log_tail(self, n: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-n:] if self.log_path.exists() else ""


def _stop(server: TensorBoardServer) -> None:
    if server.process.poll() is None:
        server.process.terminate()
        try:
            server.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=15)


@pytest.fixture(scope="module")
def _module_servers(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[tuple[str, tuple[str, ...]], TensorBoardServer], pathlib.Path]]:
    """The servers a module's tests share (by logdir and flags) and the folder of their caches."""
    servers: dict[tuple[str, tuple[str, ...]], TensorBoardServer] = {}
    yield servers, tmp_path_factory.mktemp("shared-tensorboard")
    for server in servers.values():
        _stop(server)


@pytest.fixture
def tensorboard_server(
    request: pytest.FixtureRequest,
    tmp_path: pathlib.Path,
    _module_servers: tuple[dict[tuple[str, tuple[str, ...]], TensorBoardServer], pathlib.Path],
) -> Iterator[Callable[..., TensorBoardServer]]:
    started: list[TensorBoardServer] = []
    out = _output_dir(request)
    shared, shared_dir = _module_servers

    def start(logdir: str | os.PathLike[str], *extra_flags: str) -> TensorBoardServer:
        if pathlib.Path(logdir).resolve().is_relative_to(tmp_path.resolve()):
            server = launch(logdir, extra_flags, tmp_path, f"tensorboard-{len(started)}")
            started.append(server)
            return server
        key = (str(pathlib.Path(logdir).resolve()), extra_flags)
        if key not in shared or shared[key].process.poll() is not None:
            name = f"shared-{len(shared)}"
            shared[key] = launch(logdir, extra_flags, shared_dir / name, f"tensorboard-{name}")
        return shared[key]

    def launch(
        logdir: str | os.PathLike[str], extra_flags: tuple[str, ...], home: pathlib.Path, log_stem: str
    ) -> TensorBoardServer:
        home.mkdir(parents=True, exist_ok=True)
        last_error = ""
        for attempt in range(3):
            port = _free_port()
            log_path = out / f"{log_stem}-{attempt}.log"
            command = [
                *_tensorboard_command(),
                "--logdir",
                str(logdir),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--profscope_cache_dir",
                str(home / "profscope-cache"),
                *extra_flags,
            ]
            with open(log_path, "wb") as log:
                process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=home)
            server = TensorBoardServer(f"http://127.0.0.1:{port}", port, str(logdir), process, log_path)
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while time.monotonic() < deadline and process.poll() is None:
                try:
                    if server.get("/data/plugins_listing", timeout=5)[0] == 200:
                        return server
                except OSError:
                    pass
                time.sleep(0.25)
            _stop(server)
            last_error = f"exit status {process.returncode}; log:\n{server.log_tail()}"
            if "already in use" not in server.log_tail():
                break
        pytest.fail(f"tensorboard did not start: {' '.join(command)}\n{last_error}")

    yield start
    for server in started:
        _stop(server)


@pytest.fixture(scope="session")
def _browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    chromium = _chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900},
        )
        yield context
        context.close()


@pytest.fixture
def page_errors() -> list[str]:
    """Uncaught exceptions, console errors and HTTP answers >= 400 seen by `browser_page`."""
    return []


@pytest.fixture
def browser_page(
    _browser_context: object, page_errors: list[str], request: pytest.FixtureRequest
) -> Iterator[object]:
    page = _browser_context.new_page()
    page.on("pageerror", lambda error: page_errors.append(f"pageerror: {error}"))
    page.on(
        "console",
        lambda msg: page_errors.append(f"console.error: {msg.text}") if msg.type == "error" else None,
    )
    page.on(
        "response", lambda r: page_errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None
    )
    origins: set[str] = set()
    page.on("framenavigated", lambda f: origins.add(_origin(f.url)) if f.url.startswith("http") else None)
    yield page
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        page.screenshot(path=str(_output_dir(request) / "failure.png"), full_page=True)
        (_output_dir(request) / "page_errors.txt").write_text("\n".join(page_errors))
    # The next test may open a server this one used (a module's shared server): it starts with that
    # origin's storage empty (TensorBoard keeps its theme and settings there), as with a server of its own.
    cdp = _browser_context.new_cdp_session(page)
    for origin in origins:
        cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
    cdp.detach()
    page.close()


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@pytest.fixture
def open_profscope() -> Callable[..., object]:
    def open_tab(page: object, server: TensorBoardServer, timeout_ms: float = 30_000) -> object:
        """Open the profscope tab and return the `Frame` of the plugin's iframe once it has loaded."""
        page.goto(f"{server.url}/#profscope")
        iframe = page.wait_for_selector(
            "iframe[src*='plugin_entry.html?name=profscope']", state="attached", timeout=timeout_ms
        )
        frame = iframe.content_frame()
        assert frame is not None, "profscope iframe has no frame"
        frame.wait_for_load_state("load", timeout=timeout_ms)
        return frame

    return open_tab


@pytest.fixture
def screenshot(request: pytest.FixtureRequest) -> Callable[[object, str], pathlib.Path]:
    def save(page: object, name: str) -> pathlib.Path:
        path = _output_dir(request) / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save
