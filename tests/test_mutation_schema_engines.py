"""Which validator answers, as a caller can see it: the reason a schema is
left to ``jsonschema`` alone (each rule of the agreed subset), what a value
must be for the fast validator to be asked, strict integers in every draft,
and the compiled-schema cache (shared by digest, bounded, a non-JSON schema
compiled each time)."""

from __future__ import annotations

from typing import Any

import pytest

from decisions import Schema, SchemaError
from decisions.validate import _engines
from decisions.validate._engines import NOT_PLAIN, PLAIN, TOO_DEEP, compile_json_schema, fast_refusal, plain_json, scan


@pytest.fixture(autouse=True)
def cold_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test compiles afresh: a schema or validator class cached by an
    earlier test (or by the process a mutation run forks from) would hide
    what compiling does."""
    monkeypatch.setattr(_engines, "_CACHE", {})
    monkeypatch.setattr(_engines, "_STRICT_CLASSES", {})


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (True, "not an object schema"),
        ({"$schema": "http://json-schema.org/draft-07/schema#"}, "draft 'http://json-schema.org/draft-07/schema#'"),
        ({"$schema": "https://json-schema.org/draft/2020-12/schema#"}, None),
        ({"$schema": "https://json-schema.org/draft/2020-12/schema"}, None),
        ({"maximum": 2**64}, "a number beyond 64 bits or not finite"),
        ({"minimum": -(2**63) - 1}, "a number beyond 64 bits or not finite"),
        ({"minimum": -(2**63), "maximum": 2**64 - 1}, None),
        ({"maximum": float("inf")}, "a number beyond 64 bits or not finite"),
        ({"maximum": 1.5}, None),
        ({"items": 3}, "a subschema that is not an object or a boolean"),
        ({"items": True, "not": False}, None),
        ({"items": {"$schema": "x"}}, "an embedded $schema"),
        ({"$anchor": "a", "$id": "b"}, "keyword $anchor"),
        ({"$defs": {"a": {"dependencies": {}}}}, "keyword dependencies"),
        ({"prefixItems": [True, {"$id": "x"}]}, "keyword $id"),
        ({"$ref": 5}, "$ref 5"),
        ({"$ref": "#"}, None),
        ({"$ref": "#/$defs/a.b-c_1", "$defs": {"a.b-c_1": {}}}, None),
        ({"$ref": "#/$defs/a/b"}, "$ref '#/$defs/a/b'"),
        ({"$ref": "other.json"}, "$ref 'other.json'"),
        ({"pattern": "^a{2,3}\\.b[x-z]*(c|d)+?"}, None),
        ({"pattern": "^\\d+\\.\\w*[\\D\\W]$"}, None),  # ECMA-262 in both validators
        ({"pattern": "\\s"}, "pattern '\\\\s'"),  # left to the reference
        ({"pattern": "\\bx"}, "pattern '\\\\bx'"),  # Unicode's letters in jsonschema-rs
        ({"pattern": "a\\Z"}, "pattern 'a\\\\Z'"),  # not ECMA-262
        ({"pattern": "(?i)a"}, "pattern '(?i)a'"),
        ({"pattern": "[]"}, "pattern '[]'"),
        ({"pattern": "[^]"}, "pattern '[^]'"),
        ({"pattern": "(a"}, "pattern '(a'"),
        ({"pattern": 3}, "pattern 3"),
        ({"multipleOf": 0.5}, "a multipleOf that is not an integer"),
        ({"multipleOf": 2}, None),
        ({"allOf": {}}, "allOf that is not a list"),
        ({"allOf": [{"pattern": "\\s"}, True]}, "pattern '\\\\s'"),  # a boolean part does not end the walk
        ({"properties": {"\\d": {}}}, None),  # a property name is not a pattern
        ({"allOf": [{"pattern": "\\S"}]}, "pattern '\\\\S'"),
        ({"anyOf": [{}, {"oneOf": [{"pattern": "\\s"}]}]}, "pattern '\\\\s'"),
        ({"properties": []}, "properties that is not an object"),
        ({"patternProperties": {"\\s": {}}}, "a patternProperties pattern"),
        ({"patternProperties": {"^\\d$": {}}}, None),
        ({"patternProperties": {"^x": {"pattern": "\\s"}}}, "pattern '\\\\s'"),
        ({"properties": {"a": {"pattern": "\\s"}}}, "pattern '\\\\s'"),
        ({"dependentSchemas": {"a": {"pattern": "\\s"}}}, "pattern '\\\\s'"),
        ({"not": {"pattern": "\\s"}}, "pattern '\\\\s'"),
        ({"if": {}, "then": {}, "else": {"pattern": "\\s"}}, "pattern '\\\\s'"),
        ({"contains": {"pattern": "\\s"}}, "pattern '\\\\s'"),
        ({"propertyNames": {"pattern": "\\s"}}, "pattern '\\\\s'"),
        ({"unevaluatedItems": {"pattern": "\\s"}}, "pattern '\\\\s'"),
        ({"contentSchema": {"pattern": "\\s"}}, "pattern '\\\\s'"),
    ],
)
def test_why_a_schema_is_left_to_the_reference(schema: Any, reason: str | None) -> None:
    assert fast_refusal(schema) == reason


@pytest.mark.parametrize(
    ("value", "integers", "bound", "found"),
    [
        ({"a": [1, 2.5, "x", None, True]}, True, 5, PLAIN),
        ({1: 2}, False, 5, NOT_PLAIN),
        (2**64, False, 5, NOT_PLAIN),
        (2**64 - 1, False, 5, PLAIN),
        (-(2**63), False, 5, PLAIN),
        (-(2**63) - 1, False, 5, NOT_PLAIN),
        (1.0, True, 5, NOT_PLAIN),  # the fast one counts 1.0 as an integer
        (1.0, False, 5, PLAIN),
        (float("nan"), False, 5, NOT_PLAIN),
        (float("-inf"), False, 5, NOT_PLAIN),
        ((1,), False, 5, NOT_PLAIN),
        (b"x", False, 5, NOT_PLAIN),
        ([[1]], False, 1, TOO_DEEP),
        ([[1]], False, 2, PLAIN),
        ({"a": {}}, False, 1, TOO_DEEP),
        ({"a": {}}, False, 2, PLAIN),
        ([[{1: 2}]], False, 1, TOO_DEEP),
    ],
)
def test_what_the_fast_validator_may_be_asked(value: Any, integers: bool, bound: int, found: int) -> None:
    assert scan(value, integers, bound) == found


def test_plain_json_has_no_depth_bound() -> None:
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    assert plain_json(deep, False) is True
    assert plain_json([1.0], True) is False


def test_a_float_with_no_fraction_is_not_an_integer_when_the_schema_names_integers() -> None:
    for spec in ({"type": "integer"}, {"anyOf": [{"type": ["integer", "null"]}]}):
        schema = Schema(spec)
        with pytest.raises(SchemaError) as info:
            schema.validate(1.0)
        assert info.value.issues[0]["code"] == "type"
        assert schema.validate(1) == 1
    with pytest.raises(SchemaError):
        Schema({"$schema": "http://json-schema.org/draft-07/schema#", "type": "integer"}).validate(True)
    assert Schema({"type": "number"}).validate(1.0) == 1.0


def test_the_compiled_schema_records_why_the_fast_validator_is_not_used() -> None:
    assert compile_json_schema({"pattern": "\\s", "title": "refused"}, True).refusal == "pattern '\\\\s'"
    assert compile_json_schema({"type": "string", "title": "admitted"}, True).refusal is None


def test_the_validator_in_use() -> None:
    assert Schema({"type": "string"}).validator == "jsonschema-rs"
    assert Schema({"pattern": "\\s"}).validator == "jsonschema"
    assert Schema(int).validator == "pydantic"


def test_one_compiled_schema_per_digest_and_closing() -> None:
    spec = {"properties": {"unique_to_this_test": {}}}
    first = compile_json_schema(spec, True)
    assert compile_json_schema(dict(spec), True) is first
    assert compile_json_schema(spec, False) is not first
    assert compile_json_schema(spec, False).applied == spec
    # not JSON (NaN): no schema, so nothing compiled or kept under a digest
    with pytest.raises(ValueError, match="a JSON Schema must be JSON"):
        Schema({"description": "x", "const": float("nan")})


def test_the_cache_is_bounded_oldest_first() -> None:
    first = compile_json_schema({"minimum": -1}, True)
    for i in range(_engines.CACHE_SIZE - 1):
        compile_json_schema({"minimum": i}, True)
    assert len(_engines._CACHE) == _engines.CACHE_SIZE
    assert compile_json_schema({"minimum": -1}, True) is first
    compile_json_schema({"minimum": -2}, True)
    assert len(_engines._CACHE) == _engines.CACHE_SIZE
    assert compile_json_schema({"minimum": -1}, True) is not first


def test_the_strict_class_is_built_once_per_draft() -> None:
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#"}
    first = _engines.strict_validator_class(draft7)
    assert _engines.strict_validator_class(draft7) is first
    assert first.TYPE_CHECKER.is_type(1, "integer") and not first.TYPE_CHECKER.is_type(True, "integer")
    assert not first.TYPE_CHECKER.is_type(1.0, "integer")
    assert _engines.strict_validator_class({}) is not first


def test_a_broken_schema_fails_when_compiled() -> None:
    import jsonschema

    with pytest.raises(jsonschema.SchemaError):
        compile_json_schema({"type": 5}, True)


def test_a_schema_is_compiled_from_a_copy_of_the_callers() -> None:
    for closed in (False, True):
        spec = {"properties": {"copied": {"type": "string"}}}
        schema = Schema(spec, closed=closed)
        spec["properties"]["copied"]["type"] = "integer"
        assert schema.validate({"copied": "x"}) == {"copied": "x"}


def test_a_lone_surrogate_in_a_schema_is_compiled() -> None:
    assert Schema({"const": "\ud800"}).validate("\ud800") == "\ud800"


def test_a_composed_object_is_closed_in_2020_12_and_refused_in_draft_7() -> None:
    composed = {"allOf": [{"properties": {"a": {}}}]}
    assert compile_json_schema(composed, True).applied == {**composed, "unevaluatedProperties": False}
    with pytest.raises(ValueError):
        compile_json_schema({"$schema": "http://json-schema.org/draft-07/schema#", **composed}, True)
