"""End to end: the Overview's Ranks section on the merged `ddp4_slow_rank` session (4 gloo ranks,
rank 2 sleeps 20 ms in `load_batch`: tests/data/multirank/FACTS.md), all hosts selected, in headless
Chromium against a real `tensorboard`. The straggler line and finding name rank 2, the heatmap marks
it in every step, the critical path of the step waited longest in runs through rank 2 with each
rank's wait for it, the collectives table sorts and downloads what it shows, and a row opens its
instance in the merged Trace view. Expectations come from the server's own answer. Screenshot:
test-output/e2e/<test>/ranks.png.
"""

from __future__ import annotations

import csv as csv_module
import io
import pathlib
import shutil
import urllib.parse

import pytest

from tests.e2e.test_overview_view import BUNDLE, open_overview, overview_answer, subject, texts, whole_view
from tests.e2e.trace_fixtures import fragment, get_json, parse_duration_ns

REPO = pathlib.Path(__file__).resolve().parents[2]
SLOW_RANK = REPO / "tests" / "data" / "multirank" / "ddp4_slow_rank"


pytestmark = pytest.mark.skipif(
    not BUNDLE.is_file(), reason="the frontend bundle is not built (npm --prefix frontend run build)"
)


def test_the_slow_rank_is_named_marked_and_linked(
    tensorboard_server, browser_page, page_errors, screenshot, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    logdir = tmp_path / "logdir"
    shutil.copytree(SLOW_RANK, logdir / "ddp4_slow_rank")
    server = tensorboard_server(logdir)
    query = subject(server, "ddp4_slow_rank")
    frame = open_overview(browser_page, server, query)
    answer = overview_answer(server, query)
    ranks = answer["ranks"]
    assert ranks["hosts"] == ["rank0", "rank1", "rank2", "rank3"]

    finding = next(f for f in answer["findings"] if f["kind"] == "straggler")
    assert finding["host"] == "rank2"
    assert finding["observation"] in frame.inner_text("[data-testid=ov-finding-straggler]")
    line = frame.inner_text("[data-testid=ov-straggler-line]")
    assert line.startswith("rank2 is the rank the others wait for most in 6 of 6 steady steps")
    assert "load_batch" in line

    marked = frame.eval_on_selector_all(
        "[data-testid=ov-rank-heatmap] td[data-straggler]",
        "tds => tds.map(td => [td.closest('tr').dataset.host, Number(td.dataset.step)])",
    )
    assert marked == [["rank2", s["step"]] for s in ranks["steps"]]

    rows = frame.query_selector_all("[data-testid=ov-collectives-row]")
    assert len(rows) == ranks["collectives_total"] == 6
    first = texts(frame, "[data-testid=ov-collectives-row]:first-child td")
    longest = max(ranks["collectives"], key=lambda c: max(w for w in c["wait_ns"] if w is not None))
    assert (
        first[0].startswith("c10d::allreduce_") and first[1] == str(longest["step"]) and first[4] == "rank2"
    )

    # The critical path of the steady step the others waited longest in (FACTS.md §2: step 7, where
    # ranks 0, 1, 3 wait 44.62, 27.15, 17.76 ms for rank 2): each waiting rank's path runs through rank 2.
    step = max((s for s in ranks["steps"] if s["steady"]), key=lambda s: s["waited_for_ns"])
    assert step["step"] == 7
    frame.wait_for_selector("[data-testid=ov-rank-path]", timeout=60_000)
    paths = get_json(server, f"trace/critical_path?{query}&step=7")["hosts"]
    shown = frame.eval_on_selector_all(
        "[data-testid=ov-rank-path-row]",
        "rows => rows.map(r => [r.dataset.host, r.querySelector('[data-cause=rank_wait]').textContent, r.lastElementChild.textContent])",
    )
    assert [row[0] for row in shown] == ranks["hosts"]
    assert [row[2] for row in shown] == ["rank2 → rank0", "rank2 → rank1", "rank2", "rank2 → rank3"]
    for row, path in zip(shown, paths):
        shown_ns = parse_duration_ns(row[1].split(" (")[0])
        assert shown_ns == pytest.approx(path["by_cause_ns"]["rank_wait"], rel=0.005), row
    assert [round(p["by_cause_ns"]["rank_wait"] / 1e6, 2) for p in paths] == [44.62, 27.15, 0, 17.76]

    with browser_page.expect_download() as download:
        frame.click("[data-testid=ov-collectives-csv]")
    table = list(csv_module.reader(io.StringIO(pathlib.Path(download.value.path()).read_text("utf-8"))))
    assert table[0][:6] == ["Collective", "Step", "Kind", "Size (B)", "Last arriver", "Max wait (ns)"]
    assert [r[3] for r in table[1:]] == ["104488"] * 6

    whole_view(browser_page, frame, height_cap=3000)
    frame.eval_on_selector("[data-testid=ov-ranks]", "el => el.scrollIntoView()")
    screenshot(browser_page, "ranks")

    frame.click("[data-testid=ov-collectives-row]:first-child [data-testid=ov-open-trace]")
    browser_page.wait_for_function("() => location.hash.includes('tool=trace')", timeout=30_000)
    params = fragment(browser_page)
    assert float(params["start"]) <= longest["start_ns"] and float(params["end"]) >= longest["end_ns"]
    assert urllib.parse.unquote(params["host"]).split(",") == ranks["hosts"]
    assert page_errors == []
