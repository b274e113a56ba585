"""Schema issues as a caller reads them: for each JSON Schema keyword and each
Pydantic error the whole issue (path, code, expected), the issues in path
order, the error built from them (message, path of the first, a hint of the
first three), and a failed ``oneOf`` narrowed to the alternative meant."""

from __future__ import annotations

import uuid
from typing import Any, Union

import pytest

from decisions import Schema, SchemaError
from decisions.validate._issues import schema_mismatch


def issues(spec: Any, value: Any, **options: Any) -> list[dict[str, str]]:
    with pytest.raises(SchemaError) as info:
        Schema(spec, **options).validate(value)
    error = info.value
    assert (error.code, error.message) == ("SCHEMA_MISMATCH", "the value does not match the schema")
    assert error.path == error.issues[0]["path"]
    assert error.hint == "; ".join(f"{i['path']}: {i['code']} (expected {i['expected']})" for i in error.issues[:3])
    return list(error.issues)


def one(path: str, code: str, expected: str) -> list[dict[str, str]]:
    return [{"path": path, "code": code, "expected": expected}]


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        (
            {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]},
            {"b": 1},
            one("$.a", "missing", "a value (the field is required)"),
        ),
        ({"type": ["string", "null"]}, 1, one("$", "type", "string or null")),
        ({"type": "string"}, 1, one("$", "type", "string")),
        ({"const": "é"}, 1, one("$", "enum", '"é"')),
        ({"enum": ["é", 2]}, 1, one("$", "enum", '"é" or 2')),
        ({"minLength": 3}, "ab", one("$", "too_short", "at least 3 characters")),
        ({"maxItems": 1}, [1, 2], one("$", "too_long", "at most 1 items")),
        ({"minProperties": 2}, {"a": 1}, one("$", "too_short", "at least 2 members")),
        ({"minimum": 5}, 1, one("$", "range", ">= 5")),
        ({"exclusiveMaximum": 1}, 1, one("$", "range", "< 1")),
        ({"multipleOf": 2}, 3, one("$", "range", "a multiple of 2")),
        ({"pattern": "^a"}, "b", one("$", "pattern", "a string matching ^a")),
        ({"allOf": [False]}, 1, one("$", "unexpected", "nothing (the schema allows no value here)")),
        ({"not": {}}, 1, one("$", "unexpected", "nothing (the schema allows no value here)")),
        ({"not": {"type": "string"}}, "a", one("$", "invalid", "'a' should not be valid under {'type': 'string'}")),
        ({"oneOf": [{}, {}]}, 1, one("$", "multiple_match", "exactly one alternative to match")),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, None, one("$", "type", "string")),
    ],
)
def test_each_keyword_gives_its_whole_issue(spec: dict[str, Any], value: Any, expected: list[dict[str, str]]) -> None:
    assert issues(spec, value) == expected


def test_an_extra_field_is_named_and_a_pattern_property_is_not_extra() -> None:
    spec = {"properties": {"a": {}}, "patternProperties": {"^x_": {}}, "additionalProperties": False}
    assert issues(spec, {"a": 1, "x_1": 2, "zz": 3, "yy": 4}) == [
        {"path": "$.zz", "code": "unexpected", "expected": "no such field"},
        {"path": "$.yy", "code": "unexpected", "expected": "no such field"},
    ]
    composed = {"properties": {"a": {}}, "allOf": [{}], "unevaluatedProperties": False}
    assert issues(composed, {"a": 1, "zz": 3}) == one("$.zz", "unexpected", "no such field")
    # a field declared by a part only is evaluated, so not extra
    parts = {"allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False}
    assert issues(parts, {"a": 1, "zz": 3}) == one("$.zz", "unexpected", "no such field")
    # a field a pattern admits is not extra, even when the message quotes the pattern as it
    spec = {"patternProperties": {"x": {}}, "additionalProperties": False}
    assert issues(spec, {"x": 1, "zz": 2}) == one("$.zz", "unexpected", "no such field")


def test_issues_come_in_path_order_then_by_keyword() -> None:
    spec = {"properties": {"b": {"type": "string"}, "a": {"type": "string"}}}
    assert [i["path"] for i in issues(spec, {"b": 1, "a": 1})] == ["$.a", "$.b"]
    spec = {"properties": {"a": {"minimum": 5}}, "required": ["z"]}
    assert issues(spec, {"a": 1}) == [
        {"path": "$.z", "code": "missing", "expected": "a value (the field is required)"},
        {"path": "$.a", "code": "range", "expected": ">= 5"},
    ]
    # one place, two keywords: by keyword
    spec = {"type": "integer", "enum": ["x"]}
    assert [i["code"] for i in issues(spec, "y")] == ["enum", "type"]


# ---------------------------------------------------------------- oneOf / anyOf


def _tagged(tag: Any, **extra: Any) -> dict[str, Any]:
    return {"properties": {"k": tag, **extra}, "required": ["k"]}


def test_a_wrong_tag_lists_every_allowed_tag() -> None:
    spec = {"oneOf": [_tagged({"const": "é"}), _tagged({"enum": ["b", "c"]})]}
    assert issues(spec, {"k": "z"}, closed=False) == one("$.k", "discriminator", '"é" or "b" or "c"')


def test_a_wrong_tag_lists_string_constants_whole() -> None:
    spec = {"oneOf": [_tagged({"const": "ab"}), _tagged({"const": "cd"})]}
    assert issues(spec, {"k": "z"}, closed=False) == one("$.k", "discriminator", '"ab" or "cd"')


def test_a_wrong_tag_lists_the_tags_of_alternatives_behind_refs() -> None:
    spec = {
        "$defs": {"A": _tagged({"const": "a"}), "B": {"allOf": [_tagged({"const": "b"})]}},
        "oneOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}],
    }
    assert issues(spec, {"k": "z"}, closed=False) == one("$.k", "discriminator", '"a" or "b"')
    nested = {"$defs": spec["$defs"], "items": {"oneOf": spec["oneOf"]}}
    assert issues(nested, [{"k": "z"}], closed=False) == one("$[0].k", "discriminator", '"a" or "b"')


def test_the_alternative_the_tag_chose_gives_its_errors() -> None:
    spec = {"oneOf": [_tagged({"const": "a"}, v={"type": "string"}), _tagged({"const": "b"})]}
    assert issues(spec, {"k": "a", "v": 1}, closed=False) == one("$.v", "type", "string")


def test_one_alternative_alone_gives_the_best_match() -> None:
    spec = {"oneOf": [{"properties": {"a": {"type": "string"}, "b": {"type": "string"}}}]}
    assert issues(spec, {"a": 1, "b": 2}, closed=False) == one("$.b", "type", "string")


def test_a_tag_with_untagged_alternatives_beside_is_not_a_discriminator() -> None:
    spec = {"oneOf": [_tagged({"const": "a"}), {"type": "string"}, {"type": "integer"}]}
    assert issues(spec, {"k": "z"}, closed=False) == one("$", "type", "string")


# ---------------------------------------------------------------- Pydantic


def test_an_error_type_without_a_row_is_invalid_with_pydantics_message() -> None:
    assert issues(uuid.UUID, "x") == one(
        "$", "invalid", "Input should be a valid UUID, invalid character: found `x` at 0"
    )


def test_a_union_variant_name_is_not_a_path_step() -> None:
    assert issues(Union[list[int], str], [1, "x"]) == [
        {"path": "$[1]", "code": "type", "expected": "integer"},
        {"path": "$", "code": "type", "expected": "string"},
    ]


def test_a_missing_tuple_item_is_reported_at_the_tuple() -> None:
    assert issues(tuple[int, int], [1]) == one("$", "missing", "a value (the field is required)")


# ---------------------------------------------------------------- the error


def test_the_error_names_the_first_issue_and_hints_the_first_three() -> None:
    found = [{"path": f"$.a{i}", "code": "type", "expected": "string"} for i in range(4)]
    error = schema_mismatch(found, "four wrong")
    assert (error.message, error.path) == ("four wrong", "$.a0")
    assert error.hint == "; ".join(f"$.a{i}: type (expected string)" for i in range(3))
    assert schema_mismatch(found).message == "the value does not match the schema"
    empty = schema_mismatch([])
    assert (empty.path, empty.issues, empty.hint) == (None, (), "")
