"""The assembler with its results written out on both backends (the mutation
run sees the pure backend alone): every error with its message, the limits at
their edge on each event path (event objects, the canonical wire format, a
provider's fast deltas), the items built, and a snapshot's every field."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from decisions import Limits, ParseError, StreamError, TransportError
from decisions.types import (
    ItemEnded,
    ItemStarted,
    ReasoningDelta,
    RefusalDelta,
    ResponseFailed,
    ResponseFinished,
    ResponseStarted,
    TextDelta,
    ToolArgumentsDelta,
    ToolCallStarted,
)


def ev(**fields: Any) -> bytes:
    return ("data: " + json.dumps(fields) + "\n\n").encode()


START = ev(type="response_started", response_id="r", model="m")
TEXT = ev(type="item_started", item_id="t", kind="text") + ev(type="text_delta", item_id="t", delta="Hi")
CALL = ev(type="tool_call_started", item_id="a", call_id="c1", name="f") + ev(
    type="tool_arguments_delta", item_id="a", delta='{"x": [1, 2'
)
DONE = ev(type="item_ended", item_id="t") + ev(type="item_ended", item_id="a")
FINISH = ev(type="response_finished", finish_reason="tool_calls")


def wire(impl: ModuleType, data: bytes, **limits: int) -> Any:
    assembler = impl.StreamAssembler("canonical", limits=Limits(**limits) if limits else None)
    try:
        assembler.feed(data)
        return assembler
    except StreamError as error:
        return (error.code, error.message)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (ev(type="text_delta", item_id="t", delta="x"), ("EVENT_BEFORE_START", "text_delta before response_started")),
        (
            ev(type="tool_arguments_delta", item_id="a", delta="x"),
            ("EVENT_BEFORE_START", "tool_arguments_delta before response_started"),
        ),
        (START + FINISH + TEXT, ("EVENT_AFTER_TERMINAL", "item_started after the terminal event")),
        (
            START + FINISH + ev(type="text_delta", item_id="t", delta="x"),
            ("EVENT_AFTER_TERMINAL", "text_delta after the terminal event"),
        ),
        (
            START + FINISH + ev(type="tool_arguments_delta", item_id="a", delta="x"),
            ("EVENT_AFTER_TERMINAL", "tool_arguments_delta after the terminal event"),
        ),
    ],
)
def test_order_errors_on_the_fast_path(impl: ModuleType, data: bytes, expected: Any) -> None:
    assert wire(impl, data) == expected


def test_a_snapshot_in_full_then_the_response(impl: ModuleType) -> None:
    assembler = wire(impl, START + TEXT + CALL)
    snap = assembler.snapshot()
    assert (snap.provider, snap.response_id, snap.model, snap.text, snap.state) == (
        "canonical",
        "r",
        "m",
        "Hi",
        "streaming",
    )
    ((call),) = snap.calls
    assert (call.item_id, call.call_id, call.name, call.arguments, call.partial, call.ended, call.call_kind) == (
        "a",
        "c1",
        "f",
        '{"x": [1, 2',
        {"x": [1, 2]},
        False,
        "function",
    )
    assembler.feed(ev(type="tool_arguments_delta", item_id="a", delta="]}") + DONE + FINISH)
    snap = assembler.snapshot()
    assert snap.state == "completed" and snap.calls[0].ended and snap.calls[0].partial == {"x": [1, 2]}
    response = assembler.finish()
    assert (response.text, [(c.name, c.arguments) for c in response.tool_calls]) == ("Hi", [("f", '{"x": [1, 2]}')])


def test_a_snapshot_of_a_cancelled_stream(impl: ModuleType) -> None:
    assembler = wire(impl, START + TEXT)
    assembler.abort()
    with pytest.raises(StreamError) as info:
        assembler.snapshot()
    assert (info.value.code, info.value.message) == ("STREAM_CANCELLED", "the stream was cancelled by the caller")


S = ResponseStarted(response_id="r", model="m")


def started(item: str, call_id: str | None = None, name: str = "f", **fields: Any) -> ToolCallStarted:
    return ToolCallStarted(item_id=item, call_id=call_id or "c" + item, name=name, **fields)


def events_outcome(impl: ModuleType, events: list[Any], **limits: int) -> Any:
    """The response's items in brief, or (code, message) of the error."""
    assembler = impl.StreamAssembler("canonical", limits=Limits(**limits) if limits else None)
    try:
        for event in events:
            assembler.feed_event(event)
        response = assembler.finish()
    except (StreamError, TransportError) as error:
        return (error.code, error.message)
    return [
        (type(i).__name__, i.item_id, getattr(i, "call_id_generated", None), getattr(i, "call_kind", None))
        for i in response.items
    ]


def text_item(item: str) -> list[Any]:
    return [ItemStarted(item_id=item, kind="text"), ItemEnded(item_id=item)]


STOP = ResponseFinished(finish_reason="stop")


@pytest.mark.parametrize(
    ("events", "limits", "expected"),
    [
        (
            [S, *text_item("a"), ItemStarted(item_id="a", kind="text")],
            {},
            ("DUPLICATE_ITEM_ID", 'two items share the item id "a"'),
        ),
        ([S, *text_item("a"), started("a")], {}, ("DUPLICATE_ITEM_ID", 'two items share the item id "a"')),
        (
            [S, started("a"), started("a", "ca", "g")],
            {},
            ("CALL_NAME_CHANGED", 'tool call "ca" changed its name from "f" to "g"'),
        ),
        ([S, started("a", "x"), started("b", "x")], {}, ("DUPLICATE_CALL_ID", 'two tool calls share the call id "x"')),
        (
            [S, TextDelta(item_id="a", delta="x")],
            {},
            ("DELTA_BEFORE_START", 'text_delta for item "a", which was never started'),
        ),
        (
            [S, started("a"), RefusalDelta(item_id="a", delta="x")],
            {},
            ("UNKNOWN_ITEM", 'refusal_delta for item "a", which is a tool_call item'),
        ),
        (
            [
                S,
                ItemStarted(item_id="a", kind="reasoning"),
                ItemEnded(item_id="a"),
                ReasoningDelta(item_id="a", delta="x"),
            ],
            {},
            ("DELTA_AFTER_END", 'reasoning_delta for item "a", which has ended'),
        ),
        (
            [S, started("a"), ItemEnded(item_id="a"), ToolArgumentsDelta(item_id="a", delta="x")],
            {},
            ("DELTA_AFTER_END", 'tool_arguments_delta for item "a", which has ended'),
        ),
        ([S, ItemEnded(item_id="a")], {}, ("UNKNOWN_ITEM", 'item_ended for item "a", which was never started')),
        (
            [S, *text_item("a"), ItemEnded(item_id="a")],
            {},
            ("DELTA_AFTER_END", 'item_ended for item "a", which has ended'),
        ),
        ([S, S], {}, ("DUPLICATE_START", "the response was started twice")),
        ([TextDelta(item_id="a", delta="x")], {}, ("EVENT_BEFORE_START", "text_delta before response_started")),
        ([S], {}, ("NO_TERMINAL_EVENT", "the stream ended without a terminal event")),
        ([S, ItemStarted(item_id="a", kind="text"), STOP], {}, ("ITEM_NOT_ENDED", 'item "a" was never ended')),
        (
            [S, ItemStarted(item_id="a", kind="bogus")],  # type: ignore[arg-type]
            {},
            ("MALFORMED_EVENT", 'item_started event field "kind" must be an item kind'),
        ),
        (
            [S, started("a", call_kind="bogus")],
            {},
            ("MALFORMED_EVENT", 'tool_call_started event field "call_kind" must be a call kind'),
        ),
        (
            [S, ResponseFinished(finish_reason="bogus")],  # type: ignore[arg-type]
            {},
            ("MALFORMED_EVENT", 'response_finished event field "finish_reason" must be a finish reason'),
        ),
        ([S, ResponseFailed(code="overloaded", message="")], {}, ("PROVIDER_ERROR", "overloaded")),
        (
            [S, started("a", call_id_generated=True, call_kind="custom"), ItemEnded(item_id="a"), STOP],
            {},
            [("ToolCallItem", "a", True, "custom")],
        ),
        (
            [
                S,
                *text_item("t"),
                ItemStarted(item_id="r", kind="refusal"),
                ItemStarted(item_id="z", kind="reasoning"),
                ItemEnded(item_id="r"),
                ItemEnded(item_id="z"),
                STOP,
            ],
            {},
            [("TextItem", "t", None, None), ("RefusalItem", "r", None, None), ("ReasoningItem", "z", None, None)],
        ),
        # the limits at their edge, and one past it
        ([S, *text_item("a"), STOP], {"max_stream_events": 4}, [("TextItem", "a", None, None)]),
        (
            [S, *text_item("a"), STOP],
            {"max_stream_events": 3},
            ("TOO_MANY_EVENTS", "the response has more events than max_stream_events (3)"),
        ),
        (
            [S, started("a"), started("b"), *[ItemEnded(item_id=i) for i in "ab"], STOP],
            {"max_calls_per_response": 2},
            [
                ("ToolCallItem", "a", False, "function"),
                ("ToolCallItem", "b", False, "function"),
            ],
        ),
        (
            [S, started("a"), started("b")],
            {"max_calls_per_response": 1},
            ("TOO_MANY_CALLS", "the response has more tool calls than max_calls_per_response (1)"),
        ),
        (
            [S, ItemStarted(item_id="z", kind="reasoning"), ReasoningDelta(item_id="z", delta="ab", signature="cd")],
            {"max_response_bytes": 3},
            ("RESPONSE_TOO_LARGE", "the response content exceeds max_response_bytes (3)"),
        ),
        (
            [
                S,
                ItemStarted(item_id="z", kind="reasoning"),
                ReasoningDelta(item_id="z", delta="ab"),
                ItemEnded(item_id="z"),
                STOP,
            ],
            {"max_response_bytes": 2},
            [("ReasoningItem", "z", None, None)],
        ),
        (
            [
                S,
                ItemStarted(item_id="z", kind="reasoning"),
                ReasoningDelta(item_id="z", delta="", signature="ab"),
                ItemEnded(item_id="z"),
                STOP,
            ],
            {"max_response_bytes": 2},
            [("ReasoningItem", "z", None, None)],
        ),
        (
            [S, started("a"), ToolArgumentsDelta(item_id="a", delta="{}"), ToolArgumentsDelta(item_id="a", delta="x")],
            {"max_call_argument_bytes": 2},
            ("ARGUMENTS_TOO_LARGE", 'the arguments of tool call "ca" exceed max_call_argument_bytes (2)'),
        ),
    ],
)
def test_events_and_their_errors_in_full(
    impl: ModuleType, events: list[Any], limits: dict[str, int], expected: Any
) -> None:
    assert events_outcome(impl, events, **limits) == expected


def payloads(impl: ModuleType, texts: list[str], **limits: int) -> Any:
    """Canonical events fed one by one as JSON text."""
    assembler = impl.StreamAssembler("canonical", limits=Limits(**limits) if limits else None)
    try:
        for text in texts:
            assembler.feed_event(text)
        return assembler.finish().text
    except StreamError as error:
        return (error.code, error.message)


def test_events_one_by_one_are_counted_at_their_edge(impl: ModuleType) -> None:
    texts = [
        json.dumps(fields)
        for fields in (
            {"type": "response_started", "response_id": "r", "model": "m"},
            {"type": "item_started", "item_id": "t", "kind": "text"},
            {"type": "text_delta", "item_id": "t", "delta": "Hi"},
            {"type": "text_delta", "item_id": "t", "delta": "!"},
            {"type": "item_ended", "item_id": "t"},
            {"type": "response_finished", "finish_reason": "stop"},
        )
    ]
    assert payloads(impl, texts, max_stream_events=6, max_response_bytes=3) == "Hi!"
    assert payloads(impl, texts[:4], max_stream_events=4) == (
        "NO_TERMINAL_EVENT",
        "the stream ended without a terminal event",
    )
    assert payloads(impl, texts[:4], max_stream_events=3) == (
        "TOO_MANY_EVENTS",
        "the response has more events than max_stream_events (3)",
    )
    assert payloads(impl, texts, max_response_bytes=2) == (
        "RESPONSE_TOO_LARGE",
        "the response content exceeds max_response_bytes (2)",
    )
    assert wire(impl, START + ev(type="text_delta", item_id="x", delta="y")) == (
        "DELTA_BEFORE_START",
        'text_delta for item "x", which was never started',
    )
    assert payloads(impl, texts[:1] + texts[2:3]) == (
        "DELTA_BEFORE_START",
        'text_delta for item "t", which was never started',
    )


def test_after_a_failure_the_wire_path_raises_stream_failed(impl: ModuleType) -> None:
    assembler = impl.StreamAssembler("canonical")
    assembler.feed(START)
    with pytest.raises(StreamError):
        assembler.feed(ev(type="text_delta", item_id="x", delta="y"))
    for data in (TEXT, ev(type="tool_arguments_delta", item_id="a", delta="x")):
        with pytest.raises(StreamError) as info:
            assembler.feed(data)
        assert (info.value.code, info.value.message) == (
            "STREAM_FAILED",
            "the stream already failed (DELTA_BEFORE_START)",
        )
    assert assembler.state == "failed"


def test_a_snapshot_of_each_call_kind_and_of_arguments_over_a_limit(impl: ModuleType) -> None:
    assembler = impl.StreamAssembler("canonical", limits=Limits(max_depth=2))
    for event in [
        S,
        started("k", call_kind="custom"),
        ToolArgumentsDelta(item_id="k", delta="[1, "),
        ToolArgumentsDelta(item_id="k", delta="text"),
        started("s", call_kind="shell"),
        ToolArgumentsDelta(item_id="s", delta='{"c": [1'),
        started("a"),
        ToolArgumentsDelta(item_id="a", delta='{"x": '),
    ]:
        assembler.feed_event(event)
    snap = assembler.snapshot()
    assert [(c.item_id, c.call_id, c.name, c.arguments, c.partial, c.ended, c.call_kind) for c in snap.calls] == [
        ("k", "ck", "f", "[1, text", None, False, "custom"),
        ("s", "cs", "f", '{"c": [1', {"c": [1]}, False, "shell"),
        ("a", "ca", "f", '{"x": ', {}, False, "function"),
    ]
    assembler.feed_event(ToolArgumentsDelta(item_id="a", delta="[[1]]"))
    for _ in range(2):  # the second time from the settled parser
        with pytest.raises(ParseError) as info:
            assembler.snapshot()
        assert (info.value.code, info.value.pos, info.value.path) == ("DEPTH_EXCEEDED", 7, "$.calls[2].arguments")
    assert assembler.state == "streaming"


def test_a_snapshot_before_the_start(impl: ModuleType) -> None:
    snap = impl.StreamAssembler("canonical").snapshot()
    assert (snap.response_id, snap.model, snap.text, snap.calls, snap.state) == (None, None, "", (), "init")


def test_a_provider_failure_settles_the_stream_whatever_follows(impl: ModuleType) -> None:
    """After the provider's failure event, the end of the stream is not read
    (an unfinished event after it is not an error): the failure is reported."""
    assembler = impl.StreamAssembler("canonical")
    assembler.feed(START + ev(type="response_failed", code="overloaded", message="busy") + b"data: {")
    with pytest.raises(TransportError) as info:
        assembler.finish()
    assert (info.value.code, info.value.message) == ("PROVIDER_ERROR", "overloaded: busy")


MESSAGE: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "c",
    "content": [],
    "stop_reason": None,
}
ANTHROPIC: list[tuple[str, dict[str, Any]]] = [
    ("message_start", {"type": "message_start", "message": MESSAGE}),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}}),
]


def anthropic(impl: ModuleType, **limits: int) -> Any:
    """The text so far, or (code, message): a provider whose text deltas take
    the assembler's fast path (no event object built), one event at a time."""
    assembler = impl.StreamAssembler("anthropic", limits=Limits(**limits))
    try:
        for name, payload in ANTHROPIC:
            assembler.feed_event(payload, name)
        return assembler.snapshot().text
    except StreamError as error:
        return (error.code, error.message)


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        ({"max_stream_events": 4, "max_response_bytes": 3}, "Hi!"),
        ({"max_stream_events": 3}, ("TOO_MANY_EVENTS", "the response has more events than max_stream_events (3)")),
        ({"max_stream_events": 2}, ("TOO_MANY_EVENTS", "the response has more events than max_stream_events (2)")),
        ({"max_response_bytes": 2}, ("RESPONSE_TOO_LARGE", "the response content exceeds max_response_bytes (2)")),
    ],
)
def test_the_fast_path_counts_events_and_bytes_at_their_edge(
    impl: ModuleType, limits: dict[str, int], expected: Any
) -> None:
    assert anthropic(impl, **limits) == expected
