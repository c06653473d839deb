"""torch_plain_en: plain PyTorch CPU training loop, the documented way.

Steps: `torch.profiler.schedule(wait=1, warmup=1, active=8)` + `prof.step()` at the end of every
iteration (Kineto writes `ProfilerStep#N`). Phases labelled with `record_function` in English:
"load_batch", "forward", "backward", "optimizer". Batches are prepared in advance. Clean.

Usage: python torch_plain_en.py OUTDIR
"""

import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler

WAIT, WARMUP, ACTIVE = 1, 1, 8


def main(outdir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    steps = WAIT + WARMUP + ACTIVE
    data = [(torch.randn(64, 256), torch.randint(0, 10, (64,))) for _ in range(steps)]
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=tensorboard_trace_handler(outdir, worker_name="worker0", use_gzip=True),
    ) as prof:
        for i in range(steps):
            with record_function("load_batch"):
                x, y = data[i]
            with record_function("forward"):
                loss = loss_fn(net(x), y)
            with record_function("backward"):
                opt.zero_grad()
                loss.backward()
            with record_function("optimizer"):
                opt.step()
            prof.step()


if __name__ == "__main__":
    main(sys.argv[1])
