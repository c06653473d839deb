"""tf_custom_loop: TensorFlow custom training loop with `tf.profiler.experimental.Trace("train", step_num=i, _r=1)`.

A `tf.function` train step (GradientTape + Adam) on a small dense model. 2 warm-up steps (tracing)
run before `tf.profiler.experimental.start(OUTDIR)`, then 10 steps each inside
`Trace("train", step_num=i, _r=1)` (the documented step marker; the name has no "step"). Inside the
step two phases labelled with nested `tf.profiler.experimental.Trace` in Spanish: "cargar_datos"
(load data, slicing the next batch on the host) and "actualización" (the update). Clean.

Usage: python tf_custom_loop.py OUTDIR
"""

import sys

import numpy as np
import tensorflow as tf

WARMUP, STEPS, BATCH = 2, 10, 32


def main(outdir: str) -> None:
    tf.random.set_seed(0)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    rng = np.random.default_rng(0)
    n = (WARMUP + STEPS) * BATCH
    xs = rng.normal(size=(n, 64)).astype("float32")
    ys = rng.integers(0, 10, n)
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(64,)),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(10),
        ]
    )
    opt = tf.keras.optimizers.Adam(1e-3)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def batch(i):
        return tf.constant(xs[i * BATCH : (i + 1) * BATCH]), tf.constant(ys[i * BATCH : (i + 1) * BATCH])

    for i in range(WARMUP):
        train_step(*batch(i))
    tf.profiler.experimental.start(outdir)
    for i in range(WARMUP, WARMUP + STEPS):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            with tf.profiler.experimental.Trace("cargar_datos"):
                x, y = batch(i)
            with tf.profiler.experimental.Trace("actualización"):
                train_step(x, y).numpy()
    tf.profiler.experimental.stop()


if __name__ == "__main__":
    main(sys.argv[1])
