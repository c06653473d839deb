"""Overview: step times and where they go (not built yet: the tab says what it will show).

Applies to every host with a readable file; it has no routes until its analyses exist.
"""

from __future__ import annotations

from profscope.logdir import Host
from profscope.tools import Tool


def applies(host: Host) -> bool:
    return any(f.usable for f in host.files)


TOOL = Tool(id="overview", order=0, applies=applies)
