"""The findings of the XLA view, one rule per module (`RULE = Rule(id, check)`, `analysis.findings`):
each a diagnosis with its evidence, the code location and the fix to try, from whatever logs were
captured.

`RULES` is the order the rules run in; `find` keeps that order within a severity (high, medium,
info) and resolves the bare file names of IR locations to the full paths the logs show.
"""

from __future__ import annotations

from profscope.analysis import findings
from profscope.analysis.findings import Rule
from profscope.formats.xla.metrics import Report
from profscope.tools.xla.answers import XlaFinding
from profscope.tools.xla.rules import (
    compile_share,
    cpu_fallback,
    dynamic_shapes,
    growing_graphs,
    long_compiles,
    recompile,
    transfers,
    unexpected_executions,
)
from profscope.tools.xla.rules.context import Context
from profscope.tools.xla.rules.locations import resolve_full_paths
from profscope.tools.xla.series import Series
from profscope.xla_logs import Loaded

RULES: tuple[Rule[Context, XlaFinding], ...] = (
    recompile.RULE,
    cpu_fallback.RULE,
    transfers.RULE,
    long_compiles.RULE,
    dynamic_shapes.RULE,
    growing_graphs.RULE,
    unexpected_executions.RULE,
    compile_share.RULE,
)
_SEVERITY_ORDER = {"high": 0, "medium": 1, "info": 2}


def find(loaded: Loaded, snapshot: Report | None, series: Series | None) -> list[XlaFinding]:
    """All findings that apply, most severe first."""
    ctx = Context(loaded, snapshot, series)
    found = findings.run(RULES, ctx)
    found.sort(key=lambda f: _SEVERITY_ORDER[f.severity])
    resolve_full_paths(found, ctx)
    return found
