"""The Trace tab's "Critical path" toggle end to end in headless Chromium, on the real H100 trace
(tests/data/trace_view): the view shows one step, the toggle outlines the events of that step's
critical path and draws its dependencies, and the readout gives the server's own breakdown
(`trace/critical_path`, docs/OVERVIEW.md "Critical path")."""

from __future__ import annotations

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
