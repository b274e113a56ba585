"""The fast JSON Schema validator against the reference, over the official
JSON-Schema-Test-Suite's draft 2020-12 cases (tests/fixtures/json-schema-test-suite).

Every schema of the suite is compiled as written and closed. For each case:
the issues (codes and paths) and the verdict that :class:`Schema` gives are
those of the reference (``jsonschema`` alone); and for every schema routed to
``jsonschema-rs``, on every value it is asked about, its own verdict is the
reference's. Schemas outside the agreed subset are counted, not skipped
silently: the suite must keep most of its schemas on the fast path.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import pytest

from decisions import Schema
from decisions.validate._engines import fast_refusal, plain_json

SUITE = Path(__file__).parent / "fixtures" / "json-schema-test-suite" / "draft2020-12"


def suite_groups() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(SUITE.rglob("*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            yield f"{path.relative_to(SUITE)}: {group['description']}", group


GROUPS = list(suite_groups())


def reference_only(schema: Schema) -> Schema:
    """A copy of ``schema`` whose compiled form has no fast validator."""
    copy = Schema.__new__(Schema)
    for name in Schema.__slots__:
        object.__setattr__(copy, name, getattr(schema, name))
    assert schema._compiled is not None
    copy._compiled = dataclasses.replace(schema._compiled, fast=None, refusal="reference")
    return copy


def outcome(schema: Schema, value: Any) -> tuple[str, Any]:
    try:
        issues, validated = schema.issues(value)
    except Exception as error:  # the reference's own failures (an unresolvable remote $ref) must match too
        return "raises", type(error).__name__
    return "ok", (issues, validated)


def test_the_suite_is_there() -> None:
    assert len(GROUPS) > 400
    assert sum(len(g["tests"]) for _, g in GROUPS) > 1500


@pytest.mark.parametrize("closed", [False, True], ids=["as-written", "closed"])
def test_fast_path_agrees_with_the_reference(closed: bool) -> None:
    routed: Counter[str] = Counter()
    disagreements: list[str] = []
    for name, group in GROUPS:
        if not isinstance(group["schema"], dict):  # a boolean schema: Schema takes a dict or a Pydantic type
            routed["boolean schema"] += len(group["tests"])
            continue
        try:
            schema = Schema(group["schema"], closed=closed)
        except (jsonschema.SchemaError, ValueError, TypeError):
            routed["not compiled"] += len(group["tests"])
            continue
        reference = reference_only(schema)
        compiled = schema._compiled
        assert compiled is not None
        routed[schema.validator] += len(group["tests"])
        for test in group["tests"]:
            data = test["data"]
            if outcome(schema, data) != outcome(reference, data):
                disagreements.append(f"{name} / {test['description']}: issues differ")
            if compiled.fast is not None and plain_json(data, compiled.integers):
                expected = not reference.issues(data)[0]
                if compiled.fast.is_valid(data) != expected:
                    disagreements.append(f"{name} / {test['description']}: jsonschema-rs says {not expected}")
    assert not disagreements, "\n".join(disagreements)
    # most of the suite stays on the fast path, and some of it is left to the reference
    assert routed["jsonschema-rs"] > 3 * routed["jsonschema"] > 0, routed


def test_every_class_of_disagreement_is_kept_from_the_fast_path() -> None:
    """The classes where ``jsonschema-rs`` gives another verdict, each routed
    to the reference (at compile time or per value)."""
    refused = {
        "Unicode's white space": {"pattern": "^\\s+"},
        "Unicode's letters at a word boundary": {"pattern": "\\bid"},
        "a flag group": {"pattern": "(?i)abc"},
        "a pattern property": {"patternProperties": {"\\S": {"type": "string"}}},
        "draft 7's dependencies": {"dependencies": {"a": ["b"]}},
        "a fractional multipleOf": {"multipleOf": 0.5},
        "a remote $ref": {"$ref": "http://example.com/schema.json"},
        "a $ref into a property": {"$ref": "#/properties/a"},
        "a dynamic reference": {"$dynamicRef": "#items"},
        "a base URI": {"$id": "http://example.com/root.json"},
        "another draft": {"$schema": "http://json-schema.org/draft-07/schema#"},
        "a number beyond 64 bits": {"const": 2**70},
        "a nested one": {"properties": {"a": {"items": {"pattern": "\\s"}}}},
    }
    for what, schema in refused.items():
        assert fast_refusal(schema) is not None, what
    accepted = {"properties": {"pattern": {"type": "string", "pattern": "^[a-z_.-]+(/[a-z]+)*"}}, "required": ["x"]}
    assert fast_refusal(accepted) is None
    assert fast_refusal({"pattern": "^\\d+$", "patternProperties": {"^\\w+$": {}}}) is None  # ECMA-262 in both
    assert fast_refusal({"$defs": {"A": {"type": "integer"}}, "$ref": "#/$defs/A"}) is None
    # per value: only plain JSON, and no integral float where integers are typed
    assert plain_json({"a": [1, 2.5, "x", None, True]}, integers=True)
    for value in (1.0, [2.0], {"a": -0.0}):
        assert not plain_json(value, integers=True)
        assert plain_json(value, integers=False)
    for value in ((1, 2), {1: "a"}, 2**64, -(2**63) - 1, float("nan"), float("inf"), {"a": {"b": frozenset()}}):
        assert not plain_json(value, integers=False), value


def test_strict_integers_hold_on_the_fast_path() -> None:
    schema = Schema({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert schema.validator == "jsonschema-rs"
    assert schema.issues({"n": 3})[0] == []
    for value in (3.0, True, "3", 1e20):
        assert schema.issues({"n": value})[0] == [{"path": "$.n", "code": "type", "expected": "integer"}], value
    # a tuple is not an array to the reference, whatever the fast one would say
    array = Schema({"type": "array"})
    assert array.issues((1, 2))[0] == [{"path": "$", "code": "type", "expected": "array"}]
    # a lone surrogate cannot reach the fast one: the reference decides
    assert Schema({"type": "string", "maxLength": 1}).issues("\ud800")[0] == []


def test_a_schema_is_compiled_once_per_digest() -> None:
    spec = {"type": "object", "properties": {"a": {"type": "string"}}}
    same = json.loads(json.dumps(spec))  # equal, not the same object
    assert Schema(spec)._compiled is Schema(same)._compiled
    assert Schema(spec)._compiled is not Schema(spec, closed=False)._compiled
    assert Schema(spec)._compiled is not Schema({**spec, "required": ["a"]})._compiled
    # the cached form is a copy: changing the caller's dict afterwards changes nothing
    open_spec: dict[str, Any] = {"properties": {"a": {"type": "string"}}}
    schema = Schema(open_spec, closed=False)
    open_spec["properties"]["a"]["type"] = "integer"
    assert schema.issues({"a": "x"})[0] == []


def test_without_the_fast_validator_jsonschema_does_everything() -> None:
    """``jsonschema-rs`` not importable: every JSON Schema goes to ``jsonschema``,
    with the same verdicts and issues."""
    program = """
import json, sys
sys.modules["jsonschema_rs"] = None  # the import fails
from decisions import Schema
from decisions.validate import _engines as engines
assert engines.FAST_VALIDATOR is None
schema = Schema({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
print(json.dumps([schema.validator, schema.issues({"n": 1}), schema.issues({"n": 1.0}), schema.issues({})]))
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, check=True)
    validator, valid, wrong_type, missing = json.loads(out.stdout)
    assert validator == "jsonschema"
    assert valid == [[], {"n": 1}]
    assert wrong_type == [[{"path": "$.n", "code": "type", "expected": "integer"}], None]
    assert missing == [[{"path": "$.n", "code": "missing", "expected": "a value (the field is required)"}], None]
    here = Schema({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert [here.validator, *map(list, (here.issues({"n": 1}), here.issues({"n": 1.0}), here.issues({})))] == [
        "jsonschema-rs",
        valid,
        wrong_type,
        missing,
    ]


@pytest.mark.parametrize("depth", [127, 128, 129, 400])
def test_depth_is_bounded_the_same_on_both_paths(depth: int) -> None:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    schema = Schema({"type": ["object", "array"]})
    assert schema.validator == "jsonschema-rs"
    expected = outcome(reference_only(schema), value)
    assert outcome(schema, value) == expected
    too_deep = expected[1][0] == [{"path": "$", "code": "too_deep", "expected": "at most 128 levels of nesting"}]
    assert too_deep == (depth > 128)


@pytest.mark.parametrize(
    "spec",
    [
        {"properties": {"a": {"$ref": "http://127.0.0.1:9/schema.json"}}},  # remote
        {"properties": {"a": {"$ref": "other.json"}}},  # relative to no base: remote too
        {"properties": {"a": {"$ref": "#/$defs/missing"}}, "$defs": {"b": {}}},
        {"properties": {"a": {"$dynamicRef": "#meta"}}},  # no such anchor
        {"properties": {"a": {"$ref": "#/required"}}, "required": ["a"]},  # not a schema
        {"$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/nowhere"}}, "$ref": "#/$defs/x"},  # via a ref
        {"anyOf": [{"type": "string"}, {"$ref": "https://example.invalid/b.json"}]},  # met by some values only
    ],
)
def test_a_reference_that_does_not_resolve_offline_fails_when_the_schema_is_built(
    spec: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing is fetched, ever (the reference validator alone would fetch a
    remote ``$ref`` on every validation), and no validation meets a reference
    it cannot resolve: the schema is refused where it is built."""
    fetched: list[Any] = []
    monkeypatch.setattr("urllib.request.urlopen", lambda *args, **kwargs: fetched.append(args))
    with pytest.raises(ValueError, match=r"does not resolve|is not a schema"):
        Schema(spec).issues({"a": 1})
    assert fetched == []


def test_references_inside_the_schema_and_to_the_metaschemas_resolve() -> None:
    embedded = {
        "$defs": {
            "x": {
                "$id": "http://a.example/x",
                "properties": {"z": {"$ref": "#/$defs/q"}},
                "$defs": {"q": {"type": "integer"}},
            }
        },
        "properties": {
            "b": {"$ref": "http://a.example/x"},
            "s": {"$ref": "https://json-schema.org/draft/2020-12/schema"},
        },
    }
    schema = Schema(embedded, closed=False)
    assert schema.issues({"b": {"z": 1}, "s": {"type": "string"}}) == ([], {"b": {"z": 1}, "s": {"type": "string"}})
    assert schema.issues({"b": {"z": "1"}})[0] == [{"path": "$.b.z", "code": "type", "expected": "integer"}]
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"d": {"type": "integer"}}}
    assert Schema({**draft7, "properties": {"a": {"$ref": "#/definitions/d"}}}).issues({"a": 2})[0] == []
