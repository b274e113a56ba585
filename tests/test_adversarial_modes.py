"""A whole response where a stream is read, and a stream's piece where a
whole response is read, on both backends.

1. OpenAI Chat: a stream chunk's choice carries ``delta``, a body's choice
   ``message``. A chunk whose choice carried a ``message`` (a body sent as
   one event by a proxy, a server mixing the two) had it ignored: the text
   and calls in it were dropped, and the stream was decided from what the
   deltas held, a cut answer or an empty one with the finish reason
   ``tool_calls``. Likewise a body's ``delta``. The other mode's member, when
   not null, is now ``MALFORMED_EVENT`` at its path, on the fast and the
   checked paths alike.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from conftest import FIXTURES
from decisions import OutputError
from decisions.types import NormalizedResponse

#: a recorded Chat stream of one tool call (``get_weather``)
CHAT_CALL = (
    FIXTURES
    / "openai-python"
    / ".inline-snapshot"
    / "external"
    / "2018feb66ae13fcf5333d61b95849decc68d3f63bd38172889367e1afb1e04f7.bin"
).read_bytes()
#: a recorded Chat body (text)
CHAT_BODY = (
    FIXTURES / "vercel-ai" / "packages" / "openai" / "src" / "chat" / "__fixtures__" / "openai-text.json"
).read_bytes()


def _chunks(stream: bytes) -> list[Any]:
    """The chunks of a recorded Chat stream (``[DONE]`` left out)."""
    return [
        json.loads(line[6:]) for line in stream.split(b"\n") if line.startswith(b"data: ") and line != b"data: [DONE]"
    ]


def _stream(chunks: list[Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def _fed(impl: ModuleType, data: bytes) -> NormalizedResponse:
    assembler = impl.StreamAssembler("openai-chat")
    assembler.feed(data)
    response: NormalizedResponse = assembler.finish()
    return response


def _evented(impl: ModuleType, chunks: list[Any]) -> NormalizedResponse:
    """Each chunk through ``feed_event`` (the checked path, no byte-level shortcut)."""
    assembler = impl.StreamAssembler("openai-chat")
    for chunk in chunks:
        assembler.feed_event(json.dumps(chunk))
    assembler.feed_event("[DONE]")
    response: NormalizedResponse = assembler.finish()
    return response


# ------------------------------------------------------------------ 1. Chat: the other mode's member

MESSAGES: dict[str, Any] = {
    "text": {"role": "assistant", "content": "It is sunny in Paris."},
    "a call": {
        "role": "assistant",
        "tool_calls": [
            {"id": "call_x", "type": "function", "function": {"name": "delete_file", "arguments": '{"path":"a"}'}}
        ],
    },
    "empty": {},
}


@pytest.mark.parametrize("message", MESSAGES.values(), ids=MESSAGES.keys())
@pytest.mark.parametrize("at", [0, 1, -2], ids=["first chunk", "a delta chunk", "the finish chunk"])
@pytest.mark.parametrize("how", ["bytes", "events"])
def test_a_chunk_carrying_a_message_is_malformed(impl: ModuleType, message: Any, at: int, how: str) -> None:
    chunks = _chunks(CHAT_CALL)
    chunks[at]["choices"][0]["message"] = message
    with pytest.raises(OutputError) as caught:
        _fed(impl, _stream(chunks)) if how == "bytes" else _evented(impl, chunks)
    assert (caught.value.code, caught.value.layer, caught.value.path) == (
        "MALFORMED_EVENT",
        "stream",
        "$.choices[0].message",
    )
    assert "whole message" in str(caught.value)


def test_a_body_sent_as_one_event_is_malformed(impl: ModuleType) -> None:
    """A whole ``chat.completion`` as the stream's one chunk: its text was dropped."""
    data = b"data: " + json.dumps(json.loads(CHAT_BODY)).encode() + b"\n\ndata: [DONE]\n\n"
    with pytest.raises(OutputError) as caught:
        _fed(impl, data)
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.choices[0].message")


def test_a_null_message_in_every_chunk_changes_nothing(impl: ModuleType) -> None:
    """The control: null is absent, as for every optional member."""
    chunks = _chunks(CHAT_CALL)
    for chunk in chunks:
        for choice in chunk["choices"]:
            choice["message"] = None
    assert _fed(impl, _stream(chunks)) == _fed(impl, CHAT_CALL)
    assert _evented(impl, chunks) == _fed(impl, CHAT_CALL)
    assert [call.name for call in _fed(impl, CHAT_CALL).tool_calls] == ["get_weather"]


@pytest.mark.parametrize("delta", [{"content": "x"}, {}], ids=["content", "empty"])
def test_a_body_choice_carrying_a_delta_is_malformed(impl: ModuleType, delta: Any) -> None:
    body = json.loads(CHAT_BODY)
    body["choices"][0]["delta"] = delta
    with pytest.raises(OutputError) as caught:
        impl.normalize(json.dumps(body).encode(), provider="openai-chat")
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.choices[0].delta")


def test_a_null_delta_in_a_body_changes_nothing(impl: ModuleType) -> None:
    body = json.loads(CHAT_BODY)
    body["choices"][0]["delta"] = None
    expected = impl.normalize(CHAT_BODY, provider="openai-chat")
    assert impl.normalize(json.dumps(body).encode(), provider="openai-chat") == expected
    assert expected.text.startswith("**Holiday Name:**")
