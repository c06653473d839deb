"""Capture a PyTorch CPU profile of a training loop that rebuilds and copies a constant every step.

Each step builds the same fixed table (a feature weighting that never changes) on the host and
copies it to the model's device with `.to(device, torch.float32)` before using it. On a GPU that is a
host→device memcpy per step; on this CPU-only machine the copy is the dtype conversion of the
`.to()` (float64 → float32), which the profiler records as the same `aten::to` → `aten::_to_copy` →
`aten::copy_` ops with the same input shapes in every step. The Overview raises `repeated_copy`.

`schedule(wait=1, warmup=1, active=ACTIVE)`, shapes recorded, one trace file.

Usage: python demo/capture_torch_copy.py LOGDIR [--run pytorch_cpu_repeated_copy]
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler

WAIT, WARMUP, ACTIVE = 1, 1, 6
BATCH = 64
FEATURES = 1024
CLASSES = 10


def feature_weights() -> torch.Tensor:
    """The constant rebuilt every step: the same values each time, in float64 on the host."""
    ramp = torch.linspace(0.5 / FEATURES, 1.5 / FEATURES, FEATURES * FEATURES, dtype=torch.float64)
    return ramp.reshape(FEATURES, FEATURES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir", help="TensorBoard logdir; the run folder is created inside it")
    parser.add_argument(
        "--run", default="pytorch_cpu_repeated_copy", help="run folder name (default: %(default)s)"
    )
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    device = torch.device("cpu")
    net = nn.Sequential(nn.Linear(FEATURES, 256), nn.ReLU(), nn.Linear(256, CLASSES)).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(0)
    steps = WAIT + WARMUP + ACTIVE
    inputs = torch.randn(steps, BATCH, FEATURES, generator=generator)
    labels = torch.randint(0, CLASSES, (steps, BATCH), generator=generator)
    run_dir = os.path.join(args.logdir, args.run)

    started = time.perf_counter()
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=tensorboard_trace_handler(run_dir, worker_name="worker0", use_gzip=True),
        record_shapes=True,
    ) as prof:
        for step in range(steps):
            with record_function("batch_read"):
                batch, target = inputs[step], labels[step]
            with record_function("weights"):
                # The mistake: the same constant is built and copied in every step.
                weights = feature_weights().to(device, torch.float32)
            with record_function("train"):
                optimizer.zero_grad(set_to_none=True)
                loss = loss_fn(net(batch @ weights), target)
                loss.backward()
                optimizer.step()
            prof.step()
    elapsed = time.perf_counter() - started
    print(
        f"torch {torch.__version__}: {steps} steps ({ACTIVE} recorded), final loss {loss.item():.4f}, "
        f"{elapsed:.2f} s -> {run_dir}"
    )


if __name__ == "__main__":
    main()
