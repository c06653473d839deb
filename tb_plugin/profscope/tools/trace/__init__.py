"""Trace: the streaming timeline of a host's XPlane or Chrome/Kineto trace (`trace/*` routes), and
the HLO graph of its XLA ops (`hlo`)."""

from __future__ import annotations

from profscope.engine import answers
from profscope.formats import registry
from profscope.logdir import Host
from profscope.tools import Tool
from profscope.tools.trace import export, hlo, routes


def applies(host: Host) -> bool:
    return bool(host.files_of(*registry.TRACE_FORMATS))


TOOL = Tool(
    id="trace",
    order=1,
    applies=applies,
    routes=routes.ROUTES,
    answers=(
        answers.TraceMeta,
        answers.TraceEvent,
        answers.TraceSearch,
        answers.TraceSummary,
        answers.TraceCriticalPath,
        hlo.HloOp,
        hlo.NoHloModule,
        hlo.NotAnXlaOp,
        export.ExportPreview,
    ),
)
