"""XLA: diagnosis of PyTorch/XLA and X10 runtime logs (metrics, debug output, graph dumps)."""

from __future__ import annotations

from profscope.formats import registry
from profscope.logdir import Host
from profscope.tools import Tool
from profscope.tools.xla import answers, routes, rules


def applies(host: Host) -> bool:
    return bool(host.files_of(*registry.XLA_LOG_FORMATS))


TOOL = Tool(
    id="xla", order=3, applies=applies, routes=routes.ROUTES, answers=answers.ANSWERS, rules=rules.RULES
)
