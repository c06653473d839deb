"""The Trace tab's track panel end to end in headless Chromium, on the real H100 Kineto trace (Python
stacks on: 36 rows of frames on the track below the host thread's ops) served by a real
`tensorboard`: the GPU tracks brought to the top in two clicks, a depth limit, the choice kept in the
deep link and restored from it, the Python stacks hidden by their preset, the track labels staying in
view while a deep track scrolls, and Z zooming to the device's activity. Expectations come from the
server's own `trace/meta` and `trace/search`, or the pixels drawn.
"""

from __future__ import annotations

from tests.e2e.trace_fixtures import (
    LABEL_WIDTH,
    fragment,
    get_json,
    open_gpu_trace,
    requires_bundle,
    settled_link,
    subject_query,
    view_range,
    wait_idle,
)

pytestmark = requires_bundle

# JS: dark (text) pixels of the label column between CSS y0 and y1 of the timeline canvas.
_LABEL_INK_JS = """
([x0, x1, y0, y1]) => {
  const c = document.querySelector('[data-testid=trace-canvas]');
  const dpr = c.width / c.getBoundingClientRect().width;
  const d = c.getContext('2d').getImageData(Math.round(x0 * dpr), Math.round(y0 * dpr),
    Math.round((x1 - x0) * dpr), Math.round((y1 - y0) * dpr)).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i] < 90 && d[i + 1] < 90 && d[i + 2] < 90) n++;
  return n;
}
"""


# JS: leftmost and rightmost CSS x of coloured (event) pixels right of the labels between rows y0
# and y1 of the timeline canvas, and the canvas width. Coloured: channels 40 apart, which the pale
# pink of a GPU annotation or a kernel is (46 to 59) and the greys of the grid and text are not.
_INK_SPAN_JS = """
([left, y0, y1]) => {
  const c = document.querySelector('[data-testid=trace-canvas]');
  const dpr = c.width / c.getBoundingClientRect().width;
  const x0 = Math.ceil(left * dpr), top = Math.round(y0 * dpr), h = Math.round((y1 - y0) * dpr);
  const d = c.getContext('2d').getImageData(x0, top, c.width - x0, h).data;
  const w = c.width - x0;
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < d.length; i += 4) {
    if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 40) {
      const x = (i / 4) % w;
      lo = Math.min(lo, x); hi = Math.max(hi, x);
    }
  }
  return [left + lo / dpr, left + hi / dpr, c.width / dpr];
}
"""


def _track_order(frame) -> list[int]:
    return [int(t) for t in frame.get_attribute("[data-testid=trace-canvas]", "data-track-order").split(",")]


def _meta(server, page) -> dict:
    return get_json(server, f"trace/meta?{subject_query(fragment(page))}")


def _is_python(track: dict) -> bool:
    """A Kineto thread's Python frames, on the track the reader gives them (`· Python`)."""
    return track["name"].endswith(" · Python")


def _device_tracks(meta: dict) -> list[int]:
    """The tracks "Device first" pins: those of the GPU sections but Python frames (Kineto puts a
    thread of them in GPU 0's process)."""
    gpu_sections = {s["id"] for s in meta["sections"] if s["kind"] == "gpu"}
    return [t["id"] for t in meta["tracks"] if t["section"] in gpu_sections and not _is_python(t)]


def _tops(meta: dict, hidden: set[int]) -> dict[int, tuple[int, int]]:
    """(top, height) in CSS px of each shown track, as `layout.ts` stacks sections and tracks
    (24 px section headers, 18 px rows, 3 px padding above and below)."""
    tops, y = {}, 0
    for section in sorted(meta["sections"], key=lambda s: (s["host"], s["sort_index"], s["id"])):
        tracks = [t for t in meta["tracks"] if t["section"] == section["id"] and t["id"] not in hidden]
        if not tracks:
            continue
        y += 24
        for t in sorted(tracks, key=lambda t: (t["sort_index"], t["id"])):
            height = (t["max_depth"] + 1) * 18 + 6
            tops[t["id"]] = (y, height)
            y += height
    return tops


def test_gpu_streams_come_first_in_two_clicks_and_the_link_keeps_them(
    tensorboard_server, browser_page, open_profscope, page_errors, screenshot
) -> None:
    browser_page.set_viewport_size({"width": 1280, "height": 800})
    server, frame, _ = open_gpu_trace(tensorboard_server, browser_page, open_profscope)
    meta = _meta(server, browser_page)
    gpu_tracks = _device_tracks(meta)
    assert gpu_tracks and _track_order(frame)[0] not in gpu_tracks  # the host comes first in the trace
    frame.click("[data-testid=tracks-button]")
    frame.click("[data-testid=tracks-preset-device-first]")
    frame.wait_for_function(
        "ids => document.querySelector('[data-testid=trace-canvas]').dataset.trackOrder.startsWith(ids)",
        arg=",".join(map(str, gpu_tracks)),
    )
    link = settled_link(browser_page, frame)
    assert link["tp"] == ",".join(map(str, gpu_tracks))
    screenshot(browser_page, "chromium_tracks")
    # A limit of 3 rows on the 36-row Python stack of the host thread, kept in the link too.
    host = next(t for t in meta["tracks"] if t["max_depth"] >= 10)
    frame.fill(f"[data-testid=tracks-depth-{host['id']}]", "3")
    frame.press(f"[data-testid=tracks-depth-{host['id']}]", "Enter")
    frame.wait_for_function("() => window.top.location.hash.includes('td=')")
    assert settled_link(browser_page, frame)["td"] == f"{host['id']}:3"
    # The same link in a fresh page opens on the same tracks.
    fresh = browser_page.context.new_page()
    try:
        fresh.set_viewport_size({"width": 1280, "height": 800})
        fresh.goto(browser_page.evaluate("location.href"))
        again = fresh.wait_for_selector("iframe[src*='plugin_entry.html?name=profscope']").content_frame()
        again.wait_for_selector("[data-testid=trace-canvas][data-track-order]", timeout=60_000)
        wait_idle(again)
        assert _track_order(again)[: len(gpu_tracks)] == gpu_tracks
    finally:
        fresh.close()
    assert page_errors == []


def test_labels_stay_in_view_on_a_deep_track_and_z_zooms_to_the_device(
    tensorboard_server, browser_page, open_profscope, page_errors
) -> None:
    browser_page.set_viewport_size({"width": 1280, "height": 800})
    server, frame, _ = open_gpu_trace(tensorboard_server, browser_page, open_profscope)
    meta = _meta(server, browser_page)
    # Scroll 300 px into the 36-row Python stack of the host thread (first section): its label
    # still shows at the top.
    frame.eval_on_selector(".tv-scroll", "s => { s.scrollTop = 300; }")
    frame.wait_for_timeout(300)
    ink = frame.evaluate(_LABEL_INK_JS, [18, LABEL_WIDTH - 80, 0, 24])
    assert ink > 20, "no label at the top of a scrolled deep track"
    frame.eval_on_selector(".tv-scroll", "s => { s.scrollTop = 0; }")
    whole = view_range(settled_link(browser_page, frame))
    # The GPU tracks to the top, then Z: the window is where they are busy, their boxes reaching
    # (nearly) both of its ends.
    frame.click("[data-testid=tracks-button]")
    frame.click("[data-testid=tracks-preset-device-first]")
    frame.click("[data-testid=tracks-button]")
    frame.locator("[data-testid=trace-viewer]").focus()
    browser_page.keyboard.press("z")
    frame.wait_for_function(
        "w => { const m = /start=([^&]+)&/.exec(window.top.location.hash), e = /end=([^&]+)/.exec(window.top.location.hash);"
        " return m && e && Number(e[1]) - Number(m[1]) < w; }",
        arg=0.9 * (whole[1] - whole[0]),
    )
    start, end = view_range(settled_link(browser_page, frame))
    pinned = set(_device_tracks(meta))
    gpu_rows = sum((t["max_depth"] + 1) * 18 + 6 for t in meta["tracks"] if t["id"] in pinned)
    left, right, width = frame.evaluate(_INK_SPAN_JS, [LABEL_WIDTH, 24, 24 + gpu_rows])
    assert left - LABEL_WIDTH < 0.05 * (width - LABEL_WIDTH), (left, right, width, start, end)
    assert width - right < 0.05 * (width - LABEL_WIDTH), (left, right, width, start, end)
    assert page_errors == []


def test_hiding_the_python_stacks_keeps_the_ops_and_brings_the_gpu_streams_into_view(
    tensorboard_server, browser_page, open_profscope, page_errors, screenshot
) -> None:
    browser_page.set_viewport_size({"width": 1280, "height": 800})
    server, frame, _ = open_gpu_trace(tensorboard_server, browser_page, open_profscope)
    meta = _meta(server, browser_page)
    python = {t["id"] for t in meta["tracks"] if _is_python(t)}
    streams = [t["id"] for t in meta["tracks"] if t["kind"] == "stream"]
    ops = next(t["id"] for t in meta["tracks"] if t["name"] == "thread 19392 (python3)")
    assert len(python) == 2 and streams
    height = frame.evaluate(
        "document.querySelector('[data-testid=trace-canvas]').getBoundingClientRect().height"
    )
    before = _tops(meta, set())
    assert before[streams[0]][0] > height, "the GPU stream is already in view under the Python stack"
    assert python <= set(_track_order(frame))
    frame.click("[data-testid=tracks-button]")
    frame.click("[data-testid=tracks-preset-hide-python]")
    frame.wait_for_function(
        "ids => !document.querySelector('[data-testid=trace-canvas]').dataset.trackOrder.split(',')"
        ".some(id => ids.includes(Number(id)))",
        arg=sorted(python),
    )
    assert not frame.is_checked("[data-testid=tracks-kind-python]")
    frame.click("[data-testid=tracks-button]")
    assert settled_link(browser_page, frame)["tk"] == "python"
    order = _track_order(frame)
    assert ops in order and set(streams) <= set(order) and not python & set(order)
    after = _tops(meta, python)
    top, rows = after[streams[0]]
    assert top + rows < height, (top, rows, height)
    # Drawn there: the kernels on the stream's rows, the ops on the thread's.
    for track in (streams[0], ops):
        y, h = after[track]
        left, right, _ = frame.evaluate(_INK_SPAN_JS, [LABEL_WIDTH, y, y + h])
        assert left < right, f"nothing drawn on track {track} at y {y}–{y + h}"
    screenshot(browser_page, "chromium_tracks_no_python")
    assert page_errors == []
