"""A real JAX program for the capture tests, run as a child process: it starts JAX's profiler server
on loopback at the port it is given, then runs a jitted loop until it is killed.

`python -m tests.capture.jax_job PORT` prints `ready` once the server listens and the loop's first
step has compiled.
"""

from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp


@jax.jit
def profscope_capture_step(x: jax.Array) -> jax.Array:
    """One training-like step: a matmul and an elementwise tail that XLA fuses."""
    return jnp.tanh(x @ x.T).sum(axis=0) * 0.5


def main(port: int) -> None:
    jax.profiler.start_server(port)
    x = jnp.ones((64, 64))
    profscope_capture_step(x).block_until_ready()
    print("ready", flush=True)
    while True:
        profscope_capture_step(x).block_until_ready()
        time.sleep(0.001)


if __name__ == "__main__":
    main(int(sys.argv[1]))
