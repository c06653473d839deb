"""Trace: the streaming timeline of a host's XPlane or Chrome/Kineto trace (`trace/*` routes)."""

from __future__ import annotations

from profscope.formats import registry
from profscope.logdir import Host
from profscope.tools import Tool
from profscope.tools.trace import routes
from profscope.trace import answers


def applies(host: Host) -> bool:
    return bool(host.files_of(*registry.TRACE_FORMATS))


TOOL = Tool(
    id="trace",
    order=1,
    applies=applies,
    routes=routes.ROUTES,
    answers=(answers.TraceMeta, answers.TraceEvent, answers.TraceSearch, answers.TraceSummary),
)
