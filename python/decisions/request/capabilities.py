"""What each provider's API can do, as data, and the output strategy chosen from it.

The rest of the package asks a :class:`Capabilities` object what a provider
supports (native structured output, a strict flag, parallel calls, streamed
arguments, which JSON Schema keywords it enforces) instead of testing provider
names. The profiles below follow each provider's documented structured-output
rules; :func:`capabilities` accepts overrides for a model or a local server
that supports less (or more) than its API family.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Final, Literal

__all__ = [
    "Capabilities",
    "Strategy",
    "STRATEGIES",
    "ANNOTATION_KEYWORDS",
    "capabilities",
]

Strategy = Literal["native_structured_output", "tool_structured_response", "json_text"]
#: In order of preference: the provider enforces the shape, a ``submit_*``
#: tool carries it, or the model writes one bounded JSON value as text.
STRATEGIES: Final[tuple[Strategy, ...]] = (
    "native_structured_output",
    "tool_structured_response",
    "json_text",
)

#: Keywords that describe a value without constraining it. Dropping one of
#: these loses no check, so it is recorded but never re-checked.
ANNOTATION_KEYWORDS: Final[frozenset[str]] = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$schema",
        "$id",
        "$anchor",
        "discriminator",
        "propertyOrdering",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """What one provider API supports (seed section 11).

    ``supported_schema_keywords`` is the set of JSON Schema keywords the
    provider accepts in a strict / structured schema; anything else is found
    locally before sending. ``string_formats`` is the set of ``format`` values
    it enforces (``None``: any). ``ref_siblings`` says whether a ``$ref`` may
    carry other keywords beside it. ``max_min_items`` caps the ``minItems``
    value the provider honours.
    """

    provider: str
    native_structured_output: bool
    tool_calling: bool
    strict_json_schema: bool
    parallel_tool_calls: bool
    streaming_tool_arguments: bool
    supported_schema_keywords: frozenset[str]
    string_formats: frozenset[str] | None = None
    #: strict mode needs every property listed in ``required``
    strict_requires_all_required: bool = False
    #: strict mode needs ``additionalProperties: false`` on every object
    strict_requires_closed_objects: bool = False
    #: the root of a structured schema must be an object (not a union)
    root_must_be_object: bool = False
    #: ``$ref`` / ``$defs`` may be sent (otherwise they are inlined)
    refs: bool = True
    #: a definition may refer to itself, directly or through others
    recursive_refs: bool = True
    ref_siblings: bool = False
    #: ``enum`` values may only be these JSON types
    enum_value_types: frozenset[str] = frozenset({"string", "number", "integer", "boolean", "null"})
    max_min_items: int | None = None
    #: ``pattern`` must avoid backreferences, lookaround and word boundaries
    pattern_subset: bool = False
    #: per request, across all strict schemas (``None``: not documented)
    max_strict_tools: int | None = None
    max_optional_properties: int | None = None
    max_union_properties: int | None = None
    #: object nesting the provider accepts (``None``: not documented)
    max_nesting: int | None = None
    max_tools: int | None = None

    def supports(self, keyword: str) -> bool:
        """Whether ``keyword`` may appear in a schema sent to this provider."""
        return keyword in self.supported_schema_keywords

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable view (sets as sorted lists)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = sorted(value) if isinstance(value, frozenset) else value
        return out


_CORE: Final = frozenset({"type", "properties", "required", "additionalProperties", "items", "enum"})

_OPENAI_KEYWORDS: Final = _CORE | {
    "anyOf",
    "$ref",
    "$defs",
    "const",
    "title",
    "description",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
}
_OPENAI_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)

_ANTHROPIC_KEYWORDS: Final = _CORE | {
    "anyOf",
    "allOf",
    "$ref",
    "$defs",
    "definitions",
    "const",
    "title",
    "description",
    "format",
    "pattern",
    "minItems",
}
_ANTHROPIC_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)

_GEMINI_KEYWORDS: Final = _CORE | {
    "$id",
    "$defs",
    "$ref",
    "$anchor",
    "format",
    "title",
    "description",
    "prefixItems",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "oneOf",
    "propertyOrdering",
}


def _openai(provider: str) -> Capabilities:
    return Capabilities(
        provider=provider,
        native_structured_output=True,
        tool_calling=True,
        strict_json_schema=True,
        parallel_tool_calls=True,
        streaming_tool_arguments=True,
        supported_schema_keywords=_OPENAI_KEYWORDS,
        string_formats=_OPENAI_FORMATS,
        strict_requires_all_required=True,
        strict_requires_closed_objects=True,
        root_must_be_object=True,
        enum_value_types=frozenset({"string", "number", "integer", "boolean", "null"}),
        max_nesting=10,
        max_tools=128,
    )


_PROFILES: Final[dict[str, Capabilities]] = {
    "openai-chat": _openai("openai-chat"),
    "openai-responses": _openai("openai-responses"),
    "anthropic": Capabilities(
        provider="anthropic",
        native_structured_output=True,
        tool_calling=True,
        strict_json_schema=True,
        parallel_tool_calls=True,
        streaming_tool_arguments=True,
        supported_schema_keywords=_ANTHROPIC_KEYWORDS,
        string_formats=_ANTHROPIC_FORMATS,
        strict_requires_closed_objects=True,
        recursive_refs=False,
        max_min_items=1,
        pattern_subset=True,
        max_strict_tools=20,
        max_optional_properties=24,
        max_union_properties=16,
    ),
    "gemini": Capabilities(
        provider="gemini",
        native_structured_output=True,
        tool_calling=True,
        strict_json_schema=False,
        parallel_tool_calls=True,
        streaming_tool_arguments=False,
        supported_schema_keywords=_GEMINI_KEYWORDS,
        enum_value_types=frozenset({"string", "number", "integer"}),
    ),
    # A local OpenAI-compatible server (vLLM, llama.cpp, Ollama, mlx): assume
    # nothing beyond text until the caller says otherwise with overrides.
    "openai-compatible": Capabilities(
        provider="openai-compatible",
        native_structured_output=False,
        tool_calling=False,
        strict_json_schema=False,
        parallel_tool_calls=False,
        streaming_tool_arguments=False,
        supported_schema_keywords=_OPENAI_KEYWORDS,
    ),
}


def capabilities(provider: str, **overrides: Any) -> Capabilities:
    """The capabilities of ``provider`` (``"openai-chat"``, ``"openai-responses"``,
    ``"anthropic"``, ``"gemini"`` or ``"openai-compatible"``), with any field
    replaced by a keyword override, e.g.
    ``capabilities("openai-compatible", tool_calling=True)``."""
    try:
        profile = _PROFILES[provider]
    except KeyError:
        raise ValueError(f"unknown provider {provider!r}; expected one of {sorted(_PROFILES)}") from None
    if "supported_schema_keywords" in overrides:
        overrides["supported_schema_keywords"] = frozenset(overrides["supported_schema_keywords"])
    return replace(profile, **overrides) if overrides else profile
