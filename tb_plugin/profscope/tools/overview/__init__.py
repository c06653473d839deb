"""Overview: step times and where they go, warm-up apart from steady state, op and kernel tables,
and findings (`overview` route).

Applies to every host with a readable file. Each host's figures come from the shared analysis
(`profscope.analysis`: `events`, `steps`, `breakdown`, `device_idle`, `launch_delay`, `op_tables`,
`host`); this tool adds the multi-host answer (`analysis`), its findings (`rules/`, one rule per
module) and the route (`routes`). Definitions, priorities and thresholds: docs/OVERVIEW.md.
"""

from __future__ import annotations

from profscope.logdir import Host
from profscope.tools import Tool
from profscope.tools.overview import routes, rules
from profscope.tools.overview.answers import OverviewAnswer


def applies(host: Host) -> bool:
    return any(f.usable for f in host.files)


TOOL = Tool(
    id="overview",
    order=0,
    applies=applies,
    routes=routes.ROUTES,
    answers=(OverviewAnswer,),
    rules=rules.RULES,
)
