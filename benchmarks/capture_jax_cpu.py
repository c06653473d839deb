"""Capture a real JAX CPU profile: a small MLP trained for a few hundred steps under the profiler.

    /path/to/jax-venv/bin/python benchmarks/capture_jax_cpu.py OUT_DIR [--steps 500]

Writes `OUT_DIR/plugins/profile/<session>/<host>.xplane.pb`, the input `bench_xplane.py` and
`make_big_jax_xplane.py` read. With the defaults (500 steps, Python tracer off so that TraceMe
events dominate, as in a real job) the capture is about 17 MB and 375 k events, about three in
four carrying stats (`_src`, `_c`, `_ct`, `_p`, `_pt`, `hlo_op`, `run_id`...; JAX 0.10.2 on CPU).
`--python-tracer 1` adds an event per Python call, without stats. Needs jax only (the plugin's
venv does not have it).
"""

from __future__ import annotations

import argparse
import glob
import os

import jax
import jax.numpy as jnp


def init_params(key: jax.Array, sizes: list[int]) -> list[tuple[jax.Array, jax.Array]]:
    """One (weights, bias) pair per layer, scaled so activations stay of order one."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (fan_in, fan_out)) / jnp.sqrt(fan_in), jnp.zeros(fan_out)))
    return params


def loss(params: list[tuple[jax.Array, jax.Array]], x: jax.Array, y: jax.Array) -> jax.Array:
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return jnp.mean((x @ w + b - y) ** 2)


@jax.jit
def train_step(params: list[tuple[jax.Array, jax.Array]], x: jax.Array, y: jax.Array) -> tuple:
    value, grads = jax.value_and_grad(loss)(params, x, y)
    return [(w - 1e-3 * gw, b - 1e-3 * gb) for (w, b), (gw, gb) in zip(params, grads)], value


def batch(key: jax.Array, size: int, width: int) -> tuple[jax.Array, jax.Array]:
    """A synthetic regression batch, made eagerly on the host (op-by-op dispatch, more host events)."""
    kx, ky = jax.random.split(key)
    x = jax.random.normal(kx, (size, width))
    return x, jnp.sin(x[:, :1]) + 0.1 * jax.random.normal(ky, (size, 1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out_dir")
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument(
        "--python-tracer", type=int, default=0, help="python_tracer_level (0: TraceMe events only)"
    )
    args = parser.parse_args()

    key = jax.random.PRNGKey(0)
    params = init_params(key, [args.width, 256, 256, 256, 1])
    params, _ = train_step(params, *batch(key, args.batch, args.width))  # compile outside the capture
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = args.python_tracer
    options.host_tracer_level = 2
    with jax.profiler.trace(args.out_dir, profiler_options=options):
        for step in range(args.steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                key, sub = jax.random.split(key)
                params, value = train_step(params, *batch(sub, args.batch, args.width))
                value.block_until_ready()
    for path in glob.glob(os.path.join(args.out_dir, "plugins", "profile", "*", "*.xplane.pb")):
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB, last loss {float(value):.4f}")


if __name__ == "__main__":
    main()
