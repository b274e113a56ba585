"""The canonical event wire format: JSON lines and SSE, written and read back."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from collections.abc import AsyncIterator

import pytest

import decisions
from decisions import StreamError, wire
from decisions.types import (
    EVENT_TYPES,
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
    UsageReported,
)

#: One of every event type, with unicode, escapes and optional fields set.
EVENTS = [
    ResponseStarted(response_id="resp_1", model="gpt-x"),
    ItemStarted(item_id="r0", kind="reasoning"),
    ReasoningDelta(item_id="r0", delta='think "twice"', signature="sig=="),
    ItemEnded(item_id="r0"),
    ItemStarted(item_id="t0", kind="text"),
    TextDelta(item_id="t0", delta="Grüße — \u2028 line\nnext 🎉"),
    ItemEnded(item_id="t0"),
    ToolCallStarted(item_id="fc_1", call_id="call_1", name="write_file", call_id_generated=True),
    ToolArgumentsDelta(item_id="fc_1", delta='{"path": "a\\\\b.txt", "content": "x\\n"}'),
    ItemEnded(item_id="fc_1"),
    UsageReported(input_tokens=10, output_tokens=3, cached_tokens=None, reasoning_tokens=0),
    ResponseFinished(finish_reason="tool_calls", raw_finish_reason="tool_use"),
]


def test_every_event_type_is_covered() -> None:
    assert {type(e).type for e in EVENTS} | {"refusal_delta", "response_failed"} == set(EVENT_TYPES)


@pytest.mark.parametrize(
    "event",
    EVENTS
    + [
        RefusalDelta(item_id="x", delta="no"),
        ResponseFailed(code="overloaded", message="busy", retryable=True, error_type="overloaded_error"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_json_round_trip(event: object) -> None:
    text = wire.encode_json(event)  # type: ignore[arg-type]
    assert "\n" not in text
    assert json.loads(text) == event.to_dict()  # type: ignore[attr-defined]
    assert wire.decode_json(text) == event
    assert wire.decode_json(text.encode()) == event


def test_json_lines_round_trip() -> None:
    lines = [wire.encode_json(e) + "\n" for e in EVENTS]
    assert list(wire.read_json_lines(lines)) == EVENTS
    assert list(wire.read_json_lines(["\n", *lines, "  \n"])) == EVENTS


def test_sse_round_trip_in_any_chunking() -> None:
    stream = b"".join(wire.encode_sse(e) for e in EVENTS)
    assert stream.startswith(b"event: response_started\ndata: {")
    whole = list(wire.read_sse([stream]))
    assert whole == EVENTS
    assert list(wire.read_sse([stream[i : i + 1] for i in range(len(stream))])) == EVENTS
    rng = random.Random(7)
    cuts = sorted(rng.sample(range(1, len(stream)), 40))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)])]
    assert list(wire.read_sse(chunks)) == EVENTS


def test_async_sse_round_trip() -> None:
    stream = b"".join(wire.encode_sse(e) for e in EVENTS)

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(stream), 17):
            yield stream[i : i + 17]

    async def collect() -> list[object]:
        return [event async for event in wire.aread_sse(chunks())]

    assert asyncio.run(collect()) == EVENTS


def test_events_read_back_rebuild_the_same_response() -> None:
    direct = decisions.StreamAssembler("canonical")
    for event in EVENTS:
        direct.feed_event(event)
    forwarded = decisions.StreamAssembler("canonical")
    for event in wire.read_sse([b"".join(wire.encode_sse(e) for e in EVENTS)]):
        forwarded.feed_event(event)
    assert forwarded.finish() == direct.finish()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"type": "nope"}', "unknown event type"),
        ('{"delta": "x"}', "unknown event type"),
        ("[1, 2]", "JSON object"),
        ('{"type": "text_delta", "item_id": "a"}', "missing the field 'delta'"),
        ('{"type": "text_delta", "item_id": "a", "delta": 3}', "text_delta.delta must be str"),
        ('{"type": "text_delta", "item_id": "a", "delta": "x", "extra": 1}', "unknown fields ['extra']"),
        ('{"type": "item_started", "item_id": "a", "kind": "tool"}', "item_started.kind"),
        ('{"type": "response_finished", "finish_reason": "done"}', "finish_reason"),
        ('{"type": "usage", "input_tokens": true}', "usage.input_tokens"),
        ('{"type": "usage", "input_tokens": 1.5}', "usage.input_tokens"),
        (
            '{"type": "tool_call_started", "item_id": "a", "call_id": "c", "name": "n", "call_id_generated": 1}',
            "call_id_generated",
        ),
    ],
)
def test_malformed_events_are_refused(text: str, fragment: str) -> None:
    with pytest.raises(StreamError) as info:
        wire.decode_json(text)
    assert info.value.code == "MALFORMED_EVENT"
    assert fragment in info.value.message


def test_reading_is_strict_json() -> None:
    with pytest.raises(decisions.ParseError) as info:
        wire.decode_json('{"type": "item_ended", "item_id": "a", "item_id": "b"}')
    assert info.value.code == "DUPLICATE_KEY"


def test_a_bad_line_names_its_number() -> None:
    lines = [wire.encode_json(EVENTS[0]), '{"type": "bogus"}']
    with pytest.raises(StreamError) as info:
        list(wire.read_json_lines(lines))
    assert info.value.offset == 2 and "line 2" in info.value.message


def test_sse_event_name_must_match_the_type() -> None:
    frame = wire.encode_sse(EVENTS[0]).replace(b"event: response_started", b"event: text_delta")
    with pytest.raises(StreamError, match="does not match"):
        list(wire.read_sse([frame]))


def test_unnamed_sse_frames_are_accepted() -> None:
    frame = b"data: " + wire.encode_json(EVENTS[0]).encode() + b"\n\n"
    assert list(wire.read_sse([frame])) == [EVENTS[0]]


def test_to_dict_is_the_wire_shape() -> None:
    event = ToolCallStarted(item_id="i", call_id="c", name="n")
    assert event.to_dict() == {"type": "tool_call_started", **dataclasses.asdict(event)}


#: Each canonical field whose value is one of a fixed set of names, with an event that is valid
#: apart from that field.
_NAMED_FIELDS = [
    ({"type": "item_started", "item_id": "a", "kind": "text"}, "kind"),
    ({"type": "tool_call_started", "item_id": "a", "call_id": "c", "name": "n", "call_kind": "function"}, "call_kind"),
    ({"type": "response_finished", "finish_reason": "stop"}, "finish_reason"),
]


@pytest.mark.parametrize(("event", "field"), _NAMED_FIELDS, ids=[f for _, f in _NAMED_FIELDS])
@pytest.mark.parametrize("value", [[], ["text"], {}, {"text": 1}, 1, 1.5, True, None, "TEXT", "text "])
def test_a_named_field_of_another_json_type_is_malformed(impl: object, event: dict, field: str, value: object) -> None:
    """Unhashable, non-string and near-miss values of a named field are a typed refusal, never a crash."""
    stream = "data: " + json.dumps({**event, field: value}) + "\n\n"
    assembler = impl.StreamAssembler(provider="canonical")  # type: ignore[attr-defined]
    with pytest.raises(StreamError) as caught:
        assembler.feed(stream.encode())
        assembler.finish()
    assert caught.value.code == "MALFORMED_EVENT"
    assert f'"{field}"' in str(caught.value)


@pytest.mark.parametrize("line", ['{"type": "item_ended", "item_id": "a", "item_id": "b"}', '{"type": "item_ended",'])
def test_a_line_that_is_not_json_names_its_line(line: str) -> None:
    """The parser's error for line 3 said "at line 1": it counted lines in
    that one line alone."""
    lines = [wire.encode_json(EVENTS[0]), "", line]
    with pytest.raises(decisions.ParseError) as info:
        list(wire.read_json_lines(lines))
    alone = pytest.raises(decisions.ParseError)
    with alone as single:
        wire.decode_json(line)
    assert (info.value.code, info.value.lineno, info.value.colno) == (single.value.code, 3, single.value.colno)
    assert f"at line 3 column {single.value.colno}" in str(info.value)
