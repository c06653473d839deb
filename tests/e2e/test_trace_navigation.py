"""Keeping the place and landing exactly, end to end in headless Chromium on the real H100 Kineto trace
served by a real `tensorboard`: walking search matches with Enter keeps the zoom (the window pans) and
hands the keys back to the timeline; a Roofline row opens exactly the GPU kernels its time comes from
("k of N", walked with ▶), not an op of another shape; Back returns to the Roofline tab, then to the
Trace window the user left. Expectations come from the server's own answers.
"""

from __future__ import annotations

import time

from tests.e2e.trace_fixtures import (
    FLASH_KERNEL,
    fragment,
    get_json,
    goto_range,
    open_gpu_trace,
    requires_bundle,
    settled_link,
    subject_query,
    view_range,
)

pytestmark = requires_bundle


def _width(link: dict[str, str]) -> float:
    start, end = view_range(link)
    return end - start


def _wait_fragment(page, ok, timeout_s: float = 15.0) -> dict[str, str]:
    deadline = time.monotonic() + timeout_s
    while True:
        link = fragment(page)
        if ok(link) or time.monotonic() > deadline:
            return link
        time.sleep(0.1)


def test_search_enter_pans_at_the_same_zoom_and_gives_the_keys_back(
    tensorboard_server, browser_page, open_profscope, page_errors
) -> None:
    server, frame, _ = open_gpu_trace(tensorboard_server, browser_page, open_profscope)
    subject = subject_query(fragment(browser_page))
    found = get_json(server, f"trace/search?{subject}&q={FLASH_KERNEL}&limit=1000")
    first, second = found["matches"][0], found["matches"][1]
    # A 400 µs window far from the first match: Enter must pan there, not zoom to the kernel.
    span = get_json(server, f"trace/meta?{subject}")["span_ns"]
    start = span[1] - 400_000.0 if first["start_ns"] < span[1] / 2 else span[0]
    before = goto_range(browser_page, frame, start, start + 400_000.0)
    frame.fill("[data-testid=search-input]", FLASH_KERNEL)
    frame.press("[data-testid=search-input]", "Enter")
    link = _wait_fragment(browser_page, lambda ln: ln.get("sel") == str(first["id"]))
    link = settled_link(browser_page, frame)
    assert link["sel"] == str(first["id"])
    assert abs(_width(link) - _width(before)) < 1.0
    a, b = view_range(link)
    assert a <= first["start_ns"] and first["start_ns"] + first["dur_ns"] <= b
    # The focus is back on the timeline: Enter walks on, W zooms.
    assert frame.evaluate("document.activeElement.dataset.testid") == "trace-viewer"
    browser_page.keyboard.press("Enter")
    link = _wait_fragment(browser_page, lambda ln: ln.get("sel") == str(second["id"]))
    assert link["sel"] == str(second["id"])
    assert abs(_width(settled_link(browser_page, frame)) - _width(before)) < 1.0
    browser_page.keyboard.press("w")
    assert _width(settled_link(browser_page, frame)) < _width(before) * 0.9
    assert page_errors == []


def test_a_roofline_row_opens_exactly_its_kernels_and_back_returns(
    tensorboard_server, browser_page, open_profscope, page_errors, screenshot
) -> None:
    browser_page.set_viewport_size({"width": 1280, "height": 800})
    server, frame, _ = open_gpu_trace(tensorboard_server, browser_page, open_profscope)
    subject = subject_query(fragment(browser_page))
    meta = get_json(server, f"trace/meta?{subject}")
    left = goto_range(browser_page, frame, 1_000_000.0, 1_500_000.0)
    frame.click("[data-testid=tab-roofline]")
    frame.wait_for_selector("[data-testid=rf-ops]", timeout=120_000)
    assert fragment(browser_page)["tool"] == "roofline"
    answer = get_json(server, f"roofline?{subject}")
    # An op row with its shapes in the name, whose base name other events of the trace share.
    row = next(
        op for op in answer["ops"] if op.get("event_ids") and "(" in op["name"] and len(op["event_ids"]) >= 2
    )
    ids = row["event_ids"]
    frame.click(f"[data-testid=rf-op-row][data-rank='{row['rank']}'] [data-testid=rf-open-trace]")
    frame.wait_for_function(
        "want => document.querySelector('[data-testid=linked-count]')?.textContent === want",
        arg=f"1 of {len(ids)}",
        timeout=60_000,
    )
    link = _wait_fragment(browser_page, lambda ln: ln.get("sel") == str(ids[0]))
    assert link["tool"] == "trace" and link["sel"] == str(ids[0])
    gpu_sections = {s["id"] for s in meta["sections"] if s["kind"] == "gpu"}
    gpu_tracks = {t["id"] for t in meta["tracks"] if t["section"] in gpu_sections}
    base = row["name"].split("(")[0]
    # Other shapes of the same op are other rows, with other kernels.
    others = [op for op in answer["ops"] if op["name"].startswith(f"{base}(") and op["rank"] != row["rank"]]
    assert others and all(set(ids).isdisjoint(op.get("event_ids", [])) for op in others)
    for event_id in ids[:5]:
        event = get_json(server, f"trace/event?{subject}&id={event_id}")
        assert event["track"] in gpu_tracks, event  # a kernel on a GPU stream, not a host op
        assert event["name"] != base
    width = _width(settled_link(browser_page, frame))
    screenshot(browser_page, "chromium_roofline_to_kernels")
    frame.click("[data-testid=linked-next]")
    link = _wait_fragment(browser_page, lambda ln: ln.get("sel") == str(ids[1]))
    assert link["sel"] == str(ids[1])
    assert frame.text_content("[data-testid=linked-count]") == f"2 of {len(ids)}"
    assert abs(_width(settled_link(browser_page, frame)) - width) < 1.0
    # Back: the Roofline tab, then the Trace window left before it.
    browser_page.go_back()
    assert _wait_fragment(browser_page, lambda ln: ln.get("tool") == "roofline")["tool"] == "roofline"
    frame.wait_for_selector("[data-testid=view-roofline]:not([hidden])")
    browser_page.go_back()
    back = _wait_fragment(browser_page, lambda ln: ln.get("tool") == "trace")
    assert back["tool"] == "trace"
    frame.wait_for_selector("[data-testid=view-trace]:not([hidden])")
    assert view_range(settled_link(browser_page, frame)) == view_range(left)
    assert page_errors == []
