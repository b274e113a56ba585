"""The shape of a schema, read before any value is validated: closing the
objects of a JSON Schema (see :mod:`decisions.validate.schema`, ``closed``),
finding the models that set ``extra`` themselves in a pydantic-core schema,
and following a field selector (``path``, ``files[*].path``) through either
kind of schema.
"""

from __future__ import annotations

import copy
from typing import Any, Final, Iterator, Mapping, Sequence

from ._ecma import compile_pattern

__all__ = [
    "additional_names",
    "close_json_schema",
    "core_definitions",
    "core_expand",
    "core_step",
    "echoed_fields",
    "explicitly_open",
    "js_expand",
    "js_step",
    "selector_text",
]

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


def close_json_schema(schema: Mapping[str, Any], unevaluated: bool) -> dict[str, Any]:
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


def explicitly_open(core: Any) -> list[str]:
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


# ---------------------------------------------------------------- echoed arguments

#: Keys of a model's config that change no validated or dumped value of the
#: field types :func:`echoed_fields` takes (``strict``: ``decide`` validates
#: strictly whatever the config says).
_ECHO_CONFIG: Final = frozenset({"title", "extra_fields_behavior", "strict", "frozen"})
#: The keys each leaf type may have: constraints that refuse, never change, a value.
_ECHO_LEAVES: Final = {
    "str": frozenset({"type", "min_length", "max_length", "pattern", "strict", "metadata"}),
    "int": frozenset({"type", "ge", "gt", "le", "lt", "multiple_of", "strict", "metadata"}),
    "bool": frozenset({"type", "strict", "metadata"}),
}


def _echoes(node: Any) -> bool:
    """Whether strict JSON validation of the type ``node`` then a JSON-mode
    dump gives back the JSON value itself, same types, same order."""
    if type(node) is not dict or node.get("strict", True) is not True:
        return False
    kind = node.get("type")
    leaf = _ECHO_LEAVES.get(kind)  # type: ignore[arg-type]
    if leaf is not None:
        return node.keys() <= leaf
    if kind == "literal":
        expected = node.get("expected")
        return (
            node.keys() <= {"type", "expected", "metadata"}
            and type(expected) is list
            and all(type(v) is str for v in expected)
        )
    if kind == "default":
        # a default fills only a missing key, and an echoed input has every key
        return node.keys() <= {
            "type",
            "schema",
            "default",
            "default_factory",
            "default_factory_takes_data",
            "metadata",
        } and _echoes(node.get("schema"))
    if kind == "nullable" or kind == "list":
        inner = node.get("schema" if kind == "nullable" else "items_schema")
        allowed = (
            {"type", "schema", "metadata"}
            if kind == "nullable"
            else {"type", "items_schema", "min_length", "max_length", "metadata"}
        )
        return node.keys() <= allowed and _echoes(inner)
    return False


def echoed_fields(core: Any) -> tuple[str, ...] | None:
    """The field names, in order, of a model whose strict JSON validation
    then JSON-mode dump (by field name) gives back any valid input object
    whose keys are exactly those names in that order: no field with an
    alias, validator or serializer, each of a type that
    :func:`_echoes`, with no extra fields kept. None for any other schema
    (its dump is then made). ``decide`` takes such an input as its own
    arguments instead of dumping the validated model."""
    if (
        type(core) is not dict
        or core.get("type") != "model"
        or core.get("custom_init") is not False
        or core.get("root_model") is not False
        or core.get("post_init") is not None
        or "serialization" in core
        or not core.keys()
        <= {"type", "cls", "config", "custom_init", "metadata", "ref", "root_model", "schema", "post_init"}
    ):
        return None
    config, fields_schema = core.get("config", {}), core.get("schema")
    if (
        type(config) is not dict
        or not config.keys() <= _ECHO_CONFIG
        or config.get("extra_fields_behavior", "forbid") != "forbid"
        or type(fields_schema) is not dict
        or fields_schema.get("type") != "model-fields"
        or fields_schema.get("computed_fields", []) != []
        or not fields_schema.keys() <= {"type", "fields", "model_name", "computed_fields"}
    ):
        return None
    fields = fields_schema.get("fields")
    if type(fields) is not dict or not fields:
        return None
    for field in fields.values():
        if (
            type(field) is not dict
            or field.get("type") != "model-field"
            or not field.keys() <= {"type", "schema", "metadata"}
        ):
            return None
        if not _echoes(field.get("schema")):
            return None
    return tuple(fields)


# ---------------------------------------------------------------- field selectors


def core_definitions(core: Any) -> dict[str, Any]:
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


def core_expand(node: Any, defs: Mapping[str, Any]) -> list[dict[str, Any]]:
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


def core_step(node: dict[str, Any], step: str | None) -> list[Any] | None:
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


def js_expand(node: Any, root: Any) -> list[Any]:
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


def js_step(node: Any, step: str | None) -> list[Any] | None:
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
        matched = [v for p, v in patterns.items() if compile_pattern(p).search(step)]
        if matched:
            return matched
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and "properties" not in node:  # a map whose values have this schema
        return [extra]
    return None


def selector_text(steps: Sequence[str | None]) -> str:
    return "".join("[*]" if step is None else (f".{step}" if i else step) for i, step in enumerate(steps))


def additional_names(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """The names of ``instance`` that neither ``properties`` nor a
    ``patternProperties`` pattern of ``schema`` covers, in order."""
    properties = schema.get("properties", {})
    patterns = [compile_pattern(p) for p in schema.get("patternProperties", {})]
    return [n for n in instance if n not in properties and not any(p.search(n) for p in patterns)]
