"""Capture a real TensorFlow profile on CPU: a small Keras MLP trained with a custom loop over tf.data.

`tf.profiler.experimental.start(run_dir)` / `stop()` write `run_dir/plugins/profile/<timestamp>/<host>.xplane.pb`,
the same XPlane layout JAX writes. Each step is wrapped in `tf.profiler.experimental.Trace("train_step",
step_num=step, _r=1)`, TensorFlow's step marker (`_r=1` makes it a root event that step grouping
keys on), and inner `Trace` labels separate the phases:

    batch_read (tf.data iterator) -> train (the tf.function update)

There is no separate transfer phase: on CPU the tf.data tensors are already in device memory.
The tf.function is traced once before profiling so the profile shows steady-state steps.

Usage: python demo/capture_tf.py LOGDIR [--run tensorflow_cpu_training] [--steps 5]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import tensorflow as tf

FEATURES = 32
CLASSES = 4
BATCH = 32


def make_dataset(steps: int) -> tf.data.Dataset:
    """A tf.data pipeline with a map and prefetch, so its work appears on the input-pipeline threads."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((steps * BATCH, FEATURES), dtype=np.float32)
    y = x[:, :CLASSES].argmax(axis=1)
    return (
        tf.data.Dataset.from_tensor_slices((x, y))
        .map(lambda f, label: (f * 2.0, label), num_parallel_calls=tf.data.AUTOTUNE)
        .batch(BATCH)
        .prefetch(2)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Capture a TensorFlow CPU training profile (XPlane).")
    parser.add_argument("logdir", help="TensorBoard logdir; the run folder is created inside it")
    parser.add_argument(
        "--run", default="tensorflow_cpu_training", help="run folder name (default: %(default)s)"
    )
    parser.add_argument("--steps", type=int, default=5, help="profiled training steps (default: %(default)s)")
    args = parser.parse_args()
    if args.steps < 1:
        parser.error("--steps must be at least 1")

    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential(
        [
            tf.keras.Input((FEATURES,)),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(CLASSES),
        ]
    )
    optimizer = tf.keras.optimizers.SGD(0.05)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def update(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        optimizer.apply_gradients(
            zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        )
        return loss

    batches = iter(make_dataset(args.steps + 1))
    update(*next(batches))  # trace and build the tf.function before profiling

    run_dir = os.path.join(args.logdir, args.run)
    started = time.perf_counter()
    tf.profiler.experimental.start(run_dir)
    for step in range(args.steps):
        with tf.profiler.experimental.Trace("train_step", step_num=step, _r=1):
            with tf.profiler.experimental.Trace("batch_read"):
                x, y = next(batches)
            with tf.profiler.experimental.Trace("train"):
                loss = update(x, y)
                # Reading the value waits for the step, so the "train" label spans the computation.
                loss_value = float(loss)
    tf.profiler.experimental.stop()
    elapsed = time.perf_counter() - started
    print(
        f"tensorflow {tf.__version__} on CPU: {args.steps} steps, final loss {loss_value:.4f}, "
        f"traced in {elapsed:.2f} s -> {run_dir}"
    )


if __name__ == "__main__":
    main()
