"""The frontend's answer types cannot drift from the server's: the committed schema is what the
answer Structs give now, every Struct a route answers with is in it, and names cannot clash.

The frontend half (answers.gen.ts is what this schema generates) is frontend/src/api/answers.test.ts.
"""

from __future__ import annotations

import typing

import msgspec
import pytest

from profscope import answer_schema, answers, runs, tools
from profscope.engine.answers import Ingesting

SCHEMA_FILE = "frontend/src/api/answers.schema.json"


def test_committed_schema_is_what_the_structs_give(repo_root):
    committed = (repo_root / SCHEMA_FILE).read_text(encoding="utf-8")
    assert committed == answer_schema.render(), (
        f"{SCHEMA_FILE} is stale: the answer Structs changed. Regenerate it and the TypeScript types "
        f"(from the repository root): {answer_schema.REGENERATE}"
    )


def test_every_answer_of_every_route_is_in_the_schema():
    declared = set(answer_schema.answer_types())
    assert {runs.RunsAnswer, Ingesting} <= declared
    for tool in tools.all_tools():
        assert set(tool.answers) <= declared
        for path, handler in tool.routes.items():
            answer = typing.get_type_hints(handler).get("return")
            if isinstance(answer, type) and issubclass(answer, answers.Answer):
                assert answer in tool.answers, (
                    f"{tool.id} route {path} answers {answer.__name__}, not in TOOL.answers"
                )
    defs = answer_schema.schema()["$defs"]
    assert all(t.__name__ in defs for t in declared)


def test_two_structs_of_one_name_are_refused(monkeypatch):
    def struct_in(module: str) -> type:
        return msgspec.defstruct("Row", [("name", str)], bases=(answers.Answer,), module=module)

    clashing = (struct_in("profscope.tools.a.answers"), struct_in("profscope.tools.b.answers"))
    monkeypatch.setattr(answer_schema, "answer_types", lambda: clashing)
    with pytest.raises(ValueError, match="share a class name"):
        answer_schema.schema()
