"""The JSON Schema validator choice, measured: ``jsonschema`` alone (the
schema layer's reference, with its strict integer check and the issues it
writes), ``Schema`` as routed (``jsonschema-rs`` says "valid", ``jsonschema``
writes the issues of an invalid value), ``fastjsonschema`` and
``jsonschema-rs``, side by side on a tool-argument schema and a decision
union, for a valid value and an invalid one. The alternatives are measured
only when installed (``pip install fastjsonschema jsonschema-rs``).

Run: ``python -m pytest benches/bench_schema.py --benchmark-only``
(``--benchmark-group-by=param:case`` puts each case's validators side by side).
"""

from __future__ import annotations

import importlib.util
from typing import Any, Callable

import pytest

from decisions import Schema, SchemaError
from decisions.validate._issues import error_order, js_issues

WRITE_FILE = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "maxLength": 4096},
        "content": {"type": "string", "maxLength": 4_194_304},
        "mode": {"enum": ["create", "overwrite", "append"]},
        "encoding": {"type": "string"},
        "make_dirs": {"type": "boolean"},
        "line_endings": {"enum": ["lf", "crlf"]},
    },
    "required": ["path", "content", "mode"],
    "additionalProperties": False,
}
DECISION = {
    "$defs": {
        "call": {
            "type": "object",
            "properties": {
                "call_id": {"type": "string", "minLength": 1, "maxLength": 128},
                "name": {"type": "string", "minLength": 1, "maxLength": 128},
                "arguments": {"type": "object"},
            },
            "required": ["call_id", "name", "arguments"],
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
CASES: dict[str, tuple[dict[str, Any], Any]] = {
    "write_file-valid": (
        WRITE_FILE,
        {"path": "src/a.py", "content": "x = 1\n" * 700, "mode": "create", "make_dirs": True},
    ),
    "write_file-invalid": (WRITE_FILE, {"path": "", "content": 3, "mode": "replace", "extra": 1}),
    "decision-valid": (
        DECISION,
        {
            "kind": "tool",
            "calls": [{"call_id": f"c{i}", "name": "read_file", "arguments": {"path": f"{i}.py"}} for i in range(4)],
        },
    ),
    "decision-invalid": (DECISION, {"kind": "tool", "calls": [{"call_id": "", "name": "x", "arguments": []}]}),
}


def _schema(schema: dict[str, Any]) -> Callable[[Any], Any]:
    compiled = Schema(schema)
    return lambda value: compiled.issues(value)


def _jsonschema(schema: dict[str, Any]) -> Callable[[Any], Any]:
    compiled = Schema(schema)._compiled
    assert compiled is not None
    reference = compiled.reference
    return lambda value: [i for e in sorted(reference.iter_errors(value), key=error_order) for i in js_issues(e, "$")]


def _fastjsonschema(schema: dict[str, Any]) -> Callable[[Any], Any]:
    import fastjsonschema

    validate = fastjsonschema.compile(schema)

    def run(value: Any) -> Any:
        try:
            return validate(value)
        except fastjsonschema.JsonSchemaValueException as error:
            return error

    return run


def _jsonschema_rs(schema: dict[str, Any]) -> Callable[[Any], Any]:
    import jsonschema_rs

    validator = jsonschema_rs.Draft202012Validator(schema)
    return lambda value: list(validator.iter_errors(value))


VALIDATORS = {
    "Schema": _schema,
    "jsonschema": _jsonschema,
    "fastjsonschema": _fastjsonschema,
    "jsonschema-rs": _jsonschema_rs,
}
MODULES = {
    "Schema": "decisions",
    "jsonschema": "jsonschema",
    "fastjsonschema": "fastjsonschema",
    "jsonschema-rs": "jsonschema_rs",
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("validator", list(VALIDATORS))
def test_validate(benchmark: Any, validator: str, case: str) -> None:
    if importlib.util.find_spec(MODULES[validator]) is None:
        pytest.skip(f"{validator} is not installed")
    schema, value = CASES[case]
    run = VALIDATORS[validator](schema)
    benchmark.group = f"schema validators: {case}"
    benchmark.extra_info["baseline"] = validator == "jsonschema"
    outcome = benchmark(run, value)
    if validator == "Schema":
        assert bool(outcome[0]) == case.endswith("invalid")
    elif validator == "jsonschema":
        assert bool(outcome) == case.endswith("invalid")


@pytest.mark.parametrize("case", list(CASES))
def test_the_strict_layer_reports_issues(case: str) -> None:
    """Not a timing: the layer measured above is the one that reports issues."""
    schema, value = CASES[case]
    if case.endswith("invalid"):
        with pytest.raises(SchemaError):
            Schema(schema).validate(value)
    else:
        assert Schema(schema).validate(value) == value
