"""Findings: one rule per module, each `check(ctx) -> list[OverviewFinding]`, run in `RULES` order.

A rule reads the figures the analysis already computed (per host: steps, scope, breakdown parts,
launches; the merged tables, see `base.Context`) and fires only past the threshold its module
docstring states, with the numbers that triggered it. Its wording proposes one hypothesis and a
controlled next check: it never promises a speed-up. A clean capture raises none.
"""

from __future__ import annotations

from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.findings import (
    dominant_op,
    input_bound,
    launch_bound,
    not_observed,
    recompile,
    repeated_copy,
    sync_stall,
)
from profscope.tools.overview.findings.base import Context

RULES = (
    not_observed.check,
    input_bound.check,
    sync_stall.check,
    launch_bound.check,
    repeated_copy.check,
    recompile.check,
    dominant_op.check,
)


def run(ctx: Context) -> list[OverviewFinding]:
    found: list[OverviewFinding] = []
    for rule in RULES:
        found.extend(rule(ctx))
    return found
