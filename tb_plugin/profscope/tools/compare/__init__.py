"""Compare: a run against its base, step time with its spread, breakdown and op deltas, and the
cautions that say when the two do not compare like with like (`compare` route).

Applies to every host with a trace. Each side is analysed by the shared analysis the overview
uses (`profscope.analysis`, in `sides`); `shift` gives the step-time difference as a Hodges–Lehmann estimate with its
distribution-free interval (never one number without its spread), `deltas` the breakdown and op
differences per step, `memory_deltas` each allocator's peak on both sides (`analysis.memory_peaks`),
`cautions` the warnings in words, `analysis` puts them together with the
method's advice (confirm outside the profiler, with more steps), `routes` resolves the base and
caches. Formulas, the estimator and the cautions: docs/COMPARE.md.
"""

from __future__ import annotations

from profscope.formats import registry
from profscope.logdir import Host
from profscope.tools import Tool
from profscope.tools.compare import routes
from profscope.tools.compare.answers import CompareAnswer


def applies(host: Host) -> bool:
    return bool(host.files_of(*registry.TRACE_FORMATS))


TOOL = Tool(id="compare", order=4, applies=applies, routes=routes.ROUTES, answers=(CompareAnswer,))
