"""The critical path of a step across ranks (`analysis/rank_path.py`), checked against the hand-computed
facts of tests/data/multirank/FACTS.md.

`ddp4_slow_rank`: rank 2 sleeps 20 ms in `load_batch`, the others 2 ms, so the designed delay is 18 ms
per step. In every steady step the path of ranks 0, 1 and 3 crosses into rank 2 at the all-reduce,
and their "waiting for another rank" equals their wait in FACTS.md §2 (last arrival − own arrival,
by `c10d::allreduce_` start) to 0.01 ms: 13.7–25.4 ms, 44.6 ms for rank 0 in the noisy last step;
over the 18 (rank, step) pairs 360.34 ms, a mean of 20.02 ms, the designed 18 ms plus 2.0 ms (11 %)
of CPU contention (4 ranks on 2 cores stretch rank 2's 20 ms sleep to 20.3–24.5 ms). Rank 2 waits
for nobody; its own data loading (its `load_batch`) is on its path.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

from profscope.analysis import collectives, rank_path
from profscope.analysis import steps as host_steps
from tests.analysis.test_collectives import CLEAN_LAST, MS, SLOW_RANK_WAITS, job_files, merged

SLOW = 2
DESIGNED_DELAY_MS = 20 - 2  # SLOW_S − FAST_S in the capture script


@dataclasses.dataclass(frozen=True)
class CallEnds:
    end_ps: int  # the collective done on the rank
    event_end_ps: int  # the rank's own `c10d::allreduce_` call returned


def calls(host: int) -> list[CallEnds]:
    events = merged(tuple(job_files("ddp4_clean")))[host].events
    return [CallEnds(c.end_ps, int(events.end_ps[c.event])) for c in collectives.read_calls(events).calls]


@functools.cache
def paths(job: str, number: int) -> tuple[rank_path.RankPath, ...]:
    hosts = merged(tuple(job_files(job)))
    ranks = []
    for host in hosts:
        found = host_steps.find(host.events, None)
        ranks.append(rank_path.RankStep(host, found, int(np.flatnonzero(found.numbers == number)[0])))
    return tuple(rank_path.find(ranks))


@pytest.mark.parametrize("number", sorted(SLOW_RANK_WAITS))
def test_the_waiting_ranks_path_crosses_into_rank_2_and_waits_as_facts_say(number: int) -> None:
    for path in paths("ddp4_slow_rank", number):
        lo, hi = path.window_ps
        assert sum(path.by_cause_ps.values()) == hi - lo
        assert path.total_ps == hi - lo - path.by_cause_ps["idle"]
        wait_ms = path.by_cause_ps["rank_wait"] / 1e9
        assert wait_ms == pytest.approx(SLOW_RANK_WAITS[number][path.host], abs=0.01)
        through = {h for h, _ in path.events}
        crossings = [e for e in path.edges if e.kind == rank_path.RANK]
        if path.host == SLOW:
            assert through == {SLOW} and not crossings
            assert path.by_cause_ps["data_loading"] >= 20 * 1e9  # its 20 ms sleep, on its path
            continue
        assert through == {SLOW, path.host}
        (cross,) = crossings
        assert (cross.src_host, cross.dst_host) == (SLOW, path.host)
        assert path.events[0][0] == SLOW  # the path starts on rank 2 and ends on the waiting rank
        assert path.events[-1][0] == path.host


def test_the_mean_wait_is_the_designed_delay_plus_contention() -> None:
    waits = [
        p.by_cause_ps["rank_wait"] / 1e9
        for number in SLOW_RANK_WAITS
        for p in paths("ddp4_slow_rank", number)
        if p.host != SLOW
    ]
    assert len(waits) == 18
    assert sum(waits) == pytest.approx(360.34, abs=0.05)
    assert np.mean(waits) - DESIGNED_DELAY_MS == pytest.approx(2.02, abs=0.01)


def test_the_clean_twin_crosses_only_into_each_steps_last_arriver() -> None:
    """FACTS.md §3: the last arriver rotates and the waits are noise (≤ 6.4 ms). Of the 18 waiting
    (rank, step) pairs, 12 paths cross, each into that step's last arriver, with the rank's wait of
    FACTS.md; 5 do not because the rank was still inside its own `c10d::allreduce_` (an enqueue
    slowed by contention) when the collective ended, so it never waited, and 1 (rank 1, step 2)
    because its own chain is the heavier: no wait on the path, none counted."""
    crossed = 0
    for number, last_name in CLEAN_LAST.items():
        last = int(last_name.removeprefix("rank"))
        for path in paths("ddp4_clean", number):
            lo, hi = path.window_ps
            assert sum(path.by_cause_ps.values()) == hi - lo
            crossings = [(e.src_host, e.dst_host) for e in path.edges if e.kind == rank_path.RANK]
            assert crossings in ([], [(last, path.host)])
            if crossings:
                crossed += 1
                assert 1 * MS * 1e3 < path.by_cause_ps["rank_wait"] < 6.4 * MS * 1e3
            else:
                assert path.by_cause_ps["rank_wait"] == 0
                if path.host != last and (path.host, number) != (1, 2):
                    call = calls(path.host)[number - 2]  # one all-reduce per step, steps 2–7
                    assert call.event_end_ps > call.end_ps  # the enqueue outlasted the collective
    assert crossed == 12
