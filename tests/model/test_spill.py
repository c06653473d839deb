"""Bounded ingest memory: a builder over its budget spills to files and finalizes from them, with the
very trace, index and cache entry of the in-memory path; failures leave nothing trusted; the memory
flags reach the ingest processes, and local ingests run within their number of slots.

Real inputs: the three XPlanes and Kineto traces of tests/data, read with budgets far below their
size (many pieces, tracks bigger than the budget, one laid out greedily). Counter samples appear in
none of them, so one synthetic builder adds counters, one-by-one flows and odd layouts.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import fsspec
import numpy as np
import pytest
from tensorboard.plugins import base_plugin

from profscope import cli
from profscope.engine import store
from profscope.engine.ingest import manager as ingest
from profscope.engine.ingest import memory as ingest_memory
from profscope.engine.lod import index as lod
from profscope.engine.lod import spilled as lod_spilled
from profscope.engine.lod import tiles
from profscope.engine.lod import windows as lod_windows
from profscope.engine.timeline import HostTrace, Timeline
from profscope.formats import registry
from profscope.formats.xplane import reader as xplane
from profscope.model.columns import Trace, TraceBuilder
from profscope.model.spill import budget as spill_budget
from profscope.model.spill import files as spill_files
from profscope.model.spill import finalize as spill_finalize
from profscope.model.spill import page_cache as spill_pages
from profscope.plugin import ProfscopeLoader, ProfscopePlugin
from tests.formats.xplane.test_xplane_streaming import counters_and_flows
from tests.support import DATA_DIR
from tests.support.same_trace import assert_same_trace
from tests.support.xplane_messages import space_class

DATA = DATA_DIR
BUDGET = 200_000
# (file, format, budget): the small ones get the smallest budget (pieces of MIN_CAPACITY_BYTES).
REAL = [
    ("xplane/gpu_8x_tf_training.xplane.pb", "xplane", BUDGET),
    ("xplane/mi300_jax_conv.xplane.pb", "xplane", 1),
    ("xplane/tpu_v6e_inference.xplane.pb", "xplane", BUDGET),
    ("kineto/worker0.1623143089861.pt.trace.json.gz", "chrome_trace", BUDGET),
    ("kineto/bert_small.pt.trace.json.gz", "chrome_trace", 1),
]
READERS = {"probe": "tests.model.test_spill:probe_read"}


def read(path: pathlib.Path, fmt: str, memory: spill_budget.IngestMemory | None = None) -> Trace:
    reader = registry.import_reader(ingest.READERS[fmt])
    with spill_budget.use(memory):
        return reader(str(path), fsspec.filesystem("file"))


def assert_same_index(a: Trace, b: Trace, folder: str, budget: int) -> dict[str, np.ndarray]:
    index = lod.build(a)
    arrays, meta = lod_spilled.build_extras(b, folder, budget)
    assert meta == {"lod": index.meta()}
    expected = index.arrays()
    assert sorted(arrays) == sorted(expected)
    for name, array in expected.items():
        assert arrays[name].dtype == array.dtype and np.array_equal(arrays[name], array), name
    return arrays


@pytest.mark.parametrize("name,fmt,budget", REAL)
def test_a_spilled_trace_and_its_index_equal_the_in_memory_ones(name, fmt, budget, tmp_path):
    path = DATA / name
    memory = read(path, fmt)
    spilled = read(path, fmt, spill_budget.IngestMemory(str(tmp_path), budget))
    assert spill_budget.is_spilled(spilled) and not spill_budget.is_spilled(memory)
    # Forced: several pieces of work, and a track too big for one piece on its own.
    capacity = max(budget, spill_finalize.MIN_CAPACITY_BYTES)
    assert memory.num_events * spill_finalize.EVENT_WORK_BYTES > 4 * capacity
    per_track = np.bincount(np.asarray(memory.ev_track))
    assert per_track.max() * spill_finalize.EVENT_WORK_BYTES > capacity
    assert_same_trace(memory, spilled)
    assert_same_index(memory, spilled, str(tmp_path), budget)


@pytest.mark.parametrize(
    "name,fmt",
    [("xplane/mi300_jax_conv.xplane.pb", "xplane"), ("kineto/bert_small.pt.trace.json.gz", "chrome_trace")],
)
def test_args_event_filled_in_memory_where_one_range_holds_every_index(name, fmt, tmp_path, monkeypatch):
    """Where all builder indices make one range, `args_event` and the flows given by builder index
    come from the array filled while pieces are written (no pairs on disk): the same trace."""
    monkeypatch.setattr(spill_finalize, "PAIR_WORK_BYTES", 1)
    in_memory = []
    original = spill_finalize._Finalize._args_event

    def args_event(self: spill_finalize._Finalize) -> int:
        in_memory.append(self.final_index is not None)
        return original(self)

    monkeypatch.setattr(spill_finalize._Finalize, "_args_event", args_event)
    path = DATA / name
    spilled = read(path, fmt, spill_budget.IngestMemory(str(tmp_path), 1))
    memory = read(path, fmt)
    assert in_memory == [True] and memory.flow_src.shape[0]
    assert_same_trace(memory, spilled)


def test_pieces_in_add_order_give_args_event_runs_not_pairs(tmp_path, monkeypatch):
    """An XPlane's pieces keep their events in add order, mostly: their builder indices reach
    `args_event` as runs, where each event's pair went through the files; the same trace."""
    pairs = []
    original = spill_finalize._Finalize._args_event

    def args_event(self: spill_finalize._Finalize) -> int:
        pairs.append((self.final_index is None, int(self.args_buckets.sizes.sum()), self.n))
        return original(self)

    monkeypatch.setattr(spill_finalize._Finalize, "_args_event", args_event)
    path = DATA / "xplane/tpu_v6e_inference.xplane.pb"
    spilled = read(path, "xplane", spill_budget.IngestMemory(str(tmp_path), BUDGET))
    memory = read(path, "xplane")
    [(through_files, written, events)] = pairs
    assert through_files and written < events // 5
    assert_same_trace(memory, spilled)


@pytest.mark.parametrize("block", [300, 6_000])  # runs shorter and longer than `LONG_RUN`
def test_index_runs_fill_each_range_of_builder_indices(block):
    """Runs cut at any range boundary fill exactly their indices of each range."""
    rng = np.random.default_rng(7)
    # Final order: blocks of consecutive builder indices, shuffled.
    n = 40 * block
    blocks = (rng.permutation(40)[:, None] * block + np.arange(block)).reshape(-1)
    runs = spill_finalize._IndexRuns(1 << 30)
    for offset in range(0, n, 5 * block):
        assert runs.add(blocks[offset : offset + 5 * block], offset)
    expected = np.empty(n, np.int64)
    expected[blocks] = np.arange(n)
    for lo in range(0, n, 7_000):  # ranges cutting runs, and holding long ones whole
        values = np.full(min(7_000, n - lo), -1, np.int64)
        runs.fill(values, lo)
        assert np.array_equal(values, expected[lo : lo + 7_000])
    assert not spill_finalize._IndexRuns(1 << 30).add(rng.permutation(1_000), 0)


def test_a_track_laid_out_greedily_across_pieces(tmp_path, monkeypatch):
    """A Lightning fit's op thread has slices that overlap without nesting: cut in pieces, it is
    laid out again greedily, and still equals the in-memory rows."""
    relaid = []
    original = spill_finalize.SplitTrack.relayout

    def relayout(self: spill_finalize.SplitTrack, *args: Any) -> None:
        relaid.append(self.track)
        return original(self, *args)

    monkeypatch.setattr(spill_finalize.SplitTrack, "relayout", relayout)
    path = DATA / "jobs/lightning_fit/worker0.1796611997623767143.pt.trace.json.gz"
    spilled = read(path, "chrome_trace", spill_budget.IngestMemory(str(tmp_path), 1))
    assert relaid
    assert_same_trace(read(path, "chrome_trace"), spilled)


def synthetic(seed: int, spill_dir: str | None = None, budget: int | None = None) -> Trace:
    """Counters (one track far over the budget), flows and flow points added in bulk and one by
    one, instants, equal starts and overlapping slices on few tracks."""
    r = np.random.default_rng(seed)
    b = TraceBuilder("synthetic", "test", spill_dir=spill_dir, memory_budget_bytes=budget)
    sec = b.section("host", "cpu")
    tracks = [b.track(sec, f"t{i}") for i in range(5)]
    counters = [b.track(sec, f"c{i}", kind="counter") for i in range(3)]
    for chunk in range(12):
        n = int(r.integers(200, 3000))
        track = r.choice(tracks, n, p=[0.6, 0.25, 0.1, 0.04, 0.01])
        start = r.integers(-1000, 100_000, n) // 50 * 50
        dur = np.where(r.random(n) < 0.2, 0, r.integers(1, 5000, n))
        if chunk % 2:
            b.add_events(
                track,
                start,
                dur,
                r.integers(0, 5, n),
                1,
                args=[b'{"i":%d}' % i if i % 3 else None for i in range(n)],
            )
        else:
            lengths = r.integers(0, 4, n)
            blob = bytes(r.integers(65, 90, int(lengths.sum()), dtype=np.uint8))
            b.add_events(track, start, dur, r.integers(0, 5, n), 0, args_blob=blob, args_lengths=lengths)
        total = b.num_events
        b.add_flows(r.integers(0, total, 40), r.integers(0, total, 40), r.integers(0, 3, 40))
        b.add_flow(int(r.integers(0, total)), int(r.integers(0, total)), 2)
        m = int(r.integers(50, 400))
        b.add_flow_points(
            r.integers(0, m // 2, m),
            r.integers(0, 3, m),
            r.integers(0, 3, m),
            r.choice([*tracks, 99, -1], m),
            r.integers(-2000, 110_000, m),
            r.random(m) < 0.3,
        )
        b.add_flow_point(
            int(r.integers(0, 4)), 1, "s" if chunk % 2 else "f", tracks[0], int(r.integers(0, 10**5))
        )
        k = int(r.integers(1000, 4000))
        b.add_counter(
            counters[0] if chunk % 3 else counters[int(r.integers(1, 3))],
            r.integers(0, 10**5, k) // 7 * 7,
            r.normal(size=k),
        )
    b.attach("hlo/1", b"proto")
    return b.finalize()


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("budget", [1, 300_000])
def test_counters_and_one_by_one_flows_spill_alike(seed, budget, tmp_path):
    memory = synthetic(seed)
    spilled = synthetic(seed, str(tmp_path), budget)
    assert spill_budget.is_spilled(spilled)
    # The counters are more than a piece, so their levels are streamed too.
    capacity = max(budget, spill_finalize.MIN_CAPACITY_BYTES)
    assert memory.ctr_time_ps.shape[0] * lod_windows.COUNTER_WORK_BYTES > 4 * capacity
    assert_same_trace(memory, spilled)
    arrays = assert_same_index(memory, spilled, str(tmp_path), budget)
    assert any(name.startswith("ctr") for name in arrays)


def test_below_the_budget_nothing_is_spilled(tmp_path):
    path = DATA / "xplane/mi300_jax_conv.xplane.pb"
    trace = read(path, "xplane", spill_budget.IngestMemory(str(tmp_path), 1 << 30))
    assert not spill_budget.is_spilled(trace)
    assert os.listdir(tmp_path) == []
    assert_same_trace(read(path, "xplane"), trace)


def _entry(trace: Trace, root: pathlib.Path, key: str, tmp: str | None, budget: int) -> str:
    if tmp is None:
        return store.write(trace, str(root), key, compute_extra=lambda: ingest.build_extras(trace))
    return store.write(
        trace, str(root), key, compute_extra=lambda: lod_spilled.build_extras(trace, tmp, budget), tmp=tmp
    )


def test_a_stored_spilled_entry_is_the_same_files_and_serves_the_same_tiles(tmp_path):
    path = DATA / "kineto/worker0.1623143089861.pt.trace.json.gz"
    key_a, key_b = "a" * 64, "b" * 64
    memory = read(path, "chrome_trace")
    a = _entry(memory, tmp_path / "cache", key_a, None, BUDGET)
    tmp = tmp_path / "cache" / store.TMP_DIR / store.tmp_name(key_b)
    tmp.mkdir(parents=True)
    spilled = read(path, "chrome_trace", spill_budget.IngestMemory(str(tmp), BUDGET))
    inode = os.stat(spilled.ev_start_ps.filename).st_ino
    b = _entry(spilled, tmp_path / "cache", key_b, str(tmp), BUDGET)
    assert not tmp.exists()
    assert os.stat(pathlib.Path(b) / "ev_start_ps.npy").st_ino == inode  # moved into place, not copied
    assert sorted(os.listdir(b)) == sorted(os.listdir(a))
    meta_a, meta_b = store.read_meta(a), store.read_meta(b)
    assert meta_a is not None and meta_b is not None
    assert meta_a["arrays"] == meta_b["arrays"]  # sizes, headers and every block's CRC
    assert store.verify(b) == []
    hosts = []
    for path_, key in ((a, key_a), (b, key_b)):
        opened = ingest.open_entry(path_, key)
        hosts.append(Timeline([HostTrace("h", opened.trace, opened.index, "k", opened.searcher)]))
    for level in (hosts[0].max_level, hosts[0].max_level - 6, hosts[0].max_level - 12):
        width = lod.BASE_PS << level
        for x in range(0, max(1, -(-(hosts[0].span_ps + 1) // width)), 7):
            assert tiles.encode(hosts[0].tile(level, x)) == tiles.encode(hosts[1].tile(level, x))


# -- through the ingest manager --------------------------------------------------------------------
def probe_read(path: str, fs: fsspec.AbstractFileSystem, progress: Any = None) -> Trace:
    """Reader driven by its JSON file: records the budget it runs with, spills (many events on a
    tiny budget, `spill_mb`), and may then die or fail; logs when it started and ended."""
    with fs.open(path, "rb") as f:
        script = json.loads(f.read())
    started = time.time()
    memory = spill_budget.current()
    assert memory is not None
    if script.get("spill_mb"):
        b = TraceBuilder(
            path, "probe", spill_dir=memory.spill_dir, memory_budget_bytes=script["spill_mb"] << 20
        )
    else:
        b = TraceBuilder(path, "probe")
    track = b.track(b.section("host", "cpu"), "main")
    n = script.get("events", 10)
    for lo in range(0, n, 100_000):
        count = min(100_000, n - lo)
        b.add_events(track, np.arange(lo, lo + count) * 10, np.full(count, 5), np.zeros(count, np.int64))
    time.sleep(script.get("sleep", 0.0))
    with open(path + ".log", "a") as log:
        log.write(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "start": started,
                    "end": time.time(),
                    "spilled": b.spilled,
                    "dir": memory.spill_dir,
                    "budget": memory.budget_bytes,
                    "reader": memory.reader_bytes,
                }
            )
            + "\n"
        )
    if "exit" in script:
        os._exit(script["exit"])
    if "raise" in script:
        raise RuntimeError(script["raise"])
    return b.finalize()


def probe(tmp_path: pathlib.Path, name: str, **script: object) -> ingest.SourceFile:
    path = tmp_path / name
    path.write_text(json.dumps(script))
    return ingest.SourceFile(str(path), "probe")


def log_of(source: ingest.SourceFile) -> list[dict[str, Any]]:
    return [json.loads(line) for line in pathlib.Path(source.url + ".log").read_text().splitlines()]


@pytest.fixture
def manager(tmp_path: pathlib.Path) -> Iterator[Callable[..., ingest.IngestManager]]:
    made: list[ingest.IngestManager] = []

    def make(**kwargs: Any) -> ingest.IngestManager:
        m = ingest.IngestManager(str(tmp_path / "cache"), readers=READERS, **kwargs)
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()


def test_the_memory_flag_reaches_the_child(manager, tmp_path):
    m = manager(memory_mb=700)
    source = probe(tmp_path, "a.json")
    m.wait(source, timeout_s=60)
    (seen,) = log_of(source)
    assert seen["pid"] != os.getpid()
    builder, reader = ingest_memory.shares(ingest_memory.child_budget(700))
    assert (seen["budget"], seen["reader"]) == (builder, reader)
    assert seen["dir"].startswith(str(tmp_path / "cache" / store.TMP_DIR))
    parser = argparse.ArgumentParser()
    ProfscopeLoader().define_flags(parser)
    flags = parser.parse_args(
        ["--profscope_ingest_memory_mb", "700", "--profscope_cache_dir", str(tmp_path / "c2")]
    )
    plugin = ProfscopePlugin(base_plugin.TBContext(logdir="", flags=flags))
    service = plugin.trace_service()
    try:
        assert service.manager.memory_mb == 700
        assert service.manager.child_memory_bytes == ingest_memory.child_budget(700)
    finally:
        service.manager.close()


def test_the_default_bounds_all_ingest_processes_together():
    total = ingest_memory.DEFAULT_TOTAL_MB
    slots = ingest_memory.local_slots(total)
    assert slots == ingest_memory.MAX_LOCAL_INGESTS
    # Each slot: a working child (its budget) and the template it was forked from.
    assert slots * (ingest_memory.child_budget(total) + (ingest_memory.IDLE_CHILD_MB << 20)) <= total << 20
    assert ingest_memory.local_slots(300) == 1


def test_a_spilled_ingest_in_a_child_is_served_and_leaves_no_temporary_files(manager, tmp_path):
    m = manager()
    source = probe(tmp_path, "big.json", events=300_000, spill_mb=1)
    opened = m.wait(source, timeout_s=120)
    (seen,) = log_of(source)
    assert seen["spilled"]
    assert opened.trace.num_events == 300_000
    assert np.array_equal(opened.trace.ev_start_ps[:5], np.arange(5) * 10)
    assert os.listdir(tmp_path / "cache" / store.TMP_DIR) == []
    assert store.verify(opened.path) == []


def test_a_failure_mid_spill_leaves_nothing_trusted(manager, tmp_path):
    m = manager()
    failing = probe(tmp_path, "fails.json", events=300_000, spill_mb=1, **{"raise": "boom"})
    with pytest.raises(ingest.IngestError, match="boom"):
        m.wait(failing, timeout_s=120)
    assert log_of(failing)[0]["spilled"]
    assert os.listdir(tmp_path / "cache" / store.TMP_DIR) == []
    key, _ = ingest.source_key(failing)
    assert store.lookup(str(tmp_path / "cache"), key) is None
    # A child killed mid-spill leaves its temporary entry, never an entry; the next server removes it.
    killed = probe(tmp_path, "killed.json", events=300_000, spill_mb=1, exit=9)
    with pytest.raises(ingest.IngestError):
        m.wait(killed, timeout_s=120)
    left = os.listdir(tmp_path / "cache" / store.TMP_DIR)
    assert len(left) == 1 and os.listdir(tmp_path / "cache" / store.TMP_DIR / left[0])
    key, _ = ingest.source_key(killed)
    assert store.lookup(str(tmp_path / "cache"), key) is None
    manager()
    assert os.listdir(tmp_path / "cache" / store.TMP_DIR) == []


def test_local_ingests_wait_for_a_free_slot(manager, tmp_path):
    m = manager(memory_mb=300)  # one slot
    first, second = probe(tmp_path, "1.json", sleep=1.0), probe(tmp_path, "2.json", sleep=1.0)
    assert isinstance(m.ensure(first), ingest.Progress)
    queued = m.ensure(second)
    assert isinstance(queued, ingest.Progress) and queued.stage == "queued"
    m.wait(first, timeout_s=60)
    m.wait(second, timeout_s=60)
    (a,), (b,) = log_of(first), log_of(second)
    assert b["start"] >= a["end"]


def test_the_cli_memory_flag_reaches_the_dask_tasks(tmp_path, monkeypatch):
    """`profscope ingest --memory-mb` on a cluster of one in-process worker (so the budget each
    task's ingest takes can be watched here)."""
    distributed = pytest.importorskip("distributed")
    seen = []
    original = ingest_memory.TempEntry.__init__

    def init(self: ingest_memory.TempEntry, spec: dict[str, Any]) -> None:
        seen.append(spec.get("memory_bytes"))
        original(self, spec)

    monkeypatch.setattr(ingest_memory.TempEntry, "__init__", init)
    session = tmp_path / "logdir" / "run" / "plugins" / "profile" / "s1"
    session.mkdir(parents=True)
    (session / "host.xplane.pb").write_bytes((DATA / "xplane/mi300_jax_conv.xplane.pb").read_bytes())
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as c:
        args = ["ingest", str(tmp_path / "logdir"), "--cache-dir", str(tmp_path / "cache")]
        out = io.StringIO()
        assert cli.main([*args, "--scheduler", c.scheduler_address, "--memory-mb", "300"], out) == 0, (
            out.getvalue()
        )
    assert seen == [300 << 20]


def test_a_spilled_xplane_ingest_keeps_its_hlo_attachments(tmp_path, monkeypatch):
    """The ingest child's spilled path stores what the builder kept in scratch (the HLO protos)
    before the scratch goes: it failed with 'cache directory … not writable (No such file …)'."""
    monkeypatch.setattr(ingest_memory, "shares", lambda process: (1, 1 << 20))  # spill at once
    path = DATA / "xplane/mi300_jax_conv.xplane.pb"
    source = ingest.SourceFile(str(path), "xplane")
    key, size = ingest.source_key(source)
    cache = tmp_path / "cache"
    spec = {
        "url": str(path),
        "format": "xplane",
        "reader": ingest.READERS["xplane"],
        "fs": source.fs.to_json(),
        "cache_root": str(cache),
        "key": key,
        "size": size,
        "memory_bytes": 1,
    }
    assert ingest.run_ingest(spec) == 0
    entry = store.lookup(str(cache), key)
    assert entry is not None and store.verify(entry) == []
    stored = store.open(entry)
    expected = read(path, "xplane")
    assert expected.attachments and dict(stored.attachments) == dict(expected.attachments)
    assert stored.num_events == expected.num_events
    assert os.listdir(cache / store.TMP_DIR) == []


_MAPPED_WHILE_HOLDING = """
import ctypes
import numpy as np
from profscope.engine.ingest import memory as ingest_memory


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
        "keepcost")]


libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2


def mapped_while_holding():
    # Bytes malloc serves from mappings of their own while an 8 MB array (a reader's batch
    # temporary) is alive: such blocks are unmapped when freed, their pages faulted in anew.
    before = libc.mallinfo2().hblkhd
    a = np.ones(1 << 20)
    mapped = libc.mallinfo2().hblkhd - before
    del a
    return mapped


warm = [mapped_while_holding() for _ in range(3)][-1]
with ingest_memory.heap_for_ingest():
    inside = [mapped_while_holding() for _ in range(3)][-1]
print(warm, inside)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc")
@pytest.mark.parametrize("trim", [None, "65536"])
def test_an_ingest_keeps_freed_memory_where_dask_workers_would_hand_it_back(trim):
    """Dask starts its workers with MALLOC_TRIM_THRESHOLD_=65536, which also pins glibc's mmap
    threshold at 128 KiB: every large array is then a mapping of its own, unmapped when freed and
    faulted in again by the next. Inside an ingest it comes from the heap (without the variable,
    glibc's dynamic threshold gets there after the first large free)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    if trim is not None:
        env["MALLOC_TRIM_THRESHOLD_"] = trim
    done = subprocess.run(
        [sys.executable, "-c", _MAPPED_WHILE_HOLDING], env=env, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0 and "mallinfo2" in done.stderr:
        pytest.skip("glibc without mallinfo2")
    assert done.returncode == 0, done.stderr
    warm, inside = map(int, done.stdout.split())
    assert inside == 0, "inside an ingest the array comes from the heap"
    if trim is None:
        assert warm == 0, "glibc's dynamic threshold already serves it from the heap"
    else:
        assert warm >= 8 << 20, "with the worker's setting it is a mapping of its own"


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc")
def test_an_ingest_trims_its_heap_unless_its_process_exits_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """The heap is handed back after an ingest in a process that lives on (a Dask worker), not in
    an ingest child that exits next (`run_ingest(exits_after=True)`): the trim would only delay
    the first view."""
    trims: list[int] = []
    monkeypatch.setattr(spill_pages, "trim_heap", lambda: trims.append(1))
    with ingest_memory.heap_for_ingest():
        pass
    assert trims == [1]
    with ingest_memory.heap_for_ingest(trim=False):
        pass
    assert trims == [1]


_ARENAS_OF_TWO_THREADS = """
import ctypes, sys, threading
import numpy as np
from profscope.engine.ingest import memory as ingest_memory

if sys.argv[1] == "one":
    ingest_memory.one_malloc_arena()
libc = ctypes.CDLL(None)
held, allocated, done = [], threading.Barrier(3), threading.Event()


def work():
    held.append(np.ones(1 << 18))  # 2 MB, from the thread's arena
    allocated.wait()
    done.wait()


threads = [threading.Thread(target=work) for _ in range(2)]
for t in threads:
    t.start()
allocated.wait()  # both threads alive and holding
libc.malloc_stats()  # one "Arena N:" block per arena, on stderr
done.set()
"""


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc")
@pytest.mark.parametrize("arenas", ["one", "default"])
def test_threads_of_an_ingest_process_allocate_from_one_arena(arenas):
    """A thread's own arena keeps what the thread freed for that thread alone, so the threads of
    an ingest process share the main one; by default two live threads get one each."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run(
        [sys.executable, "-c", _ARENAS_OF_TWO_THREADS, arenas],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("Arena ") == (1 if arenas == "one" else 3)


def test_a_spilled_xplane_read_twice_keeps_only_the_second_pass(tmp_path):
    """A line years from the others makes the reader start over with what it learnt; the first
    pass's provisional builder had spilled already and leaves nothing behind."""
    extra = space_class()()
    plane = extra.planes.add()
    plane.name, plane.id = "/host:far", 99
    plane.event_metadata[1].id, plane.event_metadata[1].name = 1, "far event"
    line = plane.lines.add()
    line.id, line.timestamp_ns = 1, -(1 << 62)
    event = line.events.add()
    event.metadata_id, event.duration_ps = 1, 10
    path = tmp_path / "far.xplane.pb"
    path.write_bytes((DATA / "xplane/mi300_jax_conv.xplane.pb").read_bytes() + extra.SerializeToString())
    passes = []
    original = xplane._Reading._pass

    def counted(self, frame):
        passes.append(frame)
        return original(self, frame)

    entry = tmp_path / "entry"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(xplane._Reading, "_pass", counted)
        trace = read(path, "xplane", spill_budget.IngestMemory(str(entry), 1))
    assert len(passes) == 2 and spill_budget.is_spilled(trace)
    assert trace.skipped.get("events on lines whose timestamp is years away from the others") == 1
    assert_same_trace(read(path, "xplane"), trace)
    # The second pass's builder owns the entry directory: no folder of its own beside the first's.
    assert not [n for n in os.listdir(entry) if n.startswith(f"{spill_budget.SCRATCH_DIR}-")]
    assert trace.args_blob.filename == str(entry / "args_blob.npy")


def test_a_provisional_builder_refuses_what_it_cannot_settle(tmp_path):
    b = TraceBuilder("x", "test", provisional=True)
    section = b.section("s")
    track = b.track(section, "t")
    b.add_events(1, [5], [1], [b.intern("e")])
    with pytest.raises(ValueError, match="provisional builder is settled"):
        b.finalize()
    with pytest.raises(ValueError, match="names no track"):
        b.settle(np.array([track, -1]), 0)
    b.settle(np.array([-1, track]), 3)
    with pytest.raises(ValueError, match="once"):
        b.settle(np.array([track]), 0)
    trace = b.finalize()
    assert trace.ev_track.tolist() == [track] and trace.ev_start_ps.tolist() == [2]


def test_spilled_xplane_counters_and_flows_settle_like_in_memory(tmp_path):
    """The real XPlanes here have no `_counters_` line: the synthetic one of the streaming tests
    sends counter samples, flows and launches through a spilled provisional builder."""
    space = space_class()()
    space.ParseFromString(counters_and_flows(3000))
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                event.offset_ps += 5_000_000  # the trace's zero is not the clock's: a shift to settle
    path = tmp_path / "counters.xplane.pb"
    path.write_bytes(space.SerializeToString())
    trace = read(path, "xplane", spill_budget.IngestMemory(str(tmp_path / "entry"), 1))
    assert spill_budget.is_spilled(trace) and trace.ctr_track.shape[0] > 0 and trace.flow_src.shape[0] > 0
    assert_same_trace(read(path, "xplane"), trace)


def test_a_builder_given_up_removes_only_what_it_spilled(tmp_path):
    """A second builder of a directory spills to a folder of its own; giving it up removes that
    folder and leaves the first builder's files."""
    builders = [TraceBuilder("x", "test", spill_dir=str(tmp_path), memory_budget_bytes=1) for _ in range(2)]
    for b in builders:
        track = b.track(b.section("s"), "t")
        b.add_events(track, np.arange(100), np.ones(100, np.int64), np.zeros(100, np.int32))
        assert b.spilled
    before = sorted(os.listdir(tmp_path))
    assert any(name.startswith(f"{spill_budget.SCRATCH_DIR}-") for name in before)
    builders[1].discard()
    assert sorted(os.listdir(tmp_path)) == [
        n for n in before if not n.startswith(f"{spill_budget.SCRATCH_DIR}-")
    ]
    builders[0].discard()
    assert os.listdir(tmp_path) == []


def test_args_lent_as_file_ranges_are_read_before_the_spill_and_copied_after(tmp_path, monkeypatch):
    """`add_events` takes args texts as a range of a temporary file: read at once while the
    builder is in memory, copied file to file once it has spilled; either way the range is released
    and the texts are those of the file."""
    texts = [b'{"k":%d}' % i for i in range(300)]
    source = tmp_path / "source"
    source.write_bytes(b"x" * 7 + b"".join(texts))
    lengths = np.array([len(t) for t in texts], np.int64)
    done: list[tuple[str, int]] = []
    take, copy_to, close = (
        spill_files.FileRange.take,
        spill_files.FileRange.copy_to,
        spill_files.FileRange.close,
    )
    monkeypatch.setattr(spill_files.FileRange, "take", lambda r: (done.append(("take", r.at)), take(r))[1])
    monkeypatch.setattr(
        spill_files.FileRange, "copy_to", lambda r, fd, at: (done.append(("copy", r.at)), copy_to(r, fd, at))
    )
    monkeypatch.setattr(
        spill_files.FileRange, "close", lambda r: (r._fd >= 0 and done.append(("release", r.at)), close(r))
    )
    with open(source, "rb") as f:
        b = TraceBuilder("x", "test", spill_dir=str(tmp_path / "entry"), memory_budget_bytes=1)
        track = b.track(b.section("s"), "t")
        starts = [7, 7 + int(lengths[:100].sum()), 7 + int(lengths[:200].sum())]
        for k, lo in enumerate(range(0, 300, 100)):
            b.add_events(
                track,
                np.arange(lo, lo + 100),
                np.ones(100, np.int64),
                np.zeros(100, np.int32),
                args_blob=spill_files.FileRange(f.fileno(), starts[k], int(lengths[lo : lo + 100].sum())),
                args_lengths=lengths[lo : lo + 100],
            )
        trace = b.finalize()
        assert spill_budget.is_spilled(trace)
        assert [trace.args_json(i) for i in range(300)] == texts
        assert done == [
            ("take", starts[0]), ("release", starts[0]),
            ("copy", starts[1]), ("release", starts[1]),
            ("copy", starts[2]), ("release", starts[2]),
        ]  # fmt: skip
        with pytest.raises(ValueError, match="do not add up"):
            TraceBuilder("x", "test").add_events(
                0, [1], [1], [0], args_blob=spill_files.FileRange(f.fileno(), 0, 5), args_lengths=[4]
            )


def test_a_write_failing_on_the_spill_thread_is_raised_to_the_builder(tmp_path, monkeypatch):
    """A flush's thread cannot write (a full disk): the builder's next flush raises the error
    as a SpillWriteError, and nothing waits forever."""
    real = spill_files._write_all

    def full_disk(f: Any, offset: int, values: np.ndarray) -> None:
        if values.nbytes > 4096:  # the .npy headers still go in
            raise OSError(28, "No space left on device")
        real(f, offset, values)

    monkeypatch.setattr(spill_files, "_write_all", full_disk)
    b = TraceBuilder("x", "test", spill_dir=str(tmp_path), memory_budget_bytes=1 << 20)
    track = b.track(b.section("host", "cpu"), "t")
    n = 10_000
    with pytest.raises(spill_budget.SpillWriteError) as caught:
        for i in range(100):
            b.add_events(np.full(n, track), np.arange(n) * 10 + i * 10 * n, np.ones(n), np.zeros(n, np.int64))
        b.finalize()
    assert "No space left" in str(caught.value) and isinstance(caught.value.error, OSError)
    assert b.spilled
