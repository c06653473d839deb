"""Capture a tiny PyTorch CPU training loop that leaks memory: every step keeps one more tensor.

Run with torch 2.13.0 (CPU wheel) in a venv of its own, never by the tests:

    TORCH_VENV/bin/python tests/data/memory/capture_leak.py OUT_DIR

A two-layer MLP trains for 6 steps under `torch.profiler.profile(profile_memory=True,
record_shapes=True)`, steps 1–5 recorded (step 0 warms up). Each step appends `hidden.detach() * 1`
(the activation of shape [256, 1024] float32, `LEAK_BYTES_PER_STEP` = 1 MiB, made by `aten::mul`) to
a list that is never cleared, so allocated bytes grow by about 1 MiB a step and those blocks are
never freed inside the capture.
"""

import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

LEAK_BYTES_PER_STEP = 256 * 1024 * 4


def main(out_dir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(256, 64), torch.randn(256, 8)
    kept: list[torch.Tensor] = []
    with profile(
        activities=[ProfilerActivity.CPU],
        profile_memory=True,
        record_shapes=True,
        with_stack=False,
        schedule=schedule(wait=0, warmup=1, active=5, repeat=1),
        on_trace_ready=tensorboard_trace_handler(out_dir, worker_name="leak", use_gzip=True),
    ) as prof:
        for _ in range(6):
            optimizer.zero_grad(set_to_none=True)
            hidden = model[1](model[0](inputs))
            kept.append(hidden.detach() * 1)
            loss = nn.functional.mse_loss(model[2](hidden), targets)
            loss.backward()
            optimizer.step()
            prof.step()


if __name__ == "__main__":
    main(sys.argv[1])
