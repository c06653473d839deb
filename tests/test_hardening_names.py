"""File and folder names that are not UTF-8 (issue 41): such a name made `/runs` answer 500 (the JSON
encoder refuses the lone surrogates Python holds the bytes as), so the tab listed no run at all.

Now the names are listed escaped (`bad_\\xff`), every route takes the escaped name back, and
`profscope ls` prints them. Real traces under names written as bytes (Linux takes any byte but `/`).
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import shutil
import time

import pytest

from profscope import cli
from tests.support import DATA_DIR

BASE = "/data/plugin/profscope"
BERT = DATA_DIR / "trace" / "logdir" / "bert" / "bert_small.pt.trace.json.gz"
XPLANE = DATA_DIR / "layouts" / "logdir" / "xplane" / "mi300_jax_conv" / "plugins" / "profile" / "session1"
XPLANE_FILE = XPLANE / "tw003.xplane.pb"


def _bytes_path(folder: pathlib.Path, *names: bytes) -> bytes:
    return os.path.join(os.fsencode(folder), *names)


def _copy(source: pathlib.Path, target: bytes) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(os.fsencode(source), target)


@pytest.fixture
def odd_names(tmp_path: pathlib.Path) -> pathlib.Path:
    """A run folder `bad_\\xff`, a session folder `s\\xfe` and a PyTorch host file `r\\xc3(nk`, each
    holding a real trace, next to a run whose names are fine."""
    logdir = tmp_path / "logdir"
    try:
        _copy(BERT, _bytes_path(logdir, b"bad_\xff", b"bert_small.pt.trace.json.gz"))
    except OSError:
        pytest.skip("this filesystem refuses names that are not UTF-8")
    _copy(XPLANE_FILE, _bytes_path(logdir, b"xp", b"plugins", b"profile", b"s\xfe", b"tw003.xplane.pb"))
    _copy(BERT, _bytes_path(logdir, b"ranks", b"r\xc3(nk.pt.trace.json.gz"))
    _copy(BERT, _bytes_path(logdir, b"fine", b"bert_small.pt.trace.json.gz"))
    return logdir


def _answered(client, route: str, query: dict[str, str]):
    """The route's answer once the ingest it started is done (202 while it runs)."""
    deadline = time.monotonic() + 120
    while True:
        response = client.get(f"{BASE}/{route}", query_string=query)
        if response.status_code != 202 or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


def test_runs_lists_names_that_are_not_utf8_escaped(plugin_client, odd_names: pathlib.Path) -> None:
    _, client = plugin_client(odd_names)
    response = client.get(f"{BASE}/runs")
    assert response.status_code == 200, response.get_data()
    listing = response.get_json()
    tree = {
        run["name"]: {s["name"]: [h["name"] for h in s["hosts"]] for s in run["sessions"]}
        for run in listing["runs"]
    }
    assert tree == {
        "bad_\\xff": {"pytorch": ["bert_small"]},
        "fine": {"pytorch": ["bert_small"]},
        "ranks": {"pytorch": ["r\\xc3(nk"]},
        "xp": {"s\\xfe": ["tw003"]},
    }
    ranks = next(r for r in listing["runs"] if r["name"] == "ranks")
    (file,) = ranks["sessions"][0]["hosts"][0]["files"]
    assert file["path"] == "ranks/r\\xc3(nk.pt.trace.json.gz" and "error" not in file


@pytest.mark.parametrize(
    ("run", "session", "host"),
    [
        ("bad_\\xff", "pytorch", "bert_small"),  # a run folder
        ("xp", "s\\xfe", "tw003"),  # a session folder
        ("ranks", "pytorch", "r\\xc3(nk"),  # a host file
    ],
)
def test_every_route_takes_the_escaped_name_back(
    plugin_client, odd_names: pathlib.Path, run: str, session: str, host: str
) -> None:
    _, client = plugin_client(odd_names)
    query = {"run": run, "session": session, "host": host}
    meta = _answered(client, "trace/meta", query)
    assert meta.status_code == 200, meta.get_data()
    assert meta.get_json()["num_events"] > 0
    for route in ("overview", "trace/search", "roofline"):
        response = _answered(client, route, {**query, "q": "a"})
        assert response.status_code == 200, (route, response.get_data())


def test_ls_prints_names_that_are_not_utf8(odd_names: pathlib.Path) -> None:
    out = io.StringIO()
    assert cli.main(["ls", str(odd_names)], out) == 0
    printed = out.getvalue()
    printed.encode("utf-8")  # a terminal or pipe in UTF-8 takes every line
    for name in ("bad_\\xff", "s\\xfe", "r\\xc3(nk"):
        assert name in printed


def test_a_logdir_whose_own_path_is_not_utf8(plugin_client, tmp_path: pathlib.Path) -> None:
    logdir = _bytes_path(tmp_path, b"log\xff")
    _copy(BERT, os.path.join(logdir, b"run", b"bert_small.pt.trace.json.gz"))
    _, client = plugin_client(os.fsdecode(logdir))
    listing = client.get(f"{BASE}/runs").get_json()
    assert listing["logdir"].endswith("/log\\xff") and [r["name"] for r in listing["runs"]] == ["run"]
    meta = _answered(client, "trace/meta", {"run": "run", "session": "pytorch", "host": "bert_small"})
    assert meta.status_code == 200, meta.get_data()
    missing = client.get(f"{BASE}/trace/meta", query_string={"run": "nope", "session": "s", "host": "h"})
    assert missing.status_code == 404 and "log\\xff" in missing.get_data(as_text=True)
    out = io.StringIO()
    assert cli.main(["ls", os.fsdecode(logdir)], out) == 0
    out.getvalue().encode("utf-8")


def test_a_roofline_override_in_a_run_folder_whose_name_is_not_utf8_is_read(
    plugin_client, odd_names: pathlib.Path
) -> None:
    override = _bytes_path(odd_names, b"bad_\xff", b"roofline.json")
    with open(override, "w", encoding="utf-8") as f:
        json.dump({"name": "ODD", "flops": {"bf16": 1e15}}, f)
    _, client = plugin_client(odd_names)
    response = _answered(client, "roofline", {"run": "bad_\\xff", "session": "pytorch", "host": "bert_small"})
    assert response.status_code == 200, response.get_data()
    assert response.get_json()["device"]["name"] == "ODD"
