"""What a tool's route gets: one object for (run, session, hosts) that opens everything they hold.

An analysis that needs both the trace timeline and the XLA logs of a host (the overview: steps from
the trace, recompilations from the logs) asks this one object. The timeline comes through the trace
engine's cache; while a host's trace is still being ingested `timeline()` raises `StillIngesting`,
which the plugin answers with 202 and the progress, so no route repeats that branch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import fsspec

from profscope import logdir as logdir_lib
from profscope import xla_logs
from profscope.analysis import events
from profscope.analysis.events import HostEvents
from profscope.analysis.results import HostInput
from profscope.caches import Caches, SingleFlightCache, array_bytes
from profscope.engine import service as trace_service
from profscope.engine.timeline import HostTrace, Timeline
from profscope.formats.hlo.proto import HloModules
from profscope.formats.xplane.hlo import AttachedProtos
from profscope.params import Params

# HLO modules kept decoded, by cache entry (fingerprint): a graph or roofline request after the
# first one finds the instructions it decoded.
HLO_ENTRIES_CACHED = 8
# Classified events of host traces, by cache entry: Overview, Compare and Roofline share them.
# Bounded by the bytes of their arrays (about 50 bytes an event), so a 64-rank session's small
# hosts all stay while a few 3 M-event hosts take the whole budget.
HOST_EVENTS_CACHED = 256
HOST_EVENTS_BUDGET_BYTES = 768 << 20
# Parsed PyTorch/XLA logs, by file (`xla_logs.parse_key`).
XLA_FILES_CACHED = 32


class StillIngesting(Exception):
    """A host's trace is still being read into the cache; `progress` is what the 202 answer says."""

    def __init__(self, progress: trace_service.Ingesting) -> None:
        super().__init__("still ingesting")
        self.progress = progress


@dataclasses.dataclass(frozen=True)
class HostContext:
    """The subject of a request (a run, one session of it, one or more of its hosts) and the means
    to open what they hold. `hosts` has several entries when hosts are merged on one timeline."""

    run: logdir_lib.Run
    session: logdir_lib.Session
    hosts: list[logdir_lib.Host]
    fs: fsspec.AbstractFileSystem | None
    trace_service: Callable[[], trace_service.TraceService]
    # The plugin's subject resolution, for a route about a second subject (compare's base).
    resolve: Callable[[Params, str], HostContext] | None = None
    # The plugin's analysis caches (every context of one plugin shares them).
    caches: Caches = dataclasses.field(default_factory=Caches)

    def cache(self, name: str, size: int) -> SingleFlightCache:
        """The plugin's cache called `name` (a tool's answers, by the keys it chooses)."""
        return self.caches.named(name, size)

    @property
    def label(self) -> str:
        """How messages name the subject."""
        return f"run {self.run.name!r} session {self.session.name!r}"

    def other(self, params: Params, prefix: str) -> HostContext:
        """Another subject of the same logdir, named by the `<prefix>run`, `<prefix>session` and
        `<prefix>host` parameters (400 when one is missing, 404 naming what exists, as for this one)."""
        if self.resolve is None:
            raise RuntimeError(f"{self.label}: this context cannot resolve another subject")
        return self.resolve(params, prefix)

    def timeline(self, wait_s: float = 0.0, partial: bool = False) -> Timeline:
        """The hosts' traces on one timeline; waits up to `wait_s` for running ingests, then raises
        `StillIngesting` with their progress. With `partial` (a view that shows hosts as they
        arrive: the trace routes) the hosts already ingested come as soon as one is, the timeline
        naming the others (`progressive.PartialTimeline`); an analysis over all hosts leaves it off."""
        sources = trace_service.host_sources(self.hosts, self.fs)
        opened = self.trace_service().open(self.label, sources, wait_s, partial)
        if isinstance(opened, trace_service.Ingesting):
            raise StillIngesting(opened)
        return opened

    def hlo_modules(self, host: int = 0) -> HloModules | None:
        """The XLA programs of the `host`-th host of the timeline, by signed program id (see
        `formats.xplane.hlo`); None when its profile carries no HloProto (PyTorch traces, some
        TensorFlow XPlanes). Each HloProto is read from the cache entry when first looked up."""
        hosts = self.timeline().hosts
        if not 0 <= host < len(hosts):
            raise IndexError(f"{self.label}: no host {host} (the timeline has {len(hosts)})")
        entry = hosts[host]

        def decode() -> HloModules | None:
            protos = AttachedProtos(entry.trace.attachments)
            return HloModules(protos) if protos else None

        return self.cache("hlo_modules", HLO_ENTRIES_CACHED).get(entry.key, decode)

    def host_events(self, host: HostTrace) -> HostEvents:
        """One host's classified events (`analysis.events`), built once per trace (its cache
        fingerprint) for every tool that reads them."""
        cache = self.caches.named("host_events", HOST_EVENTS_CACHED, array_bytes, HOST_EVENTS_BUDGET_BYTES)
        return cache.get(host.key, lambda: events.build(host.name, host.trace, host.index.self_ps))

    def host_inputs(self, timeline: Timeline) -> list[HostInput]:
        """Each host of `timeline` as the shared analysis takes it: its events, its offset on the
        session's clock and its first track."""
        bases = timeline.track_base[:-1].tolist()
        return [
            HostInput(self.host_events(host), int(offset), int(base))
            for host, offset, base in zip(timeline.hosts, timeline.offsets_ps, bases)
        ]

    def xla_files(self) -> list[xla_logs.XlaFile]:
        """The PyTorch/XLA logs of the hosts, with those of their process-ordinal family."""
        return xla_logs.host_files(self.session, self.hosts, self.fs)

    def xla_logs(self, ordinal: int | None = None) -> xla_logs.Loaded:
        """The hosts' XLA logs of one process ordinal (default: the lowest), parsed through the cache."""
        return xla_logs.load(self.xla_files(), ordinal, self.cache("xla_logs", XLA_FILES_CACHED))
