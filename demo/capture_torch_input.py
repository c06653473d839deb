"""Capture a PyTorch CPU profile of a training loop whose input pipeline is slower than its step.

The dataset "decodes" each sample slowly (a sleep standing for JPEG decoding or a remote read) and
the DataLoader reads it on the training thread (`num_workers=0`), so every step first waits for its
batch: the Overview shows a large input part and the `input_bound` finding. Its fixed twin,
`capture_torch_prefetch.py`, runs the same model on the same data with prefetching worker threads,
so the training thread finds each batch ready.

Both use `schedule(wait=1, warmup=1, active=ACTIVE)`: one trace file per run with ACTIVE profiler
steps, shapes recorded (no stacks or memory events, to keep the file small).

Usage: python demo/capture_torch_input.py LOGDIR [--run pytorch_cpu_slow_input]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Iterator

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler
from torch.utils.data import DataLoader, Dataset

WAIT, WARMUP, ACTIVE = 1, 1, 6
BATCH = 16
FEATURES = 512
HIDDEN = 1024
CLASSES = 10
DECODE_S = 0.00075  # per sample: 12 ms per batch of 16


class SlowDecodeDataset(Dataset):
    """Synthetic samples that take DECODE_S each to "decode" (sleep, so it costs no CPU)."""

    def __init__(self, samples: int) -> None:
        generator = torch.Generator().manual_seed(0)
        self.inputs = torch.randn(samples, FEATURES, generator=generator)
        self.labels = torch.randint(0, CLASSES, (samples,), generator=generator)

    def __len__(self) -> int:
        return self.labels.shape[0]

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(DECODE_S)
        return self.inputs[index], self.labels[index]


def model() -> nn.Module:
    """An MLP whose step takes a few ms on one CPU core (more than a batch takes 4 workers to decode),
    with several ops sharing the time."""
    return nn.Sequential(
        nn.Linear(FEATURES, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.LayerNorm(HIDDEN),
        nn.Linear(HIDDEN, HIDDEN // 2),
        nn.GELU(),
        nn.Linear(HIDDEN // 2, CLASSES),
    )


def slow_batches(steps: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The batches as a DataLoader reading on the calling thread delivers them."""
    return iter(DataLoader(SlowDecodeDataset(steps * BATCH), batch_size=BATCH, num_workers=0))


def capture(
    logdir: str, run: str, batches: Callable[[int], Iterator[tuple[torch.Tensor, torch.Tensor]]]
) -> None:
    """Train WAIT + WARMUP + ACTIVE steps under the profiler, taking the batches from `batches(steps)`."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    steps = WAIT + WARMUP + ACTIVE
    net = model()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    run_dir = os.path.join(logdir, run)
    source = batches(steps)
    started = time.perf_counter()
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=tensorboard_trace_handler(run_dir, worker_name="worker0", use_gzip=True),
        record_shapes=True,
    ) as prof:
        for _ in range(steps):
            inputs, labels = next(source)
            with record_function("train"):
                optimizer.zero_grad(set_to_none=True)
                loss = loss_fn(net(inputs), labels)
                loss.backward()
                optimizer.step()
            prof.step()
    elapsed = time.perf_counter() - started
    print(
        f"torch {torch.__version__}: {steps} steps ({ACTIVE} recorded), batches from {batches.__name__}, "
        f"final loss {loss.item():.4f}, {elapsed:.2f} s -> {run_dir}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir", help="TensorBoard logdir; the run folder is created inside it")
    parser.add_argument(
        "--run", default="pytorch_cpu_slow_input", help="run folder name (default: %(default)s)"
    )
    args = parser.parse_args()
    capture(args.logdir, args.run, slow_batches)


if __name__ == "__main__":
    main()
