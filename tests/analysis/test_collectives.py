"""Who waits for whom across the ranks of a merged session, checked against the hand-computed
figures of tests/data/multirank/FACTS.md (arrival = start of the rank's collective call: the
`c10d::*` op for PyTorch, the XLA op for JAX), plus sizes and bus bandwidth by hand."""

from __future__ import annotations

import collections
import functools
import pathlib

import pytest

from profscope.analysis import collectives, events
from profscope.analysis.host import analyze_host
from profscope.analysis.results import HostInput, HostResult, Options
from profscope.answers import UNSET
from profscope.engine.lod import index as lod
from profscope.engine.timeline import HostTrace, Timeline
from profscope.tools.overview import analysis
from profscope.tools.overview.answers import OverviewAnswer
from tests.support import DATA_DIR
from tests.support.overview import RANK0, RANK1, trace_of

MULTIRANK = DATA_DIR / "multirank"
MS = 1e6

# FACTS.md §2: waits (ms) by `c10d::allreduce_` start, per step, ranks 0–3; rank 2 last everywhere.
SLOW_RANK_WAITS = {
    2: (17.75, 14.82, 0, 17.55),
    3: (25.39, 18.94, 0, 23.66),
    4: (23.15, 21.38, 0, 19.83),
    5: (13.71, 14.91, 0, 12.73),
    6: (17.52, 14.92, 0, 14.55),
    7: (44.62, 27.15, 0, 17.76),
}
# FACTS.md §3: the clean twin's last arriver per step rotates.
CLEAN_LAST = {2: "rank3", 3: "rank0", 4: "rank0", 5: "rank3", 6: "rank1", 7: "rank1"}
# FACTS.md §5: process 0's wait (ns) in each step's all-reduce = p1 start − p0 start.
JAX_WAITS_NS = {
    0: 1796613634276463141 - 1796613634258309927,
    1: 1796613634298167501 - 1796613634280045518,
    2: 1796613634323339587 - 1796613634305039559,
    3: 1796613634345069665 - 1796613634326898294,
}


def job_files(job: str) -> list[tuple[str, pathlib.Path]]:
    """(host name, file) of a multi-rank job: `rankN` for the Kineto files, `processN` for JAX."""
    folder = MULTIRANK / job
    if job == "jax2_cpu":
        return [(p.relative_to(folder).parts[0], p) for p in sorted(folder.rglob("*.xplane.pb"))]
    return [(p.name.split(".")[0], p) for p in sorted(folder.glob("*.pt.trace.json.gz"))]


@functools.cache
def merged(files: tuple[tuple[str, pathlib.Path], ...]) -> tuple[HostInput, ...]:
    """The hosts of one merged session, each at its offset on the session clock."""
    hosts = [(name, trace_of(path)) for name, path in files]
    timeline = Timeline([HostTrace(name, trace, lod.build(trace), name) for name, trace in hosts])
    return tuple(
        HostInput(events.build(name, trace, lod.build(trace).self_ps), int(offset), int(base))
        for (name, trace), offset, base in zip(hosts, timeline.offsets_ps, timeline.track_base[:-1].tolist())
    )


def results(job: str) -> list[HostResult]:
    return [analyze_host(h, Options()) for h in merged(tuple(job_files(job)))]


def overview(job: str) -> OverviewAnswer:
    return analysis.answer(job, merged(tuple(job_files(job))), Options())


def test_rank_2_is_the_straggler_of_every_step_with_the_hand_computed_waits() -> None:
    ranks = collectives.ranks(results("ddp4_slow_rank"))
    assert ranks.hosts == ["rank0", "rank1", "rank2", "rank3"]
    assert [s.step for s in ranks.steps] == list(SLOW_RANK_WAITS)
    for step in ranks.steps:
        assert step.steady and step.collectives == 1
        assert step.straggler == "rank2"
        assert step.wait_ns == pytest.approx([w * MS for w in SLOW_RANK_WAITS[step.step]], abs=0.01 * MS)
        assert step.waited_for_ns == pytest.approx(sum(SLOW_RANK_WAITS[step.step]) * MS, abs=0.03 * MS)
        assert (step.doing_source, step.doing) == ("phase", "load_batch")  # rank 2 sleeps there


def test_instance_1_by_hand() -> None:
    """FACTS.md §2, `ProfilerStep#3`, c10d starts and gloo ends in µs."""
    row = collectives.ranks(results("ddp4_slow_rank")).collectives[1]
    assert (row.step, row.name, row.kind, row.last) == (3, "c10d::allreduce_", "all_reduce", "rank2")
    assert row.matched_by == "order 2 in group default"
    # rank 0 waits 5756489322500.776 − 5756489297111.176 = 25389.600 µs.
    assert row.wait_ns[0] == pytest.approx(25_389_600, abs=2)
    assert row.arrival_ns[2] - row.arrival_ns[1] == pytest.approx((322500.776 - 303563.717) * 1e3, abs=2)
    # Last arrival 5756489322500.776; the last rank done is rank 2's gloo:all_reduce at 5756489325905.003:
    # transfer = 3404.227 µs.
    assert row.transfer_ns == pytest.approx(3_404_227, abs=50)
    # 26 122 float32 = 104 488 B; algbw = 104 488 B / 3.404227 ms = 30.694 MB/s;
    # busbw (all-reduce, n = 4) = algbw × 2 × 3 / 4 = 46.040 MB/s.
    assert row.bytes == 104_488
    assert row.algbw == pytest.approx(30.6936e6, rel=1e-4)
    assert row.busbw == pytest.approx(46.0404e6, rel=1e-4)


def test_the_straggler_finding_and_its_cost() -> None:
    answer = overview("ddp4_slow_rank")
    (finding,) = [f for f in answer.findings if f.kind == "straggler"]
    assert finding.host == "rank2"
    # FACTS.md §2: the others' waits summed over the 6 steps = 360.34 ms (rounded per cell), ÷ 6 steps.
    assert finding.cost_ns == pytest.approx(360.34 / 6 * MS, abs=0.02 * MS)
    assert finding.link.search == "load_batch"
    assert "6 of 6 steady steps" in finding.observation
    assert 0.40 < finding.cost_share < 0.55
    assert answer.ranks.steps[0].straggler == "rank2"


def test_the_clean_twin_rotates_and_raises_no_straggler() -> None:
    answer = overview("ddp4_clean")
    assert {s.step: s.straggler for s in answer.ranks.steps} == CLEAN_LAST
    assert max(w for s in answer.ranks.steps for w in s.wait_ns) < 6.4 * MS
    assert "straggler" not in [f.kind for f in answer.findings]


def test_fsdp_lag_is_below_the_threshold() -> None:
    """Rank 0 lags by ≈ 1 ms per collective (FACTS.md §4): last in 5 of 6 steps but the wait stays
    under a third of rank 1's time, so no finding."""
    answer = overview("fsdp2_or_tp")
    last = collections.Counter(s.straggler for s in answer.ranks.steps)
    assert last == {"rank0": 5, "rank1": 1}
    assert "straggler" not in [f.kind for f in answer.findings]


@pytest.mark.parametrize("job", ["ddp4_slow_rank", "ddp4_clean", "fsdp2_or_tp"])
def test_matched_collectives_have_equal_sizes_on_every_rank(job: str) -> None:
    hosts = results(job)
    instances, unmatched = collectives.match(
        [collectives.read_calls(r.events) for r in hosts], ["a"] * len(hosts)
    )
    assert unmatched == [] and instances
    for instance in instances:
        assert len(instance.calls) == len(hosts)
        assert len({(c.kind, c.bytes) for c in instance.calls.values()}) == 1
        assert next(iter(instance.calls.values())).bytes


def test_fsdp_sizes_follow_the_c10d_buffers() -> None:
    """FACTS.md §4: per step 6 all-gathers and 3 reduce-scatters; the size is the gathered output of an
    all-gather and the full input of a reduce-scatter (float32)."""
    ranks = collectives.ranks(results("fsdp2_or_tp"))
    step3 = [c for c in ranks.collectives if c.step == 3]
    ag, rs = "all_gather", "reduce_scatter"
    assert [(c.kind, c.bytes) for c in step3] == [
        (ag, 8320 * 4), (ag, 16512 * 4), (ag, 1290 * 4), (ag, 1290 * 4), (ag, 16512 * 4),
        (rs, 1290 * 4), (ag, 8320 * 4), (rs, 16512 * 4), (rs, 8320 * 4),
    ]  # fmt: skip
    # all-gather, n = 2: busbw = algbw × (2 − 1) / 2.
    assert step3[0].busbw == pytest.approx(step3[0].algbw / 2)


def test_jax_process_1_is_last_in_every_step() -> None:
    ranks = collectives.ranks(results("jax2_cpu"))
    assert ranks.hosts == ["process0", "process1"]
    assert [s.straggler for s in ranks.steps] == ["process1"] * 4
    reduces = [c for c in ranks.collectives if c.kind == "all_reduce"]
    assert [c.matched_by for c in reduces] == [f"run_id {-517521279 + k}" for k in range(4)]
    for c in reduces:
        assert c.last == "process1"
        assert c.wait_ns[0] == pytest.approx(JAX_WAITS_NS[c.step], abs=1e3)
        assert 18.1 * MS < c.wait_ns[0] < 18.31 * MS
        assert c.bytes is UNSET  # XLA's ops record no message size
    assert "straggler" in [f.kind for f in overview("jax2_cpu").findings]


def test_the_sampled_nccl_pair_says_what_cannot_be_matched() -> None:
    hosts = merged((("rank-0", RANK0), ("rank-1", RANK1)))
    ranks = collectives.ranks([analyze_host(h, Options()) for h in hosts])
    assert ranks.collectives == [] and ranks.collectives_total == 0
    assert "1st collective call differs" in ranks.unmatched
    assert "none is paired" in ranks.unmatched
    assert "2 of the job's 128 ranks" in ranks.records
    assert all(s.straggler is UNSET and s.collectives == 0 for s in ranks.steps)


@pytest.mark.parametrize(
    ("kind", "n", "factor"),
    [("all_reduce", 8, 14 / 8), ("all_gather", 8, 7 / 8), ("reduce_scatter", 4, 3 / 4), ("all_to_all", 2, 1 / 2),
     ("broadcast", 8, 1), ("reduce", 8, 1)],
)  # fmt: skip
def test_bus_factors_are_nccl_tests(kind: str, n: int, factor: float) -> None:
    assert collectives.bus_factor(kind, n) == pytest.approx(factor)


@pytest.mark.parametrize(
    ("name", "kind"),
    [("c10d::allreduce_", "all_reduce"), ("c10d::_allgather_base_", "all_gather"),
     ("c10d::_reduce_scatter_base_", "reduce_scatter"), ("nccl:all_to_all", "all_to_all"),
     ("gloo:all_reduce", "all_reduce"), ("all-reduce-start.1", "all_reduce"), ("reduce-scatter", "reduce_scatter"),
     ("ncclDevKernel_AllGather_RING_LL", "all_gather"), ("c10d::broadcast_", "broadcast"), ("c10d::reduce_", "reduce")],
)  # fmt: skip
def test_kinds_from_names(name: str, kind: str) -> None:
    assert collectives.kind_of(name) == kind


def call(kind: str, start: int, seq: int | None = None, size: int | None = 64) -> collectives.Call:
    group = "pg0" if seq is not None else "default"
    return collectives.Call(kind, f"c10d::{kind}_", group, start, start + 10, 0, bytes=size, seq=seq)


def test_sequence_numbers_pair_across_order_and_say_what_is_missing() -> None:
    """`record_param_comms` `seq` pairs instances whatever their order; one a rank lacks is reported."""
    a = collectives.HostCalls([call("all_reduce", 0, seq=1), call("all_gather", 5, seq=2)], "PyTorch")
    b = collectives.HostCalls(
        [call("all_gather", 1, seq=2), call("all_reduce", 7, seq=1), call("all_reduce", 9, seq=3)], "PyTorch"
    )
    instances, notes = collectives.match([a, b], ["r0", "r1"])
    assert [(i.kind, i.matched_by, [c.start_ps for c in i.calls.values()]) for i in instances] == [
        ("all_reduce", "seq 1", [0, 7]),
        ("all_gather", "seq 2", [5, 1]),
    ]
    assert notes == ["1 instance(s) of group pg0 are not on all 2 ranks that use it"]


def test_order_is_refused_when_the_counts_differ() -> None:
    a = collectives.HostCalls([call("all_reduce", 0), call("all_reduce", 5)], "PyTorch")
    b = collectives.HostCalls([call("all_reduce", 1)], "PyTorch")
    instances, (note,) = collectives.match([a, b], ["r0", "r1"])
    assert instances == []
    assert note.startswith("group default: the ranks hold different numbers of collective calls (r0 2, r1 1)")
