"""How profscope looks, end to end in Chromium on the real H100 trace served by a real `tensorboard`:
the dark theme following TensorBoard's own toggle (TensorBoard puts `dark-mode` on its `<body>`, found
here in its DOM) and, outside TensorBoard, `prefers-color-scheme`, canvases and charts included, in
every tab; at 1280×800 the shell bar and the trace toolbar on one line ("Linked k of N" showing too)
and at least 60 % of the height for the timeline with an event selected; the details panel's height
remembered; the XLA tab (its graph diff and Graphviz drawing too), the HLO graph and the Capture
dialog in the dark theme. Screenshots: chromium_light.png, chromium_dark.png (Trace),
chromium_overview_light.png, chromium_overview_dark.png, chromium_roofline_light.png,
chromium_roofline_dark.png, chromium_xla_dark.png, chromium_capture_dark.png.
"""

from __future__ import annotations

import pathlib
import re
import shutil
import urllib.parse

from tests.e2e.trace_fixtures import (
    FLASH_KERNEL,
    GPU_LOGDIR,
    LABEL_WIDTH,
    REPO,
    click_an_event,
    fragment,
    get_json,
    open_gpu_trace,
    open_trace_tab,
    requires_bundle,
    subject_query,
    wait_idle,
)

pytestmark = requires_bundle

XLA_DATA = REPO / "tests" / "data" / "xla" / "pytorch_xla_cpu_recompile"
XLA_LOGS = ("xla_metrics_report.txt", "xla_metrics_per_step.txt", "pt_xla_debug.txt", "xla_graphs.txt.0")
TPU_XPLANE = REPO / "tests" / "data" / "xplane" / "tpu_v6e_inference.xplane.pb"
HLO_FUSION = "broadcast_add_fusion.2"

# JS: [r, g, b] of the timeline canvas' pixel at CSS (x, y).
_PIXEL_JS = """
([x, y]) => {
  const c = document.querySelector('[data-testid=trace-canvas]');
  const dpr = c.width / c.getBoundingClientRect().width;
  return Array.from(c.getContext('2d').getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data.slice(0, 3));
}
"""


def _theme(frame) -> str:
    return frame.evaluate("() => document.documentElement.dataset.theme")


def _luminance(rgb: list[int]) -> float:
    return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]


def _tensorboard_theme(page, choice: str) -> None:
    """Pick "Light", "Dark" or "Browser default" in TensorBoard's own dark-mode menu."""
    page.click("app-header-dark-mode-toggle-component button")
    page.get_by_role("menuitem", name=choice).click()


def test_dark_theme_follows_tensorboards_toggle(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot
) -> None:
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    _, frame, _ = open_gpu_trace(tensorboard_server, page, open_profscope)
    assert not page.evaluate("() => document.body.classList.contains('dark-mode')")
    assert _theme(frame) == "light"
    label_bg = frame.evaluate(_PIXEL_JS, [LABEL_WIDTH + 5, 5])
    assert _luminance(label_bg) > 200, label_bg

    _tensorboard_theme(page, "Dark")
    page.wait_for_function("() => document.body.classList.contains('dark-mode')")
    frame.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
    wait_idle(frame)
    click_an_event(frame, below_y=40)
    frame.wait_for_selector("[data-testid=details-id]", timeout=15_000)
    wait_idle(frame)
    dark_bg = frame.evaluate(_PIXEL_JS, [LABEL_WIDTH + 5, 5])
    assert _luminance(dark_bg) < 70, dark_bg
    panel = frame.evaluate(
        "() => getComputedStyle(document.querySelector('[data-testid=details-panel]')).color"
    )
    assert panel.startswith("rgb(2"), f"light text on the dark panel, got {panel}"
    screenshot(page, "chromium_dark")

    _tensorboard_theme(page, "Light")
    frame.wait_for_function("() => document.documentElement.dataset.theme === 'light'")
    assert page_errors == []


def test_prefers_color_scheme_outside_tensorboard(tensorboard_server, browser_page, page_errors) -> None:
    """The plugin's page opened on its own follows the browser's colour scheme, canvases included."""
    page = browser_page
    page.emulate_media(color_scheme="dark")
    server = tensorboard_server(GPU_LOGDIR)
    page.goto(f"{server.url}/data/plugin_entry.html?name=profscope")
    page.wait_for_selector("[data-testid=run-select] option", state="attached", timeout=30_000)
    assert _theme(page.main_frame) == "dark"
    open_trace_tab(page.main_frame)
    assert _luminance(page.evaluate(_PIXEL_JS, [LABEL_WIDTH + 5, 5])) < 70
    page.emulate_media(color_scheme="light")
    page.wait_for_function("() => document.documentElement.dataset.theme === 'light'")
    # The page on its own asks for /data/favicon.ico, which TensorBoard does not serve there (the
    # browser's console names no URL for it, and no page response is seen).
    favicon = "console.error: Failed to load resource: the server responded with a status of 404 (NOT FOUND)"
    assert [e for e in page_errors if e != favicon] == []


def test_layout_at_1280x800_and_the_remembered_panel_height(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot
) -> None:
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    server, frame, _ = open_gpu_trace(tensorboard_server, page, open_profscope)

    def height(sel: str) -> float:
        return frame.locator(sel).bounding_box()["height"]

    toolbar = frame.locator(".tv-toolbar").bounding_box()
    assert toolbar["height"] < 40, f"the toolbar wraps: {toolbar}"
    timeline = height(".tv-body")
    assert timeline >= 0.6 * 800, f"the timeline has {timeline}px of 800 under an empty details panel"

    shell_bar = frame.evaluate(
        "() => { const b = document.querySelector('.ps-bar');"
        " return { height: b.getBoundingClientRect().height, scroll: b.scrollWidth, width: b.clientWidth }; }"
    )
    assert shell_bar["height"] < 45 and shell_bar["scroll"] <= shell_bar["width"], (
        f"the shell bar wraps: {shell_bar}"
    )

    click_an_event(frame, below_y=40)
    frame.wait_for_selector("[data-testid=details-id]", timeout=15_000)
    wait_idle(frame)
    timeline = height(".tv-body")
    assert timeline >= 0.6 * 800, f"the timeline has {timeline}px of 800 with an event selected"
    screenshot(page, "chromium_light")
    shown = height("[data-testid=details-panel]")
    splitter = frame.locator("[data-testid=details-splitter]").bounding_box()
    x, y = splitter["x"] + 200, splitter["y"] + 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x, y - 120, steps=6)
    page.mouse.up()
    dragged = height("[data-testid=details-panel]")
    assert abs(dragged - (shown + 120)) <= 2, (shown, dragged)

    page.reload()
    frame = page.wait_for_selector("iframe[src*='plugin_entry.html?name=profscope']").content_frame()
    frame.wait_for_selector("[data-testid=trace-canvas]", timeout=30_000)
    wait_idle(frame)
    click_an_event(frame, below_y=40)
    frame.wait_for_selector("[data-testid=details-id]", timeout=15_000)
    assert abs(height("[data-testid=details-panel]") - dragged) <= 2

    # A link naming the events to walk (as a Roofline row's): "Linked 1 of N" joins the toolbar,
    # which stays on one line and shows all of itself.
    link = fragment(page)
    found = get_json(server, f"trace/search?{subject_query(link)}&q={FLASH_KERNEL}&limit=1000")
    ids = [m["id"] for m in found["matches"]]
    keys = {k: link[k] for k in ("run", "session", "host", "tool")}
    page.evaluate(
        "frag => { location.hash = frag; }",
        "profscope&" + urllib.parse.urlencode({**keys, "lk": ",".join(map(str, ids)), "sel": str(ids[0])}),
    )
    frame.wait_for_function(
        "want => document.querySelector('[data-testid=linked-count]')?.textContent === want",
        arg=f"1 of {len(ids)}",
        timeout=30_000,
    )
    wait_idle(frame)
    toolbar = frame.evaluate(
        "() => { const t = document.querySelector('.tv-toolbar'); const r = t.getBoundingClientRect();"
        " return { height: r.height, scroll: t.scrollWidth, width: t.clientWidth,"
        " exportRight: document.querySelector('[data-testid=export-button]').getBoundingClientRect().right }; }"
    )
    assert toolbar["height"] < 40 and toolbar["scroll"] <= toolbar["width"], toolbar
    assert toolbar["exportRight"] <= toolbar["width"], toolbar
    assert page_errors == []


# JS: what of the element `sel` (a tab's view, a panel, a dialog) reads wrong in the dark theme: opaque light backgrounds (legend swatches
# and bars, which are series colours, left out), dark text, and on each drawn chart's canvas the
# grey pixels (labels, lines) still in the light theme's colours ("black") and the light ones.
_DARK_CHECK_JS = """
sel => {
  const view = document.querySelector(sel);
  const lum = ([r, g, b]) => 0.299 * r + 0.587 * g + 0.114 * b;
  const rgb = (css) => (css.match(/[\\d.]+/g) || []).map(Number);
  const light = [], dark = [];
  for (const el of view.querySelectorAll('*')) {
    if (el.closest('canvas, svg, [class*=swatch], [class*=-bar], [class*=legend]')) continue;
    const st = getComputedStyle(el);
    if (st.display === 'none' || st.visibility === 'hidden') continue;
    const bg = rgb(st.backgroundColor);
    if (bg.length >= 3 && (bg.length < 4 || bg[3] > 0.5) && lum(bg) > 160) light.push(el.className || el.tagName);
    const own = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim());
    if (own && lum(rgb(st.color)) < 110) dark.push(`${el.className || el.tagName}: ${el.textContent.slice(0, 30)}`);
  }
  const charts = Array.from(view.querySelectorAll('canvas[data-drawn]')).map((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    // The light theme's label, line and grid colours (shared/chart_theme.ts), exactly: a dark
    // theme's background-coloured fill (hollow points) is near the second, its ink near the third.
    const stale = [[75, 85, 99], [32, 33, 36], [238, 240, 243]];
    let black = 0, pale = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] < 100 || Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 16) continue;
      if (stale.some((s) => s.every((v, k) => Math.abs(v - d[i + k]) <= 1))) black++;
      if (lum([d[i], d[i + 1], d[i + 2]]) > 170) pale++;
    }
    return { chart: c.dataset.testid || c.getAttribute('aria-label'), black, pale };
  });
  return { light: [...new Set(light)], dark: [...new Set(dark)].slice(0, 10), charts };
}
"""

# Each tab, and what shows it has drawn (a chart where it has one).
_TABS = {
    "overview": "[data-testid=view-overview] canvas[data-drawn]",
    "roofline": "[data-testid=view-roofline] canvas[data-drawn]",
    "memory": "[data-testid=view-memory] canvas[data-drawn]",
    "compare": "[data-testid=view-compare] select",
}


def test_every_tab_follows_the_dark_theme(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot
) -> None:
    """Overview, Roofline, Memory and Compare on the H100 trace, light then dark by TensorBoard's
    toggle: backgrounds dark, text light, and each drawn chart redrawn in the dark theme's ink."""
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    server = tensorboard_server(GPU_LOGDIR)
    frame = open_profscope(page, server)
    frame.wait_for_selector("[data-testid=run-select] option", state="attached", timeout=30_000)
    for tool in ("overview", "roofline"):
        frame.click(f"[data-testid=tab-{tool}]")
        frame.wait_for_selector(_TABS[tool], timeout=120_000)
        screenshot(page, f"chromium_{tool}_light")
    # In the light theme the checks see what they look for in the dark one: they can fail.
    light = frame.evaluate(_DARK_CHECK_JS, "[data-testid=view-roofline]")
    assert light["light"] and any(c["black"] for c in light["charts"]), light

    _tensorboard_theme(page, "Dark")
    frame.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
    for tool, drawn in _TABS.items():
        frame.click(f"[data-testid=tab-{tool}]")
        frame.wait_for_selector(drawn, timeout=120_000)
        page.wait_for_timeout(300)  # a chart drawn before the switch redraws on its next frame
        seen = frame.evaluate(_DARK_CHECK_JS, f"[data-testid=view-{tool}]")
        assert seen["light"] == [] and seen["dark"] == [], (tool, seen)
        for chart in seen["charts"]:
            assert chart["black"] < 20 and chart["pale"] > 50, (tool, chart)
        if tool in ("overview", "roofline"):
            screenshot(page, f"chromium_{tool}_dark")
    _tensorboard_theme(page, "Light")
    frame.wait_for_function("() => document.documentElement.dataset.theme === 'light'")
    assert page_errors == []


def _assert_dark(frame, sel: str) -> None:
    seen = frame.evaluate(_DARK_CHECK_JS, sel)
    assert seen["light"] == [] and seen["dark"] == [], (sel, seen)
    for chart in seen["charts"]:
        assert chart["black"] < 20 and chart["pale"] > 50, (sel, chart)


def test_xla_tab_hlo_graph_and_capture_dialog_follow_the_dark_theme(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot, tmp_path: pathlib.Path
) -> None:
    """Dark by TensorBoard's toggle at 1280×800, on one server started with --profscope_capture: the
    XLA tab of the PyTorch/XLA recompile logs (cards, findings, its Chart.js step charts redrawn), the
    HLO graph of a TPU v6e op in the Trace tab's details (its Graphviz drawing inverted) and the
    Capture dialog. Screenshots: chromium_xla_dark.png, chromium_capture_dark.png."""
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    logdir = tmp_path / "logdir"
    (logdir / "xla_recompile").mkdir(parents=True)
    for name in XLA_LOGS:
        shutil.copy(XLA_DATA / name, logdir / "xla_recompile" / name)
    session = logdir / "tpu_v6e" / "plugins" / "profile" / "session"
    session.mkdir(parents=True)
    shutil.copy(TPU_XPLANE, session / "host.xplane.pb")
    server = tensorboard_server(logdir, "--profscope_capture")
    frame = open_profscope(page, server)
    frame.wait_for_selector("[data-testid=run-select] option", state="attached", timeout=30_000)
    _tensorboard_theme(page, "Dark")
    frame.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")

    page.evaluate("() => { location.hash = 'profscope&run=xla_recompile&session=xla&host=xla&tool=xla'; }")
    frame.wait_for_selector("[data-testid=finding-recompilation]", timeout=60_000)
    frame.wait_for_selector("[data-testid=step-charts] canvas[data-drawn]", timeout=60_000)
    page.wait_for_timeout(300)  # the charts settle (Chart.js animates nothing here, fonts may load)
    _assert_dark(frame, "[data-testid=view-xla]")
    screenshot(page, "chromium_xla_dark")
    # The diff of two graphs (changed rows marked) and a graph drawn by Graphviz, inverted.
    frame.click("[data-testid=finding-recompilation] [data-testid=open-diff]")
    frame.wait_for_selector("[data-testid=diff-rows] tr.xv-changed", timeout=30_000)
    _assert_dark(frame, "[data-testid=view-xla]")
    frame.click("[data-testid=xla-tab-graphs]")
    frame.click("[data-testid=graph-group] >> nth=2")
    frame.wait_for_selector("[data-testid=graph-drawing] svg g.node", timeout=60_000)
    _assert_dark(frame, "[data-testid=view-xla]")
    drawing = frame.evaluate(
        "() => getComputedStyle(document.querySelector('[data-testid=graph-drawing] svg')).filter"
    )
    assert drawing.startswith("invert("), drawing
    screenshot(page, "chromium_xla_graph_dark")

    page.evaluate("() => { location.hash = 'profscope&run=tpu_v6e&session=session&host=host&tool=trace'; }")
    open_trace_tab(frame)
    frame.fill("[data-testid=search-input]", f"%{HLO_FUSION} = ")
    frame.press("[data-testid=search-input]", "Enter")
    frame.wait_for_function(
        "op => (document.querySelector('[data-testid=hlo-title]')?.textContent ?? '').startsWith('%' + op + ' ')",
        arg=HLO_FUSION,
        timeout=30_000,
    )
    frame.wait_for_selector("[data-testid=hlo-graph] svg g.node", timeout=30_000)
    _assert_dark(frame, "[data-testid=hlo-section]")
    # Graphviz draws black ink on transparent: the drawing is inverted over the section's dark background.
    drawing = frame.evaluate(
        "() => getComputedStyle(document.querySelector('[data-testid=hlo-graph] svg')).filter"
    )
    assert drawing.startswith("invert("), drawing
    screenshot(page, "chromium_hlo_graph_dark")

    frame.click("[data-testid=capture-button]")
    frame.wait_for_selector("[data-testid=capture-form]:not([hidden])")
    _assert_dark(frame, "[data-testid=capture-dialog]")
    box = frame.evaluate("() => getComputedStyle(document.querySelector('.ps-capture-box')).backgroundColor")
    assert _luminance([float(v) for v in re.findall(r"[\d.]+", box)[:3]]) < 70, box
    screenshot(page, "chromium_capture_dark")
    _tensorboard_theme(page, "Light")
    frame.wait_for_function("() => document.documentElement.dataset.theme === 'light'")
    assert page_errors == []
