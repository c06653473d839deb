"""Capture PyTorch/XLA runtime logs on CPU from a training loop with two classic performance mistakes.

1. Recompilation: the dataset size is not a multiple of the batch size, so the last batch of each
   epoch is smaller. XLA compiles one graph per input shape, so that batch triggers a second
   compilation (in the second epoch both graphs come from the compilation cache).
2. Host round trips and a CPU fallback: the loop logs accuracy with `torch.nonzero(...)` and `.item()`
   every few steps. `nonzero` has a data-dependent output shape, so PyTorch/XLA runs it on the CPU
   (`aten::nonzero` counter), and `.item()` forces the pending graph to execute and copies the value
   back to the host (`aten::_local_scalar_dense`).

PyTorch/XLA reports these through environment variables that must be set before `torch_xla` is
imported. The outputs go into the run folder, named `<host>.xla_<kind>.txt` as profscope expects, with
`train` as the host name of this training process:

    train.xla_metrics.txt        XLA_METRICS_FILE: a metrics report after every step ([MetricsData; step=N])
    train.xla_debug.txt          PT_XLA_DEBUG_FILE at PT_XLA_DEBUG_LEVEL=2: why each compilation and execution ran
    train.xla_graphs.txt.0       XLA_SAVE_TENSORS_FILE, text format: every synced graph (PyTorch/XLA appends
                                 the device ordinal .0)
    train_final.xla_metrics.txt  torch_xla.debug.metrics.metrics_report() once training has finished

The loop also runs under `torch_xla.debug.profiler.start_trace`, which writes an XPlane trace to
`<run>/plugins/profile/<timestamp>/<host>.xplane.pb`, with a `StepTrace` per training step.

Usage: PJRT_DEVICE=CPU python demo/capture_xla.py LOGDIR [--run pytorch_xla_cpu_recompile]
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

FEATURES = 32
CLASSES = 4
BATCH = 32
DATASET = 3 * BATCH + 8  # three full batches, then a batch of 8: a second input shape
EPOCHS = 2
LOG_EVERY = 3  # steps between accuracy logs (the host round trip)


def configure_xla_logging(run_dir: str) -> None:
    """Point PyTorch/XLA's runtime logs into the run folder; must run before torch_xla is imported."""
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    os.environ["XLA_METRICS_FILE"] = os.path.join(run_dir, "train.xla_metrics.txt")
    os.environ["XLA_SAVE_TENSORS_FILE"] = os.path.join(run_dir, "train.xla_graphs.txt")
    os.environ["XLA_SAVE_TENSORS_FMT"] = "text"
    # IR debug info puts the Python source location of every IR node into the saved graphs.
    os.environ["XLA_IR_DEBUG"] = "1"
    os.environ["PT_XLA_DEBUG_LEVEL"] = "2"
    os.environ["PT_XLA_DEBUG_FILE"] = os.path.join(run_dir, "train.xla_debug.txt")


def synthetic_loader() -> DataLoader:
    """A linearly separable toy problem, so the loss visibly falls during the short run."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(DATASET, FEATURES, generator=generator)
    y = (x[:, :CLASSES] + 0.1 * torch.randn(DATASET, CLASSES, generator=generator)).argmax(dim=1)
    return DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True, generator=generator)


def main() -> None:
    parser = argparse.ArgumentParser(description="Capture PyTorch/XLA CPU runtime logs with a recompilation.")
    parser.add_argument("logdir", help="TensorBoard logdir; the run folder is created inside it")
    parser.add_argument(
        "--run", default="pytorch_xla_cpu_recompile", help="run folder name (default: %(default)s)"
    )
    args = parser.parse_args()
    run_dir = os.path.join(args.logdir, args.run)
    os.makedirs(run_dir, exist_ok=True)
    # PyTorch/XLA appends to existing log files, which would mix two runs' steps and graphs.
    leftovers = sorted(
        name for name in os.listdir(run_dir) if name.startswith(("train.xla_", "train_final.xla_"))
    )
    if leftovers:
        parser.error(
            f"{run_dir} already holds XLA logs ({', '.join(leftovers)}); remove them or pick another --run"
        )
    configure_xla_logging(run_dir)

    # Imported here, after the environment above is set: PyTorch/XLA reads it at import time.
    import torch_xla
    import torch_xla.debug.metrics as met
    import torch_xla.debug.profiler as xp

    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loader = synthetic_loader()

    started = time.perf_counter()
    xp.start_trace(run_dir)
    step = 0
    for epoch in range(EPOCHS):
        batches = iter(loader)
        for _ in range(len(loader)):
            # StepTrace ends the step with torch_xla.sync(): the traced graph is compiled (or taken from
            # the compilation cache) and executed there, and XLA_METRICS_FILE gets one report.
            with xp.StepTrace("train_step", step_num=step):
                with xp.Trace("batch_read"):
                    x, y = next(batches)
                with xp.Trace("transfer"):
                    x, y = x.to(device), y.to(device)
                with xp.Trace("train"):
                    logits = model(x)
                    loss = nn.functional.cross_entropy(logits, y)
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                if step % LOG_EVERY == LOG_EVERY - 1:
                    with xp.Trace("log_accuracy"):
                        correct = torch.nonzero(logits.argmax(dim=1) == y).shape[0]
                        print(
                            f"epoch {epoch} step {step}: loss {loss.item():.4f}, {correct}/{len(y)} correct"
                        )
            step += 1
    xp.stop_trace()
    elapsed = time.perf_counter() - started

    with open(os.path.join(run_dir, "train_final.xla_metrics.txt"), "w") as fh:
        fh.write(met.metrics_report())
    print(
        f"torch {torch.__version__}, torch_xla {torch_xla.__version__} on {device}: {step} steps in "
        f"{elapsed:.2f} s, compilations {met.metric_data('CompileTime')[0]} -> {run_dir}"
    )


if __name__ == "__main__":
    main()
