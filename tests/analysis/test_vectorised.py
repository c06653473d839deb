"""The shared analysis' vectorised paths against plain loops on real traces: parents of host events,
times inside step windows, op groups counted in a table, and the memoised role lookups."""

from __future__ import annotations

import bisect

import numpy as np
import pytest

from profscope.analysis import events as ev
from profscope.analysis import op_tables
from profscope.analysis.device_idle import in_windows
from tests.support.overview import JAX_CPU, SLOW_INPUT, TPU, V100, host_events, host_result


@pytest.mark.parametrize("path", [V100, SLOW_INPUT, TPU, JAX_CPU], ids=lambda p: p.name.split(".")[0])
def test_parents_are_the_enclosing_event_one_row_up(path) -> None:
    events = host_events(path)
    trace = events.trace
    track, depth = trace.ev_track.tolist(), trace.ev_depth.tolist()
    start, end = trace.ev_start_ps.tolist(), events.end_ps.tolist()
    expected = [-1] * trace.num_events
    rows: dict[tuple[int, int], list[int]] = {}  # (track, depth) → its host events, in order
    for i in np.flatnonzero(events.host_track[trace.ev_track]).tolist():
        rows.setdefault((track[i], depth[i]), []).append(i)
    for (t, d), children in rows.items():
        above = rows.get((t, d - 1), []) if d > 0 else []
        above_starts = [start[p] for p in above]  # in start order: a track's events are
        for child in children:
            k = bisect.bisect_right(above_starts, start[child])  # those starting no later than it
            if k:
                p = above[k - 1]
                if end[p] > start[child] or start[p] == start[child]:
                    expected[child] = p
    assert events.parent.tolist() == expected
    assert (events.parent >= 0).sum() > 0


@pytest.mark.parametrize("path", [V100, SLOW_INPUT], ids=lambda p: p.name.split(".")[0])
def test_in_windows_agrees_with_a_scan_of_the_windows(path) -> None:
    result = host_result(path)
    events = result.events
    lo, hi = result.steps.start_ps, result.steps.end_ps
    in_event_order = events.trace.ev_start_ps[events.of_roles(*ev.HOST_ROLES)]  # one run per thread
    shuffled = np.random.default_rng(0).permutation(in_event_order)  # too many runs: searched per time
    for times in (in_event_order, shuffled, times_on_the_edges(lo, hi)):
        expected = [any(a <= t < b for a, b in zip(lo.tolist(), hi.tolist())) for t in times.tolist()]
        assert in_windows(times, lo, hi).tolist() == expected
    assert len(set(expected)) == 2


def times_on_the_edges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Every window edge and its neighbours, in order: where a half-open window is easiest to get wrong."""
    edges = np.concatenate((lo, hi))
    return np.sort(np.concatenate((edges - 1, edges, edges + 1)))


def test_op_groups_counted_in_a_table_match_the_sorted_groups() -> None:
    events = host_events(V100)
    chosen = events.of_roles(*ev.HOST_ROLES)
    names = events.trace.ev_name[chosen].astype(np.int64)
    dur = events.trace.ev_dur_ps[chosen].astype(np.float64)
    self_ps = events.self_ps[chosen].astype(np.float64)
    counted = op_tables._grouped(names, dur, self_ps)
    offset = names.shape[0] + (1 << 16)  # keys past the table's reach: grouped by sorting
    sorted_groups = op_tables._grouped(names + offset, dur, self_ps)
    assert counted[0].tolist() == (sorted_groups[0] - offset).tolist()
    for a, b in zip(counted[1:], sorted_groups[1:]):
        assert a.tolist() == b.tolist()
    assert counted[2].sum() == chosen.shape[0]


def test_role_lookups_are_the_events_of_those_roles_read_only() -> None:
    events = host_events(V100)
    for roles in (ev.DEVICE_ROLES, ev.HOST_ROLES, (ev.ROLE_RUNTIME,), (ev.ROLE_COMPUTE, ev.ROLE_COMM), (99,)):
        assert events.of_roles(*roles).tolist() == np.flatnonzero(np.isin(events.role, roles)).tolist()
    assert events.of_roles(*reversed(ev.DEVICE_ROLES)) is events.of_roles(*ev.DEVICE_ROLES)
    for shared in (events.of_roles(*ev.DEVICE_ROLES), events.of_roles(ev.ROLE_RUNTIME)):
        assert shared.shape[0]
        with pytest.raises(ValueError):
            shared[0] = -1
