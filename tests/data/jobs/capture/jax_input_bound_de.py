"""jax_input_bound_de: JAX CPU loop whose host-side batch creation dominates every step (input-bound).

Steps: `jax.profiler.StepTraceAnnotation("Schritt", step_num=i)` (German for "step"; no "step" in the
name). Phases: `jax.profiler.TraceAnnotation("Daten laden")` (load data): a 20 ms sleep standing for a
slow read, then numpy "decoding" (bytes -> uint8 -> float32, normalised) of the batch on the host;
`jax.profiler.TraceAnnotation("Aktualisierung")` (update): the jitted update of a 3-layer MLP, waited
for. 2 warm-up steps before the trace, 10 traced. Known problem: input-bound (most of each step,
about 80 %, in "Daten laden").

Usage: python jax_input_bound_de.py OUTDIR
"""

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

WARMUP, STEPS, BATCH, FEATURES, HIDDEN = 2, 10, 64, 256, 1024
READ_S = 0.020


def load_batch(rng: np.random.Generator):
    time.sleep(READ_S)
    raw = rng.bytes(BATCH * FEATURES)
    x = np.frombuffer(raw, dtype=np.uint8).reshape(BATCH, FEATURES).astype(np.float32)
    x = (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-6)
    y = rng.integers(0, 10, BATCH)
    return x, np.eye(10, dtype=np.float32)[y]


def loss_fn(params, x, y):
    h = jax.nn.relu(x @ params["w1"])
    h = jax.nn.relu(h @ params["w2"])
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ params["w3"]) * y, axis=-1))


@jax.jit
def update(params, x, y):
    grads = jax.grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)


def main(outdir: str) -> None:
    rng = np.random.default_rng(0)
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    w = {
        "w1": jax.random.normal(k1, (FEATURES, HIDDEN)) * 0.05,
        "w2": jax.random.normal(k2, (HIDDEN, HIDDEN)) * 0.03,
        "w3": jax.random.normal(k3, (HIDDEN, 10)) * 0.03,
    }
    for _ in range(WARMUP):
        w = update(w, *load_batch(rng))
    jax.block_until_ready(w)
    with jax.profiler.trace(outdir):
        for i in range(WARMUP, WARMUP + STEPS):
            with jax.profiler.StepTraceAnnotation("Schritt", step_num=i):
                with jax.profiler.TraceAnnotation("Daten laden"):
                    x, y = load_batch(rng)
                with jax.profiler.TraceAnnotation("Aktualisierung"):
                    w = update(w, x, y)
                    jax.block_until_ready(w)


if __name__ == "__main__":
    main(sys.argv[1])
