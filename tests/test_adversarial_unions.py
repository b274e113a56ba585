"""Values nested inside a recursive union: a schema whose ``anyOf``/``oneOf``
alternatives both look inside the same value (a tree of ``file`` and ``dir``
nodes) made ``jsonschema`` list every error of every alternative at every
level, 2**depth walks: a tool call's 20-deep arguments held ``decide`` for
minutes, and so did restoring a strict-mode structured output. Both are now
linear in the value (each verdict once), and a failure is still a typed
``SCHEMA_MISMATCH`` with the place it failed where that can be told."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest
import referencing.exceptions
from jsonschema_specifications import REGISTRY as SPECIFICATIONS  # type: ignore[import-untyped]

from decisions import OutputError, Schema, Tool, ToolRegistry, build_request, decide
from decisions.types import NormalizedResponse
from decisions.validate._engines import _strict_integer, explaining, strict_validator_class

#: What none of these may take, on a machine shared with other work (the
#: exponential walk took minutes at depth 18 and doubles with each level).
BOUND_SECONDS = 5.0


def _tree(keyword: str, *, child_first: bool) -> dict[str, Any]:
    def branch(kind: str) -> dict[str, Any]:
        props: dict[str, Any] = {
            "kind": {"const": kind},
            "child": {"$ref": "#/$defs/Node"},
            "note": {"type": "string"},
        }
        if child_first:  # the child is looked at before the tag
            props = dict(reversed(list(props.items())))
        return {"type": "object", "properties": props, "required": ["kind"], "additionalProperties": False}

    return {
        "$defs": {"Node": {keyword: [branch("file"), branch("dir")]}},
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "required": ["root"],
        "additionalProperties": False,
    }


def _conditional(*, negated: bool) -> dict[str, Any]:
    """A node checked by ``if``/``then``/``else`` (or through ``not not``):
    the condition and the branch taken both look inside the child."""

    def branch(kind: str) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"child": {"$ref": "#/$defs/Node"}, "note": {"type": "string"}, "kind": {"const": kind}},
            "required": ["kind"],
        }

    node = (
        {"not": {"not": {"anyOf": [branch("file"), branch("dir")]}}}
        if negated
        else {"if": branch("file"), "then": branch("file"), "else": branch("dir")}
    )
    return {
        "$defs": {"Node": node},
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "required": ["root"],
    }


def _nested(depth: int, leaf_note: Any) -> dict[str, Any]:
    value: dict[str, Any] = {"kind": "dir", "note": leaf_note}
    for _ in range(depth):
        value = {"kind": "dir", "note": "x", "child": value}
    return {"root": value}


SCHEMAS = [
    pytest.param(keyword, child_first, id=f"{keyword}-{'child' if child_first else 'tag'}-first")
    for keyword in ("anyOf", "oneOf")
    for child_first in (False, True)
]


@pytest.mark.parametrize(("keyword", "child_first"), SCHEMAS)
@pytest.mark.parametrize("depth", [24, 60])
def test_a_deep_value_in_a_recursive_union_is_checked_in_bounded_time(
    keyword: str, child_first: bool, depth: int
) -> None:
    schema = Schema(_tree(keyword, child_first=child_first))
    started = time.monotonic()
    assert schema.validate(_nested(depth, "ok")) == _nested(depth, "ok")
    with pytest.raises(OutputError) as caught:
        schema.validate(_nested(depth, 5))
    assert time.monotonic() - started < BOUND_SECONDS
    assert caught.value.code == "SCHEMA_MISMATCH" and caught.value.issues


@pytest.mark.parametrize(("keyword", "child_first"), SCHEMAS)
def test_a_shallow_failure_in_a_recursive_union_still_names_its_place(keyword: str, child_first: bool) -> None:
    with pytest.raises(OutputError) as caught:
        Schema(_tree(keyword, child_first=child_first)).validate(_nested(3, 5))
    assert [dict(i) for i in caught.value.issues] == [
        {"path": "$.root.child.child.child.note", "code": "type", "expected": "string"}
    ]


@pytest.mark.parametrize("negated", [False, True], ids=["if-then-else", "not-not"])
def test_a_deep_value_under_a_recursive_condition_is_checked_in_bounded_time(negated: bool) -> None:
    """``if`` asked ``is_valid`` of its condition and then walked the branch
    it chose, both into the child: 2**depth again."""
    schema = Schema(_conditional(negated=negated), closed=False)
    started = time.monotonic()
    assert schema.validate(_nested(40, "ok")) == _nested(40, "ok")
    with pytest.raises(OutputError) as caught:
        schema.validate(_nested(40, 5))
    assert time.monotonic() - started < BOUND_SECONDS
    assert caught.value.code == "SCHEMA_MISMATCH"
    if not negated:  # the branch taken names the place
        assert [dict(i) for i in caught.value.issues] == [
            {"path": "$.root" + ".child" * 40 + ".note", "code": "type", "expected": "string"}
        ]


def test_a_deep_value_under_a_recursive_composition_is_checked_in_bounded_time() -> None:
    """``allOf`` of two parts that both look inside the child (a node that
    is a ``named`` and a ``tree``) walked both parts for their errors at
    every level, also to say valid: 2**depth."""
    schema = Schema(
        {
            "$defs": {
                "Node": {"allOf": [{"$ref": "#/$defs/Named"}, {"$ref": "#/$defs/Tree"}]},
                "Named": {
                    "type": "object",
                    "properties": {"note": {"type": "string"}, "child": {"$ref": "#/$defs/Node"}},
                },
                "Tree": {"type": "object", "properties": {"kind": {"const": "dir"}, "child": {"$ref": "#/$defs/Node"}}},
            },
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
        },
        closed=False,
    )
    started = time.monotonic()
    assert schema.validate(_nested(40, "ok")) == _nested(40, "ok")
    with pytest.raises(OutputError) as caught:
        schema.validate(_nested(40, 5))
    assert time.monotonic() - started < BOUND_SECONDS
    assert caught.value.code == "SCHEMA_MISMATCH"
    shallow = _nested(3, 5)
    with pytest.raises(OutputError) as caught:
        schema.validate(shallow)
    # each part that looks at the note says where (jsonschema's own listing)
    assert {i["path"] for i in caught.value.issues} == {"$.root.child.child.child.note"}


def _twice_reached(how: str) -> dict[str, Any]:
    """A node whose child is reached by two paths of the schema, both through a reference."""
    look = {"properties": {"child": {"$ref": "#/$defs/Node"}, "note": {"type": "string"}}}
    nodes = {
        "ref beside properties": {"$ref": "#/$defs/Look", **look},
        "dependentSchemas": {**look, "dependentSchemas": {"child": look, "note": look}},
    }
    return {
        "$defs": {"Node": nodes[how], "Look": look},
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
    }


@pytest.mark.parametrize("how", ["ref beside properties", "dependentSchemas"])
@pytest.mark.parametrize("fast", [True, False])
def test_a_child_reached_by_two_paths_is_checked_in_bounded_time(how: str, fast: bool) -> None:
    """A child reached twice at every level (a ``$ref`` beside the
    ``properties`` it refers to, or two ``dependentSchemas``): ``jsonschema``
    walked it once per path, 2**depth, to say valid as to list a failure
    (a 20-deep value took minutes). Each reference now keeps its verdict.
    ``fast`` False checks with the reference validator alone, as for a
    schema outside the fast validator's subset."""
    schema = Schema(_twice_reached(how), closed=False)
    if not fast:
        assert schema._compiled is not None
        schema._compiled = dataclasses.replace(schema._compiled, fast=None)
    started = time.monotonic()
    assert schema.validate(_nested(60, "ok")) == _nested(60, "ok")
    with pytest.raises(OutputError) as caught:
        schema.validate(_nested(60, 5))
    assert time.monotonic() - started < BOUND_SECONDS
    assert caught.value.code == "SCHEMA_MISMATCH"
    with pytest.raises(OutputError) as caught:
        schema.validate(_nested(2, 5))  # a shallow failure: named once, where it is
    assert [dict(i) for i in caught.value.issues] == [
        {"path": "$.root.child.child.note", "code": "type", "expected": "string"}
    ]


def test_one_of_two_matching_alternatives_is_still_refused() -> None:
    schema = Schema({"oneOf": [{"type": "integer"}, {"minimum": 0}, {"type": "string"}]})
    for twice in (3, "a"):  # "a" is also at least 0: minimum looks at numbers only
        with pytest.raises(OutputError) as caught:
            schema.validate(twice)
        assert [i["code"] for i in caught.value.issues] == ["multiple_match"]
    assert schema.validate(-3) == -3
    with pytest.raises(OutputError):
        schema.validate(-1.5)


def test_tool_arguments_deep_in_a_recursive_union_are_decided_in_bounded_time(impl: ModuleType) -> None:
    """Through the whole chain: a provider body whose call holds the deep value."""
    registry = ToolRegistry([Tool(name="make_tree", parameters=_tree("anyOf", child_first=True))])
    for leaf, valid in (("ok", True), (5, False)):
        arguments = json.dumps(_nested(40, leaf))
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "make_tree", "arguments": arguments},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
        }
        response: NormalizedResponse = impl.normalize(json.dumps(body).encode(), provider="openai-chat")
        started = time.monotonic()
        if valid:
            assert decide(response, tools=registry).calls[0].arguments == _nested(40, "ok")
        else:
            with pytest.raises(OutputError) as caught:
                decide(response, tools=registry)
            assert caught.value.code == "SCHEMA_MISMATCH"
        assert time.monotonic() - started < BOUND_SECONDS


def test_restoring_a_deep_strict_output_is_linear() -> None:
    """The nulls strict mode made the model write are removed along the
    original schema; each union level asked ``jsonschema`` whether the value
    fit, which walked the tree exponentially."""
    plan = build_request("openai-chat", output=_tree("anyOf", child_first=False), strict=True)
    (record,) = [r for r in plan.records if r.kind != "tool"]
    depth = 40
    sent: dict[str, Any] = {"kind": "dir", "note": None, "child": None}
    for _ in range(depth):
        sent = {"kind": "dir", "note": None, "child": sent}
    started = time.monotonic()
    restored = record.restore({"root": sent} if record.root_key is None else {record.root_key: {"root": sent}})
    assert time.monotonic() - started < BOUND_SECONDS
    expected: dict[str, Any] = {"kind": "dir"}
    for _ in range(depth):
        expected = {"kind": "dir", "child": expected}
    assert restored == {"root": expected}


def _open_tree() -> dict[str, Any]:
    """Open alternatives (no additionalProperties): closing the schema adds
    ``unevaluatedProperties: false`` next to each reference."""

    def branch(kind: str) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"child": {"$ref": "#/$defs/Node"}, "note": {"type": "string"}, "kind": {"const": kind}},
            "required": ["kind"],
        }

    return {
        "$defs": {"Node": {"allOf": [{"anyOf": [branch("file"), branch("dir")]}]}},
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "required": ["root"],
    }


def test_a_deep_value_under_unevaluated_properties_is_checked_in_bounded_time() -> None:
    """``unevaluatedProperties`` asked every alternative about the object
    again to learn which keys it evaluated, in both validators (jsonschema-rs
    too: 2.4 s at depth 16, doubling): the closed form of an open recursive
    union took minutes to call a 20-deep value valid."""
    schema = Schema(_open_tree())
    started = time.monotonic()
    assert schema.validate(_nested(60, "ok")) == _nested(60, "ok")
    extra = _nested(60, "ok")
    leaf = extra["root"]
    while "child" in leaf:
        leaf = leaf["child"]
    leaf["size"] = 1
    with pytest.raises(OutputError) as caught:
        schema.validate(extra)
    assert time.monotonic() - started < BOUND_SECONDS
    assert caught.value.code == "SCHEMA_MISMATCH"


def _suite_cases() -> list[Any]:
    root = Path(__file__).parent / "fixtures" / "json-schema-test-suite" / "draft2020-12"
    cases = []
    for path in sorted(root.glob("*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            cases.append(pytest.param(group, id=f"{path.stem}: {group['description']}"))
    return cases


@pytest.mark.parametrize("group", _suite_cases())
def test_the_kept_verdicts_change_no_verdict_and_no_error(group: dict[str, Any]) -> None:
    """The replaced keywords (anyOf, oneOf, if, not, unevaluatedProperties)
    give ``jsonschema``'s verdicts and errors on every draft 2020-12 case of
    the JSON-Schema-Test-Suite."""
    schema = group["schema"]
    base = jsonschema.Draft202012Validator
    plain = jsonschema.validators.extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", _strict_integer))
    try:
        reference = plain(schema, registry=SPECIFICATIONS)
        ours = strict_validator_class(schema)(schema, registry=SPECIFICATIONS)
    except (jsonschema.SchemaError, referencing.exceptions.Unresolvable):
        pytest.skip("not a schema these validators build")
    for case in group["tests"]:
        try:
            expected = sorted((e.message, tuple(e.absolute_path)) for e in reference.iter_errors(case["data"]))
        except referencing.exceptions.Unresolvable:  # a remote reference, not fetched offline
            with pytest.raises(referencing.exceptions.Unresolvable), explaining():
                list(ours.iter_errors(case["data"]))
            continue
        with explaining():
            found = sorted((e.message, tuple(e.absolute_path)) for e in ours.iter_errors(case["data"]))
        assert found == expected, case["description"]
        assert ours.is_valid(case["data"]) is (not expected), case["description"]


def test_a_deep_array_under_unevaluated_items_is_checked_in_bounded_time() -> None:
    """``unevaluatedItems`` asked every alternative again, like ``unevaluatedProperties``."""

    def branch(kind: str) -> dict[str, Any]:
        return {"type": "array", "prefixItems": [{"const": kind}, {"$ref": "#/$defs/Node"}]}

    node = {
        "anyOf": [
            {"type": "string"},
            {"allOf": [{"anyOf": [branch("file"), branch("dir")]}], "unevaluatedItems": False},
        ]
    }
    schema = Schema(
        {
            "$defs": {"Node": node},
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "required": ["root"],
        }
    )
    value: Any = "leaf"
    for _ in range(40):
        value = ["dir", value]
    started = time.monotonic()
    assert schema.validate({"root": value}) == {"root": value}
    innermost = value
    while isinstance(innermost[1], list):
        innermost = innermost[1]
    innermost.append(3)
    with pytest.raises(OutputError) as caught:
        schema.validate({"root": value})
    assert time.monotonic() - started < BOUND_SECONDS
    assert caught.value.code == "SCHEMA_MISMATCH"
