"""The shapes of the multi-rank answer (`analysis.collectives`): who waited for whom in each
collective and each step, and each collective's bandwidth. Times are ns on the session timeline;
per-rank lists follow `OverviewRanks.hosts`. Definitions and formulas: docs/OVERVIEW.md "Ranks".
"""

from __future__ import annotations

from typing import Literal

from profscope.answers import UNSET, Answer, UnsetType


class OverviewRankCollective(Answer, kw_only=True):
    """One collective instance matched on every rank of its group (`index`: its place by first
    arrival among the matched instances): `arrival_ns` (start of each
    rank's collective op), `wait_ns` (last arrival − own arrival, at most the rank's time in the
    collective), the `last` arriver, `transfer_ns` (last arrival → last rank done) and, when the
    message size is known, algorithm and bus bandwidth in bytes/s (nccl-tests conventions).
    `matched_by` says how the ranks' records were paired (sequence number, order, XLA run id)."""

    index: int
    name: str
    kind: str
    group: str
    matched_by: str
    step: int | UnsetType = UNSET
    ranks: int
    arrival_ns: list[float | None]
    wait_ns: list[float | None]
    last: str
    transfer_ns: float
    bytes: float | UnsetType = UNSET
    algbw: float | UnsetType = UNSET
    busbw: float | UnsetType = UNSET
    start_ns: float
    end_ns: float


class OverviewRankStep(Answer, kw_only=True):
    """One step number seen on several ranks: each rank's summed wait in the step's collectives
    (`wait_ns`, None where the rank has no such step), the `straggler` (the rank the others waited
    for most, `waited_for_ns` = their summed wait for it) and what it was `doing` meanwhile: its
    phase, else its innermost host op (`doing_source`). `start_ns`..`end_ns` spans the step on
    every rank."""

    step: int
    steady: bool
    collectives: int
    wait_ns: list[float | None]
    straggler: str | UnsetType = UNSET
    waited_for_ns: float
    doing: str | UnsetType = UNSET
    doing_source: Literal["phase", "op"] | UnsetType = UNSET
    start_ns: float
    end_ns: float


class OverviewRanks(Answer, kw_only=True):
    """The ranks of a merged session compared through their collectives: per step (`steps`) and
    per collective instance (`collectives`, the first `COLLECTIVE_LIMIT` by arrival;
    `collectives_total` matched in all). `records` names what the traces hold; `unmatched` says
    which instances could not be paired across ranks, and why (absent when all were)."""

    hosts: list[str]
    records: str
    steps: list[OverviewRankStep]
    collectives: list[OverviewRankCollective]
    collectives_total: int
    unmatched: str | UnsetType = UNSET
