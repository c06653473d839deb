"""How the Trace tab looks, end to end in Chromium on the real H100 trace served by a real `tensorboard`:
the dark theme following TensorBoard's own toggle (TensorBoard puts `dark-mode` on its `<body>`, found
here in its DOM) and, outside TensorBoard, `prefers-color-scheme`, canvases included; at 1280×800 a
toolbar on one line and most of the height for the timeline; the details panel's height remembered.
Screenshots: chromium_light.png, chromium_dark.png.
"""

from __future__ import annotations

from tests.e2e.trace_fixtures import (
    GPU_LOGDIR,
    LABEL_WIDTH,
    click_an_event,
    open_gpu_trace,
    open_trace_tab,
    requires_bundle,
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

    click_an_event(frame, below_y=40)
    frame.wait_for_selector("[data-testid=details-id]", timeout=15_000)
    wait_idle(frame)
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
    assert page_errors == []
