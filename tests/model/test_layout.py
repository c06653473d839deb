"""`layout.event_order` against `np.lexsort((-dur, start, track))`, on the real XPlanes (whose events
come grouped by track and nearly in place) and on generated input of every shape its shortcuts
must not get wrong: grouped and in place, grouped with a few events out of place, interleaved."""

from __future__ import annotations

import fsspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profscope.formats.xplane import reader as xplane
from profscope.model import columns, layout
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

DATA = DATA_DIR / "xplane"


def _expected(track: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    return np.lexsort((-dur, start, track))


def _read_orders(name: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]]:
    """(track, start, dur, what event_order_unless_in_place gave) for each finalize of reading `name`."""
    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]] = []

    def recorded(track: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray | None:
        order = layout.event_order_unless_in_place(track, start, dur)
        seen.append((track.copy(), start.copy(), dur.copy(), order))
        return order

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(columns, "event_order_unless_in_place", recorded)
        xplane.read(str(DATA / name), fsspec.filesystem("file"))
    return seen


# (file, whether its events come in place): the GPU and MI300 captures take the shortcut; the TPU
# capture's tracks are grouped but a few events are out of place, so only some tracks are sorted.
REAL = [
    ("gpu_8x_tf_training.xplane.pb", True),
    ("mi300_jax_conv.xplane.pb", True),
    ("tpu_v6e_inference.xplane.pb", False),
]


@pytest.mark.parametrize(("name", "in_place"), REAL)
def test_real_xplane_events_sort_as_lexsort(name: str, in_place: bool) -> None:
    ((track, start, dur, order),) = _read_orders(name)
    assert track.shape[0] > 1000
    assert (order is None) == in_place
    expected = _expected(track, start, dur)
    np.testing.assert_array_equal(np.arange(track.shape[0]) if order is None else order, expected)
    np.testing.assert_array_equal(layout.event_order(track, start, dur), expected)
    if not in_place:
        out_of_place = layout._out_of_place(track, start, dur)
        assert out_of_place is not None, "the tracks come grouped"
        assert 0 < out_of_place.shape[0] < track.shape[0] // 100


def test_every_xplane_in_the_test_data_is_covered() -> None:
    assert sorted(name for name, _ in REAL) == sorted(p.name for p in DATA.glob("*.xplane.pb"))


@st.composite
def _events(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(0, 300))
    seed = draw(st.integers(0, 2**32 - 1))
    shape = draw(st.sampled_from(["grouped in place", "grouped, some out of place", "interleaved"]))
    rng = np.random.default_rng(seed)
    tracks = draw(st.integers(1, 6))
    track = rng.integers(0, tracks, n).astype(np.int32)
    # Few distinct starts and durations, so equal starts and equal keys are common.
    start = rng.integers(0, 20, n).astype(np.int64)
    dur = rng.integers(0, 4, n).astype(np.int64)
    if shape != "interleaved":
        in_place = np.lexsort((-dur, start, track))
        track, start, dur = track[in_place], start[in_place], dur[in_place]
    if shape == "grouped, some out of place" and n:
        moved = rng.integers(0, n, max(n // 20, 1))
        start[moved] = rng.integers(0, 20, moved.shape[0])
        dur[moved] = rng.integers(0, 4, moved.shape[0])
    return track, start, dur


@settings(max_examples=300, deadline=None)
@given(_events())
def test_event_order_is_the_stable_lexsort(events: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    track, start, dur = events
    np.testing.assert_array_equal(layout.event_order(track, start, dur), _expected(track, start, dur))


def test_grouped_check_spans_chunk_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decrease of the track id or an event out of place exactly at a chunk's edge is seen."""
    monkeypatch.setattr(layout, "_CHECK_CHUNK", 4)
    track = np.array([0, 0, 0, 0, 1, 1, 1, 1, 0], dtype=np.int32)
    start = np.array([0, 1, 2, 3, 2, 5, 6, 7, 8], dtype=np.int64)
    dur = np.ones(9, dtype=np.int64)
    assert layout._out_of_place(track, np.arange(9), dur) is None
    np.testing.assert_array_equal(layout._out_of_place(np.sort(track), np.arange(9), dur), [])
    np.testing.assert_array_equal(layout._out_of_place(np.zeros(9, dtype=np.int32), start, dur), [3])
    np.testing.assert_array_equal(
        layout.event_order(np.zeros(9, dtype=np.int32), start, dur), _expected(np.zeros(9), start, dur)
    )


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 200), st.sampled_from(["nested", "any rows"]))
def test_rows_valid_is_no_overlap_within_a_row(seed: int, n: int, rows_from: str) -> None:
    """`_rows_valid` (one stable sort by row) against the definition: per row, in start order, each
    slice of positive duration starts at or after the previous one's end."""
    rng = np.random.default_rng(seed)
    start = np.sort(rng.integers(0, 30, n)).astype(np.int64)
    dur = rng.integers(0, 6, n).astype(np.int64)
    in_place = np.lexsort((-dur, start))
    start, dur = start[in_place], dur[in_place]
    rows = (
        layout._nested_rows(start, dur) if rows_from == "nested" else rng.integers(0, 4, n).astype(np.int32)
    )
    expected = True
    for row in np.unique(rows).tolist():
        mine = np.flatnonzero((rows == row) & (dur > 0))
        ends = start[mine] + dur[mine]
        expected &= not bool(np.any(start[mine][1:] < ends[:-1]))
    assert layout._rows_valid(start, dur, rows) == expected


@settings(max_examples=300, deadline=None)
@given(_events())
def test_event_order_one_track_at_a_time_is_the_stable_lexsort(
    events: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """The per-track sort that tracks over `SMALL_TRACK_EVENTS` get (the generated ones are all small,
    so the test above covers the sort of all small tracks at once)."""
    track, start, dur = events
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layout, "SMALL_TRACK_EVENTS", 0)
        np.testing.assert_array_equal(layout.event_order(track, start, dur), _expected(track, start, dur))


@st.composite
def _small_tracks(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted (track, start, -dur) events on many small tracks: nested or overlapping slices,
    instants, equal starts, empty-looking gaps in the track ids."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    tracks = draw(st.integers(1, 60))
    sizes = rng.integers(1, 12, tracks)
    track = np.repeat(np.sort(rng.choice(10 * tracks, tracks, replace=False)), sizes).astype(np.int32)
    n = track.shape[0]
    start = rng.integers(0, 15, n).astype(np.int64) * draw(st.sampled_from([1, 10**12]))
    dur = rng.integers(0, 5, n).astype(np.int64) * (start.max() // 15 + 1 if n else 1)
    order = np.lexsort((-dur, start, track))
    return track[order], start[order], dur[order]


@settings(max_examples=300, deadline=None)
@given(_small_tracks())
def test_small_tracks_laid_out_together_get_the_rows_of_one_at_a_time(
    events: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """Rows of all small tracks at once (nested counts, the overlap check, the greedy fallback)
    equal the rows of the per-track path."""
    track, start, dur = events
    together = layout.layout_depths(track, start, dur)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layout, "SMALL_TRACK_EVENTS", 0)
        one_at_a_time = layout.layout_depths(track, start, dur)
    np.testing.assert_array_equal(together, one_at_a_time)


def _first_free_rows(start: np.ndarray, dur: np.ndarray) -> list[int]:
    """Greedy interval partitioning by its definition: each slice takes the lowest row whose slices
    have all ended by its start; an instant's row is the number of slices still open."""
    row_end: list[int] = []  # end of the last slice of each row
    rows = []
    for s, d in zip(start.tolist(), dur.tolist()):
        if d == 0:
            rows.append(sum(end > s for end in row_end))
            continue
        free = [r for r, end in enumerate(row_end) if end <= s]
        r = free[0] if free else len(row_end)
        if r == len(row_end):
            row_end.append(s + d)
        else:
            row_end[r] = s + d
        rows.append(r)
    return rows


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 300), st.integers(1, 50), st.sampled_from([0.0, 0.05, 0.5]))
def test_greedy_rows_are_the_first_free_rows_piece_by_piece(
    seed: int, n: int, piece: int, crossing: float
) -> None:
    """`_greedy_rows` (a stack while the open slices hold the lowest rows, heaps after) gives each slice the
    lowest free row, whole or in pieces with its state carried over (as `spill.layout` calls it),
    on nested tracks with a share of slices that end past their parent."""
    rng = np.random.default_rng(seed)
    start = np.sort(rng.integers(0, 400, n)).astype(np.int64)
    dur = rng.integers(0, 40, n).astype(np.int64) * (rng.random(n) > 0.2)
    nested = rng.random(n) > crossing  # most slices cut to end within the open slice before them
    open_ends: list[int] = []
    for i in range(n):
        while open_ends and open_ends[-1] <= start[i]:
            open_ends.pop()
        if open_ends and nested[i]:
            dur[i] = min(dur[i], open_ends[-1] - start[i])
        if dur[i]:
            open_ends.append(int(start[i] + dur[i]))
    order = np.lexsort((-dur, start))
    start, dur = start[order], dur[order]
    expected = _first_free_rows(start, dur)
    assert layout._greedy_rows(start, dur).tolist() == expected
    state: list = [[], [], 0]
    pieces = [
        layout._greedy_rows(start[lo : lo + piece], dur[lo : lo + piece], state) for lo in range(0, n, piece)
    ]
    assert (np.concatenate(pieces).tolist() if pieces else []) == expected
