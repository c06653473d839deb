"""The committed demo logdir is what the capture scripts write, and every file in it is a valid profile.

The frameworks (torch, jax, torch_xla, tensorflow) are not test dependencies, so the committed files
are checked with `demo/inspect_logdir.py`, which needs only the standard library. Where torch or jax
happens to be importable, the capture scripts themselves are also run into a temporary logdir.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO

pytestmark = pytest.mark.stack_independent

DEMO = REPO / "demo"
LOGDIR = DEMO / "logdir"
SESSION_DIR = re.compile(r"^\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}$")
MAX_DEMO_BYTES = 5 * 1000 * 1000
# Runs copied from the shared corpus of real GPU / TPU profiles (provenance in demo/README.md), not captured.
CORPUS_RUNS = {"pytorch_h100_bert", "jax_tpu_v6e_inference"}

_spec = importlib.util.spec_from_file_location("inspect_logdir", DEMO / "inspect_logdir.py")
assert _spec is not None and _spec.loader is not None
inspect_logdir = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = inspect_logdir  # dataclasses look their module up while the file executes
_spec.loader.exec_module(inspect_logdir)


def _captured_runs() -> dict[str, str]:
    """Run name -> capture script, as `capture_all.sh` invokes them."""
    text = (DEMO / "capture_all.sh").read_text()
    return dict(re.findall(r"^capture (\w+) \S+ \w+ (capture_\w+\.py) (?:required|optional)$", text, re.M))


def _summaries(run: str) -> list:
    return [s for s in inspect_logdir.summarise_logdir(str(LOGDIR)) if s.run == run]


def _labels(summary) -> dict[str, int]:
    """Label counts from the inspector's detail lines (`annotation 'x' xN` / `user_annotation 'x' xN`)."""
    found = (re.match(r"(?:user_)?annotation '(.+)' x(\d+)$", line) for line in summary.detail)
    return {m[1]: int(m[2]) for m in found if m}


def _xplane_sessions(run: str) -> list[Path]:
    sessions = sorted((LOGDIR / run / "plugins" / "profile").iterdir())
    assert sessions, f"{run} has no profile session"
    for session in sessions:
        assert SESSION_DIR.match(session.name), session
        assert [p.name for p in session.glob("*.xplane.pb")], f"{session} has no .xplane.pb"
    return sessions


def test_capture_all_writes_exactly_the_committed_runs() -> None:
    runs = _captured_runs()
    assert set(runs) == {
        "pytorch_cpu_training",
        "jax_cpu_training",
        "pytorch_xla_cpu_recompile",
        "tensorflow_cpu_training",
        "pytorch_cpu_slow_input",
        "pytorch_cpu_prefetch_input",
        "pytorch_cpu_repeated_copy",
        "pytorch_cpu_memory",
    }
    assert sorted(p.name for p in LOGDIR.iterdir()) == sorted(set(runs) | CORPUS_RUNS)
    for run, script in runs.items():
        default = re.search(r'"--run",\s*default="([^"]+)"', (DEMO / script).read_text())
        assert default is not None and default[1] == run, f"{script} default --run differs from {run}"


def test_demo_logdir_stays_small() -> None:
    total = sum(p.stat().st_size for p in LOGDIR.rglob("*") if p.is_file())
    assert 0 < total <= MAX_DEMO_BYTES


def test_pytorch_run_has_one_gzipped_kineto_trace_per_recorded_cycle() -> None:
    names = sorted(p.name for p in (LOGDIR / "pytorch_cpu_training").iterdir())
    assert len(names) == 2
    assert all(re.fullmatch(r"worker0\.\d{16,19}\.pt\.trace\.json\.gz", n) for n in names), names
    for summary in _summaries("pytorch_cpu_training"):
        assert summary.counts["events"] > 500
        labels = _labels(summary)
        # schedule(active=2): each trace holds two profiler steps, each with the three phases.
        assert {k: labels.get(k) for k in ("batch_read", "transfer", "train")} == {
            "batch_read": 2,
            "transfer": 2,
            "train": 2,
        }
        assert sum(1 for name in labels if name.startswith("ProfilerStep#")) == 2


@pytest.mark.parametrize(
    ("run", "steps", "phases"),
    [
        ("jax_cpu_training", 5, ("batch_read", "transfer", "train")),
        ("tensorflow_cpu_training", 5, ("batch_read", "train")),
        ("pytorch_xla_cpu_recompile", 8, ("batch_read", "transfer", "train")),
    ],
)
def test_xplane_runs_have_annotated_steps_on_the_host_plane(run: str, steps: int, phases: tuple) -> None:
    assert len(_xplane_sessions(run)) == 1
    (xplane,) = [s for s in _summaries(run) if s.kind == "xplane"]
    assert "plane '/host:CPU'" in "\n".join(xplane.detail)
    assert xplane.counts["events"] > 500
    labels = _labels(xplane)
    assert labels["train_step"] == steps
    for phase in phases:
        assert labels[phase] == steps, phase


def _compile_samples_per_step(text: str) -> list[int]:
    reports = re.split(r"^\[MetricsData; step=\d+\]\n", text, flags=re.M)[1:]
    return [int(re.search(r"^Metric: CompileTime\n\s+TotalSamples: (\d+)", r, re.M)[1]) for r in reports]


def test_xla_run_shows_recompilation_and_cpu_fallback() -> None:
    run = LOGDIR / "pytorch_xla_cpu_recompile"
    assert sorted(p.name for p in run.iterdir() if p.is_file()) == [
        "train.xla_debug.txt",
        "train.xla_graphs.txt.0",
        "train.xla_metrics.txt",
        "train_final.xla_metrics.txt",
    ]
    compiles = _compile_samples_per_step((run / "train.xla_metrics.txt").read_text())
    assert len(compiles) == 8
    # Batches 0-2 are full, batch 3 is the short last batch of epoch 0: a new input shape compiles.
    assert compiles[3] > compiles[2]
    # Epoch 1 meets both shapes again and takes them from the compilation cache.
    assert compiles[4:] == [compiles[3]] * 4
    final = (run / "train_final.xla_metrics.txt").read_text()
    assert re.search(r"^Counter: aten::nonzero\n\s+Value: [1-9]", final, re.M)
    assert re.search(r"^Counter: aten::_local_scalar_dense\n\s+Value: [1-9]", final, re.M)
    by_kind = {s.kind: s for s in _summaries("pytorch_xla_cpu_recompile") if s.path.count(os.sep) == 1}
    assert by_kind["xla_debug"].counts["compilations"] == compiles[-1]
    assert by_kind["xla_graphs"].counts["graphs"] >= by_kind["xla_debug"].counts["compilations"]


def test_inspector_names_the_file_of_a_truncated_xplane(tmp_path: Path) -> None:
    (session,) = _xplane_sessions("jax_cpu_training")
    data = next(session.glob("*.xplane.pb")).read_bytes()
    bad = tmp_path / "run" / "plugins" / "profile" / "s" / "host.xplane.pb"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(inspect_logdir.InvalidProfile, match=re.escape(str(bad)) + ".*runs past the end"):
        inspect_logdir.summarise_logdir(str(tmp_path))


def test_inspector_rejects_a_kineto_trace_that_is_not_json(tmp_path: Path) -> None:
    bad = tmp_path / "run" / "worker0.1.pt.trace.json.gz"
    bad.parent.mkdir()
    bad.write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X"'))
    with pytest.raises(inspect_logdir.InvalidProfile, match="worker0.1.pt.trace.json.gz: .*not JSON"):
        inspect_logdir.summarise_logdir(str(tmp_path))


def test_inspector_rejects_a_truncated_gzip(tmp_path: Path) -> None:
    trace = next((LOGDIR / "pytorch_cpu_training").glob("*.pt.trace.json.gz")).read_bytes()
    bad = tmp_path / "run" / "worker0.2.pt.trace.json.gz"
    bad.parent.mkdir()
    bad.write_bytes(trace[: len(trace) // 2])
    with pytest.raises(
        inspect_logdir.InvalidProfile, match="worker0.2.pt.trace.json.gz: not a valid chrome_json"
    ):
        inspect_logdir.summarise_logdir(str(tmp_path))


def test_capture_all_stops_before_touching_runs_when_a_framework_is_missing(tmp_path: Path) -> None:
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("this interpreter has torch, so it cannot play a Python without it")
    shutil.copytree(LOGDIR / "jax_cpu_training", tmp_path / "pytorch_cpu_training")
    env = {**os.environ, "PYTHON_TORCH": sys.executable}
    done = subprocess.run(
        ["bash", str(DEMO / "capture_all.sh"), str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "pytorch_cpu_training needs torch" in done.stderr
    assert (tmp_path / "pytorch_cpu_training" / "plugins").is_dir()


@pytest.mark.parametrize(
    ("module", "script", "run", "kind"),
    [
        ("torch", "capture_torch.py", "pytorch_cpu_training", "chrome_json"),
        ("jax", "capture_jax.py", "jax_cpu_training", "xplane"),
    ],
)
def test_capture_script_writes_a_valid_run(
    tmp_path: Path, module: str, script: str, run: str, kind: str
) -> None:
    pytest.importorskip(module)
    subprocess.run([sys.executable, str(DEMO / script), str(tmp_path)], check=True, capture_output=True)
    summaries = inspect_logdir.summarise_logdir(str(tmp_path))
    assert {s.run for s in summaries} == {run}
    assert any(s.kind == kind and s.counts["events"] > 0 for s in summaries)
