"""A merged timeline shown before every host is ingested: the hosts whose entries exist, and the
others listed with their progress.

A session of many hosts ingested on a cluster completes host by host; the trace view shows each
host as soon as its entry exists instead of waiting for the last one. The partial timeline is an
ordinary `Timeline` of the ready hosts (so host indices, track ids and event ids change when
another host arrives: the view reloads then) whose `trace/meta` also names the pending hosts.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from profscope.engine.answers import PendingHost, TraceMeta
from profscope.engine.timeline import HostTrace, Timeline


class PartialTimeline(Timeline):
    """The ready hosts of a subject on one timeline; `pending` are the others, with the progress
    of their ingest (refreshed by the service while they run)."""

    def __init__(self, hosts: Sequence[HostTrace], subject: str, pending: Sequence[PendingHost]) -> None:
        super().__init__(hosts, subject)
        self.pending = list(pending)

    def meta(self) -> TraceMeta:
        return msgspec.structs.replace(super().meta(), pending_hosts=list(self.pending))


def is_partial(timeline: Timeline) -> bool:
    """Whether hosts of the subject are missing from `timeline` (still being ingested)."""
    return isinstance(timeline, PartialTimeline) and bool(timeline.pending)
