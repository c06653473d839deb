"""XPlane reader on what the real profiles lack: synthetic XSpaces (counter lines, flow chains,
nested HLO ops, odd stat values, missing metadata) built with protobuf from the reference schema,
and damaged or hostile bytes (garbage, truncation, huge lengths, deep nesting, ids out of range)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import fsspec
import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profscope.errors import UnreadableProfile
from profscope.formats.xplane import decode as xplane_decode
from profscope.formats.xplane import reader as xplane
from profscope.model.columns import Trace
from profscope.model.spill import budget as spill_budget
from tests.support import DATA_DIR
from tests.support.xplane_messages import field, space_class, varint

DATA = DATA_DIR / "xplane"
MI300 = DATA / "mi300_jax_conv.xplane.pb"
EPOCH_NS = 1_700_000_000_000_000_000


class PlaneBuilder:
    """Fills one XPlane message: metadata ids are handed out as names are first used."""

    def __init__(self, space: Any, name: str) -> None:
        self.plane = space.planes.add()
        self.plane.name = name
        self.events: dict[str, int] = {}
        self.stats: dict[str, int] = {}

    def stat_id(self, name: str) -> int:
        if name not in self.stats:
            self.stats[name] = len(self.stats) + 1
            self.plane.stat_metadata[self.stats[name]].id = self.stats[name]
            self.plane.stat_metadata[self.stats[name]].name = name
        return self.stats[name]

    def event_id(self, name: str, display: str = "") -> int:
        if name not in self.events:
            self.events[name] = len(self.events) + 1
            meta = self.plane.event_metadata[self.events[name]]
            meta.id, meta.name, meta.display_name = self.events[name], name, display
        return self.events[name]

    def line(self, name: str, timestamp_ns: int = EPOCH_NS, line_id: int = 1) -> Any:
        line = self.plane.lines.add()
        line.id, line.name, line.timestamp_ns = line_id, name, timestamp_ns
        return line

    def set_stat(self, stat: Any, name: str, value: Any) -> None:
        stat.metadata_id = self.stat_id(name)
        if isinstance(value, tuple) and value[0] == "ref":
            stat.ref_value = self.stat_id(value[1])
        elif isinstance(value, tuple) and value[0] == "uint":
            stat.uint64_value = value[1]
        elif isinstance(value, bool | int):
            stat.int64_value = int(value)
        elif isinstance(value, float):
            stat.double_value = value
        elif isinstance(value, bytes):
            stat.bytes_value = value
        else:
            stat.str_value = value

    def event(
        self, line: Any, name: str, offset_ps: int, duration_ps: int, display: str = "", **stats: Any
    ) -> Any:
        event = line.events.add()
        event.metadata_id = self.event_id(name, display)
        event.offset_ps = offset_ps
        event.duration_ps = duration_ps
        for key, value in stats.items():
            self.set_stat(event.stats.add(), key, value)
        return event


def load(space: Any, tmp_path: Path, name: str = "synthetic.xplane.pb") -> Trace:
    path = tmp_path / name
    path.write_bytes(space.SerializeToString())
    return xplane.read(str(path), fsspec.filesystem("file"))


def events_on(tr: Trace, track_name: str) -> list[tuple[str, int, int, int, dict[str, Any]]]:
    tid = next(t.id for t in tr.tracks if t.name == track_name)
    out = []
    for i in np.flatnonzero(tr.ev_track == tid).tolist():
        raw = tr.args_json(i)
        out.append(
            (
                tr.strings[tr.ev_name[i]],
                int(tr.ev_start_ps[i]),
                int(tr.ev_dur_ps[i]),
                int(tr.ev_depth[i]),
                msgspec.json.decode(raw) if raw else {},
            )
        )
    return out


# -- synthetic inputs -----------------------------------------------------------------------------


def test_counter_lines_become_counter_tracks(tmp_path: Path) -> None:
    space = space_class()()
    gpu = PlaneBuilder(space, "/device:GPU:0")
    stream = gpu.line("Stream #7", line_id=7)
    gpu.event(stream, "k", 0, 1000, kernel_details="regs:32")
    counters = gpu.line("_counters_", line_id=99)
    for t, used in ((0, 10), (500_000, 30), (2_000_000, 20)):
        gpu.event(counters, "HBM used", t, 0, bytes=used)
    gpu.event(counters, "Power", 0, 0, watts=250.5, volts=0.9)
    gpu.event(counters, "Power", 1_000_000, 0, watts=300.25, volts=0.95)
    tr = load(space, tmp_path)
    tracks = {t.name: t for t in tr.tracks if t.kind == "counter"}
    assert set(tracks) == {"HBM used", "Power watts", "Power volts"}

    def series(name: str) -> list[tuple[int, float]]:
        sel = tr.ctr_track == tracks[name].id
        return list(zip(tr.ctr_time_ps[sel].tolist(), tr.ctr_value[sel].tolist(), strict=True))

    assert series("HBM used") == [(0, 10.0), (500_000, 30.0), (2_000_000, 20.0)]
    assert series("Power watts") == [(0, 250.5), (1_000_000, 300.25)]
    assert series("Power volts") == [(0, 0.9), (1_000_000, 0.95)]
    assert tr.num_events == 1  # counter samples are not slices


def test_flow_stats_chain_begin_middle_end_in_time_order(tmp_path: Path) -> None:
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    tpu = PlaneBuilder(space, "/device:TPU:0")
    thread = host.line("python/1")
    ops = tpu.line("XLA Ops")

    def flow(flow_id: int, direction: int, category: int = 12) -> tuple[str, int]:
        return ("uint", category << 58 | flow_id << 2 | direction)

    host.event(thread, "launch", 1_000, 5_000, flow=flow(77, 2))
    tpu.event(ops, "fusion.1", 10_000, 4_000, flow=flow(77, 3))
    tpu.event(ops, "fusion.2", 20_000, 4_000, flow=flow(77, 1))
    host.event(thread, "other", 30_000, 100, flow=flow(78, 2, category=0))
    tr = load(space, tmp_path)
    links = {
        (tr.strings[tr.ev_name[s]], tr.strings[tr.ev_name[d]], tr.strings[n])
        for s, d, n in zip(tr.flow_src.tolist(), tr.flow_dst.tolist(), tr.flow_name.tolist(), strict=True)
    }
    assert links == {("launch", "fusion.1", "tpu_launch"), ("fusion.1", "fusion.2", "tpu_launch")}


def test_nested_hlo_ops_give_one_level_per_part_and_close_deeper_levels(tmp_path: Path) -> None:
    space = space_class()()
    gpu = PlaneBuilder(space, "/device:GPU:3")
    stream = gpu.line("Stream #2", line_id=2)
    common = {"kernel_details": "grid:1", "hlo_module": "jit_step", "program_id": 4}
    gpu.event(stream, "k1", 0, 10, hlo_op="while.1::fusion.2", **common)
    gpu.event(stream, "k2", 20, 10, hlo_op="while.1::fusion.2", **common)
    gpu.event(stream, "memcpy", 35, 2, memcpy_details="size:4")
    gpu.event(stream, "k3", 40, 10, hlo_op="while.1", **common)
    gpu.event(stream, "k4", 60, 10, hlo_op="while.1::fusion.2", **common)
    gpu.event(stream, "k5", 80, 10, hlo_op="copy.3", **common)
    tr = load(space, tmp_path)
    assert {t.name for t in tr.tracks if t.kind == "stream"} == {"Stream #2 (Compute, Memcpy)"}
    ops = [(n, s, d, depth) for n, s, d, depth, _ in events_on(tr, "XLA Ops (Stream #2)")]
    assert sorted(ops) == sorted(
        [
            ("while.1", 0, 70, 0),
            ("fusion.2", 0, 30, 1),
            ("fusion.2", 60, 10, 1),
            ("copy.3", 80, 10, 0),
        ]
    )
    modules = events_on(tr, "XLA Modules (Stream #2)")
    assert [(n, s, d) for n, s, d, _, _ in modules] == [("jit_step(4)", 0, 90)]
    assert modules[0][4] == {"kernels": 5}


def test_framework_ops_and_scopes_from_tf_op_stats(tmp_path: Path) -> None:
    space = space_class()()
    gpu = PlaneBuilder(space, "/device:GPU:0")
    stream = gpu.line("Stream #1", line_id=1)
    gpu.event(stream, "a", 0, 10, kernel_details="x", tf_op="model/dense/MatMul:MatMul", group_id=5)
    gpu.event(stream, "b", 10, 10, kernel_details="x", tf_op="model/dense/MatMul:MatMul", group_id=5)
    gpu.event(stream, "c", 30, 10, kernel_details="x", tf_op="model/dense/BiasAdd:BiasAdd", group_id=5)
    gpu.event(stream, "d", 50, 10, kernel_details="x", tf_op="model/dense/MatMul:MatMul", group_id=6)
    tr = load(space, tmp_path)
    ops = [(n, s, d, a) for n, s, d, _, a in events_on(tr, "Framework Ops (Stream #1)")]
    assert ops == [
        ("MatMul", 0, 20, {"long_name": "model/dense/MatMul:MatMul", "kernels": 2, "group_id": 5}),
        ("BiasAdd", 30, 10, {"long_name": "model/dense/BiasAdd:BiasAdd", "kernels": 1, "group_id": 5}),
        ("MatMul", 50, 10, {"long_name": "model/dense/MatMul:MatMul", "kernels": 1, "group_id": 6}),
    ]
    scopes = sorted(
        (n, s, d, depth) for n, s, d, depth, _ in events_on(tr, "Framework Name Scope (Stream #1)")
    )
    assert scopes == [("dense", 0, 40, 1), ("dense", 50, 10, 1), ("model", 0, 40, 0), ("model", 50, 10, 0)]
    steps = [(n, s, d, a) for n, s, d, _, a in events_on(tr, "Steps")]
    assert steps == [("5", 0, 40, {"group_id": 5, "events": 3}), ("6", 50, 10, {"group_id": 6, "events": 1})]


def test_stat_values_of_every_kind(tmp_path: Path) -> None:
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    line = host.line("worker/9")
    host.stat_id("bfloat16")
    event = host.event(
        line,
        "op",
        0,
        100,
        display="Op",
        neg=-(1 << 63),
        big=("uint", (1 << 64) - 1),
        ratio=0.1,
        nan=math.nan,
        inf=math.inf,
        text='quote " and \\ and ünïcode',
        printable=b"plain text",
        binary=b"\x00\xff\x10",
        dtype=("ref", "bfloat16"),
    )
    dangling = event.stats.add()
    dangling.metadata_id = host.stat_id("dangling")
    dangling.ref_value = 12345
    tr = load(space, tmp_path)
    [(name, _, _, _, args)] = events_on(tr, "worker/9")
    assert name == "Op"
    assert args == {
        "long_name": "op",
        "neg": -(1 << 63),
        "big": (1 << 64) - 1,
        "ratio": 0.1,
        "nan": None,
        "inf": None,
        "text": 'quote " and \\ and ünïcode',
        "printable": "plain text",
        "binary": "00ff10",
        "dtype": "bfloat16",
        "dangling": "?ref 12345",
    }
    assert any("missing stat metadata" in w for w in tr.warnings)


def test_repeated_stat_names_keep_every_value(tmp_path: Path) -> None:
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    line = host.line("t")
    event = host.event(line, "e", 0, 1, _src="a.cc")
    host.set_stat(event.stats.add(), "_src", "b.cc")
    host.set_stat(event.stats.add(), "_src", "c.cc")
    tr = load(space, tmp_path)
    [(_, _, _, _, args)] = events_on(tr, "t")
    assert args == {"_src": "a.cc", "_src (2)": "b.cc", "_src (3)": "c.cc"}


@pytest.mark.parametrize("far_id", [70_000, 1 << 40])
def test_stat_metadata_ids_small_or_far_apart_name_the_same_stats(tmp_path: Path, far_id: int) -> None:
    """Stat names are looked up by a table for small metadata ids and by search past it: a plane
    whose ids run far beyond the table names its stats, refs and missing ids as any other."""
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    line = host.line("t")
    event = host.event(line, "e", 0, 1, small=3)
    for mid, name in ((far_id, "far"), (far_id + 1, "far target")):
        host.plane.stat_metadata[mid].id = mid
        host.plane.stat_metadata[mid].name = name
    far, ref, lost, wild = (event.stats.add() for _ in range(4))
    far.metadata_id, far.int64_value = far_id, -5
    ref.metadata_id, ref.ref_value = host.stat_id("target"), far_id + 1
    lost.metadata_id, lost.int64_value = far_id + 2, 8
    wild.metadata_id, wild.ref_value = host.stat_id("wild"), (1 << 64) - 2
    tr = load(space, tmp_path)
    [(_, _, _, _, args)] = events_on(tr, "t")
    assert args == {
        "small": 3,
        "far": -5,
        "target": "far target",
        f"stat#{far_id + 2}": 8,
        "wild": f"?ref {(1 << 64) - 2}",
    }


def test_step_name_stat_names_the_event(tmp_path: Path) -> None:
    space = space_class()()
    tpu = PlaneBuilder(space, "/device:TPU:1")
    steps = tpu.line("Steps")
    tpu.event(steps, "1234", 0, 500, step_name="train_step 12")
    tr = load(space, tmp_path)
    assert [e[0] for e in events_on(tr, "Steps")] == ["train_step 12"]


def test_missing_metadata_is_named_by_id_and_reported(tmp_path: Path) -> None:
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    line = host.line("t")
    host.event(line, "known", 0, 10)
    orphan = line.events.add()
    orphan.metadata_id = (1 << 63) - 1
    orphan.offset_ps = 20
    orphan.duration_ps = 5
    stat = orphan.stats.add()
    stat.metadata_id = 4242
    stat.int64_value = 7
    tr = load(space, tmp_path)
    names = sorted(e[0] for e in events_on(tr, "t"))
    assert names == ["known", f"unknown event (metadata id {(1 << 63) - 1})"]
    orphan_args = next(a for n, *_, a in events_on(tr, "t") if n.startswith("unknown"))
    assert orphan_args == {"stat#4242": 7}
    assert any("event metadata missing" in w for w in tr.warnings)


def test_aggregated_and_impossible_events_are_skipped_and_counted(tmp_path: Path) -> None:
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    line = host.line("t")
    host.event(line, "ok", 0, 10)
    aggregated = line.events.add()
    aggregated.metadata_id = host.event_id("agg")
    aggregated.num_occurrences = 12
    host.event(line, "negative", 5, -3)
    host.event(line, "far", 1 << 62, 1)
    tr = load(space, tmp_path)
    assert [e[0] for e in events_on(tr, "t")] == ["ok"]
    assert tr.skipped == {
        "aggregated events (num_occurrences, no timestamp)": 1,
        "events with a negative or impossible offset/duration": 2,
    }


def test_epoch_timestamps_are_exact_picoseconds(tmp_path: Path) -> None:
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    a = host.line("a", timestamp_ns=EPOCH_NS + 1_500, line_id=1)
    b = host.line("b", timestamp_ns=EPOCH_NS + 7, line_id=2)
    host.event(a, "late", 123_456_789_012_345, 999_999_999_999)
    host.event(b, "early", 3_333, 1)
    tr = load(space, tmp_path)
    # Zero is the earliest event rounded down to a whole ns: EPOCH + 7 ns + 3.333 ns → EPOCH + 10 ns.
    assert tr.clock_origin_ns == EPOCH_NS + 10
    assert events_on(tr, "b")[0][1:3] == (333, 1)
    assert events_on(tr, "a")[0][1:3] == ((1_500 - 10) * 1000 + 123_456_789_012_345, 999_999_999_999)


def test_an_xspace_without_events_is_an_empty_trace(tmp_path: Path) -> None:
    space = space_class()()
    PlaneBuilder(space, "/host:CPU").line("idle")
    tr = load(space, tmp_path)
    assert tr.num_events == 0 and tr.sections == []
    assert any("no timed events" in w for w in tr.warnings)


# -- damaged and hostile inputs ---------------------------------------------------------------


def write(tmp_path: Path, data: bytes, name: str = "bad.xplane.pb") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _read_in_budget(path: str) -> Trace:
    """`path` read inside an ingest of a 1 MB budget: lines and metadata up to `MIN_HELD_BYTES`."""
    with spill_budget.use(spill_budget.IngestMemory(str(Path(path).parent), 1 << 20)):
        assert xplane.held_limit() == xplane_decode.MIN_HELD_BYTES
        return xplane.read(path, fsspec.filesystem("file"))


def test_more_lines_than_the_budget_holds_stop_the_read_naming_the_file(tmp_path: Path) -> None:
    """What the reader keeps per line is not spilled: past the lines an ingest's budget holds,
    the walk stops with a clear error, counting the lines of every plane, before any is read."""
    limit = xplane_decode.MIN_HELD_BYTES // xplane_decode.LINE_BYTES  # 18,724 lines

    def planes(*counts: int) -> str:
        space = space_class()()
        for p, count in enumerate(counts):
            plane = PlaneBuilder(space, f"/host:CPU{p}" if p else "/host:CPU")
            for i in range(count):
                plane.event(plane.line(f"thread {i}", line_id=i + 1), "op", 1000 * i, 500)
        return write(tmp_path, space.SerializeToString(), f"lines{'_'.join(map(str, counts))}.xplane.pb")

    # Each plane holds one event metadata entry ("op", 6 bytes): 768 + 12 bytes, under a line's.
    fits, too_many = planes(limit - 100, 98), planes(limit - 100, 101)
    assert _read_in_budget(fits).num_events == limit - 2
    with pytest.raises(UnreadableProfile) as err:
        _read_in_budget(too_many)
    assert err.value.path == too_many
    # The second plane's lines come before its metadata: the first plane's entry, then one line
    # past the limit.
    stopped = f"({limit + 1:,} lines and 1 event and stat metadata entries when the walk stopped)"
    assert stopped in err.value.reason
    assert "--profscope_ingest_memory_mb" in err.value.reason
    assert xplane.read(too_many, fsspec.filesystem("file")).num_events == limit + 1  # no budget


def test_more_metadata_than_the_budget_holds_stops_the_read(tmp_path: Path) -> None:
    """An XLA program of a million ops has a million event metadata entries, about 0.9 KB each
    once decoded: they count against the budget with the lines."""

    def ops(count: int, kind: str = "event", display: str = "") -> str:
        space = space_class()()
        plane = PlaneBuilder(space, "/device:TPU:0")
        for i in range(count):  # an entry of about 25 bytes (map key, id, name) and the display name
            if kind == "event":
                plane.event_id(f"fusion.{i:07d}", display)
            else:
                plane.stat_id(f"stat.{i:07d}")
        plane.event(plane.line("XLA Ops"), "fusion.0000000", 0, 10)
        return write(tmp_path, space.SerializeToString(), f"ops{count}{kind}{len(display)}.xplane.pb")

    room = xplane_decode.MIN_HELD_BYTES - xplane_decode.LINE_BYTES
    fits = ops(room // (xplane_decode.METADATA_BYTES + 2 * 40))  # entries of 40 bytes would fit
    assert _read_in_budget(fits).num_events == 1
    for too_many in (
        ops(room // xplane_decode.METADATA_BYTES + 1),  # entries of no bytes would not
        ops(room // xplane_decode.METADATA_BYTES + 1, kind="stat"),
        ops(room // (xplane_decode.METADATA_BYTES + 2 * 1000) + 1, display="x" * 1000),
    ):
        with pytest.raises(UnreadableProfile, match="event and stat metadata entries when the walk stopped"):
            _read_in_budget(too_many)
        assert xplane.read(too_many, fsspec.filesystem("file")).num_events == 1


def test_garbage_is_unreadable_and_names_the_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    path = write(tmp_path, rng.integers(0, 256, 4096, dtype=np.uint8).tobytes(), "noise.xplane.pb")
    with pytest.raises(UnreadableProfile) as err:
        xplane.read(path, fsspec.filesystem("file"))
    assert err.value.path == path and "noise.xplane.pb" in str(err.value)


def test_empty_and_text_files_are_unreadable(tmp_path: Path) -> None:
    cases = (
        ("empty.xplane.pb", b""),
        ("text.xplane.pb", b'{"traceEvents": []}\n'),
        ("stray.xplane.pb", b"\x08\x01\x10\x02"),
    )
    for name, data in cases:
        with pytest.raises(UnreadableProfile, match=name):
            xplane.read(write(tmp_path, data, name), fsspec.filesystem("file"))


def test_truncated_file_loads_the_events_before_the_cut(tmp_path: Path) -> None:
    data = MI300.read_bytes()
    full = xplane.read(str(MI300), fsspec.filesystem("file"))
    durations = set(full.ev_dur_ps.tolist())
    loaded = []
    for fraction in (0.05, 0.3, 0.5, 0.8, 0.97, 0.9999):
        path = write(tmp_path, data[: int(len(data) * fraction)])
        try:
            tr = xplane.read(path, fsspec.filesystem("file"))
        except UnreadableProfile as err:
            assert err.path == path
            loaded.append(0)
            continue
        assert any("damaged input" in w for w in tr.warnings)
        assert 0 < tr.num_events <= full.num_events
        # The clock can shift when the earliest events are cut: compare durations only.
        assert set(tr.ev_dur_ps.tolist()) <= durations
        loaded.append(tr.num_events)
    assert loaded == sorted(loaded)
    assert loaded[-3] > 0


def test_huge_declared_lengths_do_not_allocate(tmp_path: Path) -> None:
    # XSpace.planes claiming 2**62 bytes, with a valid small plane inside what is there.
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    host.event(host.line("t"), "e", 0, 10)
    plane_bytes = space.planes[0].SerializeToString()
    huge = b"\x0a" + varint(1 << 62) + plane_bytes
    tr = xplane.read(write(tmp_path, huge), fsspec.filesystem("file"))
    assert tr.num_events == 1
    assert any("declares" in w for w in tr.warnings)
    # An event whose stat claims far more bytes than the event holds: that event is dropped.
    meta = field(4, field(1, 1) + field(2, field(1, 1) + field(2, b"e")))
    good = field(1, 1) + field(2, 0) + field(3, 10)
    bad = field(1, 1) + field(2, 20) + field(3, 10) + b"\x22" + varint(1 << 35) + b"\x08\x01"
    line = field(2, b"t") + field(4, good) + field(4, bad)
    plane = field(2, b"/host:CPU") + field(3, line) + meta
    tr = xplane.read(write(tmp_path, field(1, plane), "bad_stat.xplane.pb"), fsspec.filesystem("file"))
    assert tr.num_events == 1
    assert tr.skipped == {"events that could not be decoded": 1}


def test_deep_nesting_does_not_recurse(tmp_path: Path) -> None:
    # 100 000 nested length-delimited unknown fields inside the XSpace, then a real plane.
    headers = []
    size = 0
    for _ in range(100_000):
        header = b"\x7a" + varint(size)  # field 15, LEN, wrapping everything inside it
        headers.append(header)
        size += len(header)
    nested = b"".join(reversed(headers))
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    host.event(host.line("t"), "e", 0, 10)
    tr = xplane.read(write(tmp_path, nested + space.SerializeToString()), fsspec.filesystem("file"))
    assert tr.num_events == 1
    # Start-group tags (deprecated protobuf groups) nested deeply: refused, not followed.
    groups = b"\x0b" * 100_000
    with pytest.raises(UnreadableProfile):
        xplane.read(write(tmp_path, groups, "groups.xplane.pb"), fsspec.filesystem("file"))


def test_line_timestamps_far_apart_are_skipped_not_overflowed(tmp_path: Path) -> None:
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    host.event(host.line("near", timestamp_ns=EPOCH_NS, line_id=1), "ok", 0, 10)
    host.event(host.line("also near", timestamp_ns=EPOCH_NS + 5, line_id=3), "ok too", 0, 10)
    host.event(host.line("far", timestamp_ns=-(1 << 62), line_id=2), "bad", 0, 10)
    tr = load(space, tmp_path)
    assert sorted(tr.strings[n] for n in tr.ev_name.tolist()) == ["ok", "ok too"]
    assert sum(tr.skipped.values()) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_real_file_never_crashes(tmp_path: Path, data: st.DataObject) -> None:
    original = bytearray(MI300.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(original) - 1))
        original[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(1, len(original)))
    try:
        tr = xplane.read(
            write(tmp_path, bytes(original[:cut]), "mutant.xplane.pb"), fsspec.filesystem("file")
        )
    except UnreadableProfile:
        return
    assert tr.num_events >= 0
    assert (tr.ev_dur_ps >= 0).all()
    for i in range(0, tr.num_events, max(1, tr.num_events // 50)):
        raw = tr.args_json(i)
        if raw:
            assert isinstance(msgspec.json.decode(raw), dict)


# -- wire decoding against protobuf's own encoder ----------------------------------------------

stat_values = st.one_of(
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.tuples(st.just("uint"), st.integers(0, (1 << 64) - 1)),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.binary(max_size=20),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    events=st.lists(
        st.tuples(
            st.integers(0, 1 << 50),
            st.integers(0, 1 << 45),
            st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), stat_values, max_size=5),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_event_fields_and_stats_decode_like_protobuf(tmp_path: Path, events: list[Any]) -> None:
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    line = host.line("t")
    for offset, duration, stats in events:
        host.event(line, "e", offset, duration, **stats)
    tr = load(space, tmp_path, "random.xplane.pb")
    zero = min(o for o, _, _ in events) // 1000 * 1000
    got = sorted(
        (int(s), int(d), _normal(tr.args_json(i)))
        for i, (s, d) in enumerate(zip(tr.ev_start_ps.tolist(), tr.ev_dur_ps.tolist(), strict=True))
    )
    expected = sorted((o - zero, d, _normal(_expected_args(stats))) for o, d, stats in events)
    assert got == expected


def _normal(raw: bytes) -> str:
    return repr(sorted((msgspec.json.decode(raw) if raw else {}).items()))


def _expected_args(stats: dict[str, Any]) -> bytes:
    out: dict[str, Any] = {}
    for key, value in stats.items():
        if isinstance(value, tuple):
            out[key] = value[1]
        elif isinstance(value, bytes):
            try:
                text = value.decode("utf-8")
                out[key] = text if all(c.isprintable() or c in "\t\n\r" for c in text) else value.hex()
            except UnicodeDecodeError:
                out[key] = value.hex()
        else:
            out[key] = value
    return msgspec.json.encode(out) if out else b""


def test_an_event_with_thousands_of_stats_is_read_completely(tmp_path: Path) -> None:
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    line = host.line("t")
    host.event(line, "small", 0, 1, a=1)
    wide = host.event(line, "wide", 10, 1, **{f"s{i}": i for i in range(5000)})
    host.set_stat(wide.stats.add(), "s7", -7)
    tr = load(space, tmp_path)
    by_name = {e[0]: e[4] for e in events_on(tr, "t")}
    assert by_name["small"] == {"a": 1}
    assert by_name["wide"] == {**{f"s{i}": i for i in range(5000)}, "s7 (2)": -7}


def test_xla_kernels_without_hlo_protos_use_their_tf_op_unless_it_is_the_module_annotation(
    tmp_path: Path,
) -> None:
    space = space_class()()
    gpu = PlaneBuilder(space, "/device:GPU:0")
    stream = gpu.line("Stream #3", line_id=3)
    common = {"kernel_details": "grid:1", "hlo_module": "cluster_1", "program_id": 9}
    gpu.event(stream, "k1", 0, 10, hlo_op="dot.1", tf_op="model/dense/MatMul:MatMul", **common)
    gpu.event(stream, "k2", 20, 10, hlo_op="add.2", tf_op="XlaModule:#hlo_module=cluster_1#", **common)
    tr = load(space, tmp_path)
    ops = [(n, s, d) for n, s, d, _, _ in events_on(tr, "Framework Ops (Stream #3)")]
    assert ops == [("MatMul", 0, 10)]


def test_an_event_stat_overrides_its_metadata_stat_of_the_same_name(tmp_path: Path) -> None:
    space = space_class()()
    tpu = PlaneBuilder(space, "/device:TPU:0")
    ops = tpu.line("XLA Ops")
    tpu.event(ops, "%copy.2 = f32[8] copy(...)", 40, 5, display="copy.2")
    meta = tpu.plane.event_metadata[tpu.event_id("%fusion.1 = f32[8] fusion(...)", "fusion.1")]
    tpu.set_stat(meta.stats.add(), "flops", 100)
    tpu.set_stat(meta.stats.add(), "bytes_accessed", 64)
    tpu.event(ops, "%fusion.1 = f32[8] fusion(...)", 0, 10, display="fusion.1", flops=7)
    tpu.event(ops, "%fusion.1 = f32[8] fusion(...)", 20, 10, display="fusion.1")
    tr = load(space, tmp_path)
    got = sorted((s, a) for _, s, _, _, a in events_on(tr, "XLA Ops"))
    for i in range(tr.num_events):
        keys = [k for k, _ in json.loads(tr.args_json(i), object_pairs_hook=list)]
        assert len(keys) == len(set(keys)), keys
    long_name = "%fusion.1 = f32[8] fusion(...)"
    assert got == [
        (0, {"long_name": long_name, "bytes_accessed": 64, "flops": 7}),
        (20, {"long_name": long_name, "flops": 100, "bytes_accessed": 64}),
        (40, {"long_name": "%copy.2 = f32[8] copy(...)"}),
    ]


def test_an_xspace_of_100k_planes_is_read_up_to_a_cap(tmp_path: Path) -> None:
    """Each plane costs tens of µs even when empty: a 420 KB fuzz input of about 100,000 planes took
    3.3 s, so a hostile file of millions would take minutes. The real planes come first and are read."""
    real = (DATA / "mi300_jax_conv.xplane.pb").read_bytes()
    path = tmp_path / "many.xplane.pb"
    path.write_bytes(real + field(1, b"") * 100_000)
    trace = xplane.read(str(path), fsspec.filesystem("file"))
    alone = xplane.read(str(DATA / "mi300_jax_conv.xplane.pb"), fsspec.filesystem("file"))
    assert trace.num_events == alone.num_events
    assert any(
        w.endswith(
            f"file: {100_000 + len(space_class().FromString(real).planes):,} planes, more than a capture "
            f"holds; read the first {xplane_decode.MAX_PLANES:,}"
        )
        for w in trace.warnings
    ), trace.warnings


def test_labels_made_for_one_batch_do_not_shift_the_names_of_the_next(tmp_path: Path) -> None:
    """A repeated name and a missing stat get labels ("x (2)", "stat#<id>") while the host plane's
    batch is written; the TPU plane's stat names come after: each keeps its own name."""
    space = space_class()()
    host = PlaneBuilder(space, "/host:CPU")
    event = host.event(host.line("t"), "e", 0, 1, _src="a.cc")
    host.set_stat(event.stats.add(), "_src", "b.cc")
    orphan = event.stats.add()
    orphan.metadata_id, orphan.int64_value = 4242, 7
    tpu = PlaneBuilder(space, "/device:TPU:0")
    tpu.event(tpu.line("XLA Ops"), "op", 0, 5, flops=3, bytes_accessed=8)
    tr = load(space, tmp_path)
    assert [a for *_, a in events_on(tr, "t")] == [{"_src": "a.cc", "_src (2)": "b.cc", "stat#4242": 7}]
    assert [a for *_, a in events_on(tr, "XLA Ops")] == [{"flops": 3, "bytes_accessed": 8}]
