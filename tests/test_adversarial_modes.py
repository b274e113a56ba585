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
2. A stream assembler given a JSON document instead of an event stream (a
   200 answer with an error object, a server that ignored ``stream: true``
   and sent the whole body): the SSE framing read its lines as fields of no
   name it knows, and the stream ended as ``SSE_UNTERMINATED_EVENT`` or
   ``NO_TERMINAL_EVENT``, both retryable, the provider's message lost: a
   backend retried a request that can never succeed. A stream whose first
   byte other than whitespace is ``{`` (or ``[``, except Gemini's array of
   chunks) is now held whole, up to ``max_sse_event_bytes``, and refused at
   the end as ``normalize`` reads it: the provider's error object as the
   ``PROVIDER_ERROR`` it is (code, retryable, message), anything else as
   ``NOT_A_RESPONSE_BODY`` (not retryable) at the document's first byte; a
   longer one at once. The SSE decoder alone (``SSEDecoder``) keeps the
   event-stream rules. ``StreamAssembler()`` (the provider told from the
   stream) held such a stream until its end and said ``NO_TERMINAL_EVENT``
   (retryable): it now tells the provider from the document as a body and
   gives that provider's outcome, ``NOT_A_RESPONSE_BODY`` when it cannot
   tell; and it reads Gemini's array of chunks, which it never detected.
3. ``stream_httpx`` refused Gemini's stream without ``alt=sse`` (one JSON
   array of chunks, which the assembler reads) as a JSON document.
4. ``normalize`` given an event stream: ``NOT_A_RESPONSE_BODY`` as before,
   now saying it is an event stream, which ``StreamAssembler`` reads.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

import decisions
from conftest import FIXTURES
from decisions import OutputError, _backend, integrations
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


def test_sdk_objects_of_the_other_mode_are_malformed(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenAI SDK's chunk given as a body, its completion given as a chunk."""
    chat = pytest.importorskip("openai.types.chat")
    monkeypatch.setattr(_backend, "impl", impl)
    completion = chat.ChatCompletion.model_validate(json.loads(CHAT_BODY))
    chunk = chat.ChatCompletionChunk.model_validate(_chunks(CHAT_CALL)[0])
    with pytest.raises(OutputError) as caught:
        integrations.normalize_sdk(chunk)
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.choices[0].delta")
    with pytest.raises(OutputError) as caught:
        integrations.assemble_sdk_stream([completion])
    assert (caught.value.code, caught.value.path) == ("MALFORMED_EVENT", "$.choices[0].message")


# ------------------------------------------------------------------ 2. a JSON document where an event stream is read

PACKAGES = FIXTURES / "vercel-ai" / "packages"
#: each provider's error object, as its API sends it with an HTTP error (or a 200 from a proxy)
ERRORS: dict[str, bytes] = {
    "openai-chat": (PACKAGES / "openai/src/chat/__fixtures__/reasoning-model-legacy-parameter-error.json").read_bytes(),
    "openai-responses": (PACKAGES / "openai/src/responses/__fixtures__/openai-error.1.json").read_bytes(),
    "anthropic": b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    "gemini": (PACKAGES / "google/src/__fixtures__/google-429-retry-info.json").read_bytes(),
}
#: each provider's whole (non-streamed) response body
BODIES: dict[str, bytes] = {
    "openai-chat": CHAT_BODY,
    "openai-responses": (
        FIXTURES / "openai-python/extracted/tests/lib/responses/test_responses/test_output_text.json"
    ).read_bytes(),
    "anthropic": (PACKAGES / "anthropic/src/__fixtures__/anthropic-advisor-20260301.1.json").read_bytes(),
    "gemini": (PACKAGES / "google/src/__fixtures__/google-text.json").read_bytes(),
}
PROVIDERS = list(ERRORS)


def _streamed(impl: ModuleType, provider: str, data: bytes, piece: int, limits: Any = None) -> OutputError:
    """The error ``data`` fed ``piece`` bytes at a time, then finished, ends in."""
    assembler = impl.StreamAssembler(provider, limits=limits)
    with pytest.raises(OutputError) as caught:
        for at in range(0, len(data), piece):
            assembler.feed(data[at : at + piece])
        assembler.finish()
    error = caught.value
    with pytest.raises(OutputError) as again:  # the stream failed with it
        assembler.finish()
    assert again.value.code in ("STREAM_FAILED", error.code)
    return error


@pytest.mark.parametrize("piece", [1, 7, 1 << 20], ids=["bytewise", "small pieces", "whole"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_error_object_is_the_providers_error(impl: ModuleType, provider: str, piece: int) -> None:
    with pytest.raises(OutputError) as as_body:
        impl.normalize(ERRORS[provider], provider=provider)
    assert (as_body.value.code, as_body.value.layer) == ("PROVIDER_ERROR", "transport")
    error = _streamed(impl, provider, ERRORS[provider], piece)
    assert (error.code, error.retryable, str(error)) == (
        as_body.value.code,
        as_body.value.retryable,
        str(as_body.value),
    )


def test_the_error_keeps_its_retryable_verdict(impl: ModuleType) -> None:
    """Retryable as the provider's error type says: overloaded yes, a bad parameter no."""
    assert _streamed(impl, "anthropic", ERRORS["anthropic"], 1 << 20).retryable is True
    assert _streamed(impl, "openai-chat", ERRORS["openai-chat"], 1 << 20).retryable is False
    assert "max_completion_tokens" in str(_streamed(impl, "openai-chat", ERRORS["openai-chat"], 1 << 20))


@pytest.mark.parametrize("lead", [b"", b"\n\r\n  ", b"\xef\xbb\xbf\n"], ids=["none", "blank lines", "BOM"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_whole_body_is_not_a_response_stream(impl: ModuleType, provider: str, lead: bytes) -> None:
    impl.normalize(BODIES[provider], provider=provider)  # a body normalize reads
    for piece in (3, 1 << 20):
        error = _streamed(impl, provider, lead + BODIES[provider], piece)
        assert (error.code, error.layer, error.retryable) == ("NOT_A_RESPONSE_BODY", "stream", False)
        assert error.offset == len(lead)
        assert "normalize" in str(error)


@pytest.mark.parametrize("provider", ["openai-chat", "anthropic", "openai-responses"])
def test_an_array_is_a_document_where_the_provider_streams_none(impl: ModuleType, provider: str) -> None:
    error = _streamed(impl, provider, b"[" + ERRORS[provider] + b"]", 1 << 20)
    assert (error.code, error.offset) == ("NOT_A_RESPONSE_BODY", 0)


def test_geminis_array_of_chunks_is_still_a_stream(impl: ModuleType) -> None:
    data = (FIXTURES / "reconstructed" / "google-tool-call.array.json").read_bytes()
    assembler = impl.StreamAssembler("gemini")
    assembler.feed(data)
    assert [call.name for call in assembler.finish().tool_calls] == ["weather"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_document_past_the_event_bound_is_refused_at_once(impl: ModuleType, provider: str) -> None:
    limits = decisions.Limits(max_sse_event_bytes=1024)
    document = b'{"error": {"message": "' + b"x" * 2000 + b'"}}'
    assembler = impl.StreamAssembler(provider, limits=limits)
    assembler.feed(document[:1000])  # held
    with pytest.raises(OutputError) as caught:
        assembler.feed(document[1000:])
    assert (caught.value.code, caught.value.offset) == ("NOT_A_RESPONSE_BODY", 0)
    assert "max_sse_event_bytes (1024)" in str(caught.value)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_event_stream_of_the_same_object_is_still_read_as_events(impl: ModuleType, provider: str) -> None:
    """The control: the error object as an event's data is the stream's failure, as before."""
    data = b"data: " + json.dumps(json.loads(ERRORS[provider])).encode() + b"\n\n"
    assembler = impl.StreamAssembler(provider)
    with pytest.raises(OutputError) as caught:
        assembler.feed(data)
        assembler.finish()
    assert caught.value.code != "NOT_A_RESPONSE_BODY"


def test_the_sse_decoder_alone_keeps_the_event_stream_rules(impl: ModuleType) -> None:
    """A line starting with ``{`` is a field of no known name to the decoder: ignored."""
    decoder = impl.SSEDecoder()
    events = decoder.feed(b'{"error": 1}\ndata: x\n\n')
    decoder.finish()
    assert [event.data for event in events] == ["x"]


@pytest.fixture
def live(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``impl`` as the backend ``StreamAssembler()`` builds its assembler with."""
    monkeypatch.setattr(_backend, "impl", impl)
    return impl


@pytest.mark.parametrize("piece", [1, 5, 1 << 20], ids=["bytewise", "small pieces", "whole"])
@pytest.mark.parametrize("lead", [b"", b"\xef\xbb\xbf \n"], ids=["none", "BOM and a blank line"])
def test_a_told_stream_that_is_a_document_is_read_as_its_providers(live: ModuleType, piece: int, lead: bytes) -> None:
    data = lead + ERRORS["anthropic"]
    auto = decisions.StreamAssembler()
    for at in range(0, len(data), piece):
        auto.feed(data[at : at + piece])
    with pytest.raises(OutputError) as caught:
        auto.finish()
    assert (caught.value.code, caught.value.retryable, str(caught.value)) == (
        "PROVIDER_ERROR",
        True,
        "PROVIDER_ERROR: overloaded_error: Overloaded",
    )
    assert auto.provider == "anthropic" and auto.state == "failed"
    with pytest.raises(OutputError) as again:
        auto.finish()
    assert again.value.code == "STREAM_FAILED"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_told_stream_that_is_a_whole_body_is_not_a_response_stream(live: ModuleType, provider: str) -> None:
    auto = decisions.StreamAssembler()
    auto.feed(b"\n" + BODIES[provider])
    with pytest.raises(OutputError) as caught:
        auto.finish()
    assert (caught.value.code, caught.value.retryable, caught.value.offset) == ("NOT_A_RESPONSE_BODY", False, 1)
    assert auto.provider == provider


@pytest.mark.parametrize("document", [b'{"error": {"message": "Incorrect API key provided"}}', b'{"a": 1}', b"{"])
def test_a_told_stream_of_no_providers_document_is_not_a_response_stream(live: ModuleType, document: bytes) -> None:
    auto = decisions.StreamAssembler()
    auto.feed(document)
    with pytest.raises(OutputError) as caught:
        auto.finish()
    assert (caught.value.code, caught.value.retryable, caught.value.offset) == ("NOT_A_RESPONSE_BODY", False, 0)


def test_a_told_stream_holds_a_document_within_the_event_bound(live: ModuleType) -> None:
    auto = decisions.StreamAssembler(limits=decisions.Limits(max_sse_event_bytes=1024))
    auto.feed(b'{"error": {"message": "' + b"x" * 1000)
    with pytest.raises(OutputError) as caught:
        auto.feed(b"x" * 100)
    assert caught.value.code == "NOT_A_RESPONSE_BODY"
    with pytest.raises(OutputError) as again:
        auto.feed(b'"}}')
    assert again.value.code == "STREAM_FAILED"


@pytest.mark.parametrize("piece", [1, 64, 1 << 20])
def test_a_told_stream_that_is_geminis_array_is_read(live: ModuleType, piece: int) -> None:
    data = b"\r\n" + (FIXTURES / "reconstructed" / "google-tool-call.array.json").read_bytes()
    direct = live.StreamAssembler("gemini")
    direct.feed(data)
    auto = decisions.StreamAssembler()
    for at in range(0, len(data), piece):
        auto.feed(data[at : at + piece])
    assert auto.provider == "gemini"
    assert auto.finish() == direct.finish()


# ------------------------------------------------------------------ 3. stream_httpx and Gemini's array


@pytest.mark.parametrize("content_type", ["application/json", "text/event-stream"])
def test_stream_httpx_reads_geminis_array_of_chunks(live: ModuleType, content_type: str) -> None:
    httpx = pytest.importorskip("httpx")
    impl = live
    data = (FIXTURES / "reconstructed" / "google-tool-call.array.json").read_bytes()
    direct = impl.StreamAssembler("gemini")
    direct.feed(data)
    expected = direct.finish()

    def handler(request: Any) -> Any:
        pieces = [data[at : at + 50] for at in range(0, len(data), 50)]
        return httpx.Response(200, stream=httpx.ByteStream(b"".join(pieces)), headers={"content-type": content_type})

    with (
        httpx.Client(transport=httpx.MockTransport(handler)) as client,
        client.stream("POST", "http://t.invalid/") as r,
    ):
        stream = integrations.stream_httpx(r, provider="gemini")
        list(stream)
        assert stream.finish() == expected


# ------------------------------------------------------------------ 4. an event stream where a body is read


@pytest.mark.parametrize("lead", [b"", b"event: message_start\n", b": ping\n", b"id: 1\n", b"retry: 10\n"])
def test_an_event_stream_given_as_a_body_is_named(impl: ModuleType, lead: bytes) -> None:
    with pytest.raises(OutputError) as caught:
        impl.normalize(b"\n" + lead + CHAT_CALL, provider="openai-chat")
    assert caught.value.code == "NOT_A_RESPONSE_BODY"
    assert "not JSON but an event stream (a stream is read with StreamAssembler)" in str(caught.value)


@pytest.mark.parametrize("text", [b"Service Unavailable: try later", b"datum: x", b"data\n: x"])
def test_other_text_is_still_text(impl: ModuleType, text: bytes) -> None:
    with pytest.raises(OutputError) as caught:
        impl.normalize(text, provider="openai-chat")
    assert caught.value.code == "NOT_A_RESPONSE_BODY"
    assert "not JSON but text" in str(caught.value)
