"""torch_ddp_gloo: torch.distributed DistributedDataParallel with the gloo backend, 2 ranks on the CPU.

Two processes (`torch.multiprocessing.spawn`, rendezvous on 127.0.0.1), each training its DDP copy of
a small MLP on its own shard; each rank profiles itself with `schedule(wait=1, warmup=1, active=6)` +
`prof.step()` and writes its own trace (`rank0.*.pt.trace.json.gz`, `rank1.*.pt.trace.json.gz`).
No user labels (DDP and gloo write their own). Clean.

Usage: python torch_ddp_gloo.py OUTDIR
"""

import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

WAIT, WARMUP, ACTIVE = 1, 1, 6
WORLD = 2


def run(rank: int, outdir: str, port: int) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DDP(nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(rank)
    steps = WAIT + WARMUP + ACTIVE
    data = [
        (torch.randn(32, 128, generator=g), torch.randint(0, 10, (32,), generator=g)) for _ in range(steps)
    ]
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=tensorboard_trace_handler(outdir, worker_name=f"rank{rank}", use_gzip=True),
    ) as prof:
        for x, y in data:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    mp.spawn(run, args=(sys.argv[1], free_port()), nprocs=WORLD, join=True)
