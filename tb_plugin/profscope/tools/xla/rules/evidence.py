"""How the rules write their evidence: counts with their noun, per-step counts, and the verdict a
rule builds up from the metrics and from PyTorch/XLA's own `pt-xla-profiler` messages."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from profscope.formats.xla.debug import ProfilerMessage
from profscope.tools.xla.answers import Severity, XlaEvidence
from profscope.units import format_count


def plural(n: float, word: str) -> str:
    """`n word` or `n words` ("1 step", "1,024 compilations")."""
    return f"{format_count(n)} {word}" if n == 1 else f"{format_count(n)} {word}s"


def steps_text(counts: dict[int, float]) -> str:
    """`step (count)` for each step with a non-zero count, in step order: "7 (1), 8 (3)"."""
    return ", ".join(f"{step} ({format_count(n)})" for step, n in sorted(counts.items()) if n)


@dataclasses.dataclass
class Verdict:
    """What a rule has concluded so far: no `severity` yet means it found nothing."""

    severity: Severity | None = None
    summary: str = ""
    evidence: list[XlaEvidence] = dataclasses.field(default_factory=list)

    def add(self, label: str, value: str) -> None:
        self.evidence.append(XlaEvidence(label=label, value=value))

    def conclude(self, severity: Severity, summary: str) -> None:
        self.severity, self.summary = severity, summary

    def add_profiler_messages(self, messages: Iterable[ProfilerMessage], *, decisive: bool) -> None:
        """Each `pt-xla-profiler` line as evidence; when `decisive` and the rule had no verdict yet,
        the first line is the verdict (the debug tool already judged the metrics the logs lack)."""
        for message in messages:
            self.add("pt-xla-profiler", message.text)
            if decisive and self.severity is None:
                self.conclude("high", f"PyTorch/XLA's debug tool reports: {message.text}")
