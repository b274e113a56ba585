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
