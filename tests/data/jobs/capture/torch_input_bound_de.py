"""torch_input_bound_de: PyTorch CPU loop fed by a slow DataLoader, phases labelled in German.

A `Dataset` whose `__getitem__` "decodes" each sample slowly (a 0.8 ms sleep standing for a remote
read plus pure-Python parsing of a text record) read by a `DataLoader(num_workers=0)` on the training
thread, so ~80 % of every step is spent getting the batch. Steps: `schedule(wait=1, warmup=1,
active=8)` + `prof.step()` (`ProfilerStep#N`). Phases labelled with `record_function` in German as a
German user writes them: "Daten laden" (load data), "Vorwärts" (forward), "Rückwärts" (backward),
"Optimierer" (optimizer) -- two of them with non-ASCII letters (torch 2.13's Kineto writes those two
as "unknown", see ../FACTS.md). Known problem: input-bound.

Usage: python torch_input_bound_de.py OUTDIR
"""

import random
import sys
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler
from torch.utils.data import DataLoader, Dataset

WAIT, WARMUP, ACTIVE = 1, 1, 8
BATCH, FEATURES = 32, 128
READ_S = 0.0008


class TextRecords(Dataset):
    def __init__(self, n: int) -> None:
        rng = random.Random(0)
        self.records = [
            ",".join(f"{rng.gauss(0, 1):.5f}" for _ in range(FEATURES)) + f";{rng.randrange(10)}"
            for _ in range(n)
        ]

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, i):
        time.sleep(READ_S)
        values, label = self.records[i].split(";")
        return torch.tensor([float(v) for v in values.split(",")]), int(label)


def main(outdir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = nn.Sequential(
        nn.Linear(FEATURES, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    )
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    steps = WAIT + WARMUP + ACTIVE
    batches = iter(DataLoader(TextRecords(steps * BATCH), batch_size=BATCH, num_workers=0))
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=tensorboard_trace_handler(outdir, worker_name="worker0", use_gzip=True),
    ) as prof:
        for _ in range(steps):
            with record_function("Daten laden"):
                x, y = next(batches)
            with record_function("Vorwärts"):
                loss = loss_fn(net(x), y)
            with record_function("Rückwärts"):
                opt.zero_grad()
                loss.backward()
            with record_function("Optimierer"):
                opt.step()
            prof.step()


if __name__ == "__main__":
    main(sys.argv[1])
