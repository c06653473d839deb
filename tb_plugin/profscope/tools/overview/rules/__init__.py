"""The Overview's findings: one rule per module (`RULE = Rule(kind, check)`, `analysis.findings`),
run in `RULES` order; each `check(ctx)` returns its `OverviewFinding`s.

A rule reads the figures the analysis already computed (per host: steps, scope, breakdown parts,
launches; the merged tables, see `context.Context`) and fires only past the threshold its module
docstring states, with the numbers that triggered it. Its wording proposes one hypothesis and a
controlled next check: it never promises a speed-up. A clean capture raises none.
"""

from __future__ import annotations

from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules import (
    dominant_op,
    input_bound,
    launch_bound,
    not_observed,
    recompile,
    repeated_copy,
    sync_stall,
)
from profscope.tools.overview.rules.context import Context

RULES: tuple[Rule[Context, OverviewFinding], ...] = (
    not_observed.RULE,
    input_bound.RULE,
    sync_stall.RULE,
    launch_bound.RULE,
    repeated_copy.RULE,
    recompile.RULE,
    dominant_op.RULE,
)
