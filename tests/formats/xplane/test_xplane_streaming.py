"""XPlane reader in bounded memory: the trace is the same however the file is cut into batches
and whatever goes to scratch files, for every real XPlane in tests/data/xplane."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest

from profscope.formats.xplane import reader as xplane
from profscope.formats.xplane import spill as xplane_spill
from profscope.model.columns import Trace
from tests.support import DATA_DIR
from tests.support.xplane_messages import space_class

DATA = DATA_DIR / "xplane"
FILES = sorted(p.name for p in DATA.glob("*.xplane.pb"))
ARRAYS = [f.name for f in dataclasses.fields(Trace) if f.type == "np.ndarray"]


def read(path: Path, **options: int) -> Trace:
    return xplane.read(str(path), fsspec.filesystem("file"), **options)  # type: ignore[arg-type]


def assert_same(got: Trace, want: Trace) -> None:
    assert got.strings == want.strings
    assert got.sections == want.sections
    assert got.tracks == want.tracks
    for name in ARRAYS:
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert got.clock_origin_ns == want.clock_origin_ns
    assert got.warnings == want.warnings
    assert got.skipped == want.skipped
    assert got.metadata == want.metadata
    assert dict(got.attachments) == dict(want.attachments)


def spilled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the scratch files the reader opens from now on."""
    opened: list[str] = []
    original = xplane_spill.Scratch.open

    def spy(self: xplane_spill.Scratch, name: str) -> Any:
        opened.append(name)
        return original(self, name)

    monkeypatch.setattr(xplane_spill.Scratch, "open", spy)
    return opened


@pytest.mark.parametrize("name", FILES)
def test_tiny_batches_and_spilling_give_the_one_batch_trace(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = DATA / name
    whole = read(path, batch_bytes=1 << 30)
    opened = spilled(monkeypatch)
    # A 4 kB window holds a hundred events or so: hundreds of batches, most lines cut many
    # times; a 0 MB budget sends every flow record through scratch files.
    small = xplane.read(
        str(path), fsspec.filesystem("file"), scratch_dir=str(tmp_path), batch_bytes=4096, memory_mb=0
    )
    assert small.num_events == whole.num_events > 1000
    assert opened  # flow records went through scratch files
    assert_same(small, whole)
    assert list(tmp_path.iterdir()) == []  # the scratch files are gone


def set_stats(plane: Any, event: Any, **stats: int | float) -> None:
    for name, value in stats.items():
        mid = next(
            (k for k, v in plane.stat_metadata.items() if v.name == name), len(plane.stat_metadata) + 1
        )
        plane.stat_metadata[mid].id, plane.stat_metadata[mid].name = mid, name
        stat = event.stats.add()
        stat.metadata_id = mid
        if isinstance(value, float):
            stat.double_value = value
        else:
            stat.uint64_value = value


def counters_and_flows(copies: int) -> bytes:
    """What the corpus lacks: `_counters_` lines (a counter with two series), `flow` stat chains
    across lines, and correlation ids between host launches and kernels with steps."""
    space = space_class()()
    host, gpu = space.planes.add(), space.planes.add()
    host.name, gpu.name = "/host:CPU", "/device:GPU:0"
    for plane, names in ((host, ("launch", "work")), (gpu, ("kernel", "HBM", "Power"))):
        for mid, name in enumerate(names, 1):
            plane.event_metadata[mid].id, plane.event_metadata[mid].name = mid, name
    threads = [host.lines.add() for _ in range(2)]
    stream, counters = gpu.lines.add(), gpu.lines.add()
    for i, line in enumerate([*threads, stream, counters]):
        line.id, line.timestamp_ns = i + 1, 1_700_000_000_000_000_000 + i
    stream.name, counters.name = "Stream #7", "_counters_"
    for k in range(copies):
        t = k * 10_000_000
        launch = threads[k % 2].events.add()
        launch.metadata_id, launch.offset_ps, launch.duration_ps = 1, t, 2_000_000
        set_stats(host, launch, correlation_id=k, group_id=k // 7, flow=(k // 3) << 2 | 2 | (5 << 58))
        work = threads[(k + 1) % 2].events.add()
        work.metadata_id, work.offset_ps, work.duration_ps = 2, t + 1_000_000, 500_000
        set_stats(host, work, flow=(k // 3) << 2 | 1)
        kernel = stream.events.add()
        kernel.metadata_id, kernel.offset_ps, kernel.duration_ps = 1, t + 3_000_000, 4_000_000
        set_stats(gpu, kernel, correlation_id=k, group_id=k // 7, kernel_details=1)
        for mid, stats in ((2, {"used": k % 11}), (3, {"watts": 250.5 + k, "volts": 0.9})):
            sample = counters.events.add()
            sample.metadata_id, sample.offset_ps = mid, t
            set_stats(gpu, sample, **stats)
    return space.SerializeToString()


def test_counters_flows_and_launches_do_not_depend_on_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "synthetic.xplane.pb"
    path.write_bytes(counters_and_flows(1500))
    whole = read(path, batch_bytes=1 << 30)
    assert {t.name for t in whole.tracks if t.kind == "counter"} == {"HBM", "Power watts", "Power volts"}
    assert whole.ctr_track.shape[0] == 4500 and whole.flow_src.shape[0] > 2500
    assert any(t.name == "Launch Stats" for t in whole.tracks)
    opened = spilled(monkeypatch)
    small = read(path, batch_bytes=1000, memory_mb=0)
    assert {"flows.0.npy", "correlations.0.npy", "links.0.npy", "launches.0.npy"} <= set(opened)
    assert_same(small, whole)


def test_a_file_on_another_filesystem_reads_the_same(tmp_path: Path) -> None:
    path = DATA / "mi300_jax_conv.xplane.pb"
    fs = fsspec.filesystem("memory")
    fs.pipe("/streaming/mi300.xplane.pb", path.read_bytes())
    copied = xplane.read("/streaming/mi300.xplane.pb", fs, scratch_dir=str(tmp_path), batch_bytes=4096)
    assert_same(copied, read(path))
    assert list(tmp_path.iterdir()) == []


def test_a_partition_read_gives_its_pages_back(tmp_path: Path) -> None:
    """Each spilled partition is read once: its scratch file is emptied as it is handed out, so
    the writes that follow get its pages; the rows come back as they were added, by partition."""
    scratch = xplane_spill.Scratch(str(tmp_path))
    table = xplane_spill.Partitioned(scratch, "rows", budget=1 << 10)
    rng = np.random.default_rng(3)
    n = 200_000  # every partition's file past its write buffer
    part = rng.integers(0, xplane_spill.PARTS, n)
    values = np.arange(n, dtype=np.int64)
    for lo in range(0, n, 20_000):
        table.add(part[lo : lo + 20_000], values[lo : lo + 20_000])
    sizes = []
    got = []
    for (group,) in table.groups():
        files = sorted(Path(scratch.dir()).glob("rows.*.npy"), key=lambda f: int(f.name.split(".")[1]))
        sizes.append([f.stat().st_size for f in files])
        got.append(group)
    assert [g.tolist() for g in got] == [values[part == p].tolist() for p in range(xplane_spill.PARTS)]
    # While partition k is handed out, partitions 0…k are empty and the rest still hold theirs.
    for k, row in enumerate(sizes):
        assert all(size == 0 for size in row[: k + 1]) and all(size > 0 for size in row[k + 1 :])
    scratch.close()
