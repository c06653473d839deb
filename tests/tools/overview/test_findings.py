"""Findings fire on the captures built to trigger them, with the numbers and the cost behind them,
and stay quiet on the clean twin; the rules that no committed capture triggers are checked on
hand-made traces (tests/tools/overview/test_jobs_findings.py locks the findings of every real job)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from profscope import xla_logs
from profscope.analysis import events
from profscope.analysis.results import HostInput, Options
from profscope.answers import UNSET
from profscope.engine.lod import index as lod
from profscope.formats import registry
from profscope.model.columns import TraceBuilder
from profscope.tools.overview import analysis, rules
from profscope.tools.overview.answers import OverviewAnswer
from profscope.tools.overview.rules import launch_bound, repeated_copy, waiting
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


def test_slow_input_waits_in_its_data_loader() -> None:
    answer = overview(SLOW_INPUT)
    assert kinds(answer) == ["input_bound"]
    (finding,) = answer.findings
    label = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert finding.title == f"The step waits in `{label}`"
    evidence = {e.label: e.value for e in finding.evidence}
    steady = answer.per_host[0].steady
    assert evidence["waiting share of wall time"] == pytest.approx(finding.cost_share)
    assert 0.6 <= finding.cost_share <= evidence[f"`{label}` share of wall time"] <= 0.8
    assert finding.cost_ns == pytest.approx(finding.cost_share * steady.wall_ns / steady.steps)
    assert finding.link.search == label
    assert finding.link.start_ns == steady.start_ns and finding.link.end_ns == steady.end_ns
    assert "prepared in advance" in finding.next_check


def test_repeated_copy_on_the_copy_demo() -> None:
    answer = overview(REPEATED_COPY)
    assert kinds(answer) == ["repeated_copy"]
    (finding,) = answer.findings
    assert "aten::to [[1024,1024]" in finding.observation
    assert "each of the 6 steady steps" in finding.observation
    evidence = {e.label: e.value for e in finding.evidence}
    assert evidence["copies per step"] == 1 and evidence["share of wall time"] >= repeated_copy.MIN_COPY_SHARE
    assert finding.cost_share == pytest.approx(evidence["share of wall time"])


def test_the_resnet50_sample_waits_for_its_data_loader_not_for_launches() -> None:
    # Was locked as input_bound (by the loader's name) + launch_bound. Its kernels are short, but the
    # median launch delay is 12 ms: the host runs ahead of a queued device, so launches are not what
    # the device waits for; it idles while the host is in the data loader.
    answer = overview(V100)
    assert kinds(answer) == ["input_bound"]
    assert answer.per_host[0].devices.launch_delay.median_ns >= launch_bound.MAX_MEDIAN_DELAY_NS
    (finding,) = answer.findings
    assert finding.title == "The step waits in `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`"
    assert "the device is idle" in finding.observation
    assert waiting.MIN_DEVICE_WAIT_SHARE <= finding.cost_share <= 0.4


def test_one_synchronisation_at_the_end_is_no_stall_and_gpu_copies_are_not_host_copies() -> None:
    # The V100 ns-resolution trace syncs once (18 % of its steps' time, 0.2 calls per step) and runs
    # 320 aten::copy_ per step, all on the device: neither a sync stall nor a repeated host→device copy.
    assert kinds(overview(V100_NS)) == []


@pytest.mark.parametrize("path", KINETO_FILES + XPLANE_FILES, ids=lambda p: p.name)
def test_no_share_exceeds_the_wall_time_and_findings_come_by_cost(path) -> None:
    found = overview(path).findings
    for finding in found:
        for evidence in finding.evidence:
            if "share" in evidence.label:
                assert 0 <= evidence.value <= 1, (finding.kind, evidence)
        if finding.kind != "not_observed":
            assert finding.cost_ns > 0 and 0 < finding.cost_share <= 1, finding
    costs = [f.cost_share for f in found if f.cost_share is not UNSET]
    assert costs == sorted(costs, reverse=True)


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


def sync_trace(kernel_us: float) -> events.HostEvents:
    """5 steps of 100 µs: a kernel launched at 5 µs runs from 10 µs for `kernel_us`, and the host
    blocks in `.item()` from 25 to 75 µs."""
    t = Trace()
    t.steps(5, 100)
    for k in range(5):
        t.add("aten::mm", k * 100 + 1, 20, "cpu_op")
        launch = t.add("cudaLaunchKernel", k * 100 + 5, 2, "cuda_runtime")
        kernel = t.add("gemm", k * 100 + 10, kernel_us, "kernel", on_device=True)
        t.b.add_flow(launch, kernel)
        t.add("aten::item", k * 100 + 25, 50, "cpu_op")
        t.add("aten::_local_scalar_dense", k * 100 + 26, 48, "cpu_op")
    return t.events()


def test_sync_stall_when_the_device_idles_while_the_host_waits() -> None:
    answer = answer_of(sync_trace(kernel_us=20))
    assert "sync_stall" in kinds(answer)
    finding = next(f for f in answer.findings if f.kind == "sync_stall")
    # the host waits in aten::item [25, 75) of each 100 µs step; the kernel ends at 30: idle 45 µs
    assert finding.cost_share == pytest.approx(0.45) and finding.cost_ns == pytest.approx(45_000)
    assert {e.label: e.value for e in finding.evidence}["time in synchronising calls"] == pytest.approx(0.5)
    assert ".item()" in finding.hypothesis


def test_no_sync_stall_while_the_device_is_busy() -> None:
    # Was a sync_stall (the old rule counted the host's blocked time): the kernel runs until 70 µs
    # of the host's [25, 75) wait, so the device idles 5 % of the step: the wait costs almost nothing.
    assert "sync_stall" not in kinds(answer_of(sync_trace(kernel_us=60)))


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


def launch_trace(delay_us: float) -> events.HostEvents:
    """5 steps of 1 ms, 40 launches of 10 µs each 20 µs apart, each kernel 2 µs long starting
    `delay_us` after its launch returned."""
    t = Trace()
    t.steps(5, 1000)
    for k in range(5):
        for j in range(40):
            at = k * 1000 + j * 20
            launch = t.add("cudaLaunchKernel", at, 10, "cuda_runtime")
            t.b.add_flow(launch, t.add("tiny", at + 10 + delay_us, 2, "kernel", on_device=True))
    return t.events()


def test_launch_bound_with_many_kernels_shorter_than_their_launch() -> None:
    answer = answer_of(launch_trace(delay_us=2))
    assert "launch_bound" in kinds(answer)
    finding = next(f for f in answer.findings if f.kind == "launch_bound")
    # each 1 ms step: 40 kernels of 2 µs, the device waits for the host between them
    assert 0.8 <= finding.cost_share <= 0.95


def test_no_launch_bound_when_the_host_runs_ahead() -> None:
    # The same short kernels, each starting 1.5 ms after its launch returned: the host is ahead of a
    # queued device, the device does not wait for launches.
    assert "launch_bound" not in kinds(answer_of(launch_trace(delay_us=1500)))


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


def test_dominant_op_is_one_call_never_many_calls_a_marker_or_a_collective() -> None:
    t = Trace(device=False)
    t.steps(5, 100)
    for k in range(5):
        for j in range(4):  # an MLP's matmuls: 4 × 15 µs = 60 % of the step, none alone
            t.add("aten::mm", k * 100 + 1 + j * 16, 15, "cpu_op")
    assert kinds(answer_of(t.events())) == []
    t = Trace()
    t.steps(5, 100)
    for k in range(5):
        launch = t.add("cudaLaunchKernel", k * 100 + 1, 2, "cuda_runtime")
        t.b.add_flow(
            launch, t.add("ncclKernel_AllReduce_RING_LL_Sum_float", k * 100 + 4, 80, "kernel", on_device=True)
        )
    assert "dominant_op" not in kinds(answer_of(t.events()))


def phase_trace(read_ops: int, device: bool = False) -> events.HostEvents:
    """8 steps of 100 µs, each with a phase "lecture" (70 µs: `read_ops` tensor creations of 1 µs, the
    rest untraced) then "calcul" (25 µs of one model op, with a kernel when `device`)."""
    t = Trace(device=device)
    t.steps(8, 100)
    for k in range(8):
        at = k * 100
        t.add("lecture", at + 1, 70, "user_annotation")
        for j in range(read_ops):
            t.add("aten::empty", at + 2 + j * 2, 1, "cpu_op")
        t.add("calcul", at + 72, 26, "user_annotation")
        t.add("aten::linear", at + 72, 25, "cpu_op")
        if device:
            launch = t.add("cudaLaunchKernel", at + 73, 2, "cuda_runtime")
            t.b.add_flow(launch, t.add("gemm", at + 76, 20, "kernel", on_device=True))
    return t.events()


@pytest.mark.parametrize("device", [False, True], ids=["cpu", "gpu"])
def test_the_step_waits_in_the_phase_that_builds_its_batch(device) -> None:
    answer = answer_of(phase_trace(read_ops=3, device=device))
    assert kinds(answer) == ["input_bound"]
    (finding,) = answer.findings
    assert finding.title == "The step waits in `lecture`"
    # 70 µs of each 100 µs step; 3 µs of ops in it on a CPU-only capture; the device is idle in all of it
    assert finding.cost_share == pytest.approx(0.67 if not device else 0.70, abs=0.005)
    assert finding.cost_share >= (waiting.MIN_DEVICE_WAIT_SHARE if device else waiting.MIN_WAIT_SHARE)
    assert "`lecture` and not the model's compute sets the step time" in finding.hypothesis


def test_the_step_waits_in_a_phase_where_nothing_runs() -> None:
    answer = answer_of(phase_trace(read_ops=0))
    assert kinds(answer) == ["host_wait"]
    assert answer.findings[0].title == "The step waits in `lecture`"
    assert answer.findings[0].cost_share == pytest.approx(0.70)


def test_findings_come_by_cost_and_notes_last() -> None:
    t = Trace(device=False)
    t.steps(8, 100)
    for k in range(8):
        t.add("lecture", k * 100 + 1, 60, "user_annotation")
        t.add("aten::conv2d", k * 100 + 62, 30, "cpu_op")  # one call, 30 %: below dominant_op's half
        t.add("aten::to", k * 100 + 93, 6, "cpu_op")  # a copy of the step's own code: 6 %
    t.add("cudaLaunchKernel", 805, 0.5, "cuda_runtime")
    answer = answer_of(t.events(deviceProperties=[{"id": 0, "name": "NVIDIA A100"}]))
    assert kinds(answer) == ["host_wait", "repeated_copy", "not_observed"]
    assert answer.findings[-1].cost_ns is UNSET


def test_recompile_without_step_markers() -> None:
    t = Trace(device=False)
    t.add("XlaCompile", 0, 50, "cpu_op")
    for k in range(10):
        t.add("aten::mm", 60 + k * 100, 80, "cpu_op")
    t.add("XlaCompile", 545, 10, "cpu_op")  # after the program ran: a recompilation
    answer = answer_of(t.events())
    assert answer.per_host[0].steps.source_kind != "none"  # steps inferred from the repetition
    (finding,) = [f for f in answer.findings if f.kind == "recompile"]
    assert "steps 5 compile" in finding.observation and finding.cost_ns == pytest.approx(1_000)
    t = Trace(device=False)
    t.add("XlaCompile", 0, 50, "cpu_op")
    t.add("aten::mm", 60, 340, "cpu_op")
    t.add("XlaCompile", 450, 20, "cpu_op")
    t.add("aten::conv2d", 480, 420, "cpu_op")
    answer = answer_of(t.events())
    assert answer.per_host[0].steps.source_kind == "none"
    (finding,) = [f for f in answer.findings if f.kind == "recompile"]
    assert "after the program's first run" in finding.observation
    assert finding.cost_share == pytest.approx(20 / 900)
