"""torch_user_steps: PyTorch CPU loop whose steps the user marks with own `record_function("train_step")`.

No `prof.step()` and no schedule: the profiler records the whole loop (10 iterations, the first one a
warm-up) and each iteration is wrapped in `record_function("train_step")` (the same name every step,
no step number), with nested labels "fwd", "loss", "bwd", "opt". Clean.

Usage: python torch_user_steps.py OUTDIR
"""

import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, tensorboard_trace_handler

STEPS = 10


def main(outdir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = nn.Sequential(nn.Conv1d(4, 16, 5, padding=2), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 64, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    data = [(torch.randn(16, 4, 64), torch.randint(0, 10, (16,))) for _ in range(STEPS)]
    with profile(
        activities=[ProfilerActivity.CPU],
        on_trace_ready=tensorboard_trace_handler(outdir, worker_name="worker0", use_gzip=True),
    ):
        for x, y in data:
            with record_function("train_step"):
                with record_function("fwd"):
                    out = net(x)
                with record_function("loss"):
                    loss = loss_fn(out, y)
                with record_function("bwd"):
                    opt.zero_grad()
                    loss.backward()
                with record_function("opt"):
                    opt.step()


if __name__ == "__main__":
    main(sys.argv[1])
