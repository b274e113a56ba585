"""The stream assembler and its plumbing, on both backends, through the
``"canonical"`` provider (canonical events fed directly)."""

from __future__ import annotations

import json
import statistics
import time
from types import ModuleType
from typing import Any, Callable

import pytest

from decisions import Limits, StreamError, TransportError
from decisions.types import (
    CanonicalEvent,
    ItemEnded,
    ItemStarted,
    NormalizedResponse,
    ReasoningDelta,
    RefusalDelta,
    ResponseFailed,
    ResponseFinished,
    ResponseSnapshot,
    ResponseStarted,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
    Usage,
    UsageReported,
)

START = ResponseStarted(response_id="resp_1", model="m-1")


def call(item: str, name: str = "read_file", call_id: str | None = None) -> ToolCallStarted:
    return ToolCallStarted(item_id=item, call_id=call_id or f"call_{item}", name=name)


def args(item: str, delta: str) -> ToolArgumentsDelta:
    return ToolArgumentsDelta(item_id=item, delta=delta)


def end(item: str) -> ItemEnded:
    return ItemEnded(item_id=item)


def finished(reason: str = "tool_calls", raw: str | None = None) -> ResponseFinished:
    return ResponseFinished(finish_reason=reason, raw_finish_reason=raw)  # type: ignore[arg-type]


def run(impl: ModuleType, events: list[CanonicalEvent], **limits: int) -> NormalizedResponse:
    asm = impl.StreamAssembler("canonical", limits=Limits(**limits) if limits else None)
    for event in events:
        asm.feed_event(event)
    return asm.finish()


def code_of(impl: ModuleType, events: list[CanonicalEvent], **limits: int) -> str:
    with pytest.raises(StreamError) as info:
        run(impl, events, **limits)
    return info.value.code


def test_seed_example_read_file(impl: ModuleType) -> None:
    events = [
        START,
        call("i7", call_id="call_7"),
        args("i7", '{"pa'),
        args("i7", 'th":"README.md"}'),
        end("i7"),
        finished(),
    ]
    response = run(impl, events)
    assert response.provider == "canonical"
    assert (response.response_id, response.model, response.finish_reason) == ("resp_1", "m-1", "tool_calls")
    (tool,) = response.tool_calls
    assert (tool.call_id, tool.name, tool.arguments, tool.complete) == (
        "call_7",
        "read_file",
        '{"path":"README.md"}',
        True,
    )
    assert json.loads(tool.arguments) == {"path": "README.md"}


def test_all_item_kinds_in_order_with_usage(impl: ModuleType) -> None:
    events: list[CanonicalEvent] = [
        START,
        ItemStarted(item_id="r", kind="reasoning"),
        ReasoningDelta(item_id="r", delta="think"),
        ReasoningDelta(item_id="r", delta="", signature="sig"),
        end("r"),
        ItemStarted(item_id="t", kind="text"),
        TextDelta(item_id="t", delta="héllo "),
        TextDelta(item_id="t", delta="wörld"),
        end("t"),
        ItemStarted(item_id="x", kind="refusal"),
        RefusalDelta(item_id="x", delta="no"),
        end("x"),
        call("c"),
        args("c", "{}"),
        end("c"),
        UsageReported(input_tokens=3, output_tokens=4),
        finished("stop", "end_turn"),
        UsageReported(output_tokens=5, cached_tokens=1),  # usage after the terminal event is allowed
    ]
    response = run(impl, events)
    assert [item.kind for item in response.items] == ["reasoning", "text", "refusal", "tool_call"]
    assert response.items[0].text == "think" and response.items[0].signature == "sig"
    assert response.text == "héllo wörld"
    assert response.items[2].text == "no"
    assert response.usage == Usage(input_tokens=3, output_tokens=5, cached_tokens=1)
    assert response.raw_finish_reason == "end_turn"
    assert response.unknown_events == {}


def test_interleaved_calls_assembled_by_id_never_glued(impl: ModuleType) -> None:
    events = [
        START,
        call("a"),
        call("b", name="write_file"),
        args("a", '{"x":'),
        args("b", '{"y":'),
        args("b", "2}"),
        args("a", "1}"),
        end("b"),
        end("a"),
        finished(),
    ]
    response = run(impl, events)
    assert [(c.item_id, c.name, c.arguments) for c in response.tool_calls] == [
        ("a", "read_file", '{"x":1}'),
        ("b", "write_file", '{"y":2}'),
    ]


@pytest.mark.parametrize(
    "events, code",
    [
        ([call("a")], "EVENT_BEFORE_START"),
        ([START, START], "DUPLICATE_START"),
        ([START, args("a", "{}")], "DELTA_BEFORE_START"),
        ([START, TextDelta(item_id="t", delta="x")], "DELTA_BEFORE_START"),
        ([START, call("a"), end("a"), args("a", "{}")], "DELTA_AFTER_END"),
        ([START, call("a"), end("a"), end("a")], "DELTA_AFTER_END"),
        ([START, end("nope")], "UNKNOWN_ITEM"),
        ([START, call("a"), TextDelta(item_id="a", delta="x")], "UNKNOWN_ITEM"),
        ([START, ItemStarted(item_id="a", kind="text"), call("a")], "DUPLICATE_ITEM_ID"),
        ([START, call("a"), call("a")], "DUPLICATE_ITEM_ID"),
        ([START, call("a", call_id="c"), call("b", call_id="c")], "DUPLICATE_CALL_ID"),
        ([START, call("a", call_id="c"), call("a", name="rm", call_id="c")], "CALL_NAME_CHANGED"),
        ([START, call("a"), args("a", "{}"), finished()], "ITEM_NOT_ENDED"),
        ([START, call("a"), args("a", "{}"), end("a")], "NO_TERMINAL_EVENT"),
        ([], "NO_TERMINAL_EVENT"),
        ([START, finished("stop"), ItemStarted(item_id="t", kind="text")], "EVENT_AFTER_TERMINAL"),
        ([START, finished("stop"), finished("stop")], "EVENT_AFTER_TERMINAL"),
    ],
)
def test_protocol_violations_have_their_codes(impl: ModuleType, events: list[CanonicalEvent], code: str) -> None:
    assert code_of(impl, events) == code


def test_after_a_failure_every_call_raises_stream_failed(impl: ModuleType) -> None:
    asm = impl.StreamAssembler("canonical")
    asm.feed_event(START)
    with pytest.raises(StreamError, match="DELTA_BEFORE_START"):
        asm.feed_event(args("a", "{}"))
    assert asm.state == "failed"
    for action in (lambda: asm.feed_event(START), asm.finish, lambda: asm.feed(b"data: {}\n\n")):
        with pytest.raises(StreamError) as info:
            action()
        assert info.value.code == "STREAM_FAILED"
        assert "DELTA_BEFORE_START" in info.value.message


def test_abort_cancels(impl: ModuleType) -> None:
    asm = impl.StreamAssembler("canonical")
    asm.feed_event(START)
    asm.abort()
    assert asm.state == "failed"
    for action in (lambda: asm.feed_event(end("a")), asm.finish, asm.snapshot, lambda: asm.feed(b"")):
        with pytest.raises(StreamError) as info:
            action()
        assert info.value.code == "STREAM_CANCELLED"


def test_provider_failure_is_a_transport_error(impl: ModuleType) -> None:
    asm = impl.StreamAssembler("canonical")
    for event in (
        START,
        call("a"),
        args("a", '{"x'),
        ResponseFailed(code="overloaded_error", message="busy", retryable=True),
    ):
        asm.feed_event(event)
    assert asm.state == "failed"
    asm.feed_event(UsageReported(output_tokens=1))
    for _ in range(2):
        with pytest.raises(TransportError) as info:
            asm.finish()
        assert (info.value.code, info.value.retryable) == ("PROVIDER_ERROR", True)
        assert "overloaded_error: busy" in info.value.message
    with pytest.raises(StreamError) as after:
        asm.feed_event(end("a"))
    assert after.value.code == "EVENT_AFTER_TERMINAL"


@pytest.mark.parametrize("reason", ["length", "content_filter", "refusal"])
def test_cut_finish_marks_every_call_incomplete(impl: ModuleType, reason: str) -> None:
    """A cut response's calls are all incomplete: the one ended before the cut
    too, though its arguments parse; the text stays as it streamed."""
    events = [
        START,
        call("done"),
        args("done", "{}"),
        end("done"),
        call("cut"),
        args("cut", '{"path": "a"}'),  # parses, yet was never ended
        ItemStarted(item_id="t", kind="text"),
        TextDelta(item_id="t", delta="partial"),
        finished(reason),
    ]
    response = run(impl, events)
    assert response.finish_reason == reason
    assert [(c.item_id, c.arguments, c.complete) for c in response.tool_calls] == [
        ("done", "{}", False),
        ("cut", '{"path": "a"}', False),
    ]
    assert response.text == "partial"


@pytest.mark.parametrize("reason", ["length", "content_filter", "refusal"])
def test_cut_finish_after_every_call_ended(impl: ModuleType, reason: str) -> None:
    """Anthropic's shape: content_block_stop, then ``stop_reason: max_tokens``."""
    events = [START, call("a"), args("a", '{"path": "a"}'), end("a"), finished(reason)]
    asm = impl.StreamAssembler("canonical")
    for event in events:
        asm.feed_event(event)
    (tool,) = asm.finish().tool_calls
    assert (tool.arguments, tool.complete) == ('{"path": "a"}', False)
    # the snapshot still says the call's item ended: only completeness is cut
    assert [c.ended for c in asm.snapshot().calls] == [True]


@pytest.mark.parametrize("reason", ["cancelled", "error"])
def test_cancelled_or_error_finish_marks_open_calls_incomplete(impl: ModuleType, reason: str) -> None:
    events = [START, call("done"), args("done", "{}"), end("done"), call("open"), args("open", "{}"), finished(reason)]
    response = run(impl, events)
    assert [(c.item_id, c.complete) for c in response.tool_calls] == [("done", True), ("open", False)]


@pytest.mark.parametrize("reason", ["stop", "tool_calls"])
def test_normal_finish_keeps_ended_calls_complete(impl: ModuleType, reason: str) -> None:
    events = [START, call("a"), args("a", "{}"), end("a"), finished(reason)]
    assert [c.complete for c in run(impl, events).tool_calls] == [True]


def test_state_machine_states(impl: ModuleType) -> None:
    asm = impl.StreamAssembler("canonical")
    seen = [asm.state]
    for event in (START, call("a"), end("a"), finished()):
        asm.feed_event(event)
        seen.append(asm.state)
    assert seen == ["init", "started", "streaming", "streaming", "completed"]
    first = asm.finish()
    assert asm.finish() == first
    assert asm.state == "completed"


@pytest.mark.parametrize(
    "events, limits, code",
    [
        ([START, call("a"), args("a", "x" * 8), args("a", "y")], {"max_call_argument_bytes": 8}, "ARGUMENTS_TOO_LARGE"),
        ([START, call("a"), args("a", "é" * 4), args("a", "y")], {"max_call_argument_bytes": 8}, "ARGUMENTS_TOO_LARGE"),
        ([START, call("a"), call("b"), call("c")], {"max_calls_per_response": 2}, "TOO_MANY_CALLS"),
        (
            [
                START,
                ItemStarted(item_id="t", kind="text"),
                TextDelta(item_id="t", delta="12345"),
                call("a"),
                args("a", "123456"),
            ],
            {"max_response_bytes": 10},
            "RESPONSE_TOO_LARGE",
        ),
        ([START, call("a"), args("a", "1"), args("a", "2")], {"max_stream_events": 3}, "TOO_MANY_EVENTS"),
    ],
)
def test_limits(impl: ModuleType, events: list[CanonicalEvent], limits: dict[str, int], code: str) -> None:
    assert code_of(impl, events, **limits) == code


def _items(count: int) -> list[CanonicalEvent]:
    """``count`` items of every kind in turn (empty text, reasoning, refusal, tool calls), each ended."""
    events: list[CanonicalEvent] = []
    kinds = ("text", "reasoning", "refusal", "tool_call")
    for index in range(count):
        kind, item = kinds[index % 4], f"i{index}"
        events.append(call(item) if kind == "tool_call" else ItemStarted(item_id=item, kind=kind))  # type: ignore[arg-type]
        events.append(end(item))
    return events


@pytest.mark.parametrize("last", ["text", "reasoning", "refusal", "tool_call"])
def test_max_items_per_response(impl: ModuleType, last: str) -> None:
    """Items of any kind count, tool calls included; the limit is inclusive,
    and the item past it is refused when it starts."""
    limit = 9
    head = [START, *_items(limit)]
    response = run(impl, [*head, finished()], max_items_per_response=limit)
    assert len(response.items) == limit
    extra: CanonicalEvent = call("x") if last == "tool_call" else ItemStarted(item_id="x", kind=last)  # type: ignore[arg-type]
    asm = impl.StreamAssembler("canonical", limits=Limits(max_items_per_response=limit))
    for event in head:
        asm.feed_event(event)
    with pytest.raises(StreamError) as info:
        asm.feed_event(extra)
    assert info.value.code == "TOO_MANY_ITEMS_IN_RESPONSE"
    assert info.value.layer == "stream" and info.value.retryable is False
    assert info.value.message == f"the response has more items than max_items_per_response ({limit})"
    assert asm.state == "failed"
    assert len(asm.snapshot().calls) == limit // 4  # the refused call was not stored


def test_max_items_per_response_default_over_sse(impl: ModuleType) -> None:
    """The default bound, through the SSE path: 4,096 empty items pass, 4,097 fail."""
    limit = Limits().max_items_per_response
    assert limit == 4096
    frame = lambda e: f"data: {json.dumps(e.to_dict())}\n\n".encode()  # noqa: E731
    items = [frame(e) for i in range(limit + 1) for e in (ItemStarted(item_id=f"t{i}", kind="text"), end(f"t{i}"))]
    head, tail = frame(START), frame(finished("stop"))
    asm = impl.StreamAssembler("canonical")
    asm.feed(head + b"".join(items[: 2 * limit]) + tail)
    assert len(asm.finish().items) == limit
    asm = impl.StreamAssembler("canonical")
    with pytest.raises(StreamError) as info:
        asm.feed(head + b"".join(items) + tail)
    assert info.value.code == "TOO_MANY_ITEMS_IN_RESPONSE"


def test_limits_are_inclusive(impl: ModuleType) -> None:
    events = [START, call("a"), args("a", "x" * 8), end("a"), finished()]
    assert run(impl, events, max_call_argument_bytes=8).tool_calls[0].arguments == "x" * 8


# ------------------------------------------------------------------ plumbing


def test_canonical_wire_format_over_sse(impl: ModuleType) -> None:
    events = [START, call("a"), args("a", '{"k": "é\\n"}'), end("a"), finished()]
    sse = b"".join(f"data: {json.dumps(e.to_dict())}\n\n".encode() for e in events)
    expected = run(impl, events)
    for size in (1, 3, len(sse)):
        asm = impl.StreamAssembler("canonical")
        for i in range(0, len(sse), size):
            asm.feed(sse[i : i + size])
        assert asm.finish() == expected


@pytest.mark.parametrize(
    "form",
    [lambda e: e, lambda e: e.to_dict(), lambda e: json.dumps(e.to_dict()), lambda e: json.dumps(e.to_dict()).encode()],
    ids=["object", "dict", "str", "bytes"],
)
def test_feed_event_payload_forms(impl: ModuleType, form: Callable[[CanonicalEvent], Any]) -> None:
    events = [START, call("a"), args("a", "{}"), end("a"), finished()]
    asm = impl.StreamAssembler("canonical")
    for event in events:
        asm.feed_event(form(event))
    assert asm.finish() == run(impl, events)


@pytest.mark.parametrize(
    "payload, message",
    [
        ("not json", "event data is not valid JSON"),
        (b"\xff", "event data is not valid UTF-8"),
        ("[1]", "a canonical event must be a JSON object"),
        ({"item_id": "a"}, 'a canonical event needs a "type" string'),
        ({"type": "item_ended"}, 'item_ended event lacks the field "item_id"'),
        ({"type": "item_ended", "item_id": 3}, 'item_ended event field "item_id" must be a string'),
        (
            {"type": "item_ended", "item_id": "a", "zeta": 1, "alpha": 2},
            'item_ended event has an unknown field "alpha"',
        ),
        ({"type": "usage", "input_tokens": True}, 'usage event field "input_tokens" must be an integer or null'),
        ({"type": "usage", "input_tokens": 2**64}, "event data has a number beyond 64 bits or a float that overflows"),
        (
            {"type": "response_finished", "finish_reason": "done"},
            'response_finished event field "finish_reason" must be a finish reason',
        ),
        (
            {"type": "item_started", "item_id": "a", "kind": "tool_call"},
            'item_started event field "kind" must be an item kind',
        ),
    ],
)
def test_malformed_canonical_events(impl: ModuleType, payload: Any, message: str) -> None:
    asm = impl.StreamAssembler("canonical")
    with pytest.raises(StreamError) as info:
        asm.feed_event(payload)
    assert (info.value.code, info.value.message) == ("MALFORMED_EVENT", message)
    assert asm.state == "failed"


def test_unknown_event_types_are_recorded(impl: ModuleType) -> None:
    asm = impl.StreamAssembler("canonical")
    asm.feed_event(START)
    asm.feed_event({"type": "future_thing", "x": 1})
    asm.feed_event({"type": "future_thing"})
    asm.feed_event(finished("stop"))
    assert asm.finish().unknown_events == {"future_thing": 2}


def test_sse_errors_fail_the_assembler(impl: ModuleType) -> None:
    asm = impl.StreamAssembler("canonical")
    with pytest.raises(StreamError) as info:
        asm.feed(b"data: \xff\n\n")
    assert info.value.code == "SSE_INVALID_UTF8"
    assert asm.state == "failed"
    asm = impl.StreamAssembler("canonical")
    asm.feed(b'data: {"type":"response_started"}\n\ndata: {"type":"response_finished",')
    with pytest.raises(StreamError) as info:
        asm.finish()
    assert info.value.code == "SSE_UNTERMINATED_EVENT"
    asm = impl.StreamAssembler("canonical", limits=Limits(max_stream_events=1))
    with pytest.raises(StreamError) as info:
        asm.feed(b'data: {"type":"response_started"}\n\n' * 2)
    assert info.value.code == "SSE_TOO_MANY_EVENTS"


def test_keep_events(impl: ModuleType) -> None:
    asm = impl.StreamAssembler("canonical", keep_events=True)
    asm.feed_event(START)
    asm.feed(b'data: {"type":"tool_call_started","item_id":"a","call_id":"c","name":"f"}\n\n')
    assert asm.take_events() == [START, ToolCallStarted(item_id="a", call_id="c", name="f")]
    assert asm.take_events() == []
    with pytest.raises(ValueError):
        impl.StreamAssembler("canonical").take_events()


def test_options_are_checked(impl: ModuleType) -> None:
    with pytest.raises(ValueError, match="known: .*canonical"):
        impl.StreamAssembler("no-such-provider")
    with pytest.raises(ValueError, match="known: .*canonical"):
        impl.normalize("{}", provider="no-such-provider")
    with pytest.raises(TypeError):
        impl.StreamAssembler(3)
    with pytest.raises(ValueError):
        impl.StreamAssembler("canonical", choice=-1)
    with pytest.raises(TypeError):
        impl.StreamAssembler("canonical", limits=3)
    with pytest.raises(TypeError):
        impl.StreamAssembler("canonical", None)  # options are keyword-only
    asm = impl.StreamAssembler("canonical")
    assert asm.provider == "canonical"
    with pytest.raises(TypeError):
        asm.feed_event(3)
    with pytest.raises(TypeError):
        asm.feed_event({"type": "response_started"}, event=3)
    with pytest.raises(TypeError):
        asm.feed("data: x\n\n")
    assert asm.state == "init"  # type errors are the caller's, not the stream's


def test_normalize_canonical_body(impl: ModuleType) -> None:
    events = [START, call("a"), args("a", "{}"), end("a"), finished()]
    body = [e.to_dict() for e in events]
    expected = run(impl, events)
    assert impl.normalize(body, provider="canonical") == expected
    assert impl.normalize(json.dumps(body), provider="canonical") == expected
    assert impl.normalize(json.dumps(body).encode(), provider="canonical") == expected
    with pytest.raises(StreamError) as info:
        impl.normalize("{}", provider="canonical")
    assert info.value.code == "MALFORMED_EVENT"
    with pytest.raises(StreamError) as info:
        impl.normalize(body[:-1], provider="canonical")
    assert info.value.code == "BODY_NOT_FINISHED"


# ------------------------------------------------------------------ snapshot


def test_snapshot_is_provisional_and_incremental(impl: ModuleType) -> None:
    asm = impl.StreamAssembler("canonical")
    for event in (START, ItemStarted(item_id="t", kind="text"), TextDelta(item_id="t", delta="Hi"), call("a")):
        asm.feed_event(event)
    text = '{"path": "src/ä.py", "lines": [1, 2, 3], "opts": {"deep": true}, "content": "line\\nnext"}'
    partials = []
    for i in range(0, len(text), 5):
        asm.feed_event(args("a", text[i : i + 5]))
        snap = asm.snapshot()
        assert isinstance(snap, ResponseSnapshot) and not isinstance(snap, NormalizedResponse)
        assert snap.state == "streaming" and snap.text == "Hi"
        (c,) = snap.calls
        assert c.arguments == text[: i + 5] and not c.ended
        partials.append(c.partial)
    assert partials[0] == {}  # '{"pat'
    assert partials[4] == {"path": "src/ä.py"}  # '{"path": "src/ä.py", "lin'
    assert partials[6] == {"path": "src/ä.py", "lines": [1, 2]}  # '... "lines": [1, 2, '
    assert partials[7] == {"path": "src/ä.py", "lines": [1, 2, 3]}
    assert partials[-1] == json.loads(text)
    asm.feed_event(end("a"))
    assert asm.snapshot().calls[0].ended


def test_partial_parse_views() -> None:
    from decisions.stream.partial import PartialJSON

    cases = [
        ('{"a": "hel', {"a": "hel"}),
        ('{"a": 12', {"a": 12}),
        ('{"a": tr', {}),
        ('{"a": [1, {"b": nul', {"a": [1, {}]}),
        ('{"a": [1, {"b": null', {"a": [1, {"b": None}]}),
        ('{"a": "x\\u00', {"a": "x"}),
        ('{"a": "\\ud83d', {"a": "\ud83d"}),
        ('{"a": "\\ud83d\\ude00"', {"a": "😀"}),
        ('{"ke', {}),
        ("[", []),
        ("", None),
        ('{"a": 1} trailing', {"a": 1}),
        ('{"a": 1, oops', {"a": 1}),
    ]
    for text, expected in cases:
        parser = PartialJSON()
        for ch in text:  # one character at a time: same as whole
            parser.feed(ch)
        whole = PartialJSON()
        whole.feed(text)
        assert parser.value() == whole.value() == expected, text


def test_snapshot_cost_does_not_reparse() -> None:
    """Feeding the partial parser costs per new character, not per total."""
    from decisions.stream.partial import PartialJSON

    def per_piece(total: int) -> float:
        parser = PartialJSON()
        parser.feed('{"content": "')
        piece = "abcdefg\\n"
        for _ in range(total // len(piece)):
            parser.feed(piece)
        start = time.thread_time()
        for _ in range(200):
            parser.feed(piece)
        return (time.thread_time() - start) / 200

    small = statistics.median(per_piece(1_000) for _ in range(5))
    large = statistics.median(per_piece(200_000) for _ in range(5))
    assert large < small * 3


# ------------------------------------------------------------------ cost per delta


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def _seconds_per_delta(impl: ModuleType, accumulated: int, deltas: int = 2000) -> float:
    """Time of 8-byte argument deltas once ``accumulated`` bytes are already in the call."""
    asm = impl.StreamAssembler("canonical")
    asm.feed(_sse([START.to_dict(), call("a").to_dict()]))
    piece = 64 * 1024
    prefill = [
        {"type": "tool_arguments_delta", "item_id": "a", "delta": "x" * min(piece, accumulated - i)}
        for i in range(0, accumulated, piece)
    ]
    asm.feed(_sse(prefill))
    measured = _sse([{"type": "tool_arguments_delta", "item_id": "a", "delta": "abcdefg\u00e9"[:8]}] * deltas)
    start = time.thread_time()  # CPU time: other jobs on the machine do not count
    asm.feed(measured)
    elapsed = time.thread_time() - start
    assert len(asm.snapshot().calls[0].arguments) == accumulated + 8 * deltas
    return elapsed / deltas


def test_cost_per_delta_is_flat(impl: ModuleType) -> None:
    """A delta costs the same whether the call holds 1 KiB or 1 MiB (no re-join,
    re-scan or re-parse). Medians of interleaved repeats; no absolute times."""
    small, large = [], []
    for _ in range(5):
        small.append(_seconds_per_delta(impl, 1024))
        large.append(_seconds_per_delta(impl, 1024 * 1024))
    ratio = statistics.median(large) / statistics.median(small)
    assert ratio < 2.0, f"1 MiB vs 1 KiB: {ratio:.2f}x per delta"


def test_kept_events_include_the_one_that_failed(impl: ModuleType) -> None:
    asm = impl.StreamAssembler("canonical", keep_events=True)
    asm.feed_event(START)
    with pytest.raises(StreamError):
        asm.feed_event(end("nope"))
    assert asm.take_events() == [START, end("nope")]


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_undecodable_data_is_malformed_for_every_provider(impl: ModuleType, provider: str) -> None:
    asm = impl.StreamAssembler(provider)
    with pytest.raises(StreamError) as info:
        asm.feed(b"data: {oops\n\n")
    assert (info.value.code, info.value.message) == ("MALFORMED_EVENT", "event data is not valid JSON")
    assert asm.state == "failed"
    with pytest.raises(StreamError) as info:
        impl.normalize(b"{oops", provider=provider)
    assert (info.value.code, info.value.message) == ("NOT_A_RESPONSE_BODY", 'the body is not JSON but text: "{oops"')


def test_provider_is_read_only(impl: ModuleType) -> None:
    """The provider an assembler was made for cannot be changed under it."""
    assembler = impl.StreamAssembler("anthropic")
    assert assembler.provider == "anthropic"
    with pytest.raises(AttributeError):
        assembler.provider = "openai-chat"
    assert assembler.provider == "anthropic"
