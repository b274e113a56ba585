"""The stream pipeline's own decisions written out in full, on both
backends: which arguments ``normalize`` and ``StreamAssembler`` take and
the exact error for the rest, a payload too large refused before it is
written, when a stream is complete, and what each shortcut of the pure
twin answers (it must answer what the general path answers, and must
answer the common cases). A pipeline that drops an event, takes a stream
as complete too early, or spends memory past a limit changes one of these
outcomes."""

from __future__ import annotations

import json
import tracemalloc
from collections import Counter
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from conftest import FIXTURES
from decisions import DEFAULT_LIMITS, Limits, OutputError
from decisions._pure import pipeline
from decisions._pure.providers import PROVIDERS, mapper_for

CHAT = "openai-chat"


def error_of(step: Callable[[], object]) -> dict[str, Any]:
    """The error ``step`` raises: a typed error's every field, or a Python error's type and text."""
    with pytest.raises((OutputError, TypeError, ValueError)) as caught:
        step()
    e = caught.value
    if isinstance(e, OutputError):
        return {"type": type(e).__name__, **e.to_dict()}
    return {"type": type(e).__name__, "message": str(e)}


def too_large(limit: int) -> dict[str, Any]:
    """The error of an event or body with more than ``limit`` bytes of data."""
    return {
        "type": "StreamError",
        "layer": "stream",
        "code": "MALFORMED_EVENT",
        "message": f"event data has more than {limit} bytes",
        "retryable": False,
        "offset": None,
        "path": "$",
        "hint": None,
        "issues": [],
        "call_index": None,
        "call_id": None,
        "tool": None,
        "batch": [],
    }


def chat_body(content: str = "hello") -> dict[str, Any]:
    """A whole Chat Completions body with a final answer."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }


class Text(str):
    """A str subclass: read as the characters it holds."""


# ------------------------------------------------------------ normalize


def test_the_common_call_is_answered_without_a_mapper_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    body = json.dumps(chat_body()).encode()
    general = pipeline.normalize(body, provider=CHAT, limits=DEFAULT_LIMITS)
    assert [item.text for item in general.items] == ["hello"]  # type: ignore[union-attr]

    def no_mapper(provider: str, choice: int | None) -> Any:
        raise AssertionError("the common call built a mapper")

    monkeypatch.setattr(pipeline, "_mapper", no_mapper)
    assert pipeline.normalize(body, provider=CHAT) == general


def test_the_body_readers_are_the_shortcuts_of_the_mappers_that_prove_keys() -> None:
    readers = pipeline._body_readers()
    assert readers.keys() == pipeline._BODY_READERS.keys() == {CHAT}
    for provider in PROVIDERS:
        mapper = mapper_for(provider)
        proves = getattr(mapper, "PROVES_KEYS", False) and hasattr(mapper, "fast_body")
        assert (provider in readers) == proves
    read = readers[CHAT]
    assert read.__func__ is type(mapper_for(CHAT)).fast_body  # type: ignore[attr-defined]


@pytest.mark.parametrize("body", [b"{}", "{}", {}], ids=["bytes", "str", "dict"])
@pytest.mark.parametrize("choice", [-1, 2**32, True, 1.0])
def test_normalize_refuses_a_choice_out_of_range(impl: ModuleType, body: Any, choice: Any) -> None:
    shown = repr(choice) if type(choice) is int else type(choice).__name__
    assert error_of(lambda: impl.normalize(body, provider=CHAT, choice=choice)) == {
        "type": "ValueError",
        "message": f"choice must be an int from 0 to 2**32 - 1, or None, not {shown}",
    }


def test_normalize_reads_a_provider_given_as_a_str_subclass_as_plain_text(impl: ModuleType) -> None:
    for body in (json.dumps(chat_body()).encode(), json.dumps(chat_body()), chat_body()):
        response = impl.normalize(body, provider=Text(CHAT))
        assert type(response.provider) is str and response.provider == CHAT


def test_a_body_object_too_large_is_refused_before_it_is_written(impl: ModuleType) -> None:
    body = chat_body("y" * 5_000_000)
    limits = Limits(max_sse_event_bytes=100)
    tracemalloc.start()
    try:
        error = error_of(lambda: impl.normalize(body, provider=CHAT, limits=limits))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error == too_large(100)
    assert peak < 1_000_000


@pytest.mark.parametrize(("body", "kind"), [(5, "int"), (None, "NoneType"), (1.5, "float")])
def test_normalize_refuses_a_body_of_another_type(impl: ModuleType, body: Any, kind: str) -> None:
    assert error_of(lambda: impl.normalize(body, provider=CHAT)) == {
        "type": "TypeError",
        "message": f"normalize() takes bytes, str or dict, not {kind}",
    }


def test_a_body_is_read_without_the_key_check_when_its_mapper_proves_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[Any] = []
    decode = pipeline.decode

    def counted(*args: Any) -> Any:
        decoded.append(args[0])
        return decode(*args)

    monkeypatch.setattr(pipeline, "decode", counted)
    body = json.dumps(chat_body()).encode()
    response = pipeline.normalize(body, provider=CHAT, limits=DEFAULT_LIMITS)  # past normalize's own shortcut
    assert ([item.text for item in response.items], decoded) == (["hello"], [])  # type: ignore[union-attr]
    gemini = {"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
    pipeline.normalize(json.dumps(gemini).encode(), provider="gemini", limits=DEFAULT_LIMITS)
    assert len(decoded) == 1  # a mapper that does not prove keys: the checked parse


def test_a_body_is_held_to_the_limits_given(impl: ModuleType) -> None:
    deep: Any = "x"
    for _ in range(150):
        deep = {"a": deep}
    call = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": deep}
    anthropic = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [call],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    error = error_of(lambda: impl.normalize(json.dumps(anthropic).encode(), provider="anthropic"))
    assert (error["type"], error["code"], error["message"], error["path"][:24]) == (
        "ParseError",
        "DEPTH_EXCEEDED",
        "tool arguments sent as a JSON object have nesting deeper than 100 levels",  # an argument, not the envelope
        "$.content[0].input.a.a.a",
    )
    parts = [{"functionCall": {"name": name, "args": {}}} for name in "fg"]
    gemini = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
    limits = Limits(max_calls_per_response=1)
    error = error_of(lambda: impl.normalize(json.dumps(gemini).encode(), provider="gemini", limits=limits))
    assert (error["type"], error["code"], error["message"]) == (
        "StreamError",
        "TOO_MANY_CALLS",
        "the response has more tool calls than max_calls_per_response (1)",
    )


# ------------------------------------------------------------ the stream assembler


def test_an_event_object_too_large_fails_the_stream_before_it_is_written(impl: ModuleType) -> None:
    stream = impl.StreamAssembler(CHAT, limits=Limits(max_sse_event_bytes=100))
    event = {"choices": [{"index": 0, "delta": {"content": "y" * 5_000_000}}]}
    tracemalloc.start()
    try:
        error = error_of(lambda: stream.feed_event(event))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error == too_large(100)
    assert peak < 1_000_000
    assert stream.state == "failed"
    after = error_of(stream.finish)
    assert (after["code"], after["message"]) == ("STREAM_FAILED", "the stream already failed (MALFORMED_EVENT)")


# ------------------------------------------------------------ delta chunks read through a learnt shape

_HEAD = '{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":'
_TAIL = '},"finish_reason":null}]}'


def _text_chunk(token: str) -> str:
    """A Chat Completions chunk whose text delta is the JSON text ``token``."""
    return _HEAD + '{"content":' + token + _TAIL


def _chat_stream(*chunks: str) -> bytes:
    """The chunks' texts, after an assistant's first chunk and before a final one, as an SSE stream."""
    every = [_HEAD + '{"role":"assistant"' + _TAIL, *chunks, _HEAD + '{},"finish_reason":"stop"}]}']
    return "".join(f"data: {chunk}\n\n" for chunk in every).encode() + b"data: [DONE]\n\n"


def _stream_outcome(impl: ModuleType, data: bytes, keep: bool) -> Any:
    """The text of each item, or the error's code, message, path and offset."""
    try:
        stream = impl.StreamAssembler(CHAT, keep_events=keep)
        stream.feed(data)
        return [getattr(item, "text", None) for item in stream.finish().items]
    except OutputError as err:
        return (err.code, err.message, err.path, err.offset)


NOT_JSON = ("MALFORMED_EVENT", "event data is not valid JSON", None, None)
#: a first text (read by the general path), then a delta taken by the shortcut: its shape is learnt
_LEARNT = [_text_chunk('"g"'), _text_chunk('"o"')]
_ID_FIRST = '{"id":"ID","choices":[{"index":0,"delta":{"content":"TEXT"},"finish_reason":null}]}'
_ID_LAST = '{"choices":[{"index":0,"delta":{"content":"TEXT"},"finish_reason":null}],"id":"ID"}'


def _ided(template: str, call_id: str, text: str) -> str:
    return template.replace("ID", call_id).replace("TEXT", text)


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([*_LEARNT, _text_chunk('"a"')], ["goa"]),
        ([*_LEARNT, _text_chunk('"\\u00e9"')], ["goé"]),
        ([*_LEARNT, _text_chunk('"a\x01b"')], NOT_JSON),  # a raw control character
        (
            [*_LEARNT, _text_chunk('"\\ud800"')],
            ("MALFORMED_EVENT", "event data has a lone surrogate escape", None, None),
        ),
        ([*_LEARNT, _HEAD + '{"content":"ab"X' + _TAIL[1:]], NOT_JSON),  # the shape's tail broken
        ([*_LEARNT, _HEAD + '{"content":nab"' + _TAIL], NOT_JSON),  # no opening quote
        # the delta's string appears twice, or once as another field's value while the delta is
        # spelled with an escape: no shape is learnt from these, so the later id is not read as text
        ([_ided(_ID_FIRST, "a", "a")] * 2 + [_ided(_ID_FIRST, "Q", "a")], ["aaa"]),
        ([_ided(_ID_LAST, "a", "a")] * 2 + [_ided(_ID_LAST, "Q", "a")], ["aaa"]),
        ([_ided(_ID_FIRST, "a", "\\u0061")] * 2 + [_ided(_ID_FIRST, "XYZ", "\\u0061")], ["aaa"]),
        ([_ided(_ID_FIRST, "/", "\\/")] * 2 + [_ided(_ID_FIRST, "XYZ", "\\/")], ["///"]),
    ],
    ids=[
        "one character",
        "an escape",
        "a control character",
        "a lone surrogate",
        "another tail",
        "no quote",
        "twice, the id first",
        "twice, the id last",
        "a unicode escape",
        "an escaped solidus",
    ],
)
def test_a_delta_chunk_is_read_as_decoding_it_reads_it(impl: ModuleType, chunks: list[str], expected: Any) -> None:
    data = _chat_stream(*chunks)
    assert _stream_outcome(impl, data, keep=False) == expected
    assert _stream_outcome(impl, data, keep=True) == expected


# ------------------------------------------------------------ which path reads each event (the pure twin)


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count, from now on, the event texts the pure pipelines parse without the
    repeated-key check (``unkeyed``) and with it (``decode``), and (see
    :func:`_count_mapping`) the events their mappers' general path maps."""
    counts: Counter[str] = Counter()
    unkeyed, decoder = pipeline.unkeyed, pipeline.decoder

    def counted_unkeyed(*args: Any) -> Any:
        counts["unkeyed"] += 1
        return unkeyed(*args)

    def counted_decoder(*args: Any) -> Callable[[Any], Any]:
        decode = decoder(*args)

        def counted_decode(text: Any) -> Any:
            counts["decode"] += 1
            return decode(text)

        return counted_decode

    monkeypatch.setattr(pipeline, "unkeyed", counted_unkeyed)
    monkeypatch.setattr(pipeline, "decoder", counted_decoder)
    return counts


def _count_mapping(stream: Any, counts: Counter[str]) -> None:
    mapper = stream._pipeline._mapper
    map_event = mapper.map_event

    def counted(*args: Any) -> Any:
        counts["map_event"] += 1
        return map_event(*args)

    mapper.map_event = counted


def _reads(stream: Any, counts: Counter[str], events: list[str]) -> list[dict[str, int]]:
    """What reading each SSE event (its whole text) took."""
    seen = []
    for event in events:
        counts.clear()
        stream.feed(event.encode())
        seen.append(dict(counts))
    return seen


def test_each_chat_chunk_takes_its_shortcut(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = _count_reads(monkeypatch)
    stream = pipeline.StreamAssembler(CHAT)
    _count_mapping(stream, counts)
    chunks = [_HEAD + '{"role":"assistant"' + _TAIL, *(_text_chunk(f'"{c}"') for c in "abcde")]
    chunks.append(_HEAD + '{},"finish_reason":"stop"}]}')
    assert _reads(stream, counts, [f"data: {chunk}\n\n" for chunk in [*chunks, "[DONE]"]]) == [
        {"unkeyed": 1},  # the first chunk: parsed without the key check, taken by the mapper's shortcut
        {"unkeyed": 1, "decode": 1, "map_event": 1},  # the first text: the general path
        {"unkeyed": 1},  # a delta: taken by the shortcut, its shape learnt
        {},  # later deltas: read through the shape, not parsed
        {},
        {},
        {"unkeyed": 1},
        {"map_event": 1},  # [DONE]: the general path
    ]
    assert [item.text for item in stream.finish().items] == ["abcde"]  # type: ignore[union-attr]


def test_each_anthropic_delta_is_read_through_the_shape_of_its_block(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = _count_reads(monkeypatch)
    stream = pipeline.StreamAssembler("anthropic")
    _count_mapping(stream, counts)
    start = '{"type":"content_block_start","index":INDEX,"content_block":BLOCK}'
    delta = '{"type":"content_block_delta","index":INDEX,"delta":{"type":"KIND","FIELD":"TEXT"}}'
    stop = '{"type":"content_block_stop","index":INDEX}'

    def block(index: int, content: str, kind: str, field: str, texts: str) -> list[tuple[str, str]]:
        opened = [("content_block_start", start.replace("INDEX", str(index)).replace("BLOCK", content))]
        piece = delta.replace("INDEX", str(index)).replace("KIND", kind).replace("FIELD", field)
        deltas = [("content_block_delta", piece.replace("TEXT", t)) for t in texts]
        return [*opened, *deltas, ("content_block_stop", stop.replace("INDEX", str(index)))]

    events = [
        ("message_start", '{"type":"message_start","message":{"id":"msg_1","model":"m","content":[],"usage":{}}}'),
        *block(0, '{"type":"text","text":""}', "text_delta", "text", "abcd"),
        *block(
            1, '{"type":"tool_use","id":"toolu_1","name":"f","input":{}}', "input_json_delta", "partial_json", "1234"
        ),
        ("message_delta", '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{}}'),
        ("message_stop", '{"type":"message_stop"}'),
    ]
    reads = _reads(stream, counts, [f"event: {name}\ndata: {data}\n\n" for name, data in events])
    mapped, learnt = {"decode": 1, "map_event": 1}, {"decode": 1}
    # per block: its start, a first delta taken by the shortcut (its shape learnt), later deltas
    # read through that shape (not parsed), its stop
    assert reads == [mapped, *([mapped, learnt, {}, {}, {}, mapped] * 2), mapped, mapped]
    assert _items(stream.finish()) == [("TextItem", "abcd"), ("ToolCallItem", "1234")]


_CANONICAL = [
    {"type": "response_started", "response_id": "r", "model": "m"},
    {"type": "item_started", "item_id": "t", "kind": "text"},
    {"type": "text_delta", "item_id": "t", "delta": "a"},
    {"type": "text_delta", "item_id": "t", "delta": "b"},
    {"type": "item_ended", "item_id": "t"},
    {"type": "item_started", "item_id": "f", "kind": "refusal"},
    {"type": "refusal_delta", "item_id": "f", "delta": "no"},
    {"type": "item_ended", "item_id": "f"},
    {
        "type": "tool_call_started",
        "item_id": "c",
        "call_id": "call_1",
        "name": "get",
        "call_id_generated": False,
        "call_kind": "function",
    },
    {"type": "tool_arguments_delta", "item_id": "c", "delta": '{"x":'},
    {"type": "tool_arguments_delta", "item_id": "c", "delta": "1}"},
    {"type": "item_ended", "item_id": "c"},
    {"type": "response_finished", "finish_reason": "tool_calls", "raw_finish_reason": None},
]
_CANONICAL_ITEMS = [("TextItem", "ab"), ("RefusalItem", "no"), ("ToolCallItem", '{"x":1}')]


def _items(response: Any) -> list[tuple[str, str]]:
    """Each item's kind and its text or arguments."""
    return [(type(i).__name__, i.arguments if hasattr(i, "arguments") else i.text) for i in response.items]


def _canonical_stream(events: list[Any]) -> bytes:
    return "".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events).encode()


def test_canonical_deltas_are_applied_without_the_mapper(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = _count_reads(monkeypatch)
    stream = pipeline.StreamAssembler("canonical")
    _count_mapping(stream, counts)
    reads = _reads(stream, counts, [f"data: {json.dumps(event)}\n\n" for event in _CANONICAL])
    mapped = {"decode": 1, "map_event": 1}
    shortcut = {"decode": 1}  # a text or arguments delta of exactly its three fields
    text, refusal, call = reads[:5], reads[5:8], reads[8:]
    assert text == [mapped, mapped, shortcut, shortcut, mapped]
    assert refusal == [mapped, mapped, mapped]  # a refusal delta: not a text delta
    assert call == [mapped, shortcut, shortcut, mapped, mapped]
    assert _items(stream.finish()) == _CANONICAL_ITEMS


def test_kept_canonical_events_are_every_event_fed(impl: ModuleType) -> None:
    stream = impl.StreamAssembler("canonical", keep_events=True)
    stream.feed(_canonical_stream(_CANONICAL))
    assert [event.to_dict() for event in stream.take_events()] == _CANONICAL
    assert _items(stream.finish()) == _CANONICAL_ITEMS


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ("5", "a canonical event must be a JSON object"),
        ("[1, 2, 3]", "a canonical event must be a JSON object"),
        ('"abc"', "a canonical event must be a JSON object"),
        ({"type": "text_delta", "item_id": "t", "delta": "a", "x": 1}, 'text_delta event has an unknown field "x"'),
        ({"type": "text_delta", "item_id": "t", "delta": 1}, 'text_delta event field "delta" must be a string'),
        (
            {"type": "tool_arguments_delta", "item_id": 1, "delta": "a"},
            'tool_arguments_delta event field "item_id" must be a string',
        ),
    ],
)
def test_a_canonical_event_the_shortcut_cannot_take_is_checked_in_full(
    impl: ModuleType, event: Any, message: str
) -> None:
    stream = impl.StreamAssembler("canonical")
    error = error_of(lambda: stream.feed(_canonical_stream([*_CANONICAL[:2], event])))
    assert (error["type"], error["code"], error["message"]) == ("StreamError", "MALFORMED_EVENT", message)


@pytest.mark.parametrize("provider", [CHAT, "anthropic", "openai-responses", "canonical"])
def test_only_gemini_streams_one_json_array(impl: ModuleType, provider: str) -> None:
    """Elsewhere an array is one JSON document, no event stream."""
    stream = impl.StreamAssembler(provider)
    stream.feed(b'[{"type": "response_started"}]')
    assert error_of(stream.finish) == {
        "type": "StreamError",
        "layer": "stream",
        "code": "NOT_A_RESPONSE_BODY",
        "message": "the stream is a JSON document, not an event stream (a whole response body is read with normalize)",
        "retryable": False,
        "offset": 0,
        "path": None,
        "hint": None,
        "issues": [],
        "call_index": None,
        "call_id": None,
        "tool": None,
        "batch": [],
    }


# ------------------------------------------------------------ the stream assembler's arguments

_MISUSES: list[tuple[str, Callable[[Any], object], tuple[str, str]]] = [
    (
        "keep_events not a bool",
        lambda sa: sa(CHAT, keep_events=1),
        ("TypeError", "argument 'keep_events': 'int' object cannot be converted to 'PyBool'"),
    ),
    ("provider not a str", lambda sa: sa(5), ("TypeError", "provider must be a str, not int")),
    (
        "an unknown provider",
        lambda sa: sa("nope"),
        ("ValueError", "unknown provider 'nope'; known: openai-chat, openai-responses, anthropic, gemini, canonical"),
    ),
    ("limits not Limits", lambda sa: sa(CHAT, limits=5), ("TypeError", "limits must be a decisions.Limits, not int")),
    (
        "a choice out of range",
        lambda sa: sa(CHAT, choice=2**32),
        ("ValueError", "choice must be an int from 0 to 2**32 - 1, or None, not 4294967296"),
    ),
    ("feed of a str", lambda sa: sa(CHAT).feed("data: {}"), ("TypeError", "feed() takes bytes, not str")),
    (
        "feed_event of an int",
        lambda sa: sa(CHAT).feed_event(5),
        ("TypeError", "feed_event() takes a dict, str or bytes, not int"),
    ),
    (
        "an event name not a str",
        lambda sa: sa(CHAT).feed_event("{}", event=5),
        ("TypeError", "event must be a str or None, not int"),
    ),
    (
        "take_events without keep_events",
        lambda sa: sa(CHAT).take_events(),
        ("ValueError", "take_events() needs StreamAssembler(..., keep_events=True)"),
    ),
]


@pytest.mark.parametrize(("step", "expected"), [m[1:] for m in _MISUSES], ids=[m[0] for m in _MISUSES])
def test_the_stream_assembler_refuses_each_misuse(
    impl: ModuleType, step: Callable[[Any], object], expected: tuple[str, str]
) -> None:
    assert error_of(lambda: step(impl.StreamAssembler)) == {"type": expected[0], "message": expected[1]}


def test_an_event_name_that_is_not_utf8_fails_the_stream(impl: ModuleType) -> None:
    stream = impl.StreamAssembler(CHAT)
    error = error_of(lambda: stream.feed_event("{}", event="\ud800"))
    assert (error["type"], error["code"], error["message"], error["path"]) == (
        "StreamError",
        "MALFORMED_EVENT",
        "event name is not valid UTF-8",
        None,
    )
    assert stream.state == "failed"
    assert (stream.provider, type(stream.provider)) == (CHAT, str)


# ------------------------------------------------------------ event names


_ANTHROPIC_HEAD = [
    ("message_start", {"type": "message_start", "message": {"id": "msg_1", "model": "m", "content": [], "usage": {}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
]
_ANTHROPIC_DELTA = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a"}}


@pytest.mark.parametrize("name", ["ping", "message_stop"])
@pytest.mark.parametrize("fed", ["bytes", "events"])
def test_an_event_named_for_another_type_is_malformed(impl: ModuleType, name: str, fed: str) -> None:
    stream = impl.StreamAssembler("anthropic")
    events = [*_ANTHROPIC_HEAD, (name, _ANTHROPIC_DELTA)]
    if fed == "bytes":
        data = "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in events).encode()
        error = error_of(lambda: stream.feed(data))
    else:
        for n, d in events[:-1]:
            stream.feed_event(d, event=n)
        error = error_of(lambda: stream.feed_event(_ANTHROPIC_DELTA, event=name))
    assert (error["type"], error["code"], error["message"]) == (
        "StreamError",
        "MALFORMED_EVENT",
        f"anthropic SSE event {name} carries data of type content_block_delta",
    )
    assert stream.state == "failed"


def test_a_delta_fed_as_an_event_takes_the_mapper_s_shortcut() -> None:
    counts: Counter[str] = Counter()
    stream = pipeline.StreamAssembler("anthropic")
    _count_mapping(stream, counts)
    for name, data in _ANTHROPIC_HEAD:
        stream.feed_event(data, event=name)
    assert counts["map_event"] == 2
    stream.feed_event(_ANTHROPIC_DELTA, event="content_block_delta")
    assert counts["map_event"] == 2
    stream.feed_event({"type": "content_block_stop", "index": 0}, event="content_block_stop")
    stream.feed_event(
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}, event="message_delta"
    )
    stream.feed_event({"type": "message_stop"}, event="message_stop")
    assert _items(stream.finish()) == [("TextItem", "a")]


# ------------------------------------------------------------ what the pipeline gives its mapper and its caller

#: a recorded Gemini stream whose call's arguments come in ``partialArgs`` pieces
_GEMINI_PARTIAL = FIXTURES / "vercel-ai/packages/google/src/__fixtures__/google-stream-tool-call-arguments.chunks.txt"


def test_a_mapper_that_assembles_arguments_is_given_the_callers_bound(impl: ModuleType) -> None:
    """Gemini's mapper builds a streamed call's arguments from its pieces
    until the call closes: it refuses them at the piece that passes the
    bound (event 1, ``"Boston"``), before the rest is held, not when the
    call closes (event 3)."""
    events = [line for line in _GEMINI_PARTIAL.read_text().splitlines() if line.strip()]
    assembler = impl.StreamAssembler("gemini", limits=Limits(max_call_argument_bytes=8))
    assembler.feed_event(events[0])
    error = error_of(lambda: assembler.feed_event(events[1]))
    assert (error["code"], error["message"]) == (
        "ARGUMENTS_TOO_LARGE",
        'the arguments of tool call "dqHOab6xGLzWodAPkPuViA4:call_0" exceed max_call_argument_bytes (8)',
    )


@pytest.mark.parametrize("choice", [0, 64, 2**32 - 1])
def test_a_choice_is_any_32_bit_count(impl: ModuleType, choice: int) -> None:
    assert impl.StreamAssembler(CHAT, choice=choice).state == "init"


def test_a_choice_past_32_bits_is_refused(impl: ModuleType) -> None:
    with pytest.raises(ValueError, match="choice must be an int from 0 to 2\\*\\*32 - 1"):
        impl.StreamAssembler(CHAT, choice=2**32)


def test_a_provider_of_a_str_subclass_is_kept_as_the_str_it_holds(impl: ModuleType) -> None:
    class Named(str):
        pass

    assembler = impl.StreamAssembler(Named(CHAT))
    assert type(assembler.provider) is str and assembler.provider == CHAT
