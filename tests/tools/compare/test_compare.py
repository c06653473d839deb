"""The `compare` route through TensorBoard's WSGI app, on the corpus's A100/V100 trace pair and the
demo's slow/fixed input pair (tests/data/overview/PROVENANCE.md): step times equal those computed
here from the source's raw `ProfilerStep#` events, the shift and its interval equal an independent
computation, ops only one run has are added / removed, and the cautions fire where they are true.
Then the estimator itself (exact Mann–Whitney distribution against enumeration, interval ranks,
coverage) and the route's parameter errors."""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import shutil
import time

import numpy as np
import pytest
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from profscope.plugin import ProfscopePlugin
from profscope.tools.compare import shift as shift_lib
from tests.support import DATA_DIR
from tests.support.overview import A100, JAX_CPU, PREFETCH, SLOW_INPUT, V100, raw_kineto, raw_xplane_labels

BASE = "/data/plugin/profscope"
RUNS = {
    "a100": (A100, "alexnet.pt.trace.json.gz"),
    "v100": (V100, "worker0.1623143089861.pt.trace.json.gz"),
    "slow": (SLOW_INPUT, "worker0.1796129356689315979.pt.trace.json.gz"),
    "fixed": (PREFETCH, "worker0.1796129359029959901.pt.trace.json.gz"),
    "read_zh": (
        DATA_DIR / "jobs/torch_input_bound_zh/worker0.1796612206510119793.pt.trace.json.gz",
        "t.pt.trace.json.gz",
    ),
    "prefetched_zh": (
        DATA_DIR / "jobs/torch_input_prefetched_zh/worker0.1796612209866544264.pt.trace.json.gz",
        "t.pt.trace.json.gz",
    ),
}


def _logdir(root):
    for run, (source, name) in RUNS.items():
        (root / run).mkdir(parents=True)
        shutil.copy(source, root / run / name)
    (root / "jax").mkdir()
    shutil.copy(JAX_CPU, root / "jax" / JAX_CPU.name)
    return root


def _client(logdir, cache) -> Client:
    context = base_plugin.TBContext(
        logdir=str(logdir), flags=argparse.Namespace(profscope_cache_dir=str(cache))
    )
    return Client(application.TensorBoardWSGI([ProfscopePlugin(context)]))


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """One server over the pairs for the whole module: each trace is read once."""
    root = tmp_path_factory.mktemp("compare")
    yield _client(_logdir(root / "logdir"), root / "cache")


def side(client, run: str, prefix: str = "") -> dict[str, str]:
    runs = client.get(f"{BASE}/runs").get_json()["runs"]
    (session,) = next(r for r in runs if r["name"] == run)["sessions"]
    (host,) = session["hosts"]
    return {f"{prefix}run": run, f"{prefix}session": session["name"], f"{prefix}host": host["name"]}


def get(client, **params):
    return client.get(f"{BASE}/compare?" + "&".join(f"{k}={v}" for k, v in params.items()))


def compare(client, run: str, base: str, timeout_s: float = 180, **extra) -> dict:
    params = {**side(client, run), **side(client, base, "base_"), **extra}
    deadline = time.monotonic() + timeout_s
    while True:
        res = get(client, **params)
        if res.status_code != 202:
            assert res.status_code == 200, res.get_data(as_text=True)
            return res.get_json()
        assert time.monotonic() < deadline
        time.sleep(0.05)


# -- independent figures from the raw JSON ------------------------------------------------------


def raw_step_walls_ns(path) -> list[float]:
    """Each `ProfilerStep#N` window in ns, from the raw events: from the marker's start to the later of
    its end and the end of the last kernel/copy/memset whose launch call (same correlation id) starts
    inside the marker, capped at the next marker's start."""
    events = raw_kineto(path)
    markers = sorted(
        (
            e
            for e in events
            if e.get("ph") == "X"
            and str(e.get("name", "")).startswith("ProfilerStep#")
            and e.get("cat") != "gpu_user_annotation"
        ),
        key=lambda e: e["ts"],
    )
    launches = {
        (e.get("args") or {}).get("correlation"): e
        for e in events
        if e.get("ph") == "X" and e.get("cat") in ("Runtime", "cuda_runtime", "cuda_driver")
    }
    device = [
        e
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") in ("Kernel", "kernel", "Memcpy", "gpu_memcpy", "Memset", "gpu_memset")
    ]
    walls = []
    for k, marker in enumerate(markers):
        start, end = marker["ts"], marker["ts"] + marker["dur"]
        reach = end
        for d in device:
            launch = launches.get((d.get("args") or {}).get("correlation"))
            if launch is not None and start <= launch["ts"] < end:
                reach = max(reach, d["ts"] + d["dur"])
        if k + 1 < len(markers):
            reach = min(reach, markers[k + 1]["ts"])
        walls.append((reach - start) * 1e3)
    return walls


def raw_names(path, categories: tuple[str, ...] | None = None) -> set[str]:
    return {
        e["name"]
        for e in raw_kineto(path)
        if e.get("ph") == "X" and (categories is None or e.get("cat") in categories)
    }


def raw_device_model(path) -> str:
    with gzip.open(path, "rt") as f:
        return json.load(f)["deviceProperties"][0]["name"]


def kinds(answer: dict) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for caution in answer["cautions"]:
        found.setdefault(caution["kind"], set()).add(caution["subject"])
    return found


def row(table: dict, name: str) -> dict:
    return next(r for r in table["rows"] if r["name"] == name)


# -- the demo's slow / fixed pair -----------------------------------------------------------------


def test_the_first_answer_is_202_for_both_traces(tmp_path) -> None:
    client = _client(_logdir(tmp_path / "logdir"), tmp_path / "cache")
    res = get(client, **side(client, "slow"), **side(client, "fixed", "base_"))
    assert res.status_code == 202
    progress = res.get_json()
    assert progress["state"] == "ingesting" and len(progress["files"]) == 2


def test_demo_pair_step_times_equal_the_raw_profiler_steps(client) -> None:
    answer = compare(client, "slow", "fixed")
    for label, path in (("run", SLOW_INPUT), ("base", PREFETCH)):
        side_answer = answer[label]
        walls = raw_step_walls_ns(path)
        assert side_answer["step_source_kind"] == "profiler_step"
        assert [s["wall_ns"] for s in side_answer["steps"]] == pytest.approx(walls, abs=1)
        assert {s["phase"] for s in side_answer["steps"]} == {"steady"}
        stats = side_answer["stats"]
        assert stats["count"] == len(walls) == 6
        assert stats["median_ns"] == pytest.approx(float(np.median(walls)), abs=1)
        assert stats["min_ns"] == pytest.approx(min(walls), abs=1)
        assert stats["max_ns"] == pytest.approx(max(walls), abs=1)
        # the whole capture of a CPU-only run: the windows are the markers themselves
        durations = sorted(
            e["dur"] * 1e3 for e in raw_kineto(path) if str(e.get("name", "")).startswith("ProfilerStep#")
        )
        assert sorted(walls) == pytest.approx(durations)


def test_demo_pair_shift_comes_with_its_interval(client) -> None:
    answer = compare(client, "slow", "fixed")
    slow, fixed = np.array(raw_step_walls_ns(SLOW_INPUT)), np.array(raw_step_walls_ns(PREFETCH))
    shift = answer["shift"]
    differences = np.sort((slow[:, None] - fixed[None, :]).ravel())
    assert shift["shift_ns"] == pytest.approx(float(np.median(differences)), abs=1)
    assert shift["median_difference_ns"] == pytest.approx(float(np.median(slow) - np.median(fixed)), abs=1)
    # 6 against 6 steps, exact: P(U ≤ 5) = 19/924 ≤ 2.5 % < P(U ≤ 6) = 30/924 (the Mann–Whitney
    # table's two-sided 5 % critical value is 5), so k = 6: [D_(6), D_(31)]
    assert shift["method"] == "exact" and shift["run_steps"] == shift["base_steps"] == 6
    assert shift["low_ns"] == pytest.approx(differences[5], abs=1)
    assert shift["high_ns"] == pytest.approx(differences[30], abs=1)
    assert shift["coverage"] == pytest.approx(1 - 2 * 19 / 924)
    assert 0 < shift["low_ns"] <= shift["shift_ns"] <= shift["high_ns"]
    ratios = np.sort((np.log(slow)[:, None] - np.log(fixed)[None, :]).ravel())
    assert shift["ratio"] == pytest.approx(math.exp(float(np.median(ratios))))
    assert shift["ratio_low"] == pytest.approx(math.exp(ratios[5]))
    assert shift["ratio_high"] == pytest.approx(math.exp(ratios[30]))
    assert (
        shift["verdict"].startswith("the run's steady steps are longer by")
        and "95% interval" in shift["verdict"]
    )
    assert "Confirm the gain outside the profiler" in answer["advice"] and "more steps" in answer["advice"]


def test_demo_pair_breakdown_and_op_deltas(client) -> None:
    answer = compare(client, "slow", "fixed")
    categories = {c["id"]: c for c in answer["categories"]}
    assert (
        "CPU-only" in categories["device_compute"]["reason"]
        and "delta_ns" not in categories["device_compute"]
    )
    data = categories["input"]
    assert data["delta_ns"] == pytest.approx(data["run_ns"] - data["base_ns"])
    assert data["delta_ns"] > 0.5 * (
        answer["run"]["stats"]["median_ns"] - answer["base"]["stats"]["median_ns"]
    )
    assert data["relative"] == pytest.approx(data["delta_ns"] / data["base_ns"])
    # ops only one run has: the single-process DataLoader in the slow run, batch_read in the fixed
    slow_only = raw_names(SLOW_INPUT) - raw_names(PREFETCH)
    fixed_only = raw_names(PREFETCH) - raw_names(SLOW_INPUT)
    loader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert loader in slow_only and "batch_read" in fixed_only
    host_ops = answer["host_ops"]
    added, removed = row(host_ops, loader), row(host_ops, "batch_read")
    assert added["change"] == "added" and added["base_calls"] == 0 and added["run_calls"] == 6
    assert removed["change"] == "removed" and removed["run_calls"] == 0 and removed["base_calls"] > 0
    assert added["delta_self_ns"] == pytest.approx(added["run_self_ns"]) and "relative" not in added
    assert {r["name"] for r in host_ops["rows"] if r["change"] == "added"} <= slow_only
    assert {r["name"] for r in host_ops["rows"] if r["change"] == "removed"} <= fixed_only
    changed = [r for r in host_ops["rows"] if r["change"] in ("faster", "slower")]
    assert changed and all(abs(r["relative"]) >= answer["same_within"] for r in changed)
    assert all((r["delta_self_ns"] < 0) == (r["change"] == "faster") for r in changed)
    deltas = [abs(r["delta_self_ns"]) for r in host_ops["rows"]]
    assert deltas == sorted(deltas, reverse=True)
    assert sum(host_ops["changes"].values()) == host_ops["total"]
    assert answer["kernels"]["rows"] == [] and "CPU-only" in answer["kernels"]["reason"]
    # the same data, model, batch and CPU: nothing to caution about
    assert answer["cautions"] == []

    swapped = compare(client, "fixed", "slow")
    assert row(swapped["host_ops"], loader)["change"] == "removed"
    assert row(swapped["host_ops"], "batch_read")["change"] == "added"
    assert swapped["shift"]["shift_ns"] == pytest.approx(-answer["shift"]["shift_ns"])
    assert swapped["shift"]["verdict"].startswith("the run's steady steps are shorter by")


def test_a_run_compared_with_itself(client) -> None:
    answer = compare(client, "slow", "slow")
    assert set(kinds(answer)) == {"same_subject"}
    assert answer["shift"]["shift_ns"] == 0 and answer["shift"]["low_ns"] < 0 < answer["shift"]["high_ns"]
    assert "cannot tell the two runs apart" in answer["shift"]["verdict"]
    assert {r["change"] for r in answer["host_ops"]["rows"]} == {"same"}


def test_phase_deltas_match_the_phases_by_name_and_order(client) -> None:
    """The input-bound job and its prefetched twin label their four phases alike (torch writes the
    non-ASCII names as `unknown`): the reading phase, first, is where the run gained."""
    answer = compare(client, "prefetched_zh", "read_zh")
    phases = answer["phases"]
    assert phases["run_source"].startswith("your labels") and phases["base_source"].startswith("your labels")
    names = [r["name"] for r in phases["rows"]]
    assert names == ["unknown", "unknown (2)", "unknown (3)", "unknown (4)", "(outside your phases)"]
    read = phases["rows"][0]
    assert read["base_share"] == pytest.approx(0.808, abs=0.02) and read["run_share"] < 0.01
    assert read["delta_ns"] == pytest.approx(read["run_ns"] - read["base_ns"]) and read["relative"] < -0.9
    assert phases["rows"][-1]["outside"]


def test_a_phase_only_one_side_has_has_no_value_on_the_other(client) -> None:
    """The demo's fixed run reads in `batch_read`; the slow base's step holds the DataLoader's own
    `enumerate(DataLoader)#…` instead; both label `train`."""
    rows = {r["name"]: r for r in compare(client, "fixed", "slow")["phases"]["rows"]}
    loader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert list(rows) == [loader, "batch_read", "train", "(outside your phases)"]
    assert "base_ns" not in rows["batch_read"] and "delta_ns" not in rows["batch_read"]
    assert "run_ns" not in rows[loader] and rows[loader]["base_share"] > 0.5
    assert "delta_ns" in rows["train"]


# -- the corpus's A100 / V100 pair ----------------------------------------------------------------


def test_a100_against_v100_cautions_on_devices_and_steps(client) -> None:
    answer = compare(client, "a100", "v100")
    found = kinds(answer)
    device = next(c["text"] for c in answer["cautions"] if c["kind"] == "device")
    assert raw_device_model(A100) in device and raw_device_model(V100) in device
    assert answer["run"]["devices"] == [raw_device_model(A100)]
    assert answer["base"]["devices"] == [raw_device_model(V100)]
    # the A100 trace holds no ProfilerStep# marker: no steps, so fewer than 5 steady steps
    assert not raw_step_walls_ns(A100)
    assert found["no_steps"] == {"run"} and found["few_steps"] == {"run"}
    assert "shift" not in answer and "run" in answer["shift_reason"]
    assert answer["run"]["steps"] == []
    # the V100 steps equal the raw markers' windows, device work included
    walls = raw_step_walls_ns(V100)
    assert [s["wall_ns"] for s in answer["base"]["steps"]] == pytest.approx(walls, abs=1)
    assert answer["base"]["stats"]["median_ns"] == pytest.approx(float(np.median(walls)), abs=1)
    assert answer["base"]["stats"]["count"] == 6
    # kernels only one GPU's run has are added / removed
    device_categories = ("Kernel", "kernel", "Memcpy", "gpu_memcpy", "Memset", "gpu_memset")
    a100_only = raw_names(A100, device_categories) - raw_names(V100, device_categories)
    v100_only = raw_names(V100, device_categories) - raw_names(A100, device_categories)
    kernels = answer["kernels"]
    added = {r["name"] for r in kernels["rows"] if r["change"] == "added"}
    removed = {r["name"] for r in kernels["rows"] if r["change"] == "removed"}
    assert added and added <= a100_only and removed and removed <= v100_only
    assert kernels["changes"]["added"] == len(a100_only) and kernels["changes"]["removed"] == len(v100_only)
    assert answer["breakdown_scope"].startswith("run: its whole capture (no steps)")

    swapped = compare(client, "v100", "a100")
    assert kinds(swapped)["few_steps"] == {"base"} and "device" in kinds(swapped)


def test_few_steady_steps_and_another_format(client) -> None:
    answer = compare(client, "jax", "v100")
    steady = answer["run"]["stats"]["count"]
    assert steady < raw_xplane_labels(JAX_CPU)["train_step"] == 5
    found = kinds(answer)
    assert found["few_steps"] == {"run"} and "format" in found and "markers" in found
    assert "few_steps" not in {c["kind"] for c in answer["cautions"] if c["subject"] == "base"}
    text = next(c["text"] for c in answer["cautions"] if c["kind"] == "few_steps")
    assert f"has {steady} steady steps, fewer than 5" in text


# -- the estimator ------------------------------------------------------------------------------


@pytest.mark.parametrize(("m", "n"), [(1, 1), (2, 3), (3, 4), (4, 4), (5, 2)])
def test_the_exact_u_distribution_equals_enumeration(m, n) -> None:
    counts = np.zeros(m * n + 1)
    for chosen in itertools.combinations(range(m + n), m):
        # the run's values are the ranks `chosen`: U counts the base values below each of them
        base = [v for v in range(m + n) if v not in chosen]
        counts[sum(1 for x in chosen for y in base if x > y)] += 1
    assert shift_lib.u_distribution(m, n) == pytest.approx(counts / math.comb(m + n, m))


def test_interval_ranks_and_coverage() -> None:
    rng = np.random.default_rng(3)
    few = shift_lib.hodges_lehmann(rng.normal(10, 1, 3), rng.normal(12, 1, 3))
    assert few.low is None and few.high is None and few.method == "exact"
    four = shift_lib.hodges_lehmann(np.arange(4.0), np.arange(4.0) + 10)
    assert (four.low, four.high) == (-13.0, -7.0) and four.coverage == pytest.approx(1 - 2 / 70)
    x, y = rng.normal(100, 5, 200), rng.normal(90, 5, 150)
    big = shift_lib.hodges_lehmann(x, y)
    assert big.method == "normal" and big.coverage == shift_lib.CONFIDENCE
    assert big.low < big.estimate < big.high and big.low < 10 < big.high
    assert shift_lib.ratio(x * 3, x).estimate == pytest.approx(3)


def test_the_interval_covers_a_known_shift_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(400):
        estimate = shift_lib.hodges_lehmann(rng.exponential(1.0, 8) + 2.0, rng.exponential(1.0, 7))
        covered += estimate.low <= 2.0 <= estimate.high
    assert 0.92 <= covered / 400 <= 0.99


# -- parameters -------------------------------------------------------------------------------------


def test_parameter_errors(client) -> None:
    run = side(client, "slow")
    res = get(client, **run)
    assert res.status_code == 400 and "base_run" in res.get_data(as_text=True)
    res = get(client, **run, base_run="nope", base_session="x", base_host="y")
    assert res.status_code == 404 and "nope" in res.get_data(as_text=True)
    base = side(client, "fixed", "base_")
    res = get(client, **run, **{**base, "base_host": f"{base['base_host']},{base['base_host']}"})
    assert res.status_code == 400 and "base_host" in res.get_data(as_text=True)
    res = get(client, **run, **{**base, "base_host": "missing"})
    assert res.status_code == 404 and "missing" in res.get_data(as_text=True)
