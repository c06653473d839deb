"""Capture a small JAX CPU training step whose XLA program carries its buffer assignment.

Run with jax 0.10.2 (CPU wheel) in a venv of its own, never by the tests:

    cd tests/data/memory
    JAX_VENV/bin/python -c "n = 'capture_jax_program.py'; exec(compile(open(n).read(), n, 'exec'))" OUT_DIR

(compiled under its bare file name: JAX writes the script's path into every instruction's source
info, and Python makes a script named on the command line absolute), then copy
`OUT_DIR/plugins/profile/<timestamp>/<host>.xplane.pb` (PROVENANCE.md). OUT_DIR relative.

A 256→1024→8 MLP (float32, batch 512) takes 3 jitted SGD steps under `jax.profiler.trace`; the
XPlane's `/host:metadata` plane carries one HloProto per compiled program (the train step, the
random initialisation), each with its `buffer_assignment` (logical buffers, allocations, heap
simulator trace). The train step's peak is in its backward: three 512×1024 float32 temporaries
(2 MiB each: the hidden activations before and after the ReLU and their gradient) are live together
with the parameters, the batch and the new parameters.
"""

import sys

import jax
import jax.numpy as jnp

BATCH, IN, HIDDEN, OUT = 512, 256, 1024, 8


def loss(params, x, y):
    hidden = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.mean((hidden @ params["w2"] + params["b2"] - y) ** 2)


@jax.jit
def train_step(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)


def main(out_dir: str) -> None:
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    params = {
        "w1": jax.random.normal(keys[0], (IN, HIDDEN)) * 0.05,
        "b1": jnp.zeros((HIDDEN,)),
        "w2": jax.random.normal(keys[1], (HIDDEN, OUT)) * 0.05,
        "b2": jnp.zeros((OUT,)),
    }
    x = jax.random.normal(keys[2], (BATCH, IN))
    y = jax.random.normal(keys[3], (BATCH, OUT))
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # no Python frames: a small file, the programs are what matters
    with jax.profiler.trace(out_dir, profiler_options=options):
        for _ in range(3):
            params = train_step(params, x, y)
        jax.block_until_ready(params)


if __name__ == "__main__":
    main(sys.argv[1])
