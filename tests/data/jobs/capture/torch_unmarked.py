"""torch_unmarked: PyTorch CPU loop profiled with no step marking and no labels of the user's.

`torch.profiler.profile` with no schedule and no `prof.step()`, no `record_function`: the trace holds
only the ops of the 10 iterations (and the `Optimizer.zero_grad#SGD.zero_grad` /
`Optimizer.step#SGD.step` annotations torch.optim writes itself). Steps must be inferred from the
repetition. Clean (the first iteration is a warm-up and is in the trace).

Usage: python torch_unmarked.py OUTDIR
"""

import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, tensorboard_trace_handler

STEPS = 10


def main(outdir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 10))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    data = [(torch.randn(32, 256), torch.randint(0, 10, (32,))) for _ in range(STEPS)]
    with profile(
        activities=[ProfilerActivity.CPU],
        on_trace_ready=tensorboard_trace_handler(outdir, worker_name="worker0", use_gzip=True),
    ):
        for x, y in data:
            opt.zero_grad()
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main(sys.argv[1])
