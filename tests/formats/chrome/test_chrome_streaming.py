"""The Chrome / Kineto reader in bounded memory: tiny blocks, windows and chunks give the same trace.

Each decoding process writes its columns to a temporary file chunk by chunk and the reader reads
them back in file order (`chrome_spill`); B/E and async pairs carry their open begins from chunk
to chunk, and Kineto id joins and flow points go by buckets of ids (`chrome_flows`). Reading the
real traces of tests/data/kineto and tests/data/overview with sizes small enough that a chunk
holds a few dozen events (so launches, kernels, flow points and pairs sit in different chunks)
must give the trace of the default read: every column, args, flows, counters, warnings, skip
counts and metadata. String ids are compared as their texts: they follow the order strings are
first met within each decoded window, which depends on the window size.
"""

from __future__ import annotations

import dataclasses
import errno
import gzip
import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest

from profscope.formats.chrome import blocks as chrome_blocks
from profscope.formats.chrome import columns as chrome_columns
from profscope.formats.chrome import flows as chrome_flows
from profscope.formats.chrome import parts as chrome_parts
from profscope.formats.chrome import reader as chrome_json
from profscope.formats.chrome import scan as chrome_scan
from profscope.formats.chrome import spill as chrome_spill
from profscope.model.spill import budget as spill_budget
from profscope.model.spill import files as spill_files
from profscope.model.spill import page_cache as spill_pages
from profscope.model.spill import sort as spill_sort
from tests.support import DATA_DIR
from tests.support.same_trace import assert_same_trace

pytestmark = pytest.mark.stack_independent

DATA = DATA_DIR
REAL = sorted(
    p.relative_to(DATA).as_posix() for d in ("kineto", "overview") for p in (DATA / d).glob("*.json.gz")
)

NS_TRACE = "kineto/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
# 1 MB of JSON with shapes and types in most events' args: some 60 chunks of tiny()'s size.
ARGS_TRACE = "kineto/bert_small.pt.trace.json.gz"


def read(path: Path) -> Any:
    return chrome_json.read(str(path), fsspec.filesystem("file"))


def tiny(monkeypatch: pytest.MonkeyPatch, chunk: int = 16 << 10) -> list[dict[str, int]]:
    """Blocks of 16 kB, windows of 4 kB, a chunk every `chunk` bytes; returns a list that gets
    the rows per table of each chunk written."""
    monkeypatch.setattr(chrome_blocks, "READ_BLOCK_BYTES", 16 << 10)
    monkeypatch.setattr(chrome_scan, "WINDOW_BYTES", 4096)
    monkeypatch.setattr(chrome_scan, "MIN_WINDOW_BYTES", 512)
    monkeypatch.setattr(chrome_spill, "CHUNK_BYTES", chunk)
    written: list[dict[str, int]] = []
    flush = chrome_columns.ColumnCollector.flush

    def counting(self: chrome_columns.ColumnCollector, spill: chrome_spill.SpillFile) -> None:
        before = len(self.chunks)
        flush(self, spill)
        written.extend(dict(ref.rows) for ref in self.chunks[before:])

    monkeypatch.setattr(chrome_columns.ColumnCollector, "flush", counting)
    return written


def resolved(trace: Any, flows_in_order: bool = True) -> dict[str, Any]:
    """Everything a trace holds, string ids replaced by their texts."""
    text = np.asarray(trace.strings, dtype=object)
    flows = list(zip(trace.flow_src.tolist(), trace.flow_dst.tolist(), text[trace.flow_name].tolist()))
    out = {
        field.name: getattr(trace, field.name)
        for field in dataclasses.fields(trace)
        if field.name
        not in ("strings", "ev_name", "ev_cat", "flow_src", "flow_dst", "flow_name", "attachments")
    }
    for name, value in out.items():
        if isinstance(value, np.ndarray):
            out[name] = (value.dtype.str, value.tolist())
    out["sections"] = [dataclasses.astuple(s) for s in trace.sections]
    out["tracks"] = [dataclasses.astuple(t) for t in trace.tracks]
    out["metadata"] = json.dumps(trace.metadata, sort_keys=True)
    out["strings"] = sorted(trace.strings)
    out["ev_name"] = text[trace.ev_name].tolist()
    out["ev_cat"] = text[trace.ev_cat].tolist()
    out["flows"] = flows if flows_in_order else sorted(flows)
    return out


def assert_same(a: Any, b: Any, flows_in_order: bool = True) -> None:
    ra, rb = resolved(a, flows_in_order), resolved(b, flows_in_order)
    assert ra.keys() == rb.keys()
    for key in ra:
        assert ra[key] == rb[key], key


@pytest.fixture(scope="module")
def defaults() -> dict[str, Any]:
    return {name: read(DATA / name) for name in REAL}


@pytest.mark.parametrize("name", REAL)
def test_tiny_chunks_give_the_trace_of_the_default_read(
    defaults: dict[str, Any], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    written = tiny(monkeypatch)
    trace = read(DATA / name)
    assert_same(trace, defaults[name])
    rows = [sum(w.values()) for w in written]
    assert len(rows) >= trace.num_events // 400 and max(rows) < 400  # many chunks, none big
    if trace.flow_src.shape[0]:
        # Builder index = position in the file among complete events (none is dropped here):
        # some flows join events of different chunks.
        ends = np.cumsum([w.get("ev", 0) for w in written])
        src, dst = (
            np.searchsorted(ends, trace.ev_args[f], side="right") for f in (trace.flow_src, trace.flow_dst)
        )
        assert (src != dst).any()


@pytest.mark.parametrize(
    ("name", "budget"),
    [
        (NS_TRACE, 64 << 10),
        ("kineto/worker0.1623143089861.pt.trace.json.gz", 64 << 10),
        ("kineto/alexnet.pt.trace.json.gz", 2 << 10),
    ],
)
def test_links_and_flow_points_in_many_buckets_give_the_same_flows(
    defaults: dict[str, Any], monkeypatch: pytest.MonkeyPatch, name: str, budget: int
) -> None:
    """Every Kineto id join and every Chrome flow resolved within its bucket: the same flows
    (in bucket order), the same single-endpoint skips, the same counts in the metadata."""
    tiny(monkeypatch, chunk=256 << 10)
    monkeypatch.setattr(chrome_flows, "LINK_BUDGET_BYTES", budget)
    buckets: list[int] = []
    original = chrome_flows._buckets

    def counted(nbytes: int) -> int:
        buckets.append(original(nbytes))
        return buckets[-1]

    monkeypatch.setattr(chrome_flows, "_buckets", counted)
    trace = read(DATA / name)
    assert max(buckets) >= 4
    assert_same(trace, defaults[name], flows_in_order=False)


def test_launch_flows_in_many_buckets_are_the_correlations_of_the_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counted independently: one launch flow per device event whose correlation id a host
    event carries too."""
    events = json.loads(gzip.decompress((DATA / NS_TRACE).read_bytes()))["traceEvents"]
    device = ("kernel", "gpu_memcpy", "gpu_memset")
    host = {
        e["args"]["correlation"]
        for e in events
        if e.get("ph") == "X" and e.get("cat") not in device and "correlation" in e.get("args", {})
    }
    launched = [
        e["args"]["correlation"]
        for e in events
        if e.get("ph") == "X" and e.get("cat") in device and e["args"].get("correlation") in host
    ]
    monkeypatch.setattr(chrome_flows, "LINK_BUDGET_BYTES", 8 << 10)
    trace = read(DATA / NS_TRACE)
    assert int((trace.flow_name == trace.strings.index("launch")).sum()) == len(launched) > 1000
    assert trace.metadata["reader"]["launch_flows_from_correlation"] == len(set(launched))


def test_the_helper_process_with_tiny_chunks_gives_the_same_trace(
    defaults: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress((DATA / NS_TRACE).read_bytes()))
    sequential = read(plain)
    tiny(monkeypatch)
    monkeypatch.setattr(chrome_json, "PARALLEL_MIN_BYTES", 0)
    sizes: list[int] = []
    original = chrome_json.chrome_helper.HelperProcess.result

    def result(self: Any) -> Any:
        tail = original(self)
        sizes.append(len(tail.collector.chunks))
        return tail

    monkeypatch.setattr(chrome_json.chrome_helper.HelperProcess, "result", result)
    parallel = read(plain)
    # The helper decodes windows of its own default size: a chunk per window of ~1 MB.
    assert sizes and sizes[0] >= 5
    assert_same(parallel, sequential, flows_in_order=False)


# -- synthetic: pairs, flows and counters across chunks ------------------------------------------


def _events() -> list[dict[str, Any]]:
    """Nested and unclosed B/E, async pairs of two names on one id, instants, counters, Chrome
    flows and flow v2 bindings, each spread over hundreds of events of padding."""
    pad = [
        {"ph": "X", "name": f"pad{i}", "pid": 1, "tid": 9, "ts": 10 * i, "dur": 5, "args": {"i": i}}
        for i in range(600)
    ]
    out: list[dict[str, Any]] = []
    specials = {
        10: {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 100, "args": {"a": 1}},
        20: {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 200, "bind_id": 7, "flow_out": True},
        30: {"ph": "E", "pid": 1, "tid": 2, "ts": 250},  # no B on this thread
        40: {"ph": "b", "name": "req", "cat": "net", "id": 5, "pid": 1, "ts": 300},
        50: {"ph": "b", "name": "other", "cat": "net", "id": 5, "pid": 1, "ts": 310},
        60: {"ph": "n", "name": "mark", "cat": "net", "id": 5, "pid": 1, "ts": 320},
        80: {"ph": "s", "name": "hop", "cat": "c", "id": 3, "pid": 1, "tid": 9, "ts": 1001},
        100: {"ph": "C", "name": "mem", "pid": 1, "ts": 400, "args": {"used": 1, "free": 2}},
        300: {"ph": "E", "pid": 1, "tid": 1, "ts": 3000, "args": {"b": 2}},  # closes inner
        350: {"ph": "e", "name": "req", "cat": "net", "id": 5, "pid": 1, "ts": 3500},
        400: {
            "ph": "X",
            "name": "sink",
            "pid": 1,
            "tid": 9,
            "ts": 4001,
            "dur": 3,
            "bind_id": 7,
            "flow_in": True,
        },
        450: {"ph": "f", "name": "hop", "cat": "c", "id": 3, "pid": 1, "tid": 9, "ts": 4501, "bp": "e"},
        500: {"ph": "C", "name": "mem", "pid": 1, "ts": 5000, "args": {"used": 3, "free": 4}},
        550: {"ph": "B", "name": "open", "pid": 1, "tid": 3, "ts": 5500},
    }
    for i, event in enumerate(pad):
        if i in specials:
            out.append(specials[i])
        out.append(event)
    return out


def test_pairs_flows_and_counters_across_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": _events()}))
    default = read(path)
    written = tiny(monkeypatch, chunk=1024)
    trace = read(path)
    assert len(written) > 10
    assert_same(trace, default)
    names = [trace.strings[n] for n in trace.ev_name.tolist()]
    spans = {n: (s, d) for n, s, d in zip(names, trace.ev_start_ps.tolist(), trace.ev_dur_ps.tolist())}
    assert spans["inner"] == (200_000_000, 2_800_000_000)
    assert spans["req"] == (300_000_000, 3_200_000_000) and spans["mark"] == (320_000_000, 0)
    last = 5990_000_000 + 5_000_000  # the end of the last padding event
    assert spans["outer"] == (100_000_000, last - 100_000_000)  # never closed
    assert spans["other"] == (310_000_000, last - 310_000_000)
    assert spans["open"] == (5500_000_000, last - 5500_000_000)
    inner = names.index("inner")
    assert json.loads(trace.args_json(inner)) == {"b": 2}
    pairs = {(names[s], names[d]) for s, d in zip(trace.flow_src.tolist(), trace.flow_dst.tolist())}
    assert pairs == {("inner", "sink"), ("pad100", "pad450")}
    assert trace.skipped == {"E events without a matching B": 1}
    assert sorted(trace.warnings) == [
        "1 async begin events have no matching end; shown until the end of the trace",
        "2 B events have no matching E; shown until the end of the trace",
    ]
    assert trace.ctr_value.tolist() == [2.0, 4.0, 1.0, 3.0]


def test_halves_out_of_time_order_are_paired_by_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread whose halves are not in time order in the file: pairing sorts them all first,
    whatever the chunks."""
    events = _events()
    events.append({"ph": "E", "pid": 1, "tid": 3, "ts": 5600})  # closes "open"
    events.insert(5, {"ph": "B", "name": "early", "pid": 1, "tid": 3, "ts": 5550})  # before it in time
    events.insert(3, {"ph": "E", "pid": 1, "tid": 3, "ts": 5580})  # closes "early"
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    default = read(path)
    tiny(monkeypatch, chunk=1024)
    trace = read(path)
    assert_same(trace, default)
    names = [trace.strings[n] for n in trace.ev_name.tolist()]
    spans = {n: (s, d) for n, s, d in zip(names, trace.ev_start_ps.tolist(), trace.ev_dur_ps.tolist())}
    assert spans["open"] == (5500_000_000, 100_000_000)
    assert spans["early"] == (5550_000_000, 30_000_000)


def _shuffled_halves(seed: int) -> list[dict[str, Any]]:
    """Nested B/E slices on a dozen threads (one long-lived thread with most of them, so the
    sort in pieces cuts it by time), request spans of a few hundred async ids on two names, equal
    times at many places, some args on both halves; the whole list shuffled."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []

    def nest(tid: int, t0: int, t1: int, depth: int) -> None:
        t = t0
        while t < t1:
            a = t + rng.randint(0, 3)
            b = a + rng.randint(0, 40)
            if b > t1:
                return
            begin: dict[str, Any] = {"ph": "B", "name": rng.choice("fgh"), "pid": 1, "tid": tid, "ts": a}
            if rng.random() < 0.3:
                begin["args"] = {"x": rng.randint(0, 9)}
            events.append(begin)
            if depth < 3 and b - a > 4:
                nest(tid, a + 1, b - 1, depth + 1)
            end: dict[str, Any] = {"ph": "E", "pid": 1, "tid": tid, "ts": b}
            if rng.random() < 0.2:
                end["args"] = {"y": 1}
            events.append(end)
            t = b

    for tid in range(12):
        nest(tid, 0, 40_000 if tid == 0 else 2_000, 0)
    for _ in range(3000):
        ts, name, ident = rng.randint(0, 5000), rng.choice(["req", "r2"]), rng.randint(0, 300)
        for ph, dt in (("b", 0), ("e", rng.randint(0, 30))):
            events.append(
                {"ph": ph, "cat": "c", "name": name, "id": ident, "pid": 2, "tid": 1, "ts": ts + dt}
            )
    rng.shuffle(events)
    return events


def test_halves_out_of_order_beyond_the_sort_budget_are_paired_in_pieces_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More halves out of time order than an in-memory sort may take: sorted in pieces through a
    temporary file (a long thread cut by time), the trace is the one of the in-memory sort."""
    path = tmp_path / "shuffled.json"
    path.write_text(json.dumps({"traceEvents": _shuffled_halves(3)}))
    in_memory = read(path)
    plans: list[spill_sort.Plan] = []
    plan = spill_sort.plan

    def recorded(*args: Any) -> spill_sort.Plan:
        plans.append(plan(*args))
        return plans[-1]

    monkeypatch.setattr(spill_sort, "plan", recorded)
    monkeypatch.setattr(chrome_spill, "sort_bytes", lambda: 256 << 10)
    monkeypatch.setattr(chrome_spill, "CHUNK_BYTES", 64 << 10)
    in_pieces = read(path)
    assert_same(in_pieces, in_memory)
    be, asy = plans
    assert len(be) > 4 and any(p.split for p in be.pieces)
    assert len(asy) > 1
    assert in_pieces.num_events > 5_000


def test_a_full_disk_is_the_machines_fault_not_the_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writing the chunks fails: the ingest is told it is the temporary directory (SpillWriteError,
    no OSError that readers turn into "unreadable file"), and the directory is left empty."""
    tiny(monkeypatch, chunk=64 << 10)
    real = spill_files.pwrite_all
    room = [100 << 10]

    def full_disk(fd: int, piece: Any, at: int) -> None:
        """Takes 100 kB, then reports a full disk (on the thread that writes behind, too)."""
        n = memoryview(piece).nbytes
        if n > room[0]:
            raise OSError(28, "No space left on device")
        room[0] -= n
        real(fd, piece, at)

    monkeypatch.setattr(spill_files, "pwrite_all", full_disk)
    spill_dir = tmp_path / "scratch"
    spill_dir.mkdir()
    budget = spill_budget.IngestMemory(str(spill_dir), 64 << 20, reader_bytes=64 << 20)
    with spill_budget.use(budget), pytest.raises(spill_budget.SpillWriteError) as caught:
        read(DATA / NS_TRACE)
    error = caught.value.error
    assert isinstance(error, OSError) and str(spill_dir) in str(error) and "No space left" in str(error)
    assert list(spill_dir.iterdir()) == []


def test_the_chunks_are_given_back_as_the_assembly_reads_them(
    defaults: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Complete events, their links and flow points are read once: each chunk's space in the
    temporary file goes back to the system right after (page by page, before the file is closed),
    and the trace is the same."""
    tiny(monkeypatch, chunk=64 << 10)
    written: list[int] = []
    released: list[tuple[int, int]] = []
    put, release = chrome_spill.SpillFile._put, spill_pages.release_range

    def putting(self: chrome_spill.SpillFile, column: Any) -> tuple[int, str, int]:
        placed = put(self, column)
        written.append(placed[2] * np.dtype(placed[1]).itemsize)
        return placed

    def releasing(fd: int, at: int, size: int) -> bool:
        released.append((at, size))
        return release(fd, at, size)

    monkeypatch.setattr(chrome_spill.SpillFile, "_put", putting)
    monkeypatch.setattr(spill_pages, "release_range", releasing)
    trace = read(DATA / NS_TRACE)
    spill_pages.wait_released()  # released by a thread of their own
    assert_same(trace, defaults[NS_TRACE])
    assert len(released) > 20
    assert sum(size for _, size in released) > 0.9 * sum(written)


def test_chunks_are_read_one_ahead_in_order_and_a_failed_reading_raises() -> None:
    """`prefetched` hands out each chunk with its own reading; the next chunk's reading is planned
    (and done by the thread) while the one before is worked on, never two ahead; a reading that
    fails raises in the loop, after the chunks before it."""
    planned: list[int] = []

    def reading(c: Any) -> Callable[[], int]:
        planned.append(c)
        return lambda: c * 10

    seen = []
    for c, got in chrome_parts.prefetched(range(5), reading):
        assert planned == list(range(min(c + 2, 5)))
        seen.append((c, got))
    assert seen == [(c, 10 * c) for c in range(5)]

    def failing(c: Any) -> Callable[[], int]:
        def read() -> int:
            if c == 2:
                raise OSError("the temporary file is gone")
            return c

        return read

    handed: list[int] = []
    with pytest.raises(OSError, match="is gone"):
        for c, _ in chrome_parts.prefetched(range(5), failing):
            handed.append(c)
    assert handed == [0, 1]


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_args_of_a_spilled_builder_go_file_to_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kernel_copy: bool
) -> None:
    """Once the builder spills, each chunk's args texts go from the temporary file into the
    entry's `args_blob.npy` as a file range (by `copy_file_range`, or through memory where the
    kernel cannot copy between the files): the same trace, every range copied and released."""
    tiny(monkeypatch)
    copied: list[tuple[int, int]] = []
    released: list[tuple[int, int]] = []
    copy_to, release = spill_files.FileRange.copy_to, spill_pages.release_range

    def copying(self: spill_files.FileRange, fd: int, at: int) -> None:
        copied.append((self.at, self.size))
        copy_to(self, fd, at)

    def releasing(fd: int, at: int, size: int) -> bool:
        released.append((at, size))
        return release(fd, at, size)

    def no_kernel_copy(*args: Any) -> int:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(spill_files.FileRange, "copy_to", copying)
    monkeypatch.setattr(spill_pages, "release_range", releasing)
    if not kernel_copy:
        monkeypatch.setattr(os, "copy_file_range", no_kernel_copy)
        monkeypatch.setattr(spill_files, "COPY_PIECE_BYTES", 1000)  # several pieces per range
    trace = read(DATA / ARGS_TRACE)
    with spill_budget.use(spill_budget.IngestMemory(str(tmp_path), 1)):  # chunks of tiny()'s size, one bucket
        spilled = read(DATA / ARGS_TRACE)
    spill_pages.wait_released()
    assert spill_budget.is_spilled(spilled)
    assert_same_trace(spilled, trace)
    assert len(copied) > 10 and sum(size for _, size in copied) > 0.9 * trace.args_blob.shape[0]
    assert set(copied) <= set(released)


@pytest.mark.parametrize("memory", [False, True])
def test_a_released_table_is_gone_and_its_neighbours_are_intact(tmp_path: Path, memory: bool) -> None:
    spill_file = chrome_spill.SpillFile(memory=memory, directory=str(tmp_path))
    rng = np.random.default_rng(0)
    refs = []
    for _ in range(3):
        ref = chrome_spill.ChunkRef()
        tables = {
            "ev": {"us": rng.integers(0, 1 << 40, 30_001), "args": [b'{"a": 1}' * 1000, b"{}"]},
            "flow": {"id": np.zeros(0, "S8"), "us": rng.integers(0, 9, 5_003)},
        }
        spill_file.write(tables, ref)
        refs.append((ref, tables))
    if not memory:
        blocks = os.fstat(spill_file.fileno()).st_blocks
    ref, _ = refs[1]
    spill_file.release(ref, "ev")
    with pytest.raises(RuntimeError, match="after it was released"):
        spill_file.read(ref, "ev", ("us",))
    with pytest.raises(RuntimeError, match="after it was released"):
        spill_file.read_bytes(ref, "ev", "args")
    for k, (ref, tables) in enumerate(refs):
        assert spill_file.read(ref, "flow", ("us", "id"))["us"].tolist() == tables["flow"]["us"].tolist()
        if k != 1:
            assert spill_file.read(ref, "ev", ("us",))["us"].tolist() == tables["ev"]["us"].tolist()
            assert spill_file.read_bytes(ref, "ev", "args") == b"".join(tables["ev"]["args"])
    if not memory and _punches_holes(tmp_path):
        spill_pages.wait_released()
        freed = (blocks - os.fstat(spill_file.fileno()).st_blocks) * 512
        assert freed >= 30_001 * 8
    spill_file.close()


def _punches_holes(directory: Path) -> bool:
    """Whether the file system of `directory` frees the pages of a range (ext4, xfs, tmpfs do)."""
    with open(directory / "probe", "w+b", buffering=0) as f:
        f.write(b"x" * (1 << 16))
        return spill_pages.release_range(f.fileno(), 0, 1 << 16)
