"""The shell's "Capture…" dialog in headless Chromium against a real `tensorboard` started with
`--profscope_capture`, capturing from a real JAX program's profiler server: the user fills the
servers, duration and a new run, sees the progress, and the shell opens the new session. Without the
flag, the dialog says how to turn capturing on and still gives the PyTorch lines."""

from __future__ import annotations

import json
import pathlib
import shutil
from collections.abc import Iterator

import pytest

from tests.e2e.trace_fixtures import requires_bundle
from tests.support import DATA_DIR
from tests.support.jax_profiler import running_jax_job

pytestmark = requires_bundle
EXISTING = DATA_DIR / "multirank" / "jax2_cpu" / "process0" / "plugins" / "profile" / "2026_12_07_03_20_34"


@pytest.fixture
def jax_server() -> Iterator[str]:
    with running_jax_job() as address:
        yield address


@pytest.fixture
def logdir(tmp_path: pathlib.Path) -> pathlib.Path:
    """A logdir with one run already (so the tab is active), to capture a second one into."""
    target = tmp_path / "logdir"
    shutil.copytree(EXISTING, target / "earlier" / "plugins" / "profile" / EXISTING.name)
    return target


def test_capture_dialog_lands_a_session(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot, logdir, jax_server
) -> None:
    server = tensorboard_server(logdir, "--profscope_capture")
    frame = open_profscope(browser_page, server)
    frame.wait_for_selector("[data-testid=run-select]", timeout=60_000)
    frame.click("[data-testid=capture-button]")
    frame.wait_for_selector("[data-testid=capture-dialog]:not([hidden])")
    frame.wait_for_selector("[data-testid=capture-form]:not([hidden])")
    assert frame.input_value("[data-testid=capture-addresses]") == "localhost:9012"  # nothing remembered yet
    frame.fill("[data-testid=capture-addresses]", jax_server)
    frame.fill("[data-testid=capture-duration]", "1500")
    frame.fill("[data-testid=capture-run-name]", "jax_loop")
    screenshot(browser_page, "capture_dialog")

    frame.click("[data-testid=capture-start]")
    frame.wait_for_selector("[data-testid=capture-progress]:not([hidden])")
    assert "Recording on" in frame.inner_text("[data-testid=capture-progress]")
    screenshot(browser_page, "capture_progress")
    frame.wait_for_selector("[data-testid=capture-dialog][hidden]", state="attached", timeout=120_000)

    sessions = list((logdir / "jax_loop" / "plugins" / "profile").iterdir())
    assert [p.name for p in sessions[0].iterdir()] == ["127.0.0.1.xplane.pb"]
    frame.wait_for_function(
        "s => document.querySelector('[data-testid=session-select]')?.value === s", arg=sessions[0].name
    )
    assert frame.input_value("[data-testid=run-select]") == "jax_loop"
    frame.wait_for_selector("[data-testid=view-overview], [data-testid=view-trace]", timeout=60_000)
    screenshot(browser_page, "capture_landed")
    assert frame.evaluate("() => localStorage.getItem('profscope.capture.addresses')") == jax_server
    assert page_errors == []


def test_capture_dialog_says_how_to_turn_capturing_on(
    tensorboard_server, browser_page, open_profscope, screenshot, logdir
) -> None:
    server = tensorboard_server(logdir)
    frame = open_profscope(browser_page, server)
    frame.wait_for_selector("[data-testid=run-select]", timeout=60_000)
    frame.click("[data-testid=capture-button]")
    frame.wait_for_selector("[data-testid=capture-off]:not([hidden])")
    text = frame.inner_text("[data-testid=capture-off]")
    assert f"tensorboard --logdir {logdir} --profscope_capture" in text
    assert frame.is_hidden("[data-testid=capture-start]")
    frame.click("[data-testid=capture-pytorch] summary")
    snippet = frame.inner_text("[data-testid=capture-snippet]")
    assert f"tensorboard_trace_handler({json.dumps(str(logdir / 'capture'))})" in snippet
    screenshot(browser_page, "capture_off")
