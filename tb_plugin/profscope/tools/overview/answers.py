"""The shape of the `overview` route's answer (the TypeScript types are generated from it): the
shared analysis' records (`analysis.answers`) per host, multi-rank comparisons and findings.
"""

from __future__ import annotations

from typing import Literal

from profscope.analysis.answers import OverviewCategory, OverviewHost, OverviewLink, OverviewTables
from profscope.analysis.rank_answers import OverviewRanks
from profscope.answers import UNSET, Answer, UnsetType

FindingKind = Literal[
    "input_bound",
    "host_wait",
    "repeated_copy",
    "launch_bound",
    "dominant_op",
    "sync_stall",
    "recompile",
    "not_observed",
    "straggler",
]


class OverviewEvidence(Answer):
    """One number behind a finding, with its text as the view shows it."""

    label: str
    value: float
    text: str


class OverviewFinding(Answer, kw_only=True):
    """A finding: what the profile shows (`observation`, with the `evidence` numbers), one
    `hypothesis` for it and a controlled `next_check` that would confirm or refute it (never a
    promised speed-up). `kind` is stable; `rule` states the threshold that fired; `link` leads to
    the events. `cost_ns` is the step time (or device idle time) the finding accounts for, per step
    (per capture without steps), and `cost_share` that time as a share of the wall time; findings
    are ordered by it. A note (`not_observed`, or a cost the profile cannot give) has neither."""

    kind: FindingKind
    host: str
    title: str
    observation: str
    hypothesis: str
    next_check: str
    rule: str
    evidence: list[OverviewEvidence]
    link: OverviewLink
    cost_ns: float | UnsetType = UNSET
    cost_share: float | UnsetType = UNSET


class OverviewAnswer(Answer, kw_only=True):
    """The `overview` route: per host the steps and where their time went, merged op and kernel
    tables, the ranks compared through their collectives (`ranks`, several hosts only), and findings.
    `categories` lists the breakdown's parts in priority order (their `observed` flag covers all
    hosts)."""

    subject: str
    hosts: list[str]
    step_name: str | UnsetType = UNSET
    batch_size: int | UnsetType = UNSET
    categories: list[OverviewCategory]
    per_host: list[OverviewHost]
    ranks: OverviewRanks | UnsetType = UNSET
    tables: OverviewTables
    findings: list[OverviewFinding]
    warnings: list[str]
