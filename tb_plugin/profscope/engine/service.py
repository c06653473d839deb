"""The trace engine's shared state in the server: open a session timeline (or report ingest
progress) and encode tiles, with TensorBoard errors that name the subject.

The server process keeps bounded caches only: opened entries (memory-mapped, see `ingest.manager`),
assembled timelines, and encoded tiles by size. When the cache directory cannot be written and
the engine fell back to a temporary one, every timeline's warnings say so (the view shows them).
Tiles are immutable for a given set of cache entries, so they carry an ETag derived from the
entries' fingerprints and write ids (`store` `entry_id`) and a long max-age. An entry found damaged
(`store.discarded`) takes its timelines and their tiles with it: the next request waits for its
rebuild, whose new id gives new keys to tiles, ETags and the plugin's analysis caches. A caller
that can show a merged timeline before all its hosts are ingested (`open(partial=True)`) gets the
hosts that are ready as a `PartialTimeline` naming the others (`progressive`).
"""

from __future__ import annotations

import collections
import dataclasses
import gzip
import threading
import time
from collections.abc import Sequence
from typing import Any

from tensorboard import errors

from profscope.engine import store
from profscope.engine.answers import Ingesting, IngestingFile, PendingHost
from profscope.engine.ingest import manager as ingest
from profscope.engine.lod import tiles
from profscope.engine.progressive import PartialTimeline, is_partial
from profscope.engine.timeline import HostTrace, Timeline
from profscope.errors import UnreadableProfile

# Seconds a resolved timeline is reused before its sources are looked at again.
RECHECK_S = 5.0
# The same for a partial timeline: a host that arrives is shown within this.
PARTIAL_RECHECK_S = 0.5


@dataclasses.dataclass(frozen=True)
class HostSource:
    """One host of the subject and the trace file it is read from."""

    name: str
    source: ingest.SourceFile
    label: str  # what messages show for the file (its path relative to the logdir)


class TraceService:
    """Shared state of the trace routes: ingest manager, timelines and encoded tiles (bounded)."""

    def __init__(
        self,
        cache_root: str | None = None,
        max_timelines: int = 8,
        tile_cache_bytes: int = 128 << 20,
        manager: ingest.IngestManager | None = None,
        runner: ingest.IngestRunner | None = None,
        memory_mb: int | None = None,
    ) -> None:
        self.manager = manager or ingest.IngestManager(cache_root, runner=runner, memory_mb=memory_mb)
        self._lock = threading.Lock()
        # subject's sources → (timeline, when resolved, the entry ids it was made of)
        self._timelines: collections.OrderedDict[tuple[Any, ...], tuple[Timeline, float, tuple[str, ...]]] = (
            collections.OrderedDict()
        )
        self._max_timelines = max_timelines
        self._tiles: collections.OrderedDict[tuple[str, int, int], tuple[bytes, str]] = (
            collections.OrderedDict()
        )
        self._tile_bytes = 0
        self._tile_cache_bytes = tile_cache_bytes

    def open(
        self, subject: str, hosts: Sequence[HostSource], wait_s: float = 0.0, partial: bool = False
    ) -> Timeline | Ingesting:
        """The timeline of `hosts` merged, or the ingest progress while any is still being read.

        `subject` names the run/session in error messages; `wait_s` bounds how long a request
        waits for running ingests before answering with progress. With `partial`, once one host
        is ready the answer is the timeline of the ready ones (`PartialTimeline`, the others
        pending with their progress) instead of the progress.
        """
        if not hosts:
            raise errors.NotFoundError(f"{subject}: no trace file to show")
        wanted = tuple(
            (h.name, h.source.url, h.source.format, h.source.size, h.source.version) for h in hosts
        )
        now = time.monotonic()
        with self._lock:
            cached = self._intact(wanted)
            recheck_s = PARTIAL_RECHECK_S if cached is not None and is_partial(cached[0]) else RECHECK_S
            usable = cached is not None and (partial or not is_partial(cached[0]))
            if cached is not None and usable and now - cached[1] < recheck_s:
                self._timelines.move_to_end(wanted)
                return cached[0]
        opened, pending = [], []
        deadline = now + wait_s
        for h in hosts:
            try:
                got = self.manager.ensure(h.source, wait_s=max(0.0, deadline - time.monotonic()))
                if isinstance(got, ingest.OpenedTrace) and store.discarded(got.entry_id):
                    got = self.manager.ensure(h.source)  # found damaged meanwhile: forgotten now
            except ingest.IngestError as e:
                raise errors.InvalidArgumentError(f"{subject}: cannot show {h.label}: {e}") from e
            (opened if isinstance(got, ingest.OpenedTrace) else pending).append((h, got))
        if pending and not (partial and opened):
            files = [
                IngestingFile(path=h.label, bytes_done=p.bytes_done, bytes_total=p.bytes_total, stage=p.stage)
                for h, p in pending
            ]
            return Ingesting(
                bytes_done=sum(f.bytes_done for f in files),
                bytes_total=sum(f.bytes_total for f in files),
                stage=pending[0][1].stage,
                files=files,
            )
        with self._lock:
            cached = self._intact(wanted)
            keys = [f"{o.key}.{o.entry_id}" for _, o in opened]
            waiting = [
                PendingHost(
                    name=h.name,
                    path=h.label,
                    bytes_done=p.bytes_done,
                    bytes_total=p.bytes_total,
                    stage=p.stage,
                )
                for h, p in pending
            ]
            same_kind = cached is not None and is_partial(cached[0]) == bool(waiting)
            if cached is not None and same_kind and [h.key for h in cached[0].hosts] == keys:
                timeline = cached[0]
                if isinstance(timeline, PartialTimeline):
                    timeline.pending = waiting
            else:
                ready = [
                    HostTrace(h.name, o.trace, o.index, k, o.searcher) for (h, o), k in zip(opened, keys)
                ]
                timeline = PartialTimeline(ready, subject, waiting) if waiting else Timeline(ready, subject)
                if self.manager.cache_warning is not None:
                    timeline.warnings.append(self.manager.cache_warning)
            self._timelines[wanted] = (timeline, now, tuple(o.entry_id for _, o in opened))
            self._timelines.move_to_end(wanted)
            while len(self._timelines) > self._max_timelines:
                self._timelines.popitem(last=False)
        return timeline

    def _intact(self, wanted: tuple[Any, ...]) -> tuple[Timeline, float, tuple[str, ...]] | None:
        """The timeline kept for `wanted`, unless one of its entries was found damaged since: then
        it is forgotten with its tiles (under `_lock`)."""
        cached = self._timelines.get(wanted)
        if cached is None or not any(store.discarded(entry_id) for entry_id in cached[2]):
            return cached
        del self._timelines[wanted]
        stale = cached[0].key
        for key in [key for key in self._tiles if key[0] == stale]:
            self._tile_bytes -= len(self._tiles.pop(key)[0])
        return None

    def tile(self, timeline: Timeline, level: int, index: int) -> tuple[bytes, str]:
        """Gzip-compressed encoded tile and its ETag, from the tile cache when asked before.

        Typed arrays of nearby times compress several-fold; compressing once here (fast level)
        beats sending the raw bytes on every request.
        """
        key = (timeline.key, level, index)
        with self._lock:
            hit = self._tiles.get(key)
            if hit is not None:
                self._tiles.move_to_end(key)
                return hit
        try:
            data = gzip.compress(tiles.encode(timeline.tile(level, index)), compresslevel=1, mtime=0)
        except ValueError as e:
            raise errors.InvalidArgumentError(f"{timeline.subject}: {e}") from e
        answer = (data, timeline.tile_etag(level, index))
        with self._lock:
            if key not in self._tiles:
                self._tiles[key] = answer
                self._tile_bytes += len(data)
            while self._tile_bytes > self._tile_cache_bytes and self._tiles:
                _, (old, _) = self._tiles.popitem(last=False)
                self._tile_bytes -= len(old)
        return answer


def host_sources(hosts: Sequence[Any], fs: Any) -> list[HostSource]:
    """The trace file of each discovered host (`logdir.Host`), as ingest sources on `fs`."""
    out = []
    for host in hosts:
        f = host.trace_file
        if f is None:
            broken = [b for b in host.files if b.error]
            if broken:  # what discovery could not read is as unreadable as what a reader cannot
                others = "".join(f"; {b.path}: {b.error}" for b in broken[1:])
                raise UnreadableProfile(broken[0].path, f"{broken[0].error}{others}")
            raise errors.NotFoundError(f"host {host.name!r} has no trace file (XPlane or Chrome trace)")
        version = f.etag if f.etag is not None else (None if f.mtime is None else repr(f.mtime))
        source = ingest.SourceFile(f.fs_path, f.format, fs, size=f.size, version=version)
        out.append(HostSource(host.name, source, f.path))
    return out
