"""PT_XLA_DEBUG log parser: the real PyTorch/XLA 2.9 log and hand-written variants of the other messages."""

from __future__ import annotations

import pytest

from profscope.errors import UnreadableProfile
from profscope.formats.xla import debug as xla_debug
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

RUN = DATA_DIR / "xla" / "pytorch_xla_cpu_recompile"


def test_real_log_analyses_and_steps() -> None:
    parsed = xla_debug.read(str(RUN / "pt_xla_debug.txt"))
    assert parsed.skipped == {}
    kinds = [a.kind for a in parsed.analyses]
    assert kinds.count("compilation") == 9  # = CompileTime TotalSamples of the metrics report
    assert kinds.count("execution") == 16  # = ExecuteTime TotalSamples
    assert all(a.complete for a in parsed.analyses)
    first = parsed.analyses[0]
    assert first.cause == "user torch_xla.sync"
    assert first.graph_hash == "91f4b721e71712c9c7de0e8d37b4f2ca"
    assert (first.num_inputs, first.num_outputs) == (12, 15)
    assert [f.label() for f in first.frames] == [
        "sync (/home/user/venv/lib/python3.11/site-packages/torch_xla/torch_xla.py:87)",
        "<module> (/home/user/project/train.py:23)",
    ]
    assert first.post is not None and first.post.complete
    assert first.post.computation_hash == "40b03dfaeb4f93ea6a9d9aadc258620a"
    assert first.post.input_bytes == pytest.approx(0.000009 * 1024**3)
    forced = [a for a in parsed.analyses if a.cause.startswith("most likely user code")]
    assert {a.frames[0].line for a in forced} == {21, 22}
    # steps counted from the step-ending syncs: compilations at 0, 1, 2, 2, 7, 8, 8, 8, 9
    assert [a.step for a in parsed.analyses if a.kind == "compilation"] == [0, 1, 2, 2, 7, 8, 8, 8, 9]
    assert all(a.post is None for a in parsed.analyses if a.kind == "execution")


PROFILER = """\
step 3 loss 2.1
pt-xla-profiler: CompileTime too frequent: 21 counts during 11 steps
pt-xla-profiler: TransferFromDeviceTime too frequent: 11 counts during 11 steps
pt-xla-profiler: Op(s) not lowered: aten::_ctc_loss, aten::_ctc_loss_backward,  Please open a GitHub issue with the above op lowering requests.
  0%|          | 1/310 [3:15:00<1004:17:26, 11700.47s/it]pt-xla-profiler: ExecuteTime too slow: longest instance took 01m02s003ms400.000us. Please open a GitHub issue with the graph dump for our team to optimize.
pt-xla-profiler: Following metrics too frequent: XrtTryFreeMemory (54 counts), XrtCompaction (12 counts), during 40 steps. Note: XRT metrics follow the lifecycle of the TPU so you may need to restart the TPU for fresh metrics.
pt-xla-profiler: something new
"""


def test_profiler_messages() -> None:
    parsed = xla_debug.read("log.txt", text=PROFILER)
    kinds = [m.kind for m in parsed.messages]
    assert kinds == ["too_frequent", "too_frequent", "not_lowered", "too_slow", "xrt_too_frequent", "other"]
    compile_msg = parsed.messages[0]
    assert (compile_msg.metric, compile_msg.count, compile_msg.steps) == ("CompileTime", 21, 11)
    assert parsed.messages[2].ops == ["aten::_ctc_loss", "aten::_ctc_loss_backward"]
    assert parsed.messages[3].metric == "ExecuteTime"
    assert parsed.messages[3].duration_ns == pytest.approx(62.0034e9)
    assert parsed.messages[4].metrics == {"XrtTryFreeMemory": 54.0, "XrtCompaction": 12.0}
    assert parsed.messages[4].steps == 40
    assert parsed.messages[5].text == "something new"


VARIANTS = """\
[rank0]: noise
Unexpected Execution Analysis: ================================================================================
Unexpected Execution Analysis: Execution Cause
Unexpected Execution Analysis:   most likely user code trying to access tensor value before mark_step
Unexpected Execution Analysis: Graph Info:\x20
Unexpected Execution Analysis:   Graph Name: my_compiled_fn
Unexpected Execution Analysis:   Graph Hash: abc123
Unexpected Execution Analysis:   Number of Graph Inputs: 3
Unexpected Execution Analysis:   Number of Graph Outputs: 1
Unexpected Execution Analysis: Python Frame Triggered Execution:\x20
Unexpected Execution Analysis:   forward (/src/model.py:40)
Unexpected Execution Analysis:   ..........
Unexpected Execution Analysis: --------------------------------------------------------------------------------
Unexpected Execution Analysis: ================================================================================

Computation hash: 99aa

Post Compilation Analysis: ================================================================================
Post Compilation Analysis: Graph input size: Unknown  GB
Post Compilation Analysis: Graph output size: 1.500000 GB
Compilation Analysis: ================================================================================
Compilation Analysis: Compilation Cause
Compilation Analysis:   mark_step in parallel loader at step end
Compilation Analysis: Graph Info:\x20
Compilation Analysis:   Graph Hash: ffee
"""


def test_unexpected_execution_truncated_blocks_and_orphans() -> None:
    parsed = xla_debug.read("debug.log", text=VARIANTS)
    unexpected, compilation = parsed.analyses
    assert unexpected.kind == "unexpected_execution"
    assert unexpected.graph_name == "my_compiled_fn"
    assert unexpected.frames_truncated and [f.line for f in unexpected.frames] == [40]
    assert compilation.kind == "compilation" and not compilation.complete
    assert compilation.cause == "mark_step in parallel loader at step end"
    assert compilation.graph_hash == "ffee"
    assert parsed.skipped == {
        "truncated post-compilation analysis (kept)": 1,
        "post-compilation analysis without its compilation": 1,
        "truncated compilation analysis (kept)": 1,
    }


def test_frame_forms() -> None:
    assert xla_debug.Frame.parse("  <lambda> (/a b/c.py:12)") == xla_debug.Frame("<lambda>", "/a b/c.py", 12)
    assert xla_debug.Frame.parse("$s10TensorFlow6LayerPAAE13callAsFunction") == xla_debug.Frame(
        "$s10TensorFlow6LayerPAAE13callAsFunction"
    )


def test_nothing_recognisable_is_unreadable() -> None:
    with pytest.raises(UnreadableProfile, match="x.log.*no PyTorch/XLA debug output"):
        xla_debug.read("x.log", text="hello\nworld\n")


def _execution(cause: str) -> str:
    bar = "=" * 80
    return (
        f"Execution Analysis: {bar}\nExecution Analysis: Execution Cause\nExecution Analysis:   {cause}\n"
        f"Execution Analysis: {'-' * 80}\nExecution Analysis: {bar}\n"
    )


@pytest.mark.parametrize(
    "cause",
    [
        "user mark_step",
        "mark_step in parallel loader at step end",
        "torch_xla.sync when exiting a profiler StepTrace region",
        "mark_step when exiting a profiler StepTrace region",
    ],
)
def test_steps_are_counted_from_every_step_ending_sync(cause: str) -> None:
    forced = _execution("most likely user code trying to access tensor value before mark_step")
    text = (
        _execution(cause) + forced + _execution(cause) + _execution("dynamo is executing a compiled program")
    )
    parsed = xla_debug.read("steps.log", text=text)
    assert [a.step for a in parsed.analyses] == [0, 1, 1, 2]
    assert [a.ends_step for a in parsed.analyses] == [True, False, True, False]
