"""torch_repeated_copy: PyTorch CPU loop that copies the same constant tensor into a new tensor every step.

Every step rebuilds a 512x512 float64 "positional table" (a constant) and converts it with
`.to(torch.float32)` (a new tensor each time) before using it. Known problem: repeated copy of a
constant (it should be made once, outside the loop).
Steps: `schedule(wait=1, warmup=1, active=8)` + `prof.step()` (`ProfilerStep#N`); no phase labels.

Usage: python torch_repeated_copy.py OUTDIR
"""

import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

WAIT, WARMUP, ACTIVE = 1, 1, 8
TABLE = torch.linspace(0.0, 1.0, 512 * 512, dtype=torch.float64).reshape(512, 512)


def main(outdir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    steps = WAIT + WARMUP + ACTIVE
    data = [(torch.randn(32, 512), torch.randint(0, 10, (32,))) for _ in range(steps)]
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=tensorboard_trace_handler(outdir, worker_name="worker0", use_gzip=True),
    ) as prof:
        for x, y in data:
            table = TABLE.clone().to(torch.float32)  # the same constant, copied anew every step
            loss = loss_fn(net(x @ table), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()


if __name__ == "__main__":
    main(sys.argv[1])
