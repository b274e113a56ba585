"""SDK objects and httpx responses, fed to the assembler without hand re-serialising.

The SDK clients run against ``httpx.MockTransport`` serving the bundled
example recordings, so the objects are exactly what a user's code receives;
nothing touches the network.
"""

from __future__ import annotations

import asyncio
import gzip
import importlib
import importlib.util
import json
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import decisions
from decisions import OutputError, StreamError, TransportError, integrations
from decisions.examples import EXAMPLES, load

RAW = {example.name: load(example) for example in EXAMPLES}


def _direct(provider: str, data: bytes) -> Any:
    assembler = decisions.StreamAssembler(provider, keep_events=True)
    assembler.feed(data)
    response = assembler.finish()
    return response, assembler.take_events()


def _sdk_http(sdk: ModuleType) -> ModuleType:
    """The HTTP package an SDK is built on (``httpx``, or ``httpx2`` in current releases)."""
    base = importlib.import_module(f"{sdk.__name__}._base_client")
    http = getattr(base, "httpx2", None) or base.httpx
    assert isinstance(http, ModuleType)
    return http


def _sdk_client(sdk: ModuleType, body: bytes, content_type: str) -> Any:
    http = _sdk_http(sdk)

    def handler(request: Any) -> Any:
        return http.Response(200, content=body, headers={"content-type": content_type})

    return http.Client(transport=http.MockTransport(handler))


# ---------------------------------------------------------------- openai


def _openai(body: bytes, content_type: str = "text/event-stream") -> Any:
    openai = pytest.importorskip("openai")
    http = _sdk_client(openai, body, content_type)
    return openai.OpenAI(api_key="sk-test", base_url="http://test.invalid/v1", http_client=http, max_retries=0)


def test_openai_chat_stream_objects() -> None:
    client = _openai(RAW["healthy"])
    chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True))
    assert type(chunks[0]).__name__ == "ChatCompletionChunk"
    assert integrations.detect_provider(chunks[0]) == "openai-chat"
    expected, _ = _direct("openai-chat", RAW["healthy"])
    assert integrations.assemble_sdk_stream(chunks) == expected
    assembler = decisions.StreamAssembler("openai-chat")
    for chunk in chunks:
        integrations.feed_sdk_event(assembler, chunk)
    assert assembler.finish() == expected


def test_openai_chat_helper_stream_events() -> None:
    client = _openai(RAW["healthy"])
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "hi"}]) as stream:
        events = list(stream)
    kinds = {event.type for event in events}
    assert "chunk" in kinds and kinds - {"chunk"}, kinds  # the helper adds derived events
    expected, _ = _direct("openai-chat", RAW["healthy"])
    assert integrations.assemble_sdk_stream(events) == expected


def test_openai_responses_stream_and_helper() -> None:
    client = _openai(RAW["invalid_escape"])
    events = list(client.responses.create(model="m", input="hi", stream=True))
    assert integrations.detect_provider(events[0]) == "openai-responses"
    expected, _ = _direct("openai-responses", RAW["invalid_escape"])
    assert integrations.assemble_sdk_stream(events) == expected
    with client.responses.stream(model="m", input="hi") as stream:
        helper_events = list(stream)
    assert integrations.assemble_sdk_stream(helper_events) == expected


def test_openai_whole_body_object() -> None:
    client = _openai(RAW["path_escape"], "application/json")
    completion = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert type(completion).__name__ == "ChatCompletion"
    expected = decisions.normalize(RAW["path_escape"], provider="openai-chat")
    assert integrations.normalize_sdk(completion) == expected
    assert integrations.to_payload(completion) == json.loads(RAW["path_escape"])


# ---------------------------------------------------------------- anthropic


def _anthropic(body: bytes, content_type: str = "text/event-stream") -> Any:
    anthropic = pytest.importorskip("anthropic")
    http = _sdk_client(anthropic, body, content_type)
    return anthropic.Anthropic(api_key="sk-ant-test", base_url="http://test.invalid", http_client=http, max_retries=0)


def test_anthropic_raw_stream_objects() -> None:
    client = _anthropic(RAW["parallel"])
    events = list(
        client.messages.create(model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}], stream=True)
    )
    assert integrations.detect_provider(events[0]) == "anthropic"
    expected, _ = _direct("anthropic", RAW["parallel"])
    assert integrations.assemble_sdk_stream(events) == expected


def test_anthropic_helper_stream_events() -> None:
    client = _anthropic(RAW["parallel"])
    with client.messages.stream(model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]) as stream:
        events = list(stream)
    kinds = {event.type for event in events}
    assert {"text", "input_json"} <= kinds  # derived events, skipped by the adapter
    expected, _ = _direct("anthropic", RAW["parallel"])
    assert integrations.assemble_sdk_stream(events) == expected


def test_anthropic_truncated_stream_keeps_its_finish_reason() -> None:
    client = _anthropic(RAW["truncated"])
    events = list(
        client.messages.create(model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}], stream=True)
    )
    response = integrations.assemble_sdk_stream(events)
    assert response.finish_reason == "length"
    assert [call.complete for call in response.tool_calls] == [False]


def test_anthropic_whole_message_object() -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 7},
    }
    client = _anthropic(json.dumps(body).encode(), "application/json")
    message = client.messages.create(model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}])
    assert integrations.detect_provider(message) == "anthropic"
    assert integrations.normalize_sdk(message) == decisions.normalize(body, provider="anthropic")


# ---------------------------------------------------------------- google-genai


def test_genai_response_objects() -> None:
    genai_types = pytest.importorskip("google.genai.types")
    body = json.loads(RAW["unknown_tool"])
    response = genai_types.GenerateContentResponse.model_validate(body)
    assert integrations.detect_provider(response) == "gemini"
    payload = integrations.to_payload(response)
    assert isinstance(payload, dict) and "functionCall" in json.dumps(payload)
    assert integrations.normalize_sdk(response) == decisions.normalize(body, provider="gemini")
    # A stream is a sequence of the same objects, one per chunk.
    chunks = [response]
    streamed = integrations.assemble_sdk_stream(chunks)
    assert streamed.tool_calls[0].name == "readFile"


def test_a_genai_part_of_a_kind_the_sdk_does_not_know_is_refused() -> None:
    """google-genai drops the fields it does not know from a response, so a
    part of a kind newer than the SDK reaches the package as ``{}``; the text
    beside it was the whole final answer. It is refused as the part read from
    the bytes is (``UNSUPPORTED_ITEM`` at the part), never a half answer."""
    genai = pytest.importorskip("google.genai")
    import httpx

    body = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "Here is the chart:"}, {"chartData": {"x": [1]}}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "responseId": "r1",
    }
    client = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, json=body)))
    options = genai.types.HttpOptions(base_url="http://test.invalid", httpx_client=client)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        response = genai.Client(api_key="test", http_options=options).models.generate_content(model="m", contents="hi")
    assert integrations.to_payload(response)["candidates"][0]["content"]["parts"][1] == {}  # what the SDK kept
    path = "$.candidates[0].content.parts[1]"
    for read in (lambda: integrations.normalize_sdk(response), lambda: decisions.normalize(body, provider="gemini")):
        with pytest.raises(OutputError) as caught:
            read()
        assert (caught.value.code, caught.value.path) == ("UNSUPPORTED_ITEM", path)


GEMINI_STREAMS = [
    "vercel-ai/packages/google/src/__fixtures__/google-stream-tool-call-arguments.chunks.txt",
    "vercel-ai/packages/google/src/__fixtures__/google-stream-no-args-tool-call.chunks.txt",
]


@pytest.mark.parametrize("name", GEMINI_STREAMS, ids=lambda n: n.rsplit("/", 1)[-1])
def test_genai_stream_objects_give_the_wire_payloads(name: str) -> None:
    """A recorded streamGenerateContent, chunk by chunk, as google-genai objects
    (thought signatures are bytes there: they must come back as the API's base64)."""
    genai_types = pytest.importorskip("google.genai.types")
    path = Path(__file__).parent / "fixtures" / name
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    objects = [genai_types.GenerateContentResponse.model_validate(line) for line in lines]
    assert [integrations.to_payload(o) for o in objects] == lines
    direct = decisions.StreamAssembler("gemini")
    for line in lines:
        direct.feed_event(line)
    assert integrations.assemble_sdk_stream(objects) == direct.finish()


class _DuckModel:
    """A pydantic-like object from an unknown library: model_dump is all it has."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def model_dump(self, **options: Any) -> dict[str, Any]:
        return self.data


def test_duck_typed_models_and_dicts() -> None:
    body = json.loads(RAW["unknown_tool"])
    assert integrations.normalize_sdk(_DuckModel(body)) == decisions.normalize(body, provider="gemini")
    assert integrations.normalize_sdk(body) == decisions.normalize(body, provider="gemini")
    with pytest.raises(TypeError, match="pydantic"):
        integrations.to_payload(object())
    with pytest.raises(ValueError, match="provider"):
        integrations.normalize_sdk({"what": "is this"})


# ---------------------------------------------------------------- SDK streams that fail

_ANTHROPIC_START = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
    b'"role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
)
_CHAT_CHUNK = (
    b'data: {"id":"c","object":"chat.completion.chunk","model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
)
#: (sdk, the stream's start, an error event the provider sends in it)
_FAILING = {
    "anthropic": (
        "anthropic",
        _ANTHROPIC_START,
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    ),
    "openai-chat": ("openai", _CHAT_CHUNK, b'data: {"error":{"message":"boom","type":"server_error"}}\n\n'),
    # the SDK raises the error object alone (its body): it is the Responses error event's
    "openai-responses": (
        "openai",
        b'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1",'
        b'"object":"response","created_at":1,"model":"m","status":"in_progress","output":[],'
        b'"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}}\n\n',
        b'event: error\ndata: {"type":"error","sequence_number":1,'
        b'"error":{"type":"server_error","code":"server_error","message":"boom","param":null}}\n\n',
    ),
    # google-genai raises the chunk as its ServerError, keeping it as ``details``, not ``body``
    "gemini": (
        "google.genai",
        b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"index":0}],'
        b'"responseId":"r1","modelVersion":"m"}\n\n',
        b'data: {"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}\n\n',
    ),
}


def _sdk_stream(provider: str, chunks: list[bytes], error: str | None = None) -> Any:
    """The SDK's raw stream of ``chunks``, the connection then failing with ``error`` (an HTTP client class name)."""
    sdk = pytest.importorskip(_FAILING[provider][0])
    http = importlib.import_module("httpx") if provider == "gemini" else _sdk_http(sdk)

    class Body(http.SyncByteStream):  # type: ignore[name-defined,misc]
        def __iter__(self) -> Iterator[bytes]:
            yield from chunks
            if error is not None:
                raise getattr(http, error)("peer closed connection")

    def handler(request: Any) -> Any:
        return http.Response(200, stream=Body(), headers={"content-type": "text/event-stream"})

    client = http.Client(transport=http.MockTransport(handler))
    messages = [{"role": "user", "content": "hi"}]
    if provider == "anthropic":
        api = sdk.Anthropic(api_key="sk-ant-test", base_url="http://test.invalid", http_client=client, max_retries=0)
        return api.messages.create(model="m", max_tokens=100, messages=messages, stream=True)
    if provider == "gemini":
        options = sdk.types.HttpOptions(base_url="http://test.invalid", httpx_client=client)
        return sdk.Client(api_key="test", http_options=options).models.generate_content_stream(model="m", contents="hi")
    api = sdk.OpenAI(api_key="sk-test", base_url="http://test.invalid/v1", http_client=client, max_retries=0)
    if provider == "openai-responses":
        return api.responses.create(model="m", input="hi", stream=True)
    return api.chat.completions.create(model="m", messages=messages, stream=True)


@pytest.mark.parametrize("given", [False, True], ids=["detected", "provider given"])
@pytest.mark.parametrize("first", [True, False], ids=["error first", "error after an event"])
@pytest.mark.parametrize("provider", list(_FAILING))
def test_an_error_the_sdk_raises_from_the_stream_is_the_providers_error(
    provider: str, first: bool, given: bool
) -> None:
    """The SDK raises an error event of the stream as its own APIError; it is
    refused as the same event read from bytes is (PROVIDER_ERROR, retryable
    as the provider's error type says), not left as the SDK's exception. The
    OpenAI SDK's body of a Responses error event (the error object alone) was
    read as a Chat chunk (MALFORMED_EVENT, not retryable), and google-genai's
    error chunk (its ``details``) was not read (PROVIDER_ERROR, not retryable,
    where the chunk is retryable for its 503)."""
    _, start, error_event = _FAILING[provider]
    chunks = [error_event] if first else [start, error_event]
    direct = decisions.StreamAssembler(provider)
    direct.feed(b"".join(chunks))
    with pytest.raises(TransportError) as expected:
        direct.finish()
    stream = _sdk_stream(provider, chunks)
    with pytest.raises(TransportError) as info:
        integrations.assemble_sdk_stream(stream, provider=provider if given else None)
    assert info.value.code == "PROVIDER_ERROR"
    # the provider is known (given, from an event, or the only one the SDK speaks for): its own reading
    if given or not first or provider in ("anthropic", "gemini"):
        assert info.value.to_dict() == expected.value.to_dict()


@pytest.mark.parametrize("error", ["RemoteProtocolError", "ReadError"])
@pytest.mark.parametrize("provider", list(_FAILING))
def test_a_connection_the_sdk_loses_is_a_transport_error(provider: str, error: str) -> None:
    stream = _sdk_stream(provider, [_FAILING[provider][1]], error)
    with pytest.raises(TransportError) as info:
        integrations.assemble_sdk_stream(stream)
    assert (info.value.code, info.value.retryable) == ("CONNECTION_CLOSED", True)


# ---------------------------------------------------------------- httpx

_HTTP_NAMES = ["httpx"] + (["httpx2"] if importlib.util.find_spec("httpx2") is not None else [])


@pytest.fixture(params=_HTTP_NAMES)
def http(request: pytest.FixtureRequest) -> ModuleType:
    """``httpx`` and, where installed, ``httpx2`` (same API)."""
    return importlib.import_module(request.param)


def _body(http: ModuleType, chunks: list[bytes], error: Exception | None = None) -> Any:
    """A response body: chunks, then optionally a transport error (a dropped connection)."""

    class Body(http.SyncByteStream, http.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __iter__(self) -> Iterator[bytes]:
            yield from chunks
            if error is not None:
                raise error

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in chunks:
                yield chunk
            if error is not None:
                raise error

    return Body()


def _split(data: bytes, size: int = 37) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _client(http: ModuleType, body: Any, status: int = 200) -> Any:
    def handler(request: Any) -> Any:
        return http.Response(status, stream=body, headers={"content-type": "text/event-stream"})

    return http.Client(transport=http.MockTransport(handler))


def _async_client(http: ModuleType, body: Any, status: int = 200) -> Any:
    async def handler(request: Any) -> Any:
        return http.Response(status, stream=body, headers={"content-type": "text/event-stream"})

    return http.AsyncClient(transport=http.MockTransport(handler))


URL = "http://test.invalid/"


@pytest.mark.parametrize(
    "name,provider", [("healthy", "openai-chat"), ("parallel", "anthropic"), ("invalid_escape", "openai-responses")]
)
def test_httpx_sync_events_then_response(http: ModuleType, name: str, provider: str) -> None:
    expected, expected_events = _direct(provider, RAW[name])
    with _client(http, _body(http, _split(RAW[name]))) as client, client.stream("POST", URL) as response:
        stream = integrations.stream_httpx(response, provider=provider)
        events = list(stream)
        assert stream.finish() == expected
    assert events == expected_events


def test_httpx_finish_reads_the_rest(http: ModuleType) -> None:
    expected, _ = _direct("anthropic", RAW["parallel"])
    with _client(http, _body(http, _split(RAW["parallel"]))) as client, client.stream("POST", URL) as response:
        stream = integrations.stream_httpx(response, provider="anthropic")
        first = next(iter(stream))
        assert first.type == "response_started"
        assert stream.finish() == expected


def test_httpx_async_events_then_response(http: ModuleType) -> None:
    expected, expected_events = _direct("openai-chat", RAW["healthy"])

    async def run() -> tuple[list[Any], Any]:
        async with _async_client(http, _body(http, _split(RAW["healthy"]))) as client:
            async with client.stream("POST", URL) as response:
                stream = integrations.astream_httpx(response, provider="openai-chat")
                events = [event async for event in stream]
                return events, await stream.finish()

    events, response = asyncio.run(run())
    assert events == expected_events and response == expected


@pytest.mark.parametrize("error_name", ["RemoteProtocolError", "ReadError"])
def test_httpx_dropped_connection_is_a_transport_error(http: ModuleType, error_name: str) -> None:
    data = RAW["parallel"]
    error = getattr(http, error_name)("peer closed connection")
    with (
        _client(http, _body(http, _split(data[: len(data) // 2]), error)) as client,
        client.stream("POST", URL) as response,
    ):
        stream = integrations.stream_httpx(response, provider="anthropic")
        seen: list[Any] = []
        with pytest.raises(TransportError) as info:
            for event in stream:
                seen.append(event)
        assert info.value.code == "CONNECTION_CLOSED" and info.value.retryable
        assert seen and seen[0].type == "response_started"  # events were forwarded, but no response
        with pytest.raises(TransportError):
            stream.finish()


@pytest.mark.parametrize("error_name", ["RemoteProtocolError", "ReadError"])
def test_httpx_async_dropped_connection_is_a_transport_error(http: ModuleType, error_name: str) -> None:
    data = RAW["healthy"]
    error = getattr(http, error_name)("reset by peer")

    async def run() -> None:
        async with _async_client(http, _body(http, _split(data[: len(data) // 2]), error)) as client:
            async with client.stream("POST", URL) as response:
                stream = integrations.astream_httpx(response, provider="openai-chat")
                with pytest.raises(TransportError) as info:
                    await stream.finish()
                assert info.value.code == "CONNECTION_CLOSED"

    asyncio.run(run())


def test_httpx_body_ending_early_is_a_stream_error(http: ModuleType) -> None:
    data = RAW["parallel"]
    cut = data[: data.index(b"event: message_delta")]  # at an event boundary, before the terminal events
    with _client(http, _body(http, _split(cut))) as client, client.stream("POST", URL) as response:
        stream = integrations.stream_httpx(response, provider="anthropic")
        with pytest.raises(StreamError) as info:
            stream.finish()
    assert info.value.code == "NO_TERMINAL_EVENT"


def test_httpx_body_ending_mid_event_is_a_stream_error(http: ModuleType) -> None:
    data = RAW["healthy"]
    cut = data[: len(data) - 30]
    with _client(http, _body(http, _split(cut))) as client, client.stream("POST", URL) as response:
        with pytest.raises(StreamError) as info:
            integrations.stream_httpx(response, provider="openai-chat").finish()
    assert info.value.code in ("NO_TERMINAL_EVENT", "SSE_UNTERMINATED_EVENT")


@pytest.mark.parametrize(("status", "retryable"), [(500, True), (429, True), (400, False)])
def test_httpx_error_status_is_a_transport_error(http: ModuleType, status: int, retryable: bool) -> None:
    body = _body(http, [b'{"error": {"message": "bad request"}}'])
    with _client(http, body, status) as client, client.stream("POST", URL) as response:
        with pytest.raises(TransportError) as info:
            integrations.stream_httpx(response, provider="openai-chat").finish()
    assert info.value.code == "HTTP_STATUS" and info.value.retryable is retryable
    assert "bad request" in info.value.message


class _Counted:
    """A long error body that counts the chunks read from it."""

    def __init__(self, http: ModuleType, chunks: int, error: Exception | None = None) -> None:
        self.read = 0
        counter = self

        class Body(http.SyncByteStream, http.AsyncByteStream):  # type: ignore[name-defined,misc]
            def __iter__(self) -> Iterator[bytes]:
                for _ in range(chunks):
                    counter.read += 1
                    yield b"<html>" + b"x" * 1018
                if error is not None:
                    raise error

            async def __aiter__(self) -> AsyncIterator[bytes]:
                for chunk in self.__iter__():
                    yield chunk

        self.body = Body()


def _status_error(http: ModuleType, body: Any, status: int, asynchronous: bool) -> TransportError:
    """The error ``stream_httpx`` (or ``astream_httpx``) raises for a response of ``status``."""
    if not asynchronous:
        with _client(http, body, status) as client, client.stream("POST", URL) as response:
            with pytest.raises(TransportError) as info:
                integrations.stream_httpx(response, provider="openai-chat").finish()
        return info.value

    async def run() -> TransportError:
        async with _async_client(http, body, status) as client:
            async with client.stream("POST", URL) as response:
                with pytest.raises(TransportError) as info:
                    await integrations.astream_httpx(response, provider="openai-chat").finish()
                return info.value

    return asyncio.run(run())


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_error_status_reads_only_the_head_of_its_body(http: ModuleType, asynchronous: bool) -> None:
    """A 5xx page of any length costs its excerpt, not its length (a gateway's
    endless body was read whole before the excerpt was cut)."""
    counted = _Counted(http, 100_000)
    error = _status_error(http, counted.body, 503, asynchronous)
    assert (error.code, error.retryable) == ("HTTP_STATUS", True)
    assert error.message.startswith("the provider answered HTTP 503: <html>xxx")
    assert counted.read == 1


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("error_name", ["RemoteProtocolError", "ReadError"])
def test_an_error_body_cut_short_is_still_the_status_error(
    http: ModuleType, asynchronous: bool, error_name: str
) -> None:
    """The connection dropping while an error status's body is read is the
    typed HTTP_STATUS with what was read, not the HTTP client's own exception."""
    body = _body(http, [b'{"error": {"message": "upstream'], getattr(http, error_name)("reset by peer"))
    error = _status_error(http, body, 502, asynchronous)
    assert (error.code, error.retryable) == ("HTTP_STATUS", True)
    assert error.message == 'the provider answered HTTP 502: {"error": {"message": "upstream'


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_body_its_encoding_cannot_decode_is_a_transport_error(http: ModuleType, asynchronous: bool) -> None:
    """A gzip stream corrupted on the way (the HTTP client's DecodingError) is
    the typed CONNECTION_CLOSED, as a dropped connection is: no response."""
    packed = gzip.compress(RAW["healthy"])
    body = _body(http, [packed[:20] + b"\x00garbage" + packed[28:]])
    headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
    if not asynchronous:
        client = http.Client(
            transport=http.MockTransport(lambda request: http.Response(200, stream=body, headers=headers))
        )
        with client, client.stream("POST", URL) as response:
            with pytest.raises(TransportError) as info:
                integrations.stream_httpx(response, provider="openai-chat").finish()
    else:

        async def handler(request: Any) -> Any:
            return http.Response(200, stream=body, headers=headers)

        async def run() -> None:
            async with http.AsyncClient(transport=http.MockTransport(handler)) as client:
                async with client.stream("POST", URL) as response:
                    await integrations.astream_httpx(response, provider="openai-chat").finish()

        with pytest.raises(TransportError) as info:
            asyncio.run(run())
    assert (info.value.code, info.value.retryable) == ("CONNECTION_CLOSED", True)
    assert "DecodingError" in info.value.message


def test_other_response_objects_are_refused() -> None:
    with pytest.raises(TypeError, match="httpx"):
        integrations.stream_httpx(object(), provider="openai-chat")


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000])
def test_text_too_deep_to_detect_is_refused(text: str | bytes) -> None:
    """Detection reads JSON text with ``json.loads``, which recurses: text
    nested past the recursion limit names no provider (a ValueError asking
    for one, not a RecursionError), and with the provider given the envelope
    rule refuses it."""
    assert integrations.detect_provider(text) is None
    with pytest.raises(ValueError, match="pass provider="):
        integrations.normalize_sdk(text)
    with pytest.raises(ValueError, match="pass provider="):
        integrations.assemble_sdk_stream([text])
    with pytest.raises(StreamError) as caught:
        integrations.normalize_sdk(text, provider="openai-chat")
    assert caught.value.code == "MALFORMED_EVENT"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_error_status_is_raised_again_by_every_finish(http: ModuleType, asynchronous: bool) -> None:
    """A second ``finish()`` after HTTP_STATUS raised the untyped RuntimeError
    "the stream was not read to its end"; it is the same typed error."""
    body = _body(http, [b'{"error": {"message": "overloaded"}}'])
    if not asynchronous:
        with _client(http, body, 529) as client, client.stream("POST", URL) as response:
            stream = integrations.stream_httpx(response, provider="anthropic")
            errors = []
            for _ in range(2):
                with pytest.raises(TransportError) as info:
                    stream.finish()
                errors.append(info.value)
    else:

        async def run() -> list[TransportError]:
            found = []
            async with _async_client(http, body, 529) as client:
                async with client.stream("POST", URL) as response:
                    stream = integrations.astream_httpx(response, provider="anthropic")
                    for _ in range(2):
                        with pytest.raises(TransportError) as info:
                            await stream.finish()
                        found.append(info.value)
            return found

        errors = asyncio.run(run())
    assert [(e.code, e.retryable) for e in errors] == [("HTTP_STATUS", True)] * 2
