"""Capture: FSDP2 (torch.distributed.fsdp.fully_shard), 2 ranks, gloo on CPU (127.0.0.1).

Usage: python fsdp2_or_tp.py OUT_DIR

A tiny 3-layer MLP, each Linear wrapped by fully_shard and then the root, so every
step all-gathers each layer's parameters before forward (and again before backward,
reshard_after_forward=True) and reduce-scatters its gradients in backward.
8 steps under torch.profiler with schedule(wait=1, warmup=1, active=6); each rank
writes OUT_DIR/rank{r}.<ns>.pt.trace.json.gz through tensorboard_trace_handler.
Labelled phases: load_batch (0.002 s sleep on every rank, no straggler),
forward, backward, optimizer.
"""

import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler

WORLD = 2
DELAY_S = 0.002
STEPS = 8
SEED = 0


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, world, port, out_dir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(SEED)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128),
        torch.nn.ReLU(),
        torch.nn.Linear(128, 128),
        torch.nn.ReLU(),
        torch.nn.Linear(128, 10),
    )
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(SEED + rank)
    dist.barrier()
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=6),
        on_trace_ready=tensorboard_trace_handler(out_dir, worker_name=f"rank{rank}", use_gzip=True),
        record_shapes=True,
    ) as prof:
        for _ in range(STEPS):
            with record_function("load_batch"):
                time.sleep(DELAY_S)
                x = torch.randn(32, 64, generator=gen)
                y = torch.randint(0, 10, (32,), generator=gen)
            with record_function("forward"):
                loss = loss_fn(model(x), y)
            with record_function("backward"):
                loss.backward()
            with record_function("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    mp.spawn(worker, args=(WORLD, _free_port(), out_dir), nprocs=WORLD, join=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
