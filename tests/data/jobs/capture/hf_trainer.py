"""hf_trainer: Hugging Face transformers `Trainer` on a tiny randomly-initialised BERT, profiled via a callback.

The model is built from a `BertConfig` in code (2 layers, hidden 64, vocab 1000; no hub download) and
trained for 10 steps (batch 8, sequence 32) on random token ids on the CPU. A `TrainerCallback`
starts `torch.profiler.profile(schedule=schedule(wait=1, warmup=1, active=6),
on_trace_ready=tensorboard_trace_handler(OUTDIR, worker_name="worker0", use_gzip=True))` in
`on_train_begin`, calls `prof.step()` in `on_step_end` and stops it in `on_train_end` (the pattern of
the transformers docs/forums). No user labels. Clean.

Usage: python hf_trainer.py OUTDIR
"""

import sys
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)

STEPS, BATCH, SEQ = 10, 8, 32


class ProfilerCallback(TrainerCallback):
    def __init__(self, outdir: str) -> None:
        self.prof = profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=1, warmup=1, active=6),
            on_trace_ready=tensorboard_trace_handler(outdir, worker_name="worker0", use_gzip=True),
        )

    def on_train_begin(self, args, state, control, **kwargs):
        self.prof.start()

    def on_step_end(self, args, state, control, **kwargs):
        self.prof.step()

    def on_train_end(self, args, state, control, **kwargs):
        self.prof.stop()


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(5, 1000, (n, SEQ), generator=g)
        self.labels = torch.randint(0, 2, (n,), generator=g)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i):
        return {
            "input_ids": self.ids[i],
            "attention_mask": torch.ones(SEQ, dtype=torch.long),
            "labels": self.labels[i],
        }


def main(outdir: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = BertConfig(
        vocab_size=1000,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=64,
        num_labels=2,
    )
    model = BertForSequenceClassification(config)
    with tempfile.TemporaryDirectory() as scratch:
        args = TrainingArguments(
            output_dir=scratch,
            max_steps=STEPS,
            per_device_train_batch_size=BATCH,
            use_cpu=True,
            report_to="none",
            save_strategy="no",
            logging_strategy="no",
            dataloader_num_workers=0,
            disable_tqdm=True,
            seed=0,
        )
        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=RandomTokens(STEPS * BATCH),
            callbacks=[ProfilerCallback(outdir)],
        )
        trainer.train()


if __name__ == "__main__":
    main(sys.argv[1])
