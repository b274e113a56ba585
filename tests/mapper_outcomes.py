"""A provider's stream or body through one backend, written out in full: the
response's every field, or the error's layer, code, message, path, offset
and retryable. The mapper mutation tests assert these exact outcomes on both
backends (the mutation run sees the pure backend alone)."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from decisions.errors import OutputError
from decisions.types import NormalizedResponse, ReasoningItem, RefusalItem, TextItem, ToolCallItem

#: an item written out: ("text", id, text), ("refusal", id, text),
#: ("reasoning", id, text, signature) or
#: ("call", id, call_id, name, arguments, complete, call_id_generated, call_kind)
Brief = tuple[Any, ...]


def item(found: Any) -> Brief:
    """One item of a response, written out."""
    if isinstance(found, ToolCallItem):
        return (
            "call",
            found.item_id,
            found.call_id,
            found.name,
            found.arguments,
            found.complete,
            found.call_id_generated,
            found.call_kind,
        )
    if isinstance(found, ReasoningItem):
        return ("reasoning", found.item_id, found.text, found.signature)
    if isinstance(found, (TextItem, RefusalItem)):
        return (found.kind, found.item_id, found.text)
    raise AssertionError(f"an item of no known kind: {found!r}")


def brief(response: NormalizedResponse) -> dict[str, Any]:
    """A response written out (usage as a tuple of its four counts, or None)."""
    usage = response.usage
    return {
        "id": response.response_id,
        "model": response.model,
        "finish": (response.finish_reason, response.raw_finish_reason),
        "items": [item(i) for i in response.items],
        "usage": None
        if usage is None
        else (usage.input_tokens, usage.output_tokens, usage.cached_tokens, usage.reasoning_tokens),
        "unknown": dict(response.unknown_events),
    }


def failure(error: OutputError) -> tuple[Any, ...]:
    """An error written out: (layer, code, message, path, offset, retryable)."""
    return (error.layer, error.code, error.message, error.path, error.offset, error.retryable)


def sse(events: list[Any]) -> bytes:
    """Events (dicts, or str data such as ``[DONE]``) framed as an SSE stream;
    an event given as ``(name, data)`` gets an ``event:`` line."""
    out = []
    for event in events:
        name = None
        if type(event) is tuple:
            name, event = event
        data = event if isinstance(event, str) else json.dumps(event)
        out.append(("" if name is None else f"event: {name}\n") + f"data: {data}\n\n")
    return "".join(out).encode()


def stream(impl: ModuleType, provider: str, events: list[Any], **options: Any) -> Any:
    """The stream fed whole to a ``StreamAssembler``: ``brief`` of its
    response or ``failure`` of its error. With ``keep_events=True`` the
    mapper's shortcuts are not taken; the outcome must not depend on it, so
    both ways are run and must agree."""
    outcomes = []
    for keep in (False, True):
        try:
            assembler = impl.StreamAssembler(provider, keep_events=keep, **options)
            assembler.feed(sse(events))
            outcomes.append(brief(assembler.finish()))
        except OutputError as error:
            outcomes.append(failure(error))
    assert outcomes[0] == outcomes[1], outcomes
    return outcomes[0]


def body(impl: ModuleType, provider: str, value: Any, **options: Any) -> Any:
    """A whole body (a JSON value, or its text) to ``normalize``: ``brief``
    of its response or ``failure`` of its error."""
    text = value if isinstance(value, (str, bytes)) else json.dumps(value)
    try:
        return brief(impl.normalize(text.encode() if isinstance(text, str) else text, provider=provider, **options))
    except OutputError as error:
        return failure(error)


def events(impl: ModuleType, provider: str, sent: list[Any], **options: Any) -> list[dict[str, Any]]:
    """The canonical events the mapper gives for ``sent`` (as dicts), up to
    the first error; what the stream then ends in is ``stream``'s to say."""
    assembler = impl.StreamAssembler(provider, keep_events=True, **options)
    try:
        assembler.feed(sse(sent))
    except OutputError:
        pass
    return [event.to_dict() for event in assembler.take_events()]
