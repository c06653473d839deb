"""torch_input_bound_zh: PyTorch CPU loop whose data-loading phase takes ~80 % of every step.

Steps: `schedule(wait=1, warmup=1, active=8)` + `prof.step()` (`ProfilerStep#N`). Phases labelled with
`record_function` in Chinese: "读取批次" (read batch), "前向传播" (forward), "反向传播" (backward),
"优化器更新" (optimizer update). Inside "读取批次" every batch is built in pure Python (a list of
random floats turned into a tensor) after a 25 ms sleep standing for a slow remote read.
Known problem: input-bound. Its fixed twin is torch_input_prefetched_zh.py.
Note: torch 2.13's Kineto writes non-ASCII `record_function` names as "unknown" (see ../FACTS.md).

Usage: python torch_input_bound_zh.py OUTDIR
"""

import random
import sys
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler

WAIT, WARMUP, ACTIVE = 1, 1, 8
BATCH, FEATURES = 32, 256
READ_S = 0.025


def slow_batch(rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
    time.sleep(READ_S)
    rows = [[rng.gauss(0.0, 1.0) for _ in range(FEATURES)] for _ in range(BATCH)]
    labels = [rng.randrange(10) for _ in range(BATCH)]
    return torch.tensor(rows), torch.tensor(labels)


def main(outdir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = random.Random(0)
    net = nn.Sequential(
        nn.Linear(FEATURES, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    )
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=tensorboard_trace_handler(outdir, worker_name="worker0", use_gzip=True),
    ) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            with record_function("读取批次"):
                x, y = slow_batch(rng)
            with record_function("前向传播"):
                loss = loss_fn(net(x), y)
            with record_function("反向传播"):
                opt.zero_grad()
                loss.backward()
            with record_function("优化器更新"):
                opt.step()
            prof.step()


if __name__ == "__main__":
    main(sys.argv[1])
