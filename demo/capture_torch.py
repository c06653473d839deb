"""Capture a real PyTorch profiler (Kineto) trace on CPU: a small CNN trained on synthetic images.

This is the loop the PyTorch profiler documentation recommends: `torch.profiler.profile` with a
`schedule(wait, warmup, active, repeat)` so that only a few steady-state steps are recorded,
`prof.step()` at the end of every step, and `tensorboard_trace_handler` writing one gzipped trace per
recorded cycle as `<run>/<worker>.<timestamp_ns>.pt.trace.json.gz`. With `repeat=2` the run gets two
trace files, i.e. two profile sessions of the same job.

`record_function` labels split each step into the phases a reader wants to tell apart:

    batch_read (DataLoader) -> transfer (to the device, uint8 -> float) -> train (forward, backward, optimizer)

Shapes, memory allocations and Python call stacks are recorded too, since the trace views show them.

Usage: python demo/capture_torch.py LOGDIR [--run pytorch_cpu_training] [--worker worker0]
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler
from torch.utils.data import DataLoader, TensorDataset

# One cycle = skip WAIT steps, run WARMUP steps with the profiler on but discarded, record ACTIVE steps.
WAIT, WARMUP, ACTIVE, REPEAT = 1, 1, 2, 2
BATCH = 16
IMAGE = 16
CLASSES = 10


class SmallCNN(nn.Module):
    """Two conv blocks and a linear head: enough distinct ops (conv, pool, matmul) to read a trace."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Linear(16 * (IMAGE // 4) ** 2, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def synthetic_loader(num_batches: int) -> DataLoader:
    """uint8 images with labels, as a decoded image dataset would hand them to the training loop."""
    generator = torch.Generator().manual_seed(0)
    images = torch.randint(
        0, 256, (num_batches * BATCH, 3, IMAGE, IMAGE), dtype=torch.uint8, generator=generator
    )
    labels = torch.randint(0, CLASSES, (num_batches * BATCH,), generator=generator)
    return DataLoader(TensorDataset(images, labels), batch_size=BATCH, shuffle=True, generator=generator)


def main() -> None:
    parser = argparse.ArgumentParser(description="Capture a PyTorch CPU training profile (Kineto JSON).")
    parser.add_argument("logdir", help="TensorBoard logdir; the run folder is created inside it")
    parser.add_argument(
        "--run", default="pytorch_cpu_training", help="run folder name (default: %(default)s)"
    )
    parser.add_argument(
        "--worker",
        default="worker0",
        help="worker name in the trace file names; PyTorch's own default is <hostname>_<pid> (default: %(default)s)",
    )
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    model = SmallCNN().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    steps = (WAIT + WARMUP + ACTIVE) * REPEAT
    run_dir = os.path.join(args.logdir, args.run)

    started = time.perf_counter()
    with profile(
        activities=activities,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=REPEAT),
        on_trace_ready=tensorboard_trace_handler(run_dir, worker_name=args.worker, use_gzip=True),
        record_shapes=True,
        profile_memory=True,
        with_stack=True,
    ) as prof:
        batches = iter(synthetic_loader(steps))
        for _ in range(steps):
            with record_function("batch_read"):
                images, labels = next(batches)
            with record_function("transfer"):
                # On CPU this is only the dtype conversion; on a GPU it is also the host-to-device copy.
                images = images.to(device, non_blocking=True).float().div_(255)
                labels = labels.to(device, non_blocking=True)
            with record_function("train"):
                optimizer.zero_grad(set_to_none=True)
                loss = loss_fn(model(images), labels)
                loss.backward()
                optimizer.step()
            prof.step()
    elapsed = time.perf_counter() - started
    print(
        f"torch {torch.__version__} on {device}: {steps} steps, {REPEAT} recorded cycles of {ACTIVE} steps, "
        f"final loss {loss.item():.4f}, {elapsed:.2f} s -> {run_dir}"
    )


if __name__ == "__main__":
    main()
