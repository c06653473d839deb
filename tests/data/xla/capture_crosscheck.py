"""Capture a real PyTorch/XLA metrics report together with `metric_data()` for every metric.

Run with the PyTorch/XLA venv (never by the tests, which must not need torch_xla):

    PJRT_DEVICE=CPU $XLA_PYTHON tests/data/xla/capture_crosscheck.py OUT_STEM [PERCENTILES]

Writes OUT_STEM.txt (`metrics_report()`) and OUT_STEM.json: for each metric the TotalSamples,
Accumulator, and the percentiles, ValueRate and Rate recomputed from the retained samples exactly as
the runtime does (sorted values, index = int(p * n); rates over the first-to-last sample time span;
`metric_data()` gives sample times in seconds),
plus every counter value. The report and the data are taken with nothing running in between, and
the report is taken again afterwards to prove it did not change.
"""

import json
import os
import sys

stem = sys.argv[1]
if len(sys.argv) > 2:
    os.environ["XLA_METRICS_PERCENTILES"] = sys.argv[2]
os.environ.setdefault("PJRT_DEVICE", "CPU")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402
import torch_xla.debug.metrics as met  # noqa: E402

percentiles = [
    float(p)
    for p in os.environ.get("XLA_METRICS_PERCENTILES", "0.01:0.05:0.1:0.2:0.5:0.8:0.9:0.95:0.99").split(":")
]
percentiles.sort()

dev = torch_xla.device()
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 8)).to(
    dev
)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(14):
    bs = 16 if step < 9 else 16 + 8 * (step - 8)
    x = torch.randn(bs, 64, device=dev)
    y = torch.randint(0, 8, (bs,), device=dev)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    if step % 4 == 3:
        picked = torch.nonzero(y == 2)
        print(step, loss.item(), picked.shape[0])
    torch_xla.sync()
xm.wait_device_ops()


def snapshot():
    report = met.metrics_report()
    metrics = {}
    for name in met.metric_names():
        total, accumulator, samples = met.metric_data(name)
        values = sorted(v for _, v in samples)
        entry = {"total_samples": total, "accumulator": accumulator, "retained": len(samples)}
        entry["percentiles"] = (
            [[p * 100.0, values[int(p * len(values))]] for p in percentiles] if values else []
        )
        if len(samples) > 1:
            span_s = samples[-1][0] - samples[0][0]
            if span_s > 0:
                entry["value_rate"] = sum(v for _, v in samples) / span_s
                entry["rate"] = len(samples) / span_s
        metrics[name] = entry
    counters = {name: met.counter_value(name) for name in met.counter_names()}
    return report, {"metrics": metrics, "counters": counters}


for _ in range(5):
    report, data = snapshot()
    if met.metrics_report() == report:
        break
else:
    raise SystemExit("metrics kept changing while being read")
with open(stem + ".txt", "w") as f:
    f.write(report)
with open(stem + ".json", "w") as f:
    json.dump(
        {"torch_xla": torch_xla.__version__, "torch": torch.__version__, **data}, f, indent=1, sort_keys=True
    )
