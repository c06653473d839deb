"""torch_host_wait: PyTorch CPU loop whose every step waits on the host inside a label "wait_for_peer".

Stands for a step that blocks on another process (a parameter server, a peer's gradient): a 15 ms
`time.sleep` inside `record_function("wait_for_peer")` between backward and the optimizer.
Known problem: a host wait (the CPU is idle, no op runs, for a large part of each step).
Steps: `schedule(wait=2, warmup=1, active=8)` + `prof.step()` (`ProfilerStep#N`); phases labelled
with `record_function`: "get_batch", "fwd_bwd", "wait_for_peer", "apply_update".

Usage: python torch_host_wait.py OUTDIR
"""

import sys
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler

WAIT, WARMUP, ACTIVE = 2, 1, 8
PEER_S = 0.015


def main(outdir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    steps = WAIT + WARMUP + ACTIVE
    data = [(torch.randn(32, 256), torch.randint(0, 10, (32,))) for _ in range(steps)]
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=tensorboard_trace_handler(outdir, worker_name="worker0", use_gzip=True),
    ) as prof:
        for i in range(steps):
            with record_function("get_batch"):
                x, y = data[i]
            with record_function("fwd_bwd"):
                opt.zero_grad()
                loss_fn(net(x), y).backward()
            with record_function("wait_for_peer"):
                time.sleep(PEER_S)
            with record_function("apply_update"):
                opt.step()
            prof.step()


if __name__ == "__main__":
    main(sys.argv[1])
