"""The `xla/*` routes: the report (metrics, counters, series, findings) and the graph dumps.

Every route reads the XLA logs of the subject's hosts (with their process-ordinal family) for one
`ordinal` (default: the lowest present).
"""

from __future__ import annotations

from profscope.context import HostContext
from profscope.params import Params
from profscope.tools import Handler
from profscope.tools.xla import report
from profscope.tools.xla.answers import XlaDiff, XlaGraph, XlaGraphList, XlaReport


def report_route(ctx: HostContext, params: Params) -> XlaReport:
    """`xla/report[?ordinal=]`: summary cards, findings, metrics, counters and per-step series."""
    return report.build_report(ctx.xla_files(), params.optional_int("ordinal"))


def graphs(ctx: HostContext, params: Params) -> XlaGraphList:
    """`xla/graphs[?ordinal=]`: the graph list grouped by hash."""
    return report.graphs(ctx.xla_files(), params.optional_int("ordinal"))


def graph(ctx: HostContext, params: Params) -> XlaGraph:
    """`xla/graph?index=[&ordinal=]`: one graph's text and DOT."""
    index = params.int("index")
    return report.graph(ctx.xla_files(), index, params.optional_int("ordinal"))


def diff(ctx: HostContext, params: Params) -> XlaDiff:
    """`xla/diff?a=&b=[&ordinal=]`: two graphs side by side."""
    a, b = params.int("a"), params.int("b")
    return report.diff(ctx.xla_files(), a, b, params.optional_int("ordinal"))


ROUTES: dict[str, Handler] = {
    "/xla/report": report_route,
    "/xla/graphs": graphs,
    "/xla/graph": graph,
    "/xla/diff": diff,
}
