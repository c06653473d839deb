"""Write a big XPlane by repeating a real JAX CPU capture in time, every stat kept.

    .venv/bin/python benchmarks/make_big_jax_xplane.py CAPTURE.xplane.pb OUT.xplane.pb [--mb 1024]

The capture is `benchmarks/capture_jax_cpu.py`'s (about 17 MB, 375 k events, three in four with
3 or 9 stats). Every line's events are written as many times as it takes to reach `--mb`, each copy
shifted past the previous one; the id-like integer stats (`_p`, `_c` producer/consumer ids, `run_id`,
`correlation_id`) get a different high word per copy, as a longer capture would have new ids,
while every other stat is kept as captured (`bench_xplane._replicate`). The copy is streamed to
disk line by line, so a 1 GB one takes little memory (1026 MB, 22.2 M events: 59 copies, about
100 s).
"""

from __future__ import annotations

import argparse
import os
import time

from bench_xplane import _replicate

ID_STATS = ("_p", "_c", "run_id", "correlation_id")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture")
    parser.add_argument("out")
    parser.add_argument("--mb", type=float, default=1024, help="size to reach, in MB (10^6 bytes)")
    args = parser.parse_args()
    copies = max(1, round(args.mb * 1e6 / os.path.getsize(args.capture)))
    start = time.perf_counter()
    _replicate(args.capture, copies, args.out, id_stats=ID_STATS)
    size = os.path.getsize(args.out) / 1e6
    print(f"{args.out}: {copies} copies, {size:.1f} MB in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
