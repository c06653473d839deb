"""`trace/critical_path` over HTTP on the merged `ddp4_slow_rank` session (tests/data/multirank):
with every rank selected the paths are joined through the all-reduce (`analysis/rank_path.py`), with
one rank alone the single-host path stays what it was (no wait for another rank in it)."""

from __future__ import annotations

import json
import shutil
import time
import urllib.parse

import pytest

from tests.support import DATA_DIR

SLOW_RANK = DATA_DIR / "multirank" / "ddp4_slow_rank"
BASE = "/data/plugin/profscope"
# FACTS.md §2: waits (ms) in step #4's all-reduce, ranks 0–3.
STEP_4_WAITS_MS = [23.15, 21.38, 0, 19.83]


def _get(client, route: str) -> dict:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 120
    while True:
        res = client.get(f"{BASE}/{route}")
        if res.status_code != 202 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert res.status_code == 200, (route, res.status_code, res.get_data()[:300])
    return json.loads(res.get_data())


def test_the_merged_ranks_cross_into_rank_2_and_one_rank_stays_alone(plugin_client, tmp_path) -> None:  # type: ignore[no-untyped-def]
    shutil.copytree(SLOW_RANK, tmp_path / "logdir" / "ddp")
    _, client = plugin_client(tmp_path / "logdir")
    (session,) = _get(client, "runs")["runs"][0]["sessions"]
    hosts = [h["name"] for h in session["hosts"]]
    query = urllib.parse.urlencode({"run": "ddp", "session": session["name"], "host": ",".join(hosts)})

    answer = _get(client, f"trace/critical_path?{query}&step=4")["hosts"]
    assert [h["host"] for h in answer] == ["rank0", "rank1", "rank2", "rank3"]
    assert [h["step"] for h in answer] == [4] * 4
    assert [h["by_cause_ns"]["rank_wait"] / 1e6 for h in answer] == pytest.approx(STEP_4_WAITS_MS, abs=0.01)
    for h in answer:
        assert sum(h["by_cause_ns"].values()) == pytest.approx(h["end_ns"] - h["start_ns"], abs=0.01)
        assert h["total_ns"] == pytest.approx(
            h["end_ns"] - h["start_ns"] - h["by_cause_ns"]["idle"], abs=0.01
        )
    crossing = [
        (e["src"] >> 32, e["dst"] >> 32, e["kind"])
        for h in answer
        for e in h["edges"]
        if e["src"] >> 32 != e["dst"] >> 32
    ]
    assert crossing == [(2, 0, "rank"), (2, 1, "rank"), (2, 3, "rank")]
    # Every edge end is where the merged timeline draws it: on a track of its own host.
    meta = _get(client, f"trace/meta?{query}")
    track_host = {t["id"]: t["host"] for t in meta["tracks"]}
    for h in answer:
        for e in h["edges"]:
            assert (
                track_host[e["src_track"]] == e["src"] >> 32 and track_host[e["dst_track"]] == e["dst"] >> 32
            )

    alone = urllib.parse.urlencode({"run": "ddp", "session": session["name"], "host": "rank0"})
    (rank0,) = _get(client, f"trace/critical_path?{alone}&step=4")["hosts"]
    assert "rank_wait" not in rank0["by_cause_ns"]
    assert {e["src"] >> 32 for e in rank0["edges"]} == {0}
