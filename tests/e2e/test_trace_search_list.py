"""The Trace tab's search end to end on the real H100 trace served by a real `tensorboard`: the match
count while typing (one search for a word typed at speed), the list of matches (sorted, clicked, walked
with the arrow keys), a regular expression and an argument filter, each checked against the server's
own `trace/search`; in Chromium, and the count and list in Firefox (scripts/firefox-search-list.mjs).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import urllib.parse

import pytest

from tests.e2e.trace_fixtures import (
    FLASH_KERNEL,
    GPU_LOGDIR,
    REPO,
    fragment,
    get_json,
    open_gpu_trace,
    parse_duration_ns,
    requires_bundle,
    subject_query,
    wait_link,
)

pytestmark = requires_bundle

# JS: the listed matches as [index, id, name (full), duration text].
_LIST_ROWS_JS = """
() => Array.from(document.querySelectorAll('[data-testid=search-results] tbody tr'))
  .map(tr => [Number(tr.dataset.index), Number(tr.dataset.id), tr.cells[0].title, tr.cells[3].textContent])
"""


def _count(frame) -> str:
    return frame.inner_text("[data-testid=search-count]").strip()


def _wait_count(frame, pattern: str) -> str:
    frame.wait_for_function(
        "p => new RegExp(p).test(document.querySelector('[data-testid=search-count]').textContent)",
        arg=pattern,
        timeout=30_000,
    )
    return _count(frame)


def test_count_while_typing_and_the_list_of_matches(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot
) -> None:
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    server, frame, requests = open_gpu_trace(tensorboard_server, page, open_profscope)
    query = subject_query(fragment(page))
    answer = get_json(server, f"trace/search?{query}&q=flash_fwd&limit=1000")

    # Typed at speed: one search, once typing pauses, and its count.
    before = len(requests)
    frame.click("[data-testid=search-input]")
    page.keyboard.type("flash_fwd", delay=40)
    text = _wait_count(frame, "match")
    searches = [u for u in requests[before:] if "/trace/search?" in u]
    assert text == f"{answer['total']:,} matches", text
    assert len(searches) == 1, searches
    assert urllib.parse.parse_qs(urllib.parse.urlparse(searches[0]).query)["q"] == ["flash_fwd"]

    # The list: the first page of matches in time order, sortable, a row goes to its match.
    frame.click("[data-testid=search-list-toggle]")
    rows = frame.evaluate(_LIST_ROWS_JS)
    assert [r[1] for r in rows] == [m["id"] for m in answer["matches"]]
    frame.click("[data-testid=search-results] th[data-sort=duration]")
    durations = [parse_duration_ns(r[3]) for r in frame.evaluate(_LIST_ROWS_JS)]
    assert durations == sorted(durations, reverse=True) and durations[0] > durations[-1]
    longest = max(answer["matches"], key=lambda m: m["dur_ns"])
    frame.click("[data-testid=search-results] tbody tr >> nth=0")
    frame.wait_for_function(
        "id => document.querySelector('[data-testid=details-id]')?.textContent === String(id)",
        arg=longest["id"],
        timeout=30_000,
    )
    wait_link(frame, f"sel={longest['id']}")
    index = answer["matches"].index(longest)
    assert _count(frame) == f"{index + 1} / {answer['total']:,}"
    assert frame.get_attribute("[data-testid=search-results] tr.current", "data-id") == str(longest["id"])

    # ↓ in the box walks on in time order.
    frame.focus("[data-testid=search-input]")
    page.keyboard.press("ArrowDown")
    after = answer["matches"][index + 1]
    frame.wait_for_function(
        "id => document.querySelector('[data-testid=details-id]')?.textContent === String(id)",
        arg=after["id"],
        timeout=30_000,
    )
    assert _count(frame) == f"{index + 2} / {answer['total']:,}"
    screenshot(page, "chromium_search_list")
    assert page_errors == []


def test_regex_and_argument_filters(tensorboard_server, browser_page, page_errors, open_profscope) -> None:
    page = browser_page
    server, frame, _ = open_gpu_trace(tensorboard_server, page, open_profscope)
    query = subject_query(fragment(page))

    # A regular expression over names: the kernels (template names), not what names them in an argument.
    pattern = f"{FLASH_KERNEL}<.*>"
    exact = get_json(server, f"trace/search?{query}&q={urllib.parse.quote(pattern)}&regex=1&limit=1")
    plain = get_json(server, f"trace/search?{query}&q={FLASH_KERNEL}&limit=1")
    assert 0 < exact["total"] <= plain["total"]
    frame.click("[data-testid=search-regex]")
    frame.fill("[data-testid=search-input]", pattern)
    assert _wait_count(frame, f"^{exact['total']:,} matches$") == f"{exact['total']:,} matches"

    # An argument filter: the one launch of a kernel, by its correlation id.
    launch = get_json(server, f"trace/search?{query}&q=cudaLaunchKernel&limit=1")["matches"][0]
    correlation = get_json(server, f"trace/event?{query}&id={launch['id']}")["args"]["correlation"]
    frame.click("[data-testid=search-regex]")
    frame.fill("[data-testid=search-input]", f"cudaLaunchKernel correlation:{correlation}")
    assert _wait_count(frame, "^1 match$") == "1 match"
    frame.press("[data-testid=search-input]", "Enter")
    frame.wait_for_function(
        "id => document.querySelector('[data-testid=details-id]')?.textContent === String(id)",
        arg=launch["id"],
        timeout=30_000,
    )
    assert page_errors == []


def test_search_list_in_firefox(tensorboard_server, tmp_path) -> None:
    """The count while typing and the list of matches in headless Firefox."""
    firefox = os.environ.get("PROFSCOPE_FIREFOX") or "/usr/bin/firefox-esr"
    if not pathlib.Path(firefox).exists():
        pytest.skip("Firefox is not installed (apt-get install -y firefox-esr, or set PROFSCOPE_FIREFOX)")
    server = tensorboard_server(GPU_LOGDIR)
    out = REPO / "test-output" / "e2e" / "firefox_search_list"
    out.mkdir(parents=True, exist_ok=True)
    home = tmp_path / "home"
    home.mkdir()
    script = REPO / "frontend" / "scripts" / "firefox-search-list.mjs"
    proc = subprocess.run(
        ["node", str(script), server.url, str(out), "flash_fwd", firefox],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HOME": str(home)},
        cwd=REPO / "frontend",
    )
    results_path = out / "results.json"
    assert results_path.exists(), f"firefox-search-list.mjs wrote no results:\n{proc.stdout}\n{proc.stderr}"
    results = json.loads(results_path.read_text())
    assert "failure" not in results, results["failure"]
    assert results["errors"] == [], results["errors"]
    steps = results["steps"]
    link = urllib.parse.parse_qs(urllib.parse.urlparse(steps["url"]).fragment)
    query = urllib.parse.urlencode({k: link[k][0] for k in ("run", "session", "host")})
    answer = get_json(server, f"trace/search?{query}&q=flash_fwd&limit=1000")
    assert steps["count"] == f"{answer['total']:,} matches"
    assert steps["searches"] == ["flash_fwd"]
    assert steps["listed"] == [m["id"] for m in answer["matches"]]
    assert steps["picked"] == str(answer["matches"][2]["id"])
