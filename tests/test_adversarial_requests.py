"""The request side and its undoing: classes of mistakes, on both backends.

A schema is converted for a provider's strict mode (every property
required, the optional ones made nullable; a non-object root wrapped in
``{"value": ...}``), and :meth:`RequestPlan.prepare` undoes that on what the
model wrote before ``decide`` checks it against the ORIGINAL schema.

1. Whether an optional property's original schema takes ``null`` was read
   from a few keywords (``type``, ``enum``, ``anyOf``...), so one that takes
   it through ``allOf``, ``not`` or a reference under ``allOf`` was made
   nullable as well, and the model's ``null`` (a value the original allows:
   "clear the due date") was removed as if it meant "absent" ("leave it").
   A validator now says it; the reverse mistake (``type: [string, null]``
   with an ``enum`` of strings takes no ``null``) made an optional property
   mandatory. The model's null is kept where the original takes it, and
   removed only where strict mode put it.
2. An answer without the root wrapper the sent schema asks for (a union
   output for OpenAI, a non-object output under the ``submit_*`` tool) was
   left as it stood and checked as if it were the wrapped value, which the
   model did not write; with a key beside the wrapper it was read as an
   object whose property happens to be called ``value``. It is now
   ``SCHEMA_MISMATCH`` at ``$`` from ``prepare``.
3. The restore did not walk every place the conversion made nulls: a
   one-member ``allOf`` (Pydantic's form for a described reference, merged
   into its parent for OpenAI) and the items after a ``prefixItems``
   prefix. A strict model's valid answer was ``SCHEMA_MISMATCH``.
4. A keyword beside a ``$ref`` that also appears, differently, in the
   definition replaced the definition's when inlined, and the record said
   nothing was dropped (``needs_recheck`` False; ``on_unsupported="reject"``
   let it through). It is recorded as a dropped constraint, and refused
   under ``reject``.
5. The restore gave up silently after 128 schema steps (references,
   properties, items), about 43 levels of a recursive tree, so a valid
   answer nested deeper (within ``max_depth`` and validation's 128 levels)
   kept the nulls of its deep levels and was ``SCHEMA_MISMATCH`` there. Only
   schema steps that do not descend the value are bounded now (a cycle of
   references), and values as deep as validation goes are restored; a
   caller whose stack is too deep for the walk gets ``SCHEMA_MISMATCH``
   (``too_deep``), not a ``RecursionError``.
6. ``prepare`` turned any call named like the ``submit_*`` control tool
   into the final answer: one not complete (its arguments happening to
   parse) and one of another kind (a Responses custom tool call a server
   named ``submit_Address``) both became a decided answer. They are left
   where they are, and ``decide`` refuses them as it does without
   ``prepare``. Likewise a custom call named like a function tool had its
   free-form input parsed and rewritten as that tool's arguments; it is
   left verbatim.
7. Whether a value already fits a union's branch as written was asked with
   integers loose (``1.0`` an integer) and objects open (a member no
   branch declares allowed), while ``decide`` validates with strict
   integers and closed objects. A strict model's ``null`` for an absent
   member was then kept because the value fitted another branch only by
   those looser rules, and the valid answer was ``SCHEMA_MISMATCH``. The
   fit is now asked as validation asks it.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
from types import ModuleType
from typing import Annotated, Any, Literal, Union

import pytest
from pydantic import BaseModel, Field

from decisions import OutputError, SchemaError, Tool, ToolRegistry, _backend, build_request, capabilities, decide
from decisions.limits import DEFAULT_LIMITS
from decisions.request.conversion import convert_schema
from decisions.request.definitions import OutputDefinition, ToolDefinition
from decisions.types import NormalizedResponse, TextItem, ToolCallItem
from decisions.validate._issues import MAX_VALIDATION_DEPTH


@pytest.fixture(autouse=True)
def _backend_under_test(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setattr(_backend, "impl", impl)
    return impl


def _response(*items: Any, finish: str = "tool_calls") -> NormalizedResponse:
    return NormalizedResponse(provider="openai-chat", response_id="r", model="m", items=items, finish_reason=finish)  # type: ignore[arg-type]


def _call(name: str, arguments: Any) -> ToolCallItem:
    return ToolCallItem(item_id="c1", call_id="c1", name=name, arguments=json.dumps(arguments))


def _decided(schema: dict[str, Any], arguments: Any, provider: str = "openai-chat", **caps: Any) -> Any:
    """The arguments ``decide`` gives for a call of the tool ``t`` (``schema``)
    after ``prepare``, and the plan's record of the tool."""
    plan = build_request(capabilities(provider, **caps), tools=[ToolDefinition("t", schema)])
    registry = ToolRegistry([Tool(name="t", parameters=schema, side_effects=False)])
    decision = decide(plan.prepare(_response(_call("t", arguments))), tools=registry)
    return decision.calls[0].arguments, plan.records[0]


# ---------------------------------------------------------------- 1. a null the original takes is the model's

_MAYBE = {"anyOf": [{"type": "string"}, {"type": "null"}]}

#: Optional properties whose original schema takes null as a value.
TAKES_NULL = {
    "allOf of a nullable type": {"allOf": [{"type": ["string", "null"]}]},
    "not a string": {"not": {"type": "string"}},
    "allOf of a nullable reference": {"allOf": [{"$ref": "#/$defs/Maybe"}]},
    "allOf of two": {"allOf": [{"$ref": "#/$defs/Maybe"}, {"description": "when"}]},
}


def _with(prop: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"id": {"type": "string"}, "due": prop},
        "required": ["id"],
        "$defs": {"Maybe": _MAYBE},
    }


@pytest.mark.parametrize("prop", list(TAKES_NULL.values()), ids=list(TAKES_NULL))
def test_a_null_the_original_takes_is_kept_as_the_models_value(prop: dict[str, Any]) -> None:
    schema = _with(prop)
    arguments, record = _decided(schema, {"id": "x", "due": None})
    assert arguments == {"id": "x", "due": None}
    assert "#/properties/due" not in record.nullable_added
    # absent is still absent
    assert _decided(schema, {"id": "x"})[0] == {"id": "x"}


def test_a_null_the_original_refuses_is_what_strict_mode_put_there() -> None:
    """``type: [string, null]`` with an enum of strings takes no null, so
    strict mode must make it nullable (and the null means absent), not
    leave the optional property mandatory."""
    schema = _with({"type": ["string", "null"], "enum": ["a", "b"]})
    arguments, record = _decided(schema, {"id": "x", "due": None})
    assert arguments == {"id": "x"}
    assert record.nullable_added == {"#/properties/due"}
    sent = record.sent_schema["properties"]["due"]
    assert {"type": "null"} in sent["anyOf"]


# ---------------------------------------------------------------- 2. the root wrapper is the contract


class Search(BaseModel):
    kind: Literal["search"]
    query: str


class Finish(BaseModel):
    kind: Literal["finish"]
    answer: str


_STEP = OutputDefinition(Annotated[Union[Search, Finish], Field(discriminator="kind")], name="step")
_VALUE = OutputDefinition(
    {
        "anyOf": [
            {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]},
            {"type": "string"},
        ]
    },
    name="either",
)


def _answered(provider: str, output: OutputDefinition, text: str) -> NormalizedResponse:
    """What ``prepare`` makes of ``text`` written as the answer: the native
    output's text, or the arguments of the ``submit_*`` tool."""
    if provider == "native":
        plan = build_request("openai-chat", output=output)
        assert plan.strategy == "native_structured_output"
        return plan.prepare(_response(TextItem(item_id="t", text=text), finish="stop"))
    plan = build_request(capabilities("anthropic", native_structured_output=False), output=output)
    assert plan.submit_tool is not None and plan.output_record is not None
    assert plan.output_record.root_key == "value"
    submitted = ToolCallItem(item_id="c1", call_id="c1", name=plan.submit_tool, arguments=text)
    return plan.prepare(_response(submitted))


@pytest.mark.parametrize("strategy", ["native", "submit tool"])
@pytest.mark.parametrize(
    "output,text",
    [
        (_STEP, '{"kind": "finish", "answer": "a"}'),
        (_VALUE, '{"value": "a", "note": "b"}'),
        (_VALUE, '"a"'),
    ],
    ids=["unwrapped union member", "wrapper with a key beside it", "bare string"],
)
def test_an_answer_without_its_root_wrapper_is_refused(strategy: str, output: OutputDefinition, text: str) -> None:
    with pytest.raises(SchemaError) as info:
        _answered(strategy, output, text)
    assert (info.value.code, info.value.path) == ("SCHEMA_MISMATCH", "$")
    assert info.value.issues[0]["code"] == "root_wrapper"


@pytest.mark.parametrize("strategy", ["native", "submit tool"])
def test_a_wrapped_answer_is_unwrapped(strategy: str) -> None:
    prepared = _answered(strategy, _STEP, '{"value": {"kind": "finish", "answer": "a"}}')
    assert decide(prepared, output=_STEP.model).value == Finish(kind="finish", answer="a")
    prepared = _answered(strategy, _VALUE, '{"value": {"value": "a"}}')
    assert json.loads(prepared.text) == {"value": "a"}


# ---------------------------------------------------------------- 3. every place a null was made is restored


def test_nulls_inside_a_one_member_allof_are_restored() -> None:
    address = {
        "type": "object",
        "properties": {"street": {"type": "string"}, "floor": {"type": "integer"}},
        "required": ["street"],
    }
    for home in ({"allOf": [{"$ref": "#/$defs/Address"}], "description": "home"}, {"allOf": [address]}):
        schema = {"type": "object", "properties": {"home": home}, "required": ["home"], "$defs": {"Address": address}}
        arguments, record = _decided(schema, {"home": {"street": "s", "floor": None}})
        assert arguments == {"home": {"street": "s"}}
        assert record.nullable_added  # the null was strict mode's
        # a null the original refuses, where strict mode put none, is still refused
        with pytest.raises(SchemaError) as info:
            _decided(schema, {"home": {"street": None, "floor": None}})
        assert info.value.path == "$.calls[0].arguments.home.street"


def test_nulls_in_the_items_after_a_prefix_are_restored() -> None:
    pair = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]}
    schema = {
        "type": "object",
        "properties": {"xs": {"type": "array", "prefixItems": [{"type": "string"}], "items": pair}},
        "required": ["xs"],
    }
    keywords = capabilities("openai-chat").supported_schema_keywords | {"prefixItems"}
    arguments, record = _decided(
        schema, {"xs": ["head", {"a": "x", "b": None}, {"a": "y", "b": 2}]}, supported_schema_keywords=keywords
    )
    assert arguments == {"xs": ["head", {"a": "x"}, {"a": "y", "b": 2}]}
    assert record.nullable_added == {"#/properties/xs/items/properties/b"}


# ---------------------------------------------------------------- 4. a definition's constraint replaced when inlined


def _scored(minimum: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"score": {"$ref": "#/$defs/Score", "minimum": minimum, "description": "the score"}},
        "required": ["score"],
        "$defs": {"Score": {"type": "integer", "minimum": 10, "description": "a score"}},
    }


def test_a_constraint_a_ref_sibling_replaces_is_recorded_and_still_checked() -> None:
    converted = convert_schema(_scored(0), "openai-chat")
    assert converted.schema["properties"]["score"]["minimum"] == 0  # what the provider is told
    (dropped,) = converted.dropped
    assert (dropped.path, dropped.keyword, dropped.value, dropped.constraint) == ("#/$defs/Score", "minimum", 10, True)
    _, record = _decided(_scored(0), {"score": 12})
    assert record.needs_recheck
    with pytest.raises(SchemaError) as info:
        _decided(_scored(0), {"score": 5})
    assert info.value.path == "$.calls[0].arguments.score"
    with pytest.raises(SchemaError) as refused:
        convert_schema(_scored(0), "openai-chat", on_unsupported="reject")
    assert (refused.value.code, refused.value.path) == ("UNSUPPORTED_SCHEMA", "#/$defs/Score")


def test_a_sibling_that_agrees_or_only_describes_drops_nothing() -> None:
    assert convert_schema(_scored(10), "openai-chat").dropped == ()
    assert convert_schema(_scored(10), "openai-chat", on_unsupported="reject").schema["properties"]["score"] == {
        "type": "integer",
        "minimum": 10,
        "description": "the score",
    }


# ---------------------------------------------------------------- 5. deep values are restored to the end

_NODE = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "note": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
    },
    "required": ["name", "children"],
}
_TREE = {**_NODE, "$defs": {"Node": _NODE}}
_DEEP = dataclasses.replace(DEFAULT_LIMITS, max_depth=MAX_VALIDATION_DEPTH)


def _tree(levels: int) -> dict[str, Any]:
    """``levels`` nodes deep (two JSON levels each), every note null."""
    node: dict[str, Any] = {"name": "leaf", "note": None, "children": []}
    for index in range(levels - 1):
        node = {"name": str(index), "note": None, "children": [node]}
    return node


def _tree_answer(levels: int) -> NormalizedResponse:
    return _response(TextItem(item_id="t", text=json.dumps(_tree(levels))), finish="stop")


@pytest.mark.parametrize("levels", [10, 44, 63])
def test_a_deep_recursive_answer_is_restored_to_its_last_level(levels: int) -> None:
    plan = build_request("openai-chat", output=_TREE)
    assert plan.strategy == "native_structured_output"
    value = decide(plan.prepare(_tree_answer(levels), limits=_DEEP), output=_TREE, limits=_DEEP).value
    depth = 0
    while value["children"]:
        assert "note" not in value
        value, depth = value["children"][0], depth + 1
    assert depth == levels - 1 and "note" not in value


def test_a_restore_too_deep_for_the_callers_stack_is_typed() -> None:
    plan = build_request("openai-chat", output=_TREE)
    answer = _tree_answer(63)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 60)
    try:
        with pytest.raises(SchemaError) as info:
            plan.prepare(answer, limits=_DEEP)
    finally:
        sys.setrecursionlimit(limit)
    assert (info.value.code, info.value.path, info.value.issues[0]["code"]) == ("SCHEMA_MISMATCH", "$", "too_deep")


# ---------------------------------------------------------------- 6. only a whole function call submits the answer


class Address(BaseModel):
    street: str
    city: str


@pytest.mark.parametrize(
    "change",
    [{"complete": False}, {"call_kind": "custom"}],
    ids=["not complete", "a custom call"],
)
def test_only_a_whole_function_call_to_the_submit_tool_is_the_answer(change: dict[str, Any]) -> None:
    plan = build_request(capabilities("openai-chat", native_structured_output=False), output=Address)
    assert plan.submit_tool == "submit_Address"
    call = ToolCallItem(item_id="c1", call_id="c1", name="submit_Address", arguments='{"street": "s", "city": "c"}')
    response = _response(dataclasses.replace(call, **change))
    with pytest.raises(OutputError) as expected:
        decide(response, output=Address)
    assert plan.prepare(response) is response
    with pytest.raises(OutputError) as info:
        decide(plan.prepare(response), output=Address)
    assert info.value.to_dict() == expected.value.to_dict()
    # the whole function call is the answer
    assert decide(plan.prepare(_response(call)), output=Address).value == Address(street="s", city="c")


def test_a_call_of_another_kind_is_left_verbatim() -> None:
    """A custom call's input is free-form text: never parsed and rewritten
    as the function tool of the same name's arguments would be."""
    schema = {"type": "object", "properties": {"street": {"type": "string"}, "floor": {"type": "integer"}}}
    plan = build_request("openai-chat", tools=[ToolDefinition("addr", {**schema, "required": ["street"]})])
    text = '{"street": "s",  "floor": null}'
    custom = ToolCallItem(item_id="c1", call_id="c1", name="addr", arguments=text, call_kind="custom")
    assert plan.prepare(_response(custom)).tool_calls[0].arguments == text
    function = dataclasses.replace(custom, call_kind="function")
    assert json.loads(plan.prepare(_response(function)).tool_calls[0].arguments) == {"street": "s"}


# ---------------------------------------------------------------- 7. a branch fits as validation says


#: ``t`` is optional in ``Loose``: strict mode makes it nullable, and its
#: null means "absent". ``Exact`` fits ``{"n": 1.0, "t": null}`` only with
#: loose integers, ``Short`` fits ``{"n": 1, "t": null}`` only when open.
_BRANCHES = {
    "loose integer": (
        [
            {"type": "object", "properties": {"n": {"type": "number"}, "t": {"type": "string"}}, "required": ["n"]},
            {"type": "object", "properties": {"n": {"type": "integer"}, "t": {"type": "null"}}, "required": ["n", "t"]},
        ],
        {"n": 1.0, "t": None},
        {"n": 1.0},
    ),
    "open object": (
        [
            {"type": "object", "properties": {"n": {"type": "integer"}, "t": {"type": "string"}}, "required": ["n"]},
            {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        ],
        {"n": 1, "t": None},
        {"n": 1},
    ),
}


@pytest.mark.parametrize(("branches", "written", "restored"), list(_BRANCHES.values()), ids=list(_BRANCHES))
def test_a_value_that_fits_a_branch_only_loosely_is_restored(
    branches: list[dict[str, Any]], written: dict[str, Any], restored: dict[str, Any]
) -> None:
    schema = {"type": "object", "properties": {"x": {"anyOf": branches}}, "required": ["x"]}
    arguments, record = _decided(schema, {"x": written})
    assert "#/properties/x/anyOf/0/properties/t" in record.nullable_added
    assert arguments == {"x": restored}


def test_a_null_a_branch_takes_as_validated_is_still_kept() -> None:
    """The stricter fit keeps what validation accepts as written: the
    ``null`` of the branch that declares it is the model's value."""
    branches, _, _ = _BRANCHES["loose integer"]
    schema = {"type": "object", "properties": {"x": {"anyOf": branches}}, "required": ["x"]}
    assert _decided(schema, {"x": {"n": 1, "t": None}})[0] == {"x": {"n": 1, "t": None}}
