"""A schema converted for one provider, and the conversion undone on a response.

:func:`convert_schema` is driven by the provider's
:class:`~decisions.request.capabilities.Capabilities`:

- strict mode closes every object (``additionalProperties: false``), lists
  every property in ``required`` and makes the formerly optional ones
  nullable, where the provider demands it; ``strict`` is always set explicitly;
- ``$ref`` / ``$defs`` are kept where the provider takes them and inlined where
  it does not (a ``$ref`` with sibling keywords is inlined unless recursive);
- a keyword the provider does not enforce is found before sending and either
  rejected (``UNSUPPORTED_SCHEMA``) or dropped, and every drop is recorded;
- what cannot be expressed at all (an open map under strict mode, recursion
  where the provider forbids it, a non-local ``$ref``) is always rejected.

:mod:`~decisions.request._restore` undoes the conversion on a response value.
"""

from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass
from typing import Any, Final, Iterable, Literal, Mapping

from jsonschema import Draft202012Validator, validators

from .._payload import canonical_json, plain_json
from ..errors import SchemaError
from .capabilities import ANNOTATION_KEYWORDS, Capabilities, capabilities

__all__ = ["ConvertedSchema", "DroppedKeyword", "OnUnsupported", "convert_schema", "schema_digest"]

OnUnsupported = Literal["drop", "reject"]

#: Keywords whose value is one schema / a list of schemas / a map of schemas.
_SCHEMA_VALUED: Final = frozenset(
    {
        "items",
        "not",
        "additionalProperties",
        "contains",
        "if",
        "then",
        "else",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_SCHEMA_LISTS: Final = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_MAPS: Final = frozenset({"properties", "patternProperties", "dependentSchemas"})
_DEFS_KEYS: Final = ("$defs", "definitions")
#: Keywords :meth:`_Converter.object_rules` writes, never copied as they stand.
_OBJECT_RULES: Final = frozenset({"required", "additionalProperties"})
#: Regex constructs outside the subset some providers compile: backreferences,
#: lookahead / lookbehind, word boundaries.
_REGEX_BEYOND_SUBSET: Final = re.compile(r"\\[1-9]|\\k<|\(\?<?[=!]|\\[bB]")
#: How deep a caller's schema may nest before it is refused.
_MAX_SCHEMA_DEPTH: Final = 128


# ---------------------------------------------------------------- canonical JSON and digests


def _json_copy(value: Any) -> Any:
    """A deep copy that is plain JSON (keys and their order kept: property
    order is the order a model writes the fields in), read as
    :class:`~decisions.validate.schema.Schema` reads a JSON Schema."""
    return plain_json(value)


def schema_digest(schema: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``schema``."""
    return "sha256:" + hashlib.sha256(canonical_json(schema).encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- conversion


@dataclass(frozen=True, slots=True)
class DroppedKeyword:
    """A keyword left out of the sent schema. ``path`` is a JSON pointer into
    the original schema; ``constraint`` is False for annotations (title,
    default, ...) whose loss changes no check; a dropped constraint is
    re-checked locally against the original schema."""

    path: str
    keyword: str
    value: Any
    constraint: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "keyword": self.keyword,
            "value": self.value,
            "constraint": self.constraint,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class ConvertedSchema:
    """The schema to send and what the conversion changed.

    ``nullable_added`` holds pointers (into the original schema) of optional
    properties that strict mode made required and nullable; ``root_key`` is
    the property the value was wrapped in when the provider needs an object
    root (``None`` if not wrapped)."""

    schema: dict[str, Any]
    strict: bool
    dropped: tuple[DroppedKeyword, ...]
    nullable_added: frozenset[str]
    root_key: str | None


def _unsupported(message: str, path: str) -> SchemaError:
    return SchemaError(
        "UNSUPPORTED_SCHEMA",
        message,
        path=path,
        hint="change the schema, or let the keyword be dropped and checked locally",
    )


def _pointer(path: str, *parts: str | int) -> str:
    for part in parts:
        path += "/" + str(part).replace("~", "~0").replace("/", "~1")
    return path


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _is_object_schema(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def _def_name(ref: str) -> tuple[str, str] | None:
    for key in _DEFS_KEYS:
        prefix = f"#/{key}/"
        if ref.startswith(prefix) and "/" not in ref[len(prefix) :]:
            return key, ref[len(prefix) :].replace("~1", "/").replace("~0", "~")
    return None


def _refs_in(node: Any) -> Iterable[str]:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            ref = item.get("$ref")
            if isinstance(ref, str):
                yield ref
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _recursive_defs(defs: Mapping[str, Any]) -> frozenset[str]:
    """Definitions that reach themselves through ``$ref``."""
    graph: dict[str, set[str]] = {}
    for name, body in defs.items():
        targets = set()
        for ref in _refs_in(body):
            found = _def_name(ref)
            if found is not None:
                targets.add(found[1])
        graph[name] = targets
    recursive = set()
    for start in graph:
        stack, seen = list(graph[start]), set()
        while stack:
            current = stack.pop()
            if current == start:
                recursive.add(start)
                break
            if current in seen or current not in graph:
                continue
            seen.add(current)
            stack.extend(graph[current])
    return frozenset(recursive)


class _Converter:
    def __init__(self, root: dict[str, Any], caps: Capabilities, strict: bool, mode: OnUnsupported) -> None:
        self.caps = caps
        self.strict = strict
        self.mode = mode
        self.defs: dict[str, Any] = {}
        self.def_key: dict[str, str] = {}
        for key in _DEFS_KEYS:
            block = root.get(key)
            if isinstance(block, Mapping):
                for name, body in block.items():
                    self.defs[name] = body
                    self.def_key[name] = key
        self.recursive = _recursive_defs(self.defs)
        self.root_defs = {key: root[key] for key in _DEFS_KEYS if key in root}
        self.validator_class = validators.validator_for(root, default=Draft202012Validator)
        self.dropped: list[DroppedKeyword] = []
        self.nullable: set[str] = set()
        self.needed: list[str] = []
        self.sent_defs: dict[str, Any] = {}

    # -- bookkeeping
    def drop(self, path: str, keyword: str, value: Any, reason: str) -> None:
        constraint = keyword not in ANNOTATION_KEYWORDS
        if constraint and self.mode == "reject":
            raise _unsupported(f"{self.caps.provider} does not enforce {keyword!r} ({reason})", path)
        self.dropped.append(DroppedKeyword(path, keyword, value, constraint, reason))

    def keep_ref(self, name: str) -> str:
        if name not in self.sent_defs and name not in self.needed:
            self.needed.append(name)
        return "#/$defs/" + name.replace("~", "~0").replace("/", "~1")

    def merged(self, name: str, siblings: Mapping[str, Any], def_path: str) -> dict[str, Any]:
        """Definition ``name`` inlined with the keywords beside its ``$ref``.
        Where a sibling and the definition both say a constraint differently,
        only the sibling's is sent: the definition's is dropped and recorded
        (the original, which applies both, is still checked locally)."""
        body = self.defs[name]
        for keyword, value in siblings.items():
            if keyword in body and keyword not in ANNOTATION_KEYWORDS and body[keyword] != value:
                self.drop(def_path, keyword, body[keyword], "replaced by the keyword beside its $ref when inlined")
        return {**body, **siblings}

    # -- the walk
    def convert(self, root: dict[str, Any], path: str = "#") -> dict[str, Any]:
        body = {k: v for k, v in root.items() if k not in _DEFS_KEYS}
        ref = body.get("$ref")
        if isinstance(ref, str):
            # A root reference (Pydantic's form for a recursive model): inline
            # one level; inner references keep pointing at the definition.
            found = _def_name(ref)
            if found is None or found[1] not in self.defs:
                raise _unsupported(f"$ref {ref!r} is not a local definition", path)
            siblings = {k: v for k, v in body.items() if k != "$ref"}
            def_path = _pointer("#", found[0], found[1])
            out = self.node(self.merged(found[1], siblings, def_path), def_path, 0)
        else:
            out = self.node(body, path, 0)
        while self.needed:
            name = self.needed.pop()
            self.sent_defs[name] = None  # reserve: a def may reach itself
            self.sent_defs[name] = self.node(self.defs[name], _pointer("#", self.def_key[name], name), 0)
        if self.sent_defs:
            out["$defs"] = self.sent_defs
        return out

    def node(self, node: Any, path: str, depth: int) -> dict[str, Any]:
        if depth > _MAX_SCHEMA_DEPTH:
            raise _unsupported(f"the schema nests deeper than {_MAX_SCHEMA_DEPTH} levels", path)
        if node is True or node == {}:
            if self.strict:
                raise _unsupported("an unconstrained value (any JSON) cannot be sent in strict mode", path)
            return {}
        if not isinstance(node, Mapping):
            raise _unsupported(f"a schema must be an object, not {_json_type(node)}", path)
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self.ref(node, ref, path, depth)
        caps = self.caps
        out: dict[str, Any] = {}
        for keyword, value in node.items():
            here = _pointer(path, keyword)
            if keyword in _DEFS_KEYS:
                continue
            if keyword == "const" and not caps.supports("const") and caps.supports("enum"):
                keyword, value = "enum", [value]
            if keyword == "oneOf" and not caps.supports("oneOf") and caps.supports("anyOf"):
                self.drop(path, "oneOf", "exactly one", "sent as anyOf; exclusivity is checked locally")
                keyword = "anyOf"
            if keyword == "allOf" and not caps.supports("allOf") and isinstance(value, list) and len(value) == 1:
                inner = self.node(value[0], _pointer(here, 0), depth + 1)
                for key, sub in inner.items():
                    if key in out or key in node:
                        raise _unsupported("allOf member overlaps its parent", here)
                    out[key] = sub
                continue
            if not caps.supports(keyword):
                if keyword == "additionalProperties":
                    continue  # decided below with the object rules
                self.drop(path, keyword, value, f"not supported by {caps.provider}")
                continue
            converted = self.keyword(keyword, value, path, here, depth)
            if converted is not _DROP:
                out[keyword] = converted
        if _is_object_schema(node):
            self.object_rules(node, out, path, depth)
        return out

    def keyword(self, keyword: str, value: Any, path: str, here: str, depth: int) -> Any:
        caps = self.caps
        if keyword == "format":
            if caps.string_formats is not None and value not in caps.string_formats:
                self.drop(path, keyword, value, f"format {value!r} is not enforced by {caps.provider}")
                return _DROP
            return value
        if keyword == "enum":
            if not isinstance(value, list) or any(
                _json_type(v) not in caps.enum_value_types
                and not (_json_type(v) == "integer" and "number" in caps.enum_value_types)
                for v in value
            ):
                self.drop(
                    path,
                    keyword,
                    value,
                    f"{caps.provider} takes enum values of types {sorted(caps.enum_value_types)} only",
                )
                return _DROP
            return list(value)
        if (
            keyword == "pattern"
            and caps.pattern_subset
            and (not isinstance(value, str) or _REGEX_BEYOND_SUBSET.search(value))
        ):
            self.drop(
                path,
                keyword,
                value,
                f"{caps.provider} takes regular expressions without backreferences, lookaround or word boundaries",
            )
            return _DROP
        if keyword == "minItems" and caps.max_min_items is not None and value > caps.max_min_items:
            self.drop(path, keyword, value, f"{caps.provider} enforces minItems up to {caps.max_min_items}")
            return _DROP
        if keyword == "required" or keyword == "additionalProperties":
            return _DROP  # object_rules writes these
        if keyword in _SCHEMA_MAPS:
            if not isinstance(value, Mapping):
                raise _unsupported(f"{keyword} must map names to schemas", here)
            return {name: self.node(sub, _pointer(here, name), depth + 1) for name, sub in value.items()}
        if keyword in _SCHEMA_LISTS:
            if not isinstance(value, list):
                raise _unsupported(f"{keyword} must be a list of schemas", here)
            return [self.node(sub, _pointer(here, i), depth + 1) for i, sub in enumerate(value)]
        if keyword in _SCHEMA_VALUED:
            if isinstance(value, list):
                return [self.node(sub, _pointer(here, i), depth + 1) for i, sub in enumerate(value)]
            return self.node(value, here, depth + 1)
        return copy.deepcopy(value)

    def ref(self, node: Mapping[str, Any], ref: str, path: str, depth: int) -> dict[str, Any]:
        found = _def_name(ref)
        if found is None or found[1] not in self.defs:
            raise _unsupported(f"$ref {ref!r} is not a local definition", path)
        name = found[1]
        recursive = name in self.recursive
        if recursive and self.strict and not self.caps.recursive_refs:
            raise _unsupported(f"{self.caps.provider} does not accept recursive schemas ({name})", path)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        def_path = _pointer("#", found[0], name)
        if (not self.caps.refs or (siblings and not self.caps.ref_siblings)) and not recursive:
            return self.node(self.merged(name, siblings, def_path), def_path, depth + 1)
        if not self.caps.refs:
            raise _unsupported(f"{self.caps.provider} cannot take the recursive definition {name}", path)
        out: dict[str, Any] = {"$ref": self.keep_ref(name)}
        for keyword, value in siblings.items():
            # the object rules beside a $ref are the definition's: one beside it is dropped as any other
            if self.caps.ref_siblings and self.caps.supports(keyword) and keyword not in _OBJECT_RULES:
                converted = self.keyword(keyword, value, path, _pointer(path, keyword), depth)
                if converted is not _DROP:  # else keyword() recorded the drop
                    out[keyword] = converted
            else:
                self.drop(path, keyword, value, "a $ref may not carry other keywords here")
        return out

    def object_rules(self, node: Mapping[str, Any], out: dict[str, Any], path: str, depth: int) -> None:
        caps = self.caps
        props = node.get("properties", {})
        required = [name for name in node.get("required", ()) if isinstance(name, str)]
        extra = node.get("additionalProperties", None)
        if self.strict and caps.strict_requires_closed_objects:
            if extra not in (None, False) or (extra is None and "properties" not in node):
                raise _unsupported(
                    "an object with open or free-form keys (a map) cannot be closed in strict mode; "
                    "use a list of key/value objects or strict=False",
                    _pointer(path, "additionalProperties"),
                )
            out["additionalProperties"] = False
        elif extra is not None:
            if not caps.supports("additionalProperties"):
                self.drop(path, "additionalProperties", extra, f"not supported by {caps.provider}")
            elif isinstance(extra, bool):
                out["additionalProperties"] = extra
            else:
                out["additionalProperties"] = self.node(extra, _pointer(path, "additionalProperties"), depth + 1)
        if self.strict and caps.strict_requires_all_required and isinstance(out.get("properties"), dict):
            sent_props = out["properties"]
            for name in sent_props:
                if name in required:
                    continue
                if not self.accepts_null(props.get(name, {})):
                    sent_props[name] = _nullable(sent_props[name])
                    self.nullable.add(_pointer(path, "properties", name))
                if isinstance(sent_props[name], dict):
                    sent_props[name].pop("default", None)
            required = list(sent_props)  # every property, in the order the model writes them
        if required and caps.supports("required"):
            out["required"] = required

    def accepts_null(self, schema: Any) -> bool:
        """Whether the ORIGINAL ``schema`` of a property takes ``null`` as a
        value, as a validator of the root's draft says (whatever keywords say
        it: ``allOf``, ``not``, a reference, no type at all). Such a null is
        the model's, so strict mode must not make it stand for "absent"."""
        probe = {**self.root_defs, **schema} if isinstance(schema, Mapping) else schema
        return bool(self.validator_class(probe).is_valid(None))


class _DropType:
    __slots__ = ()


_DROP: Final = _DropType()


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null, keeping its description on the outside."""
    outer: dict[str, Any] = {}
    inner = dict(schema)
    if "description" in inner and "$ref" not in inner:
        outer["description"] = inner.pop("description")
    kind = inner.get("type")
    if isinstance(kind, str) and set(inner) <= {
        "type",
        "description",
        "title",
        "format",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "items",
        "enum",
    }:
        inner["type"] = [kind, "null"]
        if "enum" in inner:
            inner["enum"] = [*inner["enum"], None]
        return {**inner, **outer}
    return {"anyOf": [inner, {"type": "null"}], **outer}


def _nesting(schema: Any, defs: Mapping[str, Any]) -> int:
    """Object nesting depth of the sent schema (references followed once)."""
    best = 0
    stack: list[tuple[Any, int, frozenset[str]]] = [(schema, 0, frozenset())]
    while stack:
        node, level, seen = stack.pop()
        if isinstance(node, list):
            stack.extend((item, level, seen) for item in node)
            continue
        if not isinstance(node, Mapping):
            continue
        if node.get("type") == "object" or "properties" in node:
            level += 1
            best = max(best, level)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref not in seen:
            stack.append((defs.get(ref[len("#/$defs/") :]), level, seen | {ref}))
        for key, value in node.items():
            if key == "$defs":
                continue
            if key in ("properties",) and isinstance(value, Mapping):
                stack.extend((sub, level, seen) for sub in value.values())
            elif isinstance(value, (Mapping, list)):
                stack.append((value, level, seen))
    return best


def convert_schema(
    schema: Mapping[str, Any],
    caps: Capabilities | str,
    *,
    strict: bool | None = None,
    on_unsupported: OnUnsupported = "drop",
    object_root: bool = False,
) -> ConvertedSchema:
    """``schema`` converted for the provider described by ``caps``.

    ``strict=None`` means strict wherever the provider offers it.
    ``on_unsupported="reject"`` raises ``UNSUPPORTED_SCHEMA`` for the first
    constraint the provider would not enforce, ``"drop"`` leaves it out and
    records it. ``object_root=True`` (tool arguments) refuses a root that is
    not an object; otherwise a non-object root is wrapped in
    ``{"value": ...}`` where the provider needs an object root.
    """
    if isinstance(caps, str):
        caps = capabilities(caps)
    if on_unsupported not in ("drop", "reject"):
        raise ValueError(f"on_unsupported must be 'drop' or 'reject', not {on_unsupported!r}")
    if strict is None:
        strict = caps.strict_json_schema
    elif strict and not caps.strict_json_schema:
        raise ValueError(f"{caps.provider} has no strict schema mode; pass strict=None or False")
    original = _json_copy(schema)
    converter = _Converter(original, caps, strict, on_unsupported)
    sent = converter.convert(original)
    root_key = None
    root_is_object = sent.get("type") == "object" and not any(k in sent for k in ("anyOf", "oneOf", "allOf"))
    if object_root and not root_is_object:
        raise _unsupported("tool arguments must be described by an object schema", "#")
    if caps.root_must_be_object and not root_is_object:
        root_key = "value"
        defs = sent.pop("$defs", None)
        wrapped: dict[str, Any] = {"type": "object", "properties": {root_key: sent}, "required": [root_key]}
        if strict and caps.strict_requires_closed_objects:
            wrapped["additionalProperties"] = False
        if defs:
            wrapped["$defs"] = defs
        sent = wrapped
    if strict and caps.max_nesting is not None:
        depth = _nesting(sent, sent.get("$defs", {}))
        if depth > caps.max_nesting:
            raise _unsupported(f"objects nest {depth} levels; {caps.provider} accepts {caps.max_nesting}", "#")
    return ConvertedSchema(
        schema=sent,
        strict=strict,
        dropped=tuple(converter.dropped),
        nullable_added=frozenset(converter.nullable),
        root_key=root_key,
    )
