"""End to end: the XLA tab on a real PyTorch/XLA run that recompiles and falls back to the CPU.

`tensorboard --logdir` on a copy of tests/data/xla/pytorch_xla_cpu_recompile (metrics report,
XLA_METRICS_FILE series, PT_XLA_DEBUG log, graph dump), in headless Chromium: both findings with their
evidence and code locations, every metric with its unit, the per-step charts (Chart.js), a graph drawn by Graphviz
WASM and the diff of the graphs before and after the batch size changed. Screenshots go to
test-output/e2e/<test>/.
"""

from __future__ import annotations

import pathlib
import shutil

import pytest

from profscope.formats.xla import metrics as xla_metrics

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "xla" / "pytorch_xla_cpu_recompile"
BUNDLE = REPO / "tb_plugin" / "profscope" / "static" / "index.js"
LOGS = ("xla_metrics_report.txt", "xla_metrics_per_step.txt", "pt_xla_debug.txt", "xla_graphs.txt.0")

pytestmark = pytest.mark.skipif(
    not BUNDLE.is_file(), reason="the frontend bundle is not built (npm --prefix frontend run build)"
)


@pytest.fixture(scope="module")
def xla_logdir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """Read-only to the tests: the module's tests share it, and so one server (see e2e/conftest.py)."""
    tmp_path = tmp_path_factory.mktemp("xla_logdir")
    run = tmp_path / "logdir" / "xla_recompile"
    run.mkdir(parents=True)
    for name in LOGS:
        shutil.copy(DATA / name, run / name)
    return tmp_path / "logdir"


def open_xla(page, server, extra: str = ""):  # type: ignore[no-untyped-def]
    page.goto(f"{server.url}/#profscope&run=xla_recompile&session=xla&host=xla&tool=xla{extra}")
    iframe = page.wait_for_selector(
        "iframe[src*='plugin_entry.html?name=profscope']", state="attached", timeout=30_000
    )
    frame = iframe.content_frame()
    frame.wait_for_selector("[data-testid=xla-view]", timeout=30_000)
    return frame


def test_findings_show_evidence_and_code_locations(
    tensorboard_server, browser_page, page_errors, screenshot, xla_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(xla_logdir)
    frame = open_xla(browser_page, server)
    recompile = frame.wait_for_selector("[data-testid=finding-recompilation]", timeout=60_000)
    fallback = frame.wait_for_selector("[data-testid=finding-cpu_fallback]")
    frame.wait_for_selector("[data-testid=step-charts] canvas[data-drawn]")
    screenshot(browser_page, "findings")

    text = recompile.inner_text()
    assert "Recompiling after warm-up" in text
    assert "5 compilations in the 7 steps after warm-up" in text
    assert "7 (1), 8 (3), 9 (1)" in text
    assert "f32[8,32]{1,0} → f32[16,32]{1,0}" in text
    locations = [e.inner_text() for e in recompile.query_selector_all("[data-testid=location]")]
    assert locations[0].startswith("<module> (/home/user/project/train.py:18)")
    assert "a tensor size changed here" in locations[0]

    text = fallback.inner_text()
    assert "aten::nonzero ran 3 times on the CPU" in text
    assert "aten::_local_scalar_dense ran 3 times on the CPU" in text
    locations = [e.inner_text() for e in fallback.query_selector_all("[data-testid=location]")]
    assert any(loc.startswith("<module> (/home/user/project/train.py:21) ×3") for loc in locations)
    assert any(loc.startswith("<module> (/home/user/project/train.py:22) ×3") for loc in locations)
    digest = frame.inner_text("[data-testid=debug-digest]")
    assert "most likely user code trying to access tensor value before torch_xla.sync" in digest
    assert frame.query_selector("[data-testid=finding-device_to_host]") is not None
    assert frame.query_selector("[data-testid=finding-dynamic_shapes]") is not None

    cards = {
        name: frame.inner_text(f"[data-testid=card-{name}]")
        for name in ("compilations", "compile-time", "from-device", "cpu-fallback", "steps")
    }
    assert "9 compiled" in cards["compilations"] and "7 served from the cache" in cards["compilations"]
    assert "5.01 s" in cards["compile-time"]
    assert "6 transfers, 52 B" in cards["from-device"]
    assert "6 calls" in cards["cpu-fallback"]
    # the compilations chart marks the 5 compilations after warm-up (steps 7, 8, 9) in red
    frame.eval_on_selector("[data-testid=finding-cpu_fallback]", "e => e.scrollIntoView()")
    screenshot(browser_page, "findings-fallback")
    frame.eval_on_selector("[data-testid=step-charts]", "e => e.scrollIntoView()")
    screenshot(browser_page, "step-charts")
    hot = frame.eval_on_selector_all(".xv-bar-hot", "els => els.map(e => e.getAttribute('data-step'))")
    assert "7" in hot and "8" in hot and "9" in hot
    # and the chart library drew them: red (#d93025) pixels on the compilations canvas
    red = frame.eval_on_selector(
        "canvas[aria-label='Compilations per step']",
        """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
                  for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - 217) < 12 && Math.abs(d[i + 1] - 48) < 12 && Math.abs(d[i + 2] - 37) < 12) n++;
                  return n; }""",
    )
    assert red > 100, red
    assert page_errors == []


def test_every_metric_with_its_unit(
    tensorboard_server, browser_page, page_errors, screenshot, xla_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(xla_logdir)
    frame = open_xla(browser_page, server, "&xtab=metrics")
    frame.wait_for_selector("[data-testid=metrics-table]", timeout=60_000)
    [report] = xla_metrics.read(str(DATA / "xla_metrics_report.txt")).reports
    for name, metric in report.metrics.items():
        row = frame.query_selector(f"[data-testid='metric-{name}']")
        assert row is not None, name
        unit = {"ns": "time", "B": "bytes", "": "number"}[metric.unit or ""]
        assert row.query_selector_all("td")[1].inner_text() == unit
    compile_row = frame.query_selector("[data-testid='metric-CompileTime']")
    cells = [c.inner_text() for c in compile_row.query_selector_all("td")]
    assert cells[2] == "9" and cells[3] == "5.009 s †" and cells[4] == "643.1 ms"
    compile_row.click()
    frame.wait_for_selector(".xv-metric-detail .xv-pct canvas[data-drawn]")
    detail = frame.inner_text(".xv-metric-detail")
    # the 1st percentile printed "149ms817.608us" is 148.817608 ms (the ms part was rounded up)
    assert "148.817608 ms" in detail and "printed 149ms817.608us" in detail
    inbound = [
        c.inner_text()
        for c in frame.query_selector("[data-testid='metric-InboundData']").query_selector_all("td")
    ]
    assert inbound[3] == "52 B"
    screenshot(browser_page, "metrics")
    frame.click("[data-testid=xla-tab-counters]")
    frame.wait_for_selector("[data-testid='counter-aten::nonzero']")
    assert frame.inner_text("[data-testid='counter-aten::nonzero']").startswith(
        "aten::nonzero\t3\tCPU fallback"
    )
    screenshot(browser_page, "counters")
    assert page_errors == []


def test_graph_drawing_and_diff(
    tensorboard_server, browser_page, page_errors, screenshot, xla_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(xla_logdir)
    frame = open_xla(browser_page, server)
    frame.wait_for_selector(
        "[data-testid=finding-recompilation] [data-testid=open-diff]", timeout=60_000
    ).click()
    verdict = frame.wait_for_selector("[data-testid=diff-verdict]", timeout=30_000).inner_text()
    assert "Same ops and wiring; 16 nodes have other tensor sizes" in verdict
    diff_text = frame.inner_text("[data-testid=diff]")
    assert "f32[8,32]{1,0}" in diff_text and "f32[16,32]{1,0}" in diff_text
    assert "<module> (train.py:18)" in diff_text
    assert frame.query_selector_all("[data-testid=diff-rows] tr.xv-changed")
    screenshot(browser_page, "diff")

    frame.click("[data-testid=xla-tab-graphs]")
    groups = frame.wait_for_selector("[data-testid=graph-group]")
    assert len(frame.query_selector_all("[data-testid=graph-group]")) == 9
    frame.query_selector_all("[data-testid=graph-group]")[2].click()
    frame.wait_for_selector("[data-testid=graph-drawing] svg g.node", timeout=60_000)
    nodes = frame.eval_on_selector_all("[data-testid=graph-drawing] svg g.node", "els => els.length")
    assert nodes == 14
    assert "aten::eq" in frame.inner_text("[data-testid=graph-drawing]")
    assert groups is not None
    screenshot(browser_page, "graph")
    assert page_errors == []
