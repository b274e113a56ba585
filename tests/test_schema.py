"""The schema layer: strict, stable issue codes and JSON paths, the same for
Pydantic types and JSON Schema dicts."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

import jsonschema
import pytest
from pydantic import BaseModel, ConfigDict, Field

from decisions import Schema, SchemaError
from decisions.validate.schema import ISSUE_CODES, MAX_ISSUES, json_path


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    count: int
    note: str | None


ARGS_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "count": {"type": "integer"}, "note": {"type": ["string", "null"]}},
    "required": ["path", "count", "note"],
    "additionalProperties": False,
}


class Call(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    arguments: dict[str, Any]


class ToolD(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["tool"]
    calls: list[Call] = Field(min_length=1, max_length=4)


class FinalD(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["final"]
    answer: str = Field(min_length=1)


DECISION = Annotated[Union[ToolD, FinalD], Field(discriminator="kind")]

DECISION_SCHEMA = {
    "$defs": {
        "call": {
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1}, "arguments": {"type": "object"}},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
    },
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "kind": {"const": "tool"},
                "calls": {"type": "array", "minItems": 1, "maxItems": 4, "items": {"$ref": "#/$defs/call"}},
            },
            "required": ["kind", "calls"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"kind": {"const": "final"}, "answer": {"type": "string", "minLength": 1}},
            "required": ["kind", "answer"],
            "additionalProperties": False,
        },
    ],
}

BOTH = pytest.mark.parametrize("spec", [Args, ARGS_SCHEMA], ids=["pydantic", "jsonschema"])
UNION = pytest.mark.parametrize("spec", [DECISION, DECISION_SCHEMA], ids=["pydantic", "jsonschema"])


def _issues(spec: Any, value: Any, root: str = "$") -> set[tuple[str, str]]:
    with pytest.raises(SchemaError) as info:
        Schema.of(spec).validate(value, root=root)
    error = info.value
    assert error.code == "SCHEMA_MISMATCH" and error.layer == "schema"
    for issue in error.issues:
        assert set(issue) == {"path", "code", "expected"}
        assert issue["code"] in ISSUE_CODES
    return {(i["path"], i["code"]) for i in error.issues}


@BOTH
def test_a_matching_value_passes(spec: Any) -> None:
    value = {"path": "a", "count": 2, "note": None}
    result = Schema.of(spec).validate(value)
    assert (result.model_dump() if isinstance(result, BaseModel) else result) == value


@BOTH
@pytest.mark.parametrize("count", ["1", True, 1.0, 1.5, None])
def test_no_coercion_to_integer(spec: Any, count: Any) -> None:
    assert _issues(spec, {"path": "a", "count": count, "note": None}) == {("$.count", "type")}


@BOTH
def test_unknown_fields_are_rejected_where_the_object_is_closed(spec: Any) -> None:
    value = {"path": "a", "count": 1, "note": None, "toolNmae": "x"}
    assert _issues(spec, value) == {("$.toolNmae", "unexpected")}


def test_objects_are_closed_by_default() -> None:
    spec = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert _issues(spec, {"a": 1, "b": 2}) == {("$.b", "unexpected")}


def test_an_explicit_opt_out_keeps_extra_fields() -> None:
    spec = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert Schema(spec, closed=False).validate({"a": 1, "b": 2}) == {"a": 1, "b": 2}
    assert Schema.of({**spec, "additionalProperties": True}).validate({"a": 1, "b": 2}) == {"a": 1, "b": 2}
    assert Schema.of({"type": "object"}).validate({"b": 2}) == {"b": 2}  # a free-form map declares no fields


@BOTH
def test_null_and_missing_differ(spec: Any) -> None:
    assert _issues(spec, {"path": "a", "count": 1}) == {("$.note", "missing")}
    assert Schema.of(spec).validate({"path": "a", "count": 1, "note": None}) is not None
    assert _issues(spec, {"path": None, "count": 1, "note": None}) == {("$.path", "type")}


@BOTH
def test_paths_carry_the_root(spec: Any) -> None:
    got = _issues(spec, {"path": 1, "count": 1, "note": None}, root="$.calls[0].arguments")
    assert got == {("$.calls[0].arguments.path", "type")}


@UNION
def test_the_union_accepts_both_variants(spec: Any) -> None:
    schema = Schema.of(spec)
    schema.validate({"kind": "tool", "calls": [{"name": "search", "arguments": {"q": "x"}}]})
    schema.validate({"kind": "final", "answer": "done"})


@UNION
def test_a_wrong_tag_is_a_discriminator_issue(spec: Any) -> None:
    assert _issues(spec, {"kind": "both", "answer": "x"}) == {("$.kind", "discriminator")}


@UNION
def test_errors_inside_the_chosen_variant(spec: Any) -> None:
    value = {"kind": "tool", "calls": [{"name": "", "arguments": {}}, {"name": "x", "arguments": []}]}
    assert _issues(spec, value) == {("$.calls[0].name", "too_short"), ("$.calls[1].arguments", "type")}
    assert _issues(spec, {"kind": "tool", "calls": []}) == {("$.calls", "too_short")}
    assert _issues(spec, {"kind": "final"}) == {("$.answer", "missing")}
    assert _issues(spec, {"kind": "final", "answer": "a", "calls": []}) == {("$.calls", "unexpected")}


def test_a_missing_tag() -> None:
    assert _issues(DECISION, {"answer": "x"}) == {("$.kind", "missing")}


def test_odd_keys_are_quoted_in_paths() -> None:
    assert json_path(["a b", 0, "c", "é", 'q"']) == '$["a b"][0].c["é"]["q\\""]'
    schema = {"type": "object", "properties": {"a b": {"type": "integer"}}}
    assert _issues(schema, {"a b": "x"}) == {('$["a b"]', "type")}


def test_expected_values_are_given() -> None:
    with pytest.raises(SchemaError) as info:
        Schema.of({"enum": ["a", "b"]}).validate("c")
    assert info.value.issues[0]["expected"] == '"a" or "b"'
    with pytest.raises(SchemaError) as info:
        Schema.of(Args).validate({"path": "a", "count": "1", "note": None})
    assert info.value.issues[0]["expected"] == "integer"
    assert info.value.hint and "$.count" in info.value.hint


@pytest.mark.parametrize(
    ("schema", "value", "code"),
    [
        ({"type": "string", "maxLength": 2}, "abc", "too_long"),
        ({"type": "integer", "minimum": 1}, 0, "range"),
        ({"type": "string", "pattern": "^a"}, "b", "pattern"),
        ({"const": 1}, 2, "enum"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, None, "type"),
        ({"not": {"type": "string"}}, "x", "invalid"),
        ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1, "multiple_match"),
        ({"type": "object", "properties": {"a": False}}, {"a": 1}, "unexpected"),
    ],
)
def test_json_schema_issue_codes(schema: dict[str, Any], value: Any, code: str) -> None:
    assert {c for _, c in _issues(schema, value)} == {code}


def test_issues_are_bounded() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    with pytest.raises(SchemaError) as info:
        Schema.of(schema).validate(["x"] * 100)
    assert len(info.value.issues) == MAX_ISSUES


def test_a_broken_schema_fails_at_compile_time() -> None:
    with pytest.raises(jsonschema.SchemaError):
        Schema({"type": "integr"})


def test_schema_of_is_idempotent_and_reports_its_json_schema() -> None:
    schema = Schema.of(Args)
    assert Schema.of(schema) is schema
    assert schema.json_schema()["properties"]["count"]["type"] == "integer"
    assert Schema.of(ARGS_SCHEMA).json_schema() == ARGS_SCHEMA
    assert Schema.of(ARGS_SCHEMA).kind == "json_schema" and schema.kind == "pydantic"


def test_pydantic_validates_the_original_text_strictly() -> None:
    from typing import Tuple

    schema = Schema.of(Tuple[int, int])
    assert schema.validate([1, 2], text="[1, 2]") == (1, 2)
    with pytest.raises(SchemaError):
        schema.validate(["1", 2], text='["1", 2]')


def test_older_drafts_named_by_dollar_schema_are_honoured() -> None:
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "integer"}
    assert _issues(draft7, True) == {("$", "type")}
    assert Schema.of(draft7).validate(3) == 3


@pytest.mark.parametrize(
    ("schema", "value", "paths"),
    [
        ({"type": "object", "properties": {"a": False}}, {"a": 1}, ["$.a"]),
        ({"type": "object", "patternProperties": {"^x": False}}, {"xy": 1, "b": 2}, ["$.xy"]),
        ({"type": "array", "prefixItems": [{}], "items": False}, [1, 2, 3], ["$[1]", "$[2]"]),
        ({"type": "array", "prefixItems": [{}, False]}, [1, 2], ["$[1]"]),
        ({"$defs": {"never": False}, "properties": {"b": {"$ref": "#/$defs/never"}}}, {"b": 2}, ["$.b"]),
        ({"properties": {"c": {"allOf": [{}, False]}}}, {"c": 0}, ["$.c"]),
        ({"type": "object", "dependentSchemas": {"a": {"properties": {"b": False}}}}, {"a": 1, "b": 2}, ["$.b"]),
        ({"type": "object", "propertyNames": {"not": {}}}, {"k": 1}, ["$"]),
    ],
)
def test_a_false_subschema_is_reported_where_it_applies(schema: dict[str, Any], value: Any, paths: list[str]) -> None:
    """``jsonschema`` names no member for a ``false`` subschema; the issue
    (and the repair hint built from it) must name the member it stands for."""
    with pytest.raises(SchemaError) as caught:
        Schema(schema, closed=False).validate(value, root="$")
    assert [i["path"] for i in caught.value.issues] == paths
    assert {(i["code"], i["expected"]) for i in caught.value.issues} == {
        ("unexpected", "nothing (the schema allows no value here)")
    }
    assert caught.value.path == paths[0]


def test_a_false_subschema_allows_what_it_allowed() -> None:
    schema = Schema({"type": "object", "properties": {"a": False, "b": {"type": "integer"}}}, closed=False)
    assert schema.validate({"b": 1}) == {"b": 1}
    assert schema.spec["properties"]["a"] is False  # the caller's schema is left as it was


NOT_JSON = [
    (math.nan, "$", "a finite number (JSON has no NaN or Infinity)"),
    ({"a": [1, math.inf]}, "$.a[1]", "a finite number (JSON has no NaN or Infinity)"),
    ({"a": 1, "b": {"c": -math.inf}}, "$.b.c", "a finite number (JSON has no NaN or Infinity)"),
    ({"a": {1, 2}}, "$.a", "a JSON value"),
    ({"a": 1, "b": object()}, "$.b", "a JSON value"),
    ({(1, 2): 1}, "$", "an object whose keys are strings"),
]


@pytest.mark.parametrize("spec", [dict, float, {"type": "object"}, {"type": "number"}, {}], ids=repr)
@pytest.mark.parametrize(("value", "path", "expected"), NOT_JSON, ids=[repr(v[0]) for v in NOT_JSON])
def test_a_value_json_cannot_hold_is_an_issue(spec: Any, value: Any, path: str, expected: str) -> None:
    """A Python value handed to a schema (a tool's result, a direct call) is
    validated as JSON: NaN, Infinity and non-JSON types are a typed issue at
    their place, never a bare ValueError or a pass."""
    with pytest.raises(SchemaError) as caught:
        Schema(spec).validate(value)
    assert caught.value.code == "SCHEMA_MISMATCH"
    assert caught.value.issues == ({"path": path, "code": "type", "expected": expected},)


class _Unlisted(dict):  # type: ignore[type-arg]
    """A mapping ``json.dumps`` cannot write (its ``items`` fails), though
    every key and value in it is JSON."""

    def items(self) -> Any:
        raise ValueError("no items here")


def test_a_value_json_refuses_for_another_reason_is_still_an_issue() -> None:
    with pytest.raises(SchemaError) as caught:
        Schema({"type": "object"}).validate({"a": _Unlisted(b=1)})
    assert caught.value.issues == ({"path": "$", "code": "type", "expected": "a JSON value"},)


@pytest.mark.parametrize(
    ("schema", "value", "path"),
    [
        ({"type": "array", "items": {"properties": {"a": False}}}, [{"a": 1}], "$[0].a"),
        (
            {"if": {"required": ["b"]}, "then": {"properties": {"b": {"properties": {"c": False}}}}},
            {"b": {"c": 1}},
            "$.b.c",
        ),
        ({"type": "object", "additionalProperties": {"properties": {"a": False}}}, {"x": {"a": 1}}, "$.x.a"),
    ],
)
def test_a_false_subschema_deep_in_another_is_reported_where_it_applies(
    schema: dict[str, Any], value: Any, path: str
) -> None:
    with pytest.raises(SchemaError) as caught:
        Schema(schema, closed=False).validate(value)
    assert [(i["path"], i["code"]) for i in caught.value.issues] == [(path, "unexpected")]


class _Aliased(BaseModel):
    model_config = ConfigDict(serialize_by_alias=True, populate_by_name=True)
    file_path: str = Field(alias="filePath")


def test_a_model_that_dumps_by_alias_is_dumped_by_field_name() -> None:
    """The executor gets the arguments by field name whatever the model's own
    serialisation setting says."""
    schema = Schema(_Aliased, closed=False)
    assert schema.dump(schema.validate({"filePath": "a.txt"})) == {"file_path": "a.txt"}
