"""Phases (analysis/phases.py) on the visible real jobs of tests/data/jobs: the labels directly under
each step by position and order, their shares as tests/data/jobs/FACTS.md states them, and what a
CPU-only capture cannot give."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from profscope.analysis import phases
from profscope.analysis import steps as steps_lib
from profscope.answers import UNSET
from tests.support import DATA_DIR
from tests.support.overview import V100, V100_NS, host_events, host_result

JOBS = DATA_DIR / "jobs"


def job_file(job: str, pattern: str = "*") -> pathlib.Path:
    """The job's trace file (Kineto JSON or XPlane) whose name matches `pattern`."""
    found = sorted(
        p for p in (JOBS / job).rglob(pattern) if p.name.endswith((".pt.trace.json.gz", ".xplane.pb"))
    )
    assert found, f"no trace in {job}"
    return found[0]


def find(job: str, step_name: str | None = None, pattern: str = "*") -> tuple[steps_lib.Steps, phases.Phases]:
    events = host_events(job_file(job, pattern))
    found = steps_lib.find(events, step_name)
    return found, phases.find(events, found)


def shares(found: steps_lib.Steps, phased: phases.Phases) -> dict[str, float]:
    """Each phase's summed time ÷ the summed step time (FACTS.md's shares), in %."""
    wall = float(found.wall_ps.sum())
    return {n: 100 * float(phased.per_step_ps[:, j].sum()) / wall for j, n in enumerate(phased.names)}


# job, step_name, phases with their share of the steps in % (FACTS.md, visible jobs)
LABELLED = [
    ("torch_plain_en", None, {"load_batch": 0.1, "forward": 19, "backward": 76, "optimizer": 4}),
    (
        "torch_input_bound_zh",
        None,
        {"unknown": 80.8, "unknown (2)": 6.1, "unknown (3)": 11.3, "unknown (4)": 1.5},
    ),
    (
        "torch_input_prefetched_zh",
        None,
        {"unknown": 0.1, "unknown (2)": 25.1, "unknown (3)": 66.0, "unknown (4)": 7.8},
    ),
    ("torch_host_wait", None, {"get_batch": 0.1, "fwd_bwd": 5.8, "wait_for_peer": 91.7, "apply_update": 2.1}),
    ("jax_train_step_scopes", "train_step", {"data": 24, "update": 75}),
]


@pytest.mark.parametrize(("job", "step_name", "expected"), LABELLED, ids=[j for j, _, _ in LABELLED])
def test_your_labels_are_the_phases_in_order_with_their_shares(job, step_name, expected) -> None:
    found, phased = find(job, step_name)
    assert phased.names == list(expected)
    assert phased.source.startswith("your labels directly under")
    for name, share in shares(found, phased).items():
        assert share == pytest.approx(expected[name], abs=1.0), name
    assert phased.per_step_ps.shape == (len(found), len(expected))
    # phases and the time outside them add up to each step's wall time
    np.testing.assert_array_equal(phased.per_step_ps.sum(axis=1) + phased.outside_ps, found.wall_ps)


def test_phases_of_a_jax_step_are_found_by_time_not_by_depth() -> None:
    """The reader nests the step annotation under the Python frame it overlaps (depth 1) and leaves
    `data` / `update` at depth 0 beside it: they are still its phases."""
    found, phased = find("jax_train_step_scopes", "train_step")
    events = host_events(job_file("jax_train_step_scopes"))
    assert (events.trace.ev_depth[found.markers] == 1).all()
    assert phased.names == ["data", "update"]


@pytest.mark.parametrize(
    ("job", "step_name", "expected", "source"),
    [
        (
            "torch_ddp_gloo",
            None,
            [
                "Optimizer.zero_grad#SGD.zero_grad",
                "DistributedDataParallel.forward",
                "autograd::engine::evaluate_function",
                "Optimizer.step#SGD.step",
            ],
            "framework phases (torch.optim, DDP, autograd backward)",
        ),
        (
            "torch_repeated_copy",
            None,
            [
                "Optimizer.zero_grad#SGD.zero_grad",
                "autograd::engine::evaluate_function",
                "Optimizer.step#SGD.step",
            ],
            "framework phases (torch.optim, autograd backward)",
        ),
    ],
)
def test_without_labels_the_framework_phases_are_used(job, step_name, expected, source) -> None:
    _, phased = find(job, step_name, "rank0*" if job == "torch_ddp_gloo" else "*")
    assert phased.names == expected
    assert phased.source.startswith(source)


@pytest.mark.parametrize(
    ("job", "step_name"), [("jax_step_train", "train"), ("tf_keras_fit", "Profiled batch")]
)
def test_framework_internals_under_an_xplane_step_are_not_phases(job, step_name) -> None:
    """`PjitFunction(update)`, `Wait for usage holds`, `multi_step_on_iterator`, `TFE_…` sit directly
    under these steps: they recur, nest in themselves or carry stats, so they are not labels."""
    found, phased = find(job, step_name)
    assert len(found) > 0
    assert phased.names == []
    assert phased.source == f"no labels directly under {step_name!r}"


def test_a_phase_with_no_op_says_so() -> None:
    """torch_host_wait's `wait_for_peer` is a sleep: no model op runs in it; `fwd_bwd` is mostly ops."""
    _, phased = find("torch_host_wait")
    ops = dict(zip(phased.names, phased.model_ops_ps.sum(axis=0).tolist()))
    assert ops["wait_for_peer"] == 0
    assert ops["fwd_bwd"] > 0


def test_the_answer_leaves_device_busy_unset_on_a_cpu_capture() -> None:
    result = host_result(job_file("torch_host_wait"))
    answer = result.answer.phases
    assert answer.source.startswith("your labels")
    assert [p.name for p in answer.phases] == [
        "get_batch",
        "fwd_bwd",
        "wait_for_peer",
        "apply_update",
        phases.OUTSIDE,
    ]
    assert answer.device_reason.startswith("device activity not observed")
    assert all(p.device_busy_fraction is UNSET for p in answer.phases)
    steady = int(result.steady.sum())
    assert steady >= 5
    wait = answer.phases[2]
    assert wait.p10_ns <= wait.median_ns <= wait.p90_ns
    assert wait.model_ops_fraction == 0.0
    assert answer.phases[-1].outside and answer.phases[-1].model_ops_fraction is UNSET
    assert sum(p.share for p in answer.phases) == pytest.approx(1.0)
    assert len(answer.per_step) == len(answer.step_numbers) == len(result.steps)
    assert all(len(row) == len(answer.phases) for row in answer.per_step)


def test_no_steps_no_phases() -> None:
    found = steps_lib.Steps(
        "none",
        "none",
        np.zeros(0, np.int64),
        [],
        np.zeros(0, np.int64),
        np.zeros(0, np.int64),
        np.zeros(0, np.int64),
    )
    phased = phases.find(host_events(job_file("torch_plain_en")), found)
    assert phased.names == [] and phased.per_step_ps.shape == (0, 0)


def test_first_appearance_keeps_the_order_of_every_step() -> None:
    assert phases.first_appearance([["a", "c"], ["a", "b", "c"]]) == ["a", "b", "c"]
    assert phases.first_appearance([["a", "c"], ["c", "d"]]) == ["a", "c", "d"]


def test_older_kineto_files_labels_as_ops_and_its_framework_phases_are_still_found() -> None:
    """torch ≤ 1.9 writes ops, labels and the step marker alike as `Operator`: the framework's own
    labels are found by name, and neither they nor the marker count as the model ops inside them."""
    events = host_events(V100)
    found = steps_lib.find(events, None)
    phased = phases.find(events, found)
    assert phased.names == [
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        "Optimizer.zero_grad#SGD.zero_grad",
        "Optimizer.step#SGD.step",
    ]
    assert phased.source.startswith("framework phases (DataLoader, torch.optim)")
    assert (phased.model_ops_ps.sum(axis=0) < phased.per_step_ps.sum(axis=0)).all()


def test_device_busy_while_a_phase_runs_on_a_gpu_capture() -> None:
    answer = host_result(V100_NS).answer.phases
    rows = {p.name: p for p in answer.phases}
    assert answer.device_reason is UNSET
    assert 0.9 < rows["## backward ##"].device_busy_fraction <= 1.0
    assert rows["(outside your phases)"].device_busy_fraction is UNSET
