"""Which provider, and which events, an SDK object or an HTTP stream stands
for: classes of mistakes at the adapters, on both backends.

1. An OpenAI SDK object is told by its class (``openai.types.chat`` or
   ``openai.types.responses``), never by its fields: the SDK keeps every
   field the server sends, so a ``ChatCompletion`` carrying a made-up
   ``type: "response.completed"`` and an ``output`` list was read as a
   Responses response, and the server's injected function call was the
   decision instead of the chat answer. A stream chunk looking like both APIs
   was refused as undetectable.
2. Only an SDK helper-stream object (a class outside ``<sdk>.types``) is
   skipped as derived from wire events: a wire object whose server-sent
   ``type`` field said ``text`` or ``content.delta`` was dropped, so a chunk
   carrying part of a call's arguments vanished and the call ran with the
   rest (``{"a": "safe", "b": "x"}`` became ``{"a": "safe"}``).
3. Event data an SDK stream cannot decode as JSON (a server's ``data: {bad``)
   is ``MALFORMED_EVENT``, as the same bytes fed to an assembler are; the
   SDK's ``json.JSONDecodeError`` escaped untyped.
4. The OpenAI SDK's helper stream, given strict tools (as
   ``build_request`` makes them), raises its own ``LengthFinishReasonError``
   / ``ContentFilterFinishReasonError`` at a ``length`` / ``content_filter``
   finish; they escaped untyped. They are the ``INCOMPLETE_RESPONSE`` /
   ``CONTENT_FILTERED`` the same stream's bytes give.
5. An HTTP stream whose reading stops for another reason than a transport
   error (a cancelled task, a closed iterator) is ``STREAM_CANCELLED`` on
   every later ``finish()``; it was a ``RuntimeError`` saying the stream
   "was not read to its end".
6. A successful HTTP response whose body is no event stream (a provider's
   JSON error, a whole non-streamed body, a proxy's HTML page) was read as
   an empty stream: ``NO_TERMINAL_EVENT`` (retryable), the server's message
   lost. The body's first bytes tell (its content type may be anything: an
   event stream served as ``text/plain`` is still one); a JSON error body is
   the ``PROVIDER_ERROR`` ``normalize`` gives for it, anything else
   ``NOT_A_RESPONSE_BODY``, and no more of it is read than that needs.
7. A google-genai object was dumped twice (JSON mode, then python mode for
   its bytes) and its base64 written again, about four times its inline
   data in memory, before ``max_sse_event_bytes`` refused it. Its bytes are
   measured first: an object they alone make too large is refused with the
   ``MALFORMED_EVENT`` its payload gets, before any dump; one within the
   limit is dumped to JSON once, its base64 turned standard where it lies.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import importlib
import importlib.util
import json
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

import pytest

import decisions
from conftest import peak_bytes
from decisions import StreamError, _backend, integrations
from http_streams import finished

openai = pytest.importorskip("openai")


@pytest.fixture(autouse=True)
def _backend_under_test(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setattr(_backend, "impl", impl)
    return impl


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events) + b"data: [DONE]\n\n"


def _sdk_client(body: bytes, content_type: str) -> Any:
    """An OpenAI client whose every request is answered with ``body``: the
    objects it gives are built by the SDK itself, as a user's are."""
    base = importlib.import_module("openai._base_client")
    http = getattr(base, "httpx2", None) or base.httpx

    def handler(request: Any) -> Any:
        return http.Response(200, content=body, headers={"content-type": content_type})

    client = http.Client(transport=http.MockTransport(handler))
    return openai.OpenAI(api_key="sk-test", base_url="http://test.invalid/v1", http_client=client, max_retries=0)


_MESSAGES = [{"role": "user", "content": "hi"}]

# ---------------------------------------------------------------- 1. the SDK's class names the API

_INJECTED = {
    "type": "response.completed",
    "status": "completed",
    "output": [
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "delete_all", "arguments": "{}"},
    ],
}


def test_a_chat_completion_with_responses_fields_is_read_as_chat() -> None:
    body = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        **_INJECTED,
    }
    completion = _sdk_client(json.dumps(body).encode(), "application/json").chat.completions.create(
        model="m", messages=_MESSAGES
    )
    assert type(completion).__name__ == "ChatCompletion"
    assert integrations.detect_provider(completion) == "openai-chat"
    response = integrations.normalize_sdk(completion)
    assert (response.provider, response.text, response.tool_calls) == ("openai-chat", "hi", ())
    assert response == decisions.normalize(body, provider="openai-chat")


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice], **extra}


def _arguments(text: str, first: bool = False) -> dict[str, Any]:
    call: dict[str, Any] = {"index": 0, "function": {"arguments": text}}
    if first:
        call.update(id="call_1", type="function")
        call["function"]["name"] = "run"
    return {"tool_calls": [call]}


def _stream(chunks: list[dict[str, Any]]) -> list[Any]:
    """The SDK's own stream objects for ``chunks``."""
    client = _sdk_client(_sse(chunks), "text/event-stream")
    return list(client.chat.completions.create(model="m", messages=_MESSAGES, stream=True))


def test_a_chunk_that_also_looks_like_responses_is_read_as_chat() -> None:
    chunks = [
        _chunk(_arguments('{"a": 1}', first=True), type="response.created"),
        _chunk({}, "tool_calls"),
    ]
    objects = _stream(chunks)
    assert integrations.detect_provider(objects[0]) == "openai-chat"
    response = integrations.assemble_sdk_stream(objects)
    assert [(call.name, call.arguments) for call in response.tool_calls] == [("run", '{"a": 1}')]


# ---------------------------------------------------------------- 2. a wire object is never skipped


@pytest.mark.parametrize("kind", ["text", "input_json", "content.delta", "tool_calls.function.arguments.delta"])
def test_a_wire_chunk_whose_type_field_names_a_derived_event_is_still_read(kind: str) -> None:
    chunks = [
        _chunk(_arguments('{"a": "safe"', first=True)),
        _chunk(_arguments(', "b": "x"'), type=kind),
        _chunk(_arguments("}")),
        _chunk({}, "tool_calls"),
    ]
    objects = _stream(chunks)
    assert getattr(objects[1], "type", None) == kind  # the SDK keeps the server's field
    assert integrations.to_payload(objects[1]) == chunks[1]
    expected = _direct(chunks)
    for response in (integrations.assemble_sdk_stream(objects), _fed(objects)):
        assert response == expected
        assert [call.arguments for call in response.tool_calls] == ['{"a": "safe", "b": "x"}']


def _direct(chunks: list[dict[str, Any]]) -> Any:
    """The response the raw stream gives, read from its bytes."""
    assembler = decisions.StreamAssembler("openai-chat")
    assembler.feed(_sse(chunks))
    return assembler.finish()


def _fed(objects: list[Any]) -> Any:
    assembler = decisions.StreamAssembler("openai-chat")
    for obj in objects:
        integrations.feed_sdk_event(assembler, obj)
    return assembler.finish()


def test_a_wire_chunk_with_a_chunk_field_is_not_replaced_by_it() -> None:
    """A helper's ``chunk`` event gives its chunk; a wire chunk whose server
    added ``type: "chunk"`` and a ``chunk`` of its own is itself."""
    decoy = _chunk({"content": "decoy"}, "stop")
    chunks = [_chunk({"content": "real"}, type="chunk", chunk=decoy), _chunk({}, "stop")]
    objects = _stream(chunks)
    assert integrations.assemble_sdk_stream(objects).text == "real"


def test_the_helper_streams_derived_events_are_still_skipped() -> None:
    chunks = [_chunk(_arguments('{"a": 1}', first=True)), _chunk({}, "tool_calls")]
    client = _sdk_client(_sse(chunks), "text/event-stream")
    with client.chat.completions.stream(model="m", messages=_MESSAGES) as stream:
        events = list(stream)
    kinds = {event.type for event in events}
    assert "chunk" in kinds and kinds - {"chunk"}
    assert integrations.assemble_sdk_stream(events) == _direct(chunks)


# ---------------------------------------------------------------- 3. event data the SDK cannot decode

_ANTHROPIC_START = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
    b'"role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
)


def _collect_abandoned() -> None:
    """Finalise here the SDK's event generator a raised error left suspended
    (held by the error's traceback), not in whichever test runs next."""
    gc.collect()


def _raw_stream(sdk_name: str, body: bytes) -> Any:
    """The raw stream ``sdk_name``'s client makes of ``body``."""
    sdk = pytest.importorskip(sdk_name)
    base = importlib.import_module(f"{sdk_name}._base_client")
    http = getattr(base, "httpx2", None) or base.httpx

    def handler(request: Any) -> Any:
        return http.Response(200, content=body, headers={"content-type": "text/event-stream"})

    client = http.Client(transport=http.MockTransport(handler))
    if sdk_name == "anthropic":
        api = sdk.Anthropic(api_key="sk-ant-test", base_url="http://test.invalid", http_client=client, max_retries=0)
        return api.messages.create(model="m", max_tokens=10, messages=_MESSAGES, stream=True)
    return _sdk_client(body, "text/event-stream").chat.completions.create(model="m", messages=_MESSAGES, stream=True)


@pytest.mark.parametrize("given", [True, False], ids=["provider given", "detected"])
@pytest.mark.parametrize(
    "provider,sdk_name,body",
    [
        ("openai-chat", "openai", _sse([_chunk({"content": "hi"})])[: -len(b"data: [DONE]\n\n")] + b"data: {bad\n\n"),
        ("anthropic", "anthropic", _ANTHROPIC_START + b"event: content_block_delta\ndata: {bad\n\n"),
    ],
    ids=["openai", "anthropic"],
)
def test_event_data_the_sdk_cannot_decode_is_malformed(provider: str, sdk_name: str, body: bytes, given: bool) -> None:
    direct = decisions.StreamAssembler(provider)
    with pytest.raises(StreamError) as expected:
        direct.feed(body)
        direct.finish()
    with _raw_stream(sdk_name, body) as stream, pytest.raises(StreamError) as info:
        integrations.assemble_sdk_stream(stream, provider=provider if given else None)
    _collect_abandoned()
    assert info.value.code == expected.value.code == "MALFORMED_EVENT"
    assert info.value.retryable == expected.value.retryable


# ---------------------------------------------------------------- 4. the helper stream's own finish errors


@pytest.mark.parametrize("finish", ["length", "content_filter"])
def test_the_helper_streams_finish_errors_are_the_finishes_refusal(finish: str) -> None:
    from decisions import build_request, decide
    from decisions.request.definitions import ToolDefinition

    plan = build_request("openai-chat", tools=[ToolDefinition("run", {"type": "object", "properties": {}})])
    chunks = [_chunk(_arguments('{"a": "x', first=True)), _chunk({}, finish)]
    with pytest.raises(StreamError) as expected:
        decide(_direct(chunks))
    client = _sdk_client(_sse(chunks), "text/event-stream")
    with client.chat.completions.stream(model="m", messages=_MESSAGES, tools=plan.params["tools"]) as stream:
        with pytest.raises(StreamError) as info:
            integrations.assemble_sdk_stream(stream)
    _collect_abandoned()
    assert isinstance(info.value.__cause__, openai.OpenAIError)  # the helper's own error, typed
    got, want = info.value, expected.value
    assert (got.code, got.layer, got.retryable) == (want.code, want.layer, want.retryable)


# ---------------------------------------------------------------- 5. an interrupted HTTP stream

_HTTP_NAMES = ["httpx"] + (["httpx2"] if importlib.util.find_spec("httpx2") is not None else [])
_HEAD = _sse([_chunk({"role": "assistant", "content": "partial"})])[: -len(b"data: [DONE]\n\n")]
URL = "http://test.invalid/"


@pytest.fixture(params=_HTTP_NAMES)
def http(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


def _stalling(http: ModuleType) -> Any:
    """A body that sends one chunk, then waits (a server that went quiet)."""

    class Body(http.SyncByteStream, http.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __iter__(self) -> Iterator[bytes]:
            yield _HEAD
            yield _HEAD  # the second read is where the sync test stops

        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield _HEAD
            await asyncio.sleep(3600)
            yield b""

    return Body()


def test_a_cancelled_async_read_is_stream_cancelled(http: ModuleType) -> None:
    async def handler(request: Any) -> Any:
        return http.Response(200, stream=_stalling(http), headers={"content-type": "text/event-stream"})

    async def run() -> None:
        async with http.AsyncClient(transport=http.MockTransport(handler)) as client:
            async with client.stream("POST", URL) as response:
                stream = integrations.astream_httpx(response, provider="openai-chat")
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(stream.finish(), 0.2)
                for _ in range(2):  # and again: the outcome is kept
                    with pytest.raises(StreamError) as info:
                        await stream.finish()
                    assert info.value.code == "STREAM_CANCELLED"
                    assert "CancelledError" in info.value.message

    asyncio.run(run())


def test_a_closed_sync_iterator_is_stream_cancelled(http: ModuleType) -> None:
    def handler(request: Any) -> Any:
        return http.Response(200, stream=_stalling(http), headers={"content-type": "text/event-stream"})

    with http.Client(transport=http.MockTransport(handler)) as client, client.stream("POST", URL) as response:
        stream = integrations.stream_httpx(response, provider="openai-chat")
        events = iter(stream)
        assert next(events).type == "response_started"
        events.close()  # type: ignore[attr-defined]
        with pytest.raises(StreamError) as info:
            stream.finish()
        assert (info.value.code, "GeneratorExit" in info.value.message) == ("STREAM_CANCELLED", True)


# ---------------------------------------------------------------- 6. a body that is no event stream

_ERROR_BODIES = {
    "openai-chat": {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}},
    "anthropic": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    "gemini": {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}},
}
_CONTENT_TYPES = ["application/json", "text/plain", "text/event-stream"]


def _pieces(http: ModuleType, pieces: Iterator[bytes] | list[bytes]) -> Any:
    """A body sent as ``pieces``, one network chunk each."""
    chunks = list(pieces) if isinstance(pieces, list) else None

    class Body(http.SyncByteStream, http.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __iter__(self) -> Iterator[bytes]:
            yield from chunks if chunks is not None else pieces

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in chunks if chunks is not None else pieces:
                yield chunk

    return Body()


def _read(http: ModuleType, body: Any, content_type: str, provider: str, asynchronous: bool, **kw: Any) -> Any:
    """What ``stream_httpx`` (or ``astream_httpx``) gives for a 200 response
    with ``body`` (see ``http_streams.finished``)."""

    def respond(request: Any) -> Any:
        return http.Response(200, stream=body, headers={"content-type": content_type})

    return finished(http, respond, provider, asynchronous, **kw)


def _bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("content_type", _CONTENT_TYPES)
@pytest.mark.parametrize("provider", list(_ERROR_BODIES))
def test_a_json_error_body_is_the_providers_error(
    http: ModuleType, provider: str, content_type: str, asynchronous: bool
) -> None:
    body = b"\n  " + json.dumps(_ERROR_BODIES[provider], indent=1).encode()
    with pytest.raises(decisions.TransportError) as expected:
        decisions.normalize(body, provider=provider)
    for pieces in ([body], _bytewise(body)):
        got = _read(http, _pieces(http, pieces), content_type, provider, asynchronous)
        assert isinstance(got, decisions.TransportError)
        assert (got.code, got.retryable, got.message) == ("PROVIDER_ERROR", True, expected.value.message)


_NOT_STREAMS = {
    "a whole response body": json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        }
    ).encode(),
    "a JSON array": b"[1, 2]",
    "an HTML page": b"<html><body>Service temporarily unavailable</body></html>",
    "plain text": b"upstream connect error or disconnect/reset before headers",
}


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("body", list(_NOT_STREAMS.values()), ids=list(_NOT_STREAMS))
def test_a_body_that_is_no_event_stream_is_refused_as_such(http: ModuleType, body: bytes, asynchronous: bool) -> None:
    for pieces in ([body], _bytewise(body)):
        got = _read(http, _pieces(http, pieces), "text/html", "openai-chat", asynchronous)
        assert isinstance(got, StreamError)
        assert (got.code, got.retryable) == ("NOT_A_RESPONSE_BODY", False)
        assert "not an event stream" in got.message and body[:20].decode() in got.message


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("first", [b"{", b"<"], ids=["JSON", "other"])
def test_an_endless_body_that_is_no_event_stream_is_read_only_as_far_as_needed(
    http: ModuleType, first: bytes, asynchronous: bool
) -> None:
    sent = 0

    def endless() -> Iterator[bytes]:
        nonlocal sent
        yield first
        while True:
            sent += 1
            yield b"x" * 1024

    limits = decisions.Limits(max_document_bytes=64 * 1024)
    got = _read(http, _pieces(http, endless()), "application/json", "openai-chat", asynchronous, limits=limits)
    assert (type(got), got.code) == (StreamError, "NOT_A_RESPONSE_BODY")
    assert sent <= 65


_STREAM = _sse([_chunk({"role": "assistant", "content": "hi"}), _chunk({}, "stop")])


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("content_type", _CONTENT_TYPES)
@pytest.mark.parametrize(
    "start",
    [b"", b"\xef\xbb\xbf", b"\r\n\n", b": keep-alive\n\n", b"event: x\n"],
    ids=["none", "bom", "blank-lines", "comment", "event-field"],
)
def test_an_event_stream_is_read_whatever_its_content_type(
    http: ModuleType, content_type: str, start: bytes, asynchronous: bool
) -> None:
    for pieces in ([start + _STREAM], _bytewise(start + _STREAM)):
        got = _read(http, _pieces(http, pieces), content_type, "openai-chat", asynchronous)
        assert isinstance(got, decisions.types.NormalizedResponse) and got.text == "hi"


# ---------------------------------------------------------------- 7. google-genai bytes are measured first


def _genai_image(data: bytes, signature: bytes = b"\xfb\xff") -> Any:
    genai = pytest.importorskip("google.genai.types")
    blob = genai.Blob(mime_type="image/png", data=data)
    part = genai.Part(inline_data=blob, thought_signature=signature)
    content = genai.Content(role="model", parts=[part, genai.Part(text="done")])
    return genai.GenerateContentResponse(candidates=[genai.Candidate(content=content, finish_reason="STOP")])


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 1000])
def test_genai_bytes_are_written_as_standard_base64(size: int) -> None:
    data = bytes((251 + i) % 256 for i in range(size))  # 0xfb 0xff: "-" and "_" in URL-safe base64
    payload = integrations.to_payload(_genai_image(data))
    assert isinstance(payload, dict)
    part = payload["candidates"][0]["content"]["parts"][0]
    assert part == {
        "inlineData": {"mimeType": "image/png", "data": base64.b64encode(data).decode()},
        "thoughtSignature": "+/8=",
    }


def _limited(limit: int) -> decisions.Limits:
    return decisions.Limits(max_sse_event_bytes=limit)


@pytest.mark.parametrize("over", [1, 1000])
def test_genai_bytes_over_the_limit_are_refused_as_the_payload_is(impl: ModuleType, over: int) -> None:
    data = bytes(3000)  # 4000 bytes of base64
    obj = _genai_image(data)
    payload = integrations.to_payload(obj)
    limits = _limited(4000 - over)
    with pytest.raises(StreamError) as expected:
        impl.StreamAssembler("gemini", limits=limits).feed_event(payload)
    with pytest.raises(StreamError) as streamed:
        integrations.assemble_sdk_stream([obj], limits=limits)
    with pytest.raises(StreamError) as whole:
        integrations.normalize_sdk(obj, limits=limits)
    assert streamed.value.to_dict() == whole.value.to_dict() == expected.value.to_dict()
    assert expected.value.code == "MALFORMED_EVENT"


def test_genai_bytes_cost_no_more_than_their_text_twice() -> None:
    size = 3 * 1024 * 1024
    obj = _genai_image(bytes(size))
    encoded = size * 4 // 3
    # the JSON dump's text and its standard copy (it was 3 texts: the base64 written again, as bytes and text)
    assert peak_bytes(lambda: integrations.to_payload(obj)) < 2.5 * encoded
    assert peak_bytes(lambda: integrations.to_payload(obj, limits=_limited(2 * encoded))) < 2.5 * encoded

    def refused() -> None:
        with pytest.raises(StreamError, match="MALFORMED_EVENT"):
            integrations.to_payload(obj, limits=_limited(encoded - 1))

    assert peak_bytes(refused) < encoded / 10  # refused before any dump
