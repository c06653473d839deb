"""The finding rules (`tools.xla.rules`, one per module, run in `RULES` order) and the declared
answers of the xla routes: every answer the real run gives decodes back into its Struct unchanged."""

from __future__ import annotations

import importlib
import pkgutil

import msgspec
import pytest

from profscope import answers
from profscope.analysis.findings import Rule
from profscope.formats.xla.debug import ProfilerMessage
from profscope.tools import xla
from profscope.tools.xla import report as xla_report
from profscope.tools.xla import rules
from profscope.tools.xla.answers import XlaDiff, XlaGraph, XlaGraphList, XlaReport
from profscope.tools.xla.rules.context import Context
from profscope.tools.xla.rules.evidence import Verdict
from profscope.tools.xla.series import series_of
from profscope.xla_logs import Loaded, XlaFile, load
from tests.support import DATA_DIR

RUN = DATA_DIR / "xla" / "pytorch_xla_cpu_recompile"
FILES = [
    XlaFile(str(RUN / "xla_metrics_report.txt"), "xla_metrics", path="xla_metrics_report.txt"),
    XlaFile(str(RUN / "xla_metrics_per_step.txt"), "xla_metrics", path="xla_metrics_per_step.txt"),
    XlaFile(str(RUN / "pt_xla_debug.txt"), "xla_debug", path="pt_xla_debug.txt"),
    XlaFile(str(RUN / "xla_graphs.txt.0"), "xla_graphs", path="xla_graphs.txt.0"),
]
SHARED_MODULES = {"context", "evidence", "locations"}


def test_every_rule_module_is_in_rules_once() -> None:
    modules = {m.name for m in pkgutil.iter_modules(rules.__path__)} - SHARED_MODULES
    declared = [importlib.import_module(f"{rules.__name__}.{name}").RULE for name in sorted(modules)]
    assert all(isinstance(rule, Rule) for rule in declared)
    assert sorted(r.id for r in rules.RULES) == sorted(r.id for r in declared)
    assert len({r.id for r in rules.RULES}) == len(rules.RULES) == 8


@pytest.mark.parametrize("files", [FILES, FILES[:1], FILES[1:2], FILES[2:3], FILES[3:]])
def test_each_rule_answers_with_its_own_id_or_nothing(files: list[XlaFile]) -> None:
    loaded = load(files)
    chosen = xla_report.choose_snapshot(loaded.metrics)
    series = series_of([parsed for _, parsed in loaded.metrics])
    ctx = Context(loaded, chosen[1] if chosen else None, series)
    found = {rule.id: rule.check(ctx) for rule in rules.RULES}
    assert all(len(raised) <= 1 and all(f.id == rule_id for f in raised) for rule_id, raised in found.items())
    assert any(found.values())


def test_findings_are_ordered_by_severity_then_rule() -> None:
    report = xla_report.build_report(FILES)
    order = [r.id for r in rules.RULES]
    by_severity: dict[str, list[int]] = {}
    for f in report.findings:
        by_severity.setdefault(f.severity, []).append(order.index(f.id))
    assert all(positions == sorted(positions) for positions in by_severity.values())
    assert [f.severity for f in report.findings] == sorted(
        (f.severity for f in report.findings), key=["high", "medium", "info"].index
    )


def test_no_logs_no_findings() -> None:
    empty = Loaded([], [], [], [], [None], None)
    assert rules.find(empty, None, None) == []


def test_profiler_messages_decide_only_when_the_metrics_did_not() -> None:
    messages = [ProfilerMessage(1, "too_frequent", "CompileTime too frequent: 21 counts during 11 steps")]
    undecided = Verdict()
    undecided.add_profiler_messages(messages, decisive=True)
    assert undecided.severity == "high" and undecided.summary.startswith("PyTorch/XLA's debug tool reports:")
    decided = Verdict()
    decided.conclude("medium", "from the series")
    decided.add_profiler_messages(messages, decisive=True)
    assert (decided.severity, decided.summary) == ("medium", "from the series")
    assert [e.label for e in decided.evidence] == ["pt-xla-profiler"]
    listed_only = Verdict()
    listed_only.add_profiler_messages(messages, decisive=False)
    assert listed_only.severity is None and len(listed_only.evidence) == 1


def test_the_tool_lists_its_answers() -> None:
    assert set(xla.TOOL.answers) == {XlaReport, XlaGraphList, XlaGraph, XlaDiff}
    msgspec.json.schema_components(xla.TOOL.answers)  # every field has a JSON schema


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (lambda: xla_report.build_report(FILES), XlaReport),
        (lambda: xla_report.graphs(FILES), XlaGraphList),
        (lambda: xla_report.graph(FILES, 11), XlaGraph),
        (lambda: xla_report.diff(FILES, 10, 11), XlaDiff),
        (lambda: xla_report.diff(FILES, 0, 15), XlaDiff),
    ],
)
def test_answers_decode_into_their_declared_shape(answer, kind: type) -> None:  # type: ignore[no-untyped-def]
    built = answer()
    assert isinstance(built, kind)
    encoded = answers.encode(built)
    assert answers.encode(msgspec.json.decode(encoded, type=kind)) == encoded  # no key undeclared or lost
