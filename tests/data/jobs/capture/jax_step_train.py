"""jax_step_train: JAX CPU loop marked the documented way, with a step name without "step".

Every iteration runs in `jax.profiler.StepTraceAnnotation("train", step_num=i)`; no phase labels.
Two warm-up steps (compilation) run before `jax.profiler.trace`, then 10 steps are captured. Clean.

Usage: python jax_step_train.py OUTDIR
"""

import sys

import jax
import jax.numpy as jnp

WARMUP, STEPS = 2, 10


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] - y) ** 2)


@jax.jit
def update(params, x, y):
    grads = jax.grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)


def main(outdir: str) -> None:
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(0), 4)
    params = {
        "w1": jax.random.normal(k1, (128, 256)) * 0.05,
        "b1": jnp.zeros(256),
        "w2": jax.random.normal(k2, (256, 1)) * 0.05,
    }
    x = jax.random.normal(k3, (64, 128))
    y = jax.random.normal(k4, (64, 1))
    for _ in range(WARMUP):
        params = update(params, x, y)
    jax.block_until_ready(params)
    with jax.profiler.trace(outdir):
        for i in range(STEPS):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                params = update(params, x, y)
                jax.block_until_ready(params)


if __name__ == "__main__":
    main(sys.argv[1])
