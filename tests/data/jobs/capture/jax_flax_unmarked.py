"""jax_flax_unmarked: Flax (NNX) + Optax training loop with no step annotation at all.

A small MLP trained with `optax.adam` through an `nnx.jit`-ed train step: 2 warm-up steps (tracing and
compilation) before `jax.profiler.trace`, then 10 captured steps. No `StepTraceAnnotation`, no
`TraceAnnotation`: the steps are only visible as the repeated jitted program (`jit_train_step`) and
the Python calls JAX's Python tracer records. Clean.

Usage: python jax_flax_unmarked.py OUTDIR
"""

import sys

import jax
import optax
from flax import nnx

WARMUP, STEPS = 2, 10


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(32, 64, rngs=rngs)
        self.l2 = nnx.Linear(64, 10, rngs=rngs)

    def __call__(self, x):
        return self.l2(nnx.relu(self.l1(x)))


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def main(outdir: str) -> None:
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    key = jax.random.PRNGKey(1)
    batches = []
    for _ in range(WARMUP + STEPS):
        key, kx, ky = jax.random.split(key, 3)
        batches.append((jax.random.normal(kx, (32, 32)), jax.random.randint(ky, (32,), 0, 10)))
    for x, y in batches[:WARMUP]:
        loss = train_step(model, optimizer, x, y)
    jax.block_until_ready(loss)
    with jax.profiler.trace(outdir):
        for x, y in batches[WARMUP:]:
            loss = train_step(model, optimizer, x, y)
            jax.block_until_ready(loss)


if __name__ == "__main__":
    main(sys.argv[1])
