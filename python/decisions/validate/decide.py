"""``decide``: from a :class:`~decisions.types.NormalizedResponse` to a
decision an agent may act on, or the typed error of the first layer that
refuses it.

The layers run in order and the first failure stops the chain:

1. **completeness** (``StreamError``): only a response that finished with
   ``stop`` or ``tool_calls`` goes on. ``length`` is ``INCOMPLETE_RESPONSE``
   (retry with a larger budget; never repair a cut answer), a content filter
   ``CONTENT_FILTERED``, a refusal (finish reason or refusal item)
   ``REFUSAL``, ``cancelled`` ``RESPONSE_CANCELLED``, ``error``
   ``RESPONSE_ERROR``, ``unknown`` ``UNKNOWN_FINISH_REASON``, a snapshot
   ``SNAPSHOT_NOT_DECIDABLE``, an unfinished call ``INCOMPLETE_TOOL_CALL``.
   ``tool_calls`` with no call is ``FINISH_REASON_MISMATCH``. ``stop`` with
   calls is tolerated (Gemini and some Chat-compatible servers say ``stop``
   when they call tools), but then a call whose arguments do not parse is
   ``FINISH_REASON_MISMATCH``: the finish reason is not trusted to say the
   call was finished (arguments that parse but are not an object keep
   their own parse code). The number of calls is bounded here too, before
   anything is parsed: ``TOO_MANY_TOOL_CALLS``, a domain-layer code
   (``DomainError``) checked at this step.
2. **parse** (``ParseError``): each call's arguments, and the final answer
   when an output schema is given, go through the strict ``decisions.loads``
   with the caller's limits. Errors keep the parser's code, offset and hint
   and gain the path (``$.calls[0].arguments``). Arguments must be an object:
   ``[]``, ``null``, numbers are ``ARGUMENTS_NOT_OBJECT``; a string holding
   JSON is ``DOUBLE_ENCODED_JSON`` and is never unwrapped.
3. **decision shape** (``SchemaError``): no call and no text is
   ``EMPTY_DECISION``. Text beside calls follows ``text_policy``:
   ``"trace"`` (default) keeps it on the decision as trace, never parsed for
   actions, except that when an output schema is given and the text is
   itself a JSON object or array, it is a final answer beside calls:
   ``AMBIGUOUS_DECISION``; ``"reject"`` makes any non-blank text beside calls
   ``AMBIGUOUS_DECISION``.
4. **schema** (``SchemaError``): each call's arguments against its tool's
   schema, the final answer against ``output``; all issues of the layer in
   one ``SCHEMA_MISMATCH``.
5. **domain** (``DomainError``): every call's name is well formed
   (``INVALID_TOOL_NAME``: whitespace, control or invisible characters) and
   is not a look-alike of a registered or ruled name (``AMBIGUOUS_TOOL_NAME``:
   ``READ_FILE``, ``functions.read_file`` for ``read_file``), with or without a
   registry; with one, every call names a registered tool (``UNKNOWN_TOOL``
   with a few suggestions).
6. **policy** (``PolicyError``): see :mod:`decisions.validate.policy`; a cancelled
   run refuses a final answer too.

Call kinds (:data:`~decisions.types.CallKind`): a ``custom`` call's input is
text, never parsed as JSON: it is validated as a string by its tool's schema
and is the call's ``arguments``. A client-executed call (``local_shell``,
``computer``, ``apply_patch``, ``shell``) has its action (operation) object
as arguments, parsed like a function call's. A call whose kind is not its
registered tool's ``kind`` is ``CALL_KIND_MISMATCH``; a call of any kind but
``function`` needs a registry (without one it is ``UNKNOWN_TOOL``), so no
client tool runs unless the host registered it.

A call's ``arguments`` are what its tool's schema produced (for a Pydantic
model, the validated model dumped by field name), so the executor gets
exactly the values the policy checked; ``validated`` is the model itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
from operator import attrgetter
from typing import Any, Final, Iterable, Literal, Mapping, NoReturn, Sequence, TypeVar

from .. import _backend
from ..errors import (
    DomainError,
    OutputError,
    ParseError,
    PolicyError,
    SchemaError,
    StreamError,
    at_call,
    in_batch,
    snapshot_error,
)
from ..limits import DEFAULT_LIMITS, Limits
from ..types import (
    FINISH_REASONS,
    FixedResponse,
    NormalizedResponse,
    ReasoningItem,
    RefusalItem,
    ResponseSnapshot,
    TextItem,
    ToolCallItem,
)
from ._issues import MAX_VALIDATION_DEPTH, issue
from .decision import (
    Decision,
    FinalDecision,
    ToolCall,
    ToolDecision,
    new_tool_call,
    new_tool_decision,
)
from .domain import Tool, ToolRegistry
from .policy import Policy, RunState, _allowed, _apply, _Plan
from .schema import Schema, schema_mismatch
from .versions import VersionedSchema

__all__ = ["decide", "check_complete", "parse_arguments", "TextPolicy"]

TextPolicy = Literal["trace", "reject"]

#: A call's id (a C function: no Python frame per call).
_call_id: Final = attrgetter("call_id")

#: The policy of a ``decide`` without one: every tool allowed, no path rules
#: (built once, so its compiled plans are reused).
_OPEN_POLICY: Final = Policy()

_FINISH_ERRORS: Mapping[str, tuple[str, str]] = {
    "length": (
        "INCOMPLETE_RESPONSE",
        "the output was cut off at the token limit; retry with a larger limit or a smaller task",
    ),
    "content_filter": ("CONTENT_FILTERED", "the provider withheld the output; rephrase the request"),
    "refusal": ("REFUSAL", "the model refused; do not retry the same request unchanged"),
    "cancelled": ("RESPONSE_CANCELLED", "the response was cancelled"),
    "error": ("RESPONSE_ERROR", "the provider reported an error; retry later"),
    "unknown": ("UNKNOWN_FINISH_REASON", "the provider's finish reason is not one this package knows"),
}


#: What to do about a provider's documented finish that is no canonical one
#: (still ``UNKNOWN_FINISH_REASON``: nothing in such a response may run), and
#: whether the same request may simply be sent again.
_UNKNOWN_FINISH_HINTS: Mapping[str, tuple[str, bool]] = {
    # Anthropic: a long-running turn paused by the server, resumed by sending it back
    "pause_turn": (
        "the provider paused a long-running turn; send the response back as the assistant turn to continue it",
        False,
    ),
    # DeepSeek: the server ran out of inference resources part way
    "insufficient_system_resource": (
        "the provider interrupted the response for lack of resources; retry the request",
        True,
    ),
    # Mistral: the model's context window is full (not the max_tokens cut)
    "model_length": (
        "the conversation filled the model's context window; shorten it before retrying",
        False,
    ),
}


def check_complete(response: object) -> NormalizedResponse:
    """The completeness gate: ``response`` itself if it may become a
    decision, else the ``StreamError`` that says why not."""
    _complete(response)
    return response  # type: ignore[return-value]


def _complete(response: object) -> tuple[tuple[ToolCallItem, ...], str]:
    """:func:`check_complete`, returning what a decision is made of: the
    response's tool calls and its text (read in one pass over the items)."""
    if type(response) is not NormalizedResponse and isinstance(response, ResponseSnapshot):
        raise snapshot_error(response.state)
    if not isinstance(response, NormalizedResponse):
        raise TypeError(f"decide takes a NormalizedResponse, not {type(response).__name__}")
    reason = response.finish_reason
    if reason not in _DECIDABLE:
        _finish_error(response)
    calls: list[ToolCallItem] = []
    texts: list[str] = []
    incomplete = -1  # the first unfinished call's index, named once no refusal is found
    for index, item in enumerate(response.items):
        if type(item) is ToolCallItem or isinstance(item, ToolCallItem):
            item = _plain_fields(item, index, _CALL_FIELDS)
            if incomplete < 0 and not item.complete:
                incomplete = len(calls)
            calls.append(item)
        elif isinstance(item, TextItem):
            texts.append(_plain_fields(item, index, _TEXT_FIELDS).text)
        elif not isinstance(item, (RefusalItem, ReasoningItem)):
            raise TypeError(
                f"response.items[{index}] is a {type(item).__name__}, not a TextItem, RefusalItem, "
                "ReasoningItem or ToolCallItem: an item decide cannot read is never skipped"
            )
        elif isinstance(item, RefusalItem):
            raise StreamError(
                "REFUSAL",
                f"the response holds a refusal (item {index})",
                path=f"$.items[{index}]",
                hint=_FINISH_ERRORS["refusal"][1],
            )
    if incomplete >= 0:
        index, call = incomplete, calls[incomplete]
        raise StreamError(
            "INCOMPLETE_TOOL_CALL",
            f"tool call {call.call_id!r} ({call.name!r}) was not completed",
            path=f"$.calls[{index}]",
            hint="the call was cut off; it cannot run",
            call_index=index,
            call_id=call.call_id,
            tool=call.name,
        )
    if reason == "tool_calls" and not calls:
        raise StreamError(
            "FINISH_REASON_MISMATCH", "the finish reason says tool_calls but the response holds no call", path="$.calls"
        )
    return tuple(calls), "".join(texts)


#: The finish reasons a decision may be made of.
_DECIDABLE: Final = ("stop", "tool_calls")

#: The fields of a tool call and of a text item that ``decide`` reads, with
#: the type each must have: a hand-built item's odd value (``complete="false"``,
#: a ``None`` name, arguments given as a dict) is refused, never read by its
#: truthiness or passed on.
_CALL_FIELDS: Final = (
    ("item_id", str),
    ("call_id", str),
    ("name", str),
    ("arguments", str),
    ("complete", bool),
    ("call_id_generated", bool),
    ("call_kind", str),
)
_TEXT_FIELDS: Final = (("text", str),)


#: A call or text item, as :func:`_plain_fields` gives it back.
_Item = TypeVar("_Item", ToolCallItem, TextItem)


def _plain_fields(item: _Item, index: int, fields: tuple[tuple[str, type], ...]) -> _Item:
    """``item``, or a copy of it whose ``fields`` of a str subclass are the
    plain str each holds (so the name, id and arguments a decision carries
    are the ones it was checked as, whatever the subclass's ``__eq__``,
    ``__hash__`` or ``__str__`` say); TypeError unless each field has its type."""
    plain: dict[str, Any] = {}
    for name, kind in fields:
        value = getattr(item, name)
        if type(value) is kind:
            continue
        if not isinstance(value, kind):
            raise TypeError(f"response.items[{index}].{name} must be a {kind.__name__}, not {type(value).__name__}")
        plain[name] = str.__str__(value)  # bool has no subclass: only a str field gets here
    return dataclasses.replace(item, **plain) if plain else item


def _finish_error(response: NormalizedResponse) -> NoReturn:
    """The StreamError of a finish reason no decision is made of."""
    reason = response.finish_reason
    raw = f" (provider: {response.raw_finish_reason!r})" if response.raw_finish_reason else ""
    if reason not in FINISH_REASONS:
        raise StreamError("UNKNOWN_FINISH_REASON", f"finish reason {reason!r}{raw} is not known")
    if reason == "unknown" and response.raw_finish_reason is None:
        raise StreamError(
            "UNKNOWN_FINISH_REASON",
            "the response ended with no finish reason, so nothing says it is complete",
            hint="the stream may have been cut; retry the request",
            retryable=True,  # as NO_TERMINAL_EVENT: nothing ended it
        )
    code, hint = _FINISH_ERRORS[reason]
    documented = _UNKNOWN_FINISH_HINTS.get(response.raw_finish_reason or "") if reason == "unknown" else None
    if documented is not None:
        hint, retryable = documented
        raise StreamError(code, f"the response finished with {reason!r}{raw}", hint=hint, retryable=retryable)
    raise StreamError(code, f"the response finished with {reason!r}{raw}", hint=hint)


def _loads(text: str, limits: Limits, path: str) -> Any:
    try:
        return _backend.impl.loads(text, limits=limits)
    except ParseError as error:
        raise ParseError(
            error.code,
            error.message,
            doc=error.doc,
            pos=error.pos,
            lineno=error.lineno,
            colno=error.colno,
            hint=error.hint,
            retryable=error.retryable,
            path=path,
        ) from error


def _first_non_space(text: str) -> int:
    return len(text) - len(text.lstrip(" \t\r\n"))


def parse_arguments(text: str, *, limits: Limits = DEFAULT_LIMITS, path: str = "$.arguments") -> dict[str, Any]:
    """A call's arguments text parsed strictly into a JSON object, or the
    ``ParseError`` that names why not (``path`` is named in it)."""
    value = _loads(text, limits, path)
    if isinstance(value, dict):
        return value
    pos = _first_non_space(text)
    if isinstance(value, str):
        try:
            _backend.impl.loads(value, limits=limits)
        except ParseError:
            pass
        else:
            raise ParseError(
                "DOUBLE_ENCODED_JSON",
                "the arguments are a JSON string holding JSON, not an object",
                doc=text,
                pos=pos,
                path=path,
                hint="send the arguments object itself, not a string containing it",
            )
    kind = "null" if value is None else type(value).__name__
    kind = {"list": "an array", "bool": "a boolean", "int": "a number", "float": "a number", "str": "a string"}.get(
        kind, kind
    )
    raise ParseError(
        "ARGUMENTS_NOT_OBJECT",
        f"the arguments are {kind}, not a JSON object",
        doc=text,
        pos=pos,
        path=path,
        hint='arguments must be a JSON object such as {"path": "a.txt"}',
    )


def _output_schema(output: Any) -> tuple[Schema, str | None]:
    if isinstance(output, VersionedSchema):
        return output.schema, output.schema_id
    return Schema.of(output), None


def _is_json_answer(text: str, limits: Limits) -> bool:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        _backend.impl.loads(stripped, limits=limits)
    except ParseError:
        return False
    return True


def decide(
    response: NormalizedResponse | ResponseSnapshot | FixedResponse,
    *,
    tools: ToolRegistry | Iterable[Tool] | Mapping[str, Any] | None = None,
    output: Any = None,
    policy: Policy | None = None,
    run: RunState | None = None,
    limits: Limits | None = None,
    text_policy: TextPolicy = "trace",
    max_calls: int | None = None,
    repaired: bool = False,
) -> Decision:
    """The decision ``response`` holds, or the first layer's error.

    ``tools``: the registry (or tools, or a name → argument-schema mapping);
    None skips the domain layer and argument schemas. ``output``: the final
    answer's schema (Pydantic type, JSON Schema dict, :class:`Schema` or a
    registered :class:`VersionedSchema`); None keeps the answer as text.
    ``policy``: :class:`Policy` (None: every tool allowed, no path rules).
    ``run``: cancellation and replay state. ``limits``: parser bounds and the
    default call bound; ``max_calls`` overrides the bound. ``repaired``: the
    response answers a repair prompt, so side-effecting tools are refused
    (``REPAIRED_CALL_REFUSED``); a :class:`~decisions.types.FixedResponse`
    from :func:`decisions.fix_response` is decided as repaired when a fix
    changed it. Build registries, schemas and policies once
    and pass them in: compiling them costs more than a decision (a policy
    compiles its rules against each registry it meets once, and raises
    ValueError there when a rule does not fit a tool).
    """
    if (
        type(response) is NormalizedResponse
        and output is None
        and text_policy == "trace"
        and (limits is None or type(limits) is Limits)
        and (policy is None or type(policy) is Policy)
        and (tools is None or type(tools) is ToolRegistry)
    ):
        plain = _plain_decision(response, tools, policy, run, limits, max_calls, repaired)
        if plain is not None:
            return plain
    limits = DEFAULT_LIMITS if limits is None else limits
    if isinstance(response, FixedResponse):
        repaired = repaired or response.repaired
        response = response.response
    if text_policy not in ("trace", "reject"):
        raise ValueError("text_policy must be 'trace' or 'reject'")
    items, text = _complete(response)
    assert isinstance(response, NormalizedResponse)  # _complete refuses anything else
    bound = limits.max_calls_per_response if max_calls is None else max_calls
    if len(items) > bound:
        raise DomainError(
            "TOO_MANY_TOOL_CALLS",
            f"the response holds {len(items)} tool calls; at most {bound} are allowed",
            path="$.calls",
            hint=f"make at most {bound} tool calls at once",
        )
    registry = tools if type(tools) is ToolRegistry or tools is None else ToolRegistry.of(tools)
    active = _OPEN_POLICY if policy is None else policy
    plan = active.plan(registry)  # a rule that does not fit the registry fails here, before any call
    schema, schema_id = (None, None) if output is None else _output_schema(output)
    if items:
        try:
            arguments = _parse_calls(items, response, limits)
            if text.strip() and (text_policy == "reject" or (schema is not None and _is_json_answer(text, limits))):
                raise SchemaError(
                    "AMBIGUOUS_DECISION",
                    "the response holds tool calls and a final answer",
                    path="$",
                    hint="either call tools or give the final answer, not both",
                )
            return _tool_decision(response, items, arguments, registry, active, plan, run, repaired, text)
        except OutputError as error:
            if error.call_index is not None and len(items) > 1 and not error.batch:
                in_batch(error, _batch(items, error.call_index, error.code))
            raise
    if not text.strip():
        raise SchemaError("EMPTY_DECISION", path="$", hint="call a tool or give the final answer")
    value: Any = text
    if schema is not None:
        parsed = _loads(text, limits, "$")
        value = schema.validate(parsed, text=text, root="$")
    if run is not None and run.cancelled:
        raise PolicyError("RUN_CANCELLED", path="$", hint="the run was cancelled; nothing may execute")
    return FinalDecision(
        value=value,
        text=text,
        schema_id=schema_id,
        provider=response.provider,
        response_id=response.response_id,
        model=response.model,
    )


def _plain_decision(
    response: NormalizedResponse,
    registry: ToolRegistry | None,
    policy: Policy | None,
    run: RunState | None,
    limits: Limits | None,
    max_calls: int | None,
    repaired: bool,
) -> ToolDecision | None:
    """The decision of a plain response, which ``decide`` tries first: every
    item a finished function call (text and reasoning beside them kept as
    trace), each call's arguments an object its registered tool accepts (or
    any object and a known name without a registry). One pass builds the
    calls; the policy gives its verdicts as in the general path.

    None whenever anything is not plain (a refusal, an unfinished or
    generated call, another call kind, an unknown tool, arguments that do
    not parse or validate, ...): ``decide``'s general path then decides the
    response from the start and raises what it finds, so every error keeps
    its layer order. Nothing here raises before the policy: it reads only.
    """
    if response.finish_reason not in _DECIDABLE:
        return None
    limits = DEFAULT_LIMITS if limits is None else limits
    items = response.items
    if len(items) > (limits.max_calls_per_response if max_calls is None else max_calls):
        return None  # every item counted: a response with this few calls is refused by no bound
    loads = _backend.impl.loads
    own = None if limits is DEFAULT_LIMITS else limits  # the default limits are loads' own
    plans = None if registry is None else registry._plain
    calls: list[ToolCall] = []
    texts: list[str] = []
    for item in items:
        if type(item) is not ToolCallItem:
            if type(item) is TextItem:
                texts.append(item.text)
            elif type(item) is not ReasoningItem:
                return None
            continue
        text = item.arguments
        if (
            item.complete is not True
            or item.call_kind != "function"
            or item.call_id_generated is not False
            or type(text) is not str
            or type(item.name) is not str
            or type(item.call_id) is not str
            or type(item.item_id) is not str
        ):
            return None  # anything else, hand-built responses' odd values included, is the general path's
        try:
            value = loads(text) if own is None else loads(text, limits=own)
        except ParseError:
            return None
        if type(value) is not dict:
            return None
        version = None
        arguments = validated = value
        if plans is not None:
            read = plans.get(item.name)
            if read is None:
                return None  # not registered, or registered for another kind of call
            version, schema, validator, extra, serializer, echo = read
            if schema is not None:
                if validator is None:  # a JSON Schema: valid values are their own arguments
                    found, validated = schema._issues_at(value, text, len(calls))
                    if found:
                        return None
                    arguments = validated
                elif len(text) <= MAX_VALIDATION_DEPTH or text.count("[") + text.count("{") <= MAX_VALIDATION_DEPTH:
                    # fewer brackets than validation's depth bound: no deeper nesting to refuse
                    try:
                        validated = validator.validate_json(text, strict=True, extra=extra)
                        if echo is None or tuple(value) != echo:
                            arguments = serializer.to_python(validated, mode="json", by_alias=False)
                    except Exception:
                        return None
                    if type(arguments) is not dict:
                        return None
                else:
                    return None
        calls.append(
            new_tool_call(
                item.call_id,
                item.name,
                arguments,
                len(calls),
                item.item_id,
                False,
                version,
                validated,
                "function",
            )
        )
    if not calls:
        return None
    active = _OPEN_POLICY if policy is None else policy
    if registry is None:
        names = active.plan(None).names
        for call in calls:
            if not names.passes(call.name) or call.name == _CALL_WRAPPER:
                return None  # a name not seen before, or the wrapper: the general path checks it
    if policy is None and run is None and not repaired:
        # the open policy (no rule, whatever the registry) allows every call
        # whose id is its own
        n = len(calls)
        if n > 1 and (calls[0].call_id == calls[1].call_id if n == 2 else len(set(map(_call_id, calls))) < n):
            return None
        verdicts = _allowed(calls)
    else:
        plan = active.plan(registry)  # a rule that does not fit the registry: ValueError, as in the general path
        # the policy's errors are its own to raise: a denial lists its batch
        # itself, and its other errors name no call
        verdicts = _apply(calls, active, plan, registry=registry, run=run, repaired=repaired)
    return new_tool_decision(
        tuple(calls),
        verdicts,
        active.batch,
        "".join(texts),
        response.provider,
        response.response_id,
        response.model,
        "tool",
    )


def _batch(items: Sequence[ToolCallItem], failed: int, code: str) -> list[dict[str, Any]]:
    """The calls of a response one call's error stopped (see ``OutputError.batch``)."""
    return [
        {
            "index": index,
            "call_id": item.call_id,
            "tool": item.name,
            "status": "denied" if index == failed else "not_run",
            "code": code if index == failed else "BATCH_REJECTED",
        }
        for index, item in enumerate(items)
    ]


#: Arguments that parse, but are not an object: a complete call, named as such.
_WELL_FORMED = frozenset({"ARGUMENTS_NOT_OBJECT", "DOUBLE_ENCODED_JSON"})


def _parse_calls(
    items: tuple[ToolCallItem, ...], response: NormalizedResponse, limits: Limits
) -> list[dict[str, Any] | str]:
    """Each call's arguments: a custom call's text as it came, any other call's
    parsed into an object; the first that is not one raises what
    :func:`_parse_call` says of it."""
    loads = _backend.impl.loads
    own = None if limits is DEFAULT_LIMITS else limits  # the default limits are loads' own
    out: list[dict[str, Any] | str] = []
    for index, item in enumerate(items):
        if item.call_kind == "custom":  # free-form text: never parsed as JSON
            out.append(item.arguments)
            continue
        try:
            value = loads(item.arguments) if own is None else loads(item.arguments, limits=own)
        except ParseError:
            value = None
        out.append(value if type(value) is dict else _parse_call(item, index, response, limits))
    return out


def _parse_call(item: ToolCallItem, index: int, response: NormalizedResponse, limits: Limits) -> dict[str, Any]:
    path = f"$.calls[{index}].arguments"
    try:
        return parse_arguments(item.arguments, limits=limits, path=path)
    except ParseError as error:
        at_call(error, index, item.call_id, item.name)
        if response.finish_reason != "stop" or error.code in _WELL_FORMED:
            raise
        raise StreamError(
            "FINISH_REASON_MISMATCH",
            f"the finish reason says stop, but the arguments of call {item.call_id!r} do not parse "
            f"({error.code} at offset {error.pos})",
            offset=error.pos,
            path=path,
            hint="the call may have been cut off; it cannot run",
            call_index=index,
            call_id=item.call_id,
            tool=item.name,
        ) from error


#: The name under which OpenAI Chat models sometimes wrap several calls in
#: one (``{"tool_uses": [{"recipient_name": "functions.x", "parameters":
#: {...}}]}``): the calls inside it would reach no schema, tool or policy check.
_CALL_WRAPPER: Final = "multi_tool_use.parallel"


def _check_kind(item: ToolCallItem, index: int, tool: Tool | None, registry: ToolRegistry | None) -> None:
    """A call reaches a tool of its own kind; a non-function call, and a call
    of the wrapper of other calls, need a registry (that registers them)."""
    if registry is None and item.name == _CALL_WRAPPER:
        error = DomainError(
            "UNKNOWN_TOOL",
            f"{item.name!r} wraps other calls in its arguments, where no schema or policy check would see "
            "them, and no registry was given",
            path=f"$.calls[{index}].name",
            hint="call each tool directly, in calls of its own",
        )
        raise at_call(error, index, item.call_id, item.name)
    if registry is None and item.call_kind != "function":
        error = DomainError(
            "UNKNOWN_TOOL",
            f"a {item.call_kind} call ({item.name!r}) runs only through a registered tool, and no registry was given",
            path=f"$.calls[{index}].name",
            hint=f"register a Tool(name={item.name!r}, kind={item.call_kind!r}) to run it",
        )
        raise at_call(error, index, item.call_id, item.name)
    if tool is not None and tool.kind != item.call_kind:
        error = DomainError(
            "CALL_KIND_MISMATCH",
            f"a {item.call_kind} call was sent to the {tool.kind} tool {item.name!r}",
            path=f"$.calls[{index}]",
            hint=f"call {item.name!r} as a {tool.kind} tool",
        )
        raise at_call(error, index, item.call_id, item.name)


def _generated_prefix(response: NormalizedResponse, items: tuple[ToolCallItem, ...]) -> str | None:
    """The prefix of the generated call ids of a response with no id of its own.

    Such ids name nothing the provider sent (``call_0`` in every such
    response), so a run and its ledger would take each turn for a replay of
    the first. They are prefixed with a digest of the whole response: another
    turn (other calls, text or usage) gets other ids, while the same response
    decided again, by a retry or a second worker, gets the same ids and is
    refused as the replay it is. Deterministic, so both backends agree.
    """
    if not any(item.call_id_generated for item in items):
        return None
    digest = hashlib.sha256(repr(response).encode("utf-8", "surrogatepass")).hexdigest()
    return f"gen-{digest[:24]}"


def _tool_decision(
    response: NormalizedResponse,
    items: tuple[ToolCallItem, ...],
    arguments: list[dict[str, Any] | str],
    registry: ToolRegistry | None,
    active: Policy,
    plan: _Plan,
    run: RunState | None,
    repaired: bool,
    text: str,
) -> ToolDecision:
    issues: list[dict[str, str]] = []
    validated: list[Any] = []
    failed: list[int] = []
    tools: list[Tool | None] = []
    registered = None if registry is None else registry._tools  # ToolRegistry.get without the call
    for index, item in enumerate(items):
        tool = None if registered is None else registered.get(item.name)
        tools.append(tool)
        if (
            item.call_kind != "function"
            or (tool is not None and tool.kind != "function")
            or (registered is None and item.name == _CALL_WRAPPER)
        ):
            _check_kind(item, index, tool, registry)
        args = arguments[index]
        schema = None if tool is None else tool.schema
        if schema is None:
            validated.append(args)
            continue
        doc = None if item.call_kind == "custom" else item.arguments
        validator = schema._validator
        if (
            validator is not None
            and doc is not None
            and (len(doc) <= MAX_VALIDATION_DEPTH or doc.count("[") + doc.count("{") <= MAX_VALIDATION_DEPTH)
        ):
            # a text with fewer brackets than the bound nests no deeper than validation
            # goes: the validator as Schema.issues calls it; any failure is written below
            try:
                validated.append(validator.validate_json(doc, strict=True, extra=schema._extra))
                continue
            except Exception:
                pass
        found, value = schema._issues_at(args, doc, index)
        if found:
            failed.append(index)
            issues.extend(found)
        validated.append(value)
    if issues:
        error: OutputError = schema_mismatch(issues)
        if len(failed) == 1:  # one call's issues: the error names that call
            at_call(error, failed[0], items[failed[0]].call_id, items[failed[0]].name)
        raise error
    fresh = None if response.response_id else _generated_prefix(response, items)
    calls = []
    for index, item in enumerate(items):
        tool = tools[index]
        args = arguments[index]
        value = validated[index]
        call_id = f"{fresh}:{item.call_id}" if fresh is not None and item.call_id_generated else item.call_id
        if tool is None:  # a registered name is known to the plan's names too
            if registry is not None or not plan.names.passes(item.name):
                where = f"$.calls[{index}].name"
                try:
                    plan.names.check(item.name, path=where)
                    if registry is not None:
                        registry.resolve(item.name, path=where)
                except DomainError as error:
                    raise at_call(error, index, item.call_id, item.name) from None
            version = None
        else:
            version = tool.version
            schema = tool.schema
            if schema is not None:
                try:
                    args = (
                        value
                        if schema._serializer is None
                        else schema._serializer.to_python(value, mode="json", by_alias=False)
                    )
                except Exception as error:  # fail closed: a serializer that breaks gives the executor nothing
                    expected = f"arguments the tool's serializer can write (it raised {type(error).__name__})"
                    refused = schema_mismatch([issue(f"$.calls[{index}].arguments", (), "invalid", expected)])
                    raise at_call(refused, index, item.call_id, item.name) from None
                if not isinstance(args, str if item.call_kind == "custom" else dict):
                    raise TypeError(f"the parameters of tool {item.name!r} do not describe its {item.call_kind} input")
        calls.append(
            new_tool_call(
                call_id,
                item.name,
                args,
                index,
                item.item_id,
                item.call_id_generated,
                version,
                value,
                item.call_kind,
            )
        )
    verdicts = _apply(calls, active, plan, registry=registry, run=run, repaired=repaired)
    # the verdicts pair with the calls, in order: ToolDecision's own check holds
    return new_tool_decision(
        tuple(calls), verdicts, active.batch, text, response.provider, response.response_id, response.model, "tool"
    )
