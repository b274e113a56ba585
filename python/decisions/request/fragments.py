"""From one tool or output definition, every provider's request fragments.

A :class:`~decisions.request.definitions.ToolDefinition` and an
:class:`~decisions.request.definitions.OutputDefinition` become the pieces of
a request body: Chat ``tools`` / ``response_format``, Responses ``tools`` /
``text.format``, Anthropic ``tools`` (``input_schema``, ``strict``) /
``output_config.format``, Gemini ``functionDeclarations`` /
``generationConfig.responseJsonSchema``, with the schema converted by
:func:`~decisions.request.conversion.convert_schema`.

Every fragment comes with a :class:`RequestRecord`: the original schema, the
schema actually sent, the sha256 digest of its canonical JSON, what was
dropped, and the library version. ``RequestRecord.restore`` undoes the
conversion on a response value so that the decision layer validates it
against the ORIGINAL schema, dropped constraints included. The fragments of
one request are put together by :mod:`~decisions.request.plan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .._payload import canonical_json
from .._version import __version__
from ..errors import SchemaError
from ..limits import count
from ._restore import Restorer
from .capabilities import Capabilities, Strategy, capabilities
from .conversion import (
    ConvertedSchema,
    DroppedKeyword,
    OnUnsupported,
    convert_schema,
    schema_digest,
)
from .definitions import OutputDefinition, ToolDefinition

__all__ = [
    "RequestRecord",
    "tool_fragment",
    "output_fragment",
    "choose_strategy",
    "json_text_instructions",
]

# ---------------------------------------------------------------- strategy


def choose_strategy(caps: Capabilities, output: Any = None, *, strict: bool | None = None) -> Strategy:
    """The output strategy for ``caps``: native structured output if the
    provider has it and can take ``output``'s schema, else a tool-based
    structured response (a ``submit_*`` control tool), else bounded JSON text.

    ``output`` is a Pydantic model, a JSON Schema dict or an
    :class:`~decisions.request.requests.OutputDefinition`. Keywords the provider does
    not enforce do not move the choice (they are dropped, recorded and checked
    locally); a schema the provider cannot take at all (``UNSUPPORTED_SCHEMA``:
    an open map in strict mode, recursion it forbids) does. The tool-based
    strategy falls back to a non-strict tool when ``strict`` is not forced.
    """
    if output is None:
        if caps.native_structured_output:
            return "native_structured_output"
        return "tool_structured_response" if caps.tool_calling else "json_text"
    schema = OutputDefinition.of(output).schema

    def converts(strict_mode: bool | None) -> bool:
        try:
            convert_schema(schema, caps, strict=strict_mode, on_unsupported="drop")
        except SchemaError as error:
            if error.code != "UNSUPPORTED_SCHEMA":
                raise
            return False
        return True

    if caps.native_structured_output and converts(strict):
        return "native_structured_output"
    if caps.tool_calling and (converts(strict) or (strict is None and converts(False))):
        return "tool_structured_response"
    return "json_text"


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
        against ``original_schema``. A value the caller's stack is too deep
        to walk is ``SCHEMA_MISMATCH`` (issue ``too_deep``)."""
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
        try:
            return Restorer(self.original_schema, self.nullable_added).value(value, self.original_schema, "#")
        except RecursionError:  # the caller's own stack was already deep
            raise SchemaError(
                "SCHEMA_MISMATCH",
                "the value nests too deep to be restored on this stack",
                path="$",
                issues=({"path": "$", "code": "too_deep", "expected": "a value restorable on the caller's stack"},),
            ) from None

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
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": sent, "strict": converted.strict},
        }
    if family == "openai-responses":
        return {
            "type": "function",
            "name": name,
            "description": description,
            "parameters": sent,
            "strict": converted.strict,
        }
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
        fragment: dict[str, Any] = {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": definition.name, **described, "schema": sent, "strict": converted.strict},
            }
        }
    elif family == "openai-responses":
        fragment = {
            "text": {
                "format": {
                    "type": "json_schema",
                    "name": definition.name,
                    **described,
                    "schema": sent,
                    "strict": converted.strict,
                }
            }
        }
    elif family == "anthropic":
        fragment = {"output_config": {"format": {"type": "json_schema", "schema": sent}}}
    elif family == "gemini":
        fragment = {"generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": sent}}
    else:  # pragma: no cover
        raise ValueError(f"no request shape for {caps.provider!r}")
    record = _record(
        caps,
        "output",
        definition.name,
        "native_structured_output",
        definition.schema,
        converted,
        schema_id=definition.schema_id,
        schema_version=definition.schema_version,
    )
    return fragment, record


def json_text_instructions(output: OutputDefinition | Any, *, max_chars: int | None = None) -> str:
    """The instruction for the JSON-text strategy: one JSON value matching the
    schema, no prose, no Markdown fences."""
    definition = OutputDefinition.of(output)
    limit = "" if max_chars is None else f" Keep it under {count('max_chars', max_chars)} characters."
    return (
        "Reply with exactly one JSON value and nothing else: no prose before or after it, "
        f"no Markdown code fences.{limit} The value must match this JSON Schema "
        f"({definition.name}):\n{canonical_json(definition.schema)}"
    )
