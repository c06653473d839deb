"""Shared loaders of the overview tests (imported by the other `test_overview_*` files), and the
checks that the independent raw-event counts they use see what the files hold."""

from __future__ import annotations

import functools
import gzip
import importlib.util
import json
import pathlib
import sys

import fsspec

from profscope.analysis import events
from profscope.analysis.host import analyze_host
from profscope.analysis.results import HostInput, HostResult, Options
from profscope.engine.lod import index as lod
from profscope.formats.chrome import reader as chrome_json
from profscope.formats.xplane import reader as xplane
from profscope.model.columns import Trace
from profscope.tools.overview import analysis
from profscope.tools.overview.answers import OverviewAnswer
from tests.support import REPO

KINETO = REPO / "tests/data/kineto"
XPLANES = REPO / "tests/data/xplane"
DEMOS = REPO / "tests/data/overview"
DEMO_LOGDIR = REPO / "demo/logdir"
V100 = KINETO / "worker0.1623143089861.pt.trace.json.gz"
V100_NS = KINETO / "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
H100 = KINETO / "bert_small.pt.trace.json.gz"
A100 = KINETO / "alexnet.pt.trace.json.gz"
MI250 = KINETO / "mi250_minitoy.pt.trace.json.gz"
CPU_ONLY = KINETO / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
RANK0 = KINETO / "rank-0.pt.trace.json.gz"
RANK1 = KINETO / "rank-1.pt.trace.json.gz"
SLOW_INPUT = DEMOS / "slow_input.pt.trace.json.gz"
PREFETCH = DEMOS / "prefetch_input.pt.trace.json.gz"
REPEATED_COPY = DEMOS / "repeated_copy.pt.trace.json.gz"
GPU_TF = XPLANES / "gpu_8x_tf_training.xplane.pb"
MI300 = XPLANES / "mi300_jax_conv.xplane.pb"
TPU = XPLANES / "tpu_v6e_inference.xplane.pb"
JAX_CPU = next((DEMO_LOGDIR / "jax_cpu_training").rglob("*.xplane.pb"))
TF_CPU = next((DEMO_LOGDIR / "tensorflow_cpu_training").rglob("*.xplane.pb"))
XLA_CPU = next((DEMO_LOGDIR / "pytorch_xla_cpu_recompile").rglob("*.xplane.pb"))
KINETO_FILES = (V100, V100_NS, H100, A100, MI250, CPU_ONLY, RANK0, RANK1, SLOW_INPUT, PREFETCH, REPEATED_COPY)
XPLANE_FILES = (GPU_TF, MI300, TPU, JAX_CPU, TF_CPU, XLA_CPU)

_spec = importlib.util.spec_from_file_location("inspect_logdir", REPO / "demo/inspect_logdir.py")
inspect_logdir = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = inspect_logdir
_spec.loader.exec_module(inspect_logdir)


@functools.cache
def trace_of(path: pathlib.Path) -> Trace:
    reader = xplane if path.name.endswith(".xplane.pb") else chrome_json
    return reader.read(str(path), fsspec.filesystem("file"))


@functools.cache
def host_events(path: pathlib.Path) -> events.HostEvents:
    trace = trace_of(path)
    return events.build(path.name.split(".")[0], trace, lod.build(trace).self_ps)


def overview(*paths: pathlib.Path, **options) -> OverviewAnswer:
    hosts = [HostInput(host_events(p), 0, 0) for p in paths]
    return analysis.answer("test", hosts, Options(**options))


def host_result(path: pathlib.Path, **options) -> HostResult:
    return analyze_host(HostInput(host_events(path), 0, 0), Options(**options))


@functools.cache
def raw_kineto(path: pathlib.Path) -> tuple[dict, ...]:
    """The file's trace events as the JSON holds them (no profscope reader involved)."""
    with gzip.open(path, "rt") as f:
        return tuple(json.load(f)["traceEvents"])


def raw_profiler_steps(path: pathlib.Path) -> int:
    """ProfilerStep#N slices on host threads, counted in the raw JSON (the GPU's copies of the
    annotation have category gpu_user_annotation)."""
    return sum(
        1
        for e in raw_kineto(path)
        if e.get("ph") == "X"
        and str(e.get("name", "")).startswith("ProfilerStep#")
        and e.get("cat") != "gpu_user_annotation"
    )


def raw_xplane_labels(path: pathlib.Path) -> dict[str, int]:
    """Annotation counts from the demo inspector's own XPlane decoder (stdlib only)."""
    summaries = inspect_logdir.summarise_logdir(str(path.parent))
    (summary,) = [s for s in summaries if s.kind == "xplane"]
    found = {}
    for line in summary.detail:
        parts = line.strip().split("'")
        if line.strip().startswith("annotation") and len(parts) == 3:
            found[parts[1]] = int(parts[2].strip().lstrip("x"))
    return found


def test_the_raw_counts_see_the_markers() -> None:
    assert raw_profiler_steps(V100) == 6
    assert raw_profiler_steps(CPU_ONLY) == 1
    assert raw_profiler_steps(A100) == 0
    assert raw_xplane_labels(JAX_CPU)["train_step"] == 5
    assert raw_xplane_labels(XLA_CPU)["train_step"] == 8
