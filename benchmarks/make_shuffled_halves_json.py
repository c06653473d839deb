"""A Chrome trace of B/E slices whose halves are not in time order in the file, to measure the
pairing of halves that must be sorted first (merged or hand-written traces; Kineto writes
complete events instead).

Usage:
    python benchmarks/make_shuffled_halves_json.py N OUT.json [--threads T] [--seed S]

N slices (every other one with a slice nested inside) on T threads, half of them on the first
thread, every begin and end written in a shuffled order. Memory and time:
`python benchmarks/bench_ingest_memory.py OUT.json`.
"""

from __future__ import annotations

import argparse
import random


def halves(count: int, threads: int) -> list[str]:
    """The events of `count` slices as JSON lines, in time order per thread."""
    lines: list[str] = []
    clock = [0] * threads
    for i in range(count):
        tid = 0 if i % 2 == 0 or threads == 1 else 1 + i % (threads - 1)
        ts = clock[tid]
        clock[tid] += 10
        lines.append(f'{{"ph":"B","name":"step","pid":1,"tid":{tid},"ts":{ts},"args":{{"i":{i}}}}}')
        if i % 4 < 2:
            lines.append(f'{{"ph":"B","name":"inner","pid":1,"tid":{tid},"ts":{ts + 2}}}')
            lines.append(f'{{"ph":"E","pid":1,"tid":{tid},"ts":{ts + 5}}}')
        lines.append(f'{{"ph":"E","pid":1,"tid":{tid},"ts":{ts + 8}}}')
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("count", type=int)
    parser.add_argument("out")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    lines = halves(args.count, args.threads)
    random.Random(args.seed).shuffle(lines)
    with open(args.out, "w") as out:
        out.write('{"traceEvents":[\n')
        out.write(",\n".join(lines))
        out.write("\n]}\n")


if __name__ == "__main__":
    main()
