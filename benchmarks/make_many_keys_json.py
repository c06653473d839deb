"""A Chrome trace with N distinct track keys of one kind, to measure what ingest memory each key costs.

Usage:
    python benchmarks/make_many_keys_json.py KIND N OUT.json

KIND:
- `threads`: one complete event on each of N threads;
- `closed_async`: N async ids, each one begin and its end (request spans of a serving trace; they
  share one track per name);
- `open_async`: N async ids, each a begin with no end (drawn up to the end of the trace);
- `nested_async`: N async ids with a nested pair inside each (each keeps a track of its own).

Memory and time per file: `python benchmarks/bench_ingest_memory.py OUT.json`.
"""

from __future__ import annotations

import argparse
from typing import TextIO

KINDS = ("threads", "closed_async", "open_async", "nested_async")


def _async(out: TextIO, ph: str, name: str, ident: int, ts: int) -> None:
    out.write(f'{{"ph":"{ph}","name":"{name}","cat":"c","pid":1,"tid":1,"id":{ident},"ts":{ts}}},\n')


def write(kind: str, count: int, path: str) -> None:
    with open(path, "w") as out:
        out.write('{"traceEvents":[\n')
        for i in range(count):
            ts = 10 * i
            if kind == "threads":
                out.write(f'{{"ph":"X","name":"op","pid":1,"tid":{i},"ts":{ts},"dur":3}},\n')
                continue
            _async(out, "b", "req", i, ts)
            if kind == "nested_async":
                _async(out, "b", "inner", i, ts + 1)
                _async(out, "e", "inner", i, ts + 2)
            if kind != "open_async":
                _async(out, "e", "req", i, ts + 5)
        out.write('{"ph":"X","name":"end","pid":1,"tid":1,"ts":0,"dur":1}]}\n')


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("count", type=int)
    parser.add_argument("out")
    args = parser.parse_args()
    write(args.kind, args.count, args.out)


if __name__ == "__main__":
    main()
