"""The data both backends produce: SSE events, canonical events, items and
the normalized response. Defined once, here; the Rust core constructs these
same classes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal, Mapping, NamedTuple, Union

__all__ = [
    "FinishReason",
    "FINISH_REASONS",
    "CallKind",
    "CALL_KINDS",
    "SSEEvent",
    "ResponseStarted",
    "ItemStarted",
    "TextDelta",
    "RefusalDelta",
    "ReasoningDelta",
    "ToolCallStarted",
    "ToolArgumentsDelta",
    "ItemEnded",
    "UsageReported",
    "ResponseFinished",
    "ResponseFailed",
    "CanonicalEvent",
    "EVENT_TYPES",
    "Usage",
    "TextItem",
    "RefusalItem",
    "ReasoningItem",
    "ToolCallItem",
    "Item",
    "NormalizedResponse",
    "FixedResponse",
    "CallSnapshot",
    "ResponseSnapshot",
]

FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "refusal", "cancelled", "error", "unknown"]
FINISH_REASONS: tuple[str, ...] = (
    "stop",
    "tool_calls",
    "length",
    "content_filter",
    "refusal",
    "cancelled",
    "error",
    "unknown",
)

ItemKind = Literal["text", "refusal", "reasoning"]

#: What a tool call asks the executor to run. ``function``: a declared function,
#: arguments are a JSON object's text. ``custom``: an OpenAI Responses custom
#: tool, arguments are its free-form input *text* (never JSON). The others are
#: OpenAI Responses client-executed tools (``local_shell``, ``computer``,
#: ``apply_patch``, ``shell``): the call's name is the kind itself and its
#: arguments the JSON text of the item's ``action`` (``operation`` for
#: ``apply_patch``).
CallKind = Literal["function", "custom", "local_shell", "computer", "apply_patch", "shell"]
CALL_KINDS: tuple[str, ...] = ("function", "custom", "local_shell", "computer", "apply_patch", "shell")


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched Server-Sent Event. ``event`` is ``"message"`` when the
    stream gave no ``event:`` field; ``id`` is the last event id seen."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


# ---------------------------------------------------------------- canonical events
# Provider-neutral. ``item_id`` is the provider's item identity (or a stable
# id the mapper generated, flagged where it did so).


class _Event:
    __slots__ = ()
    type: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """``{"type": ..., **fields}``: the canonical event wire format."""
        data: dict[str, Any] = {"type": self.type}
        data.update(asdict(self))  # type: ignore[call-overload]
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseStarted(_Event):
    """The provider started a response."""

    type: ClassVar[str] = "response_started"
    response_id: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemStarted(_Event):
    """A text, refusal or reasoning item opened. ``position``: where the item
    goes among the response's items, when it came after later ones (a
    Responses reasoning item only ``response.completed`` carries); None:
    after the items before it. Written only when set."""

    type: ClassVar[str] = "item_started"
    item_id: str
    kind: ItemKind
    position: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire format; ``position`` only when it is set."""
        data = _Event.to_dict(self)
        if self.position is None:
            del data["position"]
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta(_Event):
    """A piece of answer text."""

    type: ClassVar[str] = "text_delta"
    item_id: str
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusalDelta(_Event):
    """A piece of a refusal message."""

    type: ClassVar[str] = "refusal_delta"
    item_id: str
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta(_Event):
    """A piece of reasoning text, or its signature (kept opaque)."""

    type: ClassVar[str] = "reasoning_delta"
    item_id: str
    delta: str = ""
    signature: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted(_Event):
    """A tool call opened. ``call_id`` pairs the call with its result;
    ``call_id_generated`` says the provider gave none and one was made;
    ``call_kind`` says what kind of call it is (:data:`CallKind`)."""

    type: ClassVar[str] = "tool_call_started"
    item_id: str
    call_id: str
    name: str
    call_id_generated: bool = False
    call_kind: CallKind = "function"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolArgumentsDelta(_Event):
    """A piece of a tool call's arguments text (JSON, or a custom tool's input)."""

    type: ClassVar[str] = "tool_arguments_delta"
    item_id: str
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemEnded(_Event):
    """An item is complete."""

    type: ClassVar[str] = "item_ended"
    item_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageReported(_Event):
    """Token usage (each count may be missing)."""

    type: ClassVar[str] = "usage"
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseFinished(_Event):
    """The terminal event of a successful stream: the normalized finish
    reason and the provider's own."""

    type: ClassVar[str] = "response_finished"
    finish_reason: FinishReason
    raw_finish_reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseFailed(_Event):
    """The terminal event of a failed stream: the provider's error."""

    type: ClassVar[str] = "response_failed"
    code: str
    message: str = ""
    retryable: bool = False
    error_type: str | None = None


CanonicalEvent = Union[
    ResponseStarted,
    ItemStarted,
    TextDelta,
    RefusalDelta,
    ReasoningDelta,
    ToolCallStarted,
    ToolArgumentsDelta,
    ItemEnded,
    UsageReported,
    ResponseFinished,
    ResponseFailed,
]

#: wire ``type`` -> class, for reading the canonical event format back.
EVENT_TYPES: Mapping[str, type[_Event]] = {
    cls.type: cls
    for cls in (
        ResponseStarted,
        ItemStarted,
        TextDelta,
        RefusalDelta,
        ReasoningDelta,
        ToolCallStarted,
        ToolArgumentsDelta,
        ItemEnded,
        UsageReported,
        ResponseFinished,
        ResponseFailed,
    )
}


# ---------------------------------------------------------------- the response


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts, normalized across providers."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TextItem:
    kind: ClassVar[str] = "text"
    item_id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusalItem:
    kind: ClassVar[str] = "refusal"
    item_id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningItem:
    kind: ClassVar[str] = "reasoning"
    item_id: str
    text: str
    signature: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallItem:
    """A tool call with its complete arguments *text* (not yet parsed): a
    JSON object's text, or for ``call_kind == "custom"`` the tool's free-form
    input, verbatim (see :data:`CallKind`).

    ``complete`` is False for every tool call of a cut response (finish
    reason length, content filter or refusal), whether or not the call had
    ended before the cut, and for a call still open when the response was
    cancelled or ended in an error: such a call can never become executable,
    even if its arguments happen to parse.
    """

    kind: ClassVar[str] = "tool_call"
    item_id: str
    call_id: str
    name: str
    arguments: str
    complete: bool = True
    call_id_generated: bool = False
    call_kind: CallKind = "function"


Item = Union[TextItem, RefusalItem, ReasoningItem, ToolCallItem]


@dataclass(frozen=True, slots=True, kw_only=True)
class NormalizedResponse:
    """A provider response that ended with a legal terminal event, in the
    provider-neutral shape. ``unknown_events`` counts provider event types the
    mapper did not know (recorded, never guessed at), bounded: at most 64
    names of at most 64 characters (a longer one is cut and ends with ``…``),
    every further name counted under ``"<other>"``."""

    provider: str
    response_id: str | None
    model: str | None
    items: tuple[Item, ...]
    finish_reason: FinishReason
    raw_finish_reason: str | None = None
    usage: Usage | None = None
    unknown_events: Mapping[str, int] = field(default_factory=dict)

    @property
    def tool_calls(self) -> tuple[ToolCallItem, ...]:
        return tuple(item for item in self.items if isinstance(item, ToolCallItem))

    @property
    def text(self) -> str:
        return "".join(item.text for item in self.items if isinstance(item, TextItem))


class FixedResponse(NamedTuple):
    """What :func:`decisions.fix_response` returns: the response with the
    deterministic fixes applied, and the names of the fixes that changed
    something (empty: ``response`` is the one passed in). ``decide`` takes it
    as it is and treats it as repaired when ``applied`` is not empty; it also
    unpacks as ``response, applied = fix_response(...)``."""

    response: NormalizedResponse
    applied: tuple[str, ...]

    @property
    def repaired(self) -> bool:
        """True when a fix changed the response."""
        return bool(self.applied)


# ---------------------------------------------------------------- provisional views


@dataclass(frozen=True, slots=True, kw_only=True)
class CallSnapshot:
    """A tool call as far as it has streamed. ``partial`` is a best-effort
    parse of the arguments so far, for display only (None for a custom
    call, whose input is text)."""

    item_id: str
    call_id: str
    name: str
    arguments: str
    partial: Any
    ended: bool
    call_kind: CallKind = "function"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseSnapshot:
    """A provisional view of an unfinished stream, for UIs. It is not a
    :class:`NormalizedResponse` and ``decide`` refuses it."""

    provider: str
    response_id: str | None
    model: str | None
    text: str
    calls: tuple[CallSnapshot, ...]
    state: str
