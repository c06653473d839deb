"""`straggler`: the other ranks wait for one rank in their collectives, step after step.

Reads the ranks' comparison (`Context.ranks`, from `analysis.collectives.ranks`: per step the rank the others waited for
most). Fires on a merged session when, among at least `MIN_STEPS` steady steps with matched
collectives, the same rank is the straggler in at least `MIN_LAST_SHARE` of them, and the others'
summed wait for it in those steps reaches `MIN_WAIT_SHARE` of their summed wall time in those steps.
Cost: the others' summed wait for it per steady step, and that share.

Where the thresholds sit (`tests/data/multirank`, 4 ranks on 2 busy cores; share = the others' wait
for the most frequent last rank ÷ their wall time in the steps it is last in): `ddp4_clean`'s waits
are noise (0–6.4 ms on 7–21 ms steps) whose last rank rotates, 2 of 6 steps at most (33 %, share
26 %); `fsdp2_or_tp`'s rank 0 lags by 0.3–1.4 ms per collective, last in 5 of 6 steps, share 28 %;
the designed stragglers: `ddp4_slow_rank` rank 2 (6 of 6, 48 %), `jax2_cpu` process 1 (4 of 4, 78 %).
"""

from __future__ import annotations

import collections

from profscope.analysis.answers import OverviewLink
from profscope.analysis.findings import Rule
from profscope.answers import UNSET
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import Context, count, duration, share
from profscope.units import format_duration

MIN_STEPS = 3
MIN_LAST_SHARE = 0.75
MIN_WAIT_SHARE = 0.35


def check(ctx: Context) -> list[OverviewFinding]:
    ranks = ctx.ranks
    if ranks is None:
        return []
    steady = [s for s in ranks.steps if s.steady and s.collectives]
    last = collections.Counter(s.straggler for s in steady if s.straggler is not UNSET)
    if len(steady) < MIN_STEPS or not last:
        return []
    name, times = last.most_common(1)[0]
    if times / len(steady) < MIN_LAST_SHARE:
        return []
    h = ranks.hosts.index(name)
    mine = [s for s in steady if s.straggler == name]
    waited_ns = sum(s.waited_for_ns for s in mine)
    walls = {
        g: dict(zip(r.steps.numbers.tolist(), r.steps.wall_ps.tolist())) for g, r in enumerate(ctx.hosts)
    }
    others_ns = sum(
        walls[g][s.step] / 1e3
        for s in mine
        for g, wait in enumerate(s.wait_ns)
        if g != h and wait is not None
    )
    wait_share = waited_ns / others_ns if others_ns > 0 else 0.0
    if wait_share < MIN_WAIT_SHARE:
        return []
    cost_ns = waited_ns / len(steady)
    doing = collections.Counter(s.doing for s in mine if s.doing is not UNSET).most_common(1)
    where = f"`{doing[0][0]}`" if doing else "work the trace does not name"
    k = len(ranks.hosts) - 1
    others = f"the other {k} ranks wait together" if k > 1 else "the other rank waits"
    meanwhile = f" While they wait, {name} is in {where} ({doing[0][1]} of those steps)." if doing else ""
    finding = OverviewFinding(
        kind="straggler",
        host=name,
        title=f"The other ranks wait for {name} in their collectives",
        observation=(
            f"{name} is the last to reach the collectives in {times} of {len(steady)} steady steps; {others} "
            f"for it ≈ {format_duration(cost_ns)} per step ({wait_share * 100:.0f} % of their time in those "
            f"steps).{meanwhile}"
        ),
        hypothesis=(
            f"{name} does more or slower work than the others before the collective, in {where}, and every "
            "rank of the group waits for it: with synchronous collectives the slowest rank sets the step time."
        ),
        next_check=(
            f"Time {where} on every rank over the same steps (or give {name} the others' input and placement) "
            "and compare the others' wait in the collectives."
        ),
        rule=(
            f"the same rank last in ≥ {MIN_LAST_SHARE:.0%} of ≥ {MIN_STEPS} steady steps with collectives, the "
            f"others' wait for it ≥ {MIN_WAIT_SHARE:.0%} of their wall time in those steps"
        ),
        evidence=[
            count("steady steps it is last in", times),
            count("steady steps with collectives", len(steady)),
            duration("others' wait per step", cost_ns),
            share("share of the others' time", wait_share),
        ],
        link=OverviewLink(
            start_ns=min(s.start_ns for s in mine), end_ns=max(s.end_ns for s in mine), host=name
        ),
        cost_ns=cost_ns,
        cost_share=wait_share,
    )
    if doing:
        finding.link.search = doing[0][0]
    return [finding]


RULE = Rule("straggler", check)
