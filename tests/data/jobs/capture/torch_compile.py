"""torch_compile: a `torch.compile`d training step (inductor, CPU), compiled during the profiled steps.

The whole step (forward, loss, backward, SGD) is one function under `torch.compile` (default inductor
backend, C++ codegen on the CPU). The profiler's schedule records from the first step on,
`schedule(wait=0, warmup=0, active=10, repeat=1)` + `prof.step()` (`ProfilerStep#0`..`#9`; without a schedule
torch writes no `ProfilerStep` at all), so the first step holds the Dynamo tracing / AOT autograd /
inductor compilation and the later ones the compiled code. The inductor cache should be cold
(run_all.sh points `TORCHINDUCTOR_CACHE_DIR` at a fresh folder). No user labels. Known problem: compilation in the
warm-up (the first step is orders of magnitude longer than the steady ones; it is not a slow step
to fix).

Usage: python torch_compile.py OUTDIR
"""

import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

STEPS = 10


def main(outdir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def forward_backward(x, y):
        loss = loss_fn(net(x), y)
        loss.backward()
        return loss

    compiled = torch.compile(forward_backward)
    data = [(torch.randn(32, 64), torch.randint(0, 10, (32,))) for _ in range(STEPS)]
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=0, warmup=0, active=STEPS, repeat=1),
        on_trace_ready=tensorboard_trace_handler(outdir, worker_name="worker0", use_gzip=True),
    ) as prof:
        for x, y in data:
            opt.zero_grad()
            compiled(x, y)
            opt.step()
            prof.step()


if __name__ == "__main__":
    main(sys.argv[1])
