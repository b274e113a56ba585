"""The pure twin's shortcuts against its general path: a mapper's
``fast_body`` (a whole body straight to its response) must give exactly what
``map_body`` and the assembler give, for every recorded body and mutations of
them, under default and tight limits; where it cannot, it must decline (None)
so that the general path raises its error."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decisions import DEFAULT_LIMITS, Limits
from decisions._pure import pipeline
from decisions._pure.envelope import decode
from decisions._pure.providers import mapper_for
from decisions.errors import OutputError
from decisions.types import NormalizedResponse
from openai_mutations import damaged
from openai_recordings import FIXTURES, lines, recordings, short, sse

CHAT = "openai-chat"
BODIES = [path for path, file_format in recordings(CHAT) if file_format == "json-body"]


class _EventsOnly:
    """A mapper with its shortcut hidden: ``normalize_text`` takes the events."""

    def __init__(self, mapper: Any) -> None:
        self._mapper = mapper
        self.ARGUMENT_FIELDS = getattr(mapper, "ARGUMENT_FIELDS", ())

    @property
    def unknown_events(self) -> dict[str, int]:
        return self._mapper.unknown_events  # type: ignore[no-any-return]

    def map_body(self, body: Any) -> Any:
        return self._mapper.map_body(body)


def _outcome(text: bytes, limits: Limits, choice: int | None, fast: bool) -> Any:
    mapper = mapper_for(CHAT, choice)
    assert mapper is not None
    try:
        return pipeline.normalize_text(CHAT, mapper if fast else _EventsOnly(mapper), text, limits)  # type: ignore[arg-type]
    except OutputError as err:
        return (type(err).__name__, err.code, err.message, err.path, err.offset)


def _fast_taken(text: bytes, limits: Limits, choice: int | None) -> bool:
    mapper = mapper_for(CHAT, choice)
    try:
        body = decode(text, limits, ())
    except OutputError:
        return False
    return mapper.fast_body(body, CHAT, limits) is not None  # type: ignore[union-attr]


def check(body: Any, limits: Limits = DEFAULT_LIMITS, choice: int | None = None) -> bool:
    """Both paths give the same outcome; whether the shortcut answered."""
    text = json.dumps(body).encode()
    fast = _outcome(text, limits, choice, fast=True)
    events = _outcome(text, limits, choice, fast=False)
    assert fast == events
    taken = _fast_taken(text, limits, choice)
    if taken:
        assert isinstance(events, NormalizedResponse)
    return taken


def _body(path: str) -> Any:
    return json.loads((FIXTURES / path).read_bytes())


@pytest.mark.parametrize("path", BODIES, ids=short)
def test_recorded_bodies(path: str) -> None:
    check(_body(path))
    check(_body(path), choice=0)
    check(_body(path), choice=1)


def test_the_shortcut_answers_common_bodies() -> None:
    """Most recorded bodies are common ones: the shortcut is not dead code."""
    taken = [path for path in BODIES if check(_body(path))]
    assert len(taken) >= len(BODIES) // 2


def _chat(message: dict[str, Any], finish: Any = "tool_calls", **top: Any) -> dict[str, Any]:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
    }
    body.update(top)
    return body


def _call(call_id: Any, name: Any = "read_file", arguments: Any = '{"path": "a"}', **extra: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}, **extra}


TWO_CALLS = _chat({"content": None, "tool_calls": [_call("call_a"), _call("call_b", "grep", "")]})

EDGES: list[tuple[dict[str, Any], dict[str, int], int | None]] = [
    (TWO_CALLS, {}, None),
    (_chat({"content": "hello"}, "stop"), {}, None),
    (_chat({"content": "hi", "tool_calls": [_call("c")]}, "tool_calls"), {}, None),
    (_chat({"content": ""}, "stop"), {}, None),
    (_chat({"content": None, "tool_calls": []}, "stop"), {}, None),
    (_chat({"content": "cut", "tool_calls": [_call("c", arguments='{"pa')]}, "length"), {}, None),
    (_chat({"content": "x", "tool_calls": [_call("c")]}, "content_filter"), {}, None),
    (_chat({"content": "x", "tool_calls": [_call("c")]}, "eos"), {}, None),
    (_chat({"content": "x"}, None), {}, None),
    (_chat({"content": "x"}, "stop", id=""), {}, None),
    (_chat({"content": "x"}, "stop", model=""), {}, None),
    (_chat({"content": "x"}, "stop", usage=None), {}, None),
    (_chat({"content": "x"}, "stop", usage={}), {}, None),
    (_chat({"content": "x"}, "stop", usage={"prompt_tokens": -1}), {}, None),
    (_chat({"content": "x"}, "stop", usage={"prompt_tokens": 2**64}), {}, None),
    (_chat({"content": "x"}, "stop", usage={"prompt_tokens": True}), {}, None),
    (_chat({"content": "x"}, "stop", usage={"prompt_tokens_details": {"cached_tokens": 3}}), {}, None),
    (_chat({"content": "x"}, "stop", usage={"completion_tokens_details": {"reasoning_tokens": "3"}}), {}, None),
    (_chat({"content": "x"}, "stop", usage={"completion_tokens_details": []}), {}, None),
    (_chat({"content": "x"}, "stop", error={"message": "boom"}), {}, None),
    (_chat({"content": "x"}, "stop", prompt_filter_results=[]), {}, None),
    (_chat({"content": "x", "refusal": "no"}, "stop"), {}, None),
    (_chat({"content": "x", "refusal": ""}, "stop"), {}, None),
    (_chat({"content": "x", "reasoning_content": "r"}, "stop"), {}, None),
    (_chat({"content": [{"type": "text", "text": "x"}]}, "stop"), {}, None),
    (_chat({"content": 3}, "stop"), {}, None),
    (_chat({"content": "x", "audio": {"id": "a"}}, "stop"), {}, None),
    (_chat({"content": None, "function_call": {"name": "f", "arguments": "{}"}}, "function_call"), {}, None),
    (_chat({"tool_calls": [_call(None), _call("call_1")]}), {}, None),
    (_chat({"tool_calls": [_call(None), _call("chatcmpl-1.call_0")]}), {}, None),
    (_chat({"tool_calls": [_call(None)]}, id=""), {}, None),
    (_chat({"tool_calls": [_call("")]}), {}, None),
    (_chat({"tool_calls": [_call("a"), _call("a")]}), {}, None),
    (_chat({"tool_calls": [_call("a", "")]}), {}, None),
    (_chat({"tool_calls": [_call("a", None)]}), {}, None),
    (_chat({"tool_calls": [_call("a", arguments=None)]}), {}, None),
    (_chat({"tool_calls": [_call("a", arguments=3)]}), {}, None),
    (_chat({"tool_calls": [_call("a", index=-1)]}), {}, None),
    (_chat({"tool_calls": [_call("a", index=7)]}), {}, None),
    (_chat({"tool_calls": [{"id": "a", "function": None}]}), {}, None),
    (_chat({"tool_calls": ["a"]}), {}, None),
    (_chat({"tool_calls": {}}), {}, None),
    (TWO_CALLS, {"max_calls_per_response": 1}, None),
    (TWO_CALLS, {"max_calls_per_response": 2}, None),
    (TWO_CALLS, {"max_items_per_response": 1}, None),
    (TWO_CALLS, {"max_stream_events": 7}, None),
    (TWO_CALLS, {"max_stream_events": 8}, None),
    # the events of text beside a call, ended or cut, and of a call without arguments
    (_chat({"content": "x", "tool_calls": [_call("c")]}), {"max_stream_events": 8}, None),
    (_chat({"content": "x", "tool_calls": [_call("c")]}), {"max_stream_events": 9}, None),
    (_chat({"content": "x", "tool_calls": [_call("c")]}, "length"), {"max_stream_events": 6}, None),
    (_chat({"content": "x", "tool_calls": [_call("c")]}, "length"), {"max_stream_events": 7}, None),
    (_chat({"tool_calls": [_call("c", arguments="")]}), {"max_stream_events": 4}, None),
    (_chat({"tool_calls": [_call("c", arguments="")]}), {"max_stream_events": 5}, None),
    (_chat({"tool_calls": [_call("c", arguments="")]}, "length"), {"max_stream_events": 3}, None),
    (_chat({"tool_calls": [_call("c", arguments="")]}, "length"), {"max_stream_events": 4}, None),
    (TWO_CALLS, {"max_call_argument_bytes": 12}, None),
    # a repeated call id beyond the first two calls; the bytes of text and every call together
    (_chat({"tool_calls": [_call("a"), _call("b"), _call("a")]}), {}, None),
    (_chat({"tool_calls": [_call("a"), _call("b"), _call("b")]}), {}, None),
    (_chat({"tool_calls": [_call("a"), _call("b"), _call("c")]}), {}, None),
    (_chat({"content": "hello", "tool_calls": [_call("a"), _call("b")]}), {"max_response_bytes": 30}, None),
    (_chat({"content": "hello", "tool_calls": [_call("a"), _call("b")]}), {"max_response_bytes": 31}, None),
    # Azure's filter verdicts under their other names
    (
        _chat(
            {"content": "x"},
            "stop",
            prompt_annotations=[{"prompt_index": 0, "content_filter_results": {"hate": {"filtered": True}}}],
        ),
        {},
        None,
    ),
    (
        {**TWO_CALLS, "choices": [{**TWO_CALLS["choices"][0], "content_filter_result": {"hate": {"filtered": True}}}]},
        {},
        None,
    ),
    (TWO_CALLS, {"max_call_argument_bytes": 13}, None),
    (TWO_CALLS, {"max_response_bytes": 12}, None),
    (_chat({"content": "héllo", "tool_calls": [_call("c", arguments='{"p": "é"}')]}), {"max_response_bytes": 16}, None),
    (_chat({"content": "héllo", "tool_calls": [_call("c", arguments='{"p": "é"}')]}), {"max_response_bytes": 17}, None),
    (_chat({"tool_calls": [_call("c", arguments='{"p": "é"}')]}), {"max_call_argument_bytes": 10}, None),
    (_chat({"tool_calls": [_call("c", arguments='{"p": "é"}')]}), {"max_call_argument_bytes": 11}, None),
    (_chat({"content": "héllo", "tool_calls": [_call("c", arguments='{"p": "é"}')]}), {"max_response_bytes": 18}, None),
    (TWO_CALLS, {}, 0),
    (TWO_CALLS, {}, 1),
    ({**TWO_CALLS, "choices": [{**TWO_CALLS["choices"][0], "index": 1}]}, {}, 1),
    ({**TWO_CALLS, "choices": [{**TWO_CALLS["choices"][0], "index": 1}]}, {}, None),
    ({**TWO_CALLS, "choices": [TWO_CALLS["choices"][0]] * 2}, {}, None),
    ({**TWO_CALLS, "choices": [TWO_CALLS["choices"][0]] * 2}, {}, 0),
    ({**TWO_CALLS, "choices": [{**TWO_CALLS["choices"][0], "content_filter_results": {}}]}, {}, None),
    ({**TWO_CALLS, "choices": [{**TWO_CALLS["choices"][0], "message": None}]}, {}, None),
    ({**TWO_CALLS, "choices": []}, {}, None),
    ({**TWO_CALLS, "choices": None}, {}, None),
    ({**TWO_CALLS, "id": 3}, {}, None),
    ([TWO_CALLS], {}, None),
]


@pytest.mark.parametrize(("body", "limits", "choice"), EDGES)
def test_edges(body: dict[str, Any], limits: dict[str, int], choice: int | None) -> None:
    check(body, Limits(**limits), choice)


def test_edges_exercise_both_ways() -> None:
    taken = [check(body, Limits(**limits), choice) for body, limits, choice in EDGES]
    assert any(taken) and not all(taken)


_SEEDS = [_body(path) for path in BODIES] + [body for body, _, _ in EDGES[:8]]


@given(st.sampled_from(_SEEDS).flatmap(lambda body: damaged([copy.deepcopy(body)], reorder=False)))
def test_mutated_bodies(bodies: list[Any]) -> None:
    check(bodies[0])


@given(
    st.sampled_from(_SEEDS[-8:]),
    st.sampled_from(
        [
            "max_calls_per_response",
            "max_items_per_response",
            "max_stream_events",
            "max_call_argument_bytes",
            "max_response_bytes",
        ]
    ),
    st.integers(1, 40),
    st.sampled_from([None, 0, 1]),
)
def test_tight_limits(body: Any, field: str, value: int, choice: int | None) -> None:
    check(body, Limits(**{field: value}), choice)


# ---------------------------------------------------------------- streams: fast_delta / fast_event


def _stream_outcome(events: list[Any], keep: bool, limits: Limits, choice: int | None) -> Any:
    """The pure backend's outcome with its shortcuts (``keep=False``) or
    through ``map_event`` alone (``keep=True``), error message included."""
    from decisions import _pure

    try:
        assembler = _pure.StreamAssembler(CHAT, keep_events=keep, limits=limits, choice=choice)
        assembler.feed(sse(events))
        return assembler.finish()
    except OutputError as err:
        return (type(err).__name__, err.code, err.message, err.path, err.offset)


def check_stream(events: list[Any], limits: Limits = DEFAULT_LIMITS, choice: int | None = None) -> None:
    assert _stream_outcome(events, False, limits, choice) == _stream_outcome(events, True, limits, choice)


def _chunk(delta: dict[str, Any] | None = None, finish: Any = None, index: Any = 0, **top: Any) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": index, "delta": {} if delta is None else delta, "finish_reason": finish}
    return {"id": "chatcmpl-x", "object": "chat.completion.chunk", "model": "m", "choices": [choice], **top}


def _start(index: Any = 0, call_id: Any = "c0", name: Any = "f", arguments: Any = "") -> dict[str, Any]:
    return _chunk({"tool_calls": [{"index": index, "id": call_id, "function": {"name": name, "arguments": arguments}}]})


def _more(index: int = 0, arguments: str = "}") -> dict[str, Any]:
    return _chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})


_ROLE = _chunk({"role": "assistant"})
_STREAMS: dict[str, list[Any]] = {
    "two calls": [
        _ROLE,
        _start(0, "a"),
        _more(0, "{}"),
        _start(1, "b", "g"),
        _more(1, "{}"),
        _chunk(None, "tool_calls"),
    ],
    "first chunk starts a call": [_start(0, "a", arguments="{"), _more(0), _chunk(None, "tool_calls"), "[DONE]"],
    "first chunk finishes": [_chunk(None, "stop")],
    "first chunk has no delta": [{**_ROLE, "choices": [{"index": 0, "finish_reason": None}]}, _chunk(None, "stop")],
    "first chunk of another choice": [_chunk({"role": "assistant"}, index=1), _chunk(None, "stop")],
    "first chunk with usage": [{**_ROLE, "usage": {"prompt_tokens": 1}}, _chunk(None, "stop")],
    "first chunk with an empty id": [{**_ROLE, "id": ""}, _start(0, None), _more(0), _chunk(None, "tool_calls")],
    "generated call ids": [_ROLE, _start(0, None), _more(0), _start(1, ""), _chunk(None, "tool_calls")],
    "generated id repeats a given one": [_ROLE, _start(0, "chatcmpl-x.call_1"), _start(1, None), _chunk(None, "stop")],
    "repeated call id": [_ROLE, _start(0, "a"), _start(1, "a"), _chunk(None, "tool_calls")],
    "index reused by another id": [_ROLE, _start(0, "a"), _start(0, "b"), _chunk(None, "tool_calls")],
    "index reused by the same id": [_ROLE, _start(0, "a"), _start(0, "a"), _chunk(None, "tool_calls")],
    "call without a name": [_ROLE, _start(0, "a", None), _chunk(None, "tool_calls")],
    "call with an empty name": [_ROLE, _start(0, "a", ""), _chunk(None, "tool_calls")],
    "call name not a string": [_ROLE, _start(0, "a", 3), _chunk(None, "tool_calls")],
    "call id not a string": [_ROLE, _start(0, 5), _chunk(None, "tool_calls")],
    "call index negative": [_ROLE, _start(-1, "a"), _chunk(None, "tool_calls")],
    "call index beyond 64 bits": [_ROLE, _start(2**64, "a"), _chunk(None, "tool_calls")],
    "call index a bool": [_ROLE, _start(True, "a"), _chunk(None, "tool_calls")],
    "call without an index": [_ROLE, _chunk({"tool_calls": [{"id": "a", "function": {"name": "f"}}]}), _more(0)],
    "call arguments not a string": [_ROLE, _start(0, "a", "f", 3), _chunk(None, "tool_calls")],
    "call function missing": [_ROLE, _chunk({"tool_calls": [{"index": 0, "id": "a"}]}), _chunk(None, "stop")],
    "two calls in one delta": [_ROLE, _chunk({"tool_calls": [_start()["choices"][0]["delta"]["tool_calls"][0]] * 2})],
    "call beside content": [
        _ROLE,
        _chunk({"content": "x", "tool_calls": _start()["choices"][0]["delta"]["tool_calls"]}),
    ],
    "finish with content": [_ROLE, _chunk({"content": "x"}, "stop")],
    "finish with a call": [_ROLE, _chunk(_start()["choices"][0]["delta"], "tool_calls")],
    "finish with usage": [_ROLE, _start(), {**_chunk(None, "tool_calls"), "usage": {"prompt_tokens": 3}}],
    "finish not a string": [_ROLE, _start(), _chunk(None, 7)],
    "finish unknown": [_ROLE, _start(), _more(), _chunk(None, "eos")],
    "finish length": [_ROLE, _start(), _more(), _chunk(None, "length")],
    "finish content_filter": [_ROLE, _start(), _more(), _chunk(None, "content_filter")],
    "finish after a refusal": [_ROLE, _chunk({"refusal": "no"}), _chunk(None, "stop")],
    "finish after a filtered chunk": [
        _ROLE,
        {**_more(0), "prompt_filter_results": [{"content_filter_results": {"hate": {"filtered": True}}}]},
        _chunk(None, "stop"),
    ],
    "finish twice": [_ROLE, _start(), _chunk(None, "tool_calls"), _chunk(None, "tool_calls")],
    "finish after done": [_ROLE, _start(), "[DONE]", _chunk(None, "tool_calls")],
    "finish of another choice": [_ROLE, _start(), _chunk(None, "stop", index=1), _chunk(None, "stop")],
    "finish with a filter annotation": [
        _ROLE,
        _start(),
        {**_chunk(None, "stop"), "choices": [{**_chunk(None, "stop")["choices"][0], "content_filter_results": {}}]},
    ],
    "finish with an error": [_ROLE, _start(), {**_chunk(None, "stop"), "error": {"message": "x"}}],
    "delta not an object": [_ROLE, {**_ROLE, "choices": [{"index": 0, "delta": [], "finish_reason": "stop"}]}],
    "id not a string": [_ROLE, {**_start(), "id": 1}, _chunk(None, "stop")],
    "model not a string": [{**_ROLE, "model": 1}, _chunk(None, "stop")],
    "usage after finish": [_ROLE, _start(), _chunk(None, "tool_calls"), {"id": "x", "choices": [], "usage": {}}],
}


@pytest.mark.parametrize("events", list(_STREAMS.values()), ids=list(_STREAMS))
@pytest.mark.parametrize("choice", [None, 0, 1])
def test_stream_edges(events: list[Any], choice: int | None) -> None:
    check_stream(events, choice=choice)


_LIMITS = [
    Limits(max_calls_per_response=1),
    Limits(max_items_per_response=1),
    Limits(max_stream_events=3),
    Limits(max_stream_events=5),
    Limits(max_call_argument_bytes=1),
    Limits(max_response_bytes=2),
]


@pytest.mark.parametrize("limits", _LIMITS, ids=repr)
def test_stream_limits(limits: Limits) -> None:
    for events in _STREAMS.values():
        check_stream(events, limits)


def _recorded_streams() -> list[list[Any]]:
    out = []
    for path, file_format in recordings(CHAT):
        if file_format == "jsonl":
            out.append([json.loads(line) if line.strip().startswith("{") else line.strip() for line in lines(path)])
    return out


_STREAM_SEEDS = [*_recorded_streams(), *_STREAMS.values()]


@pytest.mark.parametrize("index", range(len(_STREAM_SEEDS)))
def test_recorded_streams(index: int) -> None:
    check_stream(_STREAM_SEEDS[index])


@given(st.sampled_from(_STREAM_SEEDS).flatmap(damaged), st.sampled_from([None, 0, 1]))
def test_mutated_streams(events: list[Any], choice: int | None) -> None:
    check_stream(events, choice=choice)


# ---------------------------------------------------------------- SSE framing: _data_events


_LINES = st.sampled_from(
    [b"data: {}", b"data:{}", b"data: x", b"data", b"data: ", b"event: e", b": c", b"id: 1", b"retry: 5", b"", b"da"]
    + [b"data: \xc3\xa9", b"data: \xc3", b"data: " + b"x" * 40]
)


def _framed(chunks: list[bytes], limits: Limits) -> Any:
    from decisions._pure.sse import _Framer

    framer = _Framer(limits)
    out: list[Any] = []
    for chunk in chunks:
        error = framer.feed_into(chunk, out)
        if error is not None:  # the events completed before the byte at fault are kept
            return out, (error.code, error.offset)
    try:
        out.extend(framer.finish_raw())
    except OutputError as err:
        return out, (err.code, err.offset)
    return out, None


@given(
    st.lists(_LINES, max_size=12),
    st.sampled_from([b"\n", b"\n\n", b"\r\n"]),
    st.lists(st.integers(0, 200), max_size=4),
    st.sampled_from(
        [
            DEFAULT_LIMITS,
            Limits(max_stream_events=2),
            Limits(max_sse_line_bytes=20),
            Limits(max_sse_event_bytes=10),
            Limits(max_bytes_without_data=8),
        ]
    ),
)
def test_sse_chunkings(lines: list[bytes], end: bytes, cuts: list[int], limits: Limits) -> None:
    """Any chunking gives the events, or the error, that feeding a byte at a
    time gives (a one-byte chunk never holds a blank line, so it is read line
    by line)."""
    data = b"".join(line + end for line in lines)
    pieces, last = [], 0
    for cut in sorted(min(c, len(data)) for c in cuts):
        pieces.append(data[last:cut])
        last = cut
    pieces.append(data[last:])
    assert _framed(pieces, limits) == _framed([data[i : i + 1] for i in range(len(data))], limits)


# ---------------------------------------------------------------- streams: a learnt delta shape

_HEAD = '{"id":"chatcmpl-x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":'
_CALL_AT = '{"tool_calls":[{"index":0,"function":{"arguments":'
_RAW_TOKENS = [
    '"a"',
    '"{\\"p\\": 1}"',
    '"b"',
    '""',
    '"\\/"',
    '"a\\/b"',
    '"\\u0041"',
    '"\\ud800"',
    '"\\ud83d\\ude00"',
    '"\\\\"',
    '"\\\\u"',
    '"\\x"',
    '"\t"',
    '"\u00e9"',
    '"a","index":0',
    '"a"}}],"x":{"y":"',
    "null",
    "1",
    '"a" ',
    ' "a"',
    '"' + "z" * 30 + '"',
    '"index"',
    '"arguments"',
]


def _raw_chunk(token: str, text: bool = False) -> str:
    if text:
        return _HEAD + '{"content":' + token + '},"finish_reason":null}]}'
    return _HEAD + _CALL_AT + token + '}}]},"finish_reason":null}]}'


def _raw_stream(tokens: list[str], text: bool) -> bytes:
    start = '{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":""}}]}'
    chunks = [_HEAD + "{}}]}", _HEAD + ('{"content":"go"}' if text else start) + "}]}"]
    chunks += [_raw_chunk(token, text) for token in tokens]
    chunks.append(_HEAD + '{},"finish_reason":"stop"}]}')
    return "".join(f"data: {chunk}\n\n" for chunk in chunks).encode() + b"data: [DONE]\n\n"


def _raw_outcome(data: bytes, keep: bool, limits: Limits, provider: str = CHAT) -> Any:
    from decisions._pure import StreamAssembler

    try:
        assembler = StreamAssembler(provider, keep_events=keep, limits=limits)
        assembler.feed(data)
        return assembler.finish()
    except OutputError as err:
        return (type(err).__name__, err.code, err.message, err.path, err.offset)


@given(
    st.lists(st.sampled_from(_RAW_TOKENS), max_size=8),
    st.booleans(),
    st.sampled_from([DEFAULT_LIMITS, Limits(max_sse_event_bytes=190), Limits(max_call_argument_bytes=12)]),
)
def test_delta_shapes(tokens: list[str], text: bool, limits: Limits) -> None:
    """Delta chunks read through a learnt shape give what decoding each
    gives: strings of every spelling, non-strings, text that changes the
    structure, past the size limits."""
    data = _raw_stream(tokens, text)
    assert _raw_outcome(data, False, limits) == _raw_outcome(data, True, limits)


def test_delta_shapes_are_learnt_and_used() -> None:
    from decisions._pure import StreamAssembler

    assembler = StreamAssembler(CHAT)
    assembler.feed(_raw_stream(['"a"', '"b"', '"c"'], False))
    shape = assembler._pipeline._delta_text
    assert shape is not None and shape.match(_raw_chunk('"d\\n"')) == "d\n"
    assert assembler.finish().items[0].arguments == "abc"  # type: ignore[union-attr]


_ANTHROPIC = "anthropic"


def _anthropic_stream(tokens: list[str], text: bool) -> bytes:
    kind, field = ("text_delta", "text") if text else ("input_json_delta", "partial_json")
    block = '{"type":"text","text":""}' if text else '{"type":"tool_use","id":"toolu_1","name":"f","input":{}}'
    events = [
        ("message_start", '{"type":"message_start","message":{"id":"msg_1","model":"m","content":[],"usage":{}}}'),
        ("content_block_start", '{"type":"content_block_start","index":0,"content_block":' + block + "}"),
    ]
    delta = '{"type":"content_block_delta","index":0,"delta":{"type":"' + kind + '","' + field + '":'
    events += [("content_block_delta", delta + token + "}}") for token in tokens]
    events += [
        ("content_block_stop", '{"type":"content_block_stop","index":0}'),
        ("message_delta", '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{}}'),
        ("message_stop", '{"type":"message_stop"}'),
    ]
    return "".join(f"event: {name}\ndata: {data}\n\n" for name, data in events).encode()


@given(
    st.lists(st.sampled_from([*_RAW_TOKENS, '"text_delta"', '"partial_json"']), max_size=8),
    st.booleans(),
    st.sampled_from([DEFAULT_LIMITS, Limits(max_sse_event_bytes=150), Limits(max_call_argument_bytes=12)]),
)
def test_anthropic_delta_shapes(tokens: list[str], text: bool, limits: Limits) -> None:
    """The same for Anthropic's content_block_delta events."""
    data = _anthropic_stream(tokens, text)
    assert _raw_outcome(data, False, limits, _ANTHROPIC) == _raw_outcome(data, True, limits, _ANTHROPIC)


def test_anthropic_delta_shapes_are_learnt() -> None:
    from decisions._pure import StreamAssembler

    assembler = StreamAssembler(_ANTHROPIC)
    assembler.feed(_anthropic_stream(['"{\\"a\\""', '": 1"', '"}"'], False))
    assert assembler._pipeline._delta_text is not None
    assert assembler.finish().items[0].arguments == '{"a": 1}'  # type: ignore[union-attr]


def test_a_repeated_key_is_not_hidden_by_a_later_call_without_arguments() -> None:
    """The key proof counts every call's members: a call without arguments
    whose members make up the body's own count must not hide a repeated key
    in an earlier call."""
    from decisions import _pure

    first = '{"id": "c1", "type": "function", "function": {"name": "f", "name": "evil", "arguments": "{}"}}'
    second = (
        '{"id": "c2", "type": "function", "a": 1, "b": 2, "c": 3, "d": 4, "function": {"name": "g", "arguments": ""}}'
    )
    text = (
        '{"id": "x", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": null, '
        f'"tool_calls": [{first}, {second}]}}, "finish_reason": "tool_calls"}}]}}'
    ).encode()
    expected = _outcome(text, DEFAULT_LIMITS, None, fast=False)
    assert expected[:2] == ("StreamError", "MALFORMED_EVENT") and "repeated key" in expected[2]
    assert _outcome(text, DEFAULT_LIMITS, None, fast=True) == expected
    with pytest.raises(OutputError) as info:
        _pure.normalize(text, provider=CHAT)
    assert (type(info.value).__name__, info.value.code, info.value.message, info.value.path) == expected[:4]
