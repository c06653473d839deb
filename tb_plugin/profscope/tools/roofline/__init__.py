"""Roofline: how close each program and op comes to the device's limits (`roofline` route).

Applies to traces that may hold accelerator activity: every XPlane (decided without parsing it), and
Chrome/Kineto traces unless their head lists no device (`"deviceProperties": []`). Formulas, sources
and the differences from XProf: docs/ROOFLINE.md and the module docstrings (`rows`, `xplane`,
`peaks`); the records shared with the Kineto reader: `model`.
"""

from __future__ import annotations

from profscope.formats import registry
from profscope.logdir import Host
from profscope.tools import Tool
from profscope.tools.roofline import routes
from profscope.tools.roofline.answers import RooflineAnswer


def applies(host: Host) -> bool:
    return any(f.device_data for f in host.files_of(*registry.TRACE_FORMATS))


TOOL = Tool(id="roofline", order=2, applies=applies, routes=routes.ROUTES, answers=(RooflineAnswer,))
