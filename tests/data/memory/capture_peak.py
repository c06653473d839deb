"""Capture a tiny PyTorch CPU training loop whose memory peak sits in the backward of step 3.

Run with torch 2.13.0 (CPU wheel) in a venv of its own, never by the tests:

    TORCH_VENV/bin/python tests/data/memory/capture_peak.py OUT_DIR

A two-layer MLP trains for 6 steps under `torch.profiler.profile(profile_memory=True,
record_shapes=True)`, steps 1–5 recorded (`schedule(wait=0, warmup=1, active=5)`: step 0 warms up).
The second layer's backward goes through `ScaledBackward`, which in step 3 only allocates a
`PEAK_TEMPORARY_BYTES` temporary (`torch.ones` of 4 Mi float32 = 16 MiB), reduces it and frees it, so
the capture's allocated-bytes peak is inside `ProfilerStep#3`, in the backward, under `aten::ones`.
"""

import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler

PEAK_STEP = 3
PEAK_TEMPORARY_BYTES = 16 * 1024 * 1024


class ScaledBackward(torch.autograd.Function):
    """Identity forward; its backward allocates a large temporary in step `PEAK_STEP` only."""

    step = 0

    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def]
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):  # type: ignore[no-untyped-def]
        if ScaledBackward.step == PEAK_STEP:
            with record_function("big_backward_temporary"):
                temporary = torch.ones(PEAK_TEMPORARY_BYTES // 4)
                scale = temporary.sum() / temporary.numel()
                del temporary
            return grad * scale
        return grad


def main(out_dir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(32, 64), torch.randn(32, 8)
    with profile(
        activities=[ProfilerActivity.CPU],
        profile_memory=True,
        record_shapes=True,
        with_stack=False,
        schedule=schedule(wait=0, warmup=1, active=5, repeat=1),
        on_trace_ready=tensorboard_trace_handler(out_dir, worker_name="peak", use_gzip=True),
    ) as prof:
        for step in range(6):
            ScaledBackward.step = step
            optimizer.zero_grad(set_to_none=True)
            hidden = model[1](model[0](inputs))
            loss = nn.functional.mse_loss(model[2](ScaledBackward.apply(hidden)), targets)
            loss.backward()
            optimizer.step()
            prof.step()


if __name__ == "__main__":
    main(sys.argv[1])
