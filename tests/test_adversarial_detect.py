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
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import importlib.util
import json
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

import pytest

import decisions
from decisions import StreamError, _backend, integrations

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
