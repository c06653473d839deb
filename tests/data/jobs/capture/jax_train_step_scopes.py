"""jax_train_step_scopes: JAX CPU loop with `StepTraceAnnotation("train_step", step_num=i)` and labelled phases.

Host side, inside each step: `jax.profiler.TraceAnnotation("data")` (the batch is sliced from a
device array) and `jax.profiler.TraceAnnotation("update")` (the jitted update, waited for). Inside the
jitted function the computation is split with `jax.named_scope("forward")`, `jax.named_scope("grad")`
and `jax.named_scope("sgd")` (these only name the HLO ops). 2 warm-up steps before the trace, 10 traced.
Clean.

Usage: python jax_train_step_scopes.py OUTDIR
"""

import sys

import jax
import jax.numpy as jnp

WARMUP, STEPS, BATCH = 2, 10, 64


def loss_fn(params, x, y):
    with jax.named_scope("forward"):
        h = jax.nn.relu(x @ params["w1"])
        logits = h @ params["w2"]
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))


@jax.jit
def update(params, x, y):
    with jax.named_scope("grad"):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    with jax.named_scope("sgd"):
        params = jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads)
    return params, loss


@jax.jit
def get_batch(xs, ys, i):
    start = i * BATCH
    return (jax.lax.dynamic_slice_in_dim(xs, start, BATCH), jax.lax.dynamic_slice_in_dim(ys, start, BATCH))


def main(outdir: str) -> None:
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(0), 4)
    params = {"w1": jax.random.normal(k1, (64, 128)) * 0.1, "w2": jax.random.normal(k2, (128, 10)) * 0.1}
    n = (WARMUP + STEPS) * BATCH
    xs = jax.random.normal(k3, (n, 64))
    ys = jax.nn.one_hot(jax.random.randint(k4, (n,), 0, 10), 10)
    for i in range(WARMUP):
        params, loss = update(params, *get_batch(xs, ys, i))
    jax.block_until_ready(loss)
    with jax.profiler.trace(outdir):
        for i in range(WARMUP, WARMUP + STEPS):
            with jax.profiler.StepTraceAnnotation("train_step", step_num=i):
                with jax.profiler.TraceAnnotation("data"):
                    x, y = get_batch(xs, ys, i)
                with jax.profiler.TraceAnnotation("update"):
                    params, loss = update(params, x, y)
                    jax.block_until_ready(loss)


if __name__ == "__main__":
    main(sys.argv[1])
