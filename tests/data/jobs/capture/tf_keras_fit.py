"""tf_keras_fit: TensorFlow Keras `model.fit` profiled by the TensorBoard callback, `profile_batch=(2, 5)`.

A small dense classifier, 1 epoch of 10 batches of 32; the callback profiles batches 2-5 and writes
the XPlane under OUTDIR/train/plugins/profile/<session>/ (with the TensorBoard event files beside).
No user labels: the step markers are whatever Keras/TF write. Clean.

Usage: python tf_keras_fit.py OUTDIR
"""

import sys

import numpy as np
import tensorflow as tf

STEPS, BATCH = 10, 32


def main(outdir: str) -> None:
    tf.random.set_seed(0)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(STEPS * BATCH, 64)).astype("float32")
    y = rng.integers(0, 10, STEPS * BATCH)
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(64,)),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(10),
        ]
    )
    model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    tb = tf.keras.callbacks.TensorBoard(
        log_dir=outdir, profile_batch=(2, 5), histogram_freq=0, write_graph=False
    )
    model.fit(x, y, batch_size=BATCH, epochs=1, callbacks=[tb], verbose=0)


if __name__ == "__main__":
    main(sys.argv[1])
