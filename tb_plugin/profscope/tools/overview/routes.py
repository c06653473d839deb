"""The `overview` route: parameters and the answer cache.

Per host trace (its cache fingerprint) the events are classified once (`events.build`); per
(timeline, options, XLA log files) the answer is built once. The cache is the roofline route's
single-flight LRU (one lock per slot: concurrent requests for one answer compute it once, others go
on). While a trace is ingested `ctx.timeline()` raises and the plugin answers 202.
"""

from __future__ import annotations

from tensorboard import errors

from profscope.context import HostContext
from profscope.params import Params
from profscope.tools import Handler
from profscope.tools.cache import SingleFlightCache
from profscope.tools.overview import analysis, events
from profscope.tools.overview.answers import OverviewAnswer
from profscope.trace.timeline import HostTrace, Timeline

HOSTS_CACHED = 16
ANSWERS_CACHED = 64
GROUP_BY = ("name", "shapes")

_hosts = SingleFlightCache(HOSTS_CACHED)
_answers = SingleFlightCache(ANSWERS_CACHED)


def host_events(host: HostTrace) -> events.HostEvents:
    """One host's classified events, cached by its trace's fingerprint."""
    return _hosts.get(host.key, lambda: events.build(host.name, host.trace, host.index.self_ps))


def host_inputs(timeline: Timeline) -> list[analysis.HostInput]:
    return [
        analysis.HostInput(host_events(host), int(offset), int(base))
        for host, offset, base in zip(timeline.hosts, timeline.offsets_ps, timeline.track_base[:-1].tolist())
    ]


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
        return _answers.get(key, lambda: analysis.answer(ctx.label, [], options, xla_logs, log_hosts=names))
    timeline = ctx.timeline()
    key = (timeline.key, options, logs_key)

    def build() -> OverviewAnswer:
        return analysis.answer(
            timeline.subject,
            host_inputs(timeline),
            options,
            xla_logs=xla_logs,
            warnings=list(timeline.warnings),
        )

    return _answers.get(key, build)


def clear_caches() -> None:
    """Forget every cached answer (tests, benchmarks measuring a cold answer)."""
    _hosts.clear()
    _answers.clear()


ROUTES: dict[str, Handler] = {"/overview": overview}
