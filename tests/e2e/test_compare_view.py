"""End to end: the Compare tab in headless Chromium against a real `tensorboard`.

The logdir holds the demo's CPU-only training loop whose input is read on the training thread
(demo/logdir/pytorch_cpu_slow_input) and its fixed twin that reads batches ahead on worker threads
(demo/logdir/pytorch_cpu_prefetch_input). The test opens Compare on the slow run, picks the fixed
twin as the base with the pickers, and reads the step-time difference with its interval, both
runs' steps on the strip chart, the figures side by side, the breakdown deltas, the ops that
changed (the single-process DataLoader added, the prefetch threads' `batch_read` removed), the CSV
and the advice; then reopens the deep link, which keeps the base; and two captures with memory events
(tests/data/memory) show each allocator's peak side by side. Expectations come from the
server's own answer. The screenshot goes to test-output/e2e/<test>/compare.png
(docs/screenshots/chromium_compare.png is a copy).
"""

from __future__ import annotations

import csv as csv_module
import io
import pathlib
import shutil
import urllib.parse

import pytest

from tests.e2e.trace_fixtures import fragment, get_json

REPO = pathlib.Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tb_plugin" / "profscope" / "static" / "index.js"
SLOW = "pytorch_cpu_slow_input"
FIXED = "pytorch_cpu_prefetch_input"
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"

pytestmark = pytest.mark.skipif(
    not BUNDLE.is_file(), reason="the frontend bundle is not built (npm --prefix frontend run build)"
)


@pytest.fixture
def compare_logdir(tmp_path: pathlib.Path) -> pathlib.Path:
    logdir = tmp_path / "logdir"
    for run in (SLOW, FIXED):
        shutil.copytree(REPO / "demo" / "logdir" / run, logdir / run)
    return logdir


def side(server, run: str, prefix: str = "") -> dict[str, str]:  # type: ignore[no-untyped-def]
    session = next(r for r in get_json(server, "runs")["runs"] if r["name"] == run)["sessions"][0]
    return {
        f"{prefix}run": run,
        f"{prefix}session": session["name"],
        f"{prefix}host": session["hosts"][0]["name"],
    }


def open_compare(page, server, query: str):  # type: ignore[no-untyped-def]
    page.goto(f"{server.url}/#profscope&{query}&tool=compare")
    iframe = page.wait_for_selector(
        "iframe[src*='plugin_entry.html?name=profscope']", state="attached", timeout=30_000
    )
    return iframe.content_frame()


def wait_compared(frame) -> None:  # type: ignore[no-untyped-def]
    frame.wait_for_selector("[data-testid=cmp-ops], [data-testid=cmp-error]", timeout=120_000)
    assert frame.query_selector("[data-testid=cmp-error]") is None, frame.inner_text(
        "[data-testid=cmp-error]"
    )
    frame.wait_for_function(
        "() => document.querySelector('[data-testid=cmp-strip-canvas]')?.dataset.drawn === '1'",
        timeout=30_000,
    )


def texts(frame, selector: str) -> list[str]:  # type: ignore[no-untyped-def]
    return frame.eval_on_selector_all(selector, "els => els.map(e => e.textContent)")


def signed_ms(ns: float) -> str:
    return f"{'+' if ns > 0 else '−'}{abs(ns) / 1e6:.3g} ms"


def test_compare_the_slow_run_with_its_fixed_twin(
    tensorboard_server, browser_page, page_errors, screenshot, compare_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(compare_logdir)
    run = side(server, SLOW)
    frame = open_compare(browser_page, server, urllib.parse.urlencode(run))

    # no base yet: the view asks for one, offering both runs
    frame.wait_for_selector("[data-testid=cmp-prompt]", timeout=60_000)
    offered = frame.eval_on_selector_all(
        "[data-testid=cmp-base-run] option:not([disabled])", "os => os.map(o => o.value)"
    )
    assert sorted(offered) == sorted([SLOW, FIXED])
    frame.select_option("[data-testid=cmp-base-run]", FIXED)
    wait_compared(frame)
    base = side(server, FIXED, "base_")
    link = fragment(browser_page)
    assert {k: link.get(k) for k in base} == base and link["tool"] == "compare"
    answer = get_json(server, "compare?" + urllib.parse.urlencode({**run, **base}))

    # the step-time difference with its spread, never one number alone
    shift = answer["shift"]
    assert shift["low_ns"] <= shift["shift_ns"] <= shift["high_ns"] and shift["low_ns"] > 0
    value = frame.inner_text("[data-testid=cmp-shift-value]")
    assert signed_ms(shift["shift_ns"]) in value
    assert f"95% interval {signed_ms(shift['low_ns'])} to {signed_ms(shift['high_ns'])}" in value
    assert frame.inner_text("[data-testid=cmp-verdict]") == shift["verdict"]
    assert "×" in frame.inner_text("[data-testid=cmp-ratio-value]")
    assert frame.query_selector("[data-testid=cmp-cautions]") is None and answer["cautions"] == []

    # every step of both runs on the chart, the figures side by side
    points = texts(frame, "[data-testid=cmp-strip-canvas] li")
    assert len(points) == len(answer["run"]["steps"]) + len(answer["base"]["steps"]) == 12
    assert sum(p.startswith("run step") for p in points) == 6
    medians = texts(frame, "[data-testid=cmp-stats] tr[data-stat=Median] td")
    assert medians[2].startswith("+")

    # the ops that changed: the DataLoader on the training thread added, batch_read removed
    host_ops = {r["name"]: r for r in answer["host_ops"]["rows"]}
    assert host_ops[LOADER]["change"] == "added" and host_ops["batch_read"]["change"] == "removed"
    rows = frame.eval_on_selector_all(
        "[data-testid=cmp-host_ops-row]",
        "rs => rs.map(r => [r.querySelector('[data-column=name]').textContent, "
        "r.querySelector('[data-column=change]').textContent])",
    )
    assert rows[0] == [LOADER, "added"] and ["batch_read", "removed"] in rows
    assert all(change != "same" for _, change in rows)
    assert len(rows) == len([r for r in answer["host_ops"]["rows"] if r["change"] != "same"])
    frame.select_option("[data-testid=cmp-host_ops] [data-testid=cmp-filter]", "removed")
    assert texts(frame, "[data-testid=cmp-host_ops-row] [data-column=name]") == [
        r["name"] for r in answer["host_ops"]["rows"] if r["change"] == "removed"
    ]
    with browser_page.expect_download() as download:
        frame.click("[data-testid=cmp-host_ops-csv]")
    assert download.value.suggested_filename == f"compare_host_ops_{SLOW}_vs_{FIXED}.csv"
    header, *csv_rows = list(
        csv_module.reader(io.StringIO(pathlib.Path(download.value.path()).read_text(), newline=""))
    )
    assert header[:3] == ["Host op", "Change", "Base self per step (ns)"]
    assert [r[:2] for r in csv_rows] == [
        [r["name"], "removed"] for r in answer["host_ops"]["rows"] if r["change"] == "removed"
    ]
    frame.select_option("[data-testid=cmp-host_ops] [data-testid=cmp-filter]", "changed")

    # the breakdown deltas: the input part grew by most of the step-time difference
    breakdown = frame.eval_on_selector_all(
        "[data-testid=cmp-breakdown-row]",
        "rs => Object.fromEntries(rs.map(r => [r.querySelector('[data-column=label]').textContent, "
        "r.querySelector('[data-column=delta]').textContent]))",
    )
    data = next(c for c in answer["categories"] if c["id"] == "input")
    assert breakdown[data["label"]] == signed_ms(data["delta_ns"])
    assert "Confirm the gain outside the profiler" in frame.inner_text("[data-testid=cmp-advice]")
    assert frame.inner_text("[data-testid=cmp-kernels-absent]") == "not observed"

    frame.evaluate("document.querySelector('.cmp-body').scrollTop = 0")
    height = 0
    for _ in range(5):  # the tables' height follows the viewport's (60vh): measure until it settles
        before, height = height, frame.evaluate("document.querySelector('.cmp-body').scrollHeight")
        if height == before:
            break
        browser_page.set_viewport_size({"width": 1400, "height": min(height + 160, 3400)})
    frame.wait_for_function(
        "() => document.querySelector('[data-testid=cmp-strip-canvas]')?.dataset.drawn === '1'",
        timeout=30_000,
    )
    screenshot(browser_page, "compare")

    # the deep link reopens the same comparison
    query = urllib.parse.urlencode({**run, **base})
    frame = open_compare(browser_page, server, query)
    wait_compared(frame)
    assert frame.eval_on_selector("[data-testid=cmp-base-run]", "s => s.value") == FIXED
    assert signed_ms(shift["shift_ns"]) in frame.inner_text("[data-testid=cmp-shift-value]")
    assert page_errors == []


def test_memory_peaks_side_by_side(
    tensorboard_server, browser_page, page_errors, screenshot, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """Two real PyTorch captures with memory events (tests/data/memory: the 16 MiB temporary of step
    3 as the base, the leak of 1 MiB a step as the run): the CPU allocator's peak on both sides with
    its delta, and the ops holding each peak, as the server's answer gives them."""
    logdir = tmp_path / "logdir"
    for run, name in (("peak", "peak_backward"), ("leak", "leak_per_step")):
        (logdir / run).mkdir(parents=True)
        shutil.copy(
            REPO / "tests" / "data" / "memory" / f"{name}.pt.trace.json.gz",
            logdir / run / "w.pt.trace.json.gz",
        )
    server = tensorboard_server(logdir)
    query = urllib.parse.urlencode({**side(server, "leak"), **side(server, "peak", "base_")})
    frame = open_compare(browser_page, server, query)
    wait_compared(frame)
    (row,) = get_json(server, f"compare?{query}")["memory"]
    cells = texts(frame, "[data-testid=cmp-memory-table] tbody tr[data-device=CPU] > *")
    assert cells[:5] == ["CPU", "16 MiB", "8.04 MiB", "−8 MiB", "−49.9%"] and row["delta_bytes"] == -8_385_556
    base_ops = texts(frame, "[data-testid=cmp-memory-ops] [data-side=base] li .cmp-memory-op")
    assert base_ops == [o["op"] for o in row["base_ops"]] and base_ops[0] == "aten::empty"
    peak = frame.inner_text("[data-testid=cmp-memory-ops] [data-side=run] .cmp-memory-peak")
    assert peak == f"Run: 8.04 MiB at its peak ({row['run_step']}, in {row['run_op']})"
    frame.eval_on_selector("[data-testid=cmp-memory]", "e => e.scrollIntoView()")
    screenshot(browser_page, "compare_memory")
    assert page_errors == []
