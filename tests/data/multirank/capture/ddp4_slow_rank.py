"""Capture: DDP, 4 ranks, gloo on CPU (127.0.0.1), rank 2 a known straggler.

Usage: python ddp4_slow_rank.py OUT_DIR

Every rank runs 8 steps of a tiny MLP under torch.profiler with
schedule(wait=1, warmup=1, active=6), so steps 2..7 are recorded, and writes
OUT_DIR/rank{r}.<ms>.pt.trace.json.gz through tensorboard_trace_handler.

Labelled phases on every rank, every step: load_batch, forward, backward,
optimizer. The built-in delay: load_batch sleeps SLOW_S (0.020 s) on SLOW_RANK
(2) and FAST_S (0.002 s) on every other rank, so in every steady step rank 2
reaches the gradient all-reduce ~18 ms after the others, which wait for it.
"""

import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler

WORLD = 4
SLOW_RANK = 2
SLOW_S = 0.020
FAST_S = 0.002
STEPS = 8  # wait=1 + warmup=1 + active=6
SEED = 0


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, world, port, out_dir, slow_rank):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(SEED)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128),
        torch.nn.ReLU(),
        torch.nn.Linear(128, 128),
        torch.nn.ReLU(),
        torch.nn.Linear(128, 10),
    )
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(SEED + rank)
    delay = SLOW_S if rank == slow_rank else FAST_S
    dist.barrier()
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=6),
        on_trace_ready=tensorboard_trace_handler(out_dir, worker_name=f"rank{rank}", use_gzip=True),
        record_shapes=True,
    ) as prof:
        for _ in range(STEPS):
            with record_function("load_batch"):
                time.sleep(delay)
                x = torch.randn(32, 64, generator=gen)
                y = torch.randint(0, 10, (32,), generator=gen)
            with record_function("forward"):
                loss = loss_fn(ddp(x), y)
            with record_function("backward"):
                loss.backward()  # DDP's gradient all-reduce runs here
            with record_function("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


def main(out_dir, slow_rank=SLOW_RANK):
    os.makedirs(out_dir, exist_ok=True)
    mp.spawn(worker, args=(WORLD, _free_port(), out_dir, slow_rank), nprocs=WORLD, join=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
