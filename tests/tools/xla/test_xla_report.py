"""XLA analyses on the real PyTorch/XLA run: summary, tables, series, findings with evidence and code
locations, graph list, graph drawing and diff; synthetic logs for the findings the real run lacks."""

from __future__ import annotations

import json
import pathlib

import msgspec
import pytest
from tensorboard import errors as tb_errors

from profscope import xla_logs
from profscope.caches import SingleFlightCache
from profscope.formats.xla import metrics as xla_metrics
from profscope.tools.xla import report as xla_report
from profscope.tools.xla import series as xla_series
from profscope.xla_logs import XlaFile
from tests.support import DATA_DIR

RUN = DATA_DIR / "xla" / "pytorch_xla_cpu_recompile"
TRAIN = "/home/user/project/train.py"


# The answers as the builtins of their JSON (a NaN stays a float, so the strict-JSON check still sees it).
def build_report(files: list[XlaFile], ordinal: int | None = None) -> dict:
    return msgspec.to_builtins(xla_report.build_report(files, ordinal))


def graphs(files: list[XlaFile]) -> dict:
    return msgspec.to_builtins(xla_report.graphs(files))


def graph(files: list[XlaFile], index: int) -> dict:
    return msgspec.to_builtins(xla_report.graph(files, index))


def diff(files: list[XlaFile], a: int, b: int) -> dict:
    return msgspec.to_builtins(xla_report.diff(files, a, b))


def run_files(*names: str) -> list[XlaFile]:
    formats = {
        "xla_metrics_report.txt": "xla_metrics",
        "xla_metrics_per_step.txt": "xla_metrics",
        "pt_xla_debug.txt": "xla_debug",
        "xla_graphs.txt.0": "xla_graphs",
    }
    names = names or tuple(formats)
    return [XlaFile(str(RUN / n), formats[n], path=n) for n in names]


@pytest.fixture(scope="module")
def report() -> dict:
    return build_report(run_files())


def finding(report: dict, finding_id: str) -> dict:
    matches = [f for f in report["findings"] if f["id"] == finding_id]
    assert matches, [f["id"] for f in report["findings"]]
    return matches[0]


def test_report_is_strict_json(report: dict) -> None:
    json.dumps(report, allow_nan=False)


def test_summary_cards(report: dict) -> None:
    s = report["summary"]
    assert (s["uncached_compiles"], s["cached_compiles"], s["compilations"], s["executions"]) == (9, 7, 9, 16)
    assert s["compile_time_ns"] == pytest.approx(5_008_965_807.0)
    assert s["execute_time_ns"] == pytest.approx(33_321_060.0)
    assert s["to_device"] == {
        "metric": "TransferToDeviceTime",
        "transfers": 42,
        "time_ns": 617_605.0,
        "bytes": pytest.approx(9.57 * 1024),
    }
    assert s["from_device"] == {
        "metric": "TransferFromDeviceTime",
        "transfers": 6,
        "time_ns": 809_864.0,
        "bytes": 52.0,
    }
    assert s["cpu_fallback_calls"] == 6
    assert {f["name"] for f in s["cpu_fallback_ops"]} == {"aten::nonzero", "aten::_local_scalar_dense"}
    assert s["steps"] == 10
    assert report["snapshot"]["path"] == "xla_metrics_report.txt"


def test_tables_have_every_metric_with_unit(report: dict) -> None:
    parsed = xla_metrics.read(str(RUN / "xla_metrics_report.txt")).reports[0]
    rows = {m["name"]: m for m in report["metrics"]}
    assert set(rows) == set(parsed.metrics)
    assert rows["CompileTime"]["unit"] == "ns" and rows["InboundData"]["unit"] == "B"
    assert rows["TensorsGraphSize"]["unit"] == ""
    assert rows["CompileTime"]["corrected"]
    assert rows["CompileTime"]["percentiles"][0] == {
        "p": 1.0,
        "value": 148_817_608.0,
        "text": "149ms817.608us",
        "resolution": 1.0,
        "corrected": True,
        "unit": "ns",
    }
    assert rows["CompileTime"]["description"]
    counters = {c["name"]: c for c in report["counters"]}
    assert len(counters) == 45
    assert counters["aten::nonzero"]["category"] == "cpu_fallback"
    assert counters["xla::mm"]["category"] == "op"
    assert counters["MarkStep"]["category"] == "runtime"


def test_series_per_step(report: dict) -> None:
    series = report["series"]
    assert series["x_label"] == "step" and series["steps"] == list(range(10))
    compile_time = series["metrics"]["CompileTime"]
    assert compile_time["delta_samples"] == [1, 1, 2, 0, 0, 0, 0, 1, 3, 1]
    assert sum(compile_time["delta_accumulator"]) == pytest.approx(compile_time["accumulator"][-1])
    assert series["counters"]["aten::nonzero"]["deltas"] == [0, 0, 1, 0, 0, 1, 0, 0, 1, 0]
    assert series["counters"]["aten::nonzero"]["values"][:2] == [None, None]  # not observed yet
    assert series["resets"] == []


def test_recompilation_finding(report: dict) -> None:
    f = finding(report, "recompilation")
    assert f["severity"] == "high"
    assert f["steps"] == [7, 8, 9]
    assert "5 compilations in the 7 steps after warm-up (0.71 per step" in f["summary"]
    evidence = {e["label"]: e["value"] for e in f["evidence"]}
    assert evidence["Steps with compilations after warm-up"] == "7 (1), 8 (3), 9 (1)"
    assert "f32[8,32]{1,0} → f32[16,32]{1,0} at <module> (train.py:18)" in evidence["Step 7"]
    # the code location where the new batch size enters, resolved to the full path from the frames
    top = f["locations"][0]
    assert (top["file"], top["line"], top["role"].split(" (")[0]) == (TRAIN, 18, "a tensor size changed here")
    assert {(loc["file"], loc["line"]) for loc in f["locations"][1:]} == {
        (TRAIN, 23),
        (TRAIN, 21),
        (TRAIN, 22),
    }
    assert (10, 11) in {(d["a"], d["b"]) for d in f["diffs"]}


def test_cpu_fallback_finding(report: dict) -> None:
    f = finding(report, "cpu_fallback")
    assert f["severity"] == "high"
    labels = [e["label"] for e in f["evidence"]]
    assert "aten::nonzero ran 3 times on the CPU" in labels
    assert "aten::_local_scalar_dense ran 3 times on the CPU" in labels
    texts = " ".join(e["value"] for e in f["evidence"])
    assert "boolean-mask indexing" in texts and ".item()" in texts
    assert {(loc["file"], loc["line"], loc["count"]) for loc in f["locations"]} == {
        (TRAIN, 21, 3),
        (TRAIN, 22, 3),
    }
    assert "torch.where(mask, x, 0)" in f["fix"]


def test_transfer_finding(report: dict) -> None:
    f = finding(report, "device_to_host")
    assert f["severity"] == "high"
    assert "6 device→host transfers in 10 steps (0.60 per step" in f["summary"]
    assert f["steps"] == [2, 5, 8]
    assert {(loc["line"], loc["count"]) for loc in f["locations"]} == {(21, 3), (22, 3)}


def test_dynamic_shape_finding(report: dict) -> None:
    f = finding(report, "dynamic_shapes")
    assert f["severity"] == "high"
    values = " ".join(e["value"] for e in f["evidence"])
    assert (
        "aten::expand %6 at <module> (train.py:18): f32[8,32]{1,0} → f32[16,32]{1,0} → f32[24,32]{1,0} → f32[32,32]{1,0}"
        in values
    )
    assert (
        "aten::random %16 at <module> (train.py:18): s64[8]{0} → s64[16]{0} → s64[24]{0} → s64[32]{0}"
        in values
    )
    assert (f["locations"][0]["file"], f["locations"][0]["line"]) == (TRAIN, 18)


def test_no_growth_or_long_compile_here(report: dict) -> None:
    ids = [f["id"] for f in report["findings"]]
    assert "growing_graph" not in ids and "long_compile" not in ids
    assert ids[-1] == "compile_share"  # info last


def test_only_the_final_report() -> None:
    """A job that saved one report at the end: findings from the counters alone, warm-up unknown."""
    out = build_report(run_files("xla_metrics_report.txt"))
    ids = {f["id"] for f in out["findings"]}
    assert {"cpu_fallback", "device_to_host"} <= ids
    # 9 compilations in 10 steps is not judged without a series: torch_xla's own tool needs > 10 steps
    assert "recompilation" not in ids
    assert out["series"] is None and out["graphs"] is None and out["debug"] is None
    assert finding(out, "cpu_fallback")["locations"] == []


def test_debug_log_alone_still_finds_recompilation() -> None:
    out = build_report(run_files("pt_xla_debug.txt"))
    f = finding(out, "recompilation")
    assert f["steps"] == [7, 8, 9]
    assert "Compilation Analysis blocks" in {e["label"]: e["value"] for e in f["evidence"]}["Counted from"]
    assert out["debug"]["executions"] == 16
    assert {c["cause"] for c in out["debug"]["causes"]} == {
        "user torch_xla.sync",
        "most likely user code trying to access tensor value before torch_xla.sync",
    }


def test_graph_list_groups_by_hash() -> None:
    out = graphs(run_files())
    assert len(out["records"]) == 16
    groups = {g["graph_hash"]: g for g in out["groups"]}
    main = groups["c8ed66150ca9e1dd1380f04a29158ff0"]
    assert main["count"] == 6 and main["steps"] == [1, 2, 3, 4, 5, 6]
    assert main["compile"]["cause"] == "user torch_xla.sync"
    assert main["compile"]["num_inputs"] == 20
    assert main["user_frame"]["line"] == 23
    assert main["frames"][0]["count"] == 6
    assert len(out["groups"]) == 9


def test_one_graph_text_and_dot() -> None:
    g = graph(run_files(), 2)
    assert g["graph_hash"] == "624acb9311c93ea4a804a103090897d2"
    assert g["text"].startswith("IR {")
    assert g["dot"].startswith("digraph G {") and g["dot"].count("->") == 13
    assert 'n13 [label="aten::eq\\npred[8]{0}\\n<module> (train.py:21)"];' in g["dot"]
    assert {"op": "prim::Constant", "count": 6} in g["ops"]
    with pytest.raises(tb_errors.InvalidArgumentError, match="out of range: this host has 16 graphs"):
        graph(run_files(), 16)
    with pytest.raises(tb_errors.NotFoundError):
        graph(run_files("xla_metrics_report.txt"), 0)


def test_diff_of_two_graphs() -> None:
    d = diff(run_files(), 10, 11)
    assert d["a"]["step"] == 6 and d["b"]["step"] == 7
    assert d["same_structure"] and len(d["shape_changes"]) == 16
    assert [o["op"] for o in d["origins"]] == ["aten::expand", "aten::expand", "aten::random"]
    assert d["origin_locations"] == [{"label": "<module> (train.py:18)", "count": 3}]
    assert d["attr_changes"] == []  # `scope=` counters are not reported as changes
    assert d["rows"][0]["kind"] in {"equal", "changed", "same"}


def test_growing_graph_and_long_compile_synthetic() -> None:
    records = []
    for step in range(6):
        nodes = "".join(f"  %{i + 1} = f32[4] aten::add(%{i}, %0)\n" for i in range(3 + step))
        records.append(
            "[ScheduleSyncTensorsGraph]\nTensorsGraphInfo:\n"
            "  sync (/venv/lib/python3.11/site-packages/torch_xla/torch_xla.py:87)\n  <module> (/src/loop.py:9)\n\n"
            f"Root Hashes: ({step:x})\n\n## BEGIN_GRAPH\nIR {{\n  %0 = f32[4] xla::device_data()\n{nodes}}}\n\n"
            f"Graph Hash: {step + 10:x}\n\n## END_GRAPH\n\n"
        )
    graphs = XlaFile("mem/g.txt.0", "xla_graphs", text="".join(records))
    metrics = XlaFile(
        "mem/m.txt",
        "xla_metrics",
        text="Metric: CompileTime\n  TotalSamples: 6\n  Accumulator: 05m00s000ms000.000us\n"
        # 70 s and 100 s as the runtime prints them (100 s: "02m" rounded, 40 s left)
        "  Percentiles: 50%=01m10s000ms000.000us; 99%=02m40s000ms000.000us\nCounter: MarkStep\n  Value: 6\n",
    )
    out = build_report([graphs, metrics])
    growth = finding(out, "growing_graph")
    assert growth["evidence"][0]["value"].startswith("4 → 5 → 6 → 7 → 8 → 9 nodes")
    assert (growth["locations"][0]["file"], growth["locations"][0]["line"]) == ("/src/loop.py", 9)
    long = finding(out, "long_compile")
    assert "took 1.67 min" in long["summary"]
    assert "dynamic_shapes" not in {f["id"] for f in out["findings"]}


def test_profiler_messages_alone() -> None:
    debug = XlaFile(
        "d.log",
        "xla_debug",
        text="pt-xla-profiler: CompileTime too frequent: 21 counts during 11 steps\n"
        "pt-xla-profiler: TransferFromDeviceTime too frequent: 11 counts during 11 steps\n"
        "pt-xla-profiler: Op(s) not lowered: aten::_ctc_loss,  Please open a GitHub issue with the above op lowering requests.\n",
    )
    out = build_report([debug])
    ids = {f["id"]: f for f in out["findings"]}
    assert ids["recompilation"]["summary"].startswith(
        "PyTorch/XLA's debug tool reports: CompileTime too frequent"
    )
    assert ids["device_to_host"]["severity"] == "high"
    assert "aten::_ctc_loss" in ids["cpu_fallback"]["summary"] and ids["cpu_fallback"]["severity"] == "high"
    assert out["debug"]["messages"][0]["count"] == 1


def test_unreadable_files_are_reported_not_fatal(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "broken.txt"
    bad.write_text("no report here\n")
    out = build_report(
        [*run_files("xla_metrics_report.txt"), XlaFile(str(bad), "xla_metrics", path="broken.txt")]
    )
    assert out["errors"] == [
        {
            "path": "broken.txt",
            "format": "xla_metrics",
            "error": "no PyTorch/XLA metrics report (no `Metric:` or `Counter:` blocks) found",
        }
    ]
    with pytest.raises(tb_errors.NotFoundError, match="broken.txt"):
        build_report([XlaFile(str(bad), "xla_metrics", path="broken.txt")])
    with pytest.raises(tb_errors.NotFoundError):
        build_report([])


def test_ordinals_and_host_family(memory_fs) -> None:  # type: ignore[no-untyped-def]
    text = (RUN / "xla_metrics_report.txt").read_text()
    memory_fs.pipe_file("/run/w.xla_metrics.txt.0", text.encode())
    memory_fs.pipe_file("/run/w.xla_metrics.txt.1", text.replace("Value: 10\n", "Value: 11\n", 1).encode())
    files = [XlaFile(f"/run/w.xla_metrics.txt.{i}", "xla_metrics", fs=memory_fs) for i in (0, 1)]
    assert build_report(files)["ordinals"] == [0, 1]
    assert build_report(files, ordinal=1)["ordinal"] == 1
    hosts = {
        "train": [None],
        "train.1": [1],
        "train.2": [2],
        "trainer": [None],
        "10.0.0.5": [None],
        "10.0.0": [None],
    }
    assert xla_logs.host_family(hosts, "train.1") == ["train", "train.1", "train.2"]
    assert xla_logs.host_family(hosts, "train") == ["train", "train.1", "train.2"]
    assert xla_logs.host_family(hosts, "10.0.0.5") == ["10.0.0.5"]  # a dotted host name, not an ordinal


def test_parse_cache_reuses_and_refreshes(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "m.txt"
    path.write_text("Counter: MarkStep\n  Value: 1\n")
    file = XlaFile(str(path), "xla_metrics")
    parsed = SingleFlightCache(4)
    ((_, first),) = xla_logs.load([file], parsed=parsed).metrics
    assert xla_logs.load([file], parsed=parsed).metrics[0][1] is first
    assert xla_logs.load([file]).metrics[0][1] is not first  # no cache given: read again
    path.write_text("Counter: MarkStep\n  Value: 1\n[MetricsData; step=2]\nCounter: MarkStep\n  Value: 2\n")
    assert len(xla_logs.load([file], parsed=parsed).metrics[0][1].reports) == 2


def test_series_deltas_handle_resets() -> None:
    assert xla_series.deltas([None, 2, 5, 1, 4]) == [0, 2, 3, 1, 3]


def test_long_runs_list_ten_late_compilations_and_count_the_rest() -> None:
    text = (RUN / "pt_xla_debug.txt").read_text() * 5  # five runs of the same loop, one after another
    out = build_report([XlaFile("long.xla_debug.txt", "xla_debug", text=text)])
    f = finding(out, "recompilation")
    steps = [e for e in f["evidence"] if e["label"].startswith("Step ")]
    assert len(steps) == 10
    assert {
        "label": "Not listed",
        "value": "31 more compilations after warm-up (9 distinct graphs in all); the Graphs tab lists every graph",
    } in f["evidence"]
    assert sum(loc["count"] for loc in f["locations"]) == 41


def test_x10_graph_change_log_feeds_the_dynamic_shape_finding() -> None:
    x10 = RUN.parent / "x10_graph_changes.txt"  # hand-written, X10's format
    out = build_report([XlaFile(str(x10), "xla_graphs")])
    f = finding(out, "dynamic_shapes")
    evidence = {e["label"]: e["value"] for e in f["evidence"]}
    assert (
        evidence["Graph change logged at record 1"]
        == "%0 = xla::device_data(), device=CPU:0: f32[8,4] → f32[6,4]"
    )
    assert evidence["Graph from $s6Models5train4stepyyF"].startswith("2 size variants")
    roles = {(loc["function"], loc["role"]) for loc in f["locations"]}
    assert ("$s6Models10DataLoader4nextyyF", "built the node whose shape changed") in roles
    assert ("$s6Models5train4stepyyF", "triggered the graph") in roles
