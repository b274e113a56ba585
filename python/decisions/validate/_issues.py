"""Schema issues: the stable ``{path, code, expected}`` form of what a
validator found, the same whichever validator found it.

:data:`ISSUE_CODES` lists the codes. Pydantic's errors are mapped from their
``type`` and ``loc`` (:func:`pydantic_issues`); ``jsonschema``'s from the
keyword that failed (:func:`js_issues`), with ``oneOf``/``anyOf`` failures
narrowed to the alternative the value was meant for.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final, Iterable, Iterator, Mapping, Sequence

import jsonschema.exceptions
from pydantic import ValidationError

from ..errors import SchemaError, json_path
from ._engines import UnevaluatedError
from ._shapes import additional_names

__all__ = [
    "ISSUE_CODES",
    "MAX_ISSUES",
    "MAX_VALIDATION_DEPTH",
    "error_order",
    "issue",
    "js_issues",
    "pydantic_issues",
    "schema_mismatch",
]

#: Values nested deeper than this are not handed to a validator: both
#: Pydantic and ``jsonschema`` recurse once or more per level of the value,
#: so a deeper value (allowed by a raised ``Limits.max_depth``) is a
#: ``too_deep`` issue rather than a ``RecursionError``.
MAX_VALIDATION_DEPTH: Final = 128

#: The stable issue codes, and what each means.
ISSUE_CODES: Final[Mapping[str, str]] = {
    "missing": "a required field is absent",
    "unexpected": "a field the schema does not allow",
    "type": "the value has the wrong JSON type",
    "enum": "the value is not one of the allowed constants",
    "discriminator": "the tag field does not name a known variant",
    "too_short": "a string, array or object is below its minimum size",
    "too_long": "a string, array or object is above its maximum size",
    "range": "a number is outside its allowed range",
    "pattern": "a string does not match the required pattern",
    "format": "a string does not have the required format",
    "multiple_match": "the value matches more than one alternative where exactly one is allowed",
    "too_deep": f"the value nests deeper than {MAX_VALIDATION_DEPTH} levels, more than validation follows",
    "invalid": "the value breaks another rule of the schema",
}

#: At most this many issues are reported for one value.
MAX_ISSUES: Final = 32


def issue(root: str, parts: Iterable[str | int], code: str, expected: str) -> dict[str, str]:
    return {"path": json_path(parts, root), "code": code, "expected": expected}


def not_json(value: Any, root: str) -> list[dict[str, str]]:
    """One ``type`` issue at the first place in ``value`` (a Python value
    handed to a schema, not parsed from JSON text) that JSON cannot hold: a
    NaN or infinite float, a key or value of a non-JSON type; else at the root.
    Read in document order, without recursion (the caller bounds the depth)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, parts = stack.pop()
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, (str, int, float)) and key is not None:
                    return [issue(root, parts, "type", "an object whose keys are strings")]
            stack.extend((item[key], (*parts, str(key))) for key in reversed(list(item)))
        elif isinstance(item, (list, tuple)):
            stack.extend((member, (*parts, i)) for i, member in reversed(list(enumerate(item))))
        elif isinstance(item, float) and not math.isfinite(item):
            return [issue(root, parts, "type", "a finite number (JSON has no NaN or Infinity)")]
        elif not isinstance(item, (str, int, float)) and item is not None:
            return [issue(root, parts, "type", "a JSON value")]
    return [issue(root, (), "type", "a JSON value")]  # json.dumps refused it for a reason not found here


def schema_mismatch(issues: Sequence[Mapping[str, str]], message: str | None = None) -> SchemaError:
    """The ``SCHEMA_MISMATCH`` error for these issues (path of the first)."""
    shown = tuple(issues[:MAX_ISSUES])
    hint = "; ".join(f"{i['path']}: {i['code']} (expected {i['expected']})" for i in shown[:3])
    return SchemaError("SCHEMA_MISMATCH", message, path=shown[0]["path"] if shown else None, issues=shown, hint=hint)


# ---------------------------------------------------------------- Pydantic

_PYDANTIC_TYPES: Final[Mapping[str, tuple[str, str]]] = {
    "missing": ("missing", "a value (the field is required)"),
    "extra_forbidden": ("unexpected", "no such field"),
    "unexpected_keyword_argument": ("unexpected", "no such field"),
    "int_type": ("type", "integer"),
    "int_parsing": ("type", "integer"),
    "int_from_float": ("type", "integer"),
    "float_type": ("type", "number"),
    "float_parsing": ("type", "number"),
    "decimal_type": ("type", "number"),
    "string_type": ("type", "string"),
    "bool_type": ("type", "boolean"),
    "bool_parsing": ("type", "boolean"),
    "dict_type": ("type", "object"),
    "model_type": ("type", "object"),
    "model_attributes_type": ("type", "object"),
    "dataclass_type": ("type", "object"),
    "typed_dict_type": ("type", "object"),
    "list_type": ("type", "array"),
    "tuple_type": ("type", "array"),
    "set_type": ("type", "array"),
    "frozen_set_type": ("type", "array"),
    "none_required": ("type", "null"),
    "string_too_short": ("too_short", "at least {min_length} characters"),
    "string_too_long": ("too_long", "at most {max_length} characters"),
    "too_short": ("too_short", "at least {min_length} items"),
    "too_long": ("too_long", "at most {max_length} items"),
    "greater_than": ("range", "> {gt}"),
    "greater_than_equal": ("range", ">= {ge}"),
    "less_than": ("range", "< {lt}"),
    "less_than_equal": ("range", "<= {le}"),
    "multiple_of": ("range", "a multiple of {multiple_of}"),
    "finite_number": ("range", "a finite number"),
    "string_pattern_mismatch": ("pattern", "a string matching {pattern}"),
    "literal_error": ("enum", "{expected}"),
    "enum": ("enum", "{expected}"),
    "union_tag_invalid": ("discriminator", "{expected_tags}"),
    "union_tag_not_found": ("missing", "a {discriminator} tag"),
}


def _locate(value: Any, loc: Sequence[str | int]) -> list[str | int]:
    """The JSON path parts of a Pydantic ``loc``: union variant names and
    tags that Pydantic inserts are dropped by walking the actual value."""
    parts: list[str | int] = []
    current = value
    for position, part in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(current, dict) and isinstance(part, str) and (part in current or last):
            parts.append(part)
            current = current.get(part)
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            parts.append(part)
            current = current[part]
    return parts


def pydantic_issues(error: ValidationError, value: Any, root: str) -> list[dict[str, str]]:
    issues = []
    for err in error.errors(include_url=False):
        parts = _locate(value, err["loc"])
        code, template = _PYDANTIC_TYPES.get(err["type"], ("invalid", ""))
        ctx = err.get("ctx") or {}
        if err["type"].startswith("union_tag_") and isinstance(ctx.get("discriminator"), str):
            parts.append(ctx["discriminator"].strip("'"))
        try:
            expected = template.format(**ctx) if template else err["msg"]
        except (KeyError, IndexError, ValueError):
            expected = err["msg"]
        issues.append(issue(root, parts, code, expected))
    return issues


# ---------------------------------------------------------------- JSON Schema

_JS_SIZE: Final[Mapping[str, tuple[str, str]]] = {
    "minLength": ("too_short", "at least {} characters"),
    "maxLength": ("too_long", "at most {} characters"),
    "minItems": ("too_short", "at least {} items"),
    "maxItems": ("too_long", "at most {} items"),
    "minProperties": ("too_short", "at least {} members"),
    "maxProperties": ("too_long", "at most {} members"),
    "minimum": ("range", ">= {}"),
    "maximum": ("range", "<= {}"),
    "exclusiveMinimum": ("range", "> {}"),
    "exclusiveMaximum": ("range", "< {}"),
    "multipleOf": ("range", "a multiple of {}"),
    "pattern": ("pattern", "a string matching {}"),
    "format": ("format", "a string in {} format"),
}


def _closed_extras(error: jsonschema.exceptions.ValidationError) -> list[str]:
    instance = error.instance
    if not isinstance(instance, dict):
        return []
    schema = error.schema if isinstance(error.schema, dict) else {}
    return additional_names(instance, schema)


def _branch_errors(
    error: jsonschema.exceptions.ValidationError,
) -> dict[int, list[jsonschema.exceptions.ValidationError]]:
    branches: dict[int, list[jsonschema.exceptions.ValidationError]] = {}
    for sub in error.context or ():
        index = sub.relative_schema_path[0] if sub.relative_schema_path else -1
        if isinstance(index, int):
            branches.setdefault(index, []).append(sub)
    return branches


def _is_tag_error(sub: jsonschema.exceptions.ValidationError) -> bool:
    return sub.validator in ("const", "enum") and len(sub.relative_path) == 1


def _alternatives(error: jsonschema.exceptions.ValidationError, root: str) -> Iterator[dict[str, str]]:
    """Issues for a failed ``oneOf``/``anyOf``: when every alternative but one
    fails on a tag constant (``kind``), the errors of that one; when all fail
    on the same tag field, one ``discriminator`` issue; else the best match."""
    branches = _branch_errors(error)
    if not branches:
        yield issue(root, error.absolute_path, "multiple_match", "exactly one alternative to match")
        return
    untagged = [i for i, subs in branches.items() if not any(_is_tag_error(s) for s in subs)]
    all_variants = error.validator_value if isinstance(error.validator_value, list) else []
    if len(untagged) == 1 and len(all_variants) > 1:
        for sub in branches[untagged[0]]:
            yield from js_issues(sub, root)
        return
    tags = {tuple(s.relative_path) for subs in branches.values() for s in subs if _is_tag_error(s)}
    if len(tags) == 1 and not untagged and len(branches) == len(all_variants):
        (key,) = tags
        # the allowed tags as each alternative's own tag check states them
        # (so an alternative behind a $ref or an allOf names its tag too)
        expected: dict[str, None] = {}
        for index in sorted(branches):
            for sub in branches[index]:
                if _is_tag_error(sub):
                    checked: Any = sub.validator_value
                    values = (checked,) if sub.validator == "const" else checked
                    expected.update((json.dumps(v, ensure_ascii=False), None) for v in values)
        yield issue(root, [*error.absolute_path, *key], "discriminator", " or ".join(expected))
        return
    best = jsonschema.exceptions.best_match(error.context or ())
    assert best is not None  # the context holds the branches' errors
    yield from js_issues(best, root)


def js_issues(error: jsonschema.exceptions.ValidationError, root: str) -> Iterator[dict[str, str]]:
    path = list(error.absolute_path)
    keyword: Any = error.validator
    value: Any = error.validator_value
    if keyword == "required":
        present = error.instance if isinstance(error.instance, dict) else {}
        for name in value:
            if name not in present:
                yield issue(root, [*path, name], "missing", "a value (the field is required)")
    elif keyword in ("additionalProperties", "unevaluatedProperties"):
        extras = _closed_extras(error) if keyword == "additionalProperties" else []
        if not extras and isinstance(error, UnevaluatedError):
            extras = list(error.names)
        for name in extras or [""]:
            yield issue(root, [*path, name] if name else path, "unexpected", "no such field")
    elif keyword == "type":
        expected = " or ".join(value) if isinstance(value, list) else str(value)
        yield issue(root, path, "type", expected)
    elif keyword == "const":
        yield issue(root, path, "enum", json.dumps(value, ensure_ascii=False))
    elif keyword == "enum":
        yield issue(root, path, "enum", " or ".join(json.dumps(v, ensure_ascii=False) for v in value))
    elif keyword in _JS_SIZE:
        code, template = _JS_SIZE[keyword]
        yield issue(root, path, code, template.format(value))
    elif keyword in ("oneOf", "anyOf"):
        yield from _alternatives(error, root)
    elif keyword is None or (keyword == "not" and value == {}):  # a ``false`` subschema (see false_located)
        yield issue(root, path, "unexpected", "nothing (the schema allows no value here)")
    else:
        yield issue(root, path, "invalid", error.message)


def error_order(error: jsonschema.exceptions.ValidationError) -> tuple[Any, ...]:
    """Path order (array indexes as numbers, so ``[2]`` before ``[10]``), then keyword."""
    return (tuple((isinstance(p, str), p) for p in error.absolute_path), str(error.validator))
