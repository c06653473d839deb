"""Memory: what the allocator held over the capture, its peak, and who allocated it (`memory` route).

Applies to every host with a trace file; a trace recorded without `profile_memory=True` answers
"memory not observed". `analysis.memory_records` reads the Kineto `[memory]` events per device,
`analysis.memory_xplane_records` TensorFlow's `MemoryAllocation` / `MemoryDeallocation` events per
allocator, `analysis.memory_pairing` pairs allocations with frees by address (shared with Compare), `series` bounds the curves for the chart, `analysis` computes
each device's figures (peak with its step and op, live blocks at the peak, never-freed blocks, ops),
`allocator_stats` an XPlane allocator's own figures (capacity, fragmentation, lifetime peak),
`program` the compiler's view of an XLA program (its buffer assignment), `program_events` the trace
events that run its instructions (the links to their HLO graph), `routes` caches the answer.
Definitions and formulas: docs/MEMORY.md.
"""

from __future__ import annotations

from profscope.formats import registry
from profscope.logdir import Host
from profscope.tools import Tool
from profscope.tools.memory import routes
from profscope.tools.memory.answers import MemoryAnswer


def applies(host: Host) -> bool:
    return bool(host.files_of(*registry.TRACE_FORMATS))


TOOL = Tool(id="memory", order=5, applies=applies, routes=routes.ROUTES, answers=(MemoryAnswer,))
