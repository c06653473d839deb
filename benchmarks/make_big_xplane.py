"""Capture a large real XPlane with JAX on CPU, for the reader benchmark.

Many small jitted ops called in a loop under `jax.profiler.trace` give hundreds of thousands of
host TraceMe and XLA CPU events, which is the shape of profile that makes a per-event Python reader
slow. Needs JAX (`python -m venv JAX_VENV && JAX_VENV/bin/pip install jax jaxlib`, any folder);
the profile is written under the logdir given on the command line and is never committed.

    JAX_VENV/bin/python benchmarks/make_big_xplane.py BIG_LOGDIR --calls 21000
"""

from __future__ import annotations

import argparse
import pathlib
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir", help="TensorBoard logdir to write plugins/profile/<session>/ into")
    parser.add_argument("--calls", type=int, default=21000, help="jitted calls inside the trace")
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp

    @jax.jit
    def scale_shift(x: jax.Array, y: jax.Array) -> jax.Array:
        return jnp.tanh(x * 1.5 + y) - y

    @jax.jit
    def reduce_mix(x: jax.Array) -> jax.Array:
        return jnp.sum(jnp.sin(x)) * x + jnp.cos(x)

    x = jnp.ones((64,), dtype=jnp.float32)
    y = jnp.full((64,), 0.5, dtype=jnp.float32)
    scale_shift(x, y).block_until_ready()
    reduce_mix(x).block_until_ready()

    start = time.perf_counter()
    with jax.profiler.trace(args.logdir):
        for i in range(args.calls):
            x = scale_shift(x, y) if i % 2 == 0 else reduce_mix(x)
            if i % 64 == 0:
                x.block_until_ready()
        x.block_until_ready()
    elapsed = time.perf_counter() - start

    files = sorted(pathlib.Path(args.logdir).rglob("*.xplane.pb"))
    print(f"captured {args.calls} calls in {elapsed:.1f} s")
    for path in files:
        print(f"{path}  {path.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
