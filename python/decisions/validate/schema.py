"""The schema layer: a value that parsed is checked against the shape the
caller asked for.

:class:`Schema` wraps either a Pydantic type (a model, a discriminated union,
any type a ``TypeAdapter`` accepts) or a JSON Schema dict (Draft 2020-12 by
default, or the draft its ``$schema`` names), validated with ``jsonschema``.
Both are strict: no coercion (``"1"``, ``true`` and ``1.0`` are not
integers), and ``null`` is not the same as a missing field.

Objects are closed by default (``closed=True``): a field the schema does not
declare is an ``unexpected`` issue at its path (``$.calls[0].arguments.toolNmae``),
where Pydantic would ignore it and JSON Schema would let it through. For a
Pydantic type every model, TypedDict and dataclass in it is validated with
``extra="forbid"``; one that sets ``extra`` to ``"allow"`` or ``"ignore"`` itself
cannot be honoured beside that, so it is a ValueError naming the class, to be
resolved with ``closed=False``. For a JSON Schema every object that declares
``properties`` (or ``patternProperties``) and says nothing about
``additionalProperties``/``unevaluatedProperties`` is closed: with
``additionalProperties: false`` when it is built from no other schema, with
``unevaluatedProperties: false`` when it is composed (``$ref``, ``allOf``,
``anyOf``, ``oneOf``, ``if``/``then``/``else``), so that the properties of the
parts count; a draft older than 2019-09 cannot close a composed object, which
is a ValueError. ``additionalProperties: true`` (or a schema) is an explicit
opt-out and is kept, and so is an object that declares no properties (a
free-form map). Nothing under ``not`` or ``if`` is changed (closing there
would loosen the schema). ``closed=False`` applies the schema as written.

A failure is one :class:`~decisions.errors.SchemaError` ``SCHEMA_MISMATCH``
whose ``issues`` are ``{path, code, expected}`` dicts. ``path`` is a JSON path
(``$.calls[0].arguments.path``); ``code`` is one of :data:`ISSUE_CODES`, the
same whichever validator found it.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any, Final, Iterable, Iterator, Mapping, Sequence

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
from pydantic import TypeAdapter, ValidationError

from ..errors import SchemaError, json_path

__all__ = [
    "Schema",
    "ISSUE_CODES",
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
        cls = extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", _strict_integer))
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


def _alternatives(error: jsonschema.exceptions.ValidationError, root: str) -> Iterator[dict[str, str]]:
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
    tags = {tuple(s.relative_path) for subs in branches.values() for s in subs if _is_tag_error(s)}
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


# ---------------------------------------------------------------- closing objects

#: Keywords whose subschemas describe a new instance location (a member or an
#: item), each holding one schema, a list of schemas or a map of them.
_JS_LOCATION_ONE: Final = (
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contains",
)
_JS_LOCATION_MAP: Final = ("properties", "patternProperties")
#: Keywords whose subschemas apply at the same location (the parts of a
#: composed object); ``not`` and ``if`` are left out on purpose.
_JS_SAME_LIST: Final = ("allOf", "anyOf", "oneOf")
_JS_SAME_ONE: Final = ("then", "else")
_JS_SAME_MAP: Final = ("dependentSchemas", "$defs", "definitions")
_JS_COMPOSED: Final = (
    "$ref",
    "$dynamicRef",
    "allOf",
    "anyOf",
    "oneOf",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "dependencies",
)


def _pointer(root: Any, ref: str) -> Any:
    """The subschema a local ``$ref`` (``#/$defs/Item``) names, else None."""
    if not ref.startswith("#"):
        return None
    node = root
    for raw in ref[1:].split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _js_parts(node: dict[str, Any], root: Any) -> Iterator[Any]:
    """The schemas that apply at the location of ``node`` besides itself."""
    for key in _JS_SAME_LIST:
        value = node.get(key)
        if isinstance(value, list):
            yield from value
    for key in _JS_SAME_ONE:
        if key in node:
            yield node[key]
    for key in ("dependentSchemas", "dependencies"):
        value = node.get(key)
        if isinstance(value, dict):
            yield from (v for v in value.values() if isinstance(v, dict))
    ref = node.get("$ref")
    if isinstance(ref, str):
        yield _pointer(root, ref) if ref.startswith("#") else {"properties": {}}  # remote: assume an object


def _js_open_fields(node: Any, root: Any) -> bool:
    """True when ``node`` or a part it is composed of declares properties
    without closing itself (a part that closes itself needs no help)."""
    stack, seen = [node], set()
    while stack:
        current = stack.pop()
        if not isinstance(current, dict) or id(current) in seen:
            continue
        seen.add(id(current))
        declares = "properties" in current or "patternProperties" in current
        if declares and "additionalProperties" not in current and "unevaluatedProperties" not in current:
            return True
        stack.extend(_js_parts(current, root))
    return False


def _close_json_schema(schema: Mapping[str, Any], unevaluated: bool) -> dict[str, Any]:
    """A copy of ``schema`` with every object that declares fields closed
    (see the module docstring); ``unevaluated`` says whether the draft knows
    ``unevaluatedProperties``."""
    root: dict[str, Any] = copy.deepcopy(dict(schema))
    stack: list[tuple[Any, bool]] = [(root, True)]
    seen: set[int] = set()
    while stack:
        node, at_location = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        explicit = "additionalProperties" in node or "unevaluatedProperties" in node
        if at_location and not explicit:
            composed = any(key in node for key in _JS_COMPOSED)
            if not composed and ("properties" in node or "patternProperties" in node):
                node["additionalProperties"] = False
            elif composed and _js_open_fields(node, root):
                if not unevaluated:
                    raise ValueError(
                        "this JSON Schema draft has no unevaluatedProperties, so a composed object cannot be "
                        "closed: give it additionalProperties explicitly, or pass closed=False"
                    )
                node["unevaluatedProperties"] = False
        for key in _JS_LOCATION_MAP:
            value = node.get(key)
            if isinstance(value, dict):
                stack.extend((v, True) for v in value.values())
        for key in _JS_LOCATION_ONE:
            stack.append((node.get(key), True))
        items = node.get("items")
        stack.extend((v, True) for v in (items if isinstance(items, list) else [items]))
        prefix = node.get("prefixItems")
        if isinstance(prefix, list):
            stack.extend((v, True) for v in prefix)
        for key in _JS_SAME_LIST:
            value = node.get(key)
            if isinstance(value, list):
                stack.extend((v, False) for v in value)
        for key in _JS_SAME_ONE:
            stack.append((node.get(key), False))
        for key in _JS_SAME_MAP:
            value = node.get(key)
            if isinstance(value, dict):
                stack.extend((v, False) for v in value.values())
    return root


def _core_nodes(schema: Any) -> Iterator[dict[str, Any]]:
    """Every node of a pydantic-core schema (iterative; classes, functions and
    metadata are not walked into)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(
                v
                for k, v in node.items()
                if k not in ("metadata", "serialization", "cls") and isinstance(v, (dict, list, tuple))
            )
        elif isinstance(node, (list, tuple)):
            stack.extend(v for v in node if isinstance(v, (dict, list, tuple)))


def _explicitly_open(core: Any) -> list[str]:
    """The models, TypedDicts and dataclasses in a pydantic-core schema that
    set ``extra`` to ``"allow"`` or ``"ignore"`` themselves."""
    found = []
    for node in _core_nodes(core):
        config = node.get("config")
        if isinstance(config, dict) and config.get("extra_fields_behavior") in ("allow", "ignore"):
            cls = node.get("cls")
            found.append(
                f"{getattr(cls, '__qualname__', node.get('type'))} (extra={config['extra_fields_behavior']!r})"
            )
    return sorted(set(found))


# ---------------------------------------------------------------- field selectors


def _core_definitions(core: Any) -> dict[str, Any]:
    return {node["ref"]: node for node in _core_nodes(core) if isinstance(node.get("ref"), str)}


_CORE_WRAPPERS: Final = (
    "default",
    "nullable",
    "function-before",
    "function-after",
    "function-wrap",
    "model",
    "dataclass",
    "definitions",
    "chain",
)


def _core_expand(node: Any, defs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The nodes that shape a value of ``node`` (wrappers, references and
    union members unfolded)."""
    out: list[dict[str, Any]] = []
    stack, seen = [node], set()
    while stack:
        current = stack.pop()
        if isinstance(current, tuple) and current:  # a union choice with its label
            current = current[0]
        if not isinstance(current, dict) or id(current) in seen:
            continue
        seen.add(id(current))
        kind = current.get("type")
        if kind == "definition-ref":
            stack.append(defs.get(current.get("schema_ref", "")))
        elif kind == "chain":
            steps = current.get("steps") or []
            stack.extend(steps[-1:])
        elif kind in _CORE_WRAPPERS and "schema" in current:
            stack.append(current["schema"])
        elif kind == "union":
            stack.extend(current.get("choices", []))
        elif kind == "tagged-union":
            stack.extend(current.get("choices", {}).values())
        elif kind == "json-or-python":
            stack.extend([current.get("json_schema"), current.get("python_schema")])
        elif kind == "lax-or-strict":
            stack.extend([current.get("strict_schema"), current.get("lax_schema")])
        else:
            out.append(current)
    return out


def _core_step(node: dict[str, Any], step: str | None) -> list[Any] | None:
    """The schemas one selector step leads to from ``node``, or None when
    the step does not apply to it."""
    kind = node.get("type")
    if kind == "any":
        return [node]
    if step is None:
        if kind in ("list", "set", "frozenset", "generator"):
            return [node.get("items_schema", {"type": "any"})]
        if kind == "tuple":
            return list(node.get("items_schema", [])) or [{"type": "any"}]
        return None
    if kind in ("model-fields", "typed-dict"):
        field = node.get("fields", {}).get(step)
        return None if field is None else [field.get("schema")]
    if kind == "dataclass-args":
        return [f.get("schema") for f in node.get("fields", []) if f.get("name") == step] or None
    if kind == "dict":
        return [node.get("values_schema", {"type": "any"})]
    return None


def _js_expand(node: Any, root: Any) -> list[Any]:
    """The schemas that shape a value of ``node``: itself and its parts
    (``True`` for a part that allows anything)."""
    out: list[Any] = []
    stack: list[Any] = [node]
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if current is True or current == {}:
            out.append(True)
            continue
        if not isinstance(current, dict) or id(current) in seen:
            continue
        seen.add(id(current))
        out.append(current)
        stack.extend(_js_parts(current, root))
    return out


def _js_step(node: Any, step: str | None) -> list[Any] | None:
    """The schemas one selector step leads to from ``node``, or None."""
    if node is True:
        return [True]
    if step is None:
        items = node.get("items")
        prefix = node.get("prefixItems")
        found = [
            *(prefix if isinstance(prefix, list) else []),
            *(items if isinstance(items, list) else [items] if items is not None else []),
        ]
        return found or None
    properties = node.get("properties")
    if isinstance(properties, dict) and step in properties:
        return [properties[step]]
    patterns = node.get("patternProperties")
    if isinstance(patterns, dict):
        matched = [v for p, v in patterns.items() if re.search(p, step)]
        if matched:
            return matched
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and "properties" not in node:  # a map whose values have this schema
        return [extra]
    return None


# ---------------------------------------------------------------- the wrapper


class Schema:
    """A compiled, strict validator for one Pydantic type or JSON Schema.

    Build it once (``Schema.of(spec)``) and reuse it: compiling checks the
    schema itself, which costs more than validating a value.
    """

    __slots__ = ("spec", "kind", "closed", "_adapter", "_validator", "_extra", "_applied")

    spec: Any
    kind: str
    closed: bool

    def __init__(self, spec: Any, *, closed: bool = True) -> None:
        self.spec = spec
        self.closed = closed
        self._adapter: TypeAdapter[Any] | None = None
        self._validator: Any = None
        self._extra: Any = None
        if isinstance(spec, Mapping):
            cls = _strict_validator_class(spec)
            cls.check_schema(spec)
            self.kind = "json_schema"
            applied = _close_json_schema(spec, "unevaluatedProperties" in cls.VALIDATORS) if closed else dict(spec)
            self._applied: Any = applied
            self._validator = cls(applied)
        else:
            self.kind = "pydantic"
            self._adapter = spec if isinstance(spec, TypeAdapter) else TypeAdapter(spec)
            self._applied = self._adapter.core_schema
            if closed:
                opened = _explicitly_open(self._applied)
                if opened:
                    raise ValueError(
                        f"{', '.join(opened)} set extra themselves, which a closed schema would override: "
                        "make them extra='forbid' or unset, or pass closed=False (Tool(extra='allow')) "
                        "to validate as the models say"
                    )
                self._extra = "forbid"

    @classmethod
    def of(cls, spec: Any, *, closed: bool = True) -> Schema:
        """``spec`` itself if it is a Schema, else a compiled one."""
        return spec if isinstance(spec, Schema) else cls(spec, closed=closed)

    def dump(self, value: Any) -> Any:
        """The JSON form of a validated value: what a Pydantic type produced,
        dumped by field name (so aliases and validators have had their say);
        a JSON Schema value is already JSON and is returned as it is."""
        if self._adapter is None:
            return value
        return self._adapter.dump_python(value, mode="json", by_alias=False)

    def check_selector(self, steps: Sequence[str | None]) -> None:
        """ValueError unless every step of a field selector (a field name, or
        None for every item of an array) names something this schema defines."""
        if self._adapter is not None:
            defs = _core_definitions(self._applied)
            nodes: list[Any] = [self._applied]
            expand: Any = lambda n: _core_expand(n, defs)  # noqa: E731
            step_of: Any = _core_step
        else:
            root = self._applied
            nodes = [root]
            expand = lambda n: _js_expand(n, root)  # noqa: E731
            step_of = _js_step
        for position, step in enumerate(steps):
            following: list[Any] = []
            for node in nodes:
                for shape in expand(node):
                    found = step_of(shape, step)
                    if found is not None:
                        following.extend(found)
            if not following:
                what = "array items ([*])" if step is None else f"a field {step!r}"
                where = _selector_text(steps[:position]) or "the arguments"
                raise ValueError(f"the schema defines no {what} under {where}")
            nodes = following

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
        if (text is None or text.count("[") + text.count("{") > MAX_VALIDATION_DEPTH) and _nested_deeper(
            value, MAX_VALIDATION_DEPTH
        ):
            return too_deep, None
        try:
            return self._issues(value, text, root)
        except RecursionError:  # the caller's own stack was already deep
            return too_deep, None

    def _issues(self, value: Any, text: str | None, root: str) -> tuple[list[dict[str, str]], Any]:
        if self._adapter is not None:
            source = text if text is not None else json.dumps(value, ensure_ascii=False, allow_nan=False)
            try:
                return [], self._adapter.validate_json(source, strict=True, extra=self._extra)
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


def _selector_text(steps: Sequence[str | None]) -> str:
    return "".join("[*]" if step is None else (f".{step}" if i else step) for i, step in enumerate(steps))


def _error_order(error: jsonschema.exceptions.ValidationError) -> tuple[Any, ...]:
    return (tuple(str(p) for p in error.absolute_path), str(error.validator))
