"""Selections and the details panel end to end in Chromium on real traces served by a real `tensorboard`:
a range dragged on one track (its band drawn on that track only, read back from the canvas), its summary
(a "% of range" column, sorting, template names shortened with the full name on hover, a row picking
its events and walking through them, copying as TSV / CSV), the launch → kernel latency of a flow, an
XPlane kernel's `kernel_details` as fields, and the axis' absolute time on hover. Expectations come
from the server's own routes (`trace/summary`, `trace/search`, `trace/event`) and from what the test did.
"""

from __future__ import annotations

import pathlib
import shutil

from tests.e2e.trace_fixtures import (
    FLASH_KERNEL,
    LABEL_WIDTH,
    REPO,
    canvas_box,
    fragment,
    get_json,
    open_gpu_trace,
    open_trace_tab,
    parse_duration_ns,
    requires_bundle,
    settled_link,
    subject_query,
    track_rows,
    wait_idle,
)

pytestmark = requires_bundle

MI300_XPLANE = REPO / "tests" / "data" / "xplane" / "mi300_jax_conv.xplane.pb"

# JS: the CSS y of the pixels of the canvas column at CSS x that are the range band's edge (RANGE_COLOR
# #1a73e8 drawn at 90 % over a light background).
_BAND_EDGE_JS = """
([x]) => {
  const c = document.querySelector('[data-testid=trace-canvas]');
  const dpr = c.width / c.getBoundingClientRect().width;
  const data = c.getContext('2d').getImageData(Math.round(x * dpr), 0, 1, c.height).data;
  const ys = [];
  for (let y = 0; y < c.height; y++) {
    const r = data[4 * y], g = data[4 * y + 1], b = data[4 * y + 2];
    if (b > 200 && r < 90 && g > 100 && g < 150) ys.push(y / dpr);
  }
  return ys;
}
"""

# JS: the summary's rows as [full name, shown name, count, row height].
_SUMMARY_JS = """
() => Array.from(document.querySelectorAll('[data-testid=summary-table] tbody tr')).map(tr => [
  tr.cells[0].title, tr.cells[0].textContent, Number(tr.cells[1].textContent.replace(/,/g, '')),
  tr.getBoundingClientRect().height])
"""

# JS: replaces the clipboard's writeText (the iframe may not be granted it) to keep what is copied.
_CAPTURE_COPY_JS = """
() => {
  window.__copied = [];
  Object.defineProperty(navigator, 'clipboard', {value: {writeText: async (t) => { window.__copied.push(t); }}});
}
"""


def _drag(page, x0: float, y0: float, x1: float, y1: float) -> None:
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=12)
    page.mouse.up()


def test_range_on_one_track_its_band_and_summary(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot
) -> None:
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    server, frame, _ = open_gpu_trace(tensorboard_server, page, open_profscope)
    link = settled_link(page, frame)
    query = subject_query(link)
    meta = get_json(server, f"trace/meta?{query}")
    cpu = {s["id"] for s in meta["sections"] if s["kind"] == "cpu"}
    gpu = {s["id"] for s in meta["sections"] if s["kind"] == "gpu"}
    box = canvas_box(frame)
    page.mouse.click(box["x"] + 40, box["y"] + 10)  # folds the CPU section
    wait_idle(frame)
    rows_y = track_rows(meta, cpu)
    stream = [t["id"] for t in meta["tracks"] if t["section"] in gpu][-1]
    top, bottom = rows_y[stream]
    width = box["width"] - LABEL_WIDTH
    x0, x1 = box["x"] + LABEL_WIDTH + 0.15 * width, box["x"] + LABEL_WIDTH + 0.55 * width
    page.keyboard.press("1")
    _drag(page, x0, box["y"] + top + 4, x1, box["y"] + bottom - 4)
    frame.wait_for_selector("[data-testid=summary-table]", timeout=15_000)
    ranged = settled_link(page, frame)
    assert ranged["tracks"] == str(stream), ranged
    assert "on 1 track" in frame.inner_text("[data-testid=details-panel]")

    # The band's edges are drawn on the selected track's rows only.
    edge = frame.evaluate(_BAND_EDGE_JS, [round(x0 - box["x"])])
    assert edge, "no band edge drawn"
    assert min(edge) >= top - 1 and max(edge) <= bottom + 1, (min(edge), max(edge), top, bottom)

    # The summary: the server's counts, a share of the range, template names shortened.
    a, b = ranged["range"].split(",")
    summary = get_json(server, f"trace/summary?{query}&start={a}&end={b}&tracks={stream}")
    shown = frame.evaluate(_SUMMARY_JS)
    assert {r[0]: r[2] for r in shown} == {r["name"]: r["count"] for r in summary["rows"]}
    assert "% of range" in frame.inner_text("[data-testid=summary-table] thead")
    templated = [r for r in shown if "<" in r[0]]
    assert templated, "the H100 trace's kernels have template names"
    for full, text, _, height in templated:
        assert "<…>" in text and len(text) < len(full), text
        assert height < 24, f"{text!r} takes {height}px"
    frame.click("[data-testid=summary-table] th[data-sort=count]")
    counts = [r[2] for r in frame.evaluate(_SUMMARY_JS)]
    assert counts == sorted(counts, reverse=True)

    # A row picks its events in the range; ▶ goes to the next one.
    name = next(r[0] for r in shown if FLASH_KERNEL in r[0])
    matches = get_json(server, f"trace/search?{query}&q={FLASH_KERNEL}&limit=10000")["matches"]
    inside = [
        m
        for m in matches
        if m["name"] == name
        and m["track"] == stream
        and m["start_ns"] < float(b)
        and m["start_ns"] + m["dur_ns"] > float(a)
    ]
    frame.click(f"[data-testid=summary-table] tbody tr[data-name='{name}']")
    frame.wait_for_function(
        "n => (document.querySelector('[data-testid=picked]')?.textContent ?? '').includes(`1 / ${n}`)",
        arg=len(inside),
        timeout=30_000,
    )
    frame.click("[data-testid=picked-next]")
    frame.wait_for_function(
        "n => (document.querySelector('[data-testid=picked]')?.textContent ?? '').includes(`2 / ${n}`)",
        arg=len(inside),
    )
    assert frame.get_attribute("[data-testid=summary-table] tr.picked", "data-name") == name
    wait_idle(frame)
    screenshot(page, "chromium_selection")

    # Copied as TSV and CSV: a header and one line per name, times in ns.
    frame.evaluate(_CAPTURE_COPY_JS)
    frame.click("[data-testid=summary-copy-tsv]")
    frame.click("[data-testid=summary-copy-csv]")
    tsv, csv = frame.evaluate("() => window.__copied")
    assert tsv.splitlines()[0].split("\t")[:4] == ["name", "count", "total_ns", "percent_of_range"]
    assert len(tsv.splitlines()) == len(summary["rows"]) + 1
    assert csv.splitlines()[0].startswith("name,count,total_ns,percent_of_range")
    lines = {line.split("\t")[0]: line.split("\t") for line in tsv.splitlines()[1:]}
    row = next(r for r in summary["rows"] if r["name"] == name)
    assert int(lines[name][1]) == row["count"] and float(lines[name][2]) == row["total_ns"]
    assert page_errors == []


def test_flow_latency_and_the_axis_time_on_hover(
    tensorboard_server, browser_page, page_errors, open_profscope
) -> None:
    page = browser_page
    server, frame, _ = open_gpu_trace(tensorboard_server, page, open_profscope)
    frame.fill("[data-testid=search-input]", FLASH_KERNEL)
    frame.press("[data-testid=search-input]", "Enter")
    frame.wait_for_selector("[data-testid=flow-latency]", timeout=30_000)
    query = subject_query(fragment(page))
    kernel = get_json(server, f"trace/event?{query}&id={frame.inner_text('[data-testid=details-id]')}")
    launch = kernel["flows_in"][0]
    label, value = frame.inner_text("[data-testid=flow-latency]").split("\t")
    assert label.startswith("Latency from") and launch["name"][:10] in label, label
    expected = kernel["start_ns"] - launch["start_ns"]
    assert abs(parse_duration_ns(value) - expected) <= max(1.0, 1e-3 * expected), (value, expected)

    # The axis labels are offsets; its tooltip says the absolute time under the pointer.
    axis = frame.locator("[data-testid=trace-axis]").bounding_box()
    page.mouse.move(axis["x"] + LABEL_WIDTH + 200, axis["y"] + 10)
    title = frame.get_attribute("[data-testid=trace-axis]", "title")
    assert title and "from the trace start" in title, title
    assert page_errors == []


def test_xplane_kernel_details_as_fields(
    tensorboard_server, browser_page, page_errors, open_profscope, tmp_path: pathlib.Path
) -> None:
    folder = tmp_path / "logdir" / "mi300" / "plugins" / "profile" / "session"
    folder.mkdir(parents=True)
    shutil.copy(MI300_XPLANE, folder / "host.xplane.pb")
    server = tensorboard_server(tmp_path / "logdir")
    frame = open_profscope(browser_page, server)
    frame.wait_for_selector("[data-testid=run-select] option", state="attached", timeout=30_000)
    open_trace_tab(frame)
    query = subject_query(fragment(browser_page))
    found = get_json(server, f"trace/search?{query}&arg=kernel_details:*grid:*&limit=1")
    assert found["total"] > 0
    frame.fill("[data-testid=search-input]", "kernel_details:*grid:*")
    frame.press("[data-testid=search-input]", "Enter")
    frame.wait_for_selector("[data-testid=kernel-field]", timeout=30_000)
    event = get_json(server, f"trace/event?{query}&id={found['matches'][0]['id']}")
    assert frame.inner_text("[data-testid=details-id]") == str(event["id"])
    fields = dict(r.split("\t") for r in frame.locator("[data-testid=kernel-field]").all_inner_texts())
    written = dict(item.split(":", 1) for item in event["args"]["kernel_details"].split())
    assert fields["Grid"] == written["grid"].replace(",", " × ")
    assert fields["Block"] == written["block"].replace(",", " × ")
    assert fields["Occupancy"] == f"{written['occ_pct']} %"
    assert page_errors == []
