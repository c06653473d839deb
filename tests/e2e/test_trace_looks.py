"""How profscope looks, end to end in Chromium on the real H100 trace served by a real `tensorboard`:
the dark theme following TensorBoard's own toggle (TensorBoard puts `dark-mode` on its `<body>`, found
here in its DOM) and, outside TensorBoard, `prefers-color-scheme`, canvases and charts included, in
every tab; at 1280×800 the shell bar and the trace toolbar on one line ("Linked k of N" showing too)
and at least 60 % of the height for the timeline with an event selected; the details panel's height
remembered. Screenshots: chromium_light.png, chromium_dark.png (Trace), chromium_overview_light.png,
chromium_overview_dark.png, chromium_roofline_light.png, chromium_roofline_dark.png.
"""

from __future__ import annotations

import urllib.parse

from tests.e2e.trace_fixtures import (
    FLASH_KERNEL,
    GPU_LOGDIR,
    LABEL_WIDTH,
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


# JS: what of the shown view reads wrong in the dark theme: opaque light backgrounds (legend swatches
# and bars, which are series colours, left out), dark text, and on each drawn chart's canvas the
# grey pixels (labels, lines) still in the light theme's colours ("black") and the light ones.
_DARK_CHECK_JS = """
tool => {
  const view = document.querySelector(`[data-testid=view-${tool}]`);
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
    // The light theme's label and line colours (shared/chart_theme.ts), exactly: a dark theme's
    // background-coloured fill (hollow points) is near the second.
    const stale = [[75, 85, 99], [32, 33, 36]];
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
    light = frame.evaluate(_DARK_CHECK_JS, "roofline")
    assert light["light"] and any(c["black"] for c in light["charts"]), light

    _tensorboard_theme(page, "Dark")
    frame.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
    for tool, drawn in _TABS.items():
        frame.click(f"[data-testid=tab-{tool}]")
        frame.wait_for_selector(drawn, timeout=120_000)
        page.wait_for_timeout(300)  # a chart drawn before the switch redraws on its next frame
        seen = frame.evaluate(_DARK_CHECK_JS, tool)
        assert seen["light"] == [] and seen["dark"] == [], (tool, seen)
        for chart in seen["charts"]:
            assert chart["black"] < 20 and chart["pale"] > 50, (tool, chart)
        if tool in ("overview", "roofline"):
            screenshot(page, f"chromium_{tool}_dark")
    _tensorboard_theme(page, "Light")
    frame.wait_for_function("() => document.documentElement.dataset.theme === 'light'")
    assert page_errors == []
