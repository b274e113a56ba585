"""Request shaping: per-provider golden fragments, the strict schemas produced
for real Pydantic models checked against each provider's documented strict
rules, dropped-keyword records, and restoring a response value so it is
validated against the ORIGINAL schema."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from enum import Enum
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field

import decisions
from decisions._payload import canonical_json
from decisions.errors import SchemaError
from decisions.request.capabilities import ANNOTATION_KEYWORDS, Capabilities, capabilities
from decisions.request.conversion import convert_schema
from decisions.request.definitions import OutputDefinition, ToolDefinition
from decisions.request.fragments import output_fragment, tool_fragment
from decisions.request.plan import build_request

PROVIDERS = ("openai-chat", "openai-responses", "anthropic", "gemini")


# ---------------------------------------------------------------- real models


class ReadFile(BaseModel):
    """Read a file from the workspace."""

    path: str = Field(description="workspace-relative path")
    max_bytes: Optional[int] = None


class Color(str, Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    city: str
    zip: Optional[str] = None
    floor: int = 0


class Search(BaseModel):
    kind: Literal["search"]
    query: str = Field(min_length=1, max_length=200)


class Finish(BaseModel):
    kind: Literal["finish"]
    answer: str


class Person(BaseModel):
    name: str
    nickname: str | None = None
    favourite: Color = Color.RED
    tags: list[str] = Field(default_factory=list, max_length=5)
    home: Address
    previous: list[Address] = []
    born: date
    score: float = Field(ge=0, le=100)
    step: Annotated[Union[Search, Finish], Field(discriminator="kind")]
    either: Union[int, str]


class TreeNode(BaseModel):
    label: str
    children: list["TreeNode"] = []


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int
    b: Optional["Closed"] = None


class WithMap(BaseModel):
    counts: dict[str, int]


MODELS: tuple[type[BaseModel], ...] = (ReadFile, Address, Person, TreeNode, Closed)


# ---------------------------------------------------------------- golden fragments

_READ_SENT_STRICT = {
    "description": "Read a file from the workspace.",
    "properties": {
        "path": {"description": "workspace-relative path", "title": "Path", "type": "string"},
        "max_bytes": {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Max Bytes"},
    },
    "required": ["path", "max_bytes"],
    "title": "ReadFile",
    "type": "object",
    "additionalProperties": False,
}


def test_golden_openai_chat_tool() -> None:
    fragment, record = tool_fragment(ToolDefinition("read_file", ReadFile), "openai-chat")
    assert fragment == {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file from the workspace.",
            "parameters": _READ_SENT_STRICT,
            "strict": True,
        },
    }
    assert record.strict is True and record.kind == "tool"
    # property order is the order the model writes the fields in: kept
    assert list(fragment["function"]["parameters"]["properties"]) == ["path", "max_bytes"]
    assert list(convert_schema(Person.model_json_schema(), "openai-chat").schema["properties"]) == list(
        Person.model_fields
    )


def test_golden_openai_responses_tool() -> None:
    fragment, _ = tool_fragment(ToolDefinition("read_file", ReadFile), "openai-responses")
    assert fragment == {
        "type": "function",
        "name": "read_file",
        "description": "Read a file from the workspace.",
        "parameters": _READ_SENT_STRICT,
        "strict": True,
    }


def test_golden_anthropic_tool() -> None:
    fragment, _ = tool_fragment(ToolDefinition("read_file", ReadFile), "anthropic")
    assert fragment == {
        "name": "read_file",
        "description": "Read a file from the workspace.",
        "input_schema": {
            "description": "Read a file from the workspace.",
            "properties": {
                "path": {"description": "workspace-relative path", "title": "Path", "type": "string"},
                "max_bytes": {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Max Bytes"},
            },
            "required": ["path"],
            "title": "ReadFile",
            "type": "object",
            "additionalProperties": False,
        },
        "strict": True,
    }


def test_golden_gemini_tool() -> None:
    plan = build_request("gemini", tools=[ToolDefinition("read_file", ReadFile)])
    assert plan.params == {
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "read_file",
                        "description": "Read a file from the workspace.",
                        "parametersJsonSchema": {
                            "description": "Read a file from the workspace.",
                            "properties": {
                                "path": {"description": "workspace-relative path", "title": "Path", "type": "string"},
                                "max_bytes": {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Max Bytes"},
                            },
                            "required": ["path"],
                            "title": "ReadFile",
                            "type": "object",
                        },
                    }
                ]
            }
        ],
    }
    # Gemini has no strict flag: none is invented.
    assert "strict" not in json.dumps(plan.params)


_ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["pass", "repair"]}, "note": {"type": "string", "maxLength": 80}},
    "required": ["verdict"],
}


def test_golden_output_fragments() -> None:
    output = OutputDefinition(_ANSWER_SCHEMA, name="evaluation", schema_id="agent.eval", schema_version="1.0.0")
    strict_sent = {
        "type": "object",
        "properties": {"verdict": {"enum": ["pass", "repair"]}, "note": {"type": ["string", "null"]}},
        "required": ["verdict", "note"],
        "additionalProperties": False,
    }
    chat, _ = output_fragment(output, "openai-chat")
    assert chat == {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "evaluation", "schema": strict_sent, "strict": True},
        }
    }
    responses, _ = output_fragment(output, "openai-responses")
    assert responses == {
        "text": {"format": {"type": "json_schema", "name": "evaluation", "schema": strict_sent, "strict": True}}
    }
    anthropic, record = output_fragment(output, "anthropic")
    assert anthropic == {
        "output_config": {
            "format": {
                "type": "json_schema",
                "schema": {
                    "type": "object",
                    "properties": {"verdict": {"enum": ["pass", "repair"]}, "note": {"type": "string"}},
                    "required": ["verdict"],
                    "additionalProperties": False,
                },
            }
        }
    }
    assert [(d.path, d.keyword, d.constraint) for d in record.dropped] == [("#/properties/note", "maxLength", True)]
    gemini, _ = output_fragment(output, "gemini")
    assert gemini == {
        "generationConfig": {
            "responseMimeType": "application/json",
            "responseJsonSchema": {
                "type": "object",
                "properties": {"verdict": {"enum": ["pass", "repair"]}, "note": {"type": "string"}},
                "required": ["verdict"],
            },
        }
    }
    assert record.schema_id == "agent.eval" and record.schema_version == "1.0.0"


# ---------------------------------------------------------------- documented strict rules


def _walk(schema: Any, path: str = "#") -> Any:
    """Every subschema (dict) of ``schema`` with its pointer."""
    stack = [(schema, path)]
    while stack:
        node, here = stack.pop()
        if not isinstance(node, dict):
            continue
        yield node, here
        for key, value in node.items():
            if key in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
                stack.extend((sub, f"{here}/{key}/{name}") for name, sub in value.items())
            elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
                stack.append((value, f"{here}/{key}"))
            elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(value, list):
                stack.extend((sub, f"{here}/{key}/{i}") for i, sub in enumerate(value))


def assert_meets_strict_rules(sent: dict[str, Any], caps: Capabilities, strict: bool) -> None:
    """The provider's documented rules, checked on the schema as sent."""
    Draft202012Validator.check_schema(sent)
    if caps.root_must_be_object:
        assert sent.get("type") == "object" and "anyOf" not in sent
    defs = sent.get("$defs", {})
    for node, here in _walk(sent):
        for keyword in node:
            assert caps.supports(keyword) or (keyword == "additionalProperties" and node[keyword] is False), (
                f"{caps.provider}: {keyword} at {here} is not a supported keyword"
            )
        if "$ref" in node:
            assert node["$ref"].startswith("#/$defs/") and node["$ref"][8:] in defs
            if not caps.ref_siblings:
                assert set(node) == {"$ref"}, f"$ref with siblings at {here}"
        if "format" in node and caps.string_formats is not None:
            assert node["format"] in caps.string_formats
        if "minItems" in node and caps.max_min_items is not None:
            assert node["minItems"] <= caps.max_min_items
        if "enum" in node:
            for value in node["enum"]:
                kind = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}[
                    type(value)
                ]
                assert kind in caps.enum_value_types or (kind == "integer" and "number" in caps.enum_value_types)
        is_object = node.get("type") == "object" or "properties" in node
        if strict and is_object:
            if caps.strict_requires_closed_objects:
                assert node.get("additionalProperties") is False, f"open object at {here}"
            if caps.strict_requires_all_required:
                assert set(node.get("required", ())) == set(node.get("properties", {})), f"optional at {here}"


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_strict_schemas_of_real_models_meet_documented_rules(provider: str, model: type[BaseModel]) -> None:
    caps = capabilities(provider)
    schema = model.model_json_schema()
    try:
        converted = convert_schema(schema, caps)
    except SchemaError as error:
        # The only refusal: recursion where the provider forbids it.
        assert error.code == "UNSUPPORTED_SCHEMA"
        assert provider == "anthropic" and model in (TreeNode, Closed)
        return
    assert_meets_strict_rules(converted.schema, caps, converted.strict)
    assert converted.strict is caps.strict_json_schema
    # every dropped constraint is really absent from what was sent
    for dropped in converted.dropped:
        assert dropped.constraint is (dropped.keyword not in ANNOTATION_KEYWORDS)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_conversion_is_idempotent(provider: str) -> None:
    caps = capabilities(provider)
    for model in (ReadFile, Address, Person):
        once = convert_schema(model.model_json_schema(), caps)
        twice = convert_schema(once.schema, caps)
        assert twice.schema == once.schema
        assert not [d for d in twice.dropped if d.constraint]


def test_unsupported_keywords_found_before_sending() -> None:
    schema = Person.model_json_schema()
    converted = convert_schema(schema, "openai-chat")
    dropped = {(d.path, d.keyword) for d in converted.dropped if d.constraint}
    assert ("#/$defs/Search/properties/query", "minLength") in dropped
    assert ("#/$defs/Search/properties/query", "maxLength") in dropped
    assert ("#/properties/step", "oneOf") in dropped  # sent as anyOf
    with pytest.raises(SchemaError) as info:
        convert_schema(schema, "openai-chat", on_unsupported="reject")
    assert info.value.code == "UNSUPPORTED_SCHEMA"
    assert info.value.path is not None and info.value.path.startswith("#/")
    # anthropic enforces neither numeric bounds nor maxItems
    anthropic = {(d.path, d.keyword) for d in convert_schema(schema, "anthropic").dropped if d.constraint}
    assert {
        ("#/properties/score", "minimum"),
        ("#/properties/score", "maximum"),
        ("#/properties/tags", "maxItems"),
    } <= anthropic


def test_open_maps_cannot_be_strict() -> None:
    for provider in ("openai-chat", "anthropic"):
        with pytest.raises(SchemaError) as info:
            convert_schema(WithMap.model_json_schema(), provider)
        assert info.value.code == "UNSUPPORTED_SCHEMA"
        assert info.value.path == "#/properties/counts/additionalProperties"
    loose = convert_schema(WithMap.model_json_schema(), "openai-chat", strict=False)
    assert loose.schema["properties"]["counts"]["additionalProperties"] == {"type": "integer"}
    assert loose.strict is False


def test_non_local_ref_and_bad_strict_request() -> None:
    with pytest.raises(SchemaError, match="local definition"):
        convert_schema({"type": "object", "properties": {"a": {"$ref": "https://x/y.json"}}}, "openai-chat")
    with pytest.raises(ValueError, match="no strict"):
        convert_schema(Address.model_json_schema(), "gemini", strict=True)
    with pytest.raises(ValueError):
        ToolDefinition("read file!", ReadFile)


def test_refs_with_siblings_are_inlined_and_recursive_refs_kept() -> None:
    schema = {
        "type": "object",
        "properties": {"home": {"$ref": "#/$defs/A", "description": "where"}, "tree": {"$ref": "#/$defs/T"}},
        "required": ["home", "tree"],
        "$defs": {
            "A": {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]},
            "T": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/T"}}},
                "required": ["kids"],
            },
        },
    }
    sent = convert_schema(schema, "openai-chat").schema
    assert sent["properties"]["home"] == {
        "type": "object",
        "properties": {"s": {"type": "string"}},
        "required": ["s"],
        "description": "where",
        "additionalProperties": False,
    }
    assert sent["properties"]["tree"] == {"$ref": "#/$defs/T"}
    assert set(sent["$defs"]) == {"T"}


def test_gemini_const_becomes_single_enum() -> None:
    sent = convert_schema(Finish.model_json_schema(), "gemini").schema
    assert sent["properties"]["kind"]["enum"] == ["finish"]
    assert "const" not in json.dumps(sent)


# ---------------------------------------------------------------- records


def test_record_keeps_original_sent_digest_and_version() -> None:
    _, record = tool_fragment(ToolDefinition("person", Person), "openai-responses")
    assert record.original_schema == Person.model_json_schema()
    canonical = json.dumps(record.sent_schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert record.sent_digest == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert record.original_digest != record.sent_digest
    assert record.library_version == decisions.__version__
    assert record.needs_recheck
    data = record.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["sent_schema"] == record.sent_schema
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'


def test_restore_validates_against_the_original_schema() -> None:
    _, record = tool_fragment(ToolDefinition("person", Person), "openai-chat")
    # What a strict model writes: every property present, nulls for the optional ones.
    written = {
        "name": "Ada",
        "nickname": None,
        "favourite": None,
        "tags": None,
        "home": {"street": "1 Main", "city": "X", "zip": None, "floor": None},
        "previous": None,
        "born": "1815-12-10",
        "score": 50,
        "step": {"kind": "finish", "answer": "ok"},
        "either": 3,
    }
    Draft202012Validator(record.sent_schema).validate(written)
    restored = record.restore(written)
    # Nulls the original allows are kept; nulls strict mode forced are removed.
    assert restored["nickname"] is None and restored["home"]["zip"] is None
    assert "favourite" not in restored and "tags" not in restored and "floor" not in restored["home"]
    person = Person.model_validate(restored)
    assert person.favourite is Color.RED and person.home.floor == 0
    # A dropped constraint is still checked: the original says minLength 1.
    bad = dict(written, step={"kind": "search", "query": ""})
    Draft202012Validator(record.sent_schema).validate(bad)  # the provider would not stop it
    assert not Draft202012Validator(record.original_schema).is_valid(record.restore(bad))


def test_restore_keeps_a_null_that_a_branch_of_the_original_allows() -> None:
    """In a union, a value that fits a branch of the original as written is
    the model's own: its null is not taken for one strict mode forced (the
    first branch, where ``timeout`` is optional, would read it as absent)."""
    branch = {"mode": {"const": "safe"}}
    schema = {
        "type": "object",
        "properties": {
            "cfg": {
                "anyOf": [
                    {"type": "object", "properties": {**branch, "timeout": {"type": "integer"}}, "required": ["mode"]},
                    {
                        "type": "object",
                        "properties": {**branch, "timeout": {"type": "null"}},
                        "required": ["mode", "timeout"],
                    },
                ]
            }
        },
        "required": ["cfg"],
    }
    _, record = tool_fragment(ToolDefinition("t", schema), "openai-chat")
    assert record.nullable_added == {"#/properties/cfg/anyOf/0/properties/timeout"}
    written = {"cfg": {"mode": "safe", "timeout": None}}
    assert Draft202012Validator(schema).is_valid(written)
    assert record.restore(written) == written
    # a null no branch allows as written is still the conversion's, and removed
    other = {"type": "object", "properties": {**branch, "timeout": {"type": "string"}}, "required": ["mode", "timeout"]}
    schema["properties"]["cfg"]["anyOf"][1] = other
    _, record = tool_fragment(ToolDefinition("t", schema), "openai-chat")
    assert record.restore(written) == {"cfg": {"mode": "safe"}}


def test_union_root_is_wrapped_for_openai_and_unwrapped_on_restore() -> None:
    output = OutputDefinition(Annotated[Union[Search, Finish], Field(discriminator="kind")], name="step")
    plan = build_request("openai-chat", output=output)
    assert plan.strategy == "native_structured_output"
    record = plan.output_record
    assert record is not None and record.root_key == "value"
    sent = plan.params["response_format"]["json_schema"]["schema"]
    assert sent["type"] == "object" and sent["required"] == ["value"]
    assert record.restore({"value": {"kind": "finish", "answer": "a"}}) == {"kind": "finish", "answer": "a"}
    with pytest.raises(SchemaError) as info:
        record.restore({"kind": "finish", "answer": "a"})
    assert info.value.code == "SCHEMA_MISMATCH"
    # anthropic needs no wrapper for its output format
    assert build_request("anthropic", output=output).output_record.root_key is None


# ---------------------------------------------------------------- strategies in requests


def test_tool_based_structured_response_is_a_forced_control_tool() -> None:
    plan = build_request("anthropic", output=TreeNode)  # recursive: no native strict output
    assert plan.strategy == "tool_structured_response"
    assert plan.submit_tool == "submit_TreeNode"
    assert plan.params["tool_choice"] == {"type": "tool", "name": "submit_TreeNode"}
    (record,) = plan.records
    assert record.control and record.strict is False
    # with real tools beside it, any tool may be chosen, but one must be
    plan = build_request("anthropic", tools=[ToolDefinition("read_file", ReadFile)], output=TreeNode)
    assert plan.params["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in plan.params["tools"]] == ["read_file", "submit_TreeNode"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_choice_shapes(provider: str) -> None:
    caps = capabilities(provider, native_structured_output=False)
    plan = build_request(caps, output=Address)
    assert plan.strategy == "tool_structured_response"
    expected = {
        "openai-chat": {"tool_choice": {"type": "function", "function": {"name": "submit_Address"}}},
        "openai-responses": {"tool_choice": {"type": "function", "name": "submit_Address"}},
        "anthropic": {"tool_choice": {"type": "tool", "name": "submit_Address"}},
        "gemini": {
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["submit_Address"]}}
        },
    }[provider]
    assert {k: plan.params[k] for k in expected} == expected


def test_json_text_strategy_sends_no_schema() -> None:
    plan = build_request("openai-compatible", output=Address, max_output_chars=500)
    assert plan.strategy == "json_text"
    assert plan.params == {}
    assert plan.instructions is not None and "exactly one JSON value" in plan.instructions
    assert "500" in plan.instructions and '"street"' in plan.instructions
    with pytest.raises(ValueError, match="no tool calling"):
        build_request("openai-compatible", tools=[ToolDefinition("read_file", ReadFile)])


def test_duplicate_tool_names_rejected() -> None:
    with pytest.raises(ValueError, match="unique"):
        build_request("openai-chat", tools=[ToolDefinition("a", ReadFile), ToolDefinition("a", Address)])


# ---------------------------------------------------------------- preparing a response for decide


def _response(*items: Any, finish: str = "tool_calls") -> Any:
    from decisions.types import NormalizedResponse

    return NormalizedResponse(provider="openai-chat", response_id="r", model="m", items=items, finish_reason=finish)  # type: ignore[arg-type]


def _call(name: str, arguments: str, call_id: str = "c1") -> Any:
    from decisions.types import ToolCallItem

    return ToolCallItem(item_id=call_id, call_id=call_id, name=name, arguments=arguments)


def test_prepare_turns_the_submit_call_into_the_final_answer() -> None:
    from decisions.types import TextItem

    plan = build_request(capabilities("openai-chat", native_structured_output=False), output=Address)
    written = {"street": "1 Main", "city": "X", "zip": None, "floor": None}
    prepared = plan.prepare(
        _response(TextItem(item_id="t", text="Here you go."), _call("submit_Address", json.dumps(written)))
    )
    assert prepared.tool_calls == () and prepared.finish_reason == "stop"
    assert json.loads(prepared.text) == {"street": "1 Main", "city": "X", "zip": None}
    Address.model_validate_json(prepared.text)
    with pytest.raises(SchemaError) as info:
        plan.prepare(_response(_call("submit_Address", "{}"), _call("submit_Address", "{}", "c2")))
    assert info.value.code == "AMBIGUOUS_DECISION"


def test_prepare_restores_tool_arguments_and_leaves_bad_text_alone() -> None:
    plan = build_request("openai-responses", tools=[ToolDefinition("read_file", ReadFile)])
    prepared = plan.prepare(_response(_call("read_file", '{"path": "a.py", "max_bytes": null}')))
    # max_bytes was Optional in the original: its null is kept
    assert json.loads(prepared.tool_calls[0].arguments) == {"path": "a.py", "max_bytes": None}
    plan = build_request("openai-chat", tools=[ToolDefinition("addr", Address)])
    prepared = plan.prepare(_response(_call("addr", '{"street": "s", "city": "c", "zip": null, "floor": null}')))
    assert json.loads(prepared.tool_calls[0].arguments) == {"street": "s", "city": "c", "zip": None}
    broken = _response(_call("addr", '{"street": "\\d'))
    assert plan.prepare(broken).tool_calls[0].arguments == '{"street": "\\d'
    cut = _response(_call("addr", '{"street"'), finish="length")
    assert plan.prepare(cut) is cut


def test_prepare_unwraps_a_native_root_wrapper() -> None:
    from decisions.types import TextItem

    output = OutputDefinition(Annotated[Union[Search, Finish], Field(discriminator="kind")], name="step")
    plan = build_request("openai-chat", output=output)
    prepared = plan.prepare(
        _response(TextItem(item_id="t", text='{"value": {"kind": "finish", "answer": "a"}}'), finish="stop")
    )
    assert json.loads(prepared.text) == {"kind": "finish", "answer": "a"}


class NoArgs(BaseModel):
    pass


def test_tool_without_arguments_is_an_empty_closed_object() -> None:
    fragment, _ = tool_fragment(ToolDefinition("get_time", NoArgs, "Current time"), "openai-chat")
    assert fragment["function"]["parameters"] == {
        "properties": {},
        "title": "NoArgs",
        "type": "object",
        "additionalProperties": False,
    }
    with pytest.raises(SchemaError):  # "any object" is a map, not "no arguments"
        tool_fragment(ToolDefinition("get_time", {"type": "object"}), "openai-chat")


def test_one_tool_list_for_request_and_decide() -> None:
    from decisions import Tool, ToolRegistry, decide
    from decisions.types import NormalizedResponse, TextItem

    tools = [Tool(name="addr", parameters=Address, side_effects=False, description="Store an address")]
    plan = build_request("openai-chat", tools=tools, output=Person)
    assert plan.params["tools"][0]["function"]["description"] == "Store an address"
    assert plan.params["tools"][0]["function"]["strict"] is True
    # the strict model must write every property; prepare restores, decide validates the original
    written = '{"street": "s", "city": "c", "zip": null, "floor": null}'
    response = NormalizedResponse(
        provider="openai-chat", response_id="r", model="m", items=(_call("addr", written),), finish_reason="tool_calls"
    )
    with pytest.raises(SchemaError):
        decide(response, tools=ToolRegistry(tools))  # null is not an int: the unrestored value fails
    decision = decide(plan.prepare(response), tools=ToolRegistry(tools))
    assert decision.calls[0].validated == Address(street="s", city="c")
    # the final answer: native strict output, restored, validated against Person
    answer = {
        "name": "Ada",
        "nickname": None,
        "favourite": None,
        "tags": None,
        "home": {"street": "1", "city": "X", "zip": None, "floor": None},
        "previous": None,
        "born": "1815-12-10",
        "score": 50,
        "step": {"kind": "finish", "answer": "ok"},
        "either": "x",
    }
    final = NormalizedResponse(
        provider="openai-chat",
        response_id="r",
        model="m",
        items=(TextItem(item_id="t", text=json.dumps(answer)),),
        finish_reason="stop",
    )
    value = decide(plan.prepare(final), output=Person).value
    assert isinstance(value, Person) and value.tags == [] and value.home.floor == 0
    # a constraint the provider was not asked to enforce is still checked
    answer["step"] = {"kind": "search", "query": ""}
    bad = NormalizedResponse(
        provider="openai-chat",
        response_id="r",
        model="m",
        items=(TextItem(item_id="t", text=json.dumps(answer)),),
        finish_reason="stop",
    )
    with pytest.raises(SchemaError) as info:
        decide(plan.prepare(bad), output=Person)
    assert info.value.code == "SCHEMA_MISMATCH"
    with pytest.raises(TypeError):
        build_request("openai-chat", tools=["read_file"])


# ---------------------------------------------------------------- the SDKs' own strict transforms as oracles


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_openai_sdk_strictifier_has_nothing_left_to_do(model: type[BaseModel]) -> None:
    import copy

    strictify = pytest.importorskip("openai.lib._pydantic")._ensure_strict_json_schema
    sent = convert_schema(model.model_json_schema(), "openai-chat").schema
    assert strictify(copy.deepcopy(sent), path=(), root=copy.deepcopy(sent)) == sent


@pytest.mark.parametrize("model", [m for m in MODELS if m not in (TreeNode, Closed)], ids=lambda m: m.__name__)
def test_anthropic_sdk_transform_finds_nothing_unsupported(model: type[BaseModel]) -> None:
    import copy

    transform = pytest.importorskip("anthropic").transform_schema
    sent = convert_schema(model.model_json_schema(), "anthropic").schema
    again = transform(copy.deepcopy(sent))
    # The SDK moves every keyword it does not support into the description
    # ("{keyword: value}"); nothing may be left for it to move.
    ours = {here: node for node, here in _walk(sent)}
    theirs = {here: node for node, here in _walk(again)}
    assert set(ours) == set(theirs)
    for here, node in ours.items():
        assert theirs[here].get("description") == node.get("description"), here
        assert theirs[here].get("additionalProperties") == node.get("additionalProperties"), here


def test_prepare_bounds_the_json_text_answer() -> None:
    from decisions.errors import ParseError
    from decisions.types import TextItem

    plan = build_request("openai-compatible", output=Address, max_output_chars=60)
    ok = _response(TextItem(item_id="t", text='{"street": "s", "city": "c"}'), finish="stop")
    assert plan.prepare(ok) is ok
    for text, code in (
        ('{"street": "' + "s" * 80 + '", "city": "c"}', "DOCUMENT_TOO_LARGE"),
        ('Sure: {"street": "s", "city": "c"}', "UNEXPECTED_CHARACTER"),
        ('```json\n{"street": "s", "city": "c"}\n```', "MARKDOWN_FENCE"),
    ):
        with pytest.raises(ParseError) as info:
            plan.prepare(_response(TextItem(item_id="t", text=text), finish="stop"))
        assert info.value.code == code


def test_anthropic_regex_subset_and_request_totals() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "pattern": "^[a-z]+\\d{2}$"},
            "b": {"type": "string", "pattern": "^(?!tmp)[a-z]+$"},
            "c": {"type": "string", "pattern": "(x)\\1"},
        },
        "required": ["a", "b", "c"],
    }
    converted = convert_schema(schema, "anthropic")
    assert converted.schema["properties"]["a"]["pattern"] == "^[a-z]+\\d{2}$"
    assert {(d.path, d.keyword) for d in converted.dropped} == {
        ("#/properties/b", "pattern"),
        ("#/properties/c", "pattern"),
    }
    assert convert_schema(schema, "openai-chat").schema["properties"]["b"]["pattern"] == "^(?!tmp)[a-z]+$"
    simple = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    many = [ToolDefinition(f"t{i}", simple) for i in range(21)]
    with pytest.raises(SchemaError, match="strict tools"):
        build_request("anthropic", tools=many)
    assert len(build_request("anthropic", tools=many, strict=False).params["tools"]) == 21
    build_request("anthropic", tools=many[:20])
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(25)}}
    with pytest.raises(SchemaError, match="optional properties"):
        build_request("anthropic", tools=[ToolDefinition("wide", wide)])
    unions = {
        "type": "object",
        "properties": {f"p{i}": {"type": ["string", "integer"]} for i in range(17)},
        "required": [f"p{i}" for i in range(17)],
    }
    with pytest.raises(SchemaError, match="union types"):
        build_request("anthropic", tools=[ToolDefinition("unions", unions)])
    build_request("openai-chat", tools=many + [ToolDefinition("wide", wide)])  # no such totals documented


# ---------------------------------------------------------------- property: any schema from a grammar

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_NAMES = st.sampled_from(["a", "b", "c", "path", "kind", "x-y", "n"])
_EXTRA = st.fixed_dictionaries(
    {},
    optional={
        "description": st.just("d"),
        "title": st.just("T"),
        "default": st.none(),
        "minLength": st.just(1),
        "maxLength": st.just(9),
        "pattern": st.sampled_from(["^a+$", "(?=a)"]),
        "format": st.sampled_from(["date", "uri", "color"]),
        "minimum": st.just(0),
        "maximum": st.just(5),
        "multipleOf": st.just(2),
        "examples": st.just(["e"]),
        "deprecated": st.just(False),
    },
)


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    base = st.sampled_from(
        [
            {"type": "string"},
            {"type": "integer"},
            {"type": "number"},
            {"type": "boolean"},
            {"enum": ["x", "y"]},
            {"const": "k"},
            {"type": ["string", "null"]},
        ]
    )
    return st.builds(lambda b, e: {**b, **e}, base, _EXTRA)


def _schemas() -> st.SearchStrategy[dict[str, Any]]:
    def extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        obj = st.builds(
            lambda props, required, closed: {
                "type": "object",
                "properties": props,
                "required": [n for n in props if n in required],
                **({"additionalProperties": False} if closed else {}),
            },
            st.dictionaries(_NAMES, children, min_size=1, max_size=4),
            st.sets(_NAMES),
            st.booleans(),
        )
        arr = st.builds(
            lambda item, lo, hi: {"type": "array", "items": item, **lo, **hi},
            children,
            st.sampled_from([{}, {"minItems": 1}, {"minItems": 3}]),
            st.sampled_from([{}, {"maxItems": 4}, {"uniqueItems": True}]),
        )
        union = st.builds(
            lambda items, key: {key: items},
            st.lists(children, min_size=2, max_size=3),
            st.sampled_from(["anyOf", "oneOf"]),
        )
        return obj | arr | union

    body = st.recursive(_leaf(), extend, max_leaves=10)
    return st.builds(
        lambda props: {"type": "object", "properties": props, "required": sorted(props)[:1]},
        st.dictionaries(_NAMES, body, min_size=1, max_size=4),
    )


@settings(max_examples=100)
@given(_schemas(), st.sampled_from(PROVIDERS))
def test_any_grammar_schema_converts_to_the_rules_or_is_refused_by_name(schema: dict[str, Any], provider: str) -> None:
    caps = capabilities(provider)
    Draft202012Validator.check_schema(schema)
    try:
        converted = convert_schema(schema, caps)
    except SchemaError as error:
        assert error.code == "UNSUPPORTED_SCHEMA" and error.path is not None
        return
    assert_meets_strict_rules(converted.schema, caps, converted.strict)
    for dropped in converted.dropped:
        assert dropped.path.startswith("#")
    if any(d.constraint for d in converted.dropped):
        with pytest.raises(SchemaError) as info:
            convert_schema(schema, caps, on_unsupported="reject")
        assert info.value.code == "UNSUPPORTED_SCHEMA"
    else:
        assert convert_schema(schema, caps, on_unsupported="reject").schema == converted.schema
    again = convert_schema(converted.schema, caps)
    assert again.schema == converted.schema


@pytest.mark.parametrize(
    "broken",
    [
        {"type": "string", "maxLength": -1},
        {"type": "number", "multipleOf": 0},
        {"type": "strnig"},
        {"type": "array", "items": 5},
        {"$ref": "https://example.com/elsewhere.json"},
    ],
)
def test_a_schema_dict_decide_cannot_compile_is_never_sent(broken: dict[str, Any]) -> None:
    """A tool's or output's schema dict that breaks its metaschema (or names
    a schema offline) went to the provider as written, while ``decide``
    refused to compile the same schema; now the definition refuses it."""
    schema = {"type": "object", "properties": {"a": broken}, "required": ["a"]}
    import jsonschema

    refused = (jsonschema.SchemaError, ValueError)
    with pytest.raises(refused):
        decisions.Schema.of(schema)
    with pytest.raises(refused):
        ToolDefinition("t", schema)
    with pytest.raises(refused):
        OutputDefinition(schema, name="answer")
    with pytest.raises(refused):
        build_request(
            "openai-chat",
            tools=[ToolDefinition.of(decisions.Tool(name="t", parameters={"type": "object"}))],
            output=schema,
        )
