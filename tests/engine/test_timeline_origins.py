"""Hosts whose clock origins lie months apart (a wrong clock on one host): session times are int64
ps, which span 106 days, so aligning such hosts overflowed in tiles and search (`OverflowError`).
The largest group of hosts within one timeline's span is aligned; each other host is placed at the
session start, with a warning that names it.
"""

from __future__ import annotations

import numpy as np
import pytest

from profscope.engine.lod import index as lod
from profscope.engine.timeline import HOST_SHIFT, MAX_SESSION_PS, HostTrace, Timeline
from profscope.model.columns import TraceBuilder

pytestmark = pytest.mark.stack_independent

DAY_NS = 86_400 * 10**9
INT64_MAX = 2**63 - 1


def host(name: str, origin_ns: int, events: int = 10) -> HostTrace:
    b = TraceBuilder(name, "test")
    b.clock_origin_ns = origin_ns
    track = b.track(b.section("s"), "t")
    b.add_events(
        track, np.arange(events) * 1000, np.full(events, 500), np.full(events, b.intern(f"op_{name}"))
    )
    trace = b.finalize()
    return HostTrace(name, trace, lod.build(trace), key=name)


def every_answer(tl: Timeline) -> None:
    """Meta, every tile of the full view, search, summary and each event's details answer."""
    tl.meta()
    width = lod.BASE_PS << tl.max_level
    for index in range(tl.span_ps // width + 1):
        tl.tile(tl.max_level, index)
    assert tl.search("op_").total == sum(h.trace.num_events for h in tl.hosts)
    tl.summary()
    for h, ht in enumerate(tl.hosts):
        tl.event((h << HOST_SHIFT) + ht.trace.num_events - 1)
    assert all(0 <= off + end <= INT64_MAX for off, end in zip(tl.offsets_ps, _ends(tl)))


def _ends(tl: Timeline) -> list[int]:
    return [h.trace.time_span_ps()[1] for h in tl.hosts]


@pytest.mark.parametrize("days", [200, 107, 10_000])
def test_a_host_months_away_is_placed_at_the_session_start_with_a_warning(days: int) -> None:
    tl = Timeline([host("a", 1_700_000_000 * 10**9), host("b", 1_700_000_000 * 10**9 + days * DAY_NS)])
    every_answer(tl)
    assert tl.offsets_ps == [0, 0]
    assert tl.warnings == [
        f"the clock of b starts {days:,} days away from the other hosts' (one timeline spans at most "
        "53 days): placed at the session start, not aligned with them"
    ]
    assert tl.event(1 << HOST_SHIFT).start_ns == 0.0


def test_the_largest_group_of_hosts_stays_aligned_when_the_earliest_clock_is_wrong() -> None:
    """One host at epoch 0 (no clock) and three of a real run a day apart: the three keep their
    relative times, the stray one is set apart, not the other way round."""
    now = 1_700_000_000 * 10**9
    tl = Timeline([host("stray", 0), host("r0", now), host("r1", now + DAY_NS), host("r2", now + 2 * DAY_NS)])
    assert tl.offsets_ps == [0, 0, DAY_NS * 1000, 2 * DAY_NS * 1000]
    assert len(tl.warnings) == 1 and tl.warnings[0].startswith("the clock of stray starts 19,676 days away")
    every_answer(tl)


def test_hosts_50_days_apart_are_aligned_exactly() -> None:
    gap_ns = 50 * DAY_NS
    tl = Timeline([host("a", 5 * 10**18), host("b", 5 * 10**18 + gap_ns)])
    assert tl.offsets_ps == [0, gap_ns * 1000] and tl.warnings == []
    assert tl.span_ps <= MAX_SESSION_PS
    every_answer(tl)
    assert tl.event(1 << HOST_SHIFT).start_ns == gap_ns
