"""The `overview` route: parameters and the answer cache.

Per host trace (its cache fingerprint) the events are classified once (`ctx.host_events`, shared
with the other tools); per (timeline, options, XLA log files) the answer is built once, in the
plugin's single-flight LRU `ctx.cache("overview", …)` (one lock per slot: concurrent requests for
one answer compute it once, others go on). While a trace is ingested `ctx.timeline()` raises and the
plugin answers 202.
"""

from __future__ import annotations

from tensorboard import errors

from profscope.context import HostContext
from profscope.params import Params
from profscope.tools import Handler
from profscope.tools.overview import analysis
from profscope.tools.overview.answers import OverviewAnswer

ANSWERS_CACHED = 64
GROUP_BY = ("name", "shapes")


def options_of(params: Params) -> analysis.Options:
    group_by = params.text("group_by", "name")
    if group_by not in GROUP_BY:
        raise errors.InvalidArgumentError(f"query parameter 'group_by' must be one of {', '.join(GROUP_BY)}")
    batch_size = params.optional_int("batch_size")
    if batch_size == 0:
        raise errors.InvalidArgumentError("query parameter 'batch_size' must be positive")
    return analysis.Options(step_name=params.text("step_name"), batch_size=batch_size, group_by=group_by)


def overview(ctx: HostContext, params: Params) -> OverviewAnswer:
    """`overview?run=&session=&host=[&step_name=][&batch_size=][&group_by=name|shapes]`."""
    options = options_of(params)
    xla_files = ctx.xla_files()
    logs_key = tuple((f.url, f.size, f.mtime, f.etag) for f in xla_files)
    xla_logs = ctx.xla_logs if xla_files else None
    if xla_files and all(h.trace_file is None and not any(f.error for f in h.files) for h in ctx.hosts):
        # A host of PyTorch/XLA logs only: no timeline, the findings the logs support.
        names = [h.name for h in ctx.hosts]
        key = ("logs", ctx.label, tuple(names), options, logs_key)
        return ctx.cache("overview", ANSWERS_CACHED).get(
            key, lambda: analysis.answer(ctx.label, [], options, xla_logs, log_hosts=names)
        )
    timeline = ctx.timeline()
    key = (timeline.key, options, logs_key)

    def build() -> OverviewAnswer:
        return analysis.answer(
            timeline.subject,
            ctx.host_inputs(timeline),
            options,
            xla_logs=xla_logs,
            warnings=list(timeline.warnings),
        )

    return ctx.cache("overview", ANSWERS_CACHED).get(key, build)


ROUTES: dict[str, Handler] = {"/overview": overview}
