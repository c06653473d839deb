"""lightning_fit: PyTorch Lightning `Trainer.fit` with Lightning's `PyTorchProfiler`.

A LightningModule (small MLP, SGD) fitted for 10 training steps on CPU (no validation). The profiler is
Lightning's `lightning.pytorch.profilers.PyTorchProfiler` with `schedule=torch.profiler.schedule(wait=1,
warmup=1, active=6)` and, so that the file is gzipped like the other PyTorch jobs,
`on_trace_ready=tensorboard_trace_handler(OUTDIR, worker_name="worker0", use_gzip=True)` (Lightning's
own handler would write an uncompressed `.pt.trace.json`). Lightning calls `prof.step()` itself and
adds its own `record_function` labels ("[pl][profile]...", "[pl][module]..."); the user adds none.
Clean.

Usage: python lightning_fit.py OUTDIR
"""

import sys

import lightning as L
import torch
import torch.nn as nn
from lightning.pytorch.profilers import PyTorchProfiler
from torch.profiler import ProfilerActivity, schedule, tensorboard_trace_handler
from torch.utils.data import DataLoader, TensorDataset

STEPS, BATCH = 10, 32


class Classifier(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
        self.loss = nn.CrossEntropyLoss()

    def training_step(self, batch, batch_idx):
        x, y = batch
        return self.loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main(outdir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = TensorDataset(torch.randn(STEPS * BATCH, 64), torch.randint(0, 10, (STEPS * BATCH,)))
    profiler = PyTorchProfiler(
        dirpath=outdir,
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=6),
        on_trace_ready=tensorboard_trace_handler(outdir, worker_name="worker0", use_gzip=True),
    )
    trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        max_steps=STEPS,
        max_epochs=1,
        profiler=profiler,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=outdir,
        num_sanity_val_steps=0,
    )
    trainer.fit(Classifier(), DataLoader(data, batch_size=BATCH))


if __name__ == "__main__":
    main(sys.argv[1])
