"""Versioned schemas and deterministic migrations."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from decide_helpers import needs_loads, response, text
from decisions import FinalDecision, SchemaError, SchemaRef, SchemaRegistry, decide, tool_name_args_to_calls

V1 = {
    "type": "object",
    "properties": {"tool_name": {"type": "string"}, "args": {}, "call_id": {}, "final_answer": {}},
    "additionalProperties": False,
}
V2 = {
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "kind": {"const": "tool"},
                "calls": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "call_id": {"type": "string"},
                            "name": {"type": "string"},
                            "arguments": {"type": "object"},
                        },
                        "required": ["name", "arguments"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["kind", "calls"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"kind": {"const": "final"}, "answer": {"type": "string"}},
            "required": ["kind", "answer"],
            "additionalProperties": False,
        },
    ]
}
V21 = copy.deepcopy(V2)
V21["oneOf"][1]["properties"]["answer"]["minLength"] = 1


@pytest.fixture
def registry() -> SchemaRegistry:
    reg = SchemaRegistry()
    reg.register("agent.decision@1.0.0", V1)
    reg.register("agent.decision@2.0.0", V2)
    reg.register("agent.decision@2.1.0", V21)
    reg.add_adapter("agent.decision@1.0.0", "agent.decision@2.0.0", tool_name_args_to_calls)
    reg.add_adapter("agent.decision@2.0.0", "agent.decision@2.1.0", copy.deepcopy)
    return reg


def test_refs() -> None:
    ref = SchemaRef.parse("agent.decision@2.1.0")
    assert (ref.id, ref.version, str(ref)) == ("agent.decision", (2, 1, 0), "agent.decision@2.1.0")
    assert SchemaRef.parse("a@2.10.0") > SchemaRef.parse("a@2.9.0")
    for bad in ("agent.decision", "agent@2.1", "agent@02.1.0", "@1.0.0", "agent@1.0.0-beta"):
        with pytest.raises(ValueError):
            SchemaRef.parse(bad)


def test_lookup(registry: SchemaRegistry) -> None:
    assert registry.get("agent.decision@2.1.0").schema_id == "agent.decision@2.1.0"
    assert registry.versions("agent.decision") == (
        "agent.decision@1.0.0",
        "agent.decision@2.0.0",
        "agent.decision@2.1.0",
    )
    assert registry.latest("agent.decision").schema_id == "agent.decision@2.1.0"
    for missing in ("agent.decision@3.0.0", "other@1.0.0", "garbage"):
        with pytest.raises(SchemaError) as info:
            registry.get(missing)
        assert info.value.code == "UNKNOWN_SCHEMA_VERSION"
    with pytest.raises(SchemaError):
        registry.latest("other")
    with pytest.raises(ValueError):
        registry.register("agent.decision@2.1.0", V2)


@needs_loads
def test_a_replay_is_judged_by_the_schema_of_its_time(registry: SchemaRegistry) -> None:
    old_answer = response(text('{"kind": "final", "answer": ""}'), finish="stop")
    decision = decide(old_answer, output=registry.get("agent.decision@2.0.0"))
    assert isinstance(decision, FinalDecision) and decision.schema_id == "agent.decision@2.0.0"
    with pytest.raises(SchemaError) as info:
        decide(old_answer, output=registry.get("agent.decision@2.1.0"))
    assert info.value.issues[0]["path"] == "$.answer"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            {"tool_name": "search", "args": {"q": "x"}},
            {"kind": "tool", "calls": [{"name": "search", "arguments": {"q": "x"}}]},
        ),
        (
            {"tool_name": "search", "args": {}, "call_id": "c1"},
            {"kind": "tool", "calls": [{"call_id": "c1", "name": "search", "arguments": {}}]},
        ),
        ({"final_answer": "done"}, {"kind": "final", "answer": "done"}),
    ],
)
def test_the_adapter_is_deterministic_and_pure(old: dict[str, Any], new: dict[str, Any]) -> None:
    frozen = copy.deepcopy(old)
    first, second = tool_name_args_to_calls(old), tool_name_args_to_calls(old)
    assert first == second == new
    assert old == frozen
    if "args" in old:
        first["calls"][0]["arguments"]["added"] = 1
        assert old == frozen  # no shared structure


@pytest.mark.parametrize(
    ("old", "path"),
    [
        ({"tool_name": "search", "args": {}, "final_answer": "x"}, "$.final_answer"),
        ({"tool_name": "search"}, "$.args"),
        ({"args": {}}, "$.tool_name"),
        ({"tool_name": "search", "args": "q=x"}, "$.args"),
        ({"tool_name": "search", "args": None}, "$.args"),
        ({"tool_name": "", "args": {}}, "$.tool_name"),
        ({"tool_name": 3, "args": {}}, "$.tool_name"),
        ({"tool_name": "s", "args": {}, "call_id": 7}, "$.call_id"),
        ({"kind": "tool", "calls": []}, "$.calls"),
        ({}, "$.tool_name"),
        ([{"tool_name": "s", "args": {}}], "$"),
    ],
)
def test_anything_needing_a_guess_is_ambiguous(old: Any, path: str) -> None:
    with pytest.raises(SchemaError) as info:
        tool_name_args_to_calls(old)
    assert (info.value.code, info.value.path) == ("AMBIGUOUS_MIGRATION", path)


def test_migrate_along_the_chain(registry: SchemaRegistry) -> None:
    old = {"tool_name": "search", "args": {"q": "x"}}
    assert registry.migrate(old, "agent.decision@1.0.0", "agent.decision@2.1.0") == tool_name_args_to_calls(old)
    with pytest.raises(SchemaError) as info:  # valid under 2.0.0, not under 2.1.0
        registry.migrate({"final_answer": ""}, "agent.decision@1.0.0", "agent.decision@2.1.0")
    assert info.value.code == "SCHEMA_MISMATCH"
    with pytest.raises(SchemaError) as info:
        registry.migrate({"bogus": 1}, "agent.decision@1.0.0", "agent.decision@2.0.0")
    assert info.value.code == "SCHEMA_MISMATCH"  # not even a v1 value


def test_no_chain_is_ambiguous(registry: SchemaRegistry) -> None:
    registry.register("agent.decision@3.0.0", V21)
    with pytest.raises(SchemaError) as info:
        registry.migrate({"final_answer": "x"}, "agent.decision@1.0.0", "agent.decision@3.0.0")
    assert info.value.code == "AMBIGUOUS_MIGRATION"


def test_adapters_go_forward_once(registry: SchemaRegistry) -> None:
    with pytest.raises(ValueError):
        registry.add_adapter("agent.decision@2.1.0", "agent.decision@2.0.0", copy.deepcopy)
    with pytest.raises(ValueError):
        registry.add_adapter("agent.decision@1.0.0", "agent.decision@2.1.0", copy.deepcopy)
    registry.register("other@2.0.0", V2)
    with pytest.raises(ValueError):
        registry.add_adapter("agent.decision@2.1.0", "other@2.0.0", copy.deepcopy)


def test_an_adapter_that_raises_is_a_typed_refusal() -> None:
    reg = SchemaRegistry()
    reg.register("a@1.0.0", {"type": "object"})
    reg.register("a@2.0.0", {"type": "object"})
    reg.add_adapter("a@1.0.0", "a@2.0.0", lambda value: value["missing"])
    with pytest.raises(SchemaError) as info:
        reg.migrate({}, "a@1.0.0", "a@2.0.0")
    assert info.value.code == "AMBIGUOUS_MIGRATION" and "KeyError" in info.value.message
