"""The decode floor of a Chrome / Kineto JSON file: msgspec's typed decode of its events on one core.

Usage:
    python benchmarks/json_decode_floor.py TRACE.json [--sample-mb 200] [--runs 3]

No reader of this JSON can be faster than decoding it, so the ingest benchmarks print their MB/s
beside this: the first `--sample-mb` MB of the events array (cut at an event boundary, read into
memory first, so no disk is timed) decoded by msgspec into a typed Struct per event, with `args`
left undecoded (`msgspec.Raw`), in one thread. The ingest has two cores, so its ceiling is twice
this figure; `bench_ingest.py` and `bench_chrome_json.py` measure it in the same run as the ingest
(the machine's load changes from minute to minute).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from typing import NamedTuple

import msgspec


class FloorEvent(msgspec.Struct, gc=False):
    """The fields a trace reader needs typed; args kept as their raw text."""

    ph: str = ""
    name: str = ""
    cat: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float = 0.0
    dur: float = 0.0
    id: int | str | None = None
    bp: str | None = None
    s: str | None = None
    args: msgspec.Raw = msgspec.Raw(b"")


_ARRAY_START = re.compile(rb'"traceEvents"\s*:\s*\[|^\s*\[')
_BETWEEN_EVENTS = re.compile(rb"}\s*,\s*{")
_DECODER = msgspec.json.Decoder(list[FloorEvent])


def sample(path: str, sample_bytes: int) -> bytes:
    """A JSON array of the first whole events of the file, at most about `sample_bytes` long."""
    with open(path, "rb") as f:
        head = f.read(sample_bytes + (1 << 20))
    start = _ARRAY_START.search(head)
    if start is None:
        raise SystemExit(f"{path}: no events array in its first MB")
    body = head[start.end() : start.end() + sample_bytes]
    checker = msgspec.json.Decoder(list[msgspec.Raw])
    # The last `}, {` that ends a whole top-level event: nested objects inside args can look alike,
    # so each candidate is checked by decoding the array it would close.
    for candidate in reversed(list(_BETWEEN_EVENTS.finditer(body, max(0, len(body) - (4 << 20))))):
        array = b"[" + body[: candidate.start() + 1] + b"]"
        try:
            checker.decode(array)
        except msgspec.DecodeError:
            continue
        return array
    raise SystemExit(f"{path}: no event boundary found in the last 4 MB of the sample")


class Floor(NamedTuple):
    """One measurement of the floor: MB of the sample decoded per second of wall time and of CPU time."""

    wall_mb_s: float
    cpu_mb_s: float


def decode_once(array: bytes) -> tuple[Floor, int]:
    """One typed decode of `array`: its speed, and how many events it held."""
    wall, cpu = time.perf_counter(), time.process_time()
    events = _DECODER.decode(array)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n = len(events)
    del events
    mb = len(array) / 1e6
    return Floor(mb / wall, mb / cpu), n


def measure(array: bytes) -> Floor:
    """The floor of one decode of `array` (the caller takes the median of several)."""
    return decode_once(array)[0]


def measure_in_child(path: str, sample_mb: int) -> Floor:
    """One measurement in a process of its own: the benchmark holding the sample would count in
    the peak RSS of the processes it starts afterwards (a forked child keeps its parent's peak)."""
    out = subprocess.run(
        [sys.executable, __file__, path, "--sample-mb", str(sample_mb), "--runs", "1", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Floor(*json.loads(out.stdout.strip().splitlines()[-1]))


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, for the record beside each figure."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def spread(values: list[float], fmt: str = "{:.0f}") -> str:
    """`median (min-max)` of `values`."""
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path")
    parser.add_argument("--sample-mb", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the first run's Floor as JSON")
    args = parser.parse_args(argv)
    array = sample(args.path, args.sample_mb * 1_000_000)
    _, n = decode_once(array)
    floors = [measure(array) for _ in range(args.runs)]
    if args.json:
        print(json.dumps(floors[0]))
        return 0
    walls = [f.wall_mb_s for f in floors]
    print(
        f"{args.path}: {len(array) / 1e6:.1f} MB sample, {n} events; msgspec typed decode, args raw, "
        f"one core: {spread(walls)} MB/s wall ({spread([f.cpu_mb_s for f in floors])} MB/s of CPU time), "
        f"two cores {spread([2 * w for w in walls])} MB/s (load average {load_average()})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
