"""End to end: `tensorboard --logdir …` as a user starts it, the profscope tab in headless Chromium."""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import time

import pytest

from profscope import logdir as logdir_lib

REPO = pathlib.Path(__file__).resolve().parents[2]
DEMO_LOGDIR = REPO / "demo" / "logdir"
LAYOUTS_LOGDIR = REPO / "tests" / "data" / "layouts" / "logdir"
BUNDLE = REPO / "tb_plugin" / "profscope" / "static" / "index.js"

# The shell's own requests; answers of views' data routes are those views' tests' business.
SHELL_REQUEST = re.compile(r"/data/plugin/profscope/(runs|index\.js|static/)")

needs_bundle = pytest.mark.skipif(
    not BUNDLE.is_file(),
    reason=f"the frontend bundle {BUNDLE.relative_to(REPO)} is not built yet (npm --prefix frontend run build)",
)


def shell_errors(page_errors: list[str]) -> list[str]:
    return [e for e in page_errors if e.startswith("pageerror") or SHELL_REQUEST.search(e)]


def test_demo_logdir_served_by_real_tensorboard(tensorboard_server) -> None:
    server = tensorboard_server(DEMO_LOGDIR)
    status, _, body = server.get("/data/plugins_listing")
    assert status == 200
    entry = json.loads(body)["profscope"]
    assert entry["enabled"] is True
    assert entry["loading_mechanism"]["module_path"] == "/data/plugin/profscope/index.js"

    status, headers, body = server.get("/data/plugin/profscope/runs")
    assert status == 200
    assert headers["X-Content-Type-Options"] == "nosniff"
    runs = json.loads(body)["runs"]
    assert [r["name"] for r in runs] == [r.name for r in logdir_lib.discover(str(DEMO_LOGDIR)).runs]
    formats = {f["format"] for r in runs for s in r["sessions"] for h in s["hosts"] for f in h["files"]}
    # TensorFlow/JAX XPlanes, PyTorch traces and PyTorch/XLA logs side by side.
    assert {"xplane", "chrome_trace", "xla_metrics", "xla_graphs"} <= formats


def test_runs_written_while_serving_appear_without_restart(
    tensorboard_server, tmp_path: pathlib.Path
) -> None:
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    server = tensorboard_server(logdir)
    assert json.loads(server.get("/data/plugins_listing")[2])["profscope"]["enabled"] is False
    assert json.loads(server.get("/data/plugin/profscope/runs")[2])["runs"] == []

    new_run = logdir / "later_run"
    shutil.copytree(DEMO_LOGDIR / "jax_cpu_training", new_run)
    deadline = time.monotonic() + 4 * logdir_lib.DEFAULT_TTL_S
    names: list[str] = []
    while time.monotonic() < deadline and names != ["later_run"]:
        time.sleep(0.5)
        names = [r["name"] for r in json.loads(server.get("/data/plugin/profscope/runs")[2])["runs"]]
    assert names == ["later_run"]
    assert json.loads(server.get("/data/plugins_listing")[2])["profscope"]["enabled"] is True


@pytest.mark.parametrize(
    "raw_path",
    [
        "/data/plugin/profscope/static/../../../../../../etc/passwd",
        "/data/plugin/profscope/static/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/data/plugin/profscope/static/..%2f..%2f..%2f..%2fetc%2fpasswd",
        "/data/plugin/profscope/static/..%5c..%5c..%5cetc%5cpasswd",
        "/data/plugin/profscope/static/..\\..\\..\\etc\\passwd",
        "/data/plugin/profscope/static//etc/passwd",
    ],
)
def test_static_traversal_over_http(tensorboard_server, raw_path: str) -> None:
    """The real server (werkzeug's request parsing, TensorBoard's routing) never leaks a file; one
    server (the module's demo one) answers every path."""
    server = tensorboard_server(DEMO_LOGDIR)
    status, body = server.raw_get(raw_path)
    assert status in (400, 404), (status, body[:200])
    assert b"root:" not in body


@needs_bundle
@pytest.mark.parametrize("logdir", [DEMO_LOGDIR, LAYOUTS_LOGDIR], ids=["demo", "layouts"])
def test_tab_lists_runs(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot, logdir: pathlib.Path
) -> None:
    expected = [r.name for r in logdir_lib.discover(str(logdir)).runs]
    server = tensorboard_server(logdir)
    frame = open_profscope(browser_page, server)
    run_select = frame.wait_for_selector("[data-testid=run-select]", timeout=30_000)
    frame.wait_for_function(
        "n => document.querySelectorAll('[data-testid=run-select] option').length === n", arg=len(expected)
    )
    options = run_select.eval_on_selector_all(
        "option", "els => els.map(e => [e.value, e.textContent.trim()])"
    )
    screenshot(browser_page, "runs")
    assert [value for value, _ in options] == expected
    # Each run says what it holds, so XPlanes, traces and XLA logs are told apart in the list.
    holds = {
        run.name: {f.format for s in run.sessions for h in s.hosts for f in h.files if f.usable}
        for run in logdir_lib.discover(str(logdir)).runs
    }
    for value, text in options:
        assert text.startswith(value), text
        assert ("XPlane" in text) == ("xplane" in holds[value]), text
        assert ("Chrome trace" in text) == ("chrome_trace" in holds[value]), text
        assert ("XLA logs" in text) == any(f.startswith("xla_") for f in holds[value]), text
    assert frame.query_selector("[data-testid=session-select]") is not None
    assert frame.query_selector("[data-testid=host-select]") is not None
    assert shell_errors(page_errors) == []


@needs_bundle
def test_empty_logdir_says_which_layouts(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot, tmp_path: pathlib.Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    server = tensorboard_server(empty)
    frame = open_profscope(browser_page, server)
    message = frame.wait_for_selector("[data-testid=empty-logdir]", timeout=30_000)
    screenshot(browser_page, "empty")
    text = message.inner_text()
    assert f"No profile data found in {empty}" in text
    for layout in logdir_lib.RECOGNISED_LAYOUTS:
        assert " ".join(layout.split()) in " ".join(text.split())
    assert shell_errors(page_errors) == []
