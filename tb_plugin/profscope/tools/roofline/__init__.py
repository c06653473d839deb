"""Roofline: how close each program and op comes to the device's limits (not built yet: the tab says
what it will show).

Applies to traces that may hold accelerator activity: every XPlane (decided without parsing it), and
Chrome/Kineto traces unless their head lists no device (`"deviceProperties": []`).
"""

from __future__ import annotations

from profscope.formats import registry
from profscope.logdir import Host
from profscope.tools import Tool


def applies(host: Host) -> bool:
    return any(f.device_data for f in host.files_of(*registry.TRACE_FORMATS))


TOOL = Tool(id="roofline", order=2, applies=applies)
