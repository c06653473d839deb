"""`spill_sort.plan` and `Plan.assign`: each row's piece is its track's first piece plus, for a track
cut by time, the number of cut points at or before its time, whether no track, one or several are
cut (the loop goes over runs of one track, grouped by a sort only when several are cut)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profscope.model.spill import sort as spill_sort

pytestmark = pytest.mark.stack_independent


@settings(max_examples=120, deadline=None)
@given(
    cost=st.lists(st.integers(0, 50), min_size=1, max_size=12),
    big=st.lists(st.integers(0, 11), max_size=4),
    rows=st.lists(st.tuples(st.integers(0, 11), st.integers(-5, 60)), min_size=1, max_size=200),
    capacity=st.integers(20, 60),
    far=st.sampled_from([0, 2**40, 2**61]),
)
def test_each_row_goes_to_its_tracks_piece_for_its_time(cost, big, rows, capacity, far):
    """`far` spreads the times: at 2**61 ps a track and time no longer make one int64 number
    (`Plan._combined`), and the rows are assigned track by track."""
    cost = np.array(cost, dtype=np.int64)
    for t in big:
        if t < cost.shape[0]:
            cost[t] = 10 * capacity  # cut by time
    track = np.array([t % cost.shape[0] for t, _ in rows], dtype=np.int32)
    time = np.array([s * far // 60 if s % 2 else s for _, s in rows], dtype=np.int64)
    plan = spill_sort.plan(cost, capacity, track, time)
    got = plan.assign(track, time)
    span = int(time.max()) - int(time.min()) + 1
    assert (plan._combined(time) is None) == (cost.shape[0] * span >= 2**63)
    plan._combined = lambda time: None  # the track-by-track path gives the same pieces
    assert np.array_equal(plan.assign(track, time), got)
    for row, (t, s) in enumerate(zip(track.tolist(), time.tolist(), strict=True)):
        piece = plan.pieces[got[row]]
        assert piece.track_lo <= t < piece.track_hi
        if piece.split:
            assert piece.time_lo is None or piece.time_lo <= s
            assert piece.time_hi is None or s < piece.time_hi
        else:
            assert got[row] == plan._first[t]
