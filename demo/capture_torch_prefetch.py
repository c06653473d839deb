"""Capture the fixed twin of `capture_torch_input.py`: the same slow-decoding dataset and model, with
the batches prefetched by worker threads.

`PREFETCH` batches are always being read ahead, each by its own worker thread (a thread pool: the
"decoding" sleeps, so threads overlap it as DataLoader worker processes would, without the process
start-up and pickling that make worker processes erratic on a small shared machine). Together the
workers deliver a batch faster than a step trains on one, so the training thread finds each batch
ready: its `batch_read` (waiting for the next batch) is short and the Overview raises no finding.
The workers' own reading shows on their threads, where it overlaps the step instead of delaying it.

Usage: python demo/capture_torch_prefetch.py LOGDIR [--run pytorch_cpu_prefetch_input]
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import torch
from torch.profiler import record_function

from capture_torch_input import BATCH, SlowDecodeDataset, capture

PREFETCH = 4


def prefetched_batches(steps: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Batches read ahead by PREFETCH worker threads, handed over in order."""
    dataset = SlowDecodeDataset(steps * BATCH)

    def read(batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        with record_function("prefetch_worker_read"):
            samples = [dataset[i] for i in range(batch * BATCH, (batch + 1) * BATCH)]
            return torch.stack([s[0] for s in samples]), torch.stack([s[1] for s in samples])

    with ThreadPoolExecutor(max_workers=PREFETCH) as pool:
        pending: collections.deque[Future] = collections.deque(pool.submit(read, b) for b in range(PREFETCH))
        for batch in range(steps):
            with record_function("batch_read"):
                ready = pending.popleft().result()
            if batch + PREFETCH < steps:
                pending.append(pool.submit(read, batch + PREFETCH))
            yield ready


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir", help="TensorBoard logdir; the run folder is created inside it")
    parser.add_argument(
        "--run", default="pytorch_cpu_prefetch_input", help="run folder name (default: %(default)s)"
    )
    args = parser.parse_args()
    capture(args.logdir, args.run, prefetched_batches)


if __name__ == "__main__":
    main()
