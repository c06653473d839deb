"""Findings fire on the captures built to trigger them, with the numbers behind them, and stay quiet
on the clean twin; the rules that no committed capture triggers are checked on hand-made traces."""

from __future__ import annotations

import re

import numpy as np
import pytest

from profscope import xla_logs
from profscope.analysis import events
from profscope.analysis.results import HostInput, Options
from profscope.engine.lod import index as lod
from profscope.formats import registry
from profscope.model.columns import TraceBuilder
from profscope.tools.overview import analysis, rules
from profscope.tools.overview.answers import OverviewAnswer
from profscope.tools.overview.rules import input_bound, repeated_copy
from tests.support.overview import (
    CPU_ONLY,
    DEMO_LOGDIR,
    H100,
    KINETO_FILES,
    PREFETCH,
    REPEATED_COPY,
    SLOW_INPUT,
    V100,
    V100_NS,
    XLA_CPU,
    XPLANE_FILES,
    host_events,
    overview,
)

US = 1_000_000
PROMISES = re.compile(r"\b(speed-?up|faster|will (?:save|gain|reduce))\b", re.IGNORECASE)


def kinds(answer) -> list[str]:
    return [f.kind for f in answer.findings]


def test_the_clean_twin_raises_nothing() -> None:
    answer = overview(PREFETCH)
    assert answer.findings == []


def test_slow_input_is_input_bound() -> None:
    answer = overview(SLOW_INPUT)
    assert kinds(answer) == ["input_bound"]
    (finding,) = answer.findings
    evidence = {e.label: e.value for e in finding.evidence}
    steady = answer.per_host[0].steady
    assert evidence["input share of wall time"] == pytest.approx(steady.parts["input"] / steady.wall_ns)
    assert evidence["input share of wall time"] >= input_bound.MIN_INPUT_SHARE
    assert "DataLoader" in finding.observation and finding.link.search.startswith("enumerate(DataLoader)")
    assert finding.link.start_ns == steady.start_ns and finding.link.end_ns == steady.end_ns


def test_repeated_copy_on_the_copy_demo() -> None:
    answer = overview(REPEATED_COPY)
    assert kinds(answer) == ["repeated_copy"]
    (finding,) = answer.findings
    assert "aten::to [[1024,1024]" in finding.observation
    assert "each of the 6 steady steps" in finding.observation
    evidence = {e.label: e.value for e in finding.evidence}
    assert evidence["copies per step"] == 1 and evidence["share of wall time"] >= repeated_copy.MIN_COPY_SHARE


def test_the_resnet50_sample_waits_for_its_data_loader() -> None:
    # The PyTorch plugin's own sample (num_workers=0) is the textbook input-bound GPU run.
    answer = overview(V100)
    assert "input_bound" in kinds(answer)
    assert "launch_bound" in kinds(answer)
    launch = next(f for f in answer.findings if f.kind == "launch_bound")
    assert {e.label for e in launch.evidence} >= {"shorter than their launch", "device idle"}


def test_one_synchronisation_at_the_end_is_no_stall_and_gpu_copies_are_not_host_copies() -> None:
    # The V100 ns-resolution trace syncs once (18 % of its steps' time, 0.2 calls per step) and runs
    # 320 aten::copy_ per step, all on the device: neither a sync stall nor a repeated host→device copy.
    assert kinds(overview(V100_NS)) == []


@pytest.mark.parametrize("path", KINETO_FILES + XPLANE_FILES, ids=lambda p: p.name)
def test_no_share_exceeds_the_wall_time(path) -> None:
    for finding in overview(path).findings:
        for evidence in finding.evidence:
            if "share" in evidence.label:
                assert 0 <= evidence.value <= 1, (finding.kind, evidence)


def test_cpu_only_captures_raise_no_not_observed() -> None:
    assert "not_observed" not in kinds(overview(CPU_ONLY))


@pytest.mark.parametrize("path", [SLOW_INPUT, REPEATED_COPY, V100, H100], ids=lambda p: p.name)
def test_wording_proposes_a_check_not_a_speedup(path) -> None:
    for finding in overview(path).findings:
        assert finding.kind in {rule.id for rule in rules.RULES}
        for text in (finding.observation, finding.hypothesis, finding.next_check):
            assert not PROMISES.search(text), text
        assert finding.rule and finding.evidence


# -- hand-made traces ------------------------------------------------------------------------------
class Trace:
    """A tiny Kineto-like trace: a host thread and, optionally, a GPU stream."""

    def __init__(self, device: bool = True) -> None:
        self.b = TraceBuilder("hand", registry.CHROME_TRACE)
        cpu = self.b.section("python (pid 1)", "cpu")
        self.thread = self.b.track(cpu, "thread 1", "thread")
        if device:
            self.stream = self.b.track(self.b.section("GPU 0", "gpu"), "stream 7", "stream")

    def add(self, name: str, start_us: float, dur_us: float, cat: str, on_device: bool = False) -> int:
        track = self.stream if on_device else self.thread
        return self.b.add_event(
            track, round(start_us * US), round(dur_us * US), self.b.intern(name), self.b.intern(cat)
        )

    def steps(self, count: int, length_us: float) -> None:
        for k in range(count):
            self.add(f"ProfilerStep#{k}", k * length_us, length_us, "user_annotation")

    def events(self, **metadata) -> events.HostEvents:
        self.b.metadata.update(metadata)
        trace = self.b.finalize()
        return events.build("hand", trace, lod.build(trace).self_ps)


def answer_of(host: events.HostEvents, xla=None) -> OverviewAnswer:
    return analysis.answer("t", [HostInput(host, 0, 0)], Options(), xla_logs=xla)


def test_sync_stall_when_the_host_waits_on_the_device() -> None:
    t = Trace()
    t.steps(5, 100)
    for k in range(5):
        t.add("aten::mm", k * 100 + 1, 20, "cpu_op")
        launch = t.add("cudaLaunchKernel", k * 100 + 5, 2, "cuda_runtime")
        kernel = t.add("gemm", k * 100 + 10, 60, "kernel", on_device=True)
        t.b.add_flow(launch, kernel)
        t.add("aten::item", k * 100 + 25, 50, "cpu_op")
        t.add("aten::_local_scalar_dense", k * 100 + 26, 48, "cpu_op")
    answer = answer_of(t.events())
    assert "sync_stall" in kinds(answer)
    finding = next(f for f in answer.findings if f.kind == "sync_stall")
    assert finding.evidence[0].value == pytest.approx(0.5)  # aten::item [25, 75) of each 100 µs step
    assert ".item()" in finding.hypothesis


def test_not_observed_when_a_device_is_declared_but_absent() -> None:
    t = Trace(device=False)
    t.steps(3, 100)
    t.add("cudaLaunchKernel", 10, 2, "cuda_runtime")
    answer = answer_of(t.events(deviceProperties=[{"id": 0, "name": "NVIDIA A100"}]))
    assert kinds(answer) == ["not_observed"]
    assert "deviceProperties" in answer.findings[0].observation
    assert (
        not answer.per_host[0].devices.observed and "none of its events" in answer.per_host[0].devices.reason
    )


def test_launch_bound_with_many_kernels_shorter_than_their_launch() -> None:
    t = Trace()
    t.steps(5, 1000)
    for k in range(5):
        for j in range(40):
            at = k * 1000 + j * 20
            launch = t.add("cudaLaunchKernel", at, 10, "cuda_runtime")
            t.b.add_flow(launch, t.add("tiny", at + 12, 2, "kernel", on_device=True))
    answer = answer_of(t.events())
    assert "launch_bound" in kinds(answer)


def test_recompile_from_compilations_in_steady_steps() -> None:
    t = Trace(device=False)
    t.steps(8, 100)
    for k in range(8):
        t.add("aten::mm", k * 100 + 5, 40, "cpu_op")
    t.add("XlaCompile", 610, 20, "cpu_op")  # in step 6 of 8: steady
    answer = answer_of(t.events())
    assert "recompile" in kinds(answer)
    assert "steps 6 compile" in next(f for f in answer.findings if f.kind == "recompile").observation


def test_recompile_from_the_pytorch_xla_metrics_logs() -> None:
    run = DEMO_LOGDIR / "pytorch_xla_cpu_recompile"
    files = [xla_logs.XlaFile(url=str(run / "train.xla_metrics.txt"), format=registry.XLA_METRICS)]
    answer = answer_of(host_events(XLA_CPU), xla=lambda: xla_logs.load(files))
    found = [f for f in answer.findings if f.kind == "recompile"]
    # CompileTime samples per step: 1, 2, 4, 5, 5, 5, 5, 5: two more compile after the first 2 reports.
    assert (
        len(found) == 1
        and "3 compilation(s) after the first 2 reported steps, in steps 2, 3" in found[0].observation
    )


def test_dominant_op_on_a_host_bound_capture() -> None:
    t = Trace(device=False)
    t.steps(5, 100)
    for k in range(5):
        t.add("aten::conv2d", k * 100 + 1, 70, "cpu_op")
        t.add("aten::relu", k * 100 + 72, 10, "cpu_op")
    answer = answer_of(t.events())
    assert kinds(answer) == ["dominant_op"]
    evidence = {e.label: e.value for e in answer.findings[0].evidence}
    assert evidence["self time share of wall time"] == pytest.approx(0.7)
    assert np.isclose(evidence["calls"], 5)
