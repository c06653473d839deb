"""The Trace tab in headless Firefox ESR against a real `tensorboard` serving a real H100 trace.

Firefox is driven by `frontend/scripts/firefox-e2e.mjs` (puppeteer-core over WebDriver BiDi, from the
frontend's pinned npm dependencies); this test starts the server, runs the script and checks what it
saw: boxes drawn on the canvas, W zooming in with finer tiles requested, a click filling the details
panel, search jumping to a kernel, and the help overlay. Skips without Firefox, Node or
`frontend/node_modules` (run `npm --prefix frontend ci`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import urllib.parse

import pytest
from trace_fixtures import GPU_LOGDIR, REPO, require_trace_routes

FRONTEND = REPO / "frontend"
SCRIPT = FRONTEND / "scripts" / "firefox-e2e.mjs"
SEARCH = "flash_fwd_kernel"


def _firefox() -> str:
    path = os.environ.get("PROFSCOPE_FIREFOX") or shutil.which("firefox-esr") or shutil.which("firefox") or ""
    missing = []
    if not path:
        missing.append("Firefox (apt-get install -y firefox-esr, or set PROFSCOPE_FIREFOX)")
    if not shutil.which("node"):
        missing.append("Node.js")
    if not (FRONTEND / "node_modules" / "puppeteer-core").is_dir():
        missing.append("frontend/node_modules (npm --prefix frontend ci)")
    if missing:
        pytest.skip("needs " + ", ".join(missing))
    return path


def _fragment(url: str) -> dict[str, str]:
    frag = urllib.parse.urlsplit(url).fragment
    assert frag.startswith("profscope"), url
    return dict(urllib.parse.parse_qsl(frag[len("profscope") :].lstrip("&")))


def test_trace_view_in_firefox(tensorboard_server, tmp_path) -> None:
    firefox = _firefox()
    server = tensorboard_server(GPU_LOGDIR)
    require_trace_routes(server)
    out = REPO / "test-output" / "e2e" / "firefox"
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["node", str(SCRIPT), server.url, str(out), SEARCH, firefox],
        cwd=FRONTEND,
        capture_output=True,
        text=True,
        timeout=420,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    results_path = out / "results.json"
    assert results_path.exists(), f"firefox-e2e.mjs wrote no results:\n{proc.stdout}\n{proc.stderr}"
    results = json.loads(results_path.read_text())
    assert "failure" not in results, results["failure"]
    steps = results["steps"]

    assert steps["opened"]["ink"] > 2000, steps["opened"]

    zoom = steps["zoom"]
    assert zoom["levelAfter"] < zoom["levelBefore"], zoom
    assert any(z < zoom["levelBefore"] for z in zoom["tileLevels"]), zoom
    link = _fragment(zoom["url"])
    assert float(link["end"]) - float(link["start"]) > 0

    click = steps["click"]
    assert click["name"]
    assert re.fullmatch(r"[\d.]+ (ns|µs|ms|s)|instant", click["duration"]), click
    sel = _fragment(click["url"])["sel"]
    query = f"run={link['run']}&session={link['session']}&host={link['host']}"
    status, _, body = server.get(f"/data/plugin/profscope/trace/event?{query}&id={sel}")
    assert status == 200 and json.loads(body)["name"] == click["name"]

    search = steps["search"]
    status, _, body = server.get(f"/data/plugin/profscope/trace/search?{query}&q={SEARCH}&limit=1000")
    answer = json.loads(body)
    assert search["count"].startswith(f"1 / {answer['total']}"), search
    assert SEARCH in search["name"]
    assert int(_fragment(search["url"])["sel"]) == answer["matches"][0]["id"]

    assert "W / S" in steps["help"]["text"]
    assert results["errors"] == [], results["errors"]
