"""The `compare` route: the two subjects, their traces, and the answer cache.

The run is the request's `run`/`session`/`host`; the base is named by `base_run`, `base_session`
and `base_host`, resolved by the plugin's own rules (`HostContext.other`). One host per side. Both
traces are asked for before answering 202, so they are read at the same time; the 202 carries the
progress of every file still being read. `step_name` names the run's step annotation and
`base_step_name` the base's (default: the run's). Answers are cached per (both traces, both step
names) in the tools' single-flight LRU.
"""

from __future__ import annotations

from tensorboard import errors

from profscope.context import HostContext, StillIngesting
from profscope.engine.answers import Ingesting
from profscope.engine.timeline import Timeline
from profscope.params import Params
from profscope.tools import Handler
from profscope.tools.compare import analysis, sides
from profscope.tools.compare.answers import CompareAnswer

ANSWERS_CACHED = 32
BASE_PREFIX = "base_"


def _one_host(ctx: HostContext, parameter: str) -> None:
    if len(ctx.hosts) != 1:
        names = ", ".join(h.name for h in ctx.hosts)
        raise errors.InvalidArgumentError(
            f"query parameter {parameter!r} names {len(ctx.hosts)} hosts ({names}): compare takes one host per side"
        )


def _merged(waiting: list[Ingesting]) -> Ingesting:
    return Ingesting(
        bytes_done=sum(w.bytes_done for w in waiting),
        bytes_total=sum(w.bytes_total for w in waiting),
        stage=waiting[0].stage,
        files=[f for w in waiting for f in w.files],
    )


def timelines(run: HostContext, base: HostContext) -> tuple[Timeline, Timeline]:
    """Both sides' timelines; while either is ingested, `StillIngesting` with the progress of both."""
    opened: list[Timeline] = []
    waiting: list[Ingesting] = []
    for ctx in (run, base):
        try:
            opened.append(ctx.timeline())
        except StillIngesting as still:
            waiting.append(still.progress)
    if waiting:
        raise StillIngesting(_merged(waiting))
    return opened[0], opened[1]


def compare(ctx: HostContext, params: Params) -> CompareAnswer:
    """`compare?run=&session=&host=&base_run=&base_session=&base_host=[&step_name=][&base_step_name=]`."""
    base = ctx.other(params, BASE_PREFIX)
    _one_host(ctx, "host")
    _one_host(base, f"{BASE_PREFIX}host")
    step_name = params.text("step_name")
    base_step_name = params.text(f"{BASE_PREFIX}step_name", step_name)
    run_timeline, base_timeline = timelines(ctx, base)
    key = (run_timeline.key, step_name, base_timeline.key, base_step_name)

    def build() -> CompareAnswer:
        return analysis.answer(
            sides.analyse(base, base_timeline, base_step_name), sides.analyse(ctx, run_timeline, step_name)
        )

    return ctx.cache("compare", ANSWERS_CACHED).get(key, build)


ROUTES: dict[str, Handler] = {"/compare": compare}
