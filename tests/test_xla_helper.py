"""`profscope.xla`: environment for the runtime's own logs and `log_metrics` snapshots.

torch_xla is not installed in the test environment: `log_metrics` is run against a stand-in module
whose `metrics_report()` returns a real PyTorch/XLA report, and what it writes is read back by the parser.
"""

from __future__ import annotations

import pathlib
import sys
import types

import msgspec
import pytest

from profscope import xla
from profscope.formats import detect
from profscope.formats.xla import metrics as xla_metrics
from profscope.tools.xla import report as xla_report
from profscope.xla_logs import XlaFile
from tests.support import DATA_DIR

REPORT = (DATA_DIR / "xla" / "pytorch_xla_cpu_recompile" / "xla_metrics_report.txt").read_text()


@pytest.fixture
def fake_torch_xla(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    state = types.SimpleNamespace(world_size=1, ordinal=0, calls=[])
    package = types.ModuleType("torch_xla")
    debug = types.ModuleType("torch_xla.debug")
    metrics = types.ModuleType("torch_xla.debug.metrics")
    runtime = types.ModuleType("torch_xla.runtime")

    def metrics_report() -> str:
        state.calls.append("full")
        return REPORT

    def short_metrics_report() -> str:
        state.calls.append("short")
        return REPORT.split("Counter:")[0]

    metrics.metrics_report = metrics_report  # type: ignore[attr-defined]
    metrics.short_metrics_report = short_metrics_report  # type: ignore[attr-defined]
    runtime.world_size = lambda: state.world_size  # type: ignore[attr-defined]
    runtime.global_ordinal = lambda: state.ordinal  # type: ignore[attr-defined]
    package.debug = debug  # type: ignore[attr-defined]
    debug.metrics = metrics  # type: ignore[attr-defined]
    for module in (package, debug, metrics, runtime):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    return state


def test_log_metrics_writes_a_per_step_series(
    tmp_path: pathlib.Path, fake_torch_xla: types.SimpleNamespace
) -> None:
    run = tmp_path / "run"
    paths = {xla.log_metrics(str(run), step) for step in range(3)}
    assert paths == {f"{run}/xla.xla_metrics.txt"}
    parsed = xla_metrics.read(f"{run}/xla.xla_metrics.txt")
    assert [r.step for r in parsed.reports] == [0, 1, 2]
    assert parsed.reports[-1].counters["aten::nonzero"].value == 3
    # discovery recognises the file by name and content
    name_match = detect.match_name("xla.xla_metrics.txt", in_session=False)
    assert name_match is not None and name_match.format == detect.XLA_METRICS
    head = (run / "xla.xla_metrics.txt").read_bytes()[:4096]
    assert detect.sniff("xla.xla_metrics.txt", head, name_match).format == detect.XLA_METRICS
    report = msgspec.to_builtins(
        xla_report.build_report([XlaFile(f"{run}/xla.xla_metrics.txt", "xla_metrics")])
    )
    series = report["series"]
    assert series["steps"] == [0, 1, 2]


def test_log_metrics_per_process_file_and_short_report(
    tmp_path: pathlib.Path, fake_torch_xla: types.SimpleNamespace
) -> None:
    fake_torch_xla.world_size, fake_torch_xla.ordinal = 4, 3
    path = xla.log_metrics(str(tmp_path), name="worker", short=True)
    assert path == f"{tmp_path}/worker.xla_metrics.txt.3"
    assert fake_torch_xla.calls == ["short"]
    [report] = xla_metrics.read(path).reports
    assert report.step is None and "DeviceLockWait" in report.metrics and not report.counters


def test_log_metrics_to_an_object_store(memory_fs, fake_torch_xla: types.SimpleNamespace) -> None:  # type: ignore[no-untyped-def]
    xla.log_metrics("memory://bucket/run", 0)
    xla.log_metrics("memory://bucket/run", 1)
    parsed = xla_metrics.read("/bucket/run/xla.xla_metrics.txt", memory_fs)
    assert [r.step for r in parsed.reports] == [0, 1]


def test_log_metrics_rejects_negative_step(
    tmp_path: pathlib.Path, fake_torch_xla: types.SimpleNamespace
) -> None:
    with pytest.raises(ValueError, match="step must be >= 0"):
        xla.log_metrics(str(tmp_path), -1)


def test_log_metrics_without_torch_xla(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setitem(sys.modules, "torch_xla", None)
    with pytest.raises(ImportError, match="needs torch_xla"):
        xla.log_metrics(str(tmp_path), 0)


def test_env_names_files_by_the_convention(tmp_path: pathlib.Path) -> None:
    env = xla.xla_env(str(tmp_path), name="train", graph_format="hlo")
    assert env == {
        "XLA_METRICS_FILE": f"{tmp_path}/train.xla_metrics.txt",
        "XLA_SAVE_TENSORS_FILE": f"{tmp_path}/train.xla_graphs.txt",
        "XLA_SAVE_TENSORS_FMT": "hlo",
        "XLA_IR_DEBUG": "1",
        "XLA_HLO_DEBUG": "1",
        "PT_XLA_DEBUG_LEVEL": "2",
        "PT_XLA_DEBUG_FILE": f"{tmp_path}/train.xla_debug.txt",
    }
    for variable in ("XLA_METRICS_FILE", "XLA_SAVE_TENSORS_FILE", "PT_XLA_DEBUG_FILE"):
        file_name = pathlib.Path(env[variable]).name
        match = detect.match_name(
            file_name + (".0" if variable == "XLA_SAVE_TENSORS_FILE" else ""), in_session=False
        )
        assert match is not None and match.format is not None and match.host == "train"
    assert xla.xla_env(str(tmp_path), graphs=False, debug_level=0, ir_debug=False) == {
        "XLA_METRICS_FILE": f"{tmp_path}/xla.xla_metrics.txt"
    }
    with pytest.raises(ValueError, match="local file I/O"):
        xla.xla_env("gs://bucket/run")
    with pytest.raises(ValueError, match="graph_format"):
        xla.xla_env(str(tmp_path), graph_format="svg")
