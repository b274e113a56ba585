"""The ``"canonical"`` provider: each event's data is a canonical event's
wire format (``to_dict()``), a whole body a JSON array of them (pure twin of
the canonical mapper in ``rust/src/core/assemble.rs``)."""

from __future__ import annotations

from typing import Any, Final, Mapping

from ...errors import StreamError
from ...types import CALL_KINDS, EVENT_TYPES, FINISH_REASONS, CanonicalEvent
from ._shape import U64_MAX as _U64_MAX
from ._shape import located
from ._unknown import count_unknown

__all__ = ["CanonicalMapper", "ITEM_KINDS", "canonical_event"]

#: the kinds of a started item other than a tool call
ITEM_KINDS: Final = frozenset({"text", "refusal", "reasoning"})
_KINDS = ITEM_KINDS


_STR, _OPT_STR, _BOOL, _OPT_INT, _KIND, _FINISH, _CALL_KIND = range(7)
_EXPECTED: Final = (
    "a string",
    "a string or null",
    "a boolean",
    "an integer or null",
    "an item kind",
    "a finish reason",
    "a call kind",
)
#: type -> ((field, kind, required), ...), in the order the fields are checked.
_FIELDS: Final[Mapping[str, tuple[tuple[str, int, bool], ...]]] = {
    "response_started": (("response_id", _OPT_STR, False), ("model", _OPT_STR, False)),
    "item_started": (("item_id", _STR, True), ("kind", _KIND, True), ("position", _OPT_INT, False)),
    "text_delta": (("item_id", _STR, True), ("delta", _STR, True)),
    "refusal_delta": (("item_id", _STR, True), ("delta", _STR, True)),
    "reasoning_delta": (("item_id", _STR, True), ("delta", _STR, False), ("signature", _OPT_STR, False)),
    "tool_call_started": (
        ("item_id", _STR, True),
        ("call_id", _STR, True),
        ("name", _STR, True),
        ("call_id_generated", _BOOL, False),
        ("call_kind", _CALL_KIND, False),
    ),
    "tool_arguments_delta": (("item_id", _STR, True), ("delta", _STR, True)),
    "item_ended": (("item_id", _STR, True),),
    "usage": tuple(
        (name, _OPT_INT, False) for name in ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")
    ),
    "response_finished": (("finish_reason", _FINISH, True), ("raw_finish_reason", _OPT_STR, False)),
    "response_failed": (
        ("code", _STR, True),
        ("message", _STR, False),
        ("retryable", _BOOL, False),
        ("error_type", _OPT_STR, False),
    ),
}


def _valid(kind: int, value: Any) -> bool:
    if kind == _STR:
        return type(value) is str
    if kind == _OPT_STR:
        return value is None or type(value) is str
    if kind == _BOOL:
        return type(value) is bool
    if kind == _OPT_INT:
        return value is None or (type(value) is int and 0 <= value <= _U64_MAX)
    if type(value) is not str:
        return False
    if kind == _KIND:
        return value in _KINDS
    if kind == _CALL_KIND:
        return value in CALL_KINDS
    return value in FINISH_REASONS


def _malformed(message: str) -> StreamError:
    return StreamError("MALFORMED_EVENT", message)


def canonical_event(payload: Any) -> CanonicalEvent | None:
    """A canonical event from its ``to_dict()`` wire format; None for an unknown ``type``."""
    if type(payload) is not dict:
        raise _malformed("a canonical event must be a JSON object")
    kind = payload.get("type")
    if type(kind) is not str:
        raise _malformed('a canonical event needs a "type" string')
    fields = _FIELDS.get(kind)
    if fields is None:
        return None
    names = {name for name, _, _ in fields}
    extra = sorted(key for key in payload if key != "type" and key not in names)
    if extra:
        raise _malformed(f'{kind} event has an unknown field "{extra[0]}"')
    args: dict[str, Any] = {}
    for name, field_kind, required in fields:
        if name not in payload:
            if required:
                raise _malformed(f'{kind} event lacks the field "{name}"')
            continue
        value = payload[name]
        if not _valid(field_kind, value):
            raise _malformed(f'{kind} event field "{name}" must be {_EXPECTED[field_kind]}')
        args[name] = value
    if kind == "tool_call_started" and not args["call_id"]:  # pairs with no result, as Anthropic's and Responses'
        raise _malformed('tool_call_started event field "call_id" must not be empty')
    return EVENT_TYPES[kind](**args)  # type: ignore[return-value]


class CanonicalMapper:
    """The ``"canonical"`` provider: each event's data is a canonical event's
    wire format; a whole body is a JSON array of them."""

    def __init__(self) -> None:
        self.unknown_events: dict[str, int] = {}

    def map_event(self, event: str | None, payload: Any) -> list[CanonicalEvent]:
        """One canonical event; an unknown ``type`` is counted. An SSE event
        name other than ``message`` that is not the data's ``type`` frames two
        events in one: neither is taken (``MALFORMED_EVENT`` at ``$.type``)."""
        if event is not None and event != "message" and type(payload) is dict:
            kind = payload.get("type")
            if type(kind) is str and kind != event:
                raise located("MALFORMED_EVENT", f"canonical SSE event {event} carries data of type {kind}", "$.type")
        mapped = canonical_event(payload)
        if mapped is None:
            count_unknown(self.unknown_events, payload["type"])
            return []
        return [mapped]

    def end(self) -> list[CanonicalEvent]:
        """EOF adds nothing."""
        return []

    def map_body(self, body: Any) -> list[CanonicalEvent]:
        """A JSON array of canonical events."""
        if type(body) is not list:
            raise _malformed("a canonical body must be a JSON array of events")
        out: list[CanonicalEvent] = []
        for payload in body:
            out.extend(self.map_event(None, payload))
        return out
