"""The one shape of every tool's findings: a rule per module, declared as `RULE = Rule(id, check)`,
run in the order of its tool's `RULES` tuple (`Tool.rules`), so a report, the CLI or an agent lists
the findings of every tool the same way.

A rule's `check` reads its tool's context and returns the findings it raises (none when it does
not apply); `id` names them, stable across versions (the Overview's finding `kind`, the XLA view's
finding `id`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

ContextT = TypeVar("ContextT")
FindingT = TypeVar("FindingT")


@dataclasses.dataclass(frozen=True)
class Rule(Generic[ContextT, FindingT]):
    """One finding rule of a tool: `check(ctx)` gives the findings named `id` that `ctx` supports."""

    id: str
    check: Callable[[ContextT], list[FindingT]]


def run(rules: Sequence[Rule[ContextT, FindingT]], ctx: ContextT) -> list[FindingT]:
    """Every rule's findings, in the order of `rules`."""
    return [finding for rule in rules for finding in rule.check(ctx)]
