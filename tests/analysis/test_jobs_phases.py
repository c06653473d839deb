"""The phase names of every job of tests/data/jobs (held-out ones included, checked after the rule
was written), locked: a change to the phase rule shows here job by job."""

from __future__ import annotations

import pytest

from tests.analysis.test_phases import find

OPTIM = "torch.optim"
AUTOGRAD = "autograd::engine::evaluate_function"
LIGHTNING = "[pl][profile]"
XLA_LABELS = ["load_batch", "forward", "backward", "optimizer"]
# job, file pattern, step_name (None: the steps the profile marks), phase names, who wrote them
JOBS = [
    ("torch_plain_en", "*", None, ["load_batch", "forward", "backward", "optimizer"], "your labels"),
    (
        "torch_input_bound_zh",
        "*",
        None,
        ["unknown", "unknown (2)", "unknown (3)", "unknown (4)"],
        "your labels",
    ),
    (
        "torch_input_prefetched_zh",
        "*",
        None,
        ["unknown", "unknown (2)", "unknown (3)", "unknown (4)"],
        "your labels",
    ),
    ("torch_host_wait", "*", None, ["get_batch", "fwd_bwd", "wait_for_peer", "apply_update"], "your labels"),
    ("torch_unmarked", "*", None, [], None),
    (
        "torch_ddp_gloo",
        "rank0*",
        None,
        [
            "Optimizer.zero_grad#SGD.zero_grad",
            "DistributedDataParallel.forward",
            AUTOGRAD,
            "Optimizer.step#SGD.step",
        ],
        "framework phases",
    ),
    (
        "torch_ddp_gloo",
        "rank1*",
        None,
        [
            "Optimizer.zero_grad#SGD.zero_grad",
            "DistributedDataParallel.forward",
            AUTOGRAD,
            "Optimizer.step#SGD.step",
        ],
        "framework phases",
    ),
    (
        "lightning_fit",
        "*",
        None,
        [
            f"{LIGHTNING}[LightningModule]Classifier.on_before_zero_grad",
            f"{LIGHTNING}[LightningModule]Classifier.optimizer_zero_grad",
            f"{LIGHTNING}[Strategy]SingleDeviceStrategy.backward",
            f"{LIGHTNING}[LightningModule]Classifier.on_before_optimizer_step",
            f"{LIGHTNING}[LightningModule]Classifier.configure_gradient_clipping",
            f"{LIGHTNING}[LightningModule]Classifier.on_train_batch_end",
            f"{LIGHTNING}[_TrainingEpochLoop].train_dataloader_next",
            f"{LIGHTNING}[LightningModule]Classifier.on_before_batch_transfer",
            f"{LIGHTNING}[Strategy]SingleDeviceStrategy.batch_to_device",
            f"{LIGHTNING}[LightningModule]Classifier.on_train_batch_start",
            f"{LIGHTNING}[Strategy]SingleDeviceStrategy.on_train_batch_start",
            f"{LIGHTNING}run_training_batch",
        ],
        "framework phases (Lightning)",
    ),
    (
        "torch_compile",
        "*",
        None,
        ["Optimizer.zero_grad#SGD.zero_grad", "Optimizer.step#SGD.step"],
        "framework phases",
    ),
    (
        "torch_repeated_copy",
        "*",
        None,
        ["Optimizer.zero_grad#SGD.zero_grad", AUTOGRAD, "Optimizer.step#SGD.step"],
        "framework phases",
    ),
    ("jax_step_train", "*", "train", [], "no labels"),
    ("jax_train_step_scopes", "*", "train_step", ["data", "update"], "your labels"),
    ("tf_keras_fit", "*", "Profiled batch", [], "no labels"),
    # PyTorch/XLA: the user's `xp.Trace` labels, then `StepMarker`, the TraceMe that PyTorch/XLA
    # itself writes around the step's graph sync (`torch_xla.sync()` as `xp.StepTrace` exits)
    (
        "xla_steptrace",
        "*",
        None,
        [*XLA_LABELS, "StepMarker"],
        "your labels and framework phases (PyTorch/XLA)",
    ),
    (
        "xla_dynamic_shapes",
        "*",
        None,
        [*XLA_LABELS, "StepMarker"],
        "your labels and framework phases (PyTorch/XLA)",
    ),
    # held out (checked after the rule was written; FACTS.md, last section)
    (
        "torch_input_bound_de",
        "*",
        None,
        ["Daten laden", "unknown", "unknown (2)", "Optimierer"],
        "your labels",
    ),
    (
        "hf_trainer",
        "*1796612004099849968*",
        None,
        [
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            AUTOGRAD,
            "Optimizer.step#AdamW.step",
        ],
        "framework phases (DataLoader, autograd backward, torch.optim)",
    ),
    ("hf_trainer", "*1796612004651413885*", None, [], "no labels"),
    ("torch_user_steps", "*", "train_step", ["fwd", "loss", "bwd", "opt"], "your labels"),
    ("jax_flax_unmarked", "*", None, [], None),
    ("jax_input_bound_de", "*", "Schritt", ["Daten laden", "Aktualisierung"], "your labels"),
    ("tf_custom_loop", "*", "train", ["cargar_datos", "actualización"], "your labels"),
]


@pytest.mark.parametrize(
    ("job", "pattern", "step_name", "names", "source"),
    JOBS,
    ids=[f"{job}-{pattern}" if pattern != "*" else job for job, pattern, *_ in JOBS],
)
def test_phase_names_of_every_job(job, pattern, step_name, names, source) -> None:
    _, phased = find(job, step_name, pattern)
    assert phased.names == names
    if source is not None:
        assert phased.source.startswith(source)
