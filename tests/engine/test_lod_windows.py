"""The summary levels of a spilled trace are chosen from box counts that `Windows` gets from the
(bin, row) keys alone, each half of the windows on its own thread: on the real traces, cut in several
windows of start time, the keys give per level the same layout (first half, seam, later half, tail)
as the sums, and the same totals as one pass over all windows; and `_distinct` equals the sorted set
of pairs on generated keys, narrow (one int64 key per pair) and too wide for that."""

from __future__ import annotations

import fsspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profscope.engine.ingest import manager as ingest
from profscope.engine.lod import index as lod
from profscope.engine.lod import spilled as lod_spilled
from profscope.engine.lod import windows as lod_windows
from profscope.formats import registry
from profscope.model.spill import budget as spill_budget
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

DATA = DATA_DIR


@pytest.mark.parametrize(
    "name,fmt",
    [
        ("xplane/gpu_8x_tf_training.xplane.pb", "xplane"),
        ("xplane/tpu_v6e_inference.xplane.pb", "xplane"),
        ("kineto/worker0.1623143089861.pt.trace.json.gz", "chrome_trace"),
    ],
)
def test_counting_the_keys_gives_the_counts_of_the_full_reduction(name, fmt, tmp_path, monkeypatch):
    seen = []

    def summaries(self: lod_windows.Windows) -> list[int]:
        def halves(kind):
            return self._in_halves(lambda lo, hi, later: self._walk(kind, lo, hi, levels, later))

        def sizes(kind, walked):
            return [lod_windows._Layout.of(kind, walked, z, self.num_rows).sizes for z in range(self.top + 1)]

        windows = self.bounds.shape[0] + 1
        levels = range(self.top + 1)
        whole = [self._walk(lod_windows._SUMS, 0, windows, levels, False)]
        keys = halves(lod_windows._KEYS)
        summed = halves(lod_windows._SUMS)
        joined = 0  # levels whose halves meet inside one bin
        for z in range(self.top + 1):
            a, b = keys[0].last.get(z), keys[1].first.get(z, keys[1].last.get(z))
            joined += a is not None and b is not None and a.bin[0] == b.bin[0]
        # Every third level alone (as the stored levels are written): the same boxes at those levels.
        some = list(range(self.top % 3, self.top + 1, 3))
        skipping = self._in_halves(lambda lo, hi, later: self._walk(lod_windows._SUMS, lo, hi, some, later))
        for z in some:
            alone, full = (
                lod_windows._Layout.of(lod_windows._SUMS, h, z, self.num_rows) for h in (skipping, summed)
            )
            assert alone.sizes == full.sizes
            for a, b in zip(alone.held, full.held, strict=True):
                assert all(
                    np.array_equal(getattr(a, f), getattr(b, f)) for f in ("bin", "row", "count", "busy")
                )
        seen.append(
            (
                windows,
                sizes(lod_windows._KEYS, keys),
                sizes(lod_windows._SUMS, summed),
                [sum(s) for s in sizes(lod_windows._SUMS, whole)],
                joined,
            )
        )
        return []

    monkeypatch.setattr(lod_windows.Windows, "summaries", summaries)
    reader = registry.import_reader(ingest.READERS[fmt])
    with spill_budget.use(spill_budget.IngestMemory(str(tmp_path), 1)):
        trace = reader(str(DATA / name), fsspec.filesystem("file"))
    lod_spilled.build_extras(trace, str(tmp_path), 1)
    [(windows, counted, swept, whole, joined)] = seen
    assert windows > 3 and sum(whole) > trace.num_events
    assert counted == swept
    assert [sum(s) for s in swept] == whole
    # Both halves give boxes at every level that has any, and some levels join at the seam.
    assert all(s[0] and s[2] for s in swept if sum(s))
    assert joined > 0


def _pairs(bins: np.ndarray, rows: np.ndarray) -> list[tuple[int, int]]:
    return sorted(set(zip(bins.tolist(), rows.tolist(), strict=True)))


@settings(max_examples=80, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 6)), min_size=1, max_size=300),
    base=st.sampled_from([0, -(10**6), 3 << 40]),
    spread=st.sampled_from([1, 1 << 56]),  # 40 << 56 bins times 7 rows: past the one-key range
)
def test_distinct_pairs_come_sorted_by_bin_then_row(data, base, spread):
    bins = np.array([base + b * spread for b, _ in data], dtype=np.int64)
    rows = np.array([r for _, r in data], dtype=np.int64)
    got_bins, got_rows = lod_windows._distinct(bins, rows, 7)
    assert got_bins.dtype == got_rows.dtype == np.int64
    assert list(zip(got_bins.tolist(), got_rows.tolist(), strict=True)) == _pairs(bins, rows)


@settings(max_examples=120, deadline=None)
@given(
    boxes=st.dictionaries(
        st.tuples(st.integers(0, 6), st.integers(0, 60)), st.tuples(st.integers(1, 5), st.integers(0, 10**15))
    ),
    new=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6), st.integers(0, 10**15)), max_size=60),
    base=st.sampled_from([0, -(10**6), 3 << 40]),
    spread=st.sampled_from([1, 1 << 56]),  # past the one-key range: the lexsort path
    row_dtype=st.sampled_from([np.int32, np.int64]),
    shift=st.integers(1, 3),
    in_start_order=st.booleans(),
)
def test_next_level_by_row_sums_the_boxes_of_each_row_and_shifted_bin(
    boxes, new, base, spread, row_dtype, shift, in_start_order
):
    old = sorted(boxes.items())  # (row, bin) order
    bins = np.array([base + b * spread for (_, b), _ in old], dtype=np.int64)
    rows = np.array([r for (r, _), _ in old], dtype=np.int64)
    count = np.array([c for _, (c, _) in old], dtype=np.int64)
    busy = np.array([t for _, (_, t) in old], dtype=np.int64)
    if in_start_order:  # as from one group; from several, each group's are in start order
        new = sorted(new)
    new_bins = np.array([base + b * spread for b, _, _ in new], dtype=np.int64)
    new_rows = np.array([r for _, r, _ in new], dtype=row_dtype)
    new_busy = np.array([t for _, _, t in new], dtype=np.int64)
    expected: dict[tuple[int, int], list[int]] = {}
    for (r, b), (c, t) in old:
        box = expected.setdefault((r, (base + b * spread) >> shift), [0, 0])
        box[0], box[1] = box[0] + c, box[1] + t
    for b, r, t in new:
        box = expected.setdefault((r, base + b * spread), [0, 0])
        box[0], box[1] = box[0] + 1, box[1] + t
    got_bins, got_rows, (got_count, got_busy) = lod.next_level_by_row(
        bins, rows, (count, busy), new_bins, new_rows, (np.ones(len(new), np.int64), new_busy), 7, shift
    )
    assert got_rows.dtype == got_bins.dtype == got_count.dtype == got_busy.dtype == np.int64
    got = list(zip(got_rows.tolist(), got_bins.tolist(), got_count.tolist(), got_busy.tolist(), strict=True))
    assert got == [(r, b, c, t) for (r, b), (c, t) in sorted(expected.items())]
    by_bin = lod.in_bin_order(lod.Summaries(got_bins, got_rows, got_count, got_busy))
    assert list(zip(by_bin.bin.tolist(), by_bin.row.tolist(), strict=True)) == sorted(
        (b, r) for r, b in expected
    )


@settings(max_examples=120, deadline=None)
@given(
    old=st.sets(st.tuples(st.integers(0, 6), st.integers(0, 60))),
    new=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6)), max_size=60),
    base=st.sampled_from([0, -(10**6), 3 << 40]),
    spread=st.sampled_from([1, 1 << 56]),  # past the one-key range: `next_level_by_row` itself
    shift=st.integers(1, 3),
    in_start_order=st.booleans(),
)
def test_counting_keys_grow_as_the_boxes_of_next_level_by_row(old, new, base, spread, shift, in_start_order):
    boxes = sorted(old)  # (row, bin) order
    bins = np.array([base + b * spread for _, b in boxes], dtype=np.int64)
    rows = np.array([r for r, _ in boxes], dtype=np.int64)
    if in_start_order:
        new = sorted(new)
    new_bins = np.array([base + b * spread for b, _ in new], dtype=np.int64)
    new_rows = np.array([r for _, r in new], dtype=np.int32)
    # With a sum per box, the boxes go the way of the summaries (an order gathered into columns).
    sums, new_sums = (np.zeros(bins.shape[0]),), (np.zeros(new_bins.shape[0]),)
    want_bins, want_rows, _ = lod.next_level_by_row(bins, rows, sums, new_bins, new_rows, new_sums, 7, shift)
    got_bins, got_rows, got_sums = lod.next_level_by_row(bins, rows, (), new_bins, new_rows, (), 7, shift)
    assert got_bins.dtype == got_rows.dtype == np.int64 and got_sums == ()
    assert got_bins.tolist() == want_bins.tolist() and got_rows.tolist() == want_rows.tolist()
