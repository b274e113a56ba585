"""The schema layer: a value that parsed is checked against the shape the
caller asked for.

:class:`Schema` wraps either a Pydantic type (a model, a discriminated union,
any type a ``TypeAdapter`` accepts) or a JSON Schema dict (Draft 2020-12 by
default, or the draft its ``$schema`` names), validated with ``jsonschema``.
Both are strict: no coercion (``"1"``, ``true`` and ``1.0`` are not
integers), unknown fields are rejected wherever the schema closes the object
(Pydantic ``extra="forbid"``, JSON Schema ``additionalProperties: false``),
and ``null`` is not the same as a missing field.

A failure is one :class:`~decisions.errors.SchemaError` ``SCHEMA_MISMATCH``
whose ``issues`` are ``{path, code, expected}`` dicts. ``path`` is a JSON path
(``$.calls[0].arguments.path``); ``code`` is one of :data:`ISSUE_CODES`, the
same whichever validator found it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final, Iterable, Iterator, Mapping, Sequence

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
from pydantic import BaseModel, TypeAdapter, ValidationError

from .errors import SchemaError, json_path

__all__ = ["Schema", "ISSUE_CODES", "MAX_ISSUES", "json_path", "schema_mismatch"]

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
    "no_match": "the value matches none of the allowed alternatives",
    "multiple_match": "the value matches more than one alternative where exactly one is allowed",
    "too_deep": f"the value nests deeper than {MAX_VALIDATION_DEPTH} levels, more than validation follows",
    "invalid": "the value breaks another rule of the schema",
}

#: At most this many issues are reported for one value.
MAX_ISSUES: Final = 32

def _issue(root: str, parts: Iterable[str | int], code: str, expected: str) -> dict[str, str]:
    return {"path": json_path(parts, root), "code": code, "expected": expected}


def schema_mismatch(issues: Sequence[Mapping[str, str]], message: str | None = None) -> SchemaError:
    """The ``SCHEMA_MISMATCH`` error for these issues (path of the first)."""
    shown = tuple(issues[:MAX_ISSUES])
    hint = "; ".join(f"{i['path']}: {i['code']} (expected {i['expected']})" for i in shown[:3])
    return SchemaError(
        "SCHEMA_MISMATCH", message, path=shown[0]["path"] if shown else None, issues=shown, hint=hint
    )


# ---------------------------------------------------------------- Pydantic

_PYDANTIC_TYPES: Final[Mapping[str, tuple[str, str]]] = {
    "missing": ("missing", "a value (the field is required)"),
    "extra_forbidden": ("unexpected", "no such field"),
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


def _pydantic_issues(error: ValidationError, value: Any, root: str) -> list[dict[str, str]]:
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
        issues.append(_issue(root, parts, code, expected))
    return issues


# ---------------------------------------------------------------- JSON Schema


def _strict_integer(checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


_STRICT_CLASSES: dict[type, Any] = {}


def _strict_validator_class(schema: Mapping[str, Any]) -> Any:
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls = _STRICT_CLASSES.get(base)
    if cls is None:
        extend: Any = jsonschema.validators.extend
        cls = extend(
            base, type_checker=base.TYPE_CHECKER.redefine("integer", _strict_integer)
        )
        _STRICT_CLASSES[base] = cls
    return cls


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
    known = set(schema.get("properties", {}))
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    return [k for k in instance if k not in known and not any(p.search(k) for p in patterns)]


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


def _alternatives(
    error: jsonschema.exceptions.ValidationError, root: str
) -> Iterator[dict[str, str]]:
    """Issues for a failed ``oneOf``/``anyOf``: when every alternative but one
    fails on a tag constant (``kind``), the errors of that one; when all fail
    on the same tag field, one ``discriminator`` issue; else the best match."""
    branches = _branch_errors(error)
    if not branches:
        yield _issue(root, error.absolute_path, "multiple_match", "exactly one alternative to match")
        return
    untagged = [i for i, subs in branches.items() if not any(_is_tag_error(s) for s in subs)]
    all_variants = error.validator_value if isinstance(error.validator_value, list) else []
    if len(untagged) == 1 and len(all_variants) > 1:
        for sub in branches[untagged[0]]:
            yield from _js_issues(sub, root)
        return
    tags = {
        tuple(s.relative_path)
        for subs in branches.values()
        for s in subs
        if _is_tag_error(s)
    }
    if len(tags) == 1 and not untagged and len(branches) == len(all_variants):
        (key,) = tags
        expected = []
        for variant in all_variants:
            prop = variant.get("properties", {}).get(key[0], {}) if isinstance(variant, dict) else {}
            if "const" in prop:
                expected.append(json.dumps(prop["const"], ensure_ascii=False))
            else:
                expected.extend(json.dumps(v, ensure_ascii=False) for v in prop.get("enum", ()))
        yield _issue(root, [*error.absolute_path, *key], "discriminator", " or ".join(expected))
        return
    best = jsonschema.exceptions.best_match(error.context or ())
    if best is None:
        yield _issue(root, error.absolute_path, "no_match", "one of the allowed alternatives")
    else:
        yield from _js_issues(best, root)


def _js_issues(error: jsonschema.exceptions.ValidationError, root: str) -> Iterator[dict[str, str]]:
    path = list(error.absolute_path)
    keyword: Any = error.validator
    value: Any = error.validator_value
    if keyword == "required":
        present = error.instance if isinstance(error.instance, dict) else {}
        for name in value:
            if name not in present:
                yield _issue(root, [*path, name], "missing", "a value (the field is required)")
    elif keyword in ("additionalProperties", "unevaluatedProperties"):
        extras = _closed_extras(error) if keyword == "additionalProperties" else []
        if not extras and isinstance(error.instance, dict):
            extras = [k for k in error.instance if repr(k) in error.message]
        for name in extras or [""]:
            yield _issue(root, [*path, name] if name else path, "unexpected", "no such field")
    elif keyword == "type":
        expected = " or ".join(value) if isinstance(value, list) else str(value)
        yield _issue(root, path, "type", expected)
    elif keyword == "const":
        yield _issue(root, path, "enum", json.dumps(value, ensure_ascii=False))
    elif keyword == "enum":
        yield _issue(root, path, "enum", " or ".join(json.dumps(v, ensure_ascii=False) for v in value))
    elif keyword in _JS_SIZE:
        code, template = _JS_SIZE[keyword]
        yield _issue(root, path, code, template.format(value))
    elif keyword in ("oneOf", "anyOf"):
        yield from _alternatives(error, root)
    elif keyword is None:  # a ``false`` subschema
        yield _issue(root, path, "unexpected", "nothing (the schema allows no value here)")
    else:
        yield _issue(root, path, "invalid", error.message)


# ---------------------------------------------------------------- the wrapper


class Schema:
    """A compiled, strict validator for one Pydantic type or JSON Schema.

    Build it once (``Schema.of(spec)``) and reuse it: compiling checks the
    schema itself, which costs more than validating a value.
    """

    __slots__ = ("spec", "kind", "_adapter", "_validator")

    spec: Any
    kind: str

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self._adapter: TypeAdapter[Any] | None = None
        self._validator: Any = None
        if isinstance(spec, Mapping):
            cls = _strict_validator_class(spec)
            cls.check_schema(spec)
            self.kind = "json_schema"
            self._validator = cls(spec)
        else:
            self.kind = "pydantic"
            self._adapter = spec if isinstance(spec, TypeAdapter) else TypeAdapter(spec)

    @classmethod
    def of(cls, spec: Any) -> Schema:
        """``spec`` itself if it is a Schema, else a compiled one."""
        return spec if isinstance(spec, Schema) else cls(spec)

    def __repr__(self) -> str:
        return f"Schema({self.kind})"

    @property
    def returns_model(self) -> bool:
        """True when validation returns Python objects (Pydantic), not the JSON value."""
        return self.kind == "pydantic"

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of this schema (generated for Pydantic types)."""
        if self._adapter is not None:
            return self._adapter.json_schema()
        return dict(self.spec)

    def issues(self, value: Any, *, text: str | None = None, root: str = "$") -> tuple[list[dict[str, str]], Any]:
        """``(issues, validated)``: the issues found (empty when the value
        matches) and the validated value (None when there are issues)."""
        too_deep = [_issue(root, (), "too_deep", f"at most {MAX_VALIDATION_DEPTH} levels of nesting")]
        # a text with fewer brackets than the bound cannot nest deeper
        if (
            text is None or text.count("[") + text.count("{") > MAX_VALIDATION_DEPTH
        ) and _nested_deeper(value, MAX_VALIDATION_DEPTH):
            return too_deep, None
        try:
            return self._issues(value, text, root)
        except RecursionError:  # the caller's own stack was already deep
            return too_deep, None

    def _issues(self, value: Any, text: str | None, root: str) -> tuple[list[dict[str, str]], Any]:
        if self._adapter is not None:
            source = text if text is not None else json.dumps(value, ensure_ascii=False, allow_nan=False)
            try:
                return [], self._adapter.validate_json(source, strict=True)
            except ValidationError as error:
                return _pydantic_issues(error, value, root), None
        issues: list[dict[str, str]] = []
        for failure in sorted(self._validator.iter_errors(value), key=_error_order):
            issues.extend(_js_issues(failure, root))
            if len(issues) >= MAX_ISSUES:
                break
        return (issues, None) if issues else ([], value)

    def validate(self, value: Any, *, text: str | None = None, root: str = "$") -> Any:
        """The validated value, or :class:`SchemaError` ``SCHEMA_MISMATCH``.

        ``value`` is the parsed JSON; ``text`` (optional) the JSON text it was
        parsed from, which Pydantic validates in strict JSON mode.
        """
        issues, validated = self.issues(value, text=text, root=root)
        if issues:
            raise schema_mismatch(issues)
        return validated


def _nested_deeper(value: Any, bound: int) -> bool:
    """Whether lists and dicts in ``value`` nest deeper than ``bound`` (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Any = item.values() if type(item) is dict else item if type(item) is list else None
        if children is None:
            continue
        if depth > bound:
            return True
        stack.extend((child, depth + 1) for child in children if type(child) is dict or type(child) is list)
    return False


def _error_order(error: jsonschema.exceptions.ValidationError) -> tuple[Any, ...]:
    return (tuple(str(p) for p in error.absolute_path), str(error.validator))
