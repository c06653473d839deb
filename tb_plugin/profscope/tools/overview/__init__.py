"""Overview: step times and where they go, warm-up apart from steady state, op and kernel tables,
and findings (`overview` route).

Applies to every host with a readable file. One analysis per module over the host's trace
columns: `events` (what each event is), `steps` (markers, warm-up split), `breakdown` (the
priority sweep of wall time), `device_idle`, `launch_delay`, `op_tables`, `findings/` (one rule per
module); `analysis` puts them together, `routes` caches. Definitions, priorities and thresholds:
docs/OVERVIEW.md.
"""

from __future__ import annotations

from profscope.logdir import Host
from profscope.tools import Tool
from profscope.tools.overview import routes
from profscope.tools.overview.answers import OverviewAnswer


def applies(host: Host) -> bool:
    return any(f.usable for f in host.files)


TOOL = Tool(id="overview", order=0, applies=applies, routes=routes.ROUTES, answers=(OverviewAnswer,))
