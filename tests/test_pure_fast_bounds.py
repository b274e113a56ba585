"""Shortcuts of the pure parser and pipeline, at their edges.

The strict parser's fast path counts brackets only in a text long enough to
nest deeper than ``max_depth`` (each level of a valid text opens and
closes: ``2 * max_depth + 2`` characters); ``normalize`` of a bytes body
with default options reads it without a mapper of its own; the pipeline
takes the ``[DONE]`` marker as the decoded marker. Each must give what the
native backend gives."""

from __future__ import annotations

import dataclasses
import json
from types import ModuleType
from typing import Any

import pytest

from decisions import DEFAULT_LIMITS, ParseError
from decisions.errors import OutputError

CHAT = "openai-chat"


def _nested(depth: int, kind: str) -> str:
    """The shortest valid text nesting ``depth`` arrays or objects."""
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


@pytest.mark.parametrize("max_depth", [1, 2, 3, 64])
@pytest.mark.parametrize("kind", ["array", "object"])
def test_depth_at_the_shortest_text(impl: ModuleType, max_depth: int, kind: str) -> None:
    """A text one level too deep is refused however short it is; one at the limit passes."""
    limits = dataclasses.replace(DEFAULT_LIMITS, max_depth=max_depth)
    within = _nested(max_depth, kind)
    assert impl.loads(within, limits=limits) == json.loads(within)
    deeper = _nested(max_depth + 1, kind)
    with pytest.raises(ParseError) as caught:
        impl.loads(deeper, limits=limits)
    assert caught.value.code == "DEPTH_EXCEEDED"
    assert caught.value.pos == (max_depth if kind == "array" else 5 * max_depth)


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_depth_with_whitespace_around(impl: ModuleType, pad: int) -> None:
    """Whitespace lengthens the text without nesting it: the bound holds either way."""
    limits = dataclasses.replace(DEFAULT_LIMITS, max_depth=2)
    text = " " * pad + "[[[]]]" + " " * pad
    with pytest.raises(ParseError) as caught:
        impl.loads(text, limits=limits)
    assert (caught.value.code, caught.value.pos) == ("DEPTH_EXCEEDED", pad + 2)
    assert impl.loads(" " * pad + "[[]]" + " " * pad, limits=limits) == [[]]


def _body(**changes: Any) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "tool_calls": [call]}, "finish_reason": "tool_calls"}
        ],
    }
    body.update(changes)
    return body


def _outcome(impl: ModuleType, body: Any, **options: Any) -> Any:
    try:
        return impl.normalize(body, provider=CHAT, **options)
    except OutputError as error:
        return type(error).__name__, error.code, error.path


class _Provider(str):
    """A provider id whose own comparison says nothing: the id is its characters."""

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 0


@pytest.mark.parametrize(
    "options",
    [{}, {"choice": 0}, {"choice": 1}, {"limits": DEFAULT_LIMITS}, {"limits": dataclasses.replace(DEFAULT_LIMITS)}],
)
def test_normalize_default_options_as_given_ones(impl: ModuleType, native: ModuleType, options: Any) -> None:
    """A bytes body read on the default-options shortcut gives what the same
    body gives with the options spelled out, on both backends."""
    for body in (_body(), _body(choices=[]), _body(error={"message": "x"})):
        data = json.dumps(body).encode()
        assert _outcome(impl, data, **options) == _outcome(native, data, **options)
        assert _outcome(impl, data, **options) == _outcome(impl, data.decode(), **options)


def test_normalize_provider_subclass(impl: ModuleType) -> None:
    """A ``str`` subclass as the provider is read by its characters."""
    data = json.dumps(_body()).encode()
    assert impl.normalize(data, provider=_Provider(CHAT)) == impl.normalize(data, provider=CHAT)


@pytest.mark.parametrize("after", [b"", b'data: {"choices": []}\n\n', b"data: [DONE]\n\n"])
def test_done_marker(impl: ModuleType, after: bytes) -> None:
    """``[DONE]`` ends the framing; anything after it is an event after the terminal."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk"}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n" + after
    assembler = impl.StreamAssembler(CHAT)
    if not after:
        assembler.feed(data)
        assert assembler.finish().items[0].text == "hi"
        return
    with pytest.raises(OutputError) as caught:
        assembler.feed(data)
    assert caught.value.code == "EVENT_AFTER_TERMINAL"


def _calls_body(ids: list[str], choice: int = 0, rid: str = "chatcmpl-1") -> bytes:
    calls = [
        {"id": call_id, "type": "function", "function": {"name": "grep", "arguments": '{"p": 1}'}} for call_id in ids
    ]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    choices = [{"index": choice, "message": message, "finish_reason": "tool_calls"}]
    return json.dumps({"id": rid, "choices": choices}).encode()


def _items(impl: ModuleType, data: bytes, **options: Any) -> Any:
    try:
        response = impl.normalize(data, provider=CHAT, **options)
    except OutputError as error:
        return error.code, error.message
    return [(item.item_id, item.call_id, item.call_id_generated) for item in response.items]


@pytest.mark.parametrize("count", [2, 3, 4])
def test_body_repeated_call_ids(impl: ModuleType, native: ModuleType, count: int) -> None:
    """Any two calls of a body sharing an id: the body is refused as natively."""
    for first in range(count):
        for second in range(first + 1, count):
            ids = [f"call_{k}" for k in range(count)]
            ids[second] = ids[first]
            data = _calls_body(ids)
            assert _items(impl, data) == _items(native, data)
            assert _items(impl, data)[0] == "DUPLICATE_CALL_ID"


@pytest.mark.parametrize("count", [1, 15, 16, 17, 20])
@pytest.mark.parametrize("choice", [None, 0, 1])
def test_body_item_ids(impl: ModuleType, native: ModuleType, count: int, choice: int | None) -> None:
    """Item ids of many calls, of choice 0 and another, ids given or generated."""
    for ids in ([f"c{k}" for k in range(count)], [""] * count):
        for rid in ("chatcmpl-1", ""):
            data = _calls_body(ids, choice or 0, rid)
            options = {} if choice is None else {"choice": choice}
            assert _items(impl, data, **options) == _items(native, data, **options)


@pytest.mark.parametrize("kind", ["array", "object"])
@pytest.mark.parametrize("extra", [-1, 0, 1, 2])
def test_unread_members_nested_to_the_envelope_depth(
    impl: ModuleType, native: ModuleType, kind: str, extra: int
) -> None:
    """A member no reader looks at, nested to the envelope's depth bound
    (100 levels with the body or chunk's own) and past it: the body and the
    chunk read without the repeated-key check bound their depth as the strict
    parser does, and a level too deep is refused on both backends."""
    from decisions._pure.envelope import ENVELOPE_MAX_DEPTH

    levels = ENVELOPE_MAX_DEPTH - 1 + extra  # the body's own object is the first level
    nested = json.loads(_nested(levels, kind))
    data = json.dumps(_body(extra=nested)).encode()
    found = _outcome(impl, data)
    assert found == _outcome(native, data)
    assert isinstance(found, tuple) == (extra > 0), found
    chunk = {"id": "c-1", "choices": [{"index": 0, "delta": {"role": "assistant"}}], "extra": nested}
    stream = b"data: " + json.dumps(chunk).encode() + b"\n\n"
    outcomes = []
    for backend in (impl, native):
        assembler = backend.StreamAssembler(CHAT)
        try:
            assembler.feed(stream)
            outcomes.append(None)
        except OutputError as error:
            outcomes.append((type(error).__name__, error.code, error.path))
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0] is not None) == (extra > 0), outcomes
