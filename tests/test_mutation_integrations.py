"""The SDK and httpx adapters (``decisions.integrations``) written out in
full, on both backends: the status an error answer is retryable for and its
excerpt, how much of a body is read, the choice and limits passed on, the
error kept for every later ``finish()``, and google-genai bytes measured and
written whatever form the SDK's JSON mode gives them."""

from __future__ import annotations

import base64
import importlib
import importlib.util
import json
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

import pydantic
import pytest

import decisions
from conftest import peak_bytes
from decisions import OutputError, TransportError, _backend, integrations
from http_streams import finished

openai = pytest.importorskip("openai")
genai = pytest.importorskip("google.genai.types")

URL = "http://test.invalid/"
_HTTP_NAMES = ["httpx"] + (["httpx2"] if importlib.util.find_spec("httpx2") is not None else [])


@pytest.fixture(autouse=True)
def _backend_under_test(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setattr(_backend, "impl", impl)
    return impl


@pytest.fixture(params=_HTTP_NAMES)
def http(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


def _body(http: ModuleType, pieces: Iterator[bytes]) -> Any:
    """A body sent as ``pieces``, one network chunk each, pulled as read."""

    class Body(http.SyncByteStream, http.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __iter__(self) -> Iterator[bytes]:
            yield from pieces

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in pieces:
                yield chunk

    return Body()


def _outcome(
    http: ModuleType,
    pieces: Iterator[bytes],
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    asynchronous: bool = False,
    provider: str = "openai-chat",
    **options: Any,
) -> Any:
    """What ``stream_httpx`` (or ``astream_httpx``) gives (see ``http_streams.finished``)."""

    def respond(request: Any) -> Any:
        return http.Response(status, stream=_body(http, pieces), headers=headers or {})

    return finished(http, respond, provider, asynchronous, **options)


def _counted(chunks: list[bytes], pulled: list[int]) -> Iterator[bytes]:
    for chunk in chunks:
        pulled[0] += 1
        yield chunk


def _chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": index, "delta": delta, "finish_reason": finish}
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events) + b"data: [DONE]\n\n"


#: a stream of two choices: "zero" and "one"
_TWO_CHOICES = _sse(
    [
        _chunk(0, {"role": "assistant", "content": "zero"}),
        _chunk(1, {"role": "assistant", "content": "one"}),
        _chunk(0, {}, "stop"),
        _chunk(1, {}, "stop"),
    ]
)

#: a stream that stops before its finish
_CUT = _sse([_chunk(0, {"role": "assistant", "content": "hi"})])[: -len(b"data: [DONE]\n\n")]

_ASYNC = pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])


# ---------------------------------------------------------------- an error status


@_ASYNC
@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (407, False), (408, True), (409, True), (410, False), (429, True), (499, False), (500, True)],
)
def test_an_error_status_is_retryable_as_http_says(
    http: ModuleType, status: int, retryable: bool, asynchronous: bool
) -> None:
    error = _outcome(http, iter([b"busy"]), status=status, asynchronous=asynchronous)
    assert isinstance(error, TransportError)
    assert (error.code, error.retryable, error.message) == (
        "HTTP_STATUS",
        retryable,
        f"the provider answered HTTP {status}: busy",
    )


@_ASYNC
def test_an_error_status_shows_its_bodys_start_from_every_chunk(http: ModuleType, asynchronous: bool) -> None:
    """The excerpt joins the chunks up to 300 bytes, a byte that is no UTF-8
    replaced, and no chunk is read after the 300th byte."""
    pulled = [0]
    chunks = [b"first \xff ", b"x" * (300 - 8), b"never read"]
    error = _outcome(http, _counted(chunks, pulled), status=503, asynchronous=asynchronous)
    assert (error.code, error.retryable) == ("HTTP_STATUS", True)
    assert error.message == "the provider answered HTTP 503: first \ufffd " + "x" * 292
    assert pulled == [2]


# ---------------------------------------------------------------- a body that is no event stream


@_ASYNC
@pytest.mark.parametrize(
    ("headers", "kind"),
    [({"content-type": "text/html"}, "text/html"), ({}, "no content type")],
    ids=["typed", "untyped"],
)
def test_a_body_that_is_no_event_stream_is_named_in_full(
    http: ModuleType, headers: dict[str, str], kind: str, asynchronous: bool
) -> None:
    body = b"<html>\xff bad gateway</html>"
    error = _outcome(http, iter([body]), headers=headers, asynchronous=asynchronous)
    assert (type(error), error.code, error.retryable) == (decisions.StreamError, "NOT_A_RESPONSE_BODY", False)
    assert error.message == (
        f"the provider answered HTTP 200 ({kind}) with a body that is not an event stream: <html>\ufffd bad gateway</html>"
    )


_ERROR = b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'


@_ASYNC
def test_a_json_error_body_of_exactly_the_document_bound_is_read_whole(http: ModuleType, asynchronous: bool) -> None:
    """``max_document_bytes`` and one byte more are read of a JSON body, one
    byte at a time here: a body of exactly the bound is the provider's error,
    and no byte beyond the bound and one is pulled."""
    limits = decisions.Limits(max_document_bytes=len(_ERROR))
    pulled = [0]
    bytewise = [_ERROR[i : i + 1] for i in range(len(_ERROR))] + [b" "] * 5
    error = _outcome(http, _counted(bytewise, pulled), provider="anthropic", limits=limits, asynchronous=asynchronous)
    assert (type(error), error.code, error.retryable) == (TransportError, "PROVIDER_ERROR", True)
    assert pulled == [len(_ERROR) + 1]


@_ASYNC
def test_a_json_error_body_is_read_under_the_callers_limits(http: ModuleType, asynchronous: bool) -> None:
    """A JSON error body longer than the caller's event bound is refused by
    ``normalize`` under those limits, so it is no provider's error here."""
    limits = decisions.Limits(max_sse_event_bytes=40)
    with pytest.raises(OutputError) as expected:
        decisions.normalize(_ERROR, provider="anthropic", limits=limits)
    assert expected.value.code != "PROVIDER_ERROR"
    error = _outcome(http, iter([_ERROR]), provider="anthropic", limits=limits, asynchronous=asynchronous)
    assert (error.code, error.retryable) == ("NOT_A_RESPONSE_BODY", False)


# ---------------------------------------------------------------- an event stream


@_ASYNC
def test_the_choice_asked_for_is_read(http: ModuleType, asynchronous: bool) -> None:
    for choice, text in ((0, "zero"), (1, "one")):
        response = _outcome(http, iter([_TWO_CHOICES]), choice=choice, asynchronous=asynchronous)
        assert response.text == text


@_ASYNC
@pytest.mark.parametrize(
    ("body", "code"),
    [(b"data: {bad\n\n", "MALFORMED_EVENT"), (_CUT, "NO_TERMINAL_EVENT"), (b"da", None)],
    ids=["malformed event", "cut stream", "too short to tell"],
)
def test_a_streams_error_is_kept_for_every_finish(
    impl: ModuleType, http: ModuleType, body: bytes, code: str | None, asynchronous: bool
) -> None:
    """The assembler's error, whether it came while the body was fed or at
    its end (a body too short to tell is read as an event stream), is what
    every ``finish()`` raises; it is the error the assembler gives the same
    bytes."""
    direct = impl.StreamAssembler("openai-chat")
    with pytest.raises(OutputError) as expected:
        direct.feed(body)
        direct.finish()
    error = _outcome(http, iter([body]), asynchronous=asynchronous)
    assert error.to_dict() == expected.value.to_dict()
    if code is not None:
        assert error.code == code


# ---------------------------------------------------------------- SDK objects


def _completion(choices: list[dict[str, Any]]) -> Any:
    body = {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": choices}
    return openai.types.chat.ChatCompletion.model_validate(body), body


def _message(index: int, text: str) -> dict[str, Any]:
    return {"index": index, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}


def test_normalize_sdk_reads_the_choice_asked_for() -> None:
    completion, _ = _completion([_message(0, "zero"), _message(1, "one")])
    assert integrations.normalize_sdk(completion, choice=1).text == "one"
    assert integrations.normalize_sdk(completion, choice=0).text == "zero"


def test_normalize_sdk_reads_under_the_callers_limits() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    calls = [call, {**call, "id": "c2"}]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    completion, body = _completion([{"index": 0, "message": message, "finish_reason": "tool_calls"}])
    limits = decisions.Limits(max_calls_per_response=1)
    with pytest.raises(OutputError) as expected:
        decisions.normalize(body, provider="openai-chat", limits=limits)
    with pytest.raises(OutputError) as got:
        integrations.normalize_sdk(completion, limits=limits)
    assert got.value.to_dict() == expected.value.to_dict()
    assert len(integrations.normalize_sdk(completion).tool_calls) == 2


def test_normalize_sdk_names_what_it_cannot_tell() -> None:
    with pytest.raises(ValueError) as caught:
        integrations.normalize_sdk({"a": 1})
    assert str(caught.value) == "cannot tell the provider of dict; pass provider="


# ---------------------------------------------------------------- google-genai bytes


def _image(data: bytes) -> Any:
    blob = genai.Blob(mime_type="image/png", data=data)
    content = genai.Content(role="model", parts=[genai.Part(inline_data=blob)])
    return genai.GenerateContentResponse(candidates=[genai.Candidate(content=content, finish_reason="STOP")])


@pytest.mark.parametrize("size", [3000, 3001, 3002])
def test_genai_bytes_are_measured_as_their_base64_exactly(size: int) -> None:
    """Bytes whose base64 is exactly ``max_sse_event_bytes`` long pass the
    measure; one byte less of bound refuses them."""
    obj = _image(bytes(size))
    encoded = 4 * ((size + 2) // 3)
    payload = integrations.to_payload(obj, limits=decisions.Limits(max_sse_event_bytes=encoded))
    assert isinstance(payload, dict)
    assert (
        payload["candidates"][0]["content"]["parts"][0]["inlineData"]["data"] == base64.b64encode(bytes(size)).decode()
    )
    with pytest.raises(decisions.StreamError) as caught:
        integrations.to_payload(obj, limits=decisions.Limits(max_sse_event_bytes=encoded - 1))
    assert (caught.value.code, caught.value.path, caught.value.message) == (
        "MALFORMED_EVENT",
        "$",
        f"event data has more than {encoded - 1} bytes",
    )


def test_genai_bytes_of_any_length_are_written_once() -> None:
    """Bytes whose length is no multiple of three are turned into standard
    base64 where the JSON dump wrote them, not encoded again."""
    size = 3 * 1024 * 1024 + 1
    obj = _image(bytes(size))
    assert peak_bytes(lambda: integrations.to_payload(obj)) < 2.5 * size * 4 / 3


def test_genai_bytes_over_the_callers_bound_are_refused_before_any_dump() -> None:
    """``normalize_sdk`` and ``assemble_sdk_stream`` measure the bytes under
    the caller's limits before the object is written out."""
    size = 3 * 1024 * 1024
    obj = _image(bytes(size))
    limits = decisions.Limits(max_sse_event_bytes=1024 * 1024)

    def refused(call: Any) -> None:
        with pytest.raises(decisions.StreamError, match="MALFORMED_EVENT"):
            call()

    assert peak_bytes(lambda: refused(lambda: integrations.normalize_sdk(obj, limits=limits))) < size / 10
    assert peak_bytes(lambda: refused(lambda: integrations.assemble_sdk_stream([obj], limits=limits))) < size / 10


class _Utf8Blob(pydantic.BaseModel):
    """A google-genai model whose JSON mode writes bytes as UTF-8 text
    (pydantic's default), not as base64."""

    __module__ = "google.genai.types"
    mimeType: str  # noqa: N815 (the API's name)
    data: bytes


class _ListBlob(_Utf8Blob):
    """One whose JSON mode writes bytes as a list of their values."""

    __module__ = "google.genai.types"

    @pydantic.field_serializer("data", when_used="json")
    def _values(self, data: bytes) -> list[int]:
        return list(data)


@pytest.mark.parametrize("blob", [_Utf8Blob, _ListBlob], ids=["utf-8 text", "list of values"])
@pytest.mark.parametrize("data", [b"hello", b"hel", b"aGVsbG8x"], ids=["text", "three bytes", "its own base64"])
def test_genai_bytes_not_written_as_base64_are_encoded(blob: type[_Utf8Blob], data: bytes) -> None:
    payload = integrations.to_payload(blob(mimeType="text/plain", data=data))
    assert payload == {"mimeType": "text/plain", "data": base64.b64encode(data).decode()}


# ---------------------------------------------------------------- what the body's first bytes tell

_WHOLE = json.dumps(
    {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [_message(0, "hi")],
    }
).encode()
_JSON_BODY = "a JSON document, not an event stream (a whole response body is read with normalize)"
_OTHER_BODY = "a body that is not an event stream"


@_ASYNC
@pytest.mark.parametrize(
    ("pieces", "what", "excerpt"),
    [
        ([b"\n", b"<html>bad gateway</html>"], _OTHER_BODY, "<html>bad gateway</html>"),
        ([b"\n \r\n", _WHOLE], _JSON_BODY, _WHOLE.decode()),
        ([b"\xef\xbb\xbf\t" + _WHOLE], _JSON_BODY, _WHOLE.decode()),
        ([b"[1, 2]"], _JSON_BODY, "[1, 2]"),
        ([b"\x0c" + _WHOLE], _OTHER_BODY, "\x0c" + _WHOLE.decode()),
        ([b"X-Error: upstream"], _OTHER_BODY, "X-Error: upstream"),
        ([b"denied"], _OTHER_BODY, "denied"),
        ([b"x: 1"], _OTHER_BODY, "x: 1"),
        ([b"no\r"], _OTHER_BODY, "no\r"),
        ([b"no\n"], _OTHER_BODY, "no\n"),
    ],
    ids=[
        "html after a blank line",
        "a whole body after blank lines",
        "a whole body after a BOM and a tab",
        "a JSON array",
        "a form feed is no JSON whitespace",
        "a header-like line",
        "six bytes",
        "a short line with a colon",
        "a short line and CR",
        "a short line and LF",
    ],
)
def test_a_body_is_told_from_its_first_bytes(
    http: ModuleType, pieces: list[bytes], what: str, excerpt: str, asynchronous: bool
) -> None:
    error = _outcome(http, iter(pieces), headers={"content-type": "text/plain"}, asynchronous=asynchronous)
    assert (type(error), error.code, error.retryable) == (decisions.StreamError, "NOT_A_RESPONSE_BODY", False)
    assert error.message == f"the provider answered HTTP 200 (text/plain) with {what}: {excerpt}"


@_ASYNC
def test_a_json_body_is_kept_only_to_its_bound(impl: ModuleType, http: ModuleType, asynchronous: bool) -> None:
    """Of a JSON body longer than ``max_document_bytes``, that and one byte
    more is kept and given to ``normalize``, however the chunks fall."""
    bound = 1000
    given: list[int] = []
    read = impl.normalize

    def normalize(body: bytes, **options: Any) -> Any:
        given.append(len(body))
        return read(body, **options)

    pieces = [b"{" + b" " * (bound - 10), b" " * (4 * bound)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(impl, "normalize", normalize)
        error = _outcome(
            http, iter(pieces), limits=decisions.Limits(max_document_bytes=bound), asynchronous=asynchronous
        )
    assert (error.code, given) == ("NOT_A_RESPONSE_BODY", [bound + 1])


@_ASYNC
def test_the_stream_is_read_under_the_callers_limits(impl: ModuleType, http: ModuleType, asynchronous: bool) -> None:
    limits = decisions.Limits(max_sse_event_bytes=64)
    direct = impl.StreamAssembler("openai-chat", limits=limits, choice=0)
    with pytest.raises(OutputError) as expected:
        direct.feed(_TWO_CHOICES)
        direct.finish()
    error = _outcome(http, iter([_TWO_CHOICES]), limits=limits, choice=0, asynchronous=asynchronous)
    assert error.to_dict() == expected.value.to_dict()


def test_only_an_httpx_response_is_wrapped() -> None:
    with pytest.raises(TypeError) as caught:
        integrations.stream_httpx({"status": 200}, provider="openai-chat")
    assert str(caught.value) == "expected an httpx or httpx2 Response, not dict"


# ---------------------------------------------------------------- what an SDK stream raises


def _raising(error: BaseException) -> Iterator[Any]:
    """An SDK stream that raises ``error`` at its first event."""
    raise error
    yield  # pragma: no cover


def _request(http: ModuleType) -> Any:
    return http.Request("POST", URL)


def _failure(error: BaseException, provider: str | None = "openai-chat") -> OutputError:
    with pytest.raises(OutputError) as caught:
        integrations.assemble_sdk_stream(_raising(error), provider=provider)
    assert caught.value.__cause__ is error
    return caught.value


def test_a_transport_error_of_the_http_client_is_a_dropped_connection(http: ModuleType) -> None:
    error = _failure(http.ReadError("peer reset", request=_request(http)))
    assert (type(error), error.code, error.retryable, error.message) == (
        TransportError,
        "CONNECTION_CLOSED",
        True,
        "the connection failed mid-stream (ReadError: peer reset); no response was produced",
    )


def test_another_error_of_the_http_client_is_raised_as_it_is(http: ModuleType) -> None:
    closed = http.StreamClosed()
    with pytest.raises(type(closed)) as caught:
        integrations.assemble_sdk_stream(_raising(closed), provider="openai-chat")
    assert caught.value is closed


def test_the_sdks_connection_error_is_a_dropped_connection() -> None:
    base = importlib.import_module("openai._base_client")
    http = getattr(base, "httpx2", None) or base.httpx
    error = _failure(openai.APIConnectionError(request=_request(http)))
    assert (error.code, error.message) == (
        "CONNECTION_CLOSED",
        "the connection failed mid-stream (APIConnectionError: Connection error.); no response was produced",
    )


def test_event_data_the_sdk_cannot_decode_names_the_decoders_error() -> None:
    error = _failure(json.JSONDecodeError("Expecting value", "{bad", 1))
    assert (type(error), error.code, error.message) == (
        decisions.StreamError,
        "MALFORMED_EVENT",
        "event data is not valid JSON (the SDK could not decode it: Expecting value: line 1 column 2 (char 1))",
    )


@pytest.mark.parametrize(
    ("name", "code"),
    [("LengthFinishReasonError", "INCOMPLETE_RESPONSE"), ("ContentFilterFinishReasonError", "CONTENT_FILTERED")],
)
def test_the_helper_streams_finish_error_names_itself(name: str, code: str) -> None:
    completion, _ = _completion([_message(0, "cut")])
    error = _failure(getattr(openai, name)(completion=completion))
    assert (error.code, error.message) == (code, f"the SDK's helper stream stopped at the finish reason ({name})")


def test_an_sdk_api_error_without_a_body_is_the_providers_error() -> None:
    base = importlib.import_module("openai._base_client")
    http = getattr(base, "httpx2", None) or base.httpx
    error = _failure(openai.APIError("server fault", _request(http), body=None))
    assert (type(error), error.code, error.message) == (
        TransportError,
        "PROVIDER_ERROR",
        "the provider sent an error in the stream (APIError: server fault)",
    )


# ---------------------------------------------------------------- which provider an SDK object is


def _wire_chunk(**extra: Any) -> Any:
    body = {**_chunk(0, {"role": "assistant", "content": "hi"}), **extra}
    return openai.types.chat.ChatCompletionChunk.construct(**body)


def test_a_helper_chunk_event_is_told_by_its_chunks_class() -> None:
    """The helper stream's ``chunk`` event is the chunk's API, even when the
    server's fields in it look like another API's too."""
    from openai.lib.streaming.chat import ChunkEvent

    chunk = _wire_chunk(type="response.created", output=[])
    event = ChunkEvent.construct(type="chunk", chunk=chunk, snapshot=None)
    assert integrations.detect_provider(event) == "openai-chat"


def test_a_wire_chunks_chunk_field_tells_nothing() -> None:
    anthropic_event = {"type": "message_start", "message": {"id": "m", "type": "message", "content": []}}
    assert integrations.detect_provider(_wire_chunk(chunk=anthropic_event)) == "openai-chat"


def test_a_helper_object_that_is_no_chunk_tells_no_provider() -> None:
    from openai.lib.streaming.chat import ChatCompletionStreamState, ContentDeltaEvent

    delta = ContentDeltaEvent.construct(type="content.delta", delta="hi", snapshot="hi", parsed=None)
    assert integrations.detect_provider(delta) is None
    assert integrations.detect_provider(ChatCompletionStreamState()) is None


@pytest.mark.parametrize(
    ("payload", "provider"),
    [
        ('{"object": "chat.completion.chunk", "choices": []}', "openai-chat"),
        (b'{"type": "message_start", "message": {}}', "anthropic"),
        ({"candidates": []}, "gemini"),
        ({"type": "text_delta", "item_id": "i", "delta": "hi"}, None),
        ('{"choices": [], "candidates": []}', None),
        (b"[1, 2]", None),
        ("{bad", None),
    ],
    ids=["chat text", "anthropic bytes", "gemini dict", "a canonical event", "two providers", "no object", "no JSON"],
)
def test_a_payload_is_told_by_its_shape(payload: Any, provider: str | None) -> None:
    assert integrations.detect_provider(payload) == provider


# ---------------------------------------------------------------- a whole SDK stream


@pytest.mark.parametrize("helper", ["MessageStopEvent", "BetaMessageStopEvent"])
def test_a_helper_event_gives_only_its_wire_types_fields(helper: str) -> None:
    """The helper stream's ``message_stop`` carries the message so far (its
    own field): the wire event it stands for is ``{"type": "message_stop"}``,
    whatever helper classes lie between it and its wire type."""
    streaming = pytest.importorskip("anthropic.lib.streaming")
    message = {"id": "m", "type": "message", "role": "assistant", "model": "x", "content": []}
    event = getattr(streaming, helper).construct(type="message_stop", message=message)
    assert integrations.to_payload(event) == {"type": "message_stop"}


def _chunks(*deltas: tuple[int, dict[str, Any], str | None]) -> list[Any]:
    return [
        openai.types.chat.ChatCompletionChunk.construct(**_chunk(index, delta, finish))
        for index, delta, finish in deltas
    ]


def test_an_sdk_stream_is_read_with_the_choice_asked_for() -> None:
    chunks = _chunks(
        (0, {"role": "assistant", "content": "zero"}, None),
        (1, {"role": "assistant", "content": "one"}, None),
        (0, {}, "stop"),
        (1, {}, "stop"),
    )
    assert integrations.assemble_sdk_stream(chunks, choice=1).text == "one"
    assert integrations.assemble_sdk_stream(chunks, choice=0).text == "zero"


def test_an_sdk_stream_is_read_under_the_callers_limits(impl: ModuleType) -> None:
    def call(index: int) -> dict[str, Any]:
        function = {"name": "f", "arguments": "{}"}
        return {"index": index, "id": f"c{index}", "type": "function", "function": function}

    chunks = _chunks((0, {"role": "assistant", "tool_calls": [call(0), call(1)]}, None), (0, {}, "tool_calls"))
    limits = decisions.Limits(max_calls_per_response=1)
    direct = impl.StreamAssembler("openai-chat", limits=limits)
    with pytest.raises(OutputError) as expected:
        for chunk in chunks:
            direct.feed_event(integrations.to_payload(chunk))
        direct.finish()
    with pytest.raises(OutputError) as got:
        integrations.assemble_sdk_stream(chunks, limits=limits)
    assert got.value.to_dict() == expected.value.to_dict()
    assert len(integrations.assemble_sdk_stream(chunks).tool_calls) == 2


def test_an_sdk_stream_of_nothing_known_names_it() -> None:
    with pytest.raises(ValueError) as caught:
        integrations.assemble_sdk_stream([{"a": 1}])
    assert str(caught.value) == "cannot tell the provider of dict; pass provider="


def test_an_empty_sdk_stream_has_no_terminal_event(impl: ModuleType) -> None:
    with pytest.raises(ValueError) as caught:
        integrations.assemble_sdk_stream([])
    assert str(caught.value) == "the stream is empty and no provider was given"
    with pytest.raises(OutputError) as expected:
        impl.StreamAssembler("anthropic").finish()
    with pytest.raises(OutputError) as got:
        integrations.assemble_sdk_stream([], provider="anthropic")
    assert got.value.to_dict() == expected.value.to_dict()
    assert got.value.code == "NO_TERMINAL_EVENT"


@pytest.mark.parametrize(
    "events",
    [
        list,
        lambda: _raising(json.JSONDecodeError("Expecting value", "{", 1)),
        lambda: _chunks((0, {"content": "x"}, None)),
    ],
    ids=["empty", "raising", "one chunk"],
)
@pytest.mark.parametrize(
    ("options", "error"),
    [({"choice": -1}, ValueError), ({"limits": "x"}, TypeError)],
    ids=["choice", "limits"],
)
def test_an_sdk_streams_options_are_refused_whatever_it_holds(
    events: Any, options: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        integrations.assemble_sdk_stream(events(), provider="openai-chat", **options)


# ---------------------------------------------------------------- to_payload


@pytest.mark.parametrize("wrap", [bytearray, memoryview], ids=["bytearray", "memoryview"])
def test_raw_bytes_are_given_as_bytes(wrap: Any) -> None:
    payload = integrations.to_payload(wrap(b'{"candidates": []}'))
    assert (type(payload), payload) == (bytes, b'{"candidates": []}')


def test_an_object_that_is_no_model_is_refused_by_name() -> None:
    with pytest.raises(TypeError) as caught:
        integrations.to_payload(object())
    assert str(caught.value) == "cannot read a provider payload from object: not a dict, text or pydantic model"


def test_an_sdk_object_is_written_with_the_apis_names_and_json_values() -> None:
    """Field names as the API sends them (``async``, not the SDK's
    ``async_``), values as JSON (a date as its text)."""
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "async": True}
    item = openai.types.responses.ResponseFunctionToolCall.model_validate(call)
    assert integrations.to_payload(item) == call
    anthropic_types = pytest.importorskip("anthropic.types")
    container = {"id": "box", "expires_at": "2026-12-04T21:00:00Z"}
    message = {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "model": "x",
        "content": [],
        "container": container,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    payload = integrations.to_payload(anthropic_types.Message.model_validate(message))
    assert isinstance(payload, dict)
    assert json.loads(json.dumps(payload))["container"]["id"] == "box"
    assert payload["container"]["expires_at"] in ("2026-12-04T21:00:00Z", "2026-12-04T21:00:00+00:00")


def test_an_error_the_sdk_raised_before_any_event_is_read_under_the_callers_limits(impl: ModuleType) -> None:
    """The provider's error event the SDK raised is fed to the assembler as
    the wire event it came from, under the caller's limits: too large for
    them, it is refused as the same event would be."""
    base = importlib.import_module("openai._base_client")
    http = getattr(base, "httpx2", None) or base.httpx
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "x" * 100}}
    limits = decisions.Limits(max_sse_event_bytes=64)
    direct = impl.StreamAssembler("anthropic", limits=limits)
    with pytest.raises(OutputError) as expected:
        direct.feed_event(body)
    error = _failure(openai.APIError("overloaded", _request(http), body=body), provider="anthropic")
    assert (error.code, error.retryable) == ("PROVIDER_ERROR", True)
    with pytest.raises(OutputError) as limited:
        integrations.assemble_sdk_stream(
            _raising(openai.APIError("overloaded", _request(http), body=body)), provider="anthropic", limits=limits
        )
    assert limited.value.to_dict() == expected.value.to_dict()
    assert limited.value.code == "MALFORMED_EVENT"


_ONE_CHOICE = _sse([_chunk(0, {"role": "assistant", "content": "hi"}), _chunk(0, {}, "stop")])


@_ASYNC
@pytest.mark.parametrize(
    "lead",
    [b"event\n", b"event\r\n", b"event\rid\r\n", b"retry\n: note\n"],
    ids=["a bare field and LF", "a bare field and CRLF", "two bare fields and CR", "a bare field then a comment"],
)
def test_a_stream_whose_first_line_is_a_bare_field_name_is_read(
    impl: ModuleType, http: ModuleType, lead: bytes, asynchronous: bool
) -> None:
    """A first line that is only a field's name (its value empty) is an
    event stream's, whatever lines follow it."""
    direct = impl.StreamAssembler("openai-chat")
    direct.feed(lead + _ONE_CHOICE)
    expected = direct.finish()
    response = _outcome(
        http, iter([lead + _ONE_CHOICE]), headers={"content-type": "text/plain"}, asynchronous=asynchronous
    )
    assert response == expected
    assert response.text == "hi"


@_ASYNC
def test_a_first_line_whose_name_only_starts_as_a_field_is_no_event_stream(
    http: ModuleType, asynchronous: bool
) -> None:
    error = _outcome(http, iter([b"data x: 1\n\n"]), headers={"content-type": "text/plain"}, asynchronous=asynchronous)
    assert (error.code, error.message) == (
        "NOT_A_RESPONSE_BODY",
        "the provider answered HTTP 200 (text/plain) with a body that is not an event stream: data x: 1\n\n",
    )
