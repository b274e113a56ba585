"""The Schema object as a caller uses it: its ``closed`` flag (also through
``Schema.of``), a TypeAdapter taken as it is, the closing of Pydantic models,
the JSON text validated in place of the value, the depth bound read from the
text's brackets, the issue bound, ``dump`` by field name, and a value the fast
validator cannot take left to the reference."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from decisions import Schema, SchemaError
from decisions.validate.schema import MAX_ISSUES

TOO_DEEP = [{"path": "$", "code": "too_deep", "expected": "at most 128 levels of nesting"}]


class Count(BaseModel):
    count: int


class Loose(BaseModel):
    value: Any


class Aliased(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    the_name: str = Field(alias="theName")


def test_closed_is_kept_and_passed_through_of() -> None:
    spec = {"properties": {"a": {}}}
    assert Schema(spec).closed is True
    assert Schema(spec, closed=False).closed is False
    assert Schema.of(spec, closed=False).closed is False
    assert Schema.of(spec, closed=False).validate({"a": 1, "b": 2}) == {"a": 1, "b": 2}
    same = Schema(spec)
    assert Schema.of(same) is same


def test_a_type_adapter_is_taken_as_it_is() -> None:
    adapter = TypeAdapter(list[int])
    schema = Schema(adapter)
    assert schema.validate([1, 2]) == [1, 2]
    with pytest.raises(SchemaError):
        schema.validate(["1"])


def test_a_pydantic_model_is_closed_unless_asked_not_to_be() -> None:
    with pytest.raises(SchemaError) as info:
        Schema(Count).validate({"count": 1, "extra": 2})
    assert list(info.value.issues) == [{"path": "$.extra", "code": "unexpected", "expected": "no such field"}]
    assert Schema(Count, closed=False).validate({"count": 1, "extra": 2}) == Count(count=1)


def test_the_text_is_what_pydantic_validates() -> None:
    schema = Schema(Count)
    with pytest.raises(SchemaError) as info:
        schema.validate({"count": 1}, text='{"count": "1"}')
    assert list(info.value.issues) == [{"path": "$.count", "code": "type", "expected": "integer"}]
    assert schema.validate({"count": 1}, text='{"count": 2}') == Count(count=2)
    assert schema.issues({"count": 1}, text='{"count": "1"}')[0][0]["code"] == "type"
    # without a text the value is written as JSON, non-ASCII as it is
    assert Schema(Loose).validate({"value": "é"}) == Loose(value="é")


def test_a_deep_value_is_too_deep_whatever_its_text_holds() -> None:
    text = '{"value":' * 200 + "1" + "}" * 200
    value = json.loads(text)
    assert Schema(Loose).issues(value, text=text) == (TOO_DEEP, None)
    assert Schema(Loose).issues(value) == (TOO_DEEP, None)
    listed = "[" * 200 + "]" * 200
    assert Schema(Loose).issues({"value": json.loads(listed)}, text='{"value":' + listed + "}") == (TOO_DEEP, None)
    # as deep as the bound: validated
    ok = '{"value":' * 127 + "1" + "}" * 127
    assert Schema(Loose).issues(json.loads(ok), text=ok)[0] == []


def test_issues_stop_at_the_bound() -> None:
    found, validated = Schema({"items": {"type": "string"}}).issues(list(range(MAX_ISSUES + 8)))
    assert len(found) == MAX_ISSUES and validated is None
    assert found[-1]["path"] == f"$[{MAX_ISSUES - 1}]"


def test_dump_is_by_field_name_in_json_mode() -> None:
    schema = Schema(Aliased)
    assert schema.dump(Aliased(theName="x")) == {"the_name": "x"}
    assert Schema(TypeAdapter(tuple[int, ...])).dump((1, 2)) == [1, 2]
    value = {"a": (1,)}
    assert Schema({"type": "object"}).dump(value) is value


def test_a_value_the_fast_validator_cannot_take_is_left_to_the_reference() -> None:
    schema = Schema({"type": "string", "maxLength": 1})
    assert schema.validator == "jsonschema-rs"
    with pytest.raises(SchemaError) as info:
        schema.validate("ab\ud800")
    assert list(info.value.issues) == [{"path": "$", "code": "too_long", "expected": "at most 1 characters"}]
    assert schema.validate("\ud800") == "\ud800"
