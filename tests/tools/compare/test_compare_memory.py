"""Memory in the `compare` route: each allocator's peak on both sides, matched by device, with its
delta and the ops holding the most at each peak, equal to each run's own Memory tab answer; on the
real PyTorch captures of tests/data/memory (the 16 MiB temporary in step 3; the leak of 1 MiB a step)
and a real trace recorded without memory events (tests/data/overview)."""

from __future__ import annotations

import shutil

import pytest

from tests.support import DATA_DIR
from tests.tools.compare.test_compare import BASE, _client, compare, side

RUNS = {
    "peak": DATA_DIR / "memory" / "peak_backward.pt.trace.json.gz",
    "leak": DATA_DIR / "memory" / "leak_per_step.pt.trace.json.gz",
    "plain": DATA_DIR / "overview" / "slow_input.pt.trace.json.gz",
}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare_memory")
    for run, source in RUNS.items():
        (root / "logdir" / run).mkdir(parents=True)
        shutil.copy(source, root / "logdir" / run / f"worker0.{source.name}")
    yield _client(root / "logdir", root / "cache")


def memory_answer(client, run: str) -> dict:
    query = "&".join(f"{k}={v}" for k, v in side(client, run).items())
    return client.get(f"{BASE}/memory?{query}").get_json()


def test_each_device_s_peak_side_by_side_with_its_delta(client) -> None:
    body = compare(client, "leak", "peak")
    (row,) = body["memory"]
    assert "memory_reason" not in body and row["device"] == "CPU"
    (base,) = memory_answer(client, "peak")["devices"]
    (run,) = memory_answer(client, "leak")["devices"]
    assert row["base_peak_bytes"] == base["peak"]["allocated_bytes"] > 16 << 20
    assert row["run_peak_bytes"] == run["peak"]["allocated_bytes"]
    assert row["delta_bytes"] == row["run_peak_bytes"] - row["base_peak_bytes"]
    assert row["relative"] == pytest.approx(row["delta_bytes"] / row["base_peak_bytes"])
    assert (
        (row["base_step"], row["base_op"])
        == (base["peak"]["step"], base["peak"]["op"])
        == ("ProfilerStep#3", "aten::div")
    )
    assert row["run_step"] == run["peak"]["step"]
    # the ops holding each peak: the Memory tab's op table's peak bytes, largest first; together at
    # most the blocks of the capture live at the peak (peak − before the capture)
    for prefix, tab in (("base", base), ("run", run)):
        ops = row[f"{prefix}_ops"]
        held = [(r["op"], r["peak_bytes"]) for r in tab["ops"] if r["peak_bytes"]]
        assert [(o["op"], o["bytes"]) for o in ops] == sorted(held, key=lambda o: (-o[1], o[0]))[:10] and ops
        assert (
            sum(o["bytes"] for o in ops)
            <= row[f"{prefix}_peak_bytes"] - row[f"{prefix}_before_capture_bytes"]
        )
        assert row[f"{prefix}_before_capture_bytes"] == tab["before_capture_bytes"]
    # a CPU allocator reserves nothing: reserved is not observed on either side, no delta
    assert "base_reserved_bytes" not in row and "reserved_delta_bytes" not in row


def test_a_side_without_memory_events_leaves_its_figures_out(client) -> None:
    body = compare(client, "plain", "peak")
    (row,) = body["memory"]
    assert row["base_peak_bytes"] > 0 and "run_peak_bytes" not in row and "delta_bytes" not in row
    assert row["run_ops"] == []
    neither = compare(client, "plain", "plain")
    assert neither["memory"] == [] and neither["memory_reason"].startswith(
        "memory not observed on either side"
    )
