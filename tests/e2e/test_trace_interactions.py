"""The Trace tab's interactions end to end in headless Chromium, on the real H100 trace served by a real
`tensorboard`: measuring (Timing tool drag, M on a selection), flows (the toggle's arrows on the canvas,
following a flow link in the details panel), multi-selection summaries (Ctrl+click, Select-tool drag,
checked against the server's own `trace/summary`), and moving around (A/D, S, wheel, F, Esc, the Pan
tool). Every expectation is computed from what the test did (pixels dragged, the window in the deep
link) or asked the server itself, never from the viewer's own arithmetic.
"""

from __future__ import annotations

import math
import re

from tests.e2e.trace_fixtures import (
    FLASH_KERNEL,
    LABEL_WIDTH,
    MEASURE_READOUT,
    canvas_box,
    canvas_ink,
    click_an_event,
    event_points,
    fragment,
    get_json,
    hold,
    ns_at,
    ns_per_px,
    open_gpu_trace,
    parse_duration_ns,
    requires_bundle,
    settled_link,
    subject_query,
    track_rows,
    view_range,
    wait_idle,
    wait_link,
)

pytestmark = requires_bundle

# Timing marks and their axis label (frontend/src/views/trace/viewer.ts MARK_COLOR).
MARK_RGB = (0xE8, 0x71, 0x0A)
# Flow arrows drawn by the Flows toggle (render.ts drawFlows).
FLOW_RGB = (150, 60, 20)

# JS: pixels of the axis canvas within `tol` of an RGB colour, between CSS x0 and x1.
_AXIS_COLOR_JS = """
([rgb, x0, x1, tol]) => {
  const c = document.querySelector('[data-testid=trace-axis]');
  const dpr = c.width / c.getBoundingClientRect().width;
  const a = Math.max(0, Math.floor(x0 * dpr)), b = Math.min(c.width, Math.ceil(x1 * dpr));
  const data = c.getContext('2d').getImageData(a, 0, Math.max(1, b - a), c.height).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (Math.abs(data[i] - rgb[0]) <= tol && Math.abs(data[i + 1] - rgb[1]) <= tol
        && Math.abs(data[i + 2] - rgb[2]) <= tol) n++;
  }
  return n;
}
"""

# JS: keep a copy of the timeline canvas' pixels under `window[name]`.
_SNAPSHOT_JS = """
(name) => {
  const c = document.querySelector('[data-testid=trace-canvas]');
  window[name] = c.getContext('2d').getImageData(0, 0, c.width, c.height).data.slice();
}
"""

# JS: compare the canvas now with the snapshot `name`, right of the label column: how many pixels
# changed, and how many of those moved towards the colour `rgb` (drawn over in that colour).
_DIFF_JS = """
([name, rgb, left]) => {
  const c = document.querySelector('[data-testid=trace-canvas]');
  const dpr = c.width / c.getBoundingClientRect().width;
  const before = window[name];
  const now = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const x0 = Math.ceil(left * dpr);
  const dist = (d, i) => Math.hypot(d[i] - rgb[0], d[i + 1] - rgb[1], d[i + 2] - rgb[2]);
  let changed = 0, towards = 0, leftChanged = 0;
  for (let y = 0; y < c.height; y++) {
    for (let x = 0; x < c.width; x++) {
      const i = (y * c.width + x) * 4;
      if (before[i] === now[i] && before[i + 1] === now[i + 1] && before[i + 2] === now[i + 2]) continue;
      if (x < x0) { leftChanged++; continue; }
      changed++;
      if (dist(now, i) < dist(before, i) - 8) towards++;
    }
  }
  return {changed, towards, leftChanged};
}
"""

# JS: the summary table as [name, count] pairs.
_SUMMARY_ROWS_JS = """
() => Array.from(document.querySelectorAll('[data-testid=summary-table] tbody tr'))
  .map(tr => [tr.cells[0].title || tr.cells[0].textContent, Number(tr.cells[1].textContent.replace(/,/g, ''))])
"""


def _drag(page, x0: float, y0: float, x1: float, y1: float) -> None:
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=12)
    page.mouse.up()


def _measure(frame) -> tuple[float, float, float]:
    """(duration, from, to) in ns as the measurement readout says them."""
    text = frame.inner_text("[data-testid=measure]")
    assert re.fullmatch(MEASURE_READOUT, text.strip()), f"measure readout reads {text!r}"
    return tuple(
        parse_duration_ns(frame.inner_text(f"[data-testid=measure-{k}]")) for k in ("duration", "from", "to")
    )


def _search_first_kernel(frame, page) -> dict[str, str]:
    frame.fill("[data-testid=search-input]", FLASH_KERNEL)
    frame.press("[data-testid=search-input]", "Enter")
    frame.wait_for_function(
        f"() => (document.querySelector('[data-testid=details-name]')?.textContent ?? '').includes('{FLASH_KERNEL}')",
        timeout=30_000,
    )
    wait_link(frame, "sel=")
    return settled_link(page, frame)


def _flow_count(frame) -> int:
    return int(frame.eval_on_selector("[data-testid=trace-canvas]", "c => c.dataset.flows"))


def _next_frames(frame, n: int = 3) -> None:
    frame.evaluate(
        "n => new Promise(r => { const f = k => k ? requestAnimationFrame(() => f(k - 1)) : r(); f(n); })", n
    )


def test_timing_tool_and_m_measure(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot
) -> None:
    server, frame, _ = open_gpu_trace(tensorboard_server, browser_page, open_profscope)
    page = browser_page
    assert frame.locator("[data-testid=measure]").is_hidden()
    page.keyboard.press("4")
    assert frame.eval_on_selector("[data-testid=trace-canvas]", "c => c.dataset.tool") == "timing"
    assert "active" in frame.get_attribute("[data-testid=tool-timing]", "class")

    link = settled_link(page, frame)
    box = canvas_box(frame)
    width = box["width"] - LABEL_WIDTH
    x0, x1 = box["x"] + LABEL_WIDTH + 0.3 * width, box["x"] + LABEL_WIDTH + 0.55 * width
    axis = frame.locator("[data-testid=trace-axis]").bounding_box()
    orange_before = frame.evaluate(_AXIS_COLOR_JS, [MARK_RGB, x0 - axis["x"], x1 - axis["x"], 12])
    _drag(page, x0, box["y"] + 120, x1, box["y"] + 120)
    frame.wait_for_selector("[data-testid=measure]", state="visible", timeout=5_000)
    page.mouse.move(box["x"] + 5, box["y"] - 60)
    _next_frames(frame)
    after = settled_link(page, frame)
    screenshot(page, "measure_drag")

    # The timing tool measures, it does not move the view.
    assert view_range(after) == view_range(link)
    duration, start, end = _measure(frame)
    px = ns_per_px(link, box)
    dragged = (x1 - x0) * px
    assert math.isclose(duration, dragged, rel_tol=0.01), (duration, dragged)
    assert abs(start - ns_at(link, box, x0)) < 1.5 * px, (start, ns_at(link, box, x0), px)
    assert abs(end - ns_at(link, box, x1)) < 1.5 * px, (end, ns_at(link, box, x1), px)
    # The axis shows the measurement too: its label box has the mark's colour.
    orange_after = frame.evaluate(_AXIS_COLOR_JS, [MARK_RGB, x0 - axis["x"], x1 - axis["x"], 12])
    assert orange_before < 5 and orange_after > 30, (orange_before, orange_after)

    # A drag that starts on a section header measures too; only a click there collapses the section.
    rows_before = canvas_ink(frame)["rows"]
    shown = frame.inner_text("[data-testid=measure]")
    hx0, hx1 = box["x"] + LABEL_WIDTH + 0.1 * width, box["x"] + LABEL_WIDTH + 0.2 * width
    _drag(page, hx0, box["y"] + 10, hx1, box["y"] + 10)
    frame.wait_for_function(
        "t => document.querySelector('[data-testid=measure]').innerText !== t", arg=shown, timeout=5_000
    )
    page.mouse.move(box["x"] + 5, box["y"] - 60)
    _next_frames(frame)
    assert math.isclose(_measure(frame)[0], (hx1 - hx0) * px, rel_tol=0.01), (_measure(frame), px)
    assert canvas_ink(frame)["rows"] > 0.8 * rows_before, "the drag over the header collapsed its section"

    # M marks the selected event's range: the readout then says that event's duration and times.
    page.keyboard.press("1")
    click_an_event(frame, below_y=60)
    wait_link(frame, "sel=")
    sel = settled_link(page, frame)["sel"]
    event = get_json(server, f"trace/event?{subject_query(link)}&id={sel}")
    assert event["dur_ns"] > 0, event
    measured = frame.inner_text("[data-testid=measure]")
    page.keyboard.press("m")
    frame.wait_for_function(
        "t => document.querySelector('[data-testid=measure]').innerText !== t", arg=measured, timeout=5_000
    )
    screenshot(page, "measure_m")
    duration, start, end = _measure(frame)
    assert math.isclose(duration, event["dur_ns"], rel_tol=2e-3), (duration, event)
    assert abs(start - event["start_ns"]) <= max(1.0, 1e-6 * event["start_ns"]), (start, event)
    assert abs(end - (event["start_ns"] + event["dur_ns"])) <= max(1.0, 1e-6 * end), (end, event)
    assert frame.inner_text("[data-testid=measure-duration]") == frame.inner_text(
        "[data-testid=details-duration]"
    )

    page.keyboard.press("Escape")
    frame.wait_for_selector("[data-testid=measure]", state="hidden", timeout=5_000)
    assert page_errors == []


def test_flows_toggle_draws_arrows_and_flow_links_jump(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot
) -> None:
    server, frame, _ = open_gpu_trace(tensorboard_server, browser_page, open_profscope)
    page = browser_page
    link = _search_first_kernel(frame, page)
    query = subject_query(link)
    kernel = get_json(server, f"trace/event?{query}&id={link['sel']}")
    assert kernel["flows_in"], f"the kernel has no incoming flow: {kernel}"

    # Flows off, nothing selected (a selected event's own flows are always drawn): no arrow. The first
    # Esc leaves the search box, the second clears the selection.
    page.keyboard.press("Escape")
    assert frame.input_value("[data-testid=search-input]") == FLASH_KERNEL, "Esc emptied the search box"
    page.keyboard.press("Escape")
    frame.wait_for_function("() => !window.top.location.hash.includes('sel=')")
    wait_idle(frame)
    _next_frames(frame)
    assert _flow_count(frame) == 0
    frame.evaluate(_SNAPSHOT_JS, "__flowsOff")
    screenshot(page, "flows_off")
    frame.click("[data-testid=flows-toggle]")
    _next_frames(frame)
    assert view_range(settled_link(page, frame)) == view_range(link)
    arrows = _flow_count(frame)
    diff = frame.evaluate(_DIFF_JS, ["__flowsOff", FLOW_RGB, LABEL_WIDTH])
    screenshot(page, "flows_on")
    assert arrows >= 1, arrows
    # The change is the arrows: enough pixels, nearly all of them pulled towards the arrows' colour,
    # and nothing changed in the label column.
    assert diff["changed"] > 150, diff
    assert diff["towards"] > 0.9 * diff["changed"], diff
    assert diff["leftChanged"] == 0, diff

    # Select the next kernel and pan away from its launch, then follow the "Flows in" link.
    frame.press("[data-testid=search-input]", "Enter")
    frame.wait_for_function(
        "() => /^2 \\//.test(document.querySelector('[data-testid=search-count]').textContent)"
    )
    frame.wait_for_function(
        "id => window.top.location.hash.includes('sel=' + id)",
        arg=get_json(server, f"trace/search?{query}&q={FLASH_KERNEL}&limit=10")["matches"][1]["id"],
    )
    kernel = get_json(server, f"trace/event?{query}&id={settled_link(page, frame)['sel']}")
    launch_ref = kernel["flows_in"][0]
    # Enter gave the keys back to the timeline; the search kept the whole-trace zoom: F fits the kernel.
    page.keyboard.press("f")
    box = canvas_box(frame)
    page.mouse.move(box["x"] + 600, box["y"] + 100)
    hold(page, "d", 1.2)
    moved = settled_link(page, frame)
    start, end = view_range(moved)
    assert launch_ref["start_ns"] + launch_ref["dur_ns"] < start or launch_ref["start_ns"] > end, (
        moved,
        launch_ref,
    )
    flow_link = frame.locator(f"[data-testid=details-flows] a[data-flow-id='{launch_ref['id']}']")
    assert launch_ref["name"] in flow_link.inner_text()
    flow_link.click()
    frame.wait_for_function(
        "id => window.top.location.hash.includes('sel=' + id + '&') || window.top.location.hash.endsWith('sel=' + id)",
        arg=launch_ref["id"],
        timeout=15_000,
    )
    followed = settled_link(page, frame)
    screenshot(page, "flow_link_followed")
    assert int(followed["sel"]) == launch_ref["id"]
    launch = get_json(server, f"trace/event?{query}&id={launch_ref['id']}")
    start, end = view_range(followed)
    assert start <= launch["start_ns"] and launch["start_ns"] + launch["dur_ns"] <= end, (followed, launch)
    assert frame.inner_text("[data-testid=details-name]") == launch["name"]
    # And back along the launch's "Flows out" to the kernel.
    assert any(f["id"] == kernel["id"] for f in launch["flows_out"]), launch["flows_out"]
    frame.locator(f"[data-testid=details-flows] a[data-flow-id='{kernel['id']}']").click()
    frame.wait_for_function(
        "id => window.top.location.hash.includes('sel=' + id)", arg=kernel["id"], timeout=15_000
    )
    back = settled_link(page, frame)
    start, end = view_range(back)
    assert start <= kernel["start_ns"] and kernel["start_ns"] + kernel["dur_ns"] <= end, (back, kernel)
    assert page_errors == []


def test_ctrl_click_and_range_drag_show_summaries(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot
) -> None:
    server, frame, _ = open_gpu_trace(tensorboard_server, browser_page, open_profscope)
    page = browser_page
    link = settled_link(page, frame)
    query = subject_query(link)
    box = canvas_box(frame)

    # Ctrl+click two events in different rows.
    points = [p for p in event_points(frame) if p["y"] > 40]
    first = points[0]
    second = next(p for p in points if abs(p["y"] - first["y"]) >= 18)
    page.mouse.click(box["x"] + first["x"], box["y"] + first["y"])
    page.keyboard.down("Control")
    page.mouse.click(box["x"] + second["x"], box["y"] + second["y"])
    page.keyboard.up("Control")
    frame.wait_for_selector("[data-testid=summary-table]", timeout=15_000)
    frame.wait_for_function("() => /sel=\\d+(%2C|,)\\d+/.test(window.top.location.hash)")
    picked = settled_link(page, frame)
    screenshot(page, "ctrl_click_summary")
    ids = picked["sel"].split(",")
    assert len(ids) == 2 and ids[0] != ids[1], picked
    names = [get_json(server, f"trace/event?{query}&id={i}")["name"] for i in ids]
    rows = dict(frame.evaluate(_SUMMARY_ROWS_JS))
    expected = {
        r["name"]: r["count"] for r in get_json(server, f"trace/summary?{query}&ids={','.join(ids)}")["rows"]
    }
    assert rows == expected, (rows, expected)
    assert sum(rows.values()) == 2 and set(rows) == set(names)
    assert "2 selected events" in frame.inner_text("[data-testid=details-panel]")

    # Collapse the CPU section (click its header) so both GPU tracks are on screen, then drag with the
    # Select tool from the GPU's thread row down into its stream over 20–60 % of the window.
    page.keyboard.press("Escape")
    page.mouse.click(box["x"] + 40, box["y"] + 10)
    _next_frames(frame)
    meta = get_json(server, f"trace/meta?{query}")
    cpu = [s["id"] for s in meta["sections"] if s["kind"] == "cpu"]
    rows_y = track_rows(meta, set(cpu))
    gpu_tracks = [
        t["id"]
        for t in meta["tracks"]
        if t["section"] in {s["id"] for s in meta["sections"] if s["kind"] == "gpu"}
    ]
    assert len(gpu_tracks) >= 2, meta["tracks"]
    top_track, bottom_track = gpu_tracks[0], gpu_tracks[-1]
    y0 = box["y"] + rows_y[top_track][0] + 10
    y1 = box["y"] + rows_y[bottom_track][1] - 10
    assert y1 < box["y"] + box["height"], (rows_y, box)
    width = box["width"] - LABEL_WIDTH
    x0, x1 = box["x"] + LABEL_WIDTH + 0.2 * width, box["x"] + LABEL_WIDTH + 0.6 * width
    page.keyboard.press("1")
    _drag(page, x0, y0, x1, y1)
    frame.wait_for_function("() => window.top.location.hash.includes('range=')", timeout=15_000)
    frame.wait_for_selector("[data-testid=summary-table]", timeout=15_000)
    ranged = settled_link(page, frame)
    screenshot(page, "range_summary")
    tracks = [int(t) for t in ranged["tracks"].split(",")]
    assert sorted(tracks) == sorted(gpu_tracks), (tracks, gpu_tracks)
    a, b = ranged["range"].split(",")
    px = ns_per_px(link, box)
    assert abs(float(a) - ns_at(link, box, x0)) < 1.5 * px, (a, ns_at(link, box, x0), px)
    assert abs(float(b) - ns_at(link, box, x1)) < 1.5 * px, (b, ns_at(link, box, x1), px)
    summary = get_json(server, f"trace/summary?{query}&start={a}&end={b}&tracks={ranged['tracks']}")
    rows = dict(frame.evaluate(_SUMMARY_ROWS_JS))
    assert rows == {r["name"]: r["count"] for r in summary["rows"]}
    assert summary["num_events"] > 10, summary["num_events"]
    assert "Range selection" in frame.inner_text("[data-testid=details-panel]")
    assert page_errors == []


def test_keyboard_and_mouse_navigation(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot
) -> None:
    server, frame, _ = open_gpu_trace(tensorboard_server, browser_page, open_profscope)
    page = browser_page
    box = canvas_box(frame)
    mid_x, mid_y = box["x"] + LABEL_WIDTH + 0.5 * (box["width"] - LABEL_WIDTH), box["y"] + 150
    page.mouse.move(mid_x, mid_y)
    hold(page, "w", 0.5)
    zoomed = settled_link(page, frame)

    def width(link: dict[str, str]) -> float:
        start, end = view_range(link)
        return end - start

    # D / A pan: the window moves, its width stays.
    hold(page, "d", 0.4)
    right = settled_link(page, frame)
    assert view_range(right)[0] > view_range(zoomed)[0] + 0.05 * width(zoomed)
    assert math.isclose(width(right), width(zoomed), rel_tol=1e-6)
    hold(page, "a", 0.4)
    left = settled_link(page, frame)
    assert view_range(left)[0] < view_range(right)[0] - 0.05 * width(zoomed)
    assert math.isclose(width(left), width(zoomed), rel_tol=1e-6)

    # S zooms out.
    hold(page, "s", 0.3)
    out = settled_link(page, frame)
    assert width(out) > 1.3 * width(left)

    # Ctrl+wheel zooms around the mouse: exp(0.0025 · 200) = 1.65× in, the instant under it stays.
    anchor_x = box["x"] + LABEL_WIDTH + 0.3 * (box["width"] - LABEL_WIDTH)
    page.mouse.move(anchor_x, mid_y)
    anchor = ns_at(out, box, anchor_x)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -200)
    page.keyboard.up("Control")
    wheeled = settled_link(page, frame)
    assert math.isclose(width(out) / width(wheeled), math.exp(0.5), rel_tol=0.01), (out, wheeled)
    assert abs(ns_at(wheeled, box, anchor_x) - anchor) < ns_per_px(wheeled, box), (anchor, wheeled)
    # Shift+wheel pans by the wheel distance in pixels; a plain wheel scrolls the tracks, not time.
    page.keyboard.down("Shift")
    page.mouse.wheel(0, 120)
    page.keyboard.up("Shift")
    shifted = settled_link(page, frame)
    assert math.isclose(
        view_range(shifted)[0] - view_range(wheeled)[0], 120 * ns_per_px(wheeled, box), rel_tol=0.02
    ), (wheeled, shifted)
    page.mouse.wheel(0, 200)
    _next_frames(frame)
    assert view_range(settled_link(page, frame)) == view_range(shifted)
    assert frame.evaluate("document.querySelector('.tv-scroll').scrollTop") > 0
    screenshot(page, "wheel_scrolled_tracks")
    page.mouse.wheel(0, -1000)

    # Pan tool: dragging 150 px left shows 150 px later in time, same width.
    page.keyboard.press("2")
    assert frame.eval_on_selector("[data-testid=trace-canvas]", "c => c.dataset.tool") == "pan"
    before = settled_link(page, frame)
    _drag(page, mid_x, mid_y, mid_x - 150, mid_y)
    dragged = settled_link(page, frame)
    assert math.isclose(
        view_range(dragged)[0] - view_range(before)[0], 150 * ns_per_px(before, box), rel_tol=0.02
    ), (before, dragged)
    assert math.isclose(width(dragged), width(before), rel_tol=1e-6)
    screenshot(page, "pan_tool")

    # F zooms to the selected event (10 % margin each side), Esc clears the selection.
    page.keyboard.press("1")
    click_an_event(frame, below_y=40)
    wait_link(frame, "sel=")
    sel = settled_link(page, frame)
    event = get_json(server, f"trace/event?{subject_query(sel)}&id={sel['sel']}")
    page.keyboard.press("f")
    fitted = settled_link(page, frame)
    span = max(event["dur_ns"], 10.0)
    mid = event["start_ns"] + event["dur_ns"] / 2
    start, end = view_range(fitted)
    assert abs(start - (mid - 0.6 * span)) < 1e-3 * span + 0.01, (fitted, event)
    assert abs(end - (mid + 0.6 * span)) < 1e-3 * span + 0.01, (fitted, event)
    screenshot(page, "f_zoomed")
    page.keyboard.press("Escape")
    frame.wait_for_function("() => !window.top.location.hash.includes('sel=')", timeout=5_000)
    assert frame.locator("[data-testid=details-name]").count() == 0
    assert "Click an event" in frame.inner_text("[data-testid=details-panel]")
    assert view_range(settled_link(page, frame)) == view_range(fitted)
    assert "sel" not in fragment(page)
    assert page_errors == []
