"""SDK objects whose dump is not what a wire payload is: classes of mistakes
at ``decisions.integrations``, on both backends.

1. An object whose ``model_dump`` fails (a cycle, nesting past pydantic's
   depth, a ``ValueError`` of a duck-typed model's own) let that exception
   out (``ValueError: Circular reference detected``); a
   google-genai object holding a cycle hung the walk for its bytes. Each is
   ``MALFORMED_EVENT``, as the same payload given as a dict is, and
   ``feed_sdk_event`` aborts the assembler it was feeding.
2. A ``model_dump`` that gives no dict: None was taken for a helper's derived
   event and skipped, so a stream lost the event (a call's arguments ran
   without one of their pieces); a str was read as the JSON it spells, a
   list or an int as the backend's ``TypeError``. Each is ``MALFORMED_EVENT``;
   so is an OpenAI helper ``chunk`` event that holds no chunk.
3. A helper-stream event was skipped only if its ``type`` was on a fixed
   list; any other event the helper stream derives (the Anthropic beta
   stream's ``compaction``) was dumped as ``{}`` (no wire field of its
   own) and refused, failing a stream whose bytes give a response. A helper
   event that no wire type underlies is skipped, whatever its ``type``.
4. An SDK object was told by the module of its own class: a caller's
   subclass of an SDK type (or of an httpx response or error) was an
   unknown object. A google-genai one was dumped as another library's model
   (its thought signatures URL-safe base64, not the API's), a Chat
   completion carrying Responses fields was read by its fields as a
   Responses response, a subclassed ``httpx.Response`` was refused as no
   httpx response and a subclassed ``httpx.ReadError`` escaped untyped.
   The nearest SDK class an object's class derives from tells.
5. Python's ``json`` reads ``NaN`` and ``Infinity``, so the SDKs do; their
   JSON mode writes such a float as null. A tool call's input of
   ``{"force": NaN}`` from the wire was the executable ``{"force": null}``
   where the same bytes and the same dict are refused; it is
   ``MALFORMED_EVENT``, as the dict is.
6. ``feed_sdk_event`` into ``StreamAssembler()`` told the provider by the
   payload's shape: a Chat chunk whose server added a ``type`` field was
   ``AMBIGUOUS_PROVIDER``, where ``assemble_sdk_stream`` read it as Chat by
   its class. The first SDK object's class tells there too.
7. A dict is read as the members it holds: ``json`` (which writes a dict
   payload for both backends) read a subclass's through its ``items()``,
   and ``to_payload`` through its ``keys()`` and ``[]``, so a dict that
   shows other members than it holds was one answer to ``normalize`` and
   another to ``normalize_sdk``.
8. A google-genai object's bytes are found in its python-mode dump and
   rewritten in its JSON dump: bytes under a non-str key (which JSON mode
   writes as text) were a ``KeyError``, and bytes in a tuple were neither
   counted against ``max_sse_event_bytes`` nor turned into standard base64.
"""

from __future__ import annotations

import importlib
import json
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest

import decisions
from conftest import FIXTURES
from decisions import StreamError, _backend, integrations
from decisions.examples import EXAMPLES, load

chat = pytest.importorskip("openai.types.chat")
genai = pytest.importorskip("google.genai.types")

pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")


@pytest.fixture(autouse=True)
def _live(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """The integrations run on the backend under test."""
    monkeypatch.setattr(_backend, "impl", impl)


@contextmanager
def _within(seconds: float) -> Iterator[None]:
    """Fail, rather than hang, a call that does not return in time."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _Duck:
    """A model of another library: ``model_dump`` gives ``value``, or raises it."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def model_dump(self, **options: Any) -> Any:
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value


def _cycle() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


def _deep(depth: int = 5000) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _completion(choices: Any) -> Any:
    return chat.ChatCompletion.model_construct(id="c", object="chat.completion", created=1, model="m", choices=choices)


#: (SDK object, provider) whose dump fails
UNDUMPABLE: dict[str, Callable[[], tuple[Any, str]]] = {
    "chat cycle": lambda: (_completion(_cycle()), "openai-chat"),
    "chat too deep": lambda: (_completion(_deep()), "openai-chat"),
    "genai cycle": lambda: (genai.GenerateContentResponse.model_construct(candidates=_cycle()), "gemini"),
    "genai too deep": lambda: (genai.GenerateContentResponse.model_construct(candidates=_deep()), "gemini"),
    "dump raises": lambda: (_Duck(ValueError("boom")), "anthropic"),
}


def _refused(read: Callable[[], object]) -> StreamError:
    with _within(10), pytest.raises(StreamError) as caught:
        read()
    return caught.value


@pytest.mark.parametrize("case", list(UNDUMPABLE))
def test_an_object_whose_dump_fails_is_malformed(case: str) -> None:
    obj, provider = UNDUMPABLE[case]()
    for read in (
        lambda: integrations.normalize_sdk(obj, provider=provider),
        lambda: integrations.assemble_sdk_stream([obj], provider=provider),
        lambda: integrations.to_payload(obj),
    ):
        assert _refused(read).code == "MALFORMED_EVENT"
    assembler = decisions.StreamAssembler(provider)
    assert _refused(lambda: integrations.feed_sdk_event(assembler, obj)).code == "MALFORMED_EVENT"
    assert _refused(assembler.finish).code == "STREAM_CANCELLED"  # never a response without the event
    with _within(10):
        assert integrations.detect_provider(_Duck(ValueError("boom"))) is None


def test_another_exception_of_a_callers_dump_is_its_own() -> None:
    """As for a payload whose own code raises: it propagates, and the
    stream is left as it was."""
    assembler = decisions.StreamAssembler("anthropic")
    with pytest.raises(ZeroDivisionError):
        integrations.feed_sdk_event(assembler, _Duck(ZeroDivisionError("its own")))
    assert assembler.state == "init"


def test_a_cycle_is_refused_as_the_same_dict_is() -> None:
    loop = _cycle()
    with pytest.raises(StreamError) as as_dict:
        decisions.normalize({"id": "c", "object": "chat.completion", "choices": loop}, provider="openai-chat")
    from_object = _refused(lambda: integrations.normalize_sdk(_completion(loop)))
    assert (from_object.code, from_object.path) == (as_dict.value.code, as_dict.value.path)


def _chunks() -> list[dict[str, Any]]:
    """The healthy OpenAI Chat recording's chunks, as dicts."""
    raw = load(next(example for example in EXAMPLES if example.name == "healthy")).decode()
    lines = [line.removeprefix("data: ") for line in raw.splitlines() if line.startswith("data: {")]
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("dumped", [None, [], 3, '{"choices": []}'], ids=repr)
def test_a_dump_that_gives_no_dict_is_malformed(dumped: Any) -> None:
    """A stream whose one event's dump gave None lost that event: the call
    ran with a piece of its arguments missing."""
    chunks = _chunks()
    pieces = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
    assert len(pieces) > 2
    events = [_Duck(dumped) if chunk is pieces[1] else _Duck(chunk) for chunk in chunks]
    assert integrations.assemble_sdk_stream([_Duck(c) for c in chunks], provider="openai-chat").tool_calls
    assert _refused(lambda: integrations.assemble_sdk_stream(events, provider="openai-chat")).code == "MALFORMED_EVENT"
    assembler = decisions.StreamAssembler("openai-chat")
    with pytest.raises(StreamError) as caught:
        for event in events:
            integrations.feed_sdk_event(assembler, event)
    assert caught.value.code == "MALFORMED_EVENT"
    assert _refused(lambda: integrations.normalize_sdk(_Duck(dumped), provider="openai-chat")).code == (
        "MALFORMED_EVENT"
    )


def test_a_helper_chunk_event_without_its_chunk_is_malformed() -> None:
    helper = pytest.importorskip("openai.lib.streaming.chat")
    event = helper.ChunkEvent.model_construct(type="chunk", chunk=None, snapshot=None)
    assert _refused(lambda: integrations.to_payload(event)).code == "MALFORMED_EVENT"
    assert _refused(lambda: integrations.assemble_sdk_stream([event], provider="openai-chat")).code == (
        "MALFORMED_EVENT"
    )


def test_genai_bytes_under_a_key_json_mode_writes_as_text_are_read_as_the_dict_is() -> None:
    """JSON mode writes the key ``1`` as ``"1"``, as ``json`` writes the same
    dict; two keys it writes alike are a repeated key, as in that text."""
    one = genai.GenerateContentResponse.model_construct(candidates=[{1: b"\xfb\xff"}], response_id="r")
    assert integrations.to_payload(one) == {"candidates": [{"1": "+/8="}], "responseId": "r"}
    assert integrations.normalize_sdk(one) == decisions.normalize(
        {"candidates": [{1: "+/8="}], "responseId": "r"}, provider="gemini"
    )
    twice = genai.GenerateContentResponse.model_construct(candidates=[{1: b"\xfb\xff", "1": b"\xfb\xff"}])
    with pytest.raises(StreamError) as as_dict:
        decisions.normalize({"candidates": [{1: "+/8=", "1": "+/8="}]}, provider="gemini")
    assert _refused(lambda: integrations.normalize_sdk(twice)).code == as_dict.value.code == "MALFORMED_EVENT"


def test_genai_bytes_in_a_tuple_are_standard_base64_and_counted() -> None:
    data = bytes([0xFB, 0xFF, 0xFE]) * 100  # "-" and "_" in URL-safe base64
    response = genai.GenerateContentResponse.model_construct(candidates=({"x": data},))
    payload = integrations.to_payload(response)
    assert isinstance(payload, dict)
    assert payload["candidates"][0]["x"] == "+//+" * 100
    limits = decisions.Limits(max_sse_event_bytes=399)
    assert _refused(lambda: integrations.to_payload(response, limits=limits)).code == "MALFORMED_EVENT"


def test_a_helper_event_of_a_type_not_listed_is_skipped() -> None:
    """The Anthropic beta helper stream adds a ``compaction`` event after a
    ``compaction_delta``; the stream is read as its bytes are."""
    anthropic = pytest.importorskip("anthropic")
    recording = FIXTURES / "anthropic-sdk-python/tests/lib/streaming/fixtures/compaction_response.txt"
    body = recording.read_bytes().rstrip(b"\n") + b"\n\n"  # the recording's last event, terminated
    base = importlib.import_module("anthropic._base_client")
    http = getattr(base, "httpx2", None) or base.httpx
    transport = http.MockTransport(lambda request: http.Response(200, content=body))
    client = anthropic.Anthropic(
        api_key="sk-ant-test", base_url="http://test.invalid", http_client=http.Client(transport=transport)
    )
    with client.beta.messages.stream(model="m", max_tokens=10, messages=[]) as stream:
        events = list(stream)
    assert "compaction" in {event.type for event in events}
    direct = decisions.StreamAssembler("anthropic")
    direct.feed(body)
    assert integrations.assemble_sdk_stream(events) == direct.finish()


GEMINI_CHUNKS = FIXTURES / "vercel-ai/packages/google/src/__fixtures__/google-stream-tool-call-arguments.chunks.txt"


def test_a_subclass_of_a_genai_type_is_read_as_the_genai_type() -> None:
    class Mine(genai.GenerateContentResponse):  # type: ignore[misc]
        """A caller's own response class."""

    lines = [json.loads(line) for line in GEMINI_CHUNKS.read_text().splitlines() if line.strip()]
    objects = [Mine.model_validate(line) for line in lines]
    assert [integrations.to_payload(obj) for obj in objects] == lines  # thought signatures in standard base64
    direct = decisions.StreamAssembler("gemini")
    for line in lines:
        direct.feed_event(line)
    assert integrations.assemble_sdk_stream(objects) == direct.finish()


def test_a_subclass_of_an_openai_type_is_told_by_its_class() -> None:
    class Mine(chat.ChatCompletion):  # type: ignore[misc]
        """A caller's own completion class, with a field of its own."""

        note: str = ""

    body = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "type": "response.completed",
        "status": "completed",
        "output": [{"type": "function_call", "id": "f", "call_id": "c1", "name": "delete_all", "arguments": "{}"}],
    }
    completion = Mine.model_validate({**body, "note": "mine"})
    assert integrations.detect_provider(completion) == "openai-chat"
    assert integrations.to_payload(completion) == {**body, "note": "mine"}  # a wire type's: all it holds
    assert integrations.normalize_sdk(completion) == decisions.normalize(body, provider="openai-chat")


def test_subclasses_of_httpx_responses_and_errors_are_httpxs() -> None:
    import httpx

    class Response(httpx.Response):
        """A caller's own response class."""

    class Dropped(httpx.ReadError):
        """A caller's own transport error."""

    body = load(next(example for example in EXAMPLES if example.name == "healthy"))
    response = Response(200, content=body, headers={"content-type": "text/event-stream"})
    expected = decisions.StreamAssembler("openai-chat")
    expected.feed(body)
    assert integrations.stream_httpx(response, provider="openai-chat").finish() == expected.finish()

    def events() -> Iterator[Any]:
        raise Dropped("peer closed connection")
        yield

    with pytest.raises(decisions.TransportError) as caught:
        integrations.assemble_sdk_stream(events(), provider="openai-chat")
    assert caught.value.code == "CONNECTION_CLOSED"


_TOOL_USE = (
    b'{"id":"m","type":"message","role":"assistant","model":"m","stop_reason":"tool_use",'
    b'"content":[{"type":"tool_use","id":"t","name":"rm","input":{"path":"a","force":%s}}],'
    b'"usage":{"input_tokens":1,"output_tokens":1}}'
)


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity"])
def test_a_number_json_has_not_is_refused_as_the_dict_is(number: bytes) -> None:
    anthropic = pytest.importorskip("anthropic")
    body = _TOOL_USE % number
    base = importlib.import_module("anthropic._base_client")
    http = getattr(base, "httpx2", None) or base.httpx
    transport = http.MockTransport(lambda request: http.Response(200, content=body))
    client = anthropic.Anthropic(
        api_key="sk-ant-test", base_url="http://test.invalid", http_client=http.Client(transport=transport)
    )
    message = client.messages.create(model="m", max_tokens=10, messages=[])
    assert (decisions.normalize(_TOOL_USE % b"true", provider="anthropic")).tool_calls  # a call, but for the number
    with pytest.raises(StreamError) as as_dict:
        decisions.normalize(json.loads(body), provider="anthropic")
    refused = _refused(lambda: integrations.normalize_sdk(message))
    assert (refused.code, refused.path) == (as_dict.value.code, as_dict.value.path) == ("MALFORMED_EVENT", None)
    call = {"functionCall": {"name": "rm", "args": {"force": json.loads(number)}}}
    chunk = {"candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}]}
    streamed = genai.GenerateContentResponse.model_validate(chunk)
    assert _refused(lambda: integrations.assemble_sdk_stream([streamed])).code == "MALFORMED_EVENT"


def test_an_auto_assembler_is_told_the_provider_by_the_sdk_class() -> None:
    openai = pytest.importorskip("openai")
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "run", "arguments": '{"a": 1}'}}
    chunks = [
        {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "type": "response.created",
         "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]},
        {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]  # fmt: skip
    body = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"
    base = importlib.import_module("openai._base_client")
    http = getattr(base, "httpx2", None) or base.httpx
    transport = http.MockTransport(lambda request: http.Response(200, content=body))
    client = openai.OpenAI(
        api_key="sk-test", base_url="http://test.invalid/v1", http_client=http.Client(transport=transport)
    )
    objects = list(client.chat.completions.create(model="m", messages=[], stream=True))
    expected = integrations.assemble_sdk_stream(objects)
    assembler = decisions.StreamAssembler()
    for obj in objects:
        integrations.feed_sdk_event(assembler, obj)
    assert assembler.provider == "openai-chat"
    assert assembler.finish() == expected
    assert [(call.name, call.arguments) for call in expected.tool_calls] == [("run", '{"a": 1}')]
    with pytest.raises(StreamError) as caught:  # the same payloads, as dicts, have no class to tell
        integrations.feed_sdk_event(decisions.StreamAssembler(), chunks[0])
    assert caught.value.code == "AMBIGUOUS_PROVIDER"


def _gemini_chunk(text: str) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}]}


class _ItemsLie(dict):  # type: ignore[type-arg]
    """Holds one set of members, and shows ``shown`` through ``items()`` (what ``json`` reads of a subclass)."""

    def __init__(self, held: dict[str, Any], shown: dict[str, Any]) -> None:
        super().__init__(held)
        self.shown = shown

    def items(self) -> Any:
        return self.shown.items()


class _KeysLie(_ItemsLie):
    """Shows ``shown`` through its keys and ``[]`` instead (what ``dict()`` reads), not ``items()``."""

    def items(self) -> Any:
        return dict.items(self)

    def keys(self) -> Any:
        return self.shown.keys()

    def __iter__(self) -> Any:
        return iter(self.shown)

    def __getitem__(self, key: Any) -> Any:
        return self.shown[key]


@pytest.mark.parametrize("nested", [False, True], ids=["the payload", "a candidate"])
@pytest.mark.parametrize("liar", [_ItemsLie, _KeysLie])
def test_a_dict_is_read_as_the_members_it_holds(impl: ModuleType, liar: type, nested: bool) -> None:
    held, shown = _gemini_chunk("held"), _gemini_chunk("shown")
    if nested:
        payload: Any = {"candidates": [liar(held["candidates"][0], shown["candidates"][0])]}
    else:
        payload = liar(held, shown)

    def streamed(feed: Callable[[Any, Any], None]) -> str:
        assembler = impl.StreamAssembler("gemini")
        feed(assembler, payload)
        return str(assembler.finish().text)

    assert impl.normalize(payload, provider="gemini").text == "held"
    assert integrations.normalize_sdk(payload, provider="gemini").text == "held"
    assert streamed(lambda assembler, event: assembler.feed_event(event)) == "held"
    assert streamed(integrations.feed_sdk_event) == "held"
