"""What a tool's route gets: one object for (run, session, hosts) that opens everything they hold.

An analysis that needs both the trace timeline and the XLA logs of a host (the overview: steps from
the trace, recompilations from the logs) asks this one object. The timeline comes through the trace
engine's cache; while a host's trace is still being ingested `timeline()` raises `StillIngesting`,
which the plugin answers with 202 and the progress, so no route repeats that branch.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from collections.abc import Callable

import fsspec

from profscope import logdir as logdir_lib
from profscope import xla_logs
from profscope.formats.hlo_proto import HloModules
from profscope.formats.xplane_hlo import AttachedProtos
from profscope.params import Params
from profscope.trace import service as trace_service
from profscope.trace.timeline import Timeline

# HLO modules kept decoded, by cache entry (fingerprint): a graph or roofline request after the
# first one finds the instructions it decoded.
_MAX_HLO_ENTRIES = 8
_hlo_lock = threading.Lock()
_hlo_modules: collections.OrderedDict[str, HloModules | None] = collections.OrderedDict()


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
        `formats.xplane_hlo`); None when its profile carries no HloProto (PyTorch traces, some
        TensorFlow XPlanes). Each HloProto is read from the cache entry when first looked up."""
        hosts = self.timeline().hosts
        if not 0 <= host < len(hosts):
            raise IndexError(f"{self.label}: no host {host} (the timeline has {len(hosts)})")
        entry = hosts[host]
        with _hlo_lock:
            if entry.key in _hlo_modules:
                _hlo_modules.move_to_end(entry.key)
                return _hlo_modules[entry.key]
        protos = AttachedProtos(entry.trace.attachments)
        modules = HloModules(protos) if protos else None
        with _hlo_lock:
            modules = _hlo_modules.setdefault(entry.key, modules)
            while len(_hlo_modules) > _MAX_HLO_ENTRIES:
                _hlo_modules.popitem(last=False)
        return modules

    def xla_files(self) -> list[xla_logs.XlaFile]:
        """The PyTorch/XLA logs of the hosts, with those of their process-ordinal family."""
        return xla_logs.host_files(self.session, self.hosts, self.fs)

    def xla_logs(self, ordinal: int | None = None) -> xla_logs.Loaded:
        """The hosts' XLA logs of one process ordinal (default: the lowest), parsed through the cache."""
        return xla_logs.load(self.xla_files(), ordinal)
