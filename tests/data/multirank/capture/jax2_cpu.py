"""Capture: JAX multi-process on CPU, 2 processes (jax.distributed on 127.0.0.1, gloo CPU collectives).

Usage: python jax2_cpu.py OUT_DIR

Spawns 2 subprocesses (process_id 0 and 1), each with one CPU device. A jitted
step over a (4 * 2, 1024) float32 array sharded on a 1-axis mesh "d":
  - load_batch: time.sleep(SLOW_S = 0.020) on process 1, FAST_S = 0.002 on process 0
    (process 1 is the straggler by design, ~18 ms per step)
  - one XLA all-reduce (sum over the sharded axis, replicated result) and one
    all-gather (the sharded array made replicated).
Profiles 4 steps with jax.profiler.trace into OUT_DIR/process{p}/ (one log dir per
process: both processes run on the same host, and jax names its file
<hostname>.xplane.pb inside plugins/profile/<timestamp>/, so one shared log dir
would make them collide). Steps are labelled with StepTraceAnnotation("train").
"""

import os
import socket
import subprocess
import sys
import time

NPROC = 2
SLOW_PROCESS = 1
SLOW_S = 0.020
FAST_S = 0.002
STEPS = 4


def child(pid, port, out_dir):
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=NPROC, process_id=pid)
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()), ("d",))
    sharded, replicated = NamedSharding(mesh, P("d")), NamedSharding(mesh, P())
    x = jax.make_array_from_process_local_data(sharded, np.full((4, 1024), pid + 1, np.float32))
    reduce_fn = jax.jit(lambda a: jnp.sum(a, axis=0), out_shardings=replicated)  # all-reduce
    gather_fn = jax.jit(lambda a: a * 2.0, out_shardings=replicated)  # all-gather
    reduce_fn(x).block_until_ready()  # compile outside the trace
    gather_fn(x).block_until_ready()
    delay = SLOW_S if pid == SLOW_PROCESS else FAST_S
    with jax.profiler.trace(os.path.join(out_dir, f"process{pid}")):
        for step in range(STEPS):
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                with jax.profiler.TraceAnnotation("load_batch"):
                    time.sleep(delay)
                with jax.profiler.TraceAnnotation("reduce"):
                    r = reduce_fn(x)
                    r.block_until_ready()
                with jax.profiler.TraceAnnotation("gather"):
                    g = gather_fn(x)
                    g.block_until_ready()
    jax.distributed.shutdown()


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [
        subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", str(i), str(port), out_dir])
        for i in range(NPROC)
    ]
    rcs = [p.wait() for p in procs]
    if any(rcs):
        sys.exit(f"child exit codes {rcs}")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
