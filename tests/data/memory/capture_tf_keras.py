"""Capture a small TensorFlow/Keras CPU fit whose allocator writes its memory events to the XPlane.

Run with tensorflow 2.21.0 (CPU) in a venv of its own, never by the tests, with the CPU allocator
switched to TensorFlow's BFC allocator (the default CPU allocator writes no allocation events; the
oneDNN one writes a handful):

    TF_CPU_ALLOCATOR_USE_BFC=true TF_VENV/bin/python tests/data/memory/capture_tf_keras.py OUT_DIR

with a relative OUT_DIR (the profile records it), and copy
`OUT_DIR/plugins/profile/<timestamp>/<host>.xplane.pb` (PROVENANCE.md). A 64→256→8 MLP
fits one epoch unprofiled (tracing and warm-up), then 2 epochs of 8 batches of 128 under
`tf.profiler.experimental.start`: the `bfc_cpu_allocator_for_gpu` allocator records every allocation
and free as `MemoryAllocation` / `MemoryDeallocation` events.
"""

import sys

import numpy as np
import tensorflow as tf


def main(out_dir: str) -> None:
    model = tf.keras.Sequential(
        [tf.keras.Input((64,)), tf.keras.layers.Dense(256, activation="relu"), tf.keras.layers.Dense(8)]
    )
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.rand(1024, 64).astype("float32")
    y = np.random.rand(1024, 8).astype("float32")
    model.fit(x, y, batch_size=128, epochs=1, verbose=0)
    tf.profiler.experimental.start(out_dir)
    model.fit(x, y, batch_size=128, epochs=2, verbose=0)
    tf.profiler.experimental.stop()


if __name__ == "__main__":
    main(sys.argv[1])
