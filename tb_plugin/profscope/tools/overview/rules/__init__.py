"""The Overview's findings: one rule per module (`RULE = Rule(kind, check)`, `analysis.findings`),
run in `RULES` order; each `check(ctx)` returns its `OverviewFinding`s (`waiting` is the analysis
`input_bound` and `host_wait` share, not a rule).

A rule reads the figures the analysis already computed (per host: steps, scope, breakdown parts,
launches, phases; the merged tables, see `context.Context`) and fires only past the threshold of its
cost that its module docstring states, with the numbers that triggered it and that cost
(`cost_ns` per step, `cost_share`; the answer lists findings by cost, notes last). Its wording proposes one hypothesis and a
controlled next check: it never promises a speed-up. A clean capture raises none.
"""

from __future__ import annotations

from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules import (
    dominant_op,
    host_wait,
    input_bound,
    launch_bound,
    not_observed,
    recompile,
    repeated_copy,
    straggler,
    sync_stall,
)
from profscope.tools.overview.rules.context import Context

RULES: tuple[Rule[Context, OverviewFinding], ...] = (
    not_observed.RULE,
    input_bound.RULE,
    host_wait.RULE,
    sync_stall.RULE,
    launch_bound.RULE,
    repeated_copy.RULE,
    recompile.RULE,
    dominant_op.RULE,
    straggler.RULE,
)
