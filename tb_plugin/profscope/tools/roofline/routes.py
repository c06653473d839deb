"""The `roofline` route: parameters, the run's peak overrides, and the answer cache.

Per host trace (its cache fingerprint) the device ops are extracted once (`analysis.host_devices`,
with the host's HLO modules from `ctx.hlo_modules` and, for a Kineto trace, the host's classified
events from `ctx.host_events`, whose steps split its ops; both are cached by the context and shared
with the other tools); per (timeline, options, overrides) the answer is built once, in the plugin's
caches (`ctx.cache`). Each cache slot has its own lock, so
concurrent requests for one answer compute it once while every other request (other hosts,
other routes) goes on; while a trace is ingested `ctx.timeline()` raises and the plugin answers 202.
"""

from __future__ import annotations

import json

from tensorboard import errors

from profscope.context import HostContext
from profscope.params import Params
from profscope.tools import Handler
from profscope.tools.roofline import analysis, peaks
from profscope.tools.roofline.answers import RooflineAnswer

HOSTS_CACHED = 16
ANSWERS_CACHED = 64


def roofline(ctx: HostContext, params: Params) -> RooflineAnswer:
    """`roofline?run=&session=&host=[&infeed=0|1][&step=N]`: device peaks, program and op rows."""
    infeed = params.int("infeed", 1)
    if infeed not in (0, 1):
        raise errors.InvalidArgumentError(f"query parameter 'infeed' must be 0 or 1, got {infeed}")
    options = analysis.Options(include_infeed=bool(infeed), step=params.optional_int("step"))
    timeline = ctx.timeline()
    warnings: list[str] = []
    try:
        override = peaks.read_override(ctx.fs, run_folder(ctx))
    except peaks.OverrideError as e:
        override = None
        warnings.append(f"{e}; the profile's peaks are used")
    key = (timeline.key, options, json.dumps(override, sort_keys=True), tuple(warnings))

    def build() -> RooflineAnswer:
        hosts = [
            ctx.cache("roofline.hosts", HOSTS_CACHED).get(
                host.key,
                lambda h=host, i=i: analysis.host_devices(
                    h.name, h.trace, ctx.hlo_modules(i), lambda: ctx.host_events(h)
                ),
            )
            for i, host in enumerate(timeline.hosts)
        ]
        return analysis.answer(timeline.subject, hosts, options, override, warnings + list(timeline.warnings))

    try:
        return ctx.cache("roofline", ANSWERS_CACHED).get(key, build)
    except analysis.UnknownStep as e:
        raise errors.InvalidArgumentError(e.args[0]) from e


def run_folder(ctx: HostContext) -> str | None:
    """The run's folder on the logdir's filesystem (where `roofline.json` is looked for).

    Taken from a file's own path, by folder levels: the run name and `path` show bytes that are not
    UTF-8 escaped (`\\xff`), and `fs_path` holds them as they are."""
    run_levels = 0 if ctx.run.name == "." else ctx.run.name.count("/") + 1
    for host in ctx.hosts:
        for f in host.files:
            parts = f.fs_path.split("/")
            below_root = f.path.count("/") + 1  # `path` is relative to the logdir
            if len(parts) > below_root:
                return "/".join(parts[: len(parts) - below_root + run_levels]) or "/"
    return None


ROUTES: dict[str, Handler] = {"/roofline": roofline}
