"""From one tool or output definition, every provider's request fragments.

A :class:`ToolDefinition` (name, description, Pydantic model or JSON Schema for
its arguments) and an :class:`OutputDefinition` (the final answer's schema)
become the pieces of a request body: Chat ``tools`` / ``response_format``,
Responses ``tools`` / ``text.format``, Anthropic ``tools`` (``input_schema``,
``strict``) / ``output_config.format``, Gemini ``functionDeclarations`` /
``generationConfig.responseJsonSchema``.

The schema is converted for the provider by :func:`convert_schema`, driven by
its :class:`~decisions.request.capabilities.Capabilities`:

- strict mode closes every object (``additionalProperties: false``), lists
  every property in ``required`` and makes the formerly optional ones
  nullable, where the provider demands it; ``strict`` is always set explicitly;
- ``$ref`` / ``$defs`` are kept where the provider takes them and inlined where
  it does not (a ``$ref`` with sibling keywords is inlined unless recursive);
- a keyword the provider does not enforce is found before sending and either
  rejected (``UNSUPPORTED_SCHEMA``) or dropped, and every drop is recorded;
- what cannot be expressed at all (an open map under strict mode, recursion
  where the provider forbids it, a non-local ``$ref``) is always rejected.

Every fragment comes with a :class:`RequestRecord`: the original schema, the
schema actually sent, the sha256 digest of its canonical JSON, what was
dropped, and the library version. ``RequestRecord.restore`` undoes the
conversion on a response value (unwraps a root wrapper, removes the ``null``
the model had to write for an omitted optional field) so that the decision
layer validates it against the ORIGINAL schema, dropped constraints included.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Final, Iterable, Literal, Mapping, Sequence

from .._payload import canonical_json
from .._version import __version__
from .capabilities import ANNOTATION_KEYWORDS, Capabilities, Strategy, capabilities, choose_strategy
from ..errors import SchemaError
from ..limits import DEFAULT_LIMITS, Limits
from ..types import Item, NormalizedResponse, TextItem, ToolCallItem

__all__ = [
    "ToolDefinition",
    "OutputDefinition",
    "DroppedKeyword",
    "ConvertedSchema",
    "RequestRecord",
    "RequestPlan",
    "OnUnsupported",
    "convert_schema",
    "schema_digest",
    "canonical_json",
    "tool_fragment",
    "output_fragment",
    "build_request",
    "json_text_instructions",
]

OnUnsupported = Literal["drop", "reject"]

#: Names the four APIs all accept for tools and output formats.
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
#: Keywords whose value is one schema / a list of schemas / a map of schemas.
_SCHEMA_VALUED: Final = frozenset({"items", "not", "additionalProperties", "contains", "if", "then", "else",
                                   "propertyNames", "unevaluatedItems", "unevaluatedProperties"})
_SCHEMA_LISTS: Final = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_MAPS: Final = frozenset({"properties", "patternProperties", "dependentSchemas"})
_DEFS_KEYS: Final = ("$defs", "definitions")
#: Regex constructs outside the subset some providers compile: backreferences,
#: lookahead / lookbehind, word boundaries.
_REGEX_BEYOND_SUBSET: Final = re.compile(r"\\[1-9]|\\k<|\(\?<?[=!]|\\[bB]")
#: How deep a caller's schema may nest before it is refused.
_MAX_SCHEMA_DEPTH: Final = 128


# ---------------------------------------------------------------- canonical JSON and digests


def _json_copy(value: Any) -> Any:
    """A deep copy that is plain JSON (keys and their order kept: property
    order is the order a model writes the fields in)."""
    return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))


def schema_digest(schema: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``schema``."""
    return "sha256:" + hashlib.sha256(canonical_json(schema).encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- definitions


def _schema_of(source: Any) -> tuple[dict[str, Any], Any]:
    """The JSON Schema dict for a schema dict, a Pydantic model or any type
    Pydantic's ``TypeAdapter`` accepts; and the model/type (or None)."""
    if isinstance(source, Mapping):
        schema = _json_copy(source)
        return schema, None
    import pydantic

    if isinstance(source, type) and issubclass(source, pydantic.BaseModel):
        return source.model_json_schema(), source
    if isinstance(source, pydantic.TypeAdapter):
        return source.json_schema(), source
    try:
        return pydantic.TypeAdapter(source).json_schema(), source
    except pydantic.PydanticSchemaGenerationError as exc:
        raise TypeError(f"cannot build a JSON Schema from {source!r}") from exc


def _check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        raise ValueError(f"{what} name {name!r} must match {_NAME.pattern} (accepted by every provider)")
    return name


@dataclass(frozen=True, slots=True, init=False)
class ToolDefinition:
    """One tool: ``name``, ``description`` and its arguments' schema.

    ``parameters`` is a Pydantic model class, any type Pydantic can describe,
    or a JSON Schema dict; ``schema`` is the resulting JSON Schema and
    ``model`` the class or type (``None`` for a dict). ``control`` marks a
    control-protocol tool (``submit_*``) that has no side effect.
    """

    name: str
    description: str
    schema: dict[str, Any]
    model: Any
    control: bool

    def __init__(self, name: str, parameters: Any, description: str = "", *, control: bool = False) -> None:
        schema, model = _schema_of(parameters)
        object.__setattr__(self, "name", _check_name(name, "tool"))
        object.__setattr__(self, "description", description or str(schema.get("description", "")))
        object.__setattr__(self, "schema", schema)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "control", control)

    @classmethod
    def of(cls, source: Any) -> ToolDefinition:
        """``source`` itself, or the definition of a registered
        :class:`decisions.Tool` (same name, parameters and description), so
        one tool list serves both the request and :func:`decisions.decide`."""
        if isinstance(source, ToolDefinition):
            return source
        from ..validate.domain import Tool
        from ..validate.schema import Schema

        if not isinstance(source, Tool):
            raise TypeError(f"expected a ToolDefinition or a decisions.Tool, not {type(source).__name__}")
        parameters = source.parameters
        if parameters is None:
            parameters = {"type": "object"}
        elif isinstance(parameters, Schema):
            parameters = parameters.spec
        return cls(source.name, parameters, source.description)


@dataclass(frozen=True, slots=True, init=False)
class OutputDefinition:
    """The final answer's shape: a Pydantic model, a type (e.g. a
    discriminated union) or a JSON Schema dict, with the name the provider
    sees and an optional schema id and version (``agent.decision`` /
    ``2.1.0``) kept in request and parse records."""

    name: str
    description: str
    schema: dict[str, Any]
    model: Any
    schema_id: str | None
    schema_version: str | None

    def __init__(
        self,
        schema: Any,
        *,
        name: str | None = None,
        description: str = "",
        schema_id: str | None = None,
        schema_version: str | None = None,
    ) -> None:
        json_schema, model = _schema_of(schema)
        if name is None:
            name = getattr(model, "__name__", None) or str(json_schema.get("title", "")) or "output"
            name = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "output"
        object.__setattr__(self, "name", _check_name(name, "output"))
        object.__setattr__(self, "description", description or str(json_schema.get("description", "")))
        object.__setattr__(self, "schema", json_schema)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "schema_id", schema_id)
        object.__setattr__(self, "schema_version", schema_version)

    @classmethod
    def of(cls, source: Any) -> OutputDefinition:
        """``source`` itself if it is one, else a definition built from it."""
        return source if isinstance(source, OutputDefinition) else cls(source)

    def submit_tool(self) -> ToolDefinition:
        """The ``submit_<name>`` control tool that carries this output when
        the provider has tools but no native structured output."""
        name = f"submit_{self.name}"[:64]
        description = self.description or f"Submit the final answer as a {self.name} value."
        return ToolDefinition(name, self.schema, description, control=True)


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
        return {"path": self.path, "keyword": self.keyword, "value": self.value,
                "constraint": self.constraint, "reason": self.reason}


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
    return SchemaError("UNSUPPORTED_SCHEMA", message, path=path,
                       hint="change the schema, or let the keyword be dropped and checked locally")


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


def _accepts_null(node: Mapping[str, Any], defs: Mapping[str, Any], seen: frozenset[str] = frozenset()) -> bool:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "const" in node:
        return node["const"] is None
    if "enum" in node:
        return None in node["enum"]
    for key in ("anyOf", "oneOf"):
        if any(isinstance(sub, Mapping) and _accepts_null(sub, defs, seen) for sub in node.get(key, ())):
            return True
    ref = node.get("$ref")
    if isinstance(ref, str) and ref not in seen:
        target = _def_name(ref)
        if target is not None and target[1] in defs:
            return _accepts_null(defs[target[1]], defs, seen | {ref})
    return False


def _def_name(ref: str) -> tuple[str, str] | None:
    for key in _DEFS_KEYS:
        prefix = f"#/{key}/"
        if ref.startswith(prefix) and "/" not in ref[len(prefix):]:
            return key, ref[len(prefix):].replace("~1", "/").replace("~0", "~")
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
            merged = {**self.defs[found[1]], **siblings}
            out = self.node(merged, _pointer("#", found[0], found[1]), 0)
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
            if not isinstance(value, list) or any(_json_type(v) not in caps.enum_value_types
                                                  and not (_json_type(v) == "integer"
                                                           and "number" in caps.enum_value_types)
                                                  for v in value):
                self.drop(path, keyword, value, f"{caps.provider} takes enum values of types "
                          f"{sorted(caps.enum_value_types)} only")
                return _DROP
            return list(value)
        if keyword == "pattern" and caps.pattern_subset and (
                not isinstance(value, str) or _REGEX_BEYOND_SUBSET.search(value)):
            self.drop(path, keyword, value, f"{caps.provider} takes regular expressions without "
                      "backreferences, lookaround or word boundaries")
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
            merged = {**self.defs[name], **siblings}
            return self.node(merged, def_path, depth + 1)
        if not self.caps.refs:
            raise _unsupported(f"{self.caps.provider} cannot take the recursive definition {name}", path)
        out: dict[str, Any] = {"$ref": self.keep_ref(name)}
        for keyword, value in siblings.items():
            if self.caps.ref_siblings and self.caps.supports(keyword):
                out[keyword] = self.keyword(keyword, value, path, _pointer(path, keyword), depth)
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
                original = props.get(name, {})
                if not (isinstance(original, Mapping) and _accepts_null(original, self.defs)):
                    sent_props[name] = _nullable(sent_props[name])
                    self.nullable.add(_pointer(path, "properties", name))
                if isinstance(sent_props[name], dict):
                    sent_props[name].pop("default", None)
            required = list(sent_props)  # every property, in the order the model writes them
        if required and caps.supports("required"):
            out["required"] = required


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
    if isinstance(kind, str) and set(inner) <= {"type", "description", "title", "format", "pattern",
                                                "minimum", "maximum", "exclusiveMinimum",
                                                "exclusiveMaximum", "multipleOf", "minItems",
                                                "maxItems", "items", "enum"}:
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
            stack.append((defs.get(ref[len("#/$defs/"):]), level, seen | {ref}))
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


# ---------------------------------------------------------------- restoring a response value


class _Restorer:
    """Walks a value along the ORIGINAL schema and removes the ``null`` the
    model wrote for a property that strict mode made required."""

    def __init__(self, original: Mapping[str, Any], nullable: frozenset[str]) -> None:
        self.original = original
        self.nullable = nullable
        self.defs: dict[str, tuple[str, Any]] = {}
        for key in _DEFS_KEYS:
            block = original.get(key)
            if isinstance(block, Mapping):
                for name, body in block.items():
                    self.defs[name] = (_pointer("#", key, name), body)

    def value(self, value: Any, node: Any, path: str, depth: int = 0) -> Any:
        if not isinstance(node, Mapping) or depth > _MAX_SCHEMA_DEPTH:
            return value
        ref = node.get("$ref")
        if isinstance(ref, str):
            found = _def_name(ref)
            if found is not None and found[1] in self.defs:
                def_path, body = self.defs[found[1]]
                value = self.value(value, body, def_path, depth + 1)
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list):
                value = self.union(value, branches, _pointer(path, key), depth)
        if isinstance(value, dict) and isinstance(node.get("properties"), Mapping):
            props = node["properties"]
            out = {}
            for name, item in value.items():
                prop_path = _pointer(path, "properties", name)
                if item is None and prop_path in self.nullable:
                    continue
                out[name] = self.value(item, props.get(name), prop_path, depth + 1) if name in props else item
            value = out
        if isinstance(value, list):
            items = node.get("items")
            prefix = node.get("prefixItems")
            if isinstance(prefix, list):
                value = [self.value(v, prefix[i], _pointer(path, "prefixItems", i), depth + 1)
                         if i < len(prefix) else v for i, v in enumerate(value)]
            elif isinstance(items, Mapping):
                value = [self.value(v, items, _pointer(path, "items"), depth + 1) for v in value]
        return value

    def union(self, value: Any, branches: list[Any], path: str, depth: int) -> Any:
        from jsonschema import Draft202012Validator

        for index, branch in enumerate(branches):
            candidate = self.value(value, branch, _pointer(path, index), depth + 1)
            if candidate is value:
                continue
            probe = {**{k: v for k, v in self.original.items() if k in _DEFS_KEYS}, **branch} \
                if isinstance(branch, Mapping) else branch
            if Draft202012Validator(probe).is_valid(candidate):
                return candidate
        return value


# ---------------------------------------------------------------- records and fragments


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """What was asked of the provider, for one tool or output definition.

    ``original_schema`` is the caller's schema, ``sent_schema`` the one in the
    request, ``sent_digest`` the sha256 of its canonical JSON. ``dropped``
    lists every keyword left out; a dropped constraint is re-checked locally,
    because the decision layer validates against ``original_schema`` after
    :meth:`restore`.
    """

    provider: str
    kind: Literal["tool", "output"]
    name: str
    strategy: Strategy | None
    strict: bool
    original_schema: dict[str, Any]
    sent_schema: dict[str, Any]
    original_digest: str
    sent_digest: str
    dropped: tuple[DroppedKeyword, ...]
    nullable_added: frozenset[str]
    root_key: str | None
    schema_id: str | None = None
    schema_version: str | None = None
    control: bool = False
    library_version: str = __version__

    @property
    def needs_recheck(self) -> bool:
        """True when the provider does not enforce everything the original
        schema says (some constraint was dropped)."""
        return any(d.constraint for d in self.dropped)

    def restore(self, value: Any) -> Any:
        """Undo the conversion on a value the model produced for the sent
        schema: unwrap the root wrapper, and remove the ``null`` written for
        an optional property that strict mode made required (a null the
        original schema allows is kept). The result is what to validate
        against ``original_schema``."""
        if self.root_key is not None:
            if not (isinstance(value, dict) and set(value) == {self.root_key}):
                raise SchemaError(
                    "SCHEMA_MISMATCH",
                    f"the value must be an object with the single property {self.root_key!r}",
                    path="$",
                    issues=({"path": "$", "code": "root_wrapper", "expected": f"{{{self.root_key!r}: ...}}"},),
                )
            value = value[self.root_key]
        if not self.nullable_added:
            return value
        return _Restorer(self.original_schema, self.nullable_added).value(value, self.original_schema, "#")

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-serialisable view (the documented record shape)."""
        return {
            "provider": self.provider,
            "kind": self.kind,
            "name": self.name,
            "strategy": self.strategy,
            "strict": self.strict,
            "schema_id": self.schema_id,
            "schema_version": self.schema_version,
            "control": self.control,
            "original_schema": self.original_schema,
            "sent_schema": self.sent_schema,
            "original_digest": self.original_digest,
            "sent_digest": self.sent_digest,
            "dropped": [d.to_dict() for d in self.dropped],
            "nullable_added": sorted(self.nullable_added),
            "root_key": self.root_key,
            "library_version": self.library_version,
        }


def _caps(provider: Capabilities | str) -> Capabilities:
    return capabilities(provider) if isinstance(provider, str) else provider


def _family(caps: Capabilities) -> str:
    provider = caps.provider
    return "openai-chat" if provider == "openai-compatible" else provider


def tool_fragment(
    tool: ToolDefinition,
    provider: Capabilities | str,
    *,
    strict: bool | None = None,
    on_unsupported: OnUnsupported = "drop",
    strategy: Strategy | None = None,
) -> tuple[dict[str, Any], RequestRecord]:
    """One tool's declaration in the provider's shape, and its record.

    Chat: ``{"type": "function", "function": {name, description, parameters, strict}}``;
    Responses: ``{"type": "function", name, description, parameters, strict}``;
    Anthropic: ``{name, description, input_schema, strict}``;
    Gemini: one ``functionDeclarations`` entry ``{name, description, parametersJsonSchema}``.
    """
    caps = _caps(provider)
    converted = convert_schema(tool.schema, caps, strict=strict, on_unsupported=on_unsupported, object_root=True)
    fragment = _tool_shape(caps, tool.name, tool.description, converted)
    return fragment, _record(caps, "tool", tool.name, strategy, tool.schema, converted, control=tool.control)


def _tool_shape(caps: Capabilities, name: str, description: str, converted: ConvertedSchema) -> dict[str, Any]:
    family = _family(caps)
    sent = converted.schema
    if family == "openai-chat":
        return {"type": "function", "function": {"name": name, "description": description,
                                                 "parameters": sent, "strict": converted.strict}}
    if family == "openai-responses":
        return {"type": "function", "name": name, "description": description,
                "parameters": sent, "strict": converted.strict}
    if family == "anthropic":
        return {"name": name, "description": description, "input_schema": sent, "strict": converted.strict}
    if family == "gemini":
        return {"name": name, "description": description, "parametersJsonSchema": sent}
    raise ValueError(f"no request shape for {caps.provider!r}")  # pragma: no cover


def _record(
    caps: Capabilities,
    kind: Literal["tool", "output"],
    name: str,
    strategy: Strategy | None,
    original: dict[str, Any],
    converted: ConvertedSchema,
    *,
    control: bool = False,
    schema_id: str | None = None,
    schema_version: str | None = None,
) -> RequestRecord:
    return RequestRecord(
        provider=caps.provider,
        kind=kind,
        name=name,
        strategy=strategy,
        strict=converted.strict,
        original_schema=original,
        sent_schema=converted.schema,
        original_digest=schema_digest(original),
        sent_digest=schema_digest(converted.schema),
        dropped=converted.dropped,
        nullable_added=converted.nullable_added,
        root_key=converted.root_key,
        schema_id=schema_id,
        schema_version=schema_version,
        control=control,
    )


def output_fragment(
    output: OutputDefinition | Any,
    provider: Capabilities | str,
    *,
    strict: bool | None = None,
    on_unsupported: OnUnsupported = "drop",
) -> tuple[dict[str, Any], RequestRecord]:
    """The native structured-output setting, as top-level request keys.

    Chat: ``{"response_format": {"type": "json_schema", "json_schema": {name, schema, strict}}}``;
    Responses: ``{"text": {"format": {"type": "json_schema", name, schema, strict}}}``;
    Anthropic: ``{"output_config": {"format": {"type": "json_schema", "schema": ...}}}``;
    Gemini: ``{"generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": ...}}``.
    """
    caps = _caps(provider)
    if not caps.native_structured_output:
        raise ValueError(f"{caps.provider} has no native structured output; use build_request()")
    definition = OutputDefinition.of(output)
    converted = convert_schema(definition.schema, caps, strict=strict, on_unsupported=on_unsupported)
    family = _family(caps)
    sent = converted.schema
    described = {"description": definition.description} if definition.description else {}
    if family == "openai-chat":
        fragment: dict[str, Any] = {"response_format": {"type": "json_schema", "json_schema": {
            "name": definition.name, **described, "schema": sent, "strict": converted.strict}}}
    elif family == "openai-responses":
        fragment = {"text": {"format": {"type": "json_schema", "name": definition.name, **described,
                                        "schema": sent, "strict": converted.strict}}}
    elif family == "anthropic":
        fragment = {"output_config": {"format": {"type": "json_schema", "schema": sent}}}
    elif family == "gemini":
        fragment = {"generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": sent}}
    else:  # pragma: no cover
        raise ValueError(f"no request shape for {caps.provider!r}")
    record = _record(caps, "output", definition.name, "native_structured_output", definition.schema, converted,
                     schema_id=definition.schema_id, schema_version=definition.schema_version)
    return fragment, record


def json_text_instructions(output: OutputDefinition | Any, *, max_chars: int | None = None) -> str:
    """The instruction for the JSON-text strategy: one JSON value matching the
    schema, no prose, no Markdown fences."""
    definition = OutputDefinition.of(output)
    limit = f" Keep it under {max_chars} characters." if max_chars else ""
    return (
        "Reply with exactly one JSON value and nothing else: no prose before or after it, "
        f"no Markdown code fences.{limit} The value must match this JSON Schema "
        f"({definition.name}):\n{canonical_json(definition.schema)}"
    )


@dataclass(frozen=True, slots=True)
class RequestPlan:
    """Everything to add to one request: ``params`` (top-level body keys to
    merge), the chosen ``strategy``, one :class:`RequestRecord` per tool and
    per output, the ``submit_tool`` name under the tool-based strategy, and
    ``instructions`` under the JSON-text strategy."""

    provider: str
    strategy: Strategy | None
    params: dict[str, Any]
    records: tuple[RequestRecord, ...]
    submit_tool: str | None = None
    instructions: str | None = None
    output: OutputDefinition | None = field(default=None, repr=False)
    max_output_chars: int | None = None

    def record(self, name: str) -> RequestRecord:
        """The record of the tool or output called ``name``."""
        for record in self.records:
            if record.name == name:
                return record
        raise KeyError(name)

    @property
    def output_record(self) -> RequestRecord | None:
        """The record that carries the final answer (an output, or the submit tool)."""
        for record in self.records:
            if record.kind == "output" or record.control:
                return record
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "strategy": self.strategy, "submit_tool": self.submit_tool,
                "records": [r.to_dict() for r in self.records]}

    def prepare(self, response: NormalizedResponse, *, limits: Limits | None = None) -> NormalizedResponse:
        """``response`` in the shape :func:`decisions.decide` checks against
        the ORIGINAL schemas.

        - a call to the ``submit_*`` control tool becomes the final answer
          text (it is a control protocol, never a tool to execute; text the
          model wrote beside it is not part of the answer); beside other tool
          calls, or twice, it is ``AMBIGUOUS_DECISION``;
        - arguments and answers written for a converted schema are restored
          (:meth:`RequestRecord.restore`): the root wrapper removed, the nulls
          strict mode forced removed;
        - under the JSON-text strategy the answer must be exactly one JSON
          value within ``max_output_chars`` (``ParseError`` otherwise).

        Text that does not parse is left as it is, so that ``decide`` reports
        the parse error (or the cut-off) at its real place. A response that is
        not finished is returned unchanged.
        """
        if response.finish_reason not in ("stop", "tool_calls"):
            return response
        limits = limits or DEFAULT_LIMITS
        if self.strategy == "json_text" and not response.tool_calls:
            from .textcalls import parse_json_text

            # one bounded JSON value, no prose, no fence: checked here with the
            # length limit, then parsed again and validated by decide
            parse_json_text(response.text, limits=limits, max_chars=self.max_output_chars)
            return response
        by_name = {record.name: record for record in self.records if record.kind == "tool"}
        items: list[Item] = []
        submitted: list[ToolCallItem] = []
        others = 0
        for item in response.items:
            if isinstance(item, ToolCallItem):
                if self.submit_tool is not None and item.name == self.submit_tool:
                    submitted.append(item)
                    continue
                others += 1
                record = by_name.get(item.name)
                if record is not None and record.nullable_added:
                    item = replace(item, arguments=_restored_text(item.arguments, record, limits))
            items.append(item)
        output = self.output_record
        if submitted:
            if len(submitted) > 1 or others:
                raise SchemaError(
                    "AMBIGUOUS_DECISION",
                    f"the response submits the final answer ({self.submit_tool}) and also "
                    + ("submits it again" if len(submitted) > 1 else "does something else"),
                    path="$",
                    hint=f"either call tools or call {self.submit_tool} once, alone",
                )
            assert output is not None
            text = _restored_text(submitted[0].arguments, output, limits)
            items = [item for item in items if not isinstance(item, TextItem)]
            items.append(TextItem(item_id=submitted[0].item_id, text=text))
            return replace(response, items=tuple(items), finish_reason="stop")
        if (self.strategy == "native_structured_output" and output is not None and not others
                and (output.root_key is not None or output.nullable_added) and response.text.strip()):
            text = _restored_text(response.text, output, limits)
            items = [item for item in items if not isinstance(item, TextItem)]
            items.append(TextItem(item_id="output", text=text))
        return replace(response, items=tuple(items))


def _restored_text(text: str, record: RequestRecord, limits: Limits) -> str:
    """``text`` restored through ``record`` as canonical JSON, or unchanged
    when it does not parse (the decision layer reports that error)."""
    from .._backend import impl
    from ..errors import ParseError

    try:
        value = impl.loads(text, limits=limits)
    except ParseError:
        return text
    try:
        return canonical_json(record.restore(value))
    except SchemaError:
        return text


def _tools_param(caps: Capabilities, fragments: list[dict[str, Any]]) -> dict[str, Any]:
    if not fragments:
        return {}
    if _family(caps) == "gemini":
        return {"tools": [{"functionDeclarations": fragments}]}
    return {"tools": fragments}


def _tool_choice(caps: Capabilities, only: str | None) -> dict[str, Any]:
    """Force a tool call: the named one when ``only`` is given, else any."""
    family = _family(caps)
    if family == "openai-chat":
        return {"tool_choice": {"type": "function", "function": {"name": only}} if only else "required"}
    if family == "openai-responses":
        return {"tool_choice": {"type": "function", "name": only} if only else "required"}
    if family == "anthropic":
        return {"tool_choice": {"type": "tool", "name": only} if only else {"type": "any"}}
    config: dict[str, Any] = {"mode": "ANY"}
    if only:
        config["allowedFunctionNames"] = [only]
    return {"toolConfig": {"functionCallingConfig": config}}


def build_request(
    provider: Capabilities | str,
    *,
    tools: Sequence[ToolDefinition | Any] = (),
    output: OutputDefinition | Any = None,
    strict: bool | None = None,
    on_unsupported: OnUnsupported = "drop",
    strategy: Strategy | None = None,
    max_output_chars: int | None = None,
) -> RequestPlan:
    """The request fragments for ``tools`` and ``output`` on ``provider``.

    The strategy for ``output`` comes from the provider's capabilities
    (:func:`~decisions.request.capabilities.choose_strategy`) unless given:
    native structured output; else a ``submit_<name>`` control tool with a
    forced tool choice; else JSON text (``instructions`` to put in the prompt,
    no schema sent). Tools are only declared where the provider has tool
    calling; they may be :class:`ToolDefinition` or registered
    :class:`decisions.Tool` objects.
    """
    caps = _caps(provider)
    tools = [ToolDefinition.of(tool) for tool in tools]
    definition = None if output is None else OutputDefinition.of(output)
    if definition is not None and strategy is None:
        strategy = choose_strategy(caps, definition, strict=strict)
    if tools and not caps.tool_calling:
        raise ValueError(f"{caps.provider} has no tool calling; describe the tools in the prompt "
                         "and read calls with decisions.parse_tool_calls")
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        raise ValueError("tool names must be unique")
    fragments: list[dict[str, Any]] = []
    records: list[RequestRecord] = []
    params: dict[str, Any] = {}
    for tool in tools:
        fragment, record = tool_fragment(tool, caps, strict=strict, on_unsupported=on_unsupported)
        fragments.append(fragment)
        records.append(record)
    submit = None
    instructions = None
    if definition is not None:
        if strategy == "native_structured_output":
            fragment_params, record = output_fragment(definition, caps, strict=strict, on_unsupported=on_unsupported)
            params.update(fragment_params)
            records.append(record)
        elif strategy == "tool_structured_response":
            submit_def = definition.submit_tool()
            if submit_def.name in names:
                raise ValueError(f"a tool is already called {submit_def.name!r}")
            converted_strict = strict
            if converted_strict is None:
                converted_strict = caps.strict_json_schema and _converts(submit_def.schema, caps, on_unsupported)
            converted = convert_schema(submit_def.schema, caps, strict=converted_strict,
                                       on_unsupported=on_unsupported, object_root=False)
            if converted.root_key is None and converted.schema.get("type") != "object":
                converted = _wrapped(converted, caps)
            fragments.append(_tool_shape(caps, submit_def.name, submit_def.description, converted))
            records.append(_record(caps, "tool", submit_def.name, strategy, definition.schema, converted,
                                   control=True, schema_id=definition.schema_id,
                                   schema_version=definition.schema_version))
            submit = submit_def.name
            params.update(_tool_choice(caps, None if tools else submit))
        elif strategy == "json_text":
            instructions = json_text_instructions(definition, max_chars=max_output_chars)
            records.append(RequestRecord(
                provider=caps.provider, kind="output", name=definition.name, strategy=strategy, strict=False,
                original_schema=definition.schema, sent_schema={}, original_digest=schema_digest(definition.schema),
                sent_digest=schema_digest({}), dropped=(), nullable_added=frozenset(), root_key=None,
                schema_id=definition.schema_id, schema_version=definition.schema_version,
            ))
        else:
            raise ValueError(f"unknown strategy {strategy!r}")
    if caps.max_tools is not None and len(fragments) > caps.max_tools:
        raise ValueError(f"{caps.provider} accepts at most {caps.max_tools} tools")
    _check_strict_totals(caps, records)
    params = {**_tools_param(caps, fragments), **params}
    return RequestPlan(
        provider=caps.provider,
        strategy=strategy,
        params=params,
        records=tuple(records),
        submit_tool=submit,
        instructions=instructions,
        output=definition,
        max_output_chars=max_output_chars,
    )


def _property_counts(schema: Mapping[str, Any]) -> tuple[int, int]:
    """(optional properties, properties whose schema is a union) in ``schema``."""
    optional = unions = 0
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, Mapping):
            continue
        props = node.get("properties")
        if isinstance(props, Mapping):
            required = set(node.get("required", ()))
            for name, sub in props.items():
                optional += name not in required
                if isinstance(sub, Mapping) and ("anyOf" in sub or isinstance(sub.get("type"), list)):
                    unions += 1
        stack.extend(value for value in node.values() if isinstance(value, (Mapping, list)))
    return optional, unions


def _check_strict_totals(caps: Capabilities, records: Sequence[RequestRecord]) -> None:
    """The provider's per-request totals over all strict schemas."""
    strict = [record for record in records if record.strict]
    tools = sum(1 for record in strict if record.kind == "tool")
    if caps.max_strict_tools is not None and tools > caps.max_strict_tools:
        raise _unsupported(f"{tools} strict tools; {caps.provider} accepts {caps.max_strict_tools} per request "
                           "(declare some with strict=False)", "#")
    optional = unions = 0
    for record in strict:
        counts = _property_counts(record.sent_schema)
        optional += counts[0]
        unions += counts[1]
    if caps.max_optional_properties is not None and optional > caps.max_optional_properties:
        raise _unsupported(f"{optional} optional properties across the strict schemas; {caps.provider} "
                           f"accepts {caps.max_optional_properties}", "#")
    if caps.max_union_properties is not None and unions > caps.max_union_properties:
        raise _unsupported(f"{unions} properties with union types across the strict schemas; {caps.provider} "
                           f"accepts {caps.max_union_properties}", "#")


def _converts(schema: Mapping[str, Any], caps: Capabilities, on_unsupported: OnUnsupported) -> bool:
    try:
        convert_schema(schema, caps, strict=True, on_unsupported=on_unsupported)
    except SchemaError:
        return False
    return True


def _wrapped(converted: ConvertedSchema, caps: Capabilities) -> ConvertedSchema:
    """Tool arguments are always an object: wrap a non-object output."""
    sent = dict(converted.schema)
    defs = sent.pop("$defs", None)
    wrapped: dict[str, Any] = {"type": "object", "properties": {"value": sent}, "required": ["value"]}
    if converted.strict and caps.strict_requires_closed_objects:
        wrapped["additionalProperties"] = False
    if defs:
        wrapped["$defs"] = defs
    return ConvertedSchema(wrapped, converted.strict, converted.dropped, converted.nullable_added, "value")
