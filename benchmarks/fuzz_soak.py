"""Fuzz soak of every reader: many mutated inputs per reader, each bounded in time and memory.

Usage:
    python benchmarks/fuzz_soak.py [--inputs 100000] [--readers xplane,chrome_json,...]
        [--seconds 5] [--memory-mb 1024] [--workers 2] [--seed 0] [--save DIR]
        [--state FILE] [--round 2000] [--minutes M]

Inputs are mutated from the real files in `tests/data/` (truncation, byte flips, splices from other
seeds, duplicated and deleted ranges, inserted tokens, a token repeated into a nesting or size bomb;
for `.json.gz` also gzip of mutated text and damage to the compressed bytes), the same input for the
same `--seed` and index, so a finding can be regenerated. Each reader runs in forked worker
processes limited by `resource.setrlimit(RLIMIT_AS)` to their size at start plus `--memory-mb`; the
parent kills a worker whose input takes more than `--seconds` of CPU (or four times that of wall
time) and starts a new one after it.

Per reader it prints how many inputs loaded, were refused with `UnreadableProfile` naming the file,
crashed (any other exception, or a refusal that leaks an exception type), hung, hit the memory bound
or killed the worker, with the first findings of each kind; `--save DIR` writes the inputs of the
findings there. Exit status 1 when anything but "loaded" and "refused" was seen.

The readers take turns, `--round` inputs each, so a run stopped early (`--minutes`, or killed) has
covered every reader alike. With `--state FILE` the tallies are written there after every round and
a later run with the same file (and the same `--seed`) goes on from the first input not yet read,
until each reader has had `--inputs`.

The mutation engine (`SEEDS`, `make_input`) is also what `tests/test_fuzz_readers.py` draws from.
"""

from __future__ import annotations

import argparse
import collections
import functools
import gzip
import json
import multiprocessing
import multiprocessing.connection
import os
import random
import re
import resource
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from profscope.formats.common.wire import WireError, read_varint

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when a test loads this file by its path
from proto_bytes import varint  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"

# Seed files per reader. The two Kineto traces of over 1 MB compressed are left out: each read takes
# 0.2 s, and the smaller traces cover the same event kinds.
_CHROME_SEEDS = (
    "kineto/alexnet.pt.trace.json.gz",
    "kineto/bert_small.pt.trace.json.gz",
    "kineto/mi250_minitoy.pt.trace.json.gz",
    "kineto/rank-0.pt.trace.json.gz",
    "kineto/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "overview/prefetch_input.pt.trace.json.gz",
)
_XPLANE_SEEDS = (
    "xplane/mi300_jax_conv.xplane.pb",
    "xplane/tpu_v6e_inference.xplane.pb",
    "xplane/gpu_8x_tf_training.xplane.pb",
)
_TEXT_SEEDS = {
    "xla_metrics": (
        "xla/pytorch_xla_cpu_recompile/xla_metrics_report.txt",
        "xla/pytorch_xla_cpu_recompile/xla_metrics_per_step.txt",
        "xla/crosscheck_default.txt",
        "xla/crosscheck_custom_percentiles.txt",
    ),
    "xla_debug": ("xla/pytorch_xla_cpu_recompile/pt_xla_debug.txt",),
    "xla_graphs": ("xla/pytorch_xla_cpu_recompile/xla_graphs.txt.0", "xla/x10_graph_changes.txt"),
}
# Tokens inserted (once or repeated) at random places: what breaks parsers of each kind of text.
_JSON_TOKENS = (
    b"{", b"}", b"[", b"]", b'"', b",", b":", b"\\", b'{"a":', b"[[[[", b'"ts":', b'"ts":1e300',
    b'"ts":9300000000000000000', b'"dur":-1', b"1e999", b"-0", b"NaN", b"N/A", b"null", b"\x00",
    b"\xff\xfe", b"\\ud800", b'"ph":"B"', b'"ph":"E"', b'"ph":"b","id":1', b'"ph":"C"', b'"ph":"s"',
    b'"ph":"M"', b" " * 64, b'"args":{"a":' * 8, b"123456789012345678901234567890",
)  # fmt: skip
_TEXT_TOKENS = (
    b"\n", b":", b"Metric: ", b"Counter: ", b"Value: ", b"TotalSamples: ", b"Percentiles: ",
    b"Accumulator: ", b"1e999999", b"-1e999", b"nan", b"inf", b"9" * 400, b"99999999999999999999d",
    b"%=", b";", b"[MetricsData; step=", b"Execution Analysis", b"Compilation Cause", b"\t", b"\r",
    b"(", b")", b"[", b"]", b"{", b"}", b"=", b"\xff", b"\x00", b"#", b"IR {", b"digraph G {",
    b"HloModule ", b"module @", b"%", b" = ", b"frame ", b"@", b" vs ", b" (", b"a", b" ", b"0",
    b"Found different shape: ", b"pt-xla-profiler: ", b"Op(s) not lowered: ", b" too frequent: ",
    b"Following metrics too frequent: ", b"[ScheduleSyncTensorsGraph]", b"## BEGIN_GRAPH",
)  # fmt: skip
_PROTO_TOKENS = (
    b"\xff" * 10, b"\x80" * 9 + b"\x01", b"\x0a\xff\xff\xff\xff\x0f", b"\x1a\x80\x80\x80\x80\x10",
    b"\x22\xff\x01", b"\x00", b"\x0b", b"\x0c", b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\x7f",
    b"\x10\x80\x80\x80\x80\x80\x80\x80\x80\x01", b"\x19" + b"\xff" * 8, b"\x0a\x00", b"\x0a\x02\x0a\x00",
)  # fmt: skip


# -- seeds ----------------------------------------------------------------------------------------


def xspace_parts(data: bytes) -> list[bytes]:
    """Every top-level field of an XSpace as its own encoded bytes: one plane each, hostnames, …

    Concatenated protobuf fields are a valid message, so any subset of these is a real, smaller
    XSpace (a seed that reads in a millisecond instead of a hundred)."""
    pos, out = 0, []
    while pos < len(data):
        start = pos
        tag, pos = read_varint(data, pos, len(data))
        wire_type = tag & 7
        if wire_type == 0:
            _, pos = read_varint(data, pos, len(data))
        elif wire_type == 2:
            length, pos = read_varint(data, pos, len(data))
            pos += length
        else:
            raise ValueError("not an XSpace seed")
        out.append(data[start:pos])
    return out


def small_plane(field: bytes, keep_lines: int, keep_events: int) -> bytes:
    """An XSpace plane field cut down to its first `keep_lines` lines of `keep_events` events each
    (names, metadata and stats kept): a real plane small enough to fuzz fast."""
    _, pos = read_varint(field, 0, len(field))
    _, pos = read_varint(field, pos, len(field))
    body, lines = [], 0
    while pos < len(field):
        start = pos
        tag, pos = read_varint(field, pos, len(field))
        if tag & 7 == 0:
            _, pos = read_varint(field, pos, len(field))
            body.append(field[start:pos])
            continue
        length, payload = read_varint(field, pos, len(field))
        pos = payload + length
        if tag >> 3 != 3:
            body.append(field[start:pos])
        elif lines < keep_lines:
            lines += 1
            body.append(_small_line(field[payload:pos], keep_events))
    inner = b"".join(body)
    return b"\x0a" + varint(len(inner)) + inner


def _small_line(line: bytes, keep_events: int) -> bytes:
    pos, body, events = 0, [], 0
    while pos < len(line):
        start = pos
        tag, pos = read_varint(line, pos, len(line))
        if tag & 7 == 0:
            _, pos = read_varint(line, pos, len(line))
        elif tag & 7 == 2:
            length, pos = read_varint(line, pos, len(line))
            pos += length
        else:
            pos += 8 if tag & 7 == 1 else 4
        if tag >> 3 == 4:
            events += 1
            if events > keep_events:
                continue
        body.append(line[start:pos])
    inner = b"".join(body)
    return b"\x1a" + varint(len(inner)) + inner


# The most bytes of a seed of the unit-test suite (`big=False`): each input reads in milliseconds.
_SMALL_SEED_BYTES = 64 << 10


def _xplane_seeds(big: bool) -> list[bytes]:
    seeds = []
    for name in _XPLANE_SEEDS:
        data = (DATA / name).read_bytes()
        parts = xspace_parts(data)
        planes = [p for p in parts if p[:1] == b"\x0a"]
        rest = b"".join(p for p in parts if p[:1] != b"\x0a")
        if big:
            seeds.append(data)
        seeds.append(b"".join(small_plane(p, 3, 12) for p in planes) + rest)
        seeds.extend(small_plane(p, 2, 40) + rest for p in planes[:4])
    return seeds if big else [s for s in seeds if len(s) <= _SMALL_SEED_BYTES]


def _chrome_seeds(big: bool) -> list[bytes]:
    seeds = [gzip.decompress((DATA / name).read_bytes()) for name in _CHROME_SEEDS]
    return seeds if big else [_head_of_trace(s, 40) for s in seeds]


def _head_of_trace(text: bytes, events: int) -> bytes:
    """A real trace cut after its first `events` events and closed again (`]}`): a fast seed."""
    boundary = [m.start() + 1 for m in re.finditer(rb"\}\s*,\s*\{", text)]
    if len(boundary) <= events:
        return text
    return text[: boundary[events]] + b"]}"


@functools.cache
def seeds(reader: str, big: bool = True) -> tuple[bytes, ...]:
    """The seed inputs of `reader`; `big=False` keeps only small ones (the unit-test suite)."""
    if reader == "xplane":
        return tuple(_xplane_seeds(big))
    if reader in ("chrome_json", "chrome_gz"):
        return tuple(_chrome_seeds(big))
    texts = [(DATA / name).read_bytes() for name in _TEXT_SEEDS[reader]]
    return tuple(texts if big else (_head_of_log(t, _SMALL_TEXT_BYTES) for t in texts))


# The most bytes of a text seed of the unit-test suite, cut where a record starts.
_SMALL_TEXT_BYTES = 16 << 10
_RECORD_START = re.compile(rb"^(?:\[ScheduleSyncTensorsGraph\]|\[MetricsData|Metric: )", re.M)


def _head_of_log(text: bytes, most: int) -> bytes:
    """The records of a log (graphs, metrics) that start within its first `most` bytes (all of a
    log without such records)."""
    if len(text) <= most:
        return text
    cuts = [m.start() for m in _RECORD_START.finditer(text, 1, most)]
    return text[: cuts[-1]] if cuts else text


# -- mutations ------------------------------------------------------------------------------------


def _span(rng: random.Random, size: int, most: int) -> tuple[int, int]:
    start = rng.randrange(size + 1)
    return start, min(size, start + rng.randint(0, most))


def _truncate(rng: random.Random, data: bytes, donors: tuple[bytes, ...], tokens: tuple[bytes, ...]) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _flip(rng: random.Random, data: bytes, donors: tuple[bytes, ...], tokens: tuple[bytes, ...]) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(out))
        out[i] = rng.randrange(256) if rng.random() < 0.5 else out[i] ^ (1 << rng.randrange(8))
    return bytes(out)


def _splice(rng: random.Random, data: bytes, donors: tuple[bytes, ...], tokens: tuple[bytes, ...]) -> bytes:
    donor = rng.choice(donors)
    a, b = _span(rng, len(donor), 4096)
    c, d = _span(rng, len(data), 4096)
    return data[:c] + donor[a:b] + data[d:]


def _duplicate(
    rng: random.Random, data: bytes, donors: tuple[bytes, ...], tokens: tuple[bytes, ...]
) -> bytes:
    a, b = _span(rng, len(data), 1 << 16)
    at = rng.randrange(len(data) + 1)
    return data[:at] + data[a:b] * rng.choice((1, 1, 2, 16)) + data[at:]


def _delete(rng: random.Random, data: bytes, donors: tuple[bytes, ...], tokens: tuple[bytes, ...]) -> bytes:
    a, b = _span(rng, len(data), 1 << 12)
    return data[:a] + data[b:]


def _insert(rng: random.Random, data: bytes, donors: tuple[bytes, ...], tokens: tuple[bytes, ...]) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice(tokens) + data[at:]


_DIGITS = re.compile(rb"\d+(?:\.\d+)?")
_HOSTILE_NUMBERS = (
    b"1e999999", b"-1e999", b"1e300", b"9300000000000000000", b"9" * 5000, b"nan", b"-0", b"0.0000000000000000000001",
    b"1e-999999", b"18446744073709551616", b"-9223372036854775809", b"inf",
)  # fmt: skip


def _renumber(rng: random.Random, data: bytes, donors: tuple[bytes, ...], tokens: tuple[bytes, ...]) -> bytes:
    """A number of the text (a time, a count, an id) replaced by one no writer prints."""
    at = rng.randrange(len(data) + 1)
    m = _DIGITS.search(data, at) or _DIGITS.search(data)
    if m is None:
        return data
    return data[: m.start()] + rng.choice(_HOSTILE_NUMBERS) + data[m.end() :]


_HOSTILE_VARINTS = (0, 1, 2**31, 2**61, 2**62, 2**63 - 1, 2**63, 2**64 - 1, 2**64 - 2**61, 10**18)


def _proto_fields(data: bytes, depth: int) -> list[list[Any]] | None:
    """[number, wire type, value] of each field of a protobuf message (a LEN value that parses
    as a message too becomes its field list), or None when `data` is no message."""
    fields, pos = [], 0
    try:
        while pos < len(data):
            tag, pos = read_varint(data, pos, len(data))
            number, wire_type = tag >> 3, tag & 7
            if number == 0:
                return None
            if wire_type == 0:
                value, pos = read_varint(data, pos, len(data))
            elif wire_type == 2:
                length, pos = read_varint(data, pos, len(data))
                if pos + length > len(data):
                    return None
                raw = data[pos : pos + length]
                pos += length
                value = (_proto_fields(raw, depth + 1) if depth < 6 and raw else None) or raw
            elif wire_type in (1, 5):
                size = 8 if wire_type == 1 else 4
                value, pos = data[pos : pos + size], pos + size
            else:
                return None
            fields.append([number, wire_type, value])
    except WireError:
        return None
    return fields if pos == len(data) else None


def _proto_bytes(fields: list[list[Any]]) -> bytes:
    out = []
    for number, wire_type, value in fields:
        out.append(varint(number << 3 | wire_type))
        if wire_type == 0:
            out.append(varint(value))
        elif wire_type == 2:
            payload = value if isinstance(value, bytes) else _proto_bytes(value)
            out.append(varint(len(payload)) + payload)
        else:
            out.append(value)
    return b"".join(out)


def _proto_renumber(
    rng: random.Random, data: bytes, donors: tuple[bytes, ...], tokens: tuple[bytes, ...]
) -> bytes:
    """A varint field anywhere in the message tree (a time, a duration, an id, a count) set to a
    value no profiler writes, lengths re-encoded so the rest still parses."""
    fields = _proto_fields(data, 0) if len(data) <= 1 << 16 else None
    if not fields:
        return _flip(rng, data, donors, tokens)
    varints: list[list[Any]] = []
    stack = [fields]
    while stack:
        for field in stack.pop():
            if field[1] == 0:
                varints.append(field)
            elif isinstance(field[2], list):
                stack.append(field[2])
    for field in rng.sample(varints, min(len(varints), rng.choice((1, 1, 3)))):
        field[2] = rng.choice(_HOSTILE_VARINTS)
    return _proto_bytes(fields)


def _bomb(rng: random.Random, data: bytes, donors: tuple[bytes, ...], tokens: tuple[bytes, ...]) -> bytes:
    """One token repeated thousands of times: deep nesting, a huge number, an endless string."""
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice(tokens) * rng.choice((100, 5000, 100_000)) + data[at:]


_MUTATIONS: tuple[Callable[..., bytes], ...] = (
    _truncate, _flip, _flip, _splice, _duplicate, _delete, _insert, _insert, _bomb, _renumber, _renumber,
)  # fmt: skip


def mutate(rng: random.Random, data: bytes, donors: tuple[bytes, ...], tokens: tuple[bytes, ...]) -> bytes:
    """`data` after one to three random mutations (for protobuf, half the time one that keeps the
    message well formed first)."""
    if tokens is _PROTO_TOKENS and rng.random() < 0.5:
        data = _proto_renumber(rng, data, donors, tokens)
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        data = rng.choice(_MUTATIONS)(rng, data, donors, tokens)
    return data


def _tokens(reader: str) -> tuple[bytes, ...]:
    if reader == "xplane":
        return _PROTO_TOKENS
    return _JSON_TOKENS if reader.startswith("chrome") else _TEXT_TOKENS


def input_from(reader: str, rng: random.Random, big: bool = True) -> bytes:
    """One fuzzed input for `reader`, drawn with `rng`."""
    donors = seeds(reader, big)
    data = mutate(rng, rng.choice(donors), donors, _tokens(reader))
    if reader != "chrome_gz":
        return data
    if rng.random() < 0.7:
        return gzip.compress(data, compresslevel=1, mtime=0)
    packed = gzip.compress(rng.choice(donors), compresslevel=1, mtime=0)
    return rng.choice((_truncate, _flip, _duplicate, _delete))(rng, packed, donors, _tokens(reader))


def make_input(reader: str, seed: int, index: int) -> bytes:
    """Input number `index` of the soak with `seed` (the same bytes every time)."""
    return input_from(reader, random.Random(f"{seed}:{reader}:{index}"))


# -- running a reader -----------------------------------------------------------------------------

FILE_NAMES = {
    "xplane": "fuzz.xplane.pb",
    "chrome_json": "fuzz.pt.trace.json",
    "chrome_gz": "fuzz.pt.trace.json.gz",
    "xla_metrics": "fuzz.xla_metrics.txt",
    "xla_debug": "fuzz.xla_debug.txt",
    "xla_graphs": "fuzz.xla_graphs.txt",
}
READERS = tuple(FILE_NAMES)
# A refusal's message must describe the problem, not the exception that found it.
_EXCEPTION_NAME = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|Traceback")


def reader_function(reader: str) -> Callable[..., Any]:
    """The `read(path, fs)` function fuzzed as `reader`; for graph logs also the parse of every
    graph body into nodes, which the `xla/graph` route does on demand."""
    from profscope.formats.chrome import reader as chrome_json
    from profscope.formats.xla import debug as xla_debug
    from profscope.formats.xla import graph_text as xla_graph_text
    from profscope.formats.xla import graphs as xla_graphs
    from profscope.formats.xla import metrics as xla_metrics
    from profscope.formats.xplane import reader as xplane

    def graphs_and_nodes(path: str, fs: Any) -> Any:
        parsed = xla_graphs.read(path, fs)
        for record in parsed.records:
            xla_graph_text.parse_nodes(record.format, parsed.body(record))
        return parsed

    return {
        "xplane": xplane.read,
        "chrome_json": chrome_json.read,
        "chrome_gz": chrome_json.read,
        "xla_metrics": xla_metrics.read,
        "xla_debug": xla_debug.read,
        "xla_graphs": graphs_and_nodes,
    }[reader]


def run_reader(reader: str, data: bytes) -> tuple[str, str]:
    """(outcome, detail) of reading `data` as `reader` from an in-memory filesystem: "loaded",
    "refused" (UnreadableProfile naming the file, no exception type in the message), "memory"
    (MemoryError) or "crash" (anything else)."""
    import fsspec

    from profscope.errors import UnreadableProfile

    fs = fsspec.filesystem("memory")
    path = f"/fuzz/{os.getpid()}/{FILE_NAMES[reader]}"
    fs.pipe_file(path, data)
    try:
        reader_function(reader)(path, fs)
    except UnreadableProfile as exc:
        message = str(exc)
        if path not in message or _EXCEPTION_NAME.search(exc.reason):
            return "crash", f"refusal without the file or with an exception type: {message[:300]}"
        return "refused", exc.reason[:200]
    except MemoryError:
        return "memory", "MemoryError"
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return "crash", f"{type(exc).__name__} at {where}: {str(exc)[:200]}"
    finally:
        fs.rm_file(path)
    return "loaded", ""


# -- the soak -------------------------------------------------------------------------------------


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


def _worker(
    reader: str, seed: int, indices: range, memory_bytes: int, conn: multiprocessing.connection.Connection
) -> None:
    """Child body: read each input in turn, telling the parent when one starts and how it ended."""
    seeds(reader)
    reader_function(reader)
    limit = _address_space() + memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for index in indices:
        data = make_input(reader, seed, index)
        conn.send(("start", index))
        started = time.perf_counter()
        outcome, detail = run_reader(reader, data)
        conn.send(("done", index, outcome, detail, time.perf_counter() - started))
    conn.close()


# An input is a hang past `--seconds` of the worker's CPU time, or this many times that of wall
# time (CPU time, so that a machine shared with other work does not turn slow reads into hangs).
WALL_FACTOR = 4


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Lane:
    """One worker process and the indices it has left."""

    def __init__(self, context: Any, reader: str, seed: int, indices: range, memory_bytes: int) -> None:
        self.args = (reader, seed, memory_bytes)
        self.context = context
        self.pending = indices
        self.current: int | None = None
        self.finished = 0  # inputs done since the worker started
        self.since = self.cpu_since = 0.0
        self.process: Any = None
        self.conn: Any = None
        self._spawn()

    def _spawn(self) -> None:
        reader, seed, memory_bytes = self.args
        parent, child = self.context.Pipe(duplex=False)
        self.process = self.context.Process(
            target=_worker, args=(reader, seed, self.pending, memory_bytes, child), daemon=True
        )
        self.process.start()
        child.close()
        self.conn = parent
        self.current = None
        self.finished = 0
        self.since = time.monotonic()

    def restart_after_current(self) -> None:
        """Kill the worker and go on with the inputs after the one it was reading."""
        self.process.kill()
        self.process.join()
        self.conn.close()
        assert self.current is not None
        self.pending = range(self.current + 1, self.pending.stop)
        if len(self.pending):
            self._spawn()
        else:
            self.conn = None

    @property
    def done(self) -> bool:
        return self.conn is None


# Findings of one kind kept for the report (up to 3 of each distinct message).
MAX_FINDINGS = 20


class Tally:
    """Outcomes of one reader's inputs, and the first findings of each kind."""

    KINDS = ("loaded", "refused", "crash", "hang", "memory", "died")

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.findings: dict[str, list[tuple[int, str]]] = collections.defaultdict(list)
        self.slowest = (0.0, -1)
        self.distinct: collections.Counter[str] = collections.Counter()

    def add(self, kind: str, index: int, detail: str = "", seconds: float = 0.0) -> None:
        self.counts[kind] += 1
        if seconds > self.slowest[0]:
            self.slowest = (seconds, index)
        if kind in ("loaded", "refused"):
            return
        key = f"{kind}: {re.sub(r'[0-9]+', 'N', detail)[:160]}"
        self.distinct[key] += 1
        if self.distinct[key] <= 3 and len(self.findings[kind]) < MAX_FINDINGS:
            self.findings[kind].append((index, detail))

    @property
    def clean(self) -> bool:
        return all(self.counts[k] == 0 for k in ("crash", "hang", "memory", "died"))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def merge(self, other: Tally) -> None:
        """Add the outcomes of a later round."""
        self.counts.update(other.counts)
        self.slowest = max(self.slowest, other.slowest)
        for key, n in other.distinct.items():
            self.distinct[key] += n
        for kind, found in other.findings.items():
            self.findings[kind] = (self.findings[kind] + found)[:MAX_FINDINGS]

    def to_json(self) -> dict[str, Any]:
        return {
            "counts": dict(self.counts),
            "findings": dict(self.findings),
            "slowest": list(self.slowest),
            "distinct": dict(self.distinct),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tally:
        tally = cls()
        tally.counts.update(data["counts"])
        for kind, found in data["findings"].items():
            tally.findings[kind] = [(int(i), str(d)) for i, d in found]
        tally.slowest = (float(data["slowest"][0]), int(data["slowest"][1]))
        tally.distinct.update(data["distinct"])
        return tally


def soak(reader: str, inputs: range, seed: int, seconds: float, memory_mb: int, workers: int) -> Tally:
    """Run the inputs numbered `inputs` of `reader` over `workers` processes; every input bounded
    in time and memory."""
    context = multiprocessing.get_context("fork")
    seeds(reader)  # loaded once here, shared with the forked workers
    share = -(-len(inputs) // workers)
    lanes = [
        _Lane(context, reader, seed, range(lo, min(inputs.stop, lo + share)), memory_mb << 20)
        for lo in range(inputs.start, inputs.stop, share)
    ]
    tally = Tally()
    while not all(lane.done for lane in lanes):
        live = [lane for lane in lanes if not lane.done]
        ready = multiprocessing.connection.wait([lane.conn for lane in live], timeout=0.2)
        now = time.monotonic()
        for lane in live:
            if lane.conn in ready:
                try:
                    message = lane.conn.recv()
                except EOFError:
                    lane.process.join()
                    if lane.current is not None:  # died inside an input: a signal or the memory bound
                        code = lane.process.exitcode
                        tally.add("died", lane.current, f"worker ended with exit code {code}")
                        lane.restart_after_current()
                    elif lane.finished < len(lane.pending):  # never got to an input: no finding
                        raise SystemExit(
                            f"a {reader} worker ended with exit code {lane.process.exitcode} before input "
                            f"#{lane.pending.start + lane.finished} (see its traceback above)"
                        ) from None
                    else:
                        lane.conn.close()
                        lane.conn = None
                    continue
                if message[0] == "start":
                    lane.current, lane.since, lane.cpu_since = message[1], now, _cpu_seconds(lane.process.pid)
                else:
                    _, index, outcome, detail, took = message
                    tally.add(outcome, index, detail, took)
                    lane.current = None
                    lane.finished += 1
            elif lane.current is not None and (
                now - lane.since > WALL_FACTOR * seconds
                or _cpu_seconds(lane.process.pid) - lane.cpu_since > seconds
            ):
                tally.add(
                    "hang",
                    lane.current,
                    f"no answer within {seconds:g} s of CPU or {WALL_FACTOR * seconds:g} s",
                )
                lane.restart_after_current()
    return tally


def _report(reader: str, tally: Tally, took: float, save: Path | None, seed: int) -> None:
    counts = tally.counts
    total = tally.total
    figures = ", ".join(f"{k} {counts[k]}" for k in Tally.KINDS)
    print(f"{reader}: {total} inputs in {took:.0f} s ({total / max(took, 1e-9):.1f}/s): {figures}")
    print(f"  slowest input: #{tally.slowest[1]} {tally.slowest[0]:.2f} s")
    for kind, found in tally.findings.items():
        for index, detail in found:
            print(f"  {kind} #{index}: {detail}")
            if save is not None:
                save.mkdir(parents=True, exist_ok=True)
                (save / f"{reader}-{kind}-{index}.bin").write_bytes(make_input(reader, seed, index))
    for key, n in tally.distinct.most_common(20):
        print(f"  {n:6d} × {key}")


def _load_state(path: Path | None, seed: int) -> dict[str, Any]:
    if path is None or not path.exists():
        return {"seed": seed, "readers": {}}
    state = json.loads(path.read_text())
    if state["seed"] != seed:
        raise SystemExit(f"{path} holds a soak with --seed {state['seed']}, not {seed}")
    return state


def _save_state(path: Path | None, state: dict[str, Any]) -> None:
    if path is not None:
        path.with_suffix(".tmp").write_text(json.dumps(state))
        path.with_suffix(".tmp").replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--inputs", type=int, default=100_000, help="inputs per reader")
    parser.add_argument("--readers", default=",".join(READERS))
    parser.add_argument("--seconds", type=float, default=5.0, help="time bound of one input")
    parser.add_argument("--memory-mb", type=int, default=1024, help="address space a worker may add")
    parser.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", type=Path, help="write the inputs of findings here")
    parser.add_argument("--state", type=Path, help="tallies kept here; a later run goes on from them")
    parser.add_argument("--round", type=int, default=2000, help="inputs per reader and turn")
    parser.add_argument("--minutes", type=float, help="stop after the round running at this time")
    args = parser.parse_args(argv)
    readers = args.readers.split(",")
    for reader in readers:
        if reader not in READERS:
            parser.error(f"unknown reader {reader!r} (one of {', '.join(READERS)})")
    state = _load_state(args.state, args.seed)
    tallies, seconds = {}, {}
    for reader in readers:
        saved = state["readers"].get(reader)
        tallies[reader] = Tally.from_json(saved["tally"]) if saved else Tally()
        seconds[reader] = saved["seconds"] if saved else 0.0
    stop = None if args.minutes is None else time.monotonic() + args.minutes * 60
    while stop is None or time.monotonic() < stop:
        todo = [r for r in readers if tallies[r].total < args.inputs]
        if not todo:
            break
        for reader in todo:
            done = tallies[reader].total
            started = time.monotonic()
            tally = soak(
                reader,
                range(done, min(args.inputs, done + args.round)),
                args.seed,
                args.seconds,
                args.memory_mb,
                args.workers,
            )
            seconds[reader] += time.monotonic() - started
            tallies[reader].merge(tally)
            state["readers"][reader] = {"tally": tallies[reader].to_json(), "seconds": seconds[reader]}
            _save_state(args.state, state)
            counts = tallies[reader].counts
            print(
                f"  {reader}: {tallies[reader].total} inputs so far; "
                + ", ".join(f"{k} {counts[k]}" for k in Tally.KINDS if counts[k]),
                flush=True,
            )
    clean = True
    for reader in readers:
        _report(reader, tallies[reader], seconds[reader], args.save, args.seed)
        clean &= tallies[reader].clean
    sys.stdout.flush()
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
