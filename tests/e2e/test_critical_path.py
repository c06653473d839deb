"""The Trace tab's "Critical path" toggle end to end in headless Chromium, on the real H100 trace
(tests/data/trace_view): the view shows one step, the toggle outlines the events of that step's
critical path and draws its dependencies, and the readout gives the server's own breakdown
(`trace/critical_path`, docs/OVERVIEW.md "Critical path"); and on a merged multi-rank session the
paths cross between the ranks' sections."""

from __future__ import annotations

import shutil
import time

import pytest

from tests.e2e.test_overview_view import subject
from tests.e2e.test_ranks_view import SLOW_RANK
from tests.e2e.trace_fixtures import (
    get_json,
    goto_range,
    open_gpu_trace,
    parse_duration_ns,
    requires_bundle,
    settled_link,
    subject_query,
    wait_idle,
)

pytestmark = requires_bundle


def _next_frames(frame, n: int = 3) -> None:
    frame.evaluate(
        "n => new Promise(r => { const f = k => k ? requestAnimationFrame(() => f(k - 1)) : r(); f(n); })", n
    )


def test_critical_path_toggle_outlines_the_steps_path(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot
) -> None:
    server, frame, _ = open_gpu_trace(tensorboard_server, browser_page, open_profscope)
    page = browser_page
    query = subject_query(settled_link(page, frame))
    (whole,) = get_json(server, f"trace/critical_path?{query}")["hosts"]
    # Show one step: the server's answer for the step under the middle of the view is that step.
    goto_range(page, frame, whole["start_ns"], whole["end_ns"])
    wait_idle(frame)
    middle = (whole["start_ns"] + whole["end_ns"]) / 2
    (host,) = get_json(server, f"trace/critical_path?{query}&at={middle!r}")["hosts"]
    assert host["step"] == whole["step"] and host["events"] and host["edges"]

    canvas = "[data-testid=trace-canvas]"
    assert frame.get_attribute(canvas, "data-critical-events") == "0"
    frame.click("[data-testid=critical-path-toggle]")
    readout = frame.locator("[data-testid=critical-path-readout]")
    frame.wait_for_function(
        "() => document.querySelector('[data-testid=critical-path-readout]').textContent.includes('critical path ')"
    )
    _next_frames(frame)
    text = readout.text_content()
    assert text.startswith(f"step {host['step']} · critical path "), text
    total = parse_duration_ns(text.split("critical path ")[1].split(" of ")[0])
    assert abs(total - host["total_ns"]) <= 0.01 * host["total_ns"], (text, host["total_ns"])
    drawn = int(frame.get_attribute(canvas, "data-critical-events"))
    arrows = int(frame.get_attribute(canvas, "data-critical-arrows"))
    screenshot(page, "critical_path_on")
    assert drawn >= 1 and arrows >= 1, (drawn, arrows)
    assert drawn <= len(host["events"])
    # Down to the GPU streams: the launch arrows reach the kernels there.
    frame.evaluate("() => { const s = document.querySelector('.tv-scroll'); s.scrollTop = s.scrollHeight; }")
    _next_frames(frame)
    screenshot(page, "critical_path_streams")
    assert int(frame.get_attribute(canvas, "data-critical-arrows")) >= 1

    frame.click("[data-testid=critical-path-toggle]")
    _next_frames(frame)
    assert frame.get_attribute(canvas, "data-critical-events") == "0"
    assert readout.text_content() == ""
    assert not page_errors


def test_merged_ranks_path_crosses_into_the_slow_rank(
    tensorboard_server, browser_page, page_errors, screenshot, tmp_path
) -> None:
    """The merged `ddp4_slow_rank` session (tests/data/multirank/FACTS.md): in step 4 the paths of
    ranks 0, 1 and 3 cross from rank 2's section into theirs at the all-reduce, the readout names
    each rank's wait for another rank (FACTS.md §2: 23.15, 21.38, 0, 19.83 ms), and the arrows
    across the sections are drawn."""
    logdir = tmp_path / "logdir"
    shutil.copytree(SLOW_RANK, logdir / "ddp4_slow_rank")
    server = tensorboard_server(logdir)
    query = subject(server, "ddp4_slow_rank")
    route = f"/data/plugin/profscope/trace/critical_path?{query}&step=4"
    deadline = time.monotonic() + 120
    while server.get(route)[0] == 202 and time.monotonic() < deadline:  # the ranks are still read
        time.sleep(0.25)
    hosts = get_json(server, route.removeprefix("/data/plugin/profscope/"))["hosts"]
    assert [h["host"] for h in hosts] == ["rank0", "rank1", "rank2", "rank3"]
    waits = [h["by_cause_ns"]["rank_wait"] / 1e6 for h in hosts]
    assert waits == pytest.approx([23.15, 21.38, 0, 19.83], abs=0.01)
    crossing = [(e["src"] >> 32, e["dst"] >> 32) for h in hosts for e in h["edges"] if e["kind"] == "rank"]
    assert crossing == [(2, 0), (2, 1), (2, 3)]

    start = min(h["start_ns"] for h in hosts)
    end = max(h["end_ns"] for h in hosts)
    page = browser_page
    page.goto(f"{server.url}/#profscope&{query}&tool=trace&start={start!r}&end={end!r}")
    iframe = page.wait_for_selector(
        "iframe[src*='plugin_entry.html?name=profscope']", state="attached", timeout=30_000
    )
    frame = iframe.content_frame()
    wait_idle(frame, 120_000)
    frame.click("[data-testid=critical-path-toggle]")
    frame.wait_for_function(
        "() => document.querySelector('[data-testid=critical-path-readout]').textContent.includes('rank3: ')"
    )
    _next_frames(frame)
    text = frame.locator("[data-testid=critical-path-readout]").text_content()
    assert text.startswith("rank0: step 4 · critical path "), text
    assert text.count("waiting for another rank") == 3 and "data loading" in text
    canvas = "[data-testid=trace-canvas]"
    assert int(frame.get_attribute(canvas, "data-critical-crossing")) >= 1
    screenshot(page, "critical_path_ranks")
    assert not page_errors
