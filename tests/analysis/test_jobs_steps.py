"""Steps of the real small jobs (tests/data/jobs): for every capture, the source kind, the marker
(or what repeats, for inferred steps) and the step numbers, as FACTS.md states them."""

from __future__ import annotations

import functools
import pathlib

import pytest

from profscope.analysis import step_inference, steps
from profscope.analysis.events import HostEvents
from tests.support import DATA_DIR
from tests.support.overview import host_events

JOBS = DATA_DIR / "jobs"
PROFILER = "ProfilerStep"

# (job, file name pattern, source kind, marker, step numbers) per FACTS.md.
EXPECTED = [
    ("torch_plain_en", "worker0.*.pt.trace.json.gz", "profiler_step", PROFILER, range(2, 10)),
    ("torch_input_bound_zh", "worker0.*.pt.trace.json.gz", "profiler_step", PROFILER, range(2, 10)),
    ("torch_input_prefetched_zh", "worker0.*.pt.trace.json.gz", "profiler_step", PROFILER, range(2, 10)),
    (
        "torch_unmarked",
        "worker0.*.pt.trace.json.gz",
        "inferred",
        "Optimizer.zero_grad#Adam.zero_grad",
        range(1, 11),
    ),
    ("torch_ddp_gloo", "rank0.*.pt.trace.json.gz", "profiler_step", PROFILER, range(2, 8)),
    ("torch_ddp_gloo", "rank1.*.pt.trace.json.gz", "profiler_step", PROFILER, range(2, 8)),
    ("lightning_fit", "worker0.*.pt.trace.json.gz", "profiler_step", PROFILER, range(2, 8)),
    ("torch_compile", "worker0.*.pt.trace.json.gz", "profiler_step", PROFILER, range(0, 10)),
    ("torch_repeated_copy", "worker0.*.pt.trace.json.gz", "profiler_step", PROFILER, range(2, 10)),
    ("torch_host_wait", "worker0.*.pt.trace.json.gz", "profiler_step", PROFILER, range(3, 11)),
    ("jax_step_train", "vm.xplane.pb", "step_annotation", "train", range(0, 10)),
    # JAX's Chrome-trace export of the same session: step_num as a string, no `_r`.
    ("jax_step_train", "vm.trace.json.gz", "step_annotation", "train", range(0, 10)),
    ("jax_train_step_scopes", "vm.xplane.pb", "step_annotation", "train_step", range(2, 12)),
    ("jax_train_step_scopes", "vm.trace.json.gz", "step_annotation", "train_step", range(2, 12)),
    ("tf_keras_fit", "vm.xplane.pb", "step_annotation", "Profiled batch", range(1, 5)),
    # PyTorch/XLA's `xp.StepTrace("train_step", step_num=i)` (a TraceMe with `_r: 1`), and its export.
    ("xla_steptrace", "vm.xplane.pb", "step_annotation", "train_step", range(2, 12)),
    ("xla_steptrace", "vm.trace.json.gz", "step_annotation", "train_step", range(2, 12)),
    ("xla_dynamic_shapes", "vm.xplane.pb", "step_annotation", "train_step", range(2, 12)),
    ("xla_dynamic_shapes", "vm.trace.json.gz", "step_annotation", "train_step", range(2, 12)),
    # The held-out jobs (PROVENANCE.md), checked once the rule was written.
    ("torch_input_bound_de", "worker0.*.pt.trace.json.gz", "profiler_step", PROFILER, range(2, 10)),
    ("hf_trainer", "worker0.1796612004099849968.pt.trace.json.gz", "profiler_step", PROFILER, range(2, 8)),
    # The schedule's second cycle: a second file holding one step.
    ("hf_trainer", "worker0.1796612004651413885.pt.trace.json.gz", "profiler_step", PROFILER, [10]),
    # The user's own unnumbered `train_step`, the one top-level call of each iteration.
    ("torch_user_steps", "worker0.*.pt.trace.json.gz", "inferred", "train_step", range(1, 11)),
    ("jax_flax_unmarked", "vm.xplane.pb", "inferred", "PjitFunction(train_step)", range(1, 11)),
    ("jax_flax_unmarked", "vm.trace.json.gz", "inferred", "PjitFunction(train_step)", range(1, 11)),
    ("jax_input_bound_de", "vm.xplane.pb", "step_annotation", "Schritt", range(2, 12)),
    ("jax_input_bound_de", "vm.trace.json.gz", "step_annotation", "Schritt", range(2, 12)),
    ("tf_custom_loop", "vm.xplane.pb", "step_annotation", "train", range(2, 12)),
]


def job_file(job: str, pattern: str) -> pathlib.Path:
    (path,) = (JOBS / job).rglob(pattern)
    return path


def job_events(job: str, pattern: str) -> HostEvents:
    """The job file's classified events, read by its reader once (`host_events` caches them)."""
    return host_events(job_file(job, pattern))


@functools.cache
def found_steps(job: str, pattern: str) -> steps.Steps:
    return steps.find(job_events(job, pattern), None)


@pytest.mark.parametrize(
    ("job", "pattern", "kind", "marker", "numbers"),
    EXPECTED,
    ids=[f"{job}:{pattern}" for job, pattern, *_ in EXPECTED],
)
def test_steps_of_every_job_match_its_facts(job, pattern, kind, marker, numbers) -> None:
    found = found_steps(job, pattern)
    assert found.kind == kind
    assert found.marker == marker
    assert found.numbers.tolist() == list(numbers)
    assert (found.start_ps[1:] >= found.end_ps[:-1]).all() and (found.end_ps > found.start_ps).all()


def test_inferred_steps_say_what_repeats_and_offer_it_by_name() -> None:
    found = found_steps("torch_unmarked", "worker0.*.pt.trace.json.gz")
    assert found.source.startswith(
        "inferred from 10 repetitions of the host call pattern starting with `Optimizer.zero_grad#Adam.zero_grad`"
    )
    assert "25 top-level calls" in found.source
    user = found_steps("torch_user_steps", "worker0.*.pt.trace.json.gz")
    assert "starting with `train_step` (1 top-level call on" in user.source
    assert user.candidates == ("train_step",)
    asked = steps.find(job_events("torch_user_steps", "worker0.*.pt.trace.json.gz"), "train_step")
    assert asked.kind == "user_annotation" and asked.numbers.tolist() == list(range(10))
    flax = found_steps("jax_flax_unmarked", "vm.xplane.pb")
    assert flax.source == "inferred from 10 jitted calls of `PjitFunction(train_step)` (no step markers)"


def test_a_jitted_program_run_again_and_again_gives_the_steps_when_the_markers_are_not_used() -> None:
    # The same capture without its markers: what repeats is the jitted update, 10 times.
    inferred = step_inference.infer(job_events("jax_step_train", "vm.xplane.pb"))
    assert inferred.start_ps.shape[0] == 10 and inferred.from_host
    assert inferred.source == "inferred from 10 jitted calls of `PjitFunction(update)` (no step markers)"


def test_lightning_steps_cut_batches_but_follow_the_profiler() -> None:
    found = found_steps("lightning_fit", "worker0.*.pt.trace.json.gz")
    assert found.source == "ProfilerStep#N markers (PyTorch profiler)" and found.candidates == ()
