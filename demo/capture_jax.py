"""Capture a real JAX profile on CPU: a small MLP trained with SGD, one annotated step at a time.

`jax.profiler.trace(run_dir)` writes `run_dir/plugins/profile/<timestamp>/<host>.xplane.pb` (plus the
`<host>.trace.json.gz` that JAX exports next to it), which is the layout TensorBoard profile plugins
read. Every training step is wrapped in a `StepTraceAnnotation` so step boundaries appear in the
trace, and inside it `TraceAnnotation`s label the three phases a reader wants to tell apart:

    batch_read -> transfer (host to device) -> train (the jitted update)

On CPU the XLA runtime records events for every executed thunk (fusion, dot, ...): about 13 per
layer per step, plus about 330 Python-tracer and runtime events per step. The profile's size thus
grows with `--steps` x `--ops`; raise both to produce a large trace for benchmarks.

Usage: python demo/capture_jax.py LOGDIR [--run jax_cpu_training] [--steps 5] [--ops 4]
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

WIDTH = 64
BATCH = 32
LEARNING_RATE = 0.05


def init_params(key: jax.Array, layers: int) -> list[jax.Array]:
    """One square weight matrix per layer; small so that the profile stays small."""
    keys = jax.random.split(key, layers)
    return [jax.random.normal(k, (WIDTH, WIDTH)) / np.sqrt(WIDTH) for k in keys]


def loss_fn(params: list[jax.Array], x: jax.Array, y: jax.Array) -> jax.Array:
    h = x
    for w in params:
        h = jnp.tanh(h @ w)
    return jnp.mean((h - y) ** 2)


@jax.jit
def train_step(params: list[jax.Array], x: jax.Array, y: jax.Array) -> tuple[list[jax.Array], jax.Array]:
    """Forward, backward and SGD update in one XLA program, so each step is one executable launch."""
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return [w - LEARNING_RATE * g for w, g in zip(params, grads)], loss


def read_batch(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Stand-in for a data loader: the batch is produced on the host, as real input pipelines do."""
    x = rng.standard_normal((BATCH, WIDTH), dtype=np.float32)
    return x, np.tanh(x[:, ::-1])


def main() -> None:
    parser = argparse.ArgumentParser(description="Capture a JAX CPU training profile (XPlane).")
    parser.add_argument("logdir", help="TensorBoard logdir; the run folder is created inside it")
    parser.add_argument("--run", default="jax_cpu_training", help="run folder name (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=5, help="profiled training steps (default: %(default)s)")
    parser.add_argument(
        "--ops",
        type=int,
        default=4,
        help="MLP depth; each layer adds about 13 XLA CPU events per step (default: %(default)s)",
    )
    args = parser.parse_args()
    if args.steps < 1 or args.ops < 1:
        parser.error("--steps and --ops must be at least 1")

    run_dir = os.path.join(args.logdir, args.run)
    rng = np.random.default_rng(0)
    params = init_params(jax.random.PRNGKey(0), args.ops)

    # Compile outside the trace: the profile then shows steady-state steps, not XLA compilation.
    x, y = read_batch(rng)
    params, loss = train_step(params, jnp.asarray(x), jnp.asarray(y))
    loss.block_until_ready()

    started = time.perf_counter()
    with jax.profiler.trace(run_dir):
        for step in range(args.steps):
            with jax.profiler.StepTraceAnnotation("train_step", step_num=step):
                with jax.profiler.TraceAnnotation("batch_read"):
                    x, y = read_batch(rng)
                with jax.profiler.TraceAnnotation("transfer"):
                    x_dev, y_dev = jax.device_put((x, y))
                with jax.profiler.TraceAnnotation("train"):
                    params, loss = train_step(params, x_dev, y_dev)
                    # Block inside the annotation so it spans the computation, not just its dispatch.
                    loss.block_until_ready()
    elapsed = time.perf_counter() - started
    print(
        f"jax {jax.__version__} on {jax.devices()[0].platform}: {args.steps} steps x {args.ops} layers, "
        f"final loss {float(loss):.4f}, traced in {elapsed:.2f} s -> {run_dir}"
    )


if __name__ == "__main__":
    main()
