"""One request from tools and an output: :func:`build_request` and the
:class:`RequestPlan` it returns.

The plan merges the fragments of :mod:`~decisions.request.fragments` into
the top-level keys of one request body (the tool list, a forced tool choice,
the structured-output setting), checks the provider's per-request totals,
and afterwards :meth:`RequestPlan.prepare` turns the provider's response
back into the shape the decision layer checks against the ORIGINAL schemas.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence, overload

from .. import _backend
from .._payload import canonical_json
from ..errors import ParseError, SchemaError, snapshot_error
from ..limits import DEFAULT_LIMITS, Limits, count
from ..types import FixedResponse, Item, NormalizedResponse, ResponseSnapshot, TextItem, ToolCallItem
from .capabilities import Capabilities, Strategy
from .conversion import ConvertedSchema, OnUnsupported, _unsupported, convert_schema, schema_digest
from .definitions import OutputDefinition, ToolDefinition
from .fragments import (
    RequestRecord,
    _caps,
    _family,
    _record,
    _tool_shape,
    choose_strategy,
    json_text_instructions,
    output_fragment,
    tool_fragment,
)
from .textcalls import parse_json_text

__all__ = ["RequestPlan", "build_request"]


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
        return {
            "provider": self.provider,
            "strategy": self.strategy,
            "submit_tool": self.submit_tool,
            "records": [r.to_dict() for r in self.records],
        }

    @overload
    def prepare(self, response: NormalizedResponse, *, limits: Limits | None = None) -> NormalizedResponse: ...
    @overload
    def prepare(self, response: FixedResponse, *, limits: Limits | None = None) -> FixedResponse: ...
    def prepare(
        self, response: NormalizedResponse | FixedResponse, *, limits: Limits | None = None
    ) -> NormalizedResponse | FixedResponse:
        """``response`` in the shape :func:`decisions.decide` checks against
        the ORIGINAL schemas.

        - a call to the ``submit_*`` control tool becomes the final answer
          text (it is a control protocol, never a tool to execute; text the
          model wrote beside it is not part of the answer); beside other tool
          calls, or twice, it is ``AMBIGUOUS_DECISION``; a call to it that is
          not complete, or not a function call, is left where it is for
          ``decide`` to refuse;
        - arguments and answers written for a converted schema are restored
          (:meth:`RequestRecord.restore`): the root wrapper removed, the nulls
          strict mode forced removed (a call of another kind than
          ``function`` is left verbatim); a value without the wrapper is
          ``SCHEMA_MISMATCH`` (never read as the value it should have wrapped);
        - under the JSON-text strategy the answer must be exactly one JSON
          value within ``max_output_chars`` (``ParseError`` otherwise).

        Text that does not parse is left as it is, so that ``decide`` reports
        the parse error (or the cut-off) at its real place. A response that is
        not finished is returned unchanged. A
        :class:`~decisions.types.FixedResponse` comes back as one, with its
        fixes, so ``decide`` still treats it as repaired; a provisional
        snapshot is ``StreamError(SNAPSHOT_NOT_DECIDABLE)``, as in ``decide``.
        """
        if isinstance(response, FixedResponse):
            return FixedResponse(self.prepare(response.response, limits=limits), response.applied)
        if isinstance(response, ResponseSnapshot):
            raise snapshot_error(response.state)
        if response.finish_reason not in ("stop", "tool_calls"):
            return response
        limits = limits or DEFAULT_LIMITS
        if self.strategy == "json_text" and not response.tool_calls:
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
                if record is not None and record.nullable_added and item.call_kind == "function":
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
            if not submitted[0].complete or submitted[0].call_kind != "function":
                return response  # an unfinished call, or one of another kind: decide refuses it where it is
            text = _restored_text(submitted[0].arguments, output, limits)
            items = [item for item in items if not isinstance(item, TextItem)]
            items.append(TextItem(item_id=submitted[0].item_id, text=text))
            return replace(response, items=tuple(items), finish_reason="stop")
        if (
            self.strategy == "native_structured_output"
            and output is not None
            and not others
            and (output.root_key is not None or output.nullable_added)
            and response.text.strip()
        ):
            text = _restored_text(response.text, output, limits)
            items = [item for item in items if not isinstance(item, TextItem)]
            items.append(TextItem(item_id="output", text=text))
        return replace(response, items=tuple(items))


def _restored_text(text: str, record: RequestRecord, limits: Limits) -> str:
    """``text`` restored through ``record`` as canonical JSON, or unchanged
    when it does not parse (the decision layer reports that error). A value
    without the root wrapper the sent schema asked for is ``SCHEMA_MISMATCH``
    here: read as it stands, it would be checked as if it were the wrapped
    value, which the model did not write."""
    impl = _backend.impl

    try:
        value = impl.loads(text, limits=limits)
    except ParseError:
        return text
    return canonical_json(record.restore(value))


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
    if max_output_chars is not None:
        count("max_output_chars", max_output_chars)
    tools = [ToolDefinition.of(tool) for tool in tools]
    definition = None if output is None else OutputDefinition.of(output)
    if definition is not None and strategy is None:
        strategy = choose_strategy(caps, definition, strict=strict)
    if tools and not caps.tool_calling:
        raise ValueError(
            f"{caps.provider} has no tool calling; describe the tools in the prompt "
            "and read calls with decisions.parse_tool_calls"
        )
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
            fragment, record = _submit_fragment(definition, caps, names, strict, on_unsupported)
            fragments.append(fragment)
            records.append(record)
            submit = record.name
            params.update(_tool_choice(caps, None if tools else submit))
        elif strategy == "json_text":
            instructions = json_text_instructions(definition, max_chars=max_output_chars)
            records.append(_json_text_record(caps, definition))
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


def _submit_fragment(
    definition: OutputDefinition,
    caps: Capabilities,
    names: list[str],
    strict: bool | None,
    on_unsupported: OnUnsupported,
) -> tuple[dict[str, Any], RequestRecord]:
    """The ``submit_<name>`` control tool that carries the final answer under
    the tool-based strategy, and its record."""
    submit_def = definition.submit_tool()
    if submit_def.name in names:
        raise ValueError(f"a tool is already called {submit_def.name!r}")
    converted_strict = strict
    if converted_strict is None:
        converted_strict = caps.strict_json_schema and _converts(submit_def.schema, caps, on_unsupported)
    converted = convert_schema(
        submit_def.schema, caps, strict=converted_strict, on_unsupported=on_unsupported, object_root=False
    )
    if converted.root_key is None and converted.schema.get("type") != "object":
        converted = _wrapped(converted, caps)
    record = _record(
        caps,
        "tool",
        submit_def.name,
        "tool_structured_response",
        definition.schema,
        converted,
        control=True,
        schema_id=definition.schema_id,
        schema_version=definition.schema_version,
    )
    return _tool_shape(caps, submit_def.name, submit_def.description, converted), record


def _json_text_record(caps: Capabilities, definition: OutputDefinition) -> RequestRecord:
    """The record of an output asked for as JSON text: nothing is sent."""
    return RequestRecord(
        provider=caps.provider,
        kind="output",
        name=definition.name,
        strategy="json_text",
        strict=False,
        original_schema=definition.schema,
        sent_schema={},
        original_digest=schema_digest(definition.schema),
        sent_digest=schema_digest({}),
        dropped=(),
        nullable_added=frozenset(),
        root_key=None,
        schema_id=definition.schema_id,
        schema_version=definition.schema_version,
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
        raise _unsupported(
            f"{tools} strict tools; {caps.provider} accepts {caps.max_strict_tools} per request "
            "(declare some with strict=False)",
            "#",
        )
    optional = unions = 0
    for record in strict:
        counts = _property_counts(record.sent_schema)
        optional += counts[0]
        unions += counts[1]
    if caps.max_optional_properties is not None and optional > caps.max_optional_properties:
        raise _unsupported(
            f"{optional} optional properties across the strict schemas; {caps.provider} "
            f"accepts {caps.max_optional_properties}",
            "#",
        )
    if caps.max_union_properties is not None and unions > caps.max_union_properties:
        raise _unsupported(
            f"{unions} properties with union types across the strict schemas; {caps.provider} "
            f"accepts {caps.max_union_properties}",
            "#",
        )


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
