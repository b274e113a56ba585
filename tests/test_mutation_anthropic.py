"""The Anthropic Messages mapper's decisions written out on both backends
(the mutation run sees the pure backend alone): a whole body's every field,
its usage, an error body and an ``error`` event, and every error with its
message and path."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from mapper_outcomes import body, events, stream

P = "anthropic"
BODY_SHAPE = "anthropic message body does not have the documented shape"


def message(**fields: Any) -> dict[str, Any]:
    """A whole ``message`` body: one text block, ended by ``end_turn``."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Hi"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 10,
            "output_tokens": 3,
            "cache_read_input_tokens": 4,
            "cache_creation_input_tokens": 2,
        },
        **fields,
    }


def answer(**fields: Any) -> dict[str, Any]:
    """``message()`` read: its id, model, text and usage (input counts the cache reads and writes)."""
    return {
        "id": "msg_1",
        "model": "claude-sonnet-4-5",
        "finish": ("stop", "end_turn"),
        "items": [("text", "block_0", "Hi")],
        "usage": (16, 3, 4, None),
        "unknown": {},
        **fields,
    }


def test_a_body_in_full(impl: ModuleType) -> None:
    assert body(impl, P, message()) == answer()
    assert body(impl, P, message(usage=None)) == answer(usage=None)
    assert body(impl, P, message(usage={"output_tokens": 3})) == answer(usage=(None, 3, None, None))
    assert body(impl, P, message(id=None, model=None)) == answer(id=None, model=None)


def test_a_refused_body(impl: ModuleType) -> None:
    refused = message(stop_details={"type": "refusal", "category": "cyber", "explanation": None})
    assert body(impl, P, refused) == answer(finish=("refusal", "refusal"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([message()], ("anthropic body does not have the documented shape", "$")),
        ({**message(), "type": "msg"}, ("anthropic body does not have the documented shape", "$.type")),
        (message(id=3), (BODY_SHAPE, "$.id")),
        (message(model=["claude"]), (BODY_SHAPE, "$.model")),
        (message(content={"type": "text"}), (BODY_SHAPE, "$.content")),
        (message(content=None), (BODY_SHAPE, "$.content")),
        (message(stop_reason=1), (BODY_SHAPE, "$.stop_reason")),
        (message(stop_details="refusal"), (BODY_SHAPE, "$.stop_details")),
        (message(stop_details={"type": 1}), (BODY_SHAPE, "$.stop_details.type")),
        (message(usage=[]), (BODY_SHAPE, "$.usage")),
        (message(usage={"input_tokens": -1}), (BODY_SHAPE, "$.usage.input_tokens")),
        (message(content=["Hi"]), (BODY_SHAPE, "$.content[0]")),
        (message(content=[{"type": "text", "text": 3}]), (BODY_SHAPE, "$.content[0].text")),
        (
            {"type": "error", "error": "overloaded"},
            ("anthropic error body does not have the documented shape", "$.error"),
        ),
        (
            {"type": "error", "error": {"message": "busy"}},
            ("anthropic error body does not have the documented shape", "$.error.type"),
        ),
        (
            {"type": "error", "error": {"type": "api_error", "message": 5}},
            ("anthropic error body does not have the documented shape", "$.error.message"),
        ),
    ],
)
def test_bodies_of_another_shape(impl: ModuleType, value: Any, expected: tuple[str, str]) -> None:
    assert body(impl, P, value) == ("stream", "MALFORMED_EVENT", *expected, None, False)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"type": "overloaded_error", "message": "Overloaded"}, ("overloaded_error: Overloaded", True)),
        ({"type": "invalid_request_error", "message": "bad"}, ("invalid_request_error: bad", False)),
        ({"type": "api_error"}, ("api_error", True)),
        ({"type": "api_error", "message": None}, ("api_error", True)),
    ],
)
def test_an_error_body(impl: ModuleType, error: dict[str, Any], expected: tuple[str, bool]) -> None:
    message_text, retryable = expected
    failed = ("transport", "PROVIDER_ERROR", message_text, None, None, retryable)
    assert body(impl, P, {"type": "error", "error": error}) == failed
    assert stream(impl, P, [("error", {"type": "error", "error": error})]) == failed


def test_an_error_event_in_full(impl: ModuleType) -> None:
    sent = [("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})]
    assert events(impl, P, sent) == [
        {"type": "response_started", "response_id": None, "model": None},
        {
            "type": "response_failed",
            "code": "overloaded_error",
            "message": "Overloaded",
            "retryable": True,
            "error_type": "overloaded_error",
        },
    ]
    sent = [("error", {"type": "error", "error": {"type": "api_error"}})]
    assert events(impl, P, sent)[1] == {
        "type": "response_failed",
        "code": "api_error",
        "message": "",
        "retryable": True,
        "error_type": "api_error",
    }


@pytest.mark.parametrize(
    ("error", "path"),
    [
        ("overloaded", "$.error"),
        ({"message": "busy"}, "$.error.type"),
        ({"type": "api_error", "message": 5}, "$.error.message"),
    ],
)
def test_an_error_event_of_another_shape(impl: ModuleType, error: Any, path: str) -> None:
    assert stream(impl, P, [("error", {"type": "error", "error": error})]) == (
        "stream",
        "MALFORMED_EVENT",
        "anthropic error event does not have the documented shape",
        path,
        None,
        False,
    )


# ---------------------------------------------------------------- the stream

START = (
    "message_start",
    {"type": "message_start", "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "content": []}},
)
TEXT_BLOCK = (
    "content_block_start",
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
)


def delta(value: Any, index: Any = 0) -> tuple[str, dict[str, Any]]:
    payload: dict[str, Any] = {"type": "content_block_delta", "delta": value}
    if index is not None:
        payload["index"] = index
    return ("content_block_delta", payload)


def delta_shape(path: str) -> tuple[Any, ...]:
    return (
        "stream",
        "MALFORMED_EVENT",
        "anthropic content_block_delta event does not have the documented shape",
        path,
        None,
        False,
    )


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        (delta({"type": "text_delta", "text": "Hi"}, index=None), delta_shape("$.index")),
        (delta({"type": "text_delta", "text": "Hi"}, index=-1), delta_shape("$.index")),
        (delta("Hi"), delta_shape("$.delta")),
        (delta({"text": "Hi"}), delta_shape("$.delta.type")),
        (delta({"type": "text_delta", "text": 5}), delta_shape("$.delta.text")),
        (delta({"type": "citations_delta", "citation": "a source"}), delta_shape("$.delta.citation")),
        (
            delta({"type": "text_delta", "text": "Hi"}, index=1),
            (
                "stream",
                "DELTA_BEFORE_START",
                "anthropic text_delta for content block 1 before its start",
                None,
                None,
                False,
            ),
        ),
    ],
)
def test_deltas_of_another_shape(impl: ModuleType, sent: Any, expected: tuple[Any, ...]) -> None:
    assert stream(impl, P, [START, TEXT_BLOCK, sent]) == expected


TOOL_WITH_INPUT = (
    "content_block_start",
    {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
    },
)
THINKING_BLOCK = (
    "content_block_start",
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
)
END = [
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
    ("message_stop", {"type": "message_stop"}),
]
PING = ("ping", {"type": "ping"})


def refused(code: str, message_text: str, path: str | None = None) -> tuple[Any, ...]:
    return ("stream", code, message_text, path, None, False)


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        (
            [("message_start", "3")],
            refused("MALFORMED_EVENT", "anthropic event does not have the documented shape", "$"),
        ),
        (
            [("message_start", {"message": {}})],
            refused("MALFORMED_EVENT", "anthropic event does not have the documented shape", "$.type"),
        ),
        (
            [("message_delta", {"type": "ping"})],
            refused("MALFORMED_EVENT", "anthropic SSE event message_delta carries data of type ping", "$.type"),
        ),
        (
            [START, TEXT_BLOCK, *END, PING],
            refused("EVENT_AFTER_TERMINAL", "anthropic ping event after the end of the message"),
        ),
        # an error event ends the message as message_stop does: nothing may follow it
        (
            [START, ("error", {"type": "error", "error": {"type": "api_error", "message": "x"}}), PING],
            refused("EVENT_AFTER_TERMINAL", "anthropic ping event after the end of the message"),
        ),
        (
            [("error", {"type": "error", "error": {"type": "api_error", "message": "x"}}), START],
            refused("EVENT_AFTER_TERMINAL", "anthropic message_start event after the end of the message"),
        ),
        (
            [("message_start", {"type": "message_start", "message": []})],
            refused("MALFORMED_EVENT", "anthropic message_start event does not have the documented shape", "$.message"),
        ),
        (
            [("message_start", {"type": "message_start", "message": {"id": 1}})],
            refused(
                "MALFORMED_EVENT", "anthropic message_start event does not have the documented shape", "$.message.id"
            ),
        ),
        (
            [("message_start", {"type": "message_start", "message": {"model": 1}})],
            refused(
                "MALFORMED_EVENT", "anthropic message_start event does not have the documented shape", "$.message.model"
            ),
        ),
        (
            [START, TOOL_WITH_INPUT, delta({"type": "input_json_delta", "partial_json": "{}"})],
            refused(
                "MALFORMED_EVENT",
                "anthropic tool_use block 0 has both an input object and input_json_delta text",
                "$.delta.partial_json",
            ),
        ),
        (
            [START, TEXT_BLOCK, delta({"type": "input_json_delta", "partial_json": "{}"})],
            refused(
                "MALFORMED_EVENT",
                "anthropic input_json_delta for content block 0, which is not a tool_use block",
                "$.delta.type",
            ),
        ),
        (
            [START, THINKING_BLOCK, delta({"type": "text_delta", "text": "x"})],
            refused(
                "MALFORMED_EVENT", "anthropic text_delta for content block 0, which is not a text block", "$.delta.type"
            ),
        ),
    ],
)
def test_events_refused(impl: ModuleType, sent: list[Any], expected: tuple[Any, ...]) -> None:
    assert stream(impl, P, sent) == expected


def message_start(**fields: Any) -> tuple[str, dict[str, Any]]:
    message = {"id": "msg_1", "model": "claude-sonnet-4-5", "content": [], **fields}
    return ("message_start", {"type": "message_start", "message": message})


def message_delta(value: Any = None, **top: Any) -> tuple[str, dict[str, Any]]:
    given = {"stop_reason": "end_turn"} if value is None else value
    return ("message_delta", {"type": "message_delta", "delta": given, **top})


def block_start(block: Any, index: int = 0) -> tuple[str, dict[str, Any]]:
    return ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


MESSAGE_STOP = ("message_stop", {"type": "message_stop"})
BLOCK_STOP = ("content_block_stop", {"type": "content_block_stop", "index": 0})
HI = [TEXT_BLOCK, delta({"type": "text_delta", "text": "Hi"}), BLOCK_STOP]


def test_usage_from_message_start_and_message_delta(impl: ModuleType) -> None:
    # input counts come with message_start, the output count with message_delta
    usage = {"input_tokens": 10, "cache_read_input_tokens": 4, "cache_creation_input_tokens": 2, "output_tokens": 1}
    sent = [message_start(usage=usage), *HI, message_delta(usage={"output_tokens": 3}), MESSAGE_STOP]
    assert stream(impl, P, sent) == answer()


def test_a_message_start_with_whole_blocks(impl: ModuleType) -> None:
    blocks = [{"type": "text", "text": "Hi"}, {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}]
    assert stream(impl, P, [message_start(content=blocks, stop_reason="tool_use"), MESSAGE_STOP]) == answer(
        finish=("tool_calls", "tool_use"),
        items=[("text", "block_0", "Hi"), ("call", "block_1", "toolu_1", "f", '{"a":1}', True, False, "function")],
        usage=None,
    )


def test_a_refusal_in_message_delta(impl: ModuleType) -> None:
    sent = [message_start(), *HI, message_delta({"stop_reason": "end_turn", "stop_details": {"type": "refusal"}})]
    assert stream(impl, P, [*sent, MESSAGE_STOP]) == answer(finish=("refusal", "refusal"), usage=None)


def shaped(event: str, path: str) -> tuple[Any, ...]:
    return refused("MALFORMED_EVENT", f"anthropic {event} event does not have the documented shape", path)


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        (
            [message_start(), message_start()],
            refused("DUPLICATE_START", "anthropic message_start after the message had started"),
        ),
        ([message_start(content={})], shaped("message_start", "$.message.content")),
        ([message_start(stop_reason=1)], shaped("message_start", "$.message.stop_reason")),
        ([message_start(stop_details=1)], shaped("message_start", "$.message.stop_details")),
        ([message_start(usage=1)], shaped("message_start", "$.message.usage")),
        ([message_start(usage={"input_tokens": "1"})], shaped("message_start", "$.message.usage.input_tokens")),
        ([message_start(content=[1])], shaped("message_start", "$.message.content[0]")),
        ([message_start(content=[{"type": "text", "text": 1}])], shaped("message_start", "$.message.content[0].text")),
        ([message_start(), message_delta(3)], shaped("message_delta", "$.delta")),
        ([message_start(), message_delta({"stop_reason": 1})], shaped("message_delta", "$.delta.stop_reason")),
        ([message_start(), message_delta({"stop_details": 1})], shaped("message_delta", "$.delta.stop_details")),
        (
            [message_start(), message_delta({"stop_details": {"type": 1}})],
            shaped("message_delta", "$.delta.stop_details.type"),
        ),
        ([message_start(), message_delta(usage=1)], shaped("message_delta", "$.usage")),
        (
            [
                message_start(),
                ("content_block_start", {"type": "content_block_start", "content_block": {"type": "text"}}),
            ],
            shaped("content_block_start", "$.index"),
        ),
        (
            [message_start(), block_start({"type": "text"}, 1)],
            refused(
                "MALFORMED_EVENT", "anthropic content block 1 started before block 0: an event was lost", "$.index"
            ),
        ),
        ([message_start(), block_start(3)], shaped("content_block_start", "$.content_block")),
        ([message_start(), block_start({"text": ""})], shaped("content_block_start", "$.content_block.type")),
        (
            [message_start(), block_start({"type": "text"}), block_start({"type": "text"})],
            refused("DUPLICATE_ITEM_ID", "anthropic content block 0 was started twice"),
        ),
        (
            [message_start(), block_start({"type": "tool_use", "id": "", "name": "f"})],
            shaped("content_block_start", "$.content_block.id"),
        ),
        (
            [message_start(), block_start({"type": "tool_use", "id": 1, "name": "f"})],
            shaped("content_block_start", "$.content_block.id"),
        ),
        (
            [message_start(), block_start({"type": "tool_use", "id": "t", "name": 1})],
            shaped("content_block_start", "$.content_block.name"),
        ),
        (
            [message_start(), block_start({"type": "tool_use", "id": "t", "name": "f", "input": []})],
            shaped("content_block_start", "$.content_block.input"),
        ),
        (
            [message_start(), block_start({"type": "thinking", "thinking": 1})],
            shaped("content_block_start", "$.content_block.thinking"),
        ),
        (
            [message_start(), block_start({"type": "thinking", "thinking": "", "signature": 1})],
            shaped("content_block_start", "$.content_block.signature"),
        ),
        (
            [message_start(), block_start({"type": "redacted_thinking"})],
            shaped("content_block_start", "$.content_block.data"),
        ),
        (
            [message_start(), block_start({"type": "image"})],
            refused(
                "UNSUPPORTED_ITEM",
                'content block of type "image" is not one the package can represent; '
                "it may be a call the host must handle, so nothing in the response is decided",
                "$.content_block",
            ),
        ),
        (
            [message_start(), ("content_block_stop", {"type": "content_block_stop", "index": 3})],
            refused("UNKNOWN_ITEM", "anthropic content_block_stop names block 3, which never started"),
        ),
        (
            [message_start(), *HI, BLOCK_STOP],
            refused("DELTA_AFTER_END", "anthropic content block 0 was stopped twice"),
        ),
        (
            [message_start(), ("content_block_stop", {"type": "content_block_stop"})],
            shaped("content_block_stop", "$.index"),
        ),
        (
            [message_start(), *HI, delta({"type": "text_delta", "text": "x"})],
            refused("DELTA_AFTER_END", "anthropic text_delta for content block 0 after its stop"),
        ),
        ([message_delta()], refused("EVENT_BEFORE_START", "anthropic message_delta event before message_start")),
        (
            [message_start(), message_delta(), TEXT_BLOCK],
            refused(
                "EVENT_AFTER_TERMINAL",
                "anthropic content_block_start event after the message_delta that stopped the message",
            ),
        ),
    ],
)
def test_message_and_block_events_refused(impl: ModuleType, sent: list[Any], expected: tuple[Any, ...]) -> None:
    assert stream(impl, P, sent) == expected


def test_a_refusal_alone_stops_the_message(impl: ModuleType) -> None:
    # stop_details saying refusal, with no stop_reason beside it, ends the content as a stop_reason does
    refusal = message_delta({"stop_reason": None, "stop_details": {"type": "refusal", "category": "cyber"}})
    assert stream(impl, P, [message_start(), *HI, refusal, MESSAGE_STOP]) == answer(
        finish=("refusal", "refusal"), usage=None
    )
    assert stream(impl, P, [message_start(), refusal, TEXT_BLOCK]) == refused(
        "EVENT_AFTER_TERMINAL",
        "anthropic content_block_start event after the message_delta that stopped the message",
    )


def test_thinking_blocks_in_a_body(impl: ModuleType) -> None:
    blocks = [
        {"type": "thinking", "thinking": "The user wants the weather.", "signature": "EqQBCgIYAh"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
        {"type": "thinking", "thinking": "", "signature": "EqQBCgIYAi"},
        {"type": "text", "text": "Hi"},
    ]
    assert body(impl, P, message(content=blocks)) == answer(
        items=[
            ("reasoning", "block_0", "The user wants the weather.", "EqQBCgIYAh"),
            ("reasoning", "block_1", "", "EmwKAhgBEgy3va3pzix"),
            ("reasoning", "block_2", "", "EqQBCgIYAi"),
            ("text", "block_3", "Hi"),
        ]
    )


@pytest.mark.parametrize("extra", [0, 1])
def test_the_bound_on_blocks_run_by_the_provider(impl: ModuleType, extra: int) -> None:
    # blocks of tools Anthropic runs itself are counted; 4096 of them are kept, one more is refused
    server = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    found = body(impl, P, message(content=[server] * (4096 + extra) + [{"type": "text", "text": "Hi"}]))
    if extra:
        assert found == refused("TOO_MANY_ITEMS_IN_RESPONSE", "the response has more unknown content blocks than 4096")
    else:
        assert found == answer(items=[("text", "block_4096", "Hi")], unknown={"content_block:server_tool_use": 4096})


def test_a_tool_use_block_without_input_has_no_arguments(impl: ModuleType) -> None:
    # no input object and no input_json_delta: no arguments event at all (decide refuses the empty text)
    sent = [message_start(), block_start({"type": "tool_use", "id": "toolu_1", "name": "f"}), BLOCK_STOP]
    assert events(impl, P, sent) == [
        {"type": "response_started", "response_id": "msg_1", "model": "claude-sonnet-4-5"},
        {
            "type": "tool_call_started",
            "item_id": "block_0",
            "call_id": "toolu_1",
            "name": "f",
            "call_id_generated": False,
            "call_kind": "function",
        },
        {"type": "item_ended", "item_id": "block_0"},
    ]


def test_a_redacted_thinking_block_takes_no_thinking_delta(impl: ModuleType) -> None:
    redacted = block_start({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"})
    sent = [message_start(), redacted, delta({"type": "thinking_delta", "thinking": "more"}), BLOCK_STOP]
    assert stream(impl, P, [*sent, message_delta(), MESSAGE_STOP]) == (
        "stream",
        "MALFORMED_EVENT",
        "anthropic thinking_delta for content block 0, which is not a thinking block",
        "$.delta.type",
        None,
        False,
    )
