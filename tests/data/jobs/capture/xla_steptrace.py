"""xla_steptrace: PyTorch/XLA CPU loop, each step in `xp.StepTrace("train_step", step_num=i)`.

A 2-layer MLP (SGD) on the XLA device of `PJRT_DEVICE=CPU`. Inside each step the phases are
labelled with `torch_xla.debug.profiler.Trace`: "load_batch" (a host batch copied to the device),
"forward", "backward", "optimizer". PyTorch/XLA is lazy: these phases only record the graph; the
graph is compiled (first time) and run when `StepTrace` ends the step with a step marker
(`torch_xla.sync()`). 2 warm-up steps (which compile the graph) before the trace, 10 traced
(step_num 2..11). The runtime also writes its per-step metrics (`xla.xla_metrics.txt`) and debug
analysis (`xla.xla_debug.txt`) into OUTDIR (the variables of `profscope.xla.xla_env`). Clean.

Usage: PJRT_DEVICE=CPU python xla_steptrace.py OUTDIR
"""

import os
import sys


def xla_env(outdir: str) -> dict[str, str]:
    """What `profscope.xla.xla_env(outdir, graphs=False)` returns (profscope is not in this venv)."""
    base = os.path.join(outdir, "xla")
    return {
        "XLA_METRICS_FILE": f"{base}.xla_metrics.txt",
        "XLA_IR_DEBUG": "1",
        "XLA_HLO_DEBUG": "1",
        "PT_XLA_DEBUG_LEVEL": "2",
        "PT_XLA_DEBUG_FILE": f"{base}.xla_debug.txt",
    }


WARMUP, STEPS, BATCH = 2, 10, 32


def main(outdir: str) -> None:
    os.makedirs(outdir, exist_ok=True)
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    os.environ.update(xla_env(outdir))  # before torch_xla is imported

    import torch
    import torch.nn as nn
    import torch_xla
    import torch_xla.core.xla_model as xm
    import torch_xla.debug.profiler as xp

    torch.manual_seed(0)
    dev = torch_xla.device()
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    batches = [(torch.randn(BATCH, 64), torch.randint(0, 10, (BATCH,))) for _ in range(WARMUP + STEPS)]

    def step(i: int) -> None:
        with xp.StepTrace("train_step", step_num=i):
            with xp.Trace("load_batch"):
                x, y = batches[i][0].to(dev), batches[i][1].to(dev)
            with xp.Trace("forward"):
                loss = loss_fn(net(x), y)
            with xp.Trace("backward"):
                loss.backward()
            with xp.Trace("optimizer"):
                opt.step()
                opt.zero_grad()

    for i in range(WARMUP):
        step(i)
    xm.wait_device_ops()
    xp.start_trace(outdir)  # in-process profiler session (no server needed); writes on stop_trace
    for i in range(WARMUP, WARMUP + STEPS):
        step(i)
    xm.wait_device_ops()
    xp.stop_trace()


if __name__ == "__main__":
    main(sys.argv[1])
